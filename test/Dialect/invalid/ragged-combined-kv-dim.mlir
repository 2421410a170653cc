// RUN: fi-opt %s -verify-diagnostics
// Rule: a combined ragged K/V has a K/V dimension of 2

func.func @bad(%q: tensor<?x32x128xbf16>, %k: tensor<?x1x8x128xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x32x128xbf16>) {
  // expected-error @+1 {{operand 'k' is a combined K/V tensor whose dim 1 (the K/V dimension) must be 2, got 1}}
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>) kv(%k : tensor<?x1x8x128xbf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xbf16>) -> tensor<?x32x128xbf16>
  return
}
