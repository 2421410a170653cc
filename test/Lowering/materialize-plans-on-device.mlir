// --fi-materialize-plans=on-device makes the decode and append plans it creates on the
// device (with the tiles fi-select-tiles chose).
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans=on-device | FileCheck %s --check-prefix=MAT
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans | FileCheck %s --check-prefix=HOST
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
