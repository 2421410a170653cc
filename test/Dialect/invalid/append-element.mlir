// RUN: fi-opt %s -verify-diagnostics
// Rule: new K/V have the cache's element type

func.func @bad(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ap: tensor<?xi32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %kc: tensor<?x2x16x8x128xf8E4M3FN>) {
  // expected-error @+1 {{operand 'k_new' has element type 'f16' but the cache holds 'f8E4M3FN'; convert the new keys and values to the cache's element type}}
  %r = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) append_indptr(%ap : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%kc : tensor<?x2x16x8x128xf8E4M3FN>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf8E4M3FN>
  return
}
