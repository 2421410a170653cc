// RUN: fi-opt %s -verify-diagnostics
// Rule: head counts and head_dim are >= 1 (0 KV heads used to crash the GQA check)

func.func @bad(%q: tensor<4x0x128xf16>, %k: tensor<?x16x0x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x0x128xf16>) {
  // expected-error @+1 {{qo_heads of 'q' (0), kv_heads of 'k' (0) and head_dim of 'q' (128) must all be >= 1; an empty head dimension has nothing to attend with}}
  %r = fi.paged_decode q(%q : tensor<4x0x128xf16>) kv(%k, %k : tensor<?x16x0x128xf16>, tensor<?x16x0x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x0x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x0x128xf16>
  return
}
