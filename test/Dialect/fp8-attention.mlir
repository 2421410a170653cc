// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fp8 attention: q, k and v in f8E4M3FN (with q/k/v scales), o in f16 or bf16; the plans of
// such ops say the output type (o_type).

// CHECK-LABEL: func.func @ragged_fp8
// CHECK: fi.ragged_prefill q(%arg0 : tensor<?x32x128xf8E4M3FN>) kv(%arg1, %arg2 : tensor<?x8x128xf8E4M3FN>, tensor<?x8x128xf8E4M3FN>) indptr(%arg3, %arg4 : tensor<?xi32>, tensor<?xi32>) outs(%arg5, %arg6 : tensor<?x32x128xbf16>, tensor<?x32xf32>) {k_scale = 5.000000e-01 : f32, mask_mode = #fi.mask_mode<causal>, q_scale = 2.500000e-01 : f32, v_scale = 2.000000e+00 : f32} -> tensor<?x32x128xbf16>, tensor<?x32xf32>
func.func @ragged_fp8(%q: tensor<?x32x128xf8E4M3FN>, %k: tensor<?x8x128xf8E4M3FN>,
                      %v: tensor<?x8x128xf8E4M3FN>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
                      %o: tensor<?x32x128xbf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %r:2 = fi.ragged_prefill q(%q : tensor<?x32x128xf8E4M3FN>)
      kv(%k, %v : tensor<?x8x128xf8E4M3FN>, tensor<?x8x128xf8E4M3FN>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xbf16>, tensor<?x32xf32>)
      {mask_mode = #fi.mask_mode<causal>, q_scale = 0.25 : f32, k_scale = 0.5 : f32,
       v_scale = 2.0 : f32}
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xbf16>, tensor<?x32xf32>
}

// A paged fp8 prefill with its plan (memref form).
// CHECK-LABEL: func.func @paged_fp8_plan
// CHECK: %[[P:.*]] = fi.paged_prefill_plan {{.*}} {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, head_dim = 128 : i64, kv_type = f8E4M3FN, num_kv_heads = 8 : i64, num_qo_heads = 32 : i64, o_type = f16, q_type = f8E4M3FN}
// CHECK: fi.paged_prefill q(%arg0 : memref<?x32x128xf8E4M3FN>) {{.*}} plan(%[[P]] : !fi.plan<paged_prefill>) outs(%arg7 : memref<?x32x128xf16>)
func.func @paged_fp8_plan(%q: memref<?x32x128xf8E4M3FN>, %qo: memref<?xi32>,
                          %k: memref<?x16x8x128xf8E4M3FN>, %v: memref<?x16x8x128xf8E4M3FN>,
                          %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %np: index) {
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32,
       num_kv_heads = 8, head_dim = 128, q_type = f8E4M3FN, kv_type = f8E4M3FN, o_type = f16}
  fi.paged_prefill q(%q : memref<?x32x128xf8E4M3FN>) qo_indptr(%qo : memref<?xi32>)
      kv(%k, %v : memref<?x16x8x128xf8E4M3FN>, memref<?x16x8x128xf8E4M3FN>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      plan(%p : !fi.plan<paged_prefill>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// Per-head scales (q per query head, k and v per KV head).
// CHECK-LABEL: func.func @ragged_fp8_head_scales
// CHECK: fi.ragged_prefill q(%arg0 : memref<?x8x128xf8E4M3FN>) kv(%arg1, %arg1 : memref<?x2x128xf8E4M3FN>, memref<?x2x128xf8E4M3FN>) indptr(%arg2, %arg2 : memref<?xi32>, memref<?xi32>) head_scales(%arg3, %arg4, %arg4 : memref<8xf32>, memref<2xf32>, memref<2xf32>) outs(%arg5 : memref<?x8x128xf16>)
func.func @ragged_fp8_head_scales(%q: memref<?x8x128xf8E4M3FN>, %k: memref<?x2x128xf8E4M3FN>,
                                  %ip: memref<?xi32>, %qs: memref<8xf32>, %ks: memref<2xf32>,
                                  %o: memref<?x8x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x8x128xf8E4M3FN>)
      kv(%k, %k : memref<?x2x128xf8E4M3FN>, memref<?x2x128xf8E4M3FN>)
      indptr(%ip, %ip : memref<?xi32>, memref<?xi32>)
      head_scales(%qs, %ks, %ks : memref<8xf32>, memref<2xf32>, memref<2xf32>)
      outs(%o : memref<?x8x128xf16>)
  return
}
