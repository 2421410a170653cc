// RUN: fi-opt %s -verify-diagnostics
// Rule: with variable blocks, bsr names the smallest block: static lengths hold that many blocks at most

func.func @bad(%q: tensor<64x4x64xf16>, %k: tensor<100x2x64xf16>, %v: tensor<100x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ro: tensor<?xi32>, %co: tensor<12xi32>, %o: tensor<64x4x64xf16>) {
  // expected-error @+1 {{operand 'col_offsets' has 12 elements (11 blocks) but N = 100 holds at most 6 blocks of at least block_cols = 16; block_cols names the smallest block}}
  %r = fi.block_sparse_attention q(%q : tensor<64x4x64xf16>) kv(%k, %v : tensor<100x2x64xf16>, tensor<100x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) block_offsets(%ro, %co : tensor<?xi32>, tensor<12xi32>) outs(%o : tensor<64x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<64x4x64xf16>
  return
}
