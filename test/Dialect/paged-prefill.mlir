// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.paged_prefill: ragged queries against a paged cache (append attention).

// Causal, combined K/V, lse, dynamic nnz and batch.
// CHECK-LABEL: func.func @prefill_causal
// CHECK: %{{.*}}:2 = fi.paged_prefill q(%arg0 : tensor<?x32x128xf16>) qo_indptr(%arg1 : tensor<?xi32>) kv(%arg2 : tensor<?x2x16x8x128xf16>) pages(%arg3, %arg4, %arg5 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%arg6, %arg7 : tensor<?x32x128xf16>, tensor<?x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
func.func @prefill_causal(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>,
                          %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                          %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// Custom bit-packed mask (ui8) with its indptr, sliding window, ALiBi, soft cap.
// CHECK-LABEL: func.func @prefill_custom_mask
// CHECK: mask(%arg6, %arg7 : tensor<?xui8>, tensor<3xi32>)
// CHECK-SAME: logits_soft_cap = 3.000000e+01 : f32, mask_mode = #fi.mask_mode<custom>, pos_encoding = #fi.pos_encoding<alibi>, window_left = 128 : i64}
func.func @prefill_custom_mask(%q: tensor<?x8x64xbf16>, %qo: tensor<3xi32>, %k: tensor<?x8x16x64xbf16>,
                               %v: tensor<?x8x16x64xbf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>,
                               %mask: tensor<?xui8>, %mi: tensor<3xi32>, %lp: tensor<2xi32>,
                               %o: tensor<?x8x64xbf16>) -> tensor<?x8x64xbf16> {
  %r = fi.paged_prefill q(%q : tensor<?x8x64xbf16>) qo_indptr(%qo : tensor<3xi32>)
      kv(%k, %v : tensor<?x8x16x64xbf16>, tensor<?x8x16x64xbf16>)
      pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>)
      mask(%mask, %mi : tensor<?xui8>, tensor<3xi32>)
      outs(%o : tensor<?x8x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = hnd>,
       mask_mode = #fi.mask_mode<custom>, window_left = 128,
       pos_encoding = #fi.pos_encoding<alibi>, logits_soft_cap = 30.0 : f32}
      -> tensor<?x8x64xbf16>
  return %r : tensor<?x8x64xbf16>
}

// Memref form with a plan.
// CHECK-LABEL: func.func @prefill_memref_plan
// CHECK: %[[P:.*]] = fi.paged_prefill_plan qo_indptr(%arg1 : memref<?xi32>) pages(%arg4, %arg5, %arg6 : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%arg8)
// CHECK: fi.paged_prefill {{.*}} plan(%[[P]] : !fi.plan<paged_prefill>) outs(%arg7 : memref<?x32x128xf16>)
// CHECK-NOT: ->
func.func @prefill_memref_plan(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x8x128xf16>,
                               %v: memref<?x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                               %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %np: index) {
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, num_qo_heads = 32, num_kv_heads = 8,
       head_dim = 128, q_type = f16, kv_type = f16}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      plan(%p : !fi.plan<paged_prefill>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>}
  return
}

// Another state of the same rows merged into the result (a cascade's other half).
// CHECK-LABEL: func.func @prefill_merge
// CHECK: %{{.*}}:2 = fi.paged_prefill q(%arg0 : tensor<?x32x128xf16>) qo_indptr(%arg1 : tensor<2xi32>) kv(%arg2 : tensor<?x2x16x8x128xf16>) pages(%arg3, %arg4, %arg5 : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) merge(%arg6, %arg7 : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%arg8, %arg9 : tensor<?x32x128xf16>, tensor<?x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
func.func @prefill_merge(%q: tensor<?x32x128xf16>, %qo: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>,
                         %ip: tensor<2xi32>, %ix: tensor<?xi32>, %lp: tensor<1xi32>,
                         %ov: tensor<?x32x128xf16>, %os: tensor<?x32xf32>,
                         %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<2xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      merge(%ov, %os : tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
