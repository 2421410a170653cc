// fp8 attention (q, k, v in f8E4M3FN, o in bf16) through the pipeline's steps.
// RUN: fi-opt %s --fi-select-tiles | FileCheck %s --check-prefix=TILES
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans | FileCheck %s --check-prefix=PLAN
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans --fi-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// RUN: fi-opt %s --fi-select-tiles --fi-materialize-plans --fi-lower-to-runtime=backend=cuda | FileCheck %s --check-prefix=LOWER

// fi-select-tiles: fp8 attention has one kernel, the warp-specialised Hopper one (wgmma
// 128 x 128 tiles), whatever the lengths.
// TILES-LABEL: func.func @ragged_fp8
// TILES: fi.ragged_prefill
// TILES-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = {{true|false}}, cores = wgmma>

// The plan carries the output type.
// PLAN: fi.ragged_prefill_plan
// PLAN-SAME: kv_type = f8E4M3FN
// PLAN-SAME: o_type = bf16
// PLAN-SAME: q_type = f8E4M3FN

// The plan call passes q's dtype code with o's in bits 8.. (e4m3 = 3, bf16 = 1: 3 + 256);
// the run is the e4m3 x e4m3 entry point, with q_scale after v_scale.
// LOWER-LABEL: func.func @ragged_fp8
// LOWER: call @fi_rt_ragged_prefill_plan({{.*}}%c259_i32{{[_0-9]*}}, %c3_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}
// LOWER: %[[VS:.*]] = arith.constant 2.000000e+00 : f32
// LOWER: %[[QS:.*]] = arith.constant 2.500000e-01 : f32
// (no head_scales: three empty f32 memrefs after lse)
// LOWER: call @fi_rt_ragged_prefill_run_e4m3_e4m3({{.*}}, %[[VS]], %[[QS]],
// LOWER-LABEL: func.func @paged_fp8_head_scales
// LOWER: call @fi_rt_paged_prefill_plan({{.*}}%c3_i32{{[_0-9]*}}, %c3_i32
// LOWER: %[[HQ:.*]] = memref.cast %arg8 : memref<4xf32> to memref<?xf32, strided<[?], offset: ?>>
// LOWER: %[[HK:.*]] = memref.cast %arg9 : memref<2xf32> to memref<?xf32, strided<[?], offset: ?>>
// LOWER: call @fi_rt_paged_prefill_run_e4m3_e4m3(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[HQ]], %[[HK]], %{{.*}},
func.func @ragged_fp8(%q: memref<?x32x128xf8E4M3FN>, %k: memref<?x8x128xf8E4M3FN>,
                      %v: memref<?x8x128xf8E4M3FN>, %qo: memref<?xi32>, %kvp: memref<?xi32>,
                      %o: memref<?x32x128xbf16>) {
  fi.ragged_prefill q(%q : memref<?x32x128xf8E4M3FN>)
      kv(%k, %v : memref<?x8x128xf8E4M3FN>, memref<?x8x128xf8E4M3FN>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xbf16>)
      {mask_mode = #fi.mask_mode<causal>, q_scale = 0.25 : f32, v_scale = 2.0 : f32}
  return
}

// Paged, with per-head scales (fp8 attention's run entry points take them after lse).
func.func @paged_fp8_head_scales(%q: memref<?x4x128xf8E4M3FN>, %qo: memref<?xi32>,
                                 %k: memref<?x16x2x128xf8E4M3FN>, %v: memref<?x16x2x128xf8E4M3FN>,
                                 %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>,
                                 %o: memref<?x4x128xf16>, %qs: memref<4xf32>, %ks: memref<2xf32>) {
  fi.paged_prefill q(%q : memref<?x4x128xf8E4M3FN>) qo_indptr(%qo : memref<?xi32>)
      kv(%k, %v : memref<?x16x2x128xf8E4M3FN>, memref<?x16x2x128xf8E4M3FN>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      head_scales(%qs, %ks, %ks : memref<4xf32>, memref<2xf32>, memref<2xf32>)
      outs(%o : memref<?x4x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}
