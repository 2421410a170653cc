// RUN: fi-opt %s -verify-diagnostics
// Rule: the plan must be made for the op's shape

func.func @bad(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 64, q_type = f16, kv_type = f16}
  // expected-error @+1 {{operand 'plan' was made for head_dim 64 but this op has head_dim 128; make the plan with the op's shape}}
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) plan(%p : !fi.plan<decode>) outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
