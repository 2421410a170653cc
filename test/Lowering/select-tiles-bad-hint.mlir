// fi-select-tiles rejects a length hint that is not a positive integer (it used to fall
// back to plan time silently).
// RUN: fi-opt %s --split-input-file --verify-diagnostics --fi-select-tiles

func.func @negative_qo_hint(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %qi: tensor<?xi32>, %ki: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{hint 'fi.avg_qo_len' = -5 : i64 must be a positive integer (the average length per request); fix it or drop it to choose tiles at plan time}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %k : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qi, %ki : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {fi.avg_qo_len = -5 : i64} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func @string_kv_hint(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %qi: tensor<?xi32>, %ki: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{hint 'fi.avg_kv_len' = "long" must be a positive integer}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %k : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qi, %ki : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {fi.avg_qo_len = 16 : i64, fi.avg_kv_len = "long"} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}
