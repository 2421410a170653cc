// --fi-materialize-plans=on-device makes the plans it creates on the device (with the
// tiles fi-select-tiles chose); a prefill plan's row bounds are dim 0 of the first layer's
// q (and ragged k), so the plans of all layers stay identical and -cse folds them; a
// prefill with a custom mask keeps a host plan.
// RUN: fi-opt %s --fi-select-tiles=device-plans=1 --fi-materialize-plans=on-device | FileCheck %s --check-prefix=MAT
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans | FileCheck %s --check-prefix=HOST
// RUN: fi-opt %s --fi-select-tiles=device-plans=1 --fi-materialize-plans=on-device -cse | FileCheck %s --check-prefix=CSE
// HOST-NOT: on_device

// MAT-LABEL: func.func @materialized
// MAT: %[[D:.*]] = fi.decode_plan {{.*}} on_device
// MAT-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// MAT: %[[A:.*]] = fi.append_plan {{.*}} on_device
// MAT: fi.append_paged_kv {{.*}} plan(%[[A]] : !fi.plan<append>)
// MAT: fi.paged_decode {{.*}} plan(%[[D]] : !fi.plan<decode>)
func.func @materialized(%q: tensor<?x32x128xf16>, %kn: tensor<?x8x128xf16>,
    %vn: tensor<?x8x128xf16>, %cache: tensor<?x2x16x8x128xf16>, %ap: tensor<?xi32>,
    %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>)
    -> tensor<?x32x128xf16> {
  %c = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%ap : tensor<?xi32>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%cache : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// MAT-LABEL: func.func @prefill_layers
// MAT-DAG: %[[NQ:.*]] = tensor.dim %arg0,
// MAT-DAG: %[[NK:.*]] = tensor.dim %arg2,
// MAT: fi.ragged_prefill_plan indptr(%arg6, %arg7 : tensor<?xi32>, tensor<?xi32>) max_rows(%[[NQ]], %[[NK]]) {{.*}}on_device
// MAT: fi.ragged_prefill_plan indptr(%arg6, %arg7 : tensor<?xi32>, tensor<?xi32>) max_rows(%[[NQ]], %[[NK]]) {{.*}}on_device
// MAT-LABEL: func.func @custom_mask
// MAT-NOT: on_device
// MAT: return
// CSE-LABEL: func.func @prefill_layers
// CSE-COUNT-1: fi.ragged_prefill_plan
// CSE-NOT: fi.ragged_prefill_plan
// CSE: return
func.func @prefill_layers(%q0: tensor<?x32x128xf16>, %q1: tensor<?x32x128xf16>,
    %k0: tensor<?x8x128xf16>, %v0: tensor<?x8x128xf16>, %k1: tensor<?x8x128xf16>,
    %v1: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
    %o: tensor<?x32x128xf16>) -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>) {
  %r0 = fi.ragged_prefill q(%q0 : tensor<?x32x128xf16>)
      kv(%k0, %v0 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>) {mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>
  %r1 = fi.ragged_prefill q(%q1 : tensor<?x32x128xf16>)
      kv(%k1, %v1 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>) {mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>
  return %r0, %r1 : tensor<?x32x128xf16>, tensor<?x32x128xf16>
}

func.func @custom_mask(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %m: tensor<?xi8>,
    %mi: tensor<?xi32>, %o: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      mask(%m, %mi : tensor<?xi8>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>) {mask_mode = #fi.mask_mode<custom>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
