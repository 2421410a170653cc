// RUN: fi-opt %s -verify-diagnostics
// Rule: plans: num_qo_heads is a multiple of num_kv_heads

func.func @bad(%pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{num_qo_heads (12) is not a multiple of num_kv_heads (8)}}
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 12, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
