// memref.copy becomes a runtime copy (a stream-ordered device copy on CUDA, never a host
// loop over device memory); a self-copy (bufferization's in-place write-back) goes.
// RUN: fi-opt %s --fi-lower-to-runtime | FileCheck %s
// RUN: fi-opt %s --fi-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-DAG: func.func private @fi_rt_memref_copy_f16(i64, memref<*xf16>, memref<*xf16>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @fi_rt_memref_copy_i32(i64, memref<*xi32>, memref<*xi32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @copies
// CHECK: %[[S:.*]] = memref.cast %arg0 : memref<?x8xf16> to memref<*xf16>
// CHECK: %[[D:.*]] = memref.cast %arg1 : memref<?x8xf16, strided<[16, 1]>> to memref<*xf16>
// CHECK: call @fi_rt_memref_copy_f16(%c2_i64, %[[S]], %[[D]])
// CHECK: call @fi_rt_memref_copy_i32(%c4_i64, %{{.*}}, %{{.*}})
// CHECK-NOT: memref.copy
// LLVM-LABEL: llvm.func @copies
// LLVM-NOT: llvm.intr.memcpy
// LLVM-NOT: memrefCopy
// LLVM: llvm.call @fi_rt_memref_copy_f16
func.func @copies(%a: memref<?x8xf16>, %b: memref<?x8xf16, strided<[16, 1]>>,
                  %c: memref<16xi32>, %d: memref<16xi32>) {
  memref.copy %a, %b : memref<?x8xf16> to memref<?x8xf16, strided<[16, 1]>>
  memref.copy %c, %d : memref<16xi32> to memref<16xi32>
  memref.copy %c, %c : memref<16xi32> to memref<16xi32>
  return
}
