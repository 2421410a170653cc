// RUN: fi-opt %s -verify-diagnostics
// Rule: qo_indptr and kv_indptr both have batch + 1 entries

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<5xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<4xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>) {
  // expected-error @+1 {{operand 'qo_indptr' has 5 entries but 'kv_indptr' has 4; both have batch + 1 entries}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<5xi32>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<4xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return
}
