// RUN: fi-opt %s -verify-diagnostics
// Rule: plans: mask_indptr only with custom masks

func.func @bad(%pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{a 'mask_indptr' operand is given but mask_mode is causal; set mask_mode = #fi.mask_mode<custom> or drop it}}
  %p = fi.ragged_prefill_plan indptr(%pip, %pix : tensor<?xi32>, tensor<?xi32>) mask_indptr(%plp : tensor<?xi32>) {mask_mode = #fi.mask_mode<causal>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
