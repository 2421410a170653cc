// RUN: fi-opt %s -verify-diagnostics
// Rule: rope_theta > 0

func.func @bad(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error @+1 {{rope_theta = -1 must be > 0}}
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = -1.0 : f32} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
