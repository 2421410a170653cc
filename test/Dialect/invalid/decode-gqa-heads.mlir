// RUN: fi-opt %s -verify-diagnostics
// Rule: qo_heads must be a multiple of kv_heads

func.func @bad(%q: tensor<4x30x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x30x128xf16>, %lse: tensor<4x30xf32>) {
  // expected-error @+1 {{qo_heads of 'q' (30) is not a multiple of kv_heads of 'k' (8); the query heads must be a multiple of the KV heads (GQA/MQA)}}
  %r:2 = fi.paged_decode q(%q : tensor<4x30x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %lse : tensor<4x30x128xf16>, tensor<4x30xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x30x128xf16>, tensor<4x30xf32>
  return
}
