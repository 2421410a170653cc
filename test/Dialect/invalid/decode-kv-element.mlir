// RUN: fi-opt %s -verify-diagnostics
// Rule: the KV cache must be f16/bf16/f32/f8E4M3FN/f8E5M2

func.func @bad(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xi8>, %v: tensor<?x16x8x128xi8>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error @+1 {{operand 'k' has element type 'i8'; use f16, bf16, f32, f8E4M3FN or f8E5M2}}
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xi8>, tensor<?x16x8x128xi8>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
