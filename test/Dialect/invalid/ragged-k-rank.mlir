// RUN: fi-opt %s -verify-diagnostics
// Rule: ragged k is [nnz_kv, kv_heads, head_dim]

func.func @bad(%q: tensor<?x32x128xbf16>, %k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x32x128xbf16>) {
  // expected-error @+1 {{operand 'k' must be rank 3 [nnz_kv, kv_heads, head_dim], got 'tensor<?x16x8x128xbf16>'}}
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>) kv(%k, %v : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xbf16>) -> tensor<?x32x128xbf16>
  return
}
