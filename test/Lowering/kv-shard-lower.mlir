// Context parallelism (kv_shard): fi-lower-to-runtime calls the `_sharded` plan adapters
// with the unsharded call's arguments and two trailing i32s, ranks and split_size; the
// runs lower unchanged.
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime | FileCheck %s --check-prefix=LOWER

// The calls. Decode: the arguments of fi_rt_decode_plan (layout nhd 0, 32 / 8 heads,
// head_dim 128, page 16, f16 / f16, mask none, tiles q 16, kv 64, split, tensor cores),
// then ranks 4 and split_size 256. The run is the unsharded one.
// LOWER-DAG: func.func private @fi_rt_decode_plan_sharded(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// LOWER-LABEL: func.func @decode
// LOWER: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0 : memref<1xi64>
// LOWER: call @fi_rt_decode_plan_sharded(%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}}, %c8_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c4_i32{{[_0-9]*}}, %c256_i32{{[_0-9]*}}) {fi.variant = "decode_tc_q16_kv64_split"}
// LOWER-NOT: call @fi_rt_decode_plan(
// LOWER: call @fi_rt_decode_run_f16_f16(%[[SLOT]], {{.*}}) {fi.variant = "decode_tc_q16_kv64_split"}
func.func @decode(%q: memref<?x32x128xf16>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %o: memref<?x32x128xf16>) {
  fi.paged_decode q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       tiles = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>,
       kv_shard = #fi.kv_shard<ranks = 4, split_size = 256>}
  return
}

// -----

// Paged prefill (causal, plan-time tiles): the arguments of fi_rt_paged_prefill_plan (the
// absent mask_indptr, num_pages, layout, 32 / 8 heads, 128, page 16, f16 / f16, causal 1,
// tiles 0 0 0 0), then ranks 2 and split_size 0 (automatic). An explicit plan op.
// LOWER-DAG: func.func private @fi_rt_paged_prefill_plan_sharded(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// LOWER-LABEL: func.func @prefill
// LOWER: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0 : memref<1xi64>
// LOWER: call @fi_rt_paged_prefill_plan_sharded(%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}}, %c8_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}) {fi.variant = "plan-time"}
// LOWER-NOT: call @fi_rt_paged_prefill_plan(
// LOWER: call @fi_rt_paged_prefill_run_f16_f16(%[[SLOT]], {{.*}}) {fi.variant = "plan-time"}
func.func @prefill(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: memref<?x2x16x8x128xf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %o: memref<?x32x128xf16>) {
  %c0 = arith.constant 0 : index
  %np = memref.dim %kv, %c0 : memref<?x2x16x8x128xf16>
  %plan = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, num_qo_heads = 32, num_kv_heads = 8,
       head_dim = 128, q_type = f16, kv_type = f16, kv_shard = #fi.kv_shard<ranks = 2>}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv(%kv : memref<?x2x16x8x128xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      plan(%plan : !fi.plan<paged_prefill>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, kv_shard = #fi.kv_shard<ranks = 2>}
  return
}
