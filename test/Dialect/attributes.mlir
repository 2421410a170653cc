// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// Every fi attribute and the plan type print in their readable form and parse back.

// CHECK-LABEL: func.func private @bsr
// CHECK-SAME: a = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>
// CHECK-SAME: b = #fi.bsr<block_rows = 4, block_cols = 64, layout = hnd>
func.func private @bsr() attributes {
  a = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
  b = #fi.bsr<block_rows = 4, block_cols = 64, layout = hnd>}

// CHECK-LABEL: func.func private @tiles
// CHECK-SAME: a = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>
// CHECK-SAME: b = #fi.tiles<q = 1, kv = 128, split_kv = false, cores = cuda>
// CHECK-SAME: c = #fi.tiles<q = 128, kv = 128, split_kv = false, cores = wgmma>
func.func private @tiles() attributes {
  a = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>,
  b = #fi.tiles<q = 1, kv = 128, split_kv = false, cores = cuda>,
  c = #fi.tiles<q = 128, kv = 128, split_kv = false, cores = wgmma>}

// CHECK: module attributes {fi.target = #fi.target<sm = 90, sm_count = 132, smem = 232448>}
module attributes {fi.target = #fi.target<sm = 90, sm_count = 132, smem = 232448>} {
  // CHECK-LABEL: func.func private @target_a100
  // CHECK-SAME: t = #fi.target<sm = 80, sm_count = 108, smem = 166912>
  func.func private @target_a100() attributes {t = #fi.target<sm = 80, sm_count = 108, smem = 166912>}
  // CHECK-LABEL: func.func private @target_h200
  // CHECK-SAME: t = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>
  // CHECK-SAME: u = #fi.target<sm = 90, sm_count = 132, smem = 232448>}
  func.func private @target_h200() attributes {
    t = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>,
    u = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 0>}
}

// CHECK-LABEL: func.func private @enums
// CHECK-SAME: cores = #fi.cores<cuda>, cores2 = #fi.cores<wgmma>
// CHECK-SAME: family = #fi.plan_family<ragged_prefill>
// CHECK-SAME: layout = #fi.kv_layout<hnd>
// CHECK-SAME: mask0 = #fi.mask_mode<none>, mask1 = #fi.mask_mode<causal>, mask2 = #fi.mask_mode<custom>
// CHECK-SAME: pos0 = #fi.pos_encoding<none>, pos1 = #fi.pos_encoding<rope_llama>, pos2 = #fi.pos_encoding<alibi>
func.func private @enums() attributes {
  mask0 = #fi.mask_mode<none>, mask1 = #fi.mask_mode<causal>, mask2 = #fi.mask_mode<custom>,
  pos0 = #fi.pos_encoding<none>, pos1 = #fi.pos_encoding<rope_llama>, pos2 = #fi.pos_encoding<alibi>,
  layout = #fi.kv_layout<hnd>, cores = #fi.cores<cuda>, cores2 = #fi.cores<wgmma>, family = #fi.plan_family<ragged_prefill>}

// CHECK-LABEL: func.func private @plan_types
// CHECK-SAME: (!fi.plan<decode>, !fi.plan<paged_prefill>, !fi.plan<ragged_prefill>, !fi.plan<append>)
func.func private @plan_types(!fi.plan<decode>, !fi.plan<paged_prefill>,
                              !fi.plan<ragged_prefill>, !fi.plan<append>)
