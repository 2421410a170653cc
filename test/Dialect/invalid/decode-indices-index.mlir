// RUN: fi-opt %s -verify-diagnostics
// Rule: index-typed indices are rejected too

func.func @bad(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xindex>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error @+1 {{operand 'kv_indices' has element type 'index' but index arrays must be i32 (64-bit indptr/indices silently break the attention kernels)}}
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xindex>, tensor<4xi32>) outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
