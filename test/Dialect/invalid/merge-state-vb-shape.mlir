// RUN: fi-opt %s -verify-diagnostics
// Rule: both merged states cover the same rows/heads

func.func @bad(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>, %vb: tensor<?x16x128xf16>, %sb: tensor<?x32xf32>, %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 'v_b' has type 'tensor<?x16x128xf16>' but 'v_a' has type 'tensor<?x32x128xf16>'; both states must cover the same rows, heads and head_dim}}
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf16>, tensor<?x32xf32>) b(%vb, %sb : tensor<?x16x128xf16>, tensor<?x32xf32>) outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
