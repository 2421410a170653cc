// RUN: fi-opt %s -verify-diagnostics
// Rule: s is [rows, heads] of v

func.func @bad(%va: tensor<?x32x128xf16>, %sa: tensor<?x16xf32>, %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>, %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 's_a' has type 'tensor<?x16xf32>' but must be [rows, heads] = [?, 32] to match 'v_a'}}
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x16xf32>) b(%vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
