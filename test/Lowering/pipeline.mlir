// The fi-to-llvm pipeline: tensors -> tiles -> plans (shared by CSE) -> bufferization ->
// runtime calls -> LLVM dialect, which mlir-translate turns into LLVM IR.
// RUN: fi-opt %s --fi-to-llvm | FileCheck %s
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=IR
// RUN: fi-opt %s --fi-to-llvm=backend=cuda | FileCheck %s --check-prefix=CUDA
// RUN: fi-opt %s --fi-to-llvm=backend=cuda | FileCheck %s --check-prefix=NOSYNC

// The CUDA execution model: compiled code allocates through _mlir_memref_to_llvm_alloc
// (the embedder's hooks or the stream-ordered pool), never managed memory, and no call of
// the compiled step waits for the device.
// NOSYNC-NOT: managed
// NOSYNC-NOT: ynchronize
// NOSYNC-NOT: @malloc
// NOSYNC: llvm.call @_mlir_memref_to_llvm_alloc
// NOSYNC-NOT: managed
// NOSYNC-NOT: ynchronize

// CHECK-NOT: fi.
// CHECK-NOT: memref.
// CHECK-NOT: unrealized_conversion_cast
// CHECK-DAG: llvm.mlir.global private @__fi_plan_slot_0(dense<0> : tensor<1xi64>) {addr_space = 0 : i32, alignment = 8 : i64} : !llvm.array<1 x i64>
// CHECK-DAG: llvm.func @_mlir_ciface_fi_rt_decode_plan(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32)
// CHECK-DAG: llvm.func @_mlir_ciface_fi_rt_decode_run_f16_f16(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, f32, f32, i32, f32, f32, f32, f32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr)
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-LABEL: llvm.func @step(
// The two layers share one plan: one plan call, two runs.
// CHECK: llvm.call @fi_rt_decode_plan(
// CHECK-NOT: llvm.call @fi_rt_decode_plan(
// CHECK: llvm.call @fi_rt_decode_run_f16_f16(
// CHECK-NOT: llvm.call @fi_rt_decode_plan(
// CHECK: llvm.call @fi_rt_decode_run_f16_f16(
// CHECK-LABEL: llvm.func @_mlir_ciface_step(

// IR-DAG: define void @_mlir_ciface_step(ptr %{{.*}}, ptr %{{.*}}, ptr %{{.*}}
// IR-DAG: declare void @_mlir_ciface_fi_rt_decode_plan(ptr, ptr, ptr, ptr, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32)

// CUDA: llvm.func @_mlir_ciface_step(

func.func @step(%q: tensor<?x32x128xf16>, %k1: tensor<?x16x8x128xf16>,
    %v1: tensor<?x16x8x128xf16>, %k2: tensor<?x16x8x128xf16>, %v2: tensor<?x16x8x128xf16>,
    %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>) -> tensor<?x32x128xf16>
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %e = tensor.empty(%b) : tensor<?x32x128xf16>
  %h = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k1, %v1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%e : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %e2 = tensor.empty(%b) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%h : tensor<?x32x128xf16>)
      kv(%k2, %v2 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%e2 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
