// RUN: fi-opt %s -verify-diagnostics
// Rule: states are not fp8

func.func @bad(%va: tensor<?x32x128xf8E5M2>, %sa: tensor<?x32xf32>, %vb: tensor<?x32x128xf8E5M2>, %sb: tensor<?x32xf32>, %vo: tensor<?x32x128xf8E5M2>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 'v_a' has element type 'f8E5M2': fp8 is supported for the KV cache only}}
  %r:2 = fi.merge_state a(%va, %sa : tensor<?x32x128xf8E5M2>, tensor<?x32xf32>) b(%vb, %sb : tensor<?x32x128xf8E5M2>, tensor<?x32xf32>) outs(%vo, %so : tensor<?x32x128xf8E5M2>, tensor<?x32xf32>) -> tensor<?x32x128xf8E5M2>, tensor<?x32xf32>
  return
}
