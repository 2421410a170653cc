// RUN: fi-opt %s -verify-diagnostics
// Rule: a block-sparse plan over contiguous K/V needs N

func.func @bad(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %m: index) {
  // expected-error @+1 {{has no num_kv_rows: write rows(%m, %n) (N keys), or give the pages of a paged cache}}
  %p = fi.block_sparse_plan blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) rows(%m) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, num_qo_heads = 4, num_kv_heads = 2, head_dim = 64, q_type = f16, kv_type = f16}
  return
}
