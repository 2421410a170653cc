// RUN: fi-opt %s -verify-diagnostics
// Rule: v_out has the type of v_a

func.func @bad(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>, %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>, %vo: tensor<?x32x128xf32>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{destination 'v_out' has type 'tensor<?x32x128xf32>' but must have the shape and element type of 'v_a'}}
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x32xf32>) b(%vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%vo, %so : tensor<?x32x128xf32>, tensor<?x32xf32>) -> tensor<?x32x128xf32>, tensor<?x32xf32>
  return
}
