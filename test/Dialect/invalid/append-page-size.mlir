// RUN: fi-opt %s -verify-diagnostics
// Rule: the cache page size equals #fi.bsr block_cols

func.func @bad(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ap: tensor<?xi32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %kc: tensor<?x2x8x8x128xf16>) {
  // expected-error @+1 {{the page size of 'k_cache' (8, dim 2 in nhd layout) does not match #fi.bsr block_cols (16)}}
  %r = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) append_indptr(%ap : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%kc : tensor<?x2x8x8x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x8x8x128xf16>
  return
}
