// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.ragged_prefill: ragged q, k, v.

// CHECK-LABEL: func.func @ragged_causal
// CHECK: %{{.*}}:2 = fi.ragged_prefill q(%arg0 : tensor<?x32x128xbf16>) kv(%arg1, %arg2 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>) indptr(%arg3, %arg4 : tensor<?xi32>, tensor<?xi32>) outs(%arg5, %arg6 : tensor<?x32x128xbf16>, tensor<?x32xf32>) {mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<rope_llama>} -> tensor<?x32x128xbf16>, tensor<?x32xf32>
func.func @ragged_causal(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>,
                         %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
                         %o: tensor<?x32x128xbf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %r:2 = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>)
      kv(%k, %v : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xbf16>, tensor<?x32xf32>)
      {mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<rope_llama>}
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// Combined K/V [nnz_kv, 2, kv_heads, head_dim], no attributes at all, static sizes.
// CHECK-LABEL: func.func @ragged_combined
// CHECK: fi.ragged_prefill q(%arg0 : tensor<100x4x64xf32>) kv(%arg1 : tensor<300x2x4x64xf32>) indptr(%arg2, %arg3 : tensor<3xi32>, tensor<3xi32>) outs(%arg4 : tensor<100x4x64xf32>) -> tensor<100x4x64xf32>
func.func @ragged_combined(%q: tensor<100x4x64xf32>, %kv: tensor<300x2x4x64xf32>,
                           %qo: tensor<3xi32>, %kvp: tensor<3xi32>,
                           %o: tensor<100x4x64xf32>) -> tensor<100x4x64xf32> {
  %r = fi.ragged_prefill q(%q : tensor<100x4x64xf32>) kv(%kv : tensor<300x2x4x64xf32>)
      indptr(%qo, %kvp : tensor<3xi32>, tensor<3xi32>) outs(%o : tensor<100x4x64xf32>)
      -> tensor<100x4x64xf32>
  return %r : tensor<100x4x64xf32>
}

// Custom mask and a plan, memref form.
// CHECK-LABEL: func.func @ragged_mask_plan_memref
// CHECK: %[[P:.*]] = fi.ragged_prefill_plan indptr(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) mask_indptr(%arg6 : memref<?xi32>) {head_dim = 128 : i64, kv_type = f16, mask_mode = #fi.mask_mode<custom>, num_kv_heads = 8 : i64, num_qo_heads = 32 : i64, q_type = f16}
// CHECK: fi.ragged_prefill {{.*}} mask(%arg5, %arg6 : memref<?xi8>, memref<?xi32>) plan(%[[P]] : !fi.plan<ragged_prefill>) outs(%arg7 : memref<?x32x128xf16>) {mask_mode = #fi.mask_mode<custom>}
func.func @ragged_mask_plan_memref(%q: memref<?x32x128xf16>, %k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>,
                                   %qo: memref<?xi32>, %kvp: memref<?xi32>,
                                   %mask: memref<?xi8>, %mi: memref<?xi32>, %o: memref<?x32x128xf16>) {
  %p = fi.ragged_prefill_plan indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>)
      mask_indptr(%mi : memref<?xi32>)
      {mask_mode = #fi.mask_mode<custom>, num_qo_heads = 32, num_kv_heads = 8,
       head_dim = 128, q_type = f16, kv_type = f16}
  fi.ragged_prefill q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x8x128xf16>, memref<?x8x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>)
      mask(%mask, %mi : memref<?xi8>, memref<?xi32>)
      plan(%p : !fi.plan<ragged_prefill>) outs(%o : memref<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<custom>}
  return
}
