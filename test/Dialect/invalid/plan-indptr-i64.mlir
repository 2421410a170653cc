// RUN: fi-opt %s -verify-diagnostics
// Rule: plans: index arrays are i32

func.func @bad(%pip: tensor<?xi64>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{operand 'kv_indptr' has element type 'i64' but index arrays must be i32}}
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi64>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
