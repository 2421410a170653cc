// RUN: fi-opt %s -verify-diagnostics
// Rule: fp8 is allowed for the KV cache only, not for q

func.func @bad(%q: tensor<4x32x128xf8E4M3FN>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf8E4M3FN>, %lse: tensor<4x32xf32>) {
  // expected-error @+1 {{operand 'q' has element type 'f8E4M3FN': fp8 queries (fp8 attention) are for ragged_prefill and paged_prefill; this op takes f16, bf16 or f32}}
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf8E4M3FN>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %lse : tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>
  return
}
