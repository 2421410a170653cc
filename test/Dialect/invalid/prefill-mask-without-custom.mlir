// RUN: fi-opt %s -verify-diagnostics
// Rule: a mask operand needs mask_mode = custom

func.func @bad(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %m: tensor<?xi8>, %mi: tensor<?xi32>, %o: tensor<?x32x128xf16>) {
  // expected-error @+1 {{a 'mask' operand is given but mask_mode is causal; set mask_mode = #fi.mask_mode<custom> or drop the mask}}
  %r = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) mask(%m, %mi : tensor<?xi8>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>
  return
}
