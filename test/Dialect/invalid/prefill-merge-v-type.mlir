// RUN: fi-opt %s -verify-diagnostics
// Rule: merge_v has o's type

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<2xi32>, %ix: tensor<?xi32>, %lp: tensor<1xi32>, %ov: tensor<?x32x128xbf16>, %os: tensor<?x32xf32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 'merge_v' has type 'tensor<?x32x128xbf16>' but 'o' has type 'tensor<?x32x128xf16>'; the other state's o must have o's type}}
  %r:2 = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<2xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) merge(%ov, %os : tensor<?x32x128xbf16>, tensor<?x32xf32>) outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
