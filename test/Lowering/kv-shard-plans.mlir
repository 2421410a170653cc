// Context parallelism (kv_shard): fi-materialize-plans copies the op's kv_shard onto the
// plan it makes, so that -cse shares a plan only between ops sharded alike.
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans | FileCheck %s --check-prefix=MAT
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans --cse | FileCheck %s --check-prefix=CSE

// Four layers over one page table: two sharded over 4 ranks, one over 4 ranks with a fixed
// split, one whole. Four plans (placed together after the page count), three after CSE.
// MAT-LABEL: func.func @layers
// MAT: %[[W:[0-9]+]] = fi.decode_plan {{.*}}head_dim = 128 : i64, kv_type = f16
// MAT: %[[F:[0-9]+]] = fi.decode_plan {{.*}}kv_shard = #fi.kv_shard<ranks = 4, split_size = 256>,
// MAT: %[[B:[0-9]+]] = fi.decode_plan {{.*}}kv_shard = #fi.kv_shard<ranks = 4>,
// MAT: %[[A:[0-9]+]] = fi.decode_plan {{.*}}kv_shard = #fi.kv_shard<ranks = 4>,
// MAT: fi.paged_decode {{.*}}plan(%[[A]] : !fi.plan<decode>) {{.*}}kv_shard = #fi.kv_shard<ranks = 4>,
// MAT: fi.paged_decode {{.*}}plan(%[[B]] : !fi.plan<decode>) {{.*}}kv_shard = #fi.kv_shard<ranks = 4>,
// MAT: fi.paged_decode {{.*}}plan(%[[F]] : !fi.plan<decode>) {{.*}}kv_shard = #fi.kv_shard<ranks = 4, split_size = 256>,
// MAT: fi.paged_decode {{.*}}plan(%[[W]] : !fi.plan<decode>)
// MAT-NOT: kv_shard
// MAT: return
// CSE-LABEL: func.func @layers
// CSE: %[[W:[0-9]+]] = fi.decode_plan {{.*}}head_dim = 128 : i64, kv_type = f16
// CSE: %[[F:[0-9]+]] = fi.decode_plan {{.*}}kv_shard = #fi.kv_shard<ranks = 4, split_size = 256>,
// CSE: %[[A:[0-9]+]] = fi.decode_plan {{.*}}kv_shard = #fi.kv_shard<ranks = 4>,
// CSE-NOT: fi.decode_plan
// CSE: fi.paged_decode {{.*}}plan(%[[A]] : !fi.plan<decode>)
// CSE: fi.paged_decode {{.*}}plan(%[[A]] : !fi.plan<decode>)
// CSE: fi.paged_decode {{.*}}plan(%[[F]] : !fi.plan<decode>)
// CSE: fi.paged_decode {{.*}}plan(%[[W]] : !fi.plan<decode>)
func.func @layers(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>,
    %o: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %o1 = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       kv_shard = #fi.kv_shard<ranks = 4>} -> tensor<?x32x128xf16>
  %o2 = fi.paged_decode q(%o1 : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       kv_shard = #fi.kv_shard<ranks = 4>} -> tensor<?x32x128xf16>
  %o3 = fi.paged_decode q(%o2 : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       kv_shard = #fi.kv_shard<ranks = 4, split_size = 256>} -> tensor<?x32x128xf16>
  %o4 = fi.paged_decode q(%o3 : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %o4 : tensor<?x32x128xf16>
}
