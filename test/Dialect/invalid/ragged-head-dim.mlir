// RUN: fi-opt %s -verify-diagnostics
// Rule: ragged head_dim agrees between q and k

func.func @bad(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x256xbf16>, %v: tensor<?x8x256xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x32x128xbf16>) {
  // expected-error @+1 {{head_dim of 'k' (256) does not match head_dim of 'q' (128)}}
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>) kv(%k, %v : tensor<?x8x256xbf16>, tensor<?x8x256xbf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xbf16>) -> tensor<?x32x128xbf16>
  return
}
