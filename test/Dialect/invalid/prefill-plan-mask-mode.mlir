// RUN: fi-opt %s -verify-diagnostics
// Rule: a prefill plan must be made for the op's mask_mode

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %np: index) {
  %p = fi.paged_prefill_plan qo_indptr(%qo : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  // expected-error @+1 {{operand 'plan' was made for mask_mode none but this op has mask_mode causal; make the plan with the op's shape}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<paged_prefill>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>
  return
}
