// RUN: fi-opt %s -verify-diagnostics
// Rule: fi.lane is for attention ops and their plans (a merge runs after the lanes join)

func.func @bad(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>, %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>, %o: tensor<?x32x128xf16>, %s: tensor<?x32xf32>) {
  // expected-error @+1 {{'fi.lane' is for fi attention ops and their plans, not fi.merge_state; drop it}}
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x32xf32>) b(%vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%o, %s : tensor<?x32x128xf16>, tensor<?x32xf32>) {fi.lane = "main"} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
