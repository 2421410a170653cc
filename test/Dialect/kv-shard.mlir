// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// Context parallelism: #fi.kv_shard<ranks = N[, split_size = S]> on paged decode, paged
// prefill and their plan ops parses and prints back (split_size 0, the default, is not
// printed).

// CHECK-LABEL: func.func private @attr
// CHECK-SAME: a = #fi.kv_shard<ranks = 4>
// CHECK-SAME: b = #fi.kv_shard<ranks = 8, split_size = 256>
// CHECK-SAME: c = #fi.kv_shard<ranks = 1>
// CHECK-SAME: d = #fi.kv_shard<ranks = 1024>
func.func private @attr() attributes {
  a = #fi.kv_shard<ranks = 4>, b = #fi.kv_shard<ranks = 8, split_size = 256>,
  c = #fi.kv_shard<ranks = 1, split_size = 0>, d = #fi.kv_shard<ranks = 1024>}

// CHECK-LABEL: func.func @decode
// CHECK: %[[P:.*]] = fi.decode_plan pages(%arg3, %arg4, %arg5 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%arg7)
// CHECK-SAME: kv_shard = #fi.kv_shard<ranks = 4, split_size = 128>
// CHECK: fi.paged_decode {{.*}} plan(%[[P]] : !fi.plan<decode>)
// CHECK-SAME: kv_shard = #fi.kv_shard<ranks = 4, split_size = 128>
func.func @decode(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %o: tensor<?x32x128xf16>, %np: index) -> tensor<?x32x128xf16> {
  %p = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32,
       num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16,
       kv_shard = #fi.kv_shard<ranks = 4, split_size = 128>}
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%p : !fi.plan<decode>) outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       kv_shard = #fi.kv_shard<ranks = 4, split_size = 128>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// CHECK-LABEL: func.func @prefill
// CHECK: %[[P:.*]] = fi.paged_prefill_plan qo_indptr(%arg1 : memref<?xi32>)
// CHECK-SAME: kv_shard = #fi.kv_shard<ranks = 2>
// CHECK-SAME: mask_mode = #fi.mask_mode<causal>
// CHECK: fi.paged_prefill {{.*}} plan(%[[P]] : !fi.plan<paged_prefill>)
// CHECK-SAME: kv_shard = #fi.kv_shard<ranks = 2>
func.func @prefill(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>,
    %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>,
    %lse: memref<?x32xf32>, %np: index) {
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, num_qo_heads = 32, num_kv_heads = 8,
       head_dim = 128, q_type = f16, kv_type = f16, kv_shard = #fi.kv_shard<ranks = 2>}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv(%kv : memref<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      plan(%p : !fi.plan<paged_prefill>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, kv_shard = #fi.kv_shard<ranks = 2>,
       logits_soft_cap = 30.0 : f32}
  return
}
