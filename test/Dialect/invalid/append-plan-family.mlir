// RUN: fi-opt %s -verify-diagnostics
// Rule: append needs an append plan

func.func @bad(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ap: tensor<?xi32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %kc: tensor<?x2x16x8x128xf16>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  // expected-error @+1 {{operand 'plan' is a !fi.plan<decode> but this op needs a !fi.plan<append>; make it with fi.append_plan}}
  %r = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) append_indptr(%ap : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<decode>) outs(%kc : tensor<?x2x16x8x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  return
}
