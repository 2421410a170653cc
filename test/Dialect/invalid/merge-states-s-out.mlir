// RUN: fi-opt %s -verify-diagnostics
// Rule: merge_states s_out is [rows, heads]

func.func @bad(%v: tensor<?x4x32x128xf16>, %s: tensor<?x4x32xf32>, %vo: tensor<?x32x128xf16>, %so: tensor<?x4xf32>) {
  // expected-error @+1 {{destination 's_out' has type 'tensor<?x4xf32>' but must be [rows, heads] = [?, 32] to match 'v'}}
  %r:2 = fi.merge_states %v, %s : tensor<?x4x32x128xf16>, tensor<?x4x32xf32> outs(%vo, %so : tensor<?x32x128xf16>, tensor<?x4xf32>) -> tensor<?x32x128xf16>, tensor<?x4xf32>
  return
}
