// RUN: fi-opt %s -verify-diagnostics
// Rule: the memref form has no results

func.func @bad(%q: memref<4x32x128xf16>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>, %ip: memref<5xi32>, %ix: memref<?xi32>, %lp: memref<4xi32>, %o: memref<4x32x128xf16>, %lse: memref<4x32xf32>) {
  // expected-error @+1 {{the memref form writes into its 'outs' buffers and has no results; drop the '->' result types}}
  %r:2 = fi.paged_decode q(%q : memref<4x32x128xf16>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%ip, %ix, %lp : memref<5xi32>, memref<?xi32>, memref<4xi32>) outs(%o, %lse : memref<4x32x128xf16>, memref<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
