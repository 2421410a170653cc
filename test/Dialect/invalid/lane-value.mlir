// RUN: fi-opt %s -verify-diagnostics
// Rule: fi.lane is "main" or "side"

func.func @bad(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>) {
  // expected-error @+1 {{'fi.lane' must be "main" or "side", got "left"}}
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.lane = "left"} -> tensor<?x32x128xf16>
  return
}
