/* kernels/src/heuristics.c -- tile-size heuristics (pure C; linked by the runtime's plan
 * step and by the compiler's fi-select-tiles pass).
 *
 * Decision table
 * ==============
 * Notation: group = num_qo_heads / num_kv_heads; packed = avg_qo_len * group (FlashInfer
 * packs the GQA group of one KV head into the query tile, so a tile of q_tile rows holds
 * q_tile / group query rows of `group` heads each).
 *
 * 1. Query tile (fi_select_q_tile)
 *      packed <= 1         -> 1    (decode with one head per KV head: CUDA-core kernel)
 *      packed <= 16        -> 16
 *      packed <= 32        -> 32
 *      packed <= 64        -> 64
 *      otherwise           -> 128, except head_dim >= 256 -> 64 (the fp32 output
 *                             accumulator of 128 rows x 256 columns does not fit the
 *                             register file of 4 warps)
 *      avg_qo_len unknown (0) counts as long (128 / 64 rule).
 *
 * 2. Decode cores (fi_select_decode_cores)
 *      group >= 4 -> tensor cores (the group fills the rows of an mma tile), else CUDA
 *      cores. Decode q_tile: 1 on CUDA cores, max(16, smallest tile >= group) on tensor
 *      cores. fi_select_decode_tiles on Hopper (sm 90) takes tensor cores for every group
 *      on the decode fast path (fi_tile_problem.fast_path) at head_dim 64 and 128: the CUDA
 *      backend runs those plans on its warp-specialised decode kernel (TMA copies, heads on
 *      the mma N side), which read 1-10 % faster than the CUDA-core kernel on every group-1
 *      row of a sweep and 7-104 % faster on groups 2 and 3 (bench/NOTES.md, decode v15,
 *      H100) -- but for MHA over a 16-bit cache with 4-5 unsplit CTAs per SM (a second,
 *      mostly empty wave of that kernel at head_dim 128; CUDA cores 8 % faster in the
 *      H200 sweep). At head_dim 64 the CUDA-core kernel read 1.3-2.6x slower on every
 *      MHA row of an H200 sweep (decode_h200_hd64.csv). fp8 KV is on the
 *      fast path too at head_dim 128 (the kernel's fp8 instance, decode v16); at 64 and
 *      256 it has no warp-specialised kernel and the group decides. 16-bit KV at head_dim
 *      128 in pages of 1 or 2 tokens (off the fast path) takes tensor cores for every group
 *      as well: the per-warp tensor-core kernel read 1.06-1.84x faster than the CUDA-core
 *      one on every MHA row of decode_h200_page2.csv -- but for MHA grids below one
 *      unsplit CTA per SM over pages of 1, where CUDA cores read as fast or faster
 *      (decode_h100_page1.csv).
 *
 * 3. KV tile. Decode (fi_select_decode_tiles): fixed by measurement of the decode
 *    kernels (bench/NOTES.md, v6): 32 for both core kinds; at head_dim 256 on Hopper 16 on
 *    CUDA cores (32 for unsplit 16-bit grids of 4-6 CTAs per SM, and beyond 6 on devices
 *    of low bandwidth per SM, fi_target.dram_gbps_per_sm: decode_h100_hd256.csv,
 *    decode_h200_hd256_band.csv) and
 *    64 for split tensor-core grids of at most one CTA per SM or long chunks
 *    (decode_h200_hd256.csv) and for 16-bit ones kept unsplit at about one CTA per SM
 *    (item 4); over fp8 KV at head_dim 256 32 on CUDA cores (64 for
 *    one long request) and 64 for split grids of at most one CTA per SM, at head_dim 64
 *    64 on CUDA cores and 128 on tensor cores but for split grids beyond one CTA per SM
 *    (decode_h200_e4m3_hd64.csv, _hd256.csv; the rules at the end of
 *    fi_select_decode_tiles); RoPE over a 16-bit cache keeps 32 at head_dim 256
 *    (fi_tile_problem.rope: 64 would not fit an SM beside the rotated K tiles). Otherwise
 *    (fi_select_kv_tile): candidates 32/64/128 (prefill, tensor-core decode) or
 *    16/32/64/128 (CUDA-core decode). For each candidate the model gives
 *      warps    = clamp(q_tile / 16, 1, 4)           (tensor cores; 16 rows per warp)
 *               = 4                                  (CUDA-core decode)
 *      smem     = q_tile*head_dim*q_bytes + 2 stages * 2 (K,V) * kv_tile*head_dim*kv_bytes
 *      regs     = 32 + (q_tile/warps) * (head_dim + kv_tile) / 32   (tensor cores: o and
 *                 s fragments per thread)
 *               = 32 + head_dim / 4                  (CUDA-core decode)
 *      feasible iff regs <= 255 and smem <= target.smem_per_block
 *      blocks   = min(32, 2048 / threads, 65536 / (regs*threads), smem_per_block / smem)
 *      occupancy = blocks * warps (resident warps per SM)
 *    The feasible candidate with the highest occupancy wins; ties go to the larger tile
 *    (fewer pipeline iterations). No feasible candidate -> the smallest.
 *
 *    Prefill on Hopper (target sm 90, head_dim 64 or 128 (256: below), q_tile >= 64): cores = wgmma (the
 *    Hopper tier, wgmma from shared memory) with q_tile FI_WGMMA_Q_TILE and kv_tile
 *    FI_WGMMA_KV_TILE: one warpgroup of 64 rows per CTA, two CTAs per SM that run out of
 *    phase (one's softmax under the other's MMAs); kv_tile 64 (three CTAs per SM) when the
 *    average KV length is known and at most FI_WGMMA_SHORT_KV: its short units hide their
 *    first loads behind other CTAs' tiles. Measured (bench/NOTES.md, prefill v7 on an H200,
 *    v11 on an H100): 64 x 128 beat 128 x 128 (8 warps, one CTA per SM) by 7-13 % on the
 *    ragged rows; 64 x 64 beat 64 x 128 by 7 % at kv 512 and ~2 % at kv 2048 and lost
 *    4-9 % at kv 4096 and 8192. Ops on the fast path (fi_tile_problem.fast_path: every
 *    extra; RoPE, fp8 KV and odd page sizes when a prefill stage is there for the stage
 *    pass) with a GQA group of at most 128 take q_tile = kv_tile = FI_WS_TILE instead: the CUDA backend
 *    runs those plans on its warp-specialised kernel (a TMA producer warp, two consumer
 *    warpgroups sharing each K/V tile, persistent CTAs), which beat the best of the other
 *    variants by 7-26 % on every row of the prefill table (bench/NOTES.md, prefill v12, H100).
 *    (A host plan then widens them to 128 x 176 at head_dim 128 without extras but a soft
 *    cap, ALiBi or a custom mask of one run of keys per row (one of them) where its
 *    work units hold at least 4096 keys, causal 8192, or keeps 128 x 128 with a deeper
 *    K/V ring where such units stream K/V from DRAM: api.c choose_ws_layout, which knows
 *    the mask, the split and the L2 cache; these heuristics do not.)
 *    head_dim 256 on the fast path (16-bit q, a group of at most 128; RoPE, fp8 KV and odd
 *    page sizes through the stage pass as above): q_tile 128, kv_tile
 *    FI_WS_HD256_KV_TILE (64) on wgmma, the same kernel with the KV tile that fits beside
 *    its 64 KB Q tile (where the mma.sync kernel read at 0.46x cuDNN's SDPA on an H200).
 *    Other shapes and targets: cores = tensor (mma.sync) with the kv_tile of the model
 *    above.
 *
 * 4. Split-KV (fi_select_split_kv): on iff the CTAs of the unsplit problem,
 *      ctas = batch * num_kv_heads * ceil(packed / q_tile)
 *    cannot fill the SMs (ctas < sm_count) and the KV is long (avg_kv_len >= 512).
 *    Unknown batch or KV length (0, compile time) -> on: the planner then decides with
 *    the real lengths and splits only when the same two conditions hold. Decode on the
 *    Hopper fast path (fi_select_decode_tiles) also splits sparser grids with long KV:
 *    fp8 KV below two unsplit CTAs per SM; 16-bit KV at head_dim 128 up to 1.5 per SM,
 *    or below two with pages loaded as boxes of 4 rows (fi_tile_problem.page_size,
 *    fi_decode_page_box_rows), or of 8 rows for groups below 4 from 4096 keys; at head_dim
 *    64 up to 1.5 per SM (over pages in boxes of 16 rows, groups of 4 or more only from 4096
 *    keys on devices of low bandwidth per SM) and below two for groups below 4. Off the
 *    warp-specialised kernel, Hopper tensor-core plans at head_dim 256 (16-bit KV, no
 *    RoPE) stay unsplit from 9/10 of a CTA per SM to one and split up to 1.5
 *    (decode_h100_hd256.csv); CUDA-core plans at
 *    head_dim 256, and over fp8 KV at 64, split below two unsplit CTAs per SM. The planner
 *    may still keep a split plan's grid unsplit where the device's memory bandwidth per SM
 *    is low (fi_target_low_dram_per_sm; planner.c, decode_target_units: an H100).
 */
#include "fi/heuristics.h"
#include "plan_split.h"

#include <stdio.h>

enum {
  FI_SPLIT_MIN_AVG_KV = 512,
  FI_WGMMA_Q_TILE = 64,
  FI_WGMMA_KV_TILE = 128,
  FI_WGMMA_SHORT_KV = 2048,
  FI_WS_TILE = 128,
  FI_WS_HD256_KV_TILE = 64
};

fi_target fi_target_default(void) {
  fi_target t;
  t.sm_version = 90;
  t.sm_count = 132;
  t.smem_per_block = 232448;
  t.dram_gbps_per_sm = 25; /* 3.35 TB/s over 132 SMs */
  return t;
}

int32_t fi_target_low_dram_per_sm(const fi_target *t) {
  return t->dram_gbps_per_sm <= FI_LOW_DRAM_GBPS_PER_SM;
}

static int32_t group_size(const fi_tile_problem *p) {
  if (p->num_kv_heads <= 0 || p->num_qo_heads <= 0) return 1;
  int32_t g = p->num_qo_heads / p->num_kv_heads;
  return g < 1 ? 1 : g;
}

static int32_t tile_covering(int64_t rows) {
  if (rows <= 1) return 1;
  if (rows <= 16) return 16;
  if (rows <= 32) return 32;
  if (rows <= 64) return 64;
  return 128;
}

int32_t fi_select_q_tile(const fi_tile_problem *p) {
  int64_t packed = p->avg_qo_len <= 0 ? 1 << 20 : p->avg_qo_len * group_size(p);
  int32_t tile = tile_covering(packed);
  if (tile == 128 && p->head_dim >= 256) tile = 64;
  return tile;
}

int32_t fi_decode_page_box_rows(int64_t page_size) {
  if (page_size <= 0) return 0;
  return page_size % 16 == 0 ? 16 : page_size % 8 == 0 ? 8 : page_size % 4 == 0 ? 4 : 0;
}

fi_core_kind fi_select_decode_cores(const fi_tile_problem *p) {
  return group_size(p) >= 4 ? FI_CORES_TENSOR : FI_CORES_CUDA;
}

/* Occupancy (resident warps per SM) of one kernel variant; 0 if it does not fit. */
static int32_t occupancy(const fi_target *t, const fi_tile_problem *p, int32_t q_tile,
                         int32_t kv_tile, int cuda_cores) {
  int32_t hd = p->head_dim > 0 ? p->head_dim : 128;
  int32_t qb = p->q_dtype_bytes > 0 ? p->q_dtype_bytes : 2;
  int32_t kb = p->kv_dtype_bytes > 0 ? p->kv_dtype_bytes : 2;
  int32_t warps, regs;
  if (cuda_cores) {
    warps = 4;
    regs = 32 + hd / 4;
  } else {
    warps = q_tile / 16;
    if (warps < 1) warps = 1;
    if (warps > 4) warps = 4;
    int32_t rows_per_warp = q_tile < 16 ? 16 : q_tile / warps;
    regs = 32 + rows_per_warp * (hd + kv_tile) / 32;
  }
  int64_t smem = (int64_t)q_tile * hd * qb + 2LL * 2 * kv_tile * hd * kb;
  if (regs > 255 || smem > t->smem_per_block) return 0;
  int32_t threads = 32 * warps;
  int64_t blocks = 32;
  if (2048 / threads < blocks) blocks = 2048 / threads;
  if (65536 / (regs * threads) < blocks) blocks = 65536 / (regs * threads);
  if (t->smem_per_block / smem < blocks) blocks = t->smem_per_block / smem;
  return (int32_t)(blocks * warps);
}

static int32_t select_kv_tile(const fi_target *t, const fi_tile_problem *p, int32_t q_tile,
                              int cuda_cores) {
  static const int32_t prefill_candidates[] = {32, 64, 128};
  static const int32_t decode_cc_candidates[] = {16, 32, 64, 128};
  const int32_t *cand = cuda_cores ? decode_cc_candidates : prefill_candidates;
  int32_t n = cuda_cores ? 4 : 3;
  int32_t best = cand[0], best_occ = 0;
  for (int32_t i = 0; i < n; ++i) {
    int32_t occ = occupancy(t, p, q_tile, cand[i], cuda_cores);
    if (occ > 0 && occ >= best_occ) { /* >=: ties go to the larger tile */
      best = cand[i];
      best_occ = occ;
    }
  }
  return best;
}

int32_t fi_select_kv_tile(const fi_target *t, const fi_tile_problem *p, int32_t q_tile) {
  return select_kv_tile(t, p, q_tile, q_tile == 1);
}

int32_t fi_select_split_kv(const fi_target *t, const fi_tile_problem *p, int32_t q_tile) {
  if (p->batch <= 0 || p->avg_kv_len <= 0) return 1;
  int64_t qo = p->avg_qo_len > 0 ? p->avg_qo_len : 1;
  int64_t packed = qo * group_size(p);
  int64_t tiles = q_tile <= 1 ? qo : (packed + q_tile - 1) / q_tile;
  int64_t kv_heads = p->num_kv_heads > 0 ? p->num_kv_heads : 1;
  int64_t ctas = (int64_t)p->batch * kv_heads * tiles;
  return ctas < t->sm_count && p->avg_kv_len >= FI_SPLIT_MIN_AVG_KV;
}

fi_tiles fi_select_decode_tiles(const fi_target *t, const fi_tile_problem *p) {
  fi_tiles tiles;
  tiles.cores = fi_select_decode_cores(p);
  const int64_t unsplit_ctas =
      (int64_t)p->batch * (p->num_kv_heads > 0 ? p->num_kv_heads : 1);
  /* MHA over a 16-bit cache whose unsplit grid holds 4-5 CTAs per SM keeps the CUDA-core
   * kernel: the warp-specialised one runs 4 per SM, so such a grid takes a second, mostly
   * empty wave (H200 sweep, bench/sweeps/decode_h200_band.csv: (20, 2048 / 16384, 32, 32)
   * 178.8 / 1361.4 us on CUDA cores against 194.5 / 1475.6 on tensor cores; at 6.8 per SM,
   * (28, *, 32, 32), tensor cores lead by 18-19 %). */
  const int mha_second_wave = p->head_dim == 128 && group_size(p) == 1 &&
                              p->kv_dtype_bytes == 2 && p->batch > 0 &&
                              unsplit_ctas > 4LL * t->sm_count &&
                              unsplit_ctas <= 5LL * t->sm_count;
  /* head_dim 64 as well: there the CUDA-core kernel read 1.3-2.6x slower than the
   * warp-specialised one on every MHA row of the H200 sweep (bench/sweeps/
   * decode_h200_hd64.csv; e.g. (8, 16384, 32, 32) 719 us against 276). That kernel runs
   * 16-bit KV at head_dim 64 and 128 and fp8 KV at 128 only (internal.h
   * fi_decode_tws_shape_ok); fp8 KV at 64 and 256 runs the per-warp kernels (below). */
  const int fp8_kv = p->kv_dtype_bytes == 1;
  const int ws_kernel = t->sm_version == 90 && p->fast_path &&
                        (p->head_dim == 128 || (p->head_dim == 64 && !fp8_kv));
  if (ws_kernel && !mha_second_wave) tiles.cores = FI_CORES_TENSOR;
  /* 16-bit KV in pages of 1 or 2 tokens at head_dim 128 (off the fast path: the per-warp
   * kernels): MHA on tensor cores as well, 1.06-1.84x faster than on CUDA cores on every
   * MHA row of bench/sweeps/decode_h200_page2.csv. Pages of 1 (bench/sweeps/
   * decode_h100_page1.csv): the same but for MHA grids below one unsplit CTA per SM (the
   * sweep's: one request), where CUDA cores read as fast or faster ((1, 16384, 32, 32)
   * 99.7 us against 103.2, (1, 2048, 32, 32) alike); with more requests the two are within
   * 1 % or tensor cores lead ((64, 2048, 32, 32) 724.7 against 756.6). A fit to that sweep's
   * two rows. */
  const int sparse_mha_page1 = p->page_size == 1 && group_size(p) == 1 && p->batch > 0 &&
                               unsplit_ctas < t->sm_count;
  if (t->sm_version == 90 && p->head_dim == 128 && p->kv_dtype_bytes == 2 &&
      p->page_size >= 1 && p->page_size <= 2 && !sparse_mha_page1)
    tiles.cores = FI_CORES_TENSOR;
  if (tiles.cores == FI_CORES_TENSOR) {
    int32_t q = tile_covering(group_size(p));
    tiles.q_tile = q < 16 ? 16 : q;
  } else {
    tiles.q_tile = 1;
  }
  /* Decode is memory-bound: the KV tile is the one the CUDA kernels (kernels/cuda/
   * decode.cuh) stream fastest, measured on an H200 (bench/NOTES.md, v6): 32 tokens on
   * both core kinds, split or not (2 stages, 6 CTAs per SM: resident CTAs beat pipeline
   * depth; the planner makes enough split units for them). */
  tiles.split_kv = fi_select_split_kv(t, p, tiles.q_tile);
  /* The Hopper fast path splits grids that leave most SMs one CTA of the warp-specialised
   * kernel, short of the bytes in flight that the SM's share of the bandwidth needs.
   * fp8 KV, below two unsplit CTAs per SM: the unsplit grid read 9-17 % slower than the
   * split plan on 3 of the 4 such rows of the e4m3 sweep (bench/sweeps/
   * decode_h200_fp8.csv; the 4th 2.6 % faster; on a device of at most 30 GB/s per SM the
   * planner keeps grids from 1.6 per SM unsplit all the same, planner.c
   * decode_target_units). 16-bit KV at head_dim 128 (the shape
   * measured), up to 1.5 per SM: H200, decode_vs_fi, session 48: (17, 8192, 32, 8) 0.87 ->
   * 1.11x FlashInfer's better path, (20, 8192, 32, 8) pages of 8 0.69 -> 0.99x, (40, 4096,
   * 32, 4) 0.94 -> 0.99x, (5, 8192, 32, 32) 0.88 -> 0.95x (bench/NOTES.md). Above 1.5 the
   * planner's target for GQA (3 CTAs per SM) leaves requests of equal lengths unsplit, and
   * a split plan launches its target all the same: idle CTAs and fewer warps per busy one
   * ((64, 2048, 32, 4): 1.11x slower in the H200 sweep); unsplit, such grids run from 1.6
   * per SM 8 warps per CTA (decode.cuh launch_tws). Pages of 4 or 8 tokens split below two
   * per SM, as fp8 KV does: their producer issues a copy per page, and one or two CTAs per
   * SM issue too few (H200, session 48: (7, 8192, 32, 32) pages of 8 0.87 -> 1.01x, pages
   * of 4 0.58 -> 0.98x). Pages of 8 and head_dim 64 (pages of half the bytes) split
   * between 1.5 and 2 per SM only for groups below 4 (H200 sweeps decode_h200_page8.csv
   * and decode_h200_hd64.csv at 256 CTAs, 1.9 per SM: MHA (8, 16384, 32, 32) 3-8 % faster
   * split, group 8 (64, 2048, 32, 4) 1-5 % slower split: the planner's GQA target above). */
  const int two_per_sm = unsplit_ctas < 2LL * t->sm_count,
            one_and_half = 2 * unsplit_ctas <= 3LL * t->sm_count;
  /* (pages of 4 and 8 as measured; other multiples of 4 / 8 below 16 rows per box load the
   * same boxes, fi_decode_page_box_rows, and follow them: H100 sweep of pages of 24,
   * bench/sweeps/decode_h100_page24.csv. There the short requests of the 1.5-2 per SM band
   * read faster unsplit -- (8, 2048, 32, 32) 95.8 us against 98.6 split, at pages of 8 on
   * the H200 71.8 against 71.9 -- and the long ones split ((8, 16384, 32, 32) 712 against
   * 729; 490 against 506): in boxes of 8 rows that band splits from 4096 keys, a fit to
   * those two lengths.) */
  const int box_rows = fi_decode_page_box_rows(p->page_size);
  int sparse_grid;
  if (fp8_kv || (box_rows == 4 && (p->head_dim == 64 || p->head_dim == 128)))
    sparse_grid = two_per_sm;
  else if (p->head_dim == 64 || (p->head_dim == 128 && box_rows == 8)) {
    /* (head_dim 64 over pages of 16 -- or of a size not known yet, so that a compiled plan
     * takes the runtime's choice for pages of 16 --, groups of 4 or more, on a device of low
     * bandwidth per SM: that band splits from 4096 keys only; H100 sweep decode_h100_hd64.csv,
     * (24, 2048, 64, 8) 43.4 us unsplit against 46.6 split, (24, 16384, 64, 8) 280.5
     * against 275.5. On the H200 (36 GB/s per SM) the short rows split as well:
     * decode_h200_hd64_band.csv, (24, 2048, 32, 8) 34.3 us split against 43.7 unsplit,
     * (24, 2048, 64, 8) 37.3 against 43.8.) */
    const int short_gqa = p->head_dim == 64 && (box_rows == 16 || box_rows == 0) &&
                          group_size(p) >= 4 && p->avg_kv_len < 4096 &&
                          fi_target_low_dram_per_sm(t);
    sparse_grid = (one_and_half && !short_gqa) ||
                  (two_per_sm && group_size(p) < 4 &&
                   (p->head_dim == 64 || p->avg_kv_len >= 4096));
  } else
    sparse_grid = p->head_dim == 128 && one_and_half;
  if (!tiles.split_kv && ws_kernel && tiles.cores == FI_CORES_TENSOR && p->batch > 0 &&
      p->avg_kv_len >= FI_SPLIT_MIN_AVG_KV && sparse_grid)
    tiles.split_kv = 1;
  tiles.kv_tile = 32;
  /* A variant on the fast path: tensor cores whatever the group (its kernel is the
   * warp-specialised one), a query tile covering the group. */
  if (p->variant && p->fast_path && tiles.cores != FI_CORES_TENSOR) {
    const int32_t q = tile_covering(group_size(p));
    tiles.cores = FI_CORES_TENSOR;
    tiles.q_tile = q < 16 ? 16 : q;
  }
  /* CUDA cores on Hopper at head_dim 256, and over fp8 KV at 64 (the per-warp kernels):
   * grids below two unsplit CTAs per SM split ((8, 16384, 32, 32): 1148 us split against
   * 1721 at head_dim 256, decode_h200_hd256.csv; 281 against 433 over e4m3 at 64,
   * decode_h200_e4m3_hd64.csv). */
  if (t->sm_version == 90 && tiles.cores == FI_CORES_CUDA && !tiles.split_kv &&
      (p->head_dim == 256 || (p->head_dim == 64 && fp8_kv)) && p->batch > 0 &&
      p->avg_kv_len >= FI_SPLIT_MIN_AVG_KV && unsplit_ctas < 2LL * t->sm_count)
    tiles.split_kv = 1;
  /* head_dim 256 on Hopper (no warp-specialised decode kernel there; H200 sweep
   * bench/sweeps/decode_h200_hd256.csv). CUDA cores (MHA): KV tiles of 16 (4-24 % faster
   * than 32 on every row). Tensor cores, split: KV tiles of 64 where the split grid holds
   * at most one CTA per SM or its chunks are long (>= 512 tokens per CTA: more bytes in
   * flight per CTA at half the CTAs per SM; (1, 2048, 32, 4) 18.5 us against 23.6,
   * (8, 16384, 32, 4) 232 against 250), 32 between ((8, 2048, 32, 4) 46.9 against 56.8).
   * split_ctas estimates the split grid as the planner makes it (plan_split.h: this
   * kernel's CTAs per SM, the shortest chunk); 0 unsplit or unknown. */
  /* head_dim 256, 16-bit KV without RoPE on tensor cores (GQA), grids of about one unsplit
   * CTA per SM (the H100 sweep bench/sweeps/decode_h100_hd256.csv, whose batches of 16-32
   * the H200 sweep lacks): from 9/10 of the SMs to one CTA per SM unsplit on KV tiles of 64
   * ((16, 2048, 32, 8) 114 us against 133 split; (16, 16384, 32, 8) 828 against 818);
   * above, up to 1.5 per SM, split ((24, 16384, 32, 8) 1354 us split on 64 against 1450
   * unsplit; (24, 2048) 200 either way). */
  const int hd256_tc16 = t->sm_version == 90 && p->head_dim == 256 &&
                         tiles.cores == FI_CORES_TENSOR && !fp8_kv && !p->rope && p->batch > 0;
  const int hd256_one_wave = hd256_tc16 && unsplit_ctas * 10 >= 9LL * t->sm_count &&
                             unsplit_ctas <= t->sm_count;
  if (hd256_one_wave) tiles.split_kv = 0;
  if (hd256_tc16 && unsplit_ctas > t->sm_count && 2 * unsplit_ctas <= 3LL * t->sm_count &&
      p->avg_kv_len >= FI_SPLIT_MIN_AVG_KV)
    tiles.split_kv = 1;
  int64_t split_ctas = 0;
  if (tiles.split_kv && p->batch > 0 && p->avg_kv_len > 0) {
    const int64_t chunks = (p->avg_kv_len + FI_MIN_CHUNK - 1) / FI_MIN_CHUNK,
                  target = (int64_t)FI_DECODE_TCW_CTAS_PER_SM * t->sm_count;
    split_ctas = unsplit_ctas * chunks < target ? unsplit_ctas * chunks : target;
  }
  if (t->sm_version == 90 && p->head_dim == 256) {
    if (tiles.cores == FI_CORES_CUDA) {
      /* fp8 KV: 32 tokens, the bytes of 16-bit KV's 16 (4-21 % faster than 16 on every MHA
       * row of bench/sweeps/decode_h200_e4m3_hd256.csv), 64 for one long request per few
       * CTAs ((1, 16384, 32, 32): 136 us against 147 for 32) */
      tiles.kv_tile = fp8_kv ? 32 : 16;
      if (fp8_kv && tiles.split_kv && p->avg_kv_len >= 8192 && 4 * unsplit_ctas <= t->sm_count)
        tiles.kv_tile = 64;
      /* 16-bit, unsplit grids of more than 4 CTAs per SM: 32 (H100 sweep
       * decode_h100_hd256.csv: (24, 2048, 32, 32) 525 us against 749 on 16, (32, 2048, 32,
       * 32) 732 against 762; at 3.9 per SM 16 leads, 348 against 464). Above 6 per SM the
       * device decides: on the H200 (36 GB/s per SM) 16 leads by 4-6 % from 7.8 per SM
       * ((32, 2048, 32, 32) 562 us against 585, decode_h200_hd256_band.csv; 15.5 per SM in
       * decode_h200_hd256.csv) where 32 led by 14 % at 5.8 ((24, 2048, 32, 32) 423 against
       * 490), on both H100 grids 32 by 1-7 % ((64, 2048, 32, 32) 1449 against 1485 us, 1456
       * against 1552 in sweeps/unfitted/decode_h100_hd256_s62.csv), so above 6 per SM 32
       * only at low bandwidth per SM. Measured, not explained: by shared memory 16 fits
       * more CTAs per SM than 32 -- a grid past 32's slots may take a second wave there.) */
      if (!fp8_kv && !tiles.split_kv && unsplit_ctas > 4LL * t->sm_count &&
          (unsplit_ctas <= 6LL * t->sm_count || fi_target_low_dram_per_sm(t)))
        tiles.kv_tile = 32;
    } else if (hd256_one_wave) {
      tiles.kv_tile = 64;
    } else if (split_ctas > 0 && !(p->rope && !fp8_kv)) {
      /* fp8 KV: 64 only for the grids of at most one CTA per SM (its long chunks read
       * 25 % slower on 64: (8, 16384, 32, 8) 593 us against 474, e4m3 sweep). RoPE over a
       * 16-bit cache keeps 32: the kernel stages the rotated K tiles beside the raw ones,
       * and with a bf16 q also the split halves, 252 KB at 64 (more than an SM has). */
      if (split_ctas <= t->sm_count ||
          (!fp8_kv && unsplit_ctas * p->avg_kv_len >= 512 * split_ctas))
        tiles.kv_tile = 64;
    }
  }
  /* fp8 KV at head_dim 64 on Hopper (the per-warp kernels: no warp-specialised instance;
   * bench/sweeps/decode_h200_e4m3_hd64.csv). CUDA cores (MHA): KV tiles of 64 (1.2-1.6x
   * faster than 32). Tensor cores: KV tiles of 128 unsplit or where the split grid
   * holds at most one CTA per SM (5-40 % faster than 32: (64, 16384, 32, 8) 1046 us against
   * 1140, (1, 2048, 32, 8) 12.7 against 17.9), 32 for split grids beyond (their many
   * 128-token chunks: (8, 16384, 32, 4) 77.5 us against 96.5 for 128). */
  if (t->sm_version == 90 && p->head_dim == 64 && fp8_kv)
    tiles.kv_tile = tiles.cores == FI_CORES_CUDA ? 64 : split_ctas > t->sm_count ? 32 : 128;
  return tiles;
}

fi_tiles fi_select_prefill_tiles(const fi_target *t, const fi_tile_problem *p) {
  fi_tiles tiles;
  tiles.cores = FI_CORES_TENSOR;
  tiles.q_tile = fi_select_q_tile(p);
  if (tiles.q_tile < 16) tiles.q_tile = 16; /* prefill kernels are mma kernels */
  tiles.kv_tile = select_kv_tile(t, p, tiles.q_tile, 0);
  if (t->sm_version == 90 && tiles.q_tile >= 64 && (p->head_dim == 64 || p->head_dim == 128)) {
    tiles.cores = FI_CORES_WGMMA;
    if (p->fast_path && group_size(p) <= FI_WS_TILE) {
      tiles.q_tile = FI_WS_TILE; /* the warp-specialised kernel */
      tiles.kv_tile = FI_WS_TILE;
    } else {
      tiles.q_tile = FI_WGMMA_Q_TILE;
      tiles.kv_tile =
          p->avg_kv_len > 0 && p->avg_kv_len <= FI_WGMMA_SHORT_KV ? 64 : FI_WGMMA_KV_TILE;
    }
  }
  /* head_dim 256 on the fast path: the warp-specialised kernel's 128 x 64 tiles (its KV
   * tile is what fits beside the 64 KB Q tile), where the mma.sync kernel read at 0.46x
   * cuDNN's SDPA (bench/NOTES.md) */
  if (t->sm_version == 90 && tiles.q_tile >= 64 && p->head_dim == 256 && p->fast_path &&
      p->q_dtype_bytes == 2 && group_size(p) <= FI_WS_TILE) {
    tiles.cores = FI_CORES_WGMMA;
    tiles.q_tile = FI_WS_TILE;
    tiles.kv_tile = FI_WS_HD256_KV_TILE;
  }
  /* fp8 attention has one kernel, the warp-specialised one's 128 x 128 wgmma tiles (a
   * device without it refuses the run; the host backend ignores the cores) */
  if (p->q_dtype_bytes == 1) {
    tiles.cores = FI_CORES_WGMMA;
    tiles.q_tile = FI_WS_TILE;
    tiles.kv_tile = FI_WS_TILE;
  }
  tiles.split_kv = fi_select_split_kv(t, p, tiles.q_tile);
  return tiles;
}

const char *fi_tiles_name(fi_tiles tiles, int32_t is_decode, char *buf, int32_t buf_len) {
  if (!buf || buf_len <= 0) return "";
  if (is_decode)
    snprintf(buf, (size_t)buf_len, "decode_%s_q%d_kv%d%s",
             tiles.cores == FI_CORES_TENSOR ? "tc" : "cc", (int)tiles.q_tile,
             (int)tiles.kv_tile, tiles.split_kv ? "_split" : "");
  else
    snprintf(buf, (size_t)buf_len, "prefill_%sq%d_kv%d%s",
             tiles.cores == FI_CORES_WGMMA ? "wg_" : "", (int)tiles.q_tile,
             (int)tiles.kv_tile, tiles.split_kv ? "_split" : "");
  return buf;
}
