// RUN: fi-opt %s -verify-diagnostics
// Rule: with variable blocks, bsr_indptr has one element per block row plus one, as row_offsets

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %ro: tensor<4xi32>, %co: tensor<?xi32>, %o: tensor<?x4x64xf16>) {
  // expected-error @+1 {{operand 'bsr_indptr' has 5 elements but 'row_offsets' has 4; both are [block rows + 1]}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) blocks(%ip, %ix : tensor<5xi32>, tensor<?xi32>) block_offsets(%ro, %co : tensor<4xi32>, tensor<?xi32>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
