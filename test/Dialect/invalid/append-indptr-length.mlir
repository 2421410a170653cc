// RUN: fi-opt %s -verify-diagnostics
// Rule: append_indptr and kv_indptr both have batch + 1 entries

func.func @bad(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ap: tensor<3xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %kc: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{operand 'append_indptr' has 3 entries but 'kv_indptr' has 5; both have batch + 1 entries}}
  %r = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) append_indptr(%ap : tensor<3xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>) outs(%kc : tensor<?x2x16x8x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  return
}
