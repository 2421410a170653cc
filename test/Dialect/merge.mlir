// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.merge_state and fi.merge_states.

// CHECK-LABEL: func.func @merge_two
// CHECK: %{{.*}}:2 = fi.merge_state a(%arg0, %arg1 : tensor<?x32x128xf16>, tensor<?x32xf32>) b(%arg2, %arg3 : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%arg4, %arg5 : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
func.func @merge_two(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>,
                     %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>,
                     %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x32xf32>)
      b(%vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// Without s_out; in place on memrefs (v_out aliases v_a).
// CHECK-LABEL: func.func @merge_two_in_place
// CHECK: fi.merge_state a(%arg0, %arg1 : memref<8x4x64xbf16>, memref<8x4xf32>) b(%arg2, %arg3 : memref<8x4x64xbf16>, memref<8x4xf32>) outs(%arg0 : memref<8x4x64xbf16>)
// CHECK-NEXT: return
func.func @merge_two_in_place(%va: memref<8x4x64xbf16>, %sa: memref<8x4xf32>,
                              %vb: memref<8x4x64xbf16>, %sb: memref<8x4xf32>) {
  fi.merge_state a(%va, %sa : memref<8x4x64xbf16>, memref<8x4xf32>)
      b(%vb, %sb : memref<8x4x64xbf16>, memref<8x4xf32>)
      outs(%va : memref<8x4x64xbf16>)
  return
}

// CHECK-LABEL: func.func @merge_n
// CHECK: %{{.*}}:2 = fi.merge_states %arg0, %arg1 : tensor<?x4x32x128xf16>, tensor<?x4x32xf32> outs(%arg2, %arg3 : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
// CHECK: fi.merge_states %arg0, %arg1 : tensor<?x4x32x128xf16>, tensor<?x4x32xf32> outs(%arg2 : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>
func.func @merge_n(%v: tensor<?x4x32x128xf16>, %s: tensor<?x4x32xf32>,
                   %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>) {
  %r:2 = fi.merge_states %v, %s : tensor<?x4x32x128xf16>, tensor<?x4x32xf32>
      outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  %r2 = fi.merge_states %v, %s : tensor<?x4x32x128xf16>, tensor<?x4x32xf32>
      outs(%vo : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>
  return %r#0, %r#1, %r2 : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>
}

// CHECK-LABEL: func.func @merge_n_memref
// CHECK: fi.merge_states %arg0, %arg1 : memref<16x?x8x64xf32>, memref<16x?x8xf32> outs(%arg2, %arg3 : memref<16x8x64xf32>, memref<16x8xf32>)
func.func @merge_n_memref(%v: memref<16x?x8x64xf32>, %s: memref<16x?x8xf32>,
                          %vo: memref<16x8x64xf32>, %so: memref<16x8xf32>) {
  fi.merge_states %v, %s : memref<16x?x8x64xf32>, memref<16x?x8xf32>
      outs(%vo, %so : memref<16x8x64xf32>, memref<16x8xf32>)
  return
}
