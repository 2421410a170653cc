// RUN: fi-opt %s -verify-diagnostics
// Rule: lse is [nnz_qo, qo_heads]

func.func @bad(%q: tensor<100x32x128xf16>, %qo: tensor<?xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<100x32x128xf16>, %lse: tensor<99x32xf32>) {
  // expected-error @+1 {{destination 'lse' has type 'tensor<99x32xf32>' but must be [nnz_qo, qo_heads] = [100, 32] to match 'q'}}
  %r:2 = fi.paged_prefill q(%q : tensor<100x32x128xf16>) qo_indptr(%qo : tensor<?xi32>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %lse : tensor<100x32x128xf16>, tensor<99x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<100x32x128xf16>, tensor<99x32xf32>
  return
}
