// RUN: fi-opt %s -verify-diagnostics
// Rule: ragged kv_indptr is i32

func.func @bad(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi64>, %o: tensor<?x32x128xbf16>) {
  // expected-error @+1 {{operand 'kv_indptr' has element type 'i64' but index arrays must be i32 (64-bit indptr/indices silently break the attention kernels)}}
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xbf16>) kv(%k, %v : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi64>) outs(%o : tensor<?x32x128xbf16>) -> tensor<?x32x128xbf16>
  return
}
