// RUN: fi-opt %s -verify-diagnostics
// Rule: the BSR arrays of block-sparse attention are i32

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi64>, %o: tensor<?x4x64xf16>) {
  // expected-error @+1 {{operand 'bsr_indices' has element type 'i64' but index arrays must be i32}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi64>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
