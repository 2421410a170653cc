// RUN: fi-opt %s -verify-diagnostics
// Rule: merge_states v_out is [rows, heads, head_dim]

func.func @bad(%v: tensor<?x4x32x128xf16>, %s: tensor<?x4x32xf32>, %vo: tensor<?x4x32x128xf16>, %so: tensor<?x32xf32>) {
  // expected-error @+1 {{destination 'v_out' has type 'tensor<?x4x32x128xf16>' but must be [rows, heads, head_dim] = [?, 32, 128] with the element type of 'v'}}
  %r:2 = fi.merge_states %v, %s : tensor<?x4x32x128xf16>, tensor<?x4x32xf32> outs(%vo, %so : tensor<?x4x32x128xf16>, tensor<?x32xf32>) -> tensor<?x4x32x128xf16>, tensor<?x32xf32>
  return
}
