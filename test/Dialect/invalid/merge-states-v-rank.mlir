// RUN: fi-opt %s -verify-diagnostics
// Rule: merge_states v is [rows, n, heads, head_dim]

func.func @bad(%v: tensor<?x32x128xf16>, %s: tensor<?x4x32xf32>, %vo: tensor<?x32x128xf16>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{operand 'v' must be rank 4 [rows, n, heads, head_dim], got 'tensor<?x32x128xf16>'}}
  %r:2 = fi.merge_states %v, %s : tensor<?x32x128xf16>, tensor<?x4x32xf32> outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
