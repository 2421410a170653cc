// RUN: fi-opt %s -verify-diagnostics
// Rule: ragged V has the type of K

func.func @bad(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x64xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x32x128xbf16>) {
  // expected-error @+1 {{operand 'v' has type 'tensor<?x8x64xbf16>' but 'k' has type 'tensor<?x8x128xbf16>'}}
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>) kv(%k, %v : tensor<?x8x128xbf16>, tensor<?x8x64xbf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xbf16>) -> tensor<?x32x128xbf16>
  return
}
