// RUN: fi-opt %s -verify-diagnostics
// Rule: LSE operands are f32

func.func @bad(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>, %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf16>, %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 's_b' has element type 'f16' but log-sum-exp values are f32; make it f32}}
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x32xf32>) b(%vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf16>) outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
