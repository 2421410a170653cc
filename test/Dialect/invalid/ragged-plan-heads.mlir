// RUN: fi-opt %s -verify-diagnostics
// Rule: a ragged plan must be made for the op's heads

func.func @bad(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x32x128xbf16>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.ragged_prefill_plan indptr(%pip, %pix : tensor<?xi32>, tensor<?xi32>) {num_qo_heads = 32, num_kv_heads = 4, head_dim = 128, q_type = bf16, kv_type = bf16}
  // expected-error @+1 {{operand 'plan' was made for num_kv_heads 4 but this op has num_kv_heads 8}}
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>) kv(%k, %v : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<ragged_prefill>) outs(%o : tensor<?x32x128xbf16>) -> tensor<?x32x128xbf16>
  return
}
