// RUN: fi-opt %s -verify-diagnostics
// Rule: block-sparse attention takes mask_mode none or causal (the BSR matrix is the mask)

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %o: tensor<?x4x64xf16>) {
  // expected-error @+1 {{mask_mode = custom: the BSR matrix is the mask of block-sparse attention; use none or causal}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<custom>} -> tensor<?x4x64xf16>
  return
}
