// RUN: fi-opt %s -verify-diagnostics
// Rule: block offsets are i32 arrays

func.func @bad(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %ro: tensor<?xi64>, %co: tensor<?xi32>, %m: index, %n: index) {
  // expected-error @+1 {{operand 'row_offsets' has element type 'i64' but index arrays must be i32}}
  %p = fi.block_sparse_plan blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) block_offsets(%ro, %co : tensor<?xi64>, tensor<?xi32>) rows(%m, %n) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, num_qo_heads = 4, num_kv_heads = 2, head_dim = 64, q_type = f16, kv_type = f16}
  return
}
