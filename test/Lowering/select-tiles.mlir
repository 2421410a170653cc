// fi-select-tiles: the runtime's heuristics (kernels/src/heuristics.c, decision table at
// the top) decide at compile time where shapes are static or hinted; the expected tiles
// below are worked out by hand from that table.
// RUN: fi-opt %s --split-input-file --fi-select-tiles | FileCheck %s

// Decode, GQA group 4 (32/8): tensor cores, q tile max(16, 4) = 16. KV tile: 1 warp,
// regs 32 + 16*(128+kv)/32, smem 16*128*2 + 4*kv*128*2 -> occupancy 6/3/1 blocks for
// kv 32/64/128 on an H100 -> 32. Batch unknown -> split allowed.
// CHECK-LABEL: func.func @decode_gqa
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
func.func @decode_gqa(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>,
    %o: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// -----

// Decode, MHA (group 1) at head_dim 64 with f16 KV and pages of 16 on Hopper: the decode
// fast path, tensor cores (the warp-specialised kernel; CUDA cores read 1.3-2.6x slower in
// bench/sweeps/decode_h200_hd64.csv), q tile 16, KV tile 32. Static batch 256 and the hint
// fi.avg_kv_len = 4096: 256 * 8 CTAs fill 132 SMs -> no split.
// CHECK-LABEL: func.func @decode_mha_static
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = false, cores = tensor>
func.func @decode_mha_static(%q: tensor<256x8x64xf16>, %k: tensor<?x16x8x64xf16>,
    %v: tensor<?x16x8x64xf16>, %p: tensor<257xi32>, %i: tensor<?xi32>, %l: tensor<256xi32>,
    %o: tensor<256x8x64xf16>) -> tensor<256x8x64xf16> {
  %r = fi.paged_decode q(%q : tensor<256x8x64xf16>)
      kv(%k, %v : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16>)
      pages(%p, %i, %l : tensor<257xi32>, tensor<?xi32>, tensor<256xi32>)
      outs(%o : tensor<256x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 4096 : i64}
      -> tensor<256x8x64xf16>
  return %r : tensor<256x8x64xf16>
}

// -----

// Decode, MHA at head_dim 128 with f16 KV of q's type and pages of 16 tokens: the decode
// fast path (the warp-specialised decode kernel's scope); on the default Hopper target
// tensor cores for any group, q tile 16. Pages of 8 and of 24 tokens too (the kernel loads
// boxes of 8 rows, fi_decode_page_box_rows). Pages of 2 tokens are off the fast path, but
// MHA takes the per-warp tensor-core kernel there too (bench/sweeps/decode_h200_page2.csv);
// pages of 6 (no box of 4 or 8 rows fits them) keep the group rule: CUDA cores.
// CHECK-LABEL: func.func @decode_mha_fast_path
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 1, kv = 32, split_kv = true, cores = cuda>
func.func @decode_mha_fast_path(%q: tensor<?x32x128xf16>, %k: tensor<?x16x32x128xf16>,
    %v: tensor<?x16x32x128xf16>, %k8: tensor<?x8x32x128xf16>, %v8: tensor<?x8x32x128xf16>,
    %k2: tensor<?x2x32x128xf16>, %v2: tensor<?x2x32x128xf16>,
    %k24: tensor<?x24x32x128xf16>, %v24: tensor<?x24x32x128xf16>,
    %k6: tensor<?x6x32x128xf16>, %v6: tensor<?x6x32x128xf16>,
    %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>, %o: tensor<?x32x128xf16>)
    -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>,
        tensor<?x32x128xf16>, tensor<?x32x128xf16>) {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x32x128xf16>, tensor<?x16x32x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %r8 = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k8, %v8 : tensor<?x8x32x128xf16>, tensor<?x8x32x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = nhd>} -> tensor<?x32x128xf16>
  %r2 = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k2, %v2 : tensor<?x2x32x128xf16>, tensor<?x2x32x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 2, layout = nhd>} -> tensor<?x32x128xf16>
  %r24 = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k24, %v24 : tensor<?x24x32x128xf16>, tensor<?x24x32x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 24, layout = nhd>} -> tensor<?x32x128xf16>
  %r6 = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k6, %v6 : tensor<?x6x32x128xf16>, tensor<?x6x32x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 6, layout = nhd>} -> tensor<?x32x128xf16>
  return %r, %r8, %r2, %r24, %r6 : tensor<?x32x128xf16>, tensor<?x32x128xf16>,
      tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>
}

// -----

// Decode at head_dim 256 (no warp-specialised decode kernel there; H200 sweep
// bench/sweeps/decode_h200_hd256.csv). MHA, static batch 8 with fi.avg_kv_len = 16384:
// CUDA cores with KV tiles of 16, 256 unsplit CTAs (under two per SM) -> split. Group 4,
// batch 1 with fi.avg_kv_len = 2048: tensor cores, split into 8 KV heads x 16 chunks of
// 128 tokens = 128 CTAs (one per SM at most) -> KV tiles of 64; with RoPE, 32 (the rotated
// K tiles beside the raw ones would not fit an SM at 64).
// CHECK-LABEL: func.func @decode_hd256
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 1, kv = 16, split_kv = true, cores = cuda>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
func.func @decode_hd256(%q: tensor<8x32x256xf16>, %k: tensor<?x16x32x256xf16>,
    %v: tensor<?x16x32x256xf16>, %p: tensor<9xi32>, %i: tensor<?xi32>, %l: tensor<8xi32>,
    %o: tensor<8x32x256xf16>, %q1: tensor<1x32x256xf16>, %k1: tensor<?x16x8x256xf16>,
    %v1: tensor<?x16x8x256xf16>, %p1: tensor<2xi32>, %l1: tensor<1xi32>,
    %o1: tensor<1x32x256xf16>)
    -> (tensor<8x32x256xf16>, tensor<1x32x256xf16>, tensor<1x32x256xf16>) {
  %r = fi.paged_decode q(%q : tensor<8x32x256xf16>)
      kv(%k, %v : tensor<?x16x32x256xf16>, tensor<?x16x32x256xf16>)
      pages(%p, %i, %l : tensor<9xi32>, tensor<?xi32>, tensor<8xi32>)
      outs(%o : tensor<8x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 16384 : i64}
      -> tensor<8x32x256xf16>
  %r1 = fi.paged_decode q(%q1 : tensor<1x32x256xf16>)
      kv(%k1, %v1 : tensor<?x16x8x256xf16>, tensor<?x16x8x256xf16>)
      pages(%p1, %i, %l1 : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o1 : tensor<1x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<1x32x256xf16>
  %r2 = fi.paged_decode q(%q1 : tensor<1x32x256xf16>)
      kv(%k1, %v1 : tensor<?x16x8x256xf16>, tensor<?x16x8x256xf16>)
      pages(%p1, %i, %l1 : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o1 : tensor<1x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64,
       pos_encoding = #fi.pos_encoding<rope_llama>}
      -> tensor<1x32x256xf16>
  return %r, %r1, %r2 : tensor<8x32x256xf16>, tensor<1x32x256xf16>, tensor<1x32x256xf16>
}

// -----

// Decode, MHA at head_dim 128 with an e4m3 KV cache under f16 or bf16 queries, with or
// without RoPE: the fast path too (the warp-specialised decode kernel's fp8 instance),
// tensor cores.
// CHECK-LABEL: func.func @decode_mha_fp8_kv
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
func.func @decode_mha_fp8_kv(%q: tensor<?x32x128xf16>, %qb: tensor<?x32x128xbf16>,
    %k: tensor<?x16x32x128xf8E4M3FN>, %v: tensor<?x16x32x128xf8E4M3FN>,
    %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>, %o: tensor<?x32x128xf16>,
    %ob: tensor<?x32x128xbf16>)
    -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xbf16>) {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x32x128xf8E4M3FN>, tensor<?x16x32x128xf8E4M3FN>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %rr = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x32x128xf8E4M3FN>, tensor<?x16x32x128xf8E4M3FN>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       pos_encoding = #fi.pos_encoding<rope_llama>} -> tensor<?x32x128xf16>
  %rb = fi.paged_decode q(%qb : tensor<?x32x128xbf16>)
      kv(%k, %v : tensor<?x16x32x128xf8E4M3FN>, tensor<?x16x32x128xf8E4M3FN>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%ob : tensor<?x32x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xbf16>
  return %r, %rr, %rb : tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xbf16>
}

// -----

// Prefill with static shapes: 512 rows over 4 requests = 128 per request, group 4 ->
// packed 512 -> q tile >= 64; the default target is Hopper (sm 90) and head_dim 128: the
// wgmma tier. Causal, f16 KV, page 16, no extras: the fast path of the warp-specialised
// kernel, q tile 128 x kv tile 128.
// CHECK-LABEL: func.func @prefill_static
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>} -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// Soft cap, sliding window, ALiBi and custom masks run on the warp-specialised kernel too:
// the same 128 x 128 tiles.
// CHECK-LABEL: func.func @prefill_static_soft_cap
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_soft_cap(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, logits_soft_cap = 30.0 : f32}
      -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// CHECK-LABEL: func.func @prefill_static_window
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_window(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, window_left = 1024 : i64}
      -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// CHECK-LABEL: func.func @prefill_static_alibi
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_alibi(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<alibi>}
      -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// CHECK-LABEL: func.func @prefill_static_custom_mask
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_custom_mask(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %m: tensor<?xui8>, %mi: tensor<5xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      mask(%m, %mi : tensor<?xui8>, tensor<5xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<custom>}
      -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// GQA groups that do not divide 128 (3, 5): the same kernel, 126 and 125 of its 128 rows
// per chunk.
// CHECK-LABEL: func.func @prefill_static_group3
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_group3(%q: tensor<512x24x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x24x128xf16>) -> tensor<512x24x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x24x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x24x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>}
      -> tensor<512x24x128xf16>
  return %r : tensor<512x24x128xf16>
}

// -----

// CHECK-LABEL: func.func @prefill_static_group5
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_group5(%q: tensor<512x40x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x40x128xf16>) -> tensor<512x40x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x40x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x40x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>}
      -> tensor<512x40x128xf16>
  return %r : tensor<512x40x128xf16>
}

// -----

// RoPE takes the warp-specialised kernel too (through the runtime's stage pass).
// CHECK-LABEL: func.func @prefill_static_rope
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_rope(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<rope_llama>}
      -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// Page size 8 (not a multiple of 16): the warp-specialised kernel, K and V through the
// stage pass.
// CHECK-LABEL: func.func @prefill_static_page8
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_page8(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x8x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x8x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>} -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// MHA decode at head_dim 256 over 64 requests: 64 x 32 = 2048 unsplit CTAs, 15.5 per SM
// (not split on CUDA cores from two per SM). The KV tile depends on the device's memory
// bandwidth per SM: without #fi.target (an H100, 25 GB/s per SM) 32, as on both H100
// sweeps (bench/sweeps/decode_h100_hd256.csv, unfitted/decode_h100_hd256_s62.csv); on a
// target of 36 GB/s per SM (an H200) 16, 4-6 % faster there (decode_h200_hd256.csv).
// CHECK-LABEL: func.func @decode_hd256_mha_h100
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 1, kv = 32, split_kv = false, cores = cuda>
func.func @decode_hd256_mha_h100(%q: tensor<64x32x256xf16>, %k: tensor<?x16x32x256xf16>,
    %v: tensor<?x16x32x256xf16>, %p: tensor<65xi32>, %i: tensor<?xi32>, %l: tensor<64xi32>,
    %o: tensor<64x32x256xf16>) -> tensor<64x32x256xf16> {
  %r = fi.paged_decode q(%q : tensor<64x32x256xf16>)
      kv(%k, %v : tensor<?x16x32x256xf16>, tensor<?x16x32x256xf16>)
      pages(%p, %i, %l : tensor<65xi32>, tensor<?xi32>, tensor<64xi32>)
      outs(%o : tensor<64x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<64x32x256xf16>
  return %r : tensor<64x32x256xf16>
}

// -----

// CHECK-LABEL: func.func @decode_hd256_mha_h200
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 1, kv = 16, split_kv = false, cores = cuda>
module attributes {fi.target = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>} {
func.func @decode_hd256_mha_h200(%q: tensor<64x32x256xf16>, %k: tensor<?x16x32x256xf16>,
    %v: tensor<?x16x32x256xf16>, %p: tensor<65xi32>, %i: tensor<?xi32>, %l: tensor<64xi32>,
    %o: tensor<64x32x256xf16>) -> tensor<64x32x256xf16> {
  %r = fi.paged_decode q(%q : tensor<64x32x256xf16>)
      kv(%k, %v : tensor<?x16x32x256xf16>, tensor<?x16x32x256xf16>)
      pages(%p, %i, %l : tensor<65xi32>, tensor<?xi32>, tensor<64xi32>)
      outs(%o : tensor<64x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<64x32x256xf16>
  return %r : tensor<64x32x256xf16>
}
}

// -----

// head_dim 256 MHA at 7.8 unsplit CTAs per SM (32 requests): 32 on an H100, 16 on a target
// of 36 GB/s per SM (decode_h200_hd256_band.csv: 562 us against 585 on 32).
// CHECK-LABEL: func.func @decode_hd256_mha_b32_h100
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 1, kv = 32, split_kv = false, cores = cuda>
func.func @decode_hd256_mha_b32_h100(%q: tensor<32x32x256xf16>, %k: tensor<?x16x32x256xf16>,
    %v: tensor<?x16x32x256xf16>, %p: tensor<33xi32>, %i: tensor<?xi32>, %l: tensor<32xi32>,
    %o: tensor<32x32x256xf16>) -> tensor<32x32x256xf16> {
  %r = fi.paged_decode q(%q : tensor<32x32x256xf16>)
      kv(%k, %v : tensor<?x16x32x256xf16>, tensor<?x16x32x256xf16>)
      pages(%p, %i, %l : tensor<33xi32>, tensor<?xi32>, tensor<32xi32>)
      outs(%o : tensor<32x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<32x32x256xf16>
  return %r : tensor<32x32x256xf16>
}

// -----

// CHECK-LABEL: func.func @decode_hd256_mha_b32_h200
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 1, kv = 16, split_kv = false, cores = cuda>
module attributes {fi.target = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>} {
func.func @decode_hd256_mha_b32_h200(%q: tensor<32x32x256xf16>, %k: tensor<?x16x32x256xf16>,
    %v: tensor<?x16x32x256xf16>, %p: tensor<33xi32>, %i: tensor<?xi32>, %l: tensor<32xi32>,
    %o: tensor<32x32x256xf16>) -> tensor<32x32x256xf16> {
  %r = fi.paged_decode q(%q : tensor<32x32x256xf16>)
      kv(%k, %v : tensor<?x16x32x256xf16>, tensor<?x16x32x256xf16>)
      pages(%p, %i, %l : tensor<33xi32>, tensor<?xi32>, tensor<32xi32>)
      outs(%o : tensor<32x32x256xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<32x32x256xf16>
  return %r : tensor<32x32x256xf16>
}
}

// -----

// head_dim 64, group 8, 1.45 unsplit CTAs per SM over 2048 keys: unsplit on an H100
// (decode_h100_hd64.csv: 43.4 us against 46.6 split), split at 36 GB/s per SM
// (decode_h200_hd64_band.csv: 37.3 us against 43.8 unsplit).
// CHECK-LABEL: func.func @decode_hd64_gqa_b24_h100
// CHECK: fi.paged_decode
// CHECK-SAME: split_kv = false, cores = tensor>
func.func @decode_hd64_gqa_b24_h100(%q: tensor<24x64x64xf16>, %k: tensor<?x16x8x64xf16>,
    %v: tensor<?x16x8x64xf16>, %p: tensor<25xi32>, %i: tensor<?xi32>, %l: tensor<24xi32>,
    %o: tensor<24x64x64xf16>) -> tensor<24x64x64xf16> {
  %r = fi.paged_decode q(%q : tensor<24x64x64xf16>)
      kv(%k, %v : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16>)
      pages(%p, %i, %l : tensor<25xi32>, tensor<?xi32>, tensor<24xi32>)
      outs(%o : tensor<24x64x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<24x64x64xf16>
  return %r : tensor<24x64x64xf16>
}

// -----

// CHECK-LABEL: func.func @decode_hd64_gqa_b24_h200
// CHECK: fi.paged_decode
// CHECK-SAME: split_kv = true, cores = tensor>
module attributes {fi.target = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>} {
func.func @decode_hd64_gqa_b24_h200(%q: tensor<24x64x64xf16>, %k: tensor<?x16x8x64xf16>,
    %v: tensor<?x16x8x64xf16>, %p: tensor<25xi32>, %i: tensor<?xi32>, %l: tensor<24xi32>,
    %o: tensor<24x64x64xf16>) -> tensor<24x64x64xf16> {
  %r = fi.paged_decode q(%q : tensor<24x64x64xf16>)
      kv(%k, %v : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16>)
      pages(%p, %i, %l : tensor<25xi32>, tensor<?xi32>, tensor<24xi32>)
      outs(%o : tensor<24x64x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 2048 : i64}
      -> tensor<24x64x64xf16>
  return %r : tensor<24x64x64xf16>
}
}

// -----

// The same op on an A100 (#fi.target on the module): no wgmma; mma.sync kernel with
// 4 warps, regs 160 + kv (kv 128 infeasible); 164 KiB of shared memory fits two kv-32
// blocks but one kv-64 block -> 32.
// CHECK-LABEL: func.func @prefill_a100
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 32, split_kv = true, cores = tensor>
module attributes {fi.target = #fi.target<sm = 80, sm_count = 108, smem = 166912>} {
func.func @prefill_a100(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf16>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>} -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}
}

// -----

// head_dim 256, 1024 rows in one request, MHA: q tile 128 -> 64 for the mma.sync kernel
// (the 128 x 256 fp32 accumulator does not fit 4 warps); on Hopper, 16-bit KV of q's type
// (the fast path), the warp-specialised kernel instead: q tile 128 x kv tile 64 on wgmma
// (64 keys fit beside its 64 KB Q tile). The CTAs (8 heads x 8 tiles) do not fill the SMs
// and the KV length is unknown: split allowed.
// CHECK-LABEL: func.func @ragged_hd256
// CHECK: fi.ragged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 64, split_kv = true, cores = wgmma>
func.func @ragged_hd256(%q: tensor<1024x8x256xbf16>, %k: tensor<?x8x256xbf16>,
    %v: tensor<?x8x256xbf16>, %qo: tensor<2xi32>, %kvp: tensor<2xi32>,
    %o: tensor<1024x8x256xbf16>) -> tensor<1024x8x256xbf16> {
  %r = fi.ragged_prefill q(%q : tensor<1024x8x256xbf16>)
      kv(%k, %v : tensor<?x8x256xbf16>, tensor<?x8x256xbf16>)
      indptr(%qo, %kvp : tensor<2xi32>, tensor<2xi32>)
      outs(%o : tensor<1024x8x256xbf16>) -> tensor<1024x8x256xbf16>
  return %r : tensor<1024x8x256xbf16>
}

// -----

// head_dim 256 with RoPE, fp8 KV (e4m3) and pages of 24 (Gemma's shapes, 16 / 8 heads):
// the warp-specialised kernel's q 128 x kv 64 tiles as without them, K and V through the
// runtime's stage pass.
// CHECK-LABEL: func.func @paged_hd256_rope_fp8_kv
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 64, split_kv = true, cores = wgmma>
func.func @paged_hd256_rope_fp8_kv(%q: tensor<512x16x256xbf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x24x8x256xf8E4M3FN>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x16x256xbf16>) -> tensor<512x16x256xbf16> {
  %r = fi.paged_prefill q(%q : tensor<512x16x256xbf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x24x8x256xf8E4M3FN>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x16x256xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 24, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<rope_llama>}
      -> tensor<512x16x256xbf16>
  return %r : tensor<512x16x256xbf16>
}

// -----

// Dynamic query length: the hint fi.avg_qo_len = 3 (packed 12 rows) decides q tile 16;
// without a hint the choice is visibly left to the plan step.
// CHECK-LABEL: func.func @prefill_dynamic
// CHECK: fi.ragged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CHECK: fi.ragged_prefill
// CHECK-SAME: fi.tiles_at_plan_time
// CHECK-NOT: tiles = #fi.tiles
// CHECK: fi.ragged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 64, kv = 128, split_kv = false, cores = tensor>
func.func @prefill_dynamic(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
    %o: tensor<?x32x128xf16>) -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>) {
  %a = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>) {fi.avg_qo_len = 3 : i64} -> tensor<?x32x128xf16>
  %b = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>
  // Tiles set by hand are kept.
  %c = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {tiles = #fi.tiles<q = 64, kv = 128, split_kv = false, cores = tensor>}
      -> tensor<?x32x128xf16>
  return %a, %b, %c : tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>
}

// -----

// fp8 KV (e4m3) under f16 queries: the warp-specialised kernel, K and V widened by the
// stage pass.
// CHECK-LABEL: func.func @prefill_static_fp8_kv
// CHECK: fi.paged_prefill
// CHECK-SAME: tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>
func.func @prefill_static_fp8_kv(%q: tensor<512x32x128xf16>, %qo: tensor<5xi32>,
    %kv: tensor<?x2x16x8x128xf8E4M3FN>, %p: tensor<5xi32>, %i: tensor<?xi32>,
    %l: tensor<4xi32>, %o: tensor<512x32x128xf16>) -> tensor<512x32x128xf16> {
  %r = fi.paged_prefill q(%q : tensor<512x32x128xf16>) qo_indptr(%qo : tensor<5xi32>)
      kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>)
      pages(%p, %i, %l : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o : tensor<512x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>} -> tensor<512x32x128xf16>
  return %r : tensor<512x32x128xf16>
}

// -----

// Decode on the fast path with a static batch of 7 and the hint fi.avg_kv_len = 8192, MHA
// at head_dim 128 (32 KV heads): 224 unsplit CTAs, 1.7 per SM of the default target's 132.
// Pages of 16 tokens split only up to 1.5 per SM -> no split; pages of 8 (the block_cols
// of #fi.bsr) up to 2 per SM for groups below 4 from 4096 keys -> split (heuristics.c,
// fi_select_decode_tiles).
// CHECK-LABEL: func.func @decode_sparse_grid_pages
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = false, cores = tensor>
// CHECK: fi.paged_decode
// CHECK-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
func.func @decode_sparse_grid_pages(%q: tensor<7x32x128xf16>, %k: tensor<?x16x32x128xf16>,
    %v: tensor<?x16x32x128xf16>, %k8: tensor<?x8x32x128xf16>, %v8: tensor<?x8x32x128xf16>,
    %p: tensor<8xi32>, %i: tensor<?xi32>, %l: tensor<7xi32>, %o: tensor<7x32x128xf16>)
    -> (tensor<7x32x128xf16>, tensor<7x32x128xf16>) {
  %r = fi.paged_decode q(%q : tensor<7x32x128xf16>)
      kv(%k, %v : tensor<?x16x32x128xf16>, tensor<?x16x32x128xf16>)
      pages(%p, %i, %l : tensor<8xi32>, tensor<?xi32>, tensor<7xi32>)
      outs(%o : tensor<7x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.avg_kv_len = 8192 : i64}
      -> tensor<7x32x128xf16>
  %r8 = fi.paged_decode q(%q : tensor<7x32x128xf16>)
      kv(%k8, %v8 : tensor<?x8x32x128xf16>, tensor<?x8x32x128xf16>)
      pages(%p, %i, %l : tensor<8xi32>, tensor<?xi32>, tensor<7xi32>)
      outs(%o : tensor<7x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = nhd>, fi.avg_kv_len = 8192 : i64}
      -> tensor<7x32x128xf16>
  return %r, %r8 : tensor<7x32x128xf16>, tensor<7x32x128xf16>
}
