// RUN: fi-opt %s -verify-diagnostics
// Rule: a decode plan cannot drive a prefill

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  // expected-error @+1 {{operand 'plan' is a !fi.plan<decode> but this op needs a !fi.plan<paged_prefill>; make it with fi.paged_prefill_plan}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<decode>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return
}
