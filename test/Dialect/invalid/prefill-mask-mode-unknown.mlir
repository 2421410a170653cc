// RUN: fi-opt %s -verify-diagnostics
// Rule: mask_mode is none, causal or custom

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>) {
  // expected-error @+2 {{expected ::mlir::fi::MaskMode to be one of: none, causal, custom}}
  // expected-error @+1 {{failed to parse Fi_MaskModeAttr parameter}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<sliding>} -> tensor<?x32x128xf16>
  return
}
