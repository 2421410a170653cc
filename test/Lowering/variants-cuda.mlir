// fi-lower-to-runtime with backend=cuda: an op with a variant also gets its device code,
// a gpu.module for gpu-module-to-binary (NVVM target, linked with the runtime's variant
// kernels' bitcode) holding the variant as the kernels' hooks fi_variant_score_mod /
// fi_variant_mask_mod and the mask's tile classifier fi_variant_mask_tile (identity hooks
// for those it lacks: the score unchanged, every pair kept, every tile FULL), the kernel of its head_dim and
// dtype declared and kept; and an image global whose address the run passes. (The lowering only checks
// that the bitcode exists: this file stands in for it.)
// RUN: fi-opt %s --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s

// CHECK: module attributes {gpu.container_module}
// CHECK: llvm.mlir.global internal constant @__fi_variant_image_0("\00\00\00\00\00\00\00\00") {addr_space = 0 : i32, alignment = 8 : i64}
// CHECK-LABEL: func.func @ragged
// CHECK: %[[IMAGE:.*]] = llvm.mlir.addressof @__fi_variant_image_0 : !llvm.ptr
// CHECK: call @fi_rt_ragged_prefill_run_f16_f16({{.*}}, %[[IMAGE]])
// CHECK: %[[IMAGE2:.*]] = llvm.mlir.addressof @__fi_variant_image_0 : !llvm.ptr
// CHECK: call @fi_rt_ragged_prefill_run_f16_f16({{.*}}, %[[IMAGE2]])
// CHECK-NOT: __fi_variant_image_1
// CHECK: gpu.module @__fi_variant_device_0 [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx86", link = ["{{.*}}variants-cuda.mlir"]>] {
// CHECK-DAG: func.func @fi_variant_score_mod(%{{.*}}: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> f32
// CHECK-DAG: func.func @fi_variant_mask_mod(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK-DAG: func.func @fi_variant_mask_tile(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK-DAG: func.func private @__fi_variant_soft_cap_{{[0-9]+}}(
// CHECK-DAG: llvm.func @fi_variant_v8_prefill_hd128_f16(!llvm.ptr, !llvm.ptr)
// CHECK-DAG: llvm.mlir.global appending @llvm.used() {addr_space = 0 : i32, section = "llvm.metadata"} : !llvm.array<1 x ptr>
func.func private @soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %cap: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%cap : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @soft_cap}
  // A second layer with the same variant shares the device image.
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%cap : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @soft_cap}
  return
}
