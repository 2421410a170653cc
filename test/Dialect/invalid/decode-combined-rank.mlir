// RUN: fi-opt %s -verify-diagnostics
// Rule: K without V is a combined cache of rank 5

func.func @bad(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error @+1 {{operand 'k' without 'v' is a combined K/V cache and must be rank 5 [pages, 2, page_size, kv_heads, head_dim] (nhd layout)}}
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k : tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
