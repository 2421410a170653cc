// RUN: fi-opt %s -verify-diagnostics
// Rule: an op with variable blocks needs a plan made with them (and a plan with them an op that has them)

func.func @bad(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %ro: tensor<?xi32>, %co: tensor<?xi32>, %o: tensor<?x4x64xf16>, %m: index, %n: index) {
  %p = fi.block_sparse_plan blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) rows(%m, %n) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, num_qo_heads = 4, num_kv_heads = 2, head_dim = 64, q_type = f16, kv_type = f16}
  // expected-error @+1 {{has block_offsets but its plan has none: give the plan the op's block_offsets (variable blocks) or neither}}
  %r = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>) block_offsets(%ro, %co : tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<block_sparse>) outs(%o : tensor<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>} -> tensor<?x4x64xf16>
  return
}
