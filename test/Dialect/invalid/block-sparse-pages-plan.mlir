// RUN: fi-opt %s -verify-diagnostics
// Rule: an op over a paged cache needs a plan made with its pages

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %pi: tensor<2xi32>, %px: tensor<?xi32>, %pl: tensor<1xi32>, %o: tensor<?x4x64xf16>, %m: index, %n: index) {
  %p = fi.block_sparse_plan blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) rows(%m, %n) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, num_qo_heads = 4, num_kv_heads = 2, head_dim = 64, q_type = f16, kv_type = f16}
  // expected-error @+1 {{has pages (a paged cache) but its plan has none: give the plan the op's pages and num_pages, or neither}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) pages(%pi, %px, %pl : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) plan(%p : !fi.plan<block_sparse>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
