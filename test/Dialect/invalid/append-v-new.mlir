// RUN: fi-opt %s -verify-diagnostics
// Rule: new V has the type of new K

func.func @bad(%kn: tensor<?x8x128xf16>, %vn: tensor<?x4x128xf16>, %ap: tensor<?xi32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %kc: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{operand 'v_new' has type 'tensor<?x4x128xf16>' but 'k_new' has type 'tensor<?x8x128xf16>'}}
  %r = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x4x128xf16>) append_indptr(%ap : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%kc : tensor<?x2x16x8x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  return
}
