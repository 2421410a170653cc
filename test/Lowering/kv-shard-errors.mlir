// A kv-sharded plan exchanges a signature between the ranks on the host: a plan op with
// both `on_device` and kv_shard is a lowering error that says so (kv-shard-pipeline-error.mlir:
// the same through fi-to-llvm=plans-on-device=1).
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime -verify-diagnostics

func.func @decode_plan(%ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %np: index) {
  // expected-error @+1 {{'fi.decode_plan' op is `on_device` and has kv_shard: kv-sharded plans are made on the host (the plan exchanges a signature between the ranks); drop `on_device` (or lower without plans-on-device)}}
  %p = fi.decode_plan pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16, tiles = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>, kv_shard = #fi.kv_shard<ranks = 2>}
  return
}

// -----

func.func @prefill_plan(%qo: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %np: index, %n: index) {
  // expected-error @+1 {{'fi.paged_prefill_plan' op is `on_device` and has kv_shard: kv-sharded plans are made on the host (the plan exchanges a signature between the ranks)}}
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np) max_qo_rows(%n) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16, tiles = #fi.tiles<q = 64, kv = 64, split_kv = false, cores = tensor>, kv_shard = #fi.kv_shard<ranks = 8, split_size = 512>}
  return
}
