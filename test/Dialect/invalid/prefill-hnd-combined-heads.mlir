// RUN: fi-opt %s -verify-diagnostics
// Rule: hnd combined caches take kv_heads from dim 2

func.func @bad(%q: tensor<?x24x128xf16>, %qo: tensor<?xi32>, %k: tensor<?x2x16x16x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x24x128xf16>) {
  // expected-error @+1 {{qo_heads of 'q' (24) is not a multiple of kv_heads of 'k' (16)}}
  %r = fi.paged_prefill q(%q : tensor<?x24x128xf16>) qo_indptr(%qo : tensor<?xi32>) kv(%k : tensor<?x2x16x16x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x24x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = hnd>} -> tensor<?x24x128xf16>
  return
}
