// RUN: fi-opt %s -verify-diagnostics
// Rule: over a paged cache, block_cols is the page size

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %pi: tensor<2xi32>, %px: tensor<?xi32>, %pl: tensor<1xi32>, %o: tensor<?x4x64xf16>) {
  // expected-error @+1 {{the page size of 'k' (16, dim 1 in nhd layout) does not match #fi.bsr block_cols (64); set block_cols to the page size or fix the layout}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) pages(%pi, %px, %pl : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 64, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
