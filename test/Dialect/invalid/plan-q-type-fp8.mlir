// RUN: fi-opt %s -verify-diagnostics
// Rule: plans: q_type is not fp8 (outside ragged and paged prefill: fp8 attention)

func.func @bad(%pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{q_type = 'f8E4M3FN' is not supported; use f16, bf16 or f32}}
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f8E4M3FN, kv_type = f16}
  return
}
