// RUN: fi-opt %s -verify-diagnostics
// Rule: qo_indptr is i32

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<?xi16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>) {
  // expected-error @+1 {{operand 'qo_indptr' has element type 'i16' but index arrays must be i32; convert it to i32}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return
}
