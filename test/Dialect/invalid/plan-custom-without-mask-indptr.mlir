// RUN: fi-opt %s -verify-diagnostics
// Rule: plans: custom masks need mask_indptr

func.func @bad(%pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{mask_mode = custom needs a 'mask_indptr' operand}}
  %p = fi.paged_prefill_plan qo_indptr(%pip : tensor<?xi32>) pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<custom>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
