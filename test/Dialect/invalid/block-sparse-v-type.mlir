// RUN: fi-opt %s -verify-diagnostics
// Rule: block-sparse attention's k and v have the same type

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %o: tensor<?x4x64xf16>) {
  // expected-error @+1 {{operand 'v' has type 'tensor<?x2x64xbf16>' but 'k' has type 'tensor<?x2x64xf16>'; K and V must have the same shape and element type}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xbf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
