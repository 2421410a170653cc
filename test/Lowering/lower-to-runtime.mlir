// fi-lower-to-runtime: the exact runtime calls of every op family and feature. Memrefs
// are cast to fully dynamic strided memrefs; element types are in the callee names; the
// tile variant is passed as constants (q, kv, split_kv, cores) and named in fi.variant.
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime | FileCheck %s

// CHECK-DAG: func.func private @fi_rt_decode_plan(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @fi_rt_decode_run_f16_f16(memref<1xi64>, memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?x?xf16, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf16, strided<[?, ?, ?, ?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, i32, f32, f32, i32, f32, f32, f32, f32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr) attributes {llvm.emit_c_interface}
// CHECK-DAG: memref.global "private" @__fi_plan_slot_0 : memref<1xi64> = dense<0>
// CHECK-LABEL: func.func @decode
// CHECK: %[[NP:.*]] = memref.dim %arg1, %c0
// CHECK: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0 : memref<1xi64>
// CHECK: %[[NP64:.*]] = arith.index_cast %[[NP]] : index to i64
// The plan: layout nhd (0), 32 / 8 heads, head_dim 128, page 16, f16 (0) / f16 (0),
// mask none (0), tiles q 16, kv 64, split 1, tensor cores (1).
// CHECK: call @fi_rt_decode_plan(%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}, %[[NP64]], %c0_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}}, %c8_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}) {fi.variant = "decode_tc_q16_kv64_split"}
// The run: lse absent (empty stand-in, has_lse 0), layout 0, pos none, sm_scale
// 1/sqrt(128), soft cap 0, window -1, rope 1 / 1e4, k/v scales 1.
// CHECK: %[[NOLSE:.*]] = memref.alloca() : memref<0x0xf32>
// CHECK: %[[NOLSEC:.*]] = memref.cast %[[NOLSE]] : memref<0x0xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[SCALE:.*]] = arith.constant 0.0883883461 : f32
// No variant: null hooks and captures.
// CHECK: %[[NOFN:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @fi_rt_decode_run_f16_f16(%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NOLSEC]], %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %[[SCALE]], %{{.*}}, %c-1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NOFN]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {fi.variant = "decode_tc_q16_kv64_split"}
// CHECK-NOT: fi.paged_decode
func.func @decode(%q: memref<?x32x128xf16>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %o: memref<?x32x128xf16>) {
  fi.paged_decode q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       tiles = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>}
  return
}

// -----

// A combined HND cache [pages, 2, kv_heads, page, head_dim] becomes two rank-reduced
// strided views (K at index 0, V at 1); LSE is passed with has_lse = 1; a plan shared by
// two ops is one call; RoPE (1), soft cap, window.
// CHECK-LABEL: func.func @decode_combined
// CHECK: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0
// CHECK: call @fi_rt_decode_plan(%[[SLOT]], {{.*}}) {fi.variant = "decode_cc_q1_kv32"}
// CHECK-NOT: call @fi_rt_decode_plan
// CHECK: memref.subview %arg1[0, 0, 0, 0, 0] [%{{.*}}, 1, 2, 8, 64] [1, 1, 1, 1, 1] : memref<?x2x2x8x64xbf16> to memref<?x2x8x64xbf16, strided<[2048, 512, 64, 1]>>
// CHECK: memref.subview %arg1[0, 1, 0, 0, 0] [%{{.*}}, 1, 2, 8, 64] [1, 1, 1, 1, 1] : memref<?x2x2x8x64xbf16> to memref<?x2x8x64xbf16, strided<[2048, 512, 64, 1], offset: 1024>>
// CHECK: call @fi_rt_decode_run_bf16_bf16(%[[SLOT]], {{.*}}, %c1_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c100_i32{{[_0-9]*}}, {{.*}}) {fi.variant = "decode_cc_q1_kv32"}
// CHECK: call @fi_rt_decode_run_bf16_bf16(%[[SLOT]], {{.*}}) {fi.variant = "decode_cc_q1_kv32"}
func.func @decode_combined(%q: memref<?x2x64xbf16>, %kv: memref<?x2x2x8x64xbf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %o: memref<?x2x64xbf16>,
    %lse: memref<?x2xf32>) {
  %c0 = arith.constant 0 : index
  %np = memref.dim %kv, %c0 : memref<?x2x2x8x64xbf16>
  %plan = fi.decode_plan pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>, num_qo_heads = 2,
       num_kv_heads = 2, head_dim = 64, q_type = bf16, kv_type = bf16,
       tiles = #fi.tiles<q = 1, kv = 32, split_kv = false, cores = cuda>}
  fi.paged_decode q(%q : memref<?x2x64xbf16>) kv(%kv : memref<?x2x2x8x64xbf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) plan(%plan : !fi.plan<decode>)
      outs(%o, %lse : memref<?x2x64xbf16>, memref<?x2xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>,
       pos_encoding = #fi.pos_encoding<rope_llama>, logits_soft_cap = 50.0 : f32,
       window_left = 100 : i64}
  fi.paged_decode q(%o : memref<?x2x64xbf16>) kv(%kv : memref<?x2x2x8x64xbf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) plan(%plan : !fi.plan<decode>)
      outs(%o : memref<?x2x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>}
  return
}

// -----

// Paged prefill with a custom ui8 mask and plan-time tiles (q_tile 0 -> the plan step
// chooses): mask_mode custom (2) in the plan and the run.
// CHECK-LABEL: func.func @paged_prefill_custom
// CHECK: call @fi_rt_paged_prefill_plan(%[[SLOT:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MI:.*]], %{{.*}}, %c0_i32{{[_0-9]*}}, %c4_i32{{[_0-9]*}}, %c4_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}) {fi.variant = "plan-time"}
// CHECK: call @fi_rt_paged_prefill_run_f16_f16_mask_ui8(%[[SLOT]], {{.*}}) {fi.variant = "plan-time"}
func.func @paged_prefill_custom(%q: memref<?x4x32xf16>, %qo: memref<?xi32>,
    %k: memref<?x16x4x32xf16>, %v: memref<?x16x4x32xf16>, %p: memref<?xi32>,
    %i: memref<?xi32>, %l: memref<?xi32>, %m: memref<?xui8>, %mi: memref<?xi32>,
    %o: memref<?x4x32xf16>) {
  fi.paged_prefill q(%q : memref<?x4x32xf16>) qo_indptr(%qo : memref<?xi32>)
      kv(%k, %v : memref<?x16x4x32xf16>, memref<?x16x4x32xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      mask(%m, %mi : memref<?xui8>, memref<?xi32>) outs(%o : memref<?x4x32xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<custom>}
  return
}

// -----

// Ragged prefill, combined K/V [nnz, 2, kv_heads, head_dim] -> two views; causal (1);
// fp8 e5m2 KV with an f16 query; ALiBi (2) with the k/v scales.
// CHECK-LABEL: func.func @ragged_combined
// CHECK: call @fi_rt_ragged_prefill_plan(%[[SLOT:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %c8_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c4_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}) {fi.variant = "prefill_q32_kv64"}
// CHECK: memref.subview %arg1[0, 0, 0, 0] [%{{.*}}, 1, 2, 64] [1, 1, 1, 1] : memref<?x2x2x64xf8E5M2> to memref<?x2x64xf8E5M2, strided<[256, 64, 1]>>
// CHECK: memref.subview %arg1[0, 1, 0, 0] [%{{.*}}, 1, 2, 64] [1, 1, 1, 1] : memref<?x2x2x64xf8E5M2> to memref<?x2x64xf8E5M2, strided<[256, 64, 1], offset: 128>>
// CHECK: %[[KS:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[VS:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: call @fi_rt_ragged_prefill_run_f16_e5m2(%[[SLOT]], {{.*}}, %c1_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, {{.*}}, %[[KS]], %[[VS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {fi.variant = "prefill_q32_kv64"}
func.func @ragged_combined(%q: memref<?x8x64xf16>, %kv: memref<?x2x2x64xf8E5M2>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {
  fi.ragged_prefill q(%q : memref<?x8x64xf16>) kv(%kv : memref<?x2x2x64xf8E5M2>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o, %lse : memref<?x8x64xf16>, memref<?x8xf32>)
      {mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<alibi>,
       k_scale = 0.25 : f32, v_scale = 4.0 : f32,
       tiles = #fi.tiles<q = 32, kv = 64, split_kv = false, cores = tensor>}
  return
}

// -----

// The Hopper tier: cores = wgmma is passed as 2 and named in the variant.
// CHECK-LABEL: func.func @ragged_wgmma
// CHECK: call @fi_rt_ragged_prefill_plan(%[[SLOT:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %c32_i32{{[_0-9]*}}, %c8_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}) {fi.variant = "prefill_wg_q128_kv128"}
// CHECK: call @fi_rt_ragged_prefill_run_f16_f16(%[[SLOT]], {{.*}}) {fi.variant = "prefill_wg_q128_kv128"}
func.func @ragged_wgmma(%q: memref<?x32x128xf16>, %k: memref<?x8x128xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x32x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x32x128xf16>) kv(%k, %k : memref<?x8x128xf16>, memref<?x8x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = false, cores = wgmma>}
  return
}

// -----

// Merges need no plan; an absent s_out is an empty stand-in with has_s_out 0.
// CHECK-LABEL: func.func @merges
// CHECK: call @fi_rt_merge_state_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c1_i32{{[_0-9]*}})
// CHECK: memref.alloca() : memref<0x0xf32>
// CHECK: call @fi_rt_merge_state_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}})
// CHECK: call @fi_rt_merge_states_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c1_i32{{[_0-9]*}})
// CHECK-NOT: call @fi_rt_{{.*}}_plan
func.func @merges(%va: memref<?x4x16xf32>, %sa: memref<?x4xf32>, %vb: memref<?x4x16xf32>,
    %sb: memref<?x4xf32>, %vs: memref<?x3x4x16xbf16>, %ss: memref<?x3x4xf32>,
    %vo: memref<?x4x16xbf16>) {
  fi.merge_state a(%va, %sa : memref<?x4x16xf32>, memref<?x4xf32>)
      b(%vb, %sb : memref<?x4x16xf32>, memref<?x4xf32>)
      outs(%va, %sa : memref<?x4x16xf32>, memref<?x4xf32>)
  fi.merge_state a(%va, %sa : memref<?x4x16xf32>, memref<?x4xf32>)
      b(%vb, %sb : memref<?x4x16xf32>, memref<?x4xf32>) outs(%vb : memref<?x4x16xf32>)
  fi.merge_states %vs, %ss : memref<?x3x4x16xbf16>, memref<?x3x4xf32>
      outs(%vo, %sa : memref<?x4x16xbf16>, memref<?x4xf32>)
  return
}

// -----

// Append: plan (page size 16) and run with the cache's element type in the name.
// CHECK-LABEL: func.func @append
// CHECK: %[[NP:.*]] = memref.dim %arg6, %c0
// CHECK: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0
// CHECK: call @fi_rt_append_plan(%[[SLOT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i32{{[_0-9]*}})
// CHECK: call @fi_rt_append_run_e4m3(%[[SLOT]], {{.*}}, %c0_i32{{[_0-9]*}})
func.func @append(%kn: memref<?x2x32xf8E4M3FN>, %vn: memref<?x2x32xf8E4M3FN>, %ap: memref<?xi32>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>,
    %kc: memref<?x16x2x32xf8E4M3FN>, %vc: memref<?x16x2x32xf8E4M3FN>) {
  fi.append_paged_kv kv_new(%kn, %vn : memref<?x2x32xf8E4M3FN>, memref<?x2x32xf8E4M3FN>)
      append_indptr(%ap : memref<?xi32>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%kc, %vc : memref<?x16x2x32xf8E4M3FN>, memref<?x16x2x32xf8E4M3FN>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// -----

// Lanes: an op of one lane that reads what the other lane wrote since the lanes forked
// waits for it (a join call before its lane); independent lane ops do not.
// (the plans, hoisted, each in its op's lane)
// CHECK-LABEL: func.func @lanes_dependent
// CHECK-COUNT-3: call @fi_rt_decode_plan(
// CHECK-NOT: call @fi_rt_lanes_join
// CHECK: call @fi_rt_decode_run_bf16_bf16(
// CHECK-NEXT: call @fi_rt_lane_leave() : () -> ()
// CHECK-NOT: call @fi_rt_lanes_join
// CHECK: call @fi_rt_decode_run_bf16_bf16(
// CHECK-NEXT: call @fi_rt_lane_leave() : () -> ()
// CHECK-NEXT: call @fi_rt_lanes_join() : () -> ()
// CHECK: call @fi_rt_lane_enter(
// CHECK: call @fi_rt_decode_run_bf16_bf16(
// CHECK-NEXT: call @fi_rt_lane_leave() : () -> ()
// CHECK-NEXT: call @fi_rt_lanes_join() : () -> ()
// CHECK-NEXT: return
func.func @lanes_dependent(%q: memref<?x2x64xbf16>, %kv: memref<?x2x2x8x64xbf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %o1: memref<?x2x64xbf16>,
    %o2: memref<?x2x64xbf16>, %o3: memref<?x2x64xbf16>) {
  // main: q -> o1; side: q -> o2 (independent: no join); side: o1 -> o3 (reads main's o1)
  fi.paged_decode q(%q : memref<?x2x64xbf16>) kv(%kv : memref<?x2x2x8x64xbf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o1 : memref<?x2x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>, fi.lane = "main"}
  fi.paged_decode q(%q : memref<?x2x64xbf16>) kv(%kv : memref<?x2x2x8x64xbf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o2 : memref<?x2x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>, fi.lane = "side"}
  fi.paged_decode q(%o1 : memref<?x2x64xbf16>) kv(%kv : memref<?x2x2x8x64xbf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o3 : memref<?x2x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>, fi.lane = "side"}
  return
}
