// RUN: fi-opt %s -verify-diagnostics
// Rule: block-sparse attention over a paged cache pages one sequence (kv_indptr has 2 entries)

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %pi: tensor<3xi32>, %px: tensor<?xi32>, %pl: tensor<2xi32>, %o: tensor<?x4x64xf16>) {
  // expected-error @+1 {{operand 'kv_indptr' has 3 entries but block-sparse attention pages one sequence: it needs 2 ({0, pages})}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) pages(%pi, %px, %pl : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
