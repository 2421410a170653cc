// RUN: fi-opt %s -verify-diagnostics
// Rule: merge operands need an lse destination (the merge needs the attention's lse)

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<2xi32>, %ix: tensor<?xi32>, %lp: tensor<1xi32>, %ov: tensor<?x32x128xf16>, %os: tensor<?x32xf32>, %o: tensor<?x32x128xf16>) {
  // expected-error @+1 {{merges another state ('merge_v', 'merge_s') but has no 'lse' destination: the merge needs the attention's own lse; add one}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<2xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) merge(%ov, %os : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return
}
