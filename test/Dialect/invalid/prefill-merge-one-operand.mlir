// RUN: fi-opt %s -verify-diagnostics
// Rule: merge_v and merge_s come together (the generic form could give one)

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<2xi32>, %ix: tensor<?xi32>, %lp: tensor<1xi32>, %ov: tensor<?x32x128xf16>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error @+1 {{has 'merge_v' without 'merge_s': the other state is both its o and its lse}}
  %r:2 = "fi.paged_prefill"(%q, %qo, %kv, %ip, %ix, %lp, %ov, %o, %lse) <{bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1>}> : (tensor<?x32x128xf16>, tensor<2xi32>, tensor<?x2x16x8x128xf16>, tensor<2xi32>, tensor<?xi32>, tensor<1xi32>, tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}
