// RUN: fi-opt %s -verify-diagnostics
// Rule: block-sparse attention takes a !fi.plan<block_sparse>

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %o: tensor<?x4x64xf16>, %p: !fi.plan<ragged_prefill>) {
  // expected-error @+1 {{operand 'plan' is a !fi.plan<ragged_prefill> but this op needs a !fi.plan<block_sparse>; make it with fi.block_sparse_plan}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<ragged_prefill>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
