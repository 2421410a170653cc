// RUN: fi-opt %s -verify-diagnostics
// Rule: plans: kv_type is a float type

func.func @bad(%pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{kv_type = 'i8' is not supported; use f16, bf16, f32, f8E4M3FN or f8E5M2}}
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = i8}
  return
}
