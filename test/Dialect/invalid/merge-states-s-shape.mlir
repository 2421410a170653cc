// RUN: fi-opt %s -verify-diagnostics
// Rule: merge_states s is [rows, n, heads] of v

func.func @bad(%v: tensor<?x4x32x128xf16>, %s: tensor<?x2x32xf32>, %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 's' has type 'tensor<?x2x32xf32>' but must be [rows, n, heads] = [?, 4, 32] to match 'v'}}
  %r:2 = fi.merge_states %v, %s : tensor<?x4x32x128xf16>, tensor<?x2x32xf32> outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
