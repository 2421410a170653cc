// RUN: fi-opt %s -verify-diagnostics
// Rule: a paged block-sparse plan takes N from its page table, not from rows(...)

func.func @bad(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %pi: tensor<2xi32>, %px: tensor<?xi32>, %pl: tensor<1xi32>, %np: index, %m: index, %n: index) {
  // expected-error @+1 {{has pages and num_kv_rows: with a paged cache N is the page table's; write rows(%m) only}}
  %p = fi.block_sparse_plan blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) pages(%pi, %px, %pl : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) num_pages(%np) rows(%m, %n) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, num_qo_heads = 4, num_kv_heads = 2, head_dim = 64, q_type = f16, kv_type = f16}
  return
}
