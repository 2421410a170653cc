/* kernels/src/planner.c -- the load-balanced split-KV planner.
 *
 * Partition. A request with qo_len query rows is cut into query tiles of rows_per_unit
 * rows (decode: 1; prefill: max(1, q_tile / group), since a tile packs the GQA group of
 * one KV head). When split-KV is on, its KV is cut into chunks of `chunk` tokens (a
 * multiple of the page size, so no chunk starts inside a page), the last chunk shorter.
 * Each (request, query tile, KV chunk) is a work unit; a (request, query tile) cut into
 * n > 1 chunks writes n partial states that a merge unit combines in chunk order.
 *
 * Chunk choice. fixed_split_size > 0: that many tokens (rounded up to the page size),
 * for batch-invariant results. Automatic (fixed_split_size == 0 and tiles.split_kv): the
 * smallest chunk >= FI_MIN_CHUNK whose unit count stays <= the target (two waves of
 * CTAs; on the persistent prefill kernel never more: fi_plan_prefill_target_units), found
 * by binary search (the count is non-increasing in the chunk size); no split when the
 * unsplit problem already has >= target units. A prefill whose chunk leaves
 * more units than one wave of CTAs holds takes the smallest chunk that fits one wave
 * instead when that one is at most 2.4 times as long and the plan runs on the persistent
 * warp-specialised kernel (fi_plan_one_wave_units, fi_plan_one_wave_tenths). Chunks are
 * uniform, so the largest unit holds at most `chunk` KV tokens, and by minimality of the
 * chunk for the target T it was searched for (the two-wave one or the one-wave one)
 *   chunk - g < total_kv / (T - tiles)               (g = page granularity)
 * i.e. the largest unit is within T/(T-tiles) (<= 2 when the unsplit tile count is at most
 * half of T) of the mean plus one page; test_planner checks this.
 *
 * Order. Units are sorted by decreasing cost (qo rows x KV tokens), ties by request,
 * query tile, chunk: a greedy scheduler (the GPU's block scheduler, the host's worker
 * queue) then assigns the longest work first (LPT), and the same input always yields
 * the same array.
 *
 * Workspace layout (offsets from the workspace base, 256-byte aligned; they depend only
 * on the workspace size and the problem's head counts, so re-planning into the same
 * workspace never moves an array):
 *   counts [2] int32 (work units, merge units of the current plan), then [2] int32 zeros
 *   (the scheduler of the persistent CUDA prefill kernel, which leaves them zero), then
 *   [4] int32 status {code, index, value, placed} of the device planner (plan_device.cu; zero
 *   from the host planner), [1] int32 the plan's batch (0 when a device plan found an
 *   error; the prefill stage pass reads it, so that a graph replayed after re-planning
 *   stages the current requests), [1] int32 the lead units (lead_units: the warp-specialised
 *   prefill kernel hands out these first units of every head before the others; 0 from the
 *   device planner), [1] int32 the query rows no merge unit covers (written by the kernel
 *   directly; fi_prefill_merge_run skips its in-place merge of them when 0, as a graph
 *   replay or a device plan learns only here); 256 bytes reserved (FI_PLAN_COUNTS_BYTES) | the chunk
 *   ring of the warp-specialised prefill kernel (backend.h, FI_PLAN_HEADER_BYTES: two
 *   descriptor slots per persistent CTA, that kernel's scratch) |
 *   work [U] | mask row extents [E] int32 pairs | merge [M] |
 *   partial o [P, qo_heads, head_dim] f32 | partial lse [P, qo_heads]
 * The CUDA kernels read the counts from the workspace rather than from the plan, so a CUDA
 * graph captured with one plan runs the current plan's units after re-planning.
 * decode: U = M = P = N, the largest N that fits (a decode unit has one row, so partial
 *         rows <= units), E = 0;
 * prefill: M = P = the partial-row budget ceil(2 * sm_count * 128 / qo_heads) (two waves
 *         of 128-row tiles), U = E = what remains (U >= max_qo_rows, so E holds a pair per
 *         query row). A custom-mask plan on CUDA writes each query row's first and last
 *         kept key there (fi_plan_store_mask_extents; a plan made without the bits: the
 *         run, on the device): the warp-specialised kernel loads no KV tile outside a
 *         chunk's extents.
 */
#include <stdlib.h>
#include <string.h>

#include "fi/cuda_variants.h"
#include "internal.h"
#include "plan_split.h"
#include "shard.h"

enum { FI_ALIGN = 256, FI_RAGGED_GRANULARITY = 16 };

static size_t align_up(size_t x) { return (x + FI_ALIGN - 1) / FI_ALIGN * FI_ALIGN; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* The target's SMs and the problem's KV heads, at least 1 each. */
static int64_t target_sms(const fi_context *ctx) {
  return ctx->target.sm_count > 0 ? ctx->target.sm_count : 1;
}
static int64_t kv_heads(const fi_attention_params *p) {
  return p->num_kv_heads > 0 ? p->num_kv_heads : 1;
}

/* CTAs per SM a split decode plan aims for (units x kv_heads / SMs). Decode CTAs are
 * latency-bound chains of tiles (bench/NOTES.md, v6): 5 per SM (about one wave of the
 * 2-warp tensor-core kernel, 6 resident per SM) measured best on an H200 among 2, 3, 4,
 * 5, 6, 8, 16.
 * The context's FI_DECODE_CTAS_PER_SM knob overrides it (benchmark sweeps). */
enum { FI_DECODE_CTAS_PER_SM = 5 };
/* A split prefill plan's CTAs per SM: two waves of the prefill kernels' CTAs. */
enum { FI_PREFILL_CTAS_PER_SM = 2 };

int32_t fi_plan_target_units_for(const fi_context *ctx, fi_op_family family,
                                 const fi_attention_params *p) {
  int64_t per_sm = FI_PREFILL_CTAS_PER_SM;
  if (family == FI_OP_DECODE)
    per_sm = ctx->tuning.ctas_per_sm > 0 ? ctx->tuning.ctas_per_sm : FI_DECODE_CTAS_PER_SM;
  int64_t ctas = per_sm * target_sms(ctx);
  int64_t kvh = kv_heads(p);
  /* Decode rounds down: units x kv heads must not exceed the CTAs that fit in one wave
   * (rounded up, 3 per SM with 8 KV heads gave 400 CTAs for 396 slots: a second wave of 4
   * CTAs doubled the kernel time, bench/NOTES.md v8). */
  int64_t u = family == FI_OP_DECODE ? ctas / kvh : (ctas + kvh - 1) / kvh;
  return (int32_t)(u < 1 ? 1 : u);
}

/* The prefill split's one-wave alternative (fi_plan_build; plan_device.cu does the same).
 * Where the two-wave chunk leaves more (unit, KV head) items than the CTAs of one wave, the
 * smallest chunk whose items fit one wave is taken instead when it is at most
 * fi_plan_one_wave_tenths (24) tenths as long: two waves of chunks c compute as long as one
 * wave of chunks 2c, and the one wave writes and merges fewer than half the partial rows.
 * Measured on an H100 (bench/NOTES.md, session 62; paged appends of 32 / 8 heads): one wave
 * at 2.2x the chunk 8-11 % faster ((1, 96 new on 32768) 110 us against 120; (1, 96 on 8192)
 * 43.6 against 48.8), at 2.5x 2 % slower ((2, 96 on 16384) 134 against 131), at 3x 10-37 %
 * slower; the shared prefix's 64 x 32768 prefill on 104 SMs at 2.17x 94.6 us against 104.9
 * (an H200 in session 44, at 2x: 94-97 us against 102-105). Returns the units of one wave
 * (0: no alternative: decode, tiles of another kernel than the persistent warp-specialised
 * one, or more KV heads than CTAs). Other kernels keep the two-wave chunk: they hold
 * several CTAs per SM, and one CTA per SM is not their wave (a 16 / 16-head append of 32
 * tokens on 32768 on the mma.sync q32 tiles, 8 units against 17: 241 us against 142). */
int64_t fi_plan_one_wave_units(const fi_context *ctx, fi_op_family family,
                               const fi_attention_params *p, fi_tiles tiles) {
  if (family == FI_OP_DECODE || !fi_prefill_ws_tiles(p, tiles)) return 0;
  return target_sms(ctx) / kv_heads(p);
}

/* A split prefill plan's unit target: fi_plan_target_units_for's two CTAs per SM, rounded
 * up over the KV heads; on the persistent warp-specialised kernel's tiles rounded down, so
 * that the items never make a third wave (MHA over 32 KV heads: 9 units x 32 heads = 288
 * items for 264 CTAs, three waves that compute as long as the unsplit plan's one and add
 * its partial rows: (3 x 64 new tokens on 16384, 32 / 32 heads) 336-339 us split into 9
 * units, 278-279 unsplit; the 8 units rounded down leave it unsplit by the one-wave rule,
 * bench/NOTES.md session 62). Other kernels hold several CTAs per SM: rounded up ((3 x 32
 * on 4096, mma.sync q32 tiles) 106 us on 9 units, 235 unsplit). */
int64_t fi_plan_prefill_target_units(const fi_context *ctx, fi_op_family family,
                                     const fi_attention_params *p, fi_tiles tiles) {
  if (!fi_prefill_ws_tiles(p, tiles)) return fi_plan_target_units_for(ctx, family, p);
  const int64_t u = FI_PREFILL_CTAS_PER_SM * target_sms(ctx) / kv_heads(p);
  return u < 1 ? 1 : u;
}

/* How much longer than the two-wave chunk the one-wave chunk may be, in tenths (the knob
 * FI_PREFILL_ONE_WAVE_TENTHS, else FI_PLAN_ONE_WAVE_TENTHS). */
enum { FI_PLAN_ONE_WAVE_TENTHS = 24 };
int64_t fi_plan_one_wave_tenths(const fi_context *ctx) {
  return ctx->tuning.prefill_one_wave_tenths > 0 ? ctx->tuning.prefill_one_wave_tenths
                                                 : FI_PLAN_ONE_WAVE_TENTHS;
}

/* Split decode plans that the CUDA backend runs with its per-warp tensor-core kernel
 * (decode_tcw.cuh, decode_tcw_kernel) aim for 4 CTAs per SM instead: the launcher then gives
 * each CTA 3 warps (tcw_warps_for), 12 resident warps per SM instead of 5 x 2 = 10. Measured
 * on an H200 (bench/NOTES.md, v9): (1, 32768, 32, 8) 61.9 -> 65.6 % of copy, (16, 4096, 32,
 * 8) 78.2 -> 79.0 %. Those over a 16-bit cache that run the warp-specialised kernel
 * (decode_tws.cuh, sm_90; decode_plan_is_tws) aim for 3: its launcher still sizes each CTA
 * for 4 per SM (4 warps, a quarter of the shared memory), so the wave is 3/4 full, with 4/3
 * longer units and 3/4 of the partial rows. Measured on an H200 against 4 (bench/NOTES.md,
 * "3 CTAs per SM"): (1, 32768, 32, 8) 70.5 -> 74.0 % of copy, (1, 16384, 32, 8) 53.8 ->
 * 57.2 %, (1, 32768, 32, 4) 49.7 -> 54.1 %, the other split rows within 0.3 % or better
 * (pages of 8 alike, but for MHA -1 %). Over fp8 caches it was a wash, -5 to +3 % by row:
 * they stay at 4, and so do MHA, pages of 4 tokens (and the other pages loaded in boxes of
 * 4 rows, fi_decode_page_box_rows), and pages of 8 (boxes of 8 rows) where 3 per SM would
 * leave fewer than 2.5 busy CTAs per SM for requests of equal lengths (H200, session 48,
 * FlashInfer's better path, 3 -> 4: (5, 8192, 32, 32) 0.93 -> 0.97x, (2, 32768, 32, 32)
 * pages of 4 0.93 -> 1.00x, (12, 8192, 32, 8) pages of 4 1.01 -> 1.04x, (30, 4096, 32, 8)
 * pages of 4 0.64 -> 0.95x; pages of 8: (25, 8192, 32, 8) 0.81 -> 0.94x, (20, 8192, 32, 8)
 * 1.00 -> 1.04x, but (1, 32768, 32, 8) 1.11 -> 1.06x, (1, 32768, 32, 4) 1.13 -> 1.04x;
 * bench/NOTES.md). The knob FI_DECODE_CTAS_PER_SM overrides both. (The values:
 * plan_split.h FI_DECODE_TCW_CTAS_PER_SM, FI_DECODE_TWS_CTAS_PER_SM.) */

/* Whether the per-warp kernel (or, for fp8 KV at head_dim 128, the warp-specialised one,
 * which takes the same launch shapes) applies to this plan (only plan-level facts decide:
 * shape, dtypes, tiles; not pos_encoding, which compiled code applies per run, so compiled
 * and direct plans of the same shape stay identical; RoPE runs may take another kernel with
 * the same plan). Without it an fp8 split plan aimed at 5 CTAs per SM, which the
 * warp-specialised launcher runs 4 per SM: two waves. */
static int decode_plan_is_tcw(const fi_context *ctx, const fi_attention_params *p,
                              fi_tiles tiles) {
  const size_t kvb = fi_dtype_size(p->kv_dtype);
  return ctx->backend == FI_BACKEND_CUDA && ctx->tuning.ctas_per_sm <= 0 &&
         ctx->tuning.warp_pipe != 0 && tiles.cores == FI_CORES_TENSOR &&
         ((kvb == 2 && p->head_dim <= 128) || (kvb == 1 && p->head_dim == 128));
}

/* Whether a per-warp plan (decode_plan_is_tcw) runs on the warp-specialised kernel: the
 * launch's conditions (decode.cu) that a plan knows. */
static int decode_plan_is_tws(const fi_context *ctx, const fi_attention_params *p) {
  const int64_t kvh = kv_heads(p);
  return ctx->target.sm_version == 90 && ctx->wgmma_available && ctx->tuning.warp_spec != 0 &&
         ctx->tuning.heads_n != 0 &&
         fi_decode_tws_shape_ok(p->q_dtype, p->kv_dtype, p->head_dim, p->num_qo_heads / kvh,
                                p->page_size, p->fixed_split_size);
}

/* The work-unit target of a decode plan. On a device of at most
 * FI_LOW_DRAM_GBPS_PER_SM of memory bandwidth per SM (an H100, 25 GB/s), some grids
 * whose unsplit (request, kv head) CTAs nearly fill the SMs are not split (the target is
 * their unsplit unit count), so there are no partial rows to write and merge:
 * - 16-bit KV at head_dim 128, from 9/10 of the SMs up to 1.1 CTAs per SM: the launchers
 *   give such a grid's CTAs more warps (the warp-specialised kernel 14 at up to one CTA per
 *   SM, 7 or 8 each for two; the per-warp one up to 12, 16 with single K/V slots;
 *   decode.cuh launch_tws, tcw_warps_for), about as many warps per SM as a split plan's
 *   smaller CTAs, without its partial rows (H100, % of copy unsplit / split:
 *   (16, 4096, 32, 8), 128 CTAs, 91 / 90, bench/NOTES.md v10 and session 61; (17, 4096)
 *   93 / 89, (18, 4096) at 1.09 per SM 91 / 88). Beyond, the unsplit grid's second,
 *   partial wave costs more than the merge ((20, 4096), 1.21 per SM: 83-88 / 91-92;
 *   session 61);
 * - fp8 KV (head_dim 128) from FI_FP8_UNSPLIT_TENTHS / 10 CTAs per SM: per byte its
 *   consumers do twice the 16-bit work (every element widened), so one CTA per SM cannot
 *   keep up, but from 1.6 the unsplit grid's CTAs can (H100, e4m3, % of copy unsplit /
 *   split: (16, 4096, 32, 8) 57 / 79, (24, 4096) at 1.45 per SM 77 / 80, (28, 4096) at 1.7
 *   89 / 82, (32, 2048) at 1.94 84 / 80, MHA (6, 4096, 32, 32) at 1.45 78 / 86 and (8,
 *   4096, 32, 32) at 1.94 93 / 89; session 61).
 * Not at head_dim 64, whose CTAs stream half the bytes per token (H100, (16, 4096, 32, 8)
 * 58 % unsplit, 80 % split; (16, 16384) 65 / 95 %; session 61). Not where the bandwidth
 * per SM is higher: one such CTA per SM cannot keep enough bytes in flight (H200, 36 GB/s
 * per SM: 16 x 131072 tokens read at 77 % of copy unsplit, 99.6 % split). Nor with pages
 * of 4 or 8 tokens (or other pages in boxes of 4 or 8 rows), which the warp-specialised
 * kernel loads as 4 or 2 boxes per sub-tile: one CTA's producer per SM cannot issue them
 * fast enough (H100, (16, 4096, 32, 8) pages of 8: 69 % unsplit, 88 % split). The tuning
 * knob FI_DECODE_ONE_WAVE forces the choice (1: unsplit from 9/10 of the SMs, whatever the
 * cache or the grid's size, 0: split). */
/* (the bands' ends in tenths of a CTA per SM) */
#define FI_UNSPLIT_FROM_TENTHS 9
#define FI_UNSPLIT_TO_TENTHS 11
#define FI_FP8_UNSPLIT_TENTHS 16
static int64_t decode_target_units(const fi_context *ctx, const fi_attention_params *p,
                                   fi_tiles tiles, int64_t unsplit_units) {
  int64_t t = fi_plan_target_units_for(ctx, FI_OP_DECODE, p);
  if (!decode_plan_is_tcw(ctx, p, tiles)) return t;
  int64_t kvh = kv_heads(p);
  int64_t sms = target_sms(ctx);
  /* the band of CTAs per SM, in tenths, where the unsplit grid stays unsplit (lo 0: none;
   * hi 0: no upper end) */
  int64_t lo = 0, hi = 0;
  if (ctx->tuning.decode_one_wave >= 0) {
    if (ctx->tuning.decode_one_wave != 0) lo = FI_UNSPLIT_FROM_TENTHS;
  } else if (fi_target_low_dram_per_sm(&ctx->target) &&
             !fi_decode_several_boxes(p->page_size) && p->head_dim == 128) {
    if (fi_dtype_size(p->kv_dtype) == 1)
      lo = FI_FP8_UNSPLIT_TENTHS;
    else
      lo = FI_UNSPLIT_FROM_TENTHS, hi = FI_UNSPLIT_TO_TENTHS;
  }
  const int64_t tenths = unsplit_units * kvh * 10; /* over sms: the CTAs per SM in tenths */
  if (lo > 0 && tenths >= sms * lo && (hi == 0 || tenths <= sms * hi)) return unsplit_units;
  const int mha = p->num_qo_heads == kvh;
  const int32_t box_rows = fi_decode_page_box_rows(p->page_size);
  int per_sm = decode_plan_is_tws(ctx, p) && fi_dtype_size(p->kv_dtype) == 2 && !mha &&
                       box_rows != 4
                   ? FI_DECODE_TWS_CTAS_PER_SM
                   : FI_DECODE_TCW_CTAS_PER_SM;
  if (per_sm == FI_DECODE_TWS_CTAS_PER_SM && box_rows == 8) {
    /* the units that target gives requests of equal lengths (whole chunks per request) */
    const int64_t t3 = per_sm * sms / kvh, b = unsplit_units > 0 ? unsplit_units : 1;
    const int64_t u3 = b <= t3 ? t3 / b * b : b;
    if (2 * u3 * kvh < 5 * sms) per_sm = FI_DECODE_TCW_CTAS_PER_SM;
  }
  int64_t u = per_sm * sms / kvh;
  return u < 1 ? 1 : (u < t ? u : t);
}

typedef struct caps {
  int64_t units, merge, partial, extents;
  size_t off_work, off_ext, off_merge, off_po, off_plse, total;
} caps;

static size_t row_o_bytes(const fi_attention_params *p) {
  return (size_t)p->num_qo_heads * (size_t)p->head_dim * sizeof(float);
}
static size_t row_lse_bytes(const fi_attention_params *p) {
  return (size_t)p->num_qo_heads * sizeof(float);
}

static caps layout(const fi_attention_params *p, int64_t u, int64_t m, int64_t pr, int64_t e) {
  caps c;
  c.units = u;
  c.merge = m;
  c.partial = pr;
  c.extents = e;
  c.off_work = FI_PLAN_HEADER_BYTES; /* after the header (counts, chunk ring) */
  c.off_ext = c.off_work + align_up((size_t)u * sizeof(fi_work_unit));
  c.off_merge = c.off_ext + align_up((size_t)e * 2 * sizeof(int32_t));
  c.off_po = c.off_merge + align_up((size_t)m * sizeof(fi_merge_unit));
  c.off_plse = c.off_po + align_up((size_t)pr * row_o_bytes(p));
  c.total = c.off_plse + align_up((size_t)pr * row_lse_bytes(p));
  return c;
}

static int64_t prefill_partial_budget(const fi_target *t, const fi_attention_params *p) {
  int64_t rows = 2LL * (t->sm_count > 0 ? t->sm_count : 1) * 128;
  return (rows + p->num_qo_heads - 1) / p->num_qo_heads;
}

/* The capacities a workspace of `bytes` provides. */
static caps caps_from_bytes(fi_op_family family, const fi_attention_params *p,
                            const fi_target *t, size_t bytes) {
  if (p->kv_shards > 0) { /* shard.h: n units = merge units = partial rows, then the exchange */
    int64_t n = fi_shard_layout_for(p, bytes).capacity;
    return layout(p, n, n, n, 0);
  }
  if (family == FI_OP_DECODE) {
    size_t per = sizeof(fi_work_unit) + sizeof(fi_merge_unit) + row_o_bytes(p) +
                 row_lse_bytes(p);
    int64_t n = (int64_t)(bytes / per);
    while (n > 0 && layout(p, n, n, n, 0).total > bytes) --n;
    return layout(p, n, n, n, 0);
  }
  int64_t pr = prefill_partial_budget(t, p);
  caps c = layout(p, 0, pr, pr, 0);
  if (c.total > bytes) return layout(p, 0, 0, 0, 0);
  size_t room = (bytes - c.total) / FI_ALIGN * FI_ALIGN;
  int64_t u = (int64_t)(room / (sizeof(fi_work_unit) + 2 * sizeof(int32_t)));
  while (u > 0 && layout(p, u, pr, pr, u).total > bytes) --u;
  return layout(p, u, pr, pr, u);
}

static fi_shard_layout shard_layout_n(const fi_attention_params *p, int64_t n) {
  fi_shard_layout l;
  memset(&l, 0, sizeof l);
  const caps c = layout(p, n, n, n, 0);
  const size_t R = (size_t)(p->kv_shards > 0 ? p->kv_shards : 1);
  l.ranks = (int32_t)R;
  l.capacity = n;
  l.off_merge = c.off_merge;
  l.off_lse = c.off_plse;
  l.off_o = c.off_po;
  l.merge_bytes = align_up((size_t)n * sizeof(fi_merge_unit));
  l.lse_bytes = align_up((size_t)n * row_lse_bytes(p));
  l.o_bytes = align_up((size_t)n * row_o_bytes(p));
  l.off_send_header = c.total;
  l.off_headers = l.off_send_header + FI_SHARD_HEADER_BYTES;
  l.off_g_merge = l.off_headers + R * FI_SHARD_HEADER_BYTES;
  l.off_g_lse = l.off_g_merge + R * l.merge_bytes;
  l.off_g_o = l.off_g_lse + R * l.lse_bytes;
  l.total = l.off_g_o + R * l.o_bytes;
  return l;
}

size_t fi_shard_workspace_bytes(const fi_attention_params *p, int64_t n) {
  return shard_layout_n(p, n).total;
}

fi_shard_layout fi_shard_layout_for(const fi_attention_params *p, size_t bytes) {
  const size_t per = sizeof(fi_work_unit) +
                     (size_t)(1 + (p->kv_shards > 0 ? p->kv_shards : 1)) *
                         (sizeof(fi_merge_unit) + row_o_bytes(p) + row_lse_bytes(p));
  int64_t n = (int64_t)(bytes / per);
  while (n > 0 && shard_layout_n(p, n).total > bytes) --n;
  return shard_layout_n(p, n);
}

int fi_prefill_needs_stage(const fi_attention_params *p, int paged) {
  return p->q_dtype == FI_DTYPE_E4M3 || p->pos_encoding == FI_POS_ROPE_LLAMA || p->kv_dtype == FI_DTYPE_E4M3 ||
         p->kv_dtype == FI_DTYPE_E5M2 || (paged && p->page_size % 16 != 0);
}

int fi_bsr_stage_optional(const fi_attention_params *p, int paged) {
  return paged && p->page_size % 16 == 0 && p->page_size % 64 != 0;
}

/* Whether the warp-specialised prefill kernel has an instance for head_dim `hd`: every
 * CUDA head dim (fi/cuda_variants.h), or with block-sparse tiles the wgmma list's. */
#define FI_HD_CASE(V) case (V):
static int ws_head_dim(int32_t hd, int block_sparse) {
  if (block_sparse) {
    switch (hd) {
      FI_CUDA_PREFILL_WGMMA_HEAD_DIM_LIST(FI_HD_CASE) return 1;
      default: return 0;
    }
  }
  switch (hd) {
    FI_CUDA_HEAD_DIM_LIST(FI_HD_CASE) return 1;
    default: return 0;
  }
}
#undef FI_HD_CASE

/* (optional: the run takes the stage without needing it; K and V then both staged) */
static fi_stage_layout stage_layout(const fi_context *ctx, const fi_attention_params *p,
                                    int paged, int64_t kv_rows, int optional) {
  fi_stage_layout l = {SIZE_MAX, SIZE_MAX, 0};
  const int fp8 = p->kv_dtype == FI_DTYPE_E4M3 || p->kv_dtype == FI_DTYPE_E5M2;
  if (ctx->backend != FI_BACKEND_CUDA || !ctx->wgmma_available ||
      ctx->tuning.prefill_warp_spec == 0 || !(optional || fi_prefill_needs_stage(p, paged)))
    return l;
  if (p->q_dtype == FI_DTYPE_E4M3) { /* fp8 attention: V^T, and paged K as token rows */
    if (p->head_dim != 128 || p->kv_dtype != FI_DTYPE_E4M3 || p->num_kv_heads <= 0 ||
        kv_rows < 0)
      return l;
    const size_t k_bytes =
        paged ? align_up((size_t)kv_rows * (size_t)p->num_kv_heads * (size_t)p->head_dim) : 0;
    l.k = paged ? 0 : SIZE_MAX;
    l.v = k_bytes;
    l.total = k_bytes + align_up((size_t)fi_fp8_vt_pitch(kv_rows) * (size_t)p->num_kv_heads *
                                 (size_t)p->head_dim);
    return l;
  }
  if (!ws_head_dim(p->head_dim, 0) ||
      (p->q_dtype != FI_DTYPE_F16 && p->q_dtype != FI_DTYPE_BF16) ||
      (!fp8 && p->kv_dtype != p->q_dtype) || p->num_kv_heads <= 0 ||
      p->num_qo_heads / p->num_kv_heads > 128 || kv_rows < 0)
    return l;
  const size_t kv_bytes = align_up((size_t)kv_rows * (size_t)p->num_kv_heads *
                                   (size_t)p->head_dim * 2);
  l.k = 0;
  l.total = kv_bytes;
  if (fp8 || (paged && p->page_size % 16 != 0) || optional) {
    l.v = kv_bytes;
    l.total += kv_bytes;
  }
  return l;
}

fi_stage_layout fi_prefill_stage_layout(const fi_context *ctx, const fi_attention_params *p,
                                        int paged, int64_t kv_rows) {
  return stage_layout(ctx, p, paged, kv_rows, 0);
}

fi_stage_layout fi_bsr_stage_layout(const fi_context *ctx, const fi_attention_params *p,
                                    int paged, int64_t kv_rows) {
  /* (a head dim without a block-sparse instance of the warp-specialised kernel, 256: its
   * tiles run the mma.sync kernel, which reads the cache as it is) */
  if (!ws_head_dim(p->head_dim, 1)) return (fi_stage_layout){SIZE_MAX, SIZE_MAX, 0};
  return stage_layout(ctx, p, paged, kv_rows, fi_bsr_stage_optional(p, paged));
}

/* The unit chunks' granularity: whole pages (decode and paged prefill), or 16 rows (ragged).
 * Decode pages loaded as several boxes per sub-tile (pages of 4, 8, 12, 24, ...) take
 * chunks of whole 16-token sub-tiles and whole pages when the planner chooses the split
 * (the warp-specialised decode kernel's: lcm(page_size, 16) tokens); a fixed split keeps
 * whole pages (a split that divides each rank's segment must give the single-rank run's
 * chunks, runtime.h). */
static int64_t chunk_granularity(const fi_plan_problem *pb, const fi_attention_params *params,
                                 int decode) {
  if (!decode && !pb->last_page_len) return FI_RAGGED_GRANULARITY;
  if (decode && fi_decode_several_boxes(pb->page_size) && params->fixed_split_size <= 0)
    return fi_decode_sub_tile_chunk(pb->page_size);
  return pb->page_size;
}

size_t fi_plan_decode_workspace_bytes_kv(const fi_context *ctx, const fi_attention_params *p,
                                         int32_t max_batch, int64_t max_kv_tokens) {
  int64_t n = fi_plan_target_units_for(ctx, FI_OP_DECODE, p);
  int64_t units = max_batch;
  if (p->fixed_split_size > 0) {
    /* sum over requests of max(1, ceil(kv_i / chunk)) <= batch + ceil(total kv / chunk);
     * a decode unit has one row, so partial rows <= units, and merge units <= batch */
    const int64_t g = p->page_size > 0 ? p->page_size : 1;
    const int64_t chunk = ceil_div(p->fixed_split_size, g) * g;
    units += ceil_div(max_kv_tokens, chunk);
  }
  if (units > n) n = units;
  if (p->kv_shards > 0) return fi_shard_workspace_bytes(p, n);
  return layout(p, n, n, n, 0).total;
}

size_t fi_plan_workspace_bytes(const fi_context *ctx, fi_op_family family,
                               const fi_attention_params *p, int32_t max_batch,
                               int64_t max_qo_rows) {
  int64_t target = fi_plan_target_units_for(ctx, family, p);
  if (family == FI_OP_DECODE) {
    int64_t n = max_batch > target ? max_batch : target;
    if (p->kv_shards > 0) return fi_shard_workspace_bytes(p, n);
    return layout(p, n, n, n, 0).total;
  }
  if (p->kv_shards > 0) /* a unit and a partial row per query row, or the split target */
    return fi_shard_workspace_bytes(p, max_qo_rows > target ? max_qo_rows : target);
  /* A prefill unit holds >= 1 query row, so unsplit units <= max_qo_rows; a split plan
   * has <= target units. */
  int64_t u = max_qo_rows > target ? max_qo_rows : target;
  int64_t pr = prefill_partial_budget(&ctx->target, p);
  return layout(p, u, pr, pr, u).total;
}

typedef struct counts {
  int64_t units, partial, merge;
} counts;


static counts count_for_chunk(const fi_plan_problem *pb, int64_t rpu, int64_t chunk,
                              int sharded) {
  counts c = {0, 0, 0};
  for (int32_t i = 0; i < pb->batch; ++i) {
    int64_t qo = fi_problem_qo_len(pb, i), kv = fi_problem_kv_len(pb, i);
    if (qo == 0) continue;
    int64_t tiles = ceil_div(qo, rpu);
    int64_t n = (chunk > 0 && kv > chunk) ? ceil_div(kv, chunk) : 1;
    c.units += tiles * n;
    if (n > 1 || sharded) {
      c.partial += n * qo;
      c.merge += tiles;
    }
  }
  return c;
}

/* A sharded plan short of workspace: what it needs, for the ranks' signature exchange
 * (every rank's workspace is then sized alike; shard.c). */
static void note_sharded_needs(fi_plan *plan, counts need) {
  plan->num_work_units = (int32_t)need.units;
  plan->num_partial_rows = (int32_t)need.partial;
  plan->private_[FI_PLAN_NUM_MERGE] = (uint64_t)need.merge;
}

static int fits(counts c, const caps *k) {
  return c.units <= k->units && c.partial <= k->partial && c.merge <= k->merge;
}

static int compare_units(const void *pa, const void *pb) {
  const fi_work_unit *a = (const fi_work_unit *)pa, *b = (const fi_work_unit *)pb;
  int64_t ca = (int64_t)a->qo_len * ((int64_t)(a->kv_end - a->kv_start) + 1);
  int64_t cb = (int64_t)b->qo_len * ((int64_t)(b->kv_end - b->kv_start) + 1);
  if (ca != cb) return ca > cb ? -1 : 1;
  /* Equal nominal cost: later query rows first. Under a causal (or windowed) mask they
   * see the most keys, so this keeps longest-first order where the nominal cost cannot
   * tell, and the short tiles fill the last wave. */
  if (a->qo_start != b->qo_start) return a->qo_start > b->qo_start ? -1 : 1;
  if (a->request != b->request) return a->request < b->request ? -1 : 1;
  if (a->kv_start != b->kv_start) return a->kv_start < b->kv_start ? -1 : 1;
  return 0;
}

/* The units (sorted, longest first) whose cost is at least twice the mean: the persistent
 * prefill kernel hands them out for every head before the rest (prefill_ws.cuh). It walks
 * its items head-major so that resident CTAs share one head's K/V in L2; a batch that mixes
 * long units with many short ones (a shared prefix's chunks beside the suffixes of 64
 * requests) then started the last heads' long units only after the earlier heads' short
 * ones, a tail of one long unit. 0 when no unit qualifies or all do (uniform costs keep the
 * head-major order). */
static int32_t lead_units(const fi_context *ctx, const fi_work_unit *work, int64_t nu) {
  if (nu < 2 || ctx->tuning.prefill_lead_units == 0) return 0;
  double total = 0;
  for (int64_t i = 0; i < nu; ++i)
    total += (double)work[i].qo_len * ((double)(work[i].kv_end - work[i].kv_start) + 1);
  const double bar = 2.0 * total / (double)nu;
  int64_t lead = 0;
  while (lead < nu &&
         (double)work[lead].qo_len * ((double)(work[lead].kv_end - work[lead].kv_start) + 1) >=
             bar)
    ++lead;
  return lead < nu ? (int32_t)lead : 0;
}

static const char *size_fn(fi_op_family f) {
  return f == FI_OP_DECODE ? "fi_decode_workspace_size" : "fi_prefill_workspace_size";
}

/* FI_PLAN_FLAG_FEW_CHUNKS where the plan splits and no merge unit has more than
 * FI_MERGE_FEW_CHUNKS chunks (its merge may then run a warp per row, merge.cu). */
static uint64_t few_chunks_flag(const fi_merge_unit *merge, int64_t nm) {
  for (int64_t i = 0; i < nm; ++i)
    if (merge[i].num_chunks > FI_MERGE_FEW_CHUNKS) return 0;
  return nm > 0 ? FI_PLAN_FLAG_FEW_CHUNKS : 0;
}

/* What a host and a device plan share: the problem, the workspace and its offsets, the
 * magic word. Each planner then sets the counts it knows. */
static void fill_plan(const fi_context *ctx, fi_plan *plan, const fi_plan_problem *pb,
                      const fi_attention_params *params, fi_tiles tiles, const caps *k,
                      void *workspace, size_t workspace_bytes) {
  memset(plan, 0, sizeof(*plan));
  plan->family = pb->family;
  plan->tiles = tiles;
  plan->batch = pb->batch;
  plan->params = *params;
  plan->workspace = workspace;
  plan->workspace_bytes = workspace_bytes;
  plan->private_[FI_PLAN_OFF_WORK] = k->off_work;
  plan->private_[FI_PLAN_OFF_MERGE] = k->off_merge;
  plan->private_[FI_PLAN_OFF_PARTIAL_O] = k->off_po;
  plan->private_[FI_PLAN_OFF_PARTIAL_LSE] = k->off_plse;
  plan->private_[FI_PLAN_MAGIC] = FI_PLAN_MAGIC_VALUE | (uint64_t)ctx->backend;
}

/* Query rows (tokens) per work unit: decode 1; prefill q_tile / group (a tile packs the
 * group's heads of each row), at least 1 -- or, where the CUDA warp-specialised prefill
 * kernel packs a tile's rows across tokens (fi_prefill_rows_across: a group of at most 32
 * that does not divide 128), 128 / (the largest power of two dividing the group), so
 * that a unit's rows are whole tiles (a group of 12: 32 tokens, three full tiles, where
 * 128 / 12 = 10 tokens filled 120 of a tile's 128 rows). */
int64_t fi_prefill_rows_per_unit(const fi_context *ctx, fi_op_family family,
                                 const fi_attention_params *params, fi_tiles tiles) {
  if (family == FI_OP_DECODE) return 1;
  const int64_t group = params->num_qo_heads / params->num_kv_heads;
  const int ws = ctx->backend == FI_BACKEND_CUDA && ctx->wgmma_available &&
                 ctx->tuning.prefill_warp_spec != 0 && fi_prefill_ws_tiles(params, tiles) &&
                 (family == FI_OP_RAGGED_PREFILL || family == FI_OP_PAGED_PREFILL);
  if (ws && fi_prefill_rows_across(ctx, group)) return 128 / (group & -group);
  const int64_t rpu = tiles.q_tile / group;
  return rpu < 1 ? 1 : rpu;
}

/* The smallest k in [lo, hi] whose chunk k * g keeps the units within `target` and the
 * workspace's capacities (the count is non-increasing in the chunk); k = hi means no
 * request is split, which always fits. */
static int64_t smallest_chunk_pages(const fi_plan_problem *pb, int64_t rpu, int sharded,
                                    const caps *k, int64_t g, int64_t target, int64_t lo,
                                    int64_t hi) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    counts c = count_for_chunk(pb, rpu, mid * g, sharded);
    if (c.units <= target && fits(c, k))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

fi_status fi_plan_build(fi_context *ctx, const fi_plan_problem *pb,
                        const fi_attention_params *params, fi_tiles tiles, void *workspace,
                        size_t workspace_bytes, fi_plan *plan) {
  const fi_target *t = &ctx->target;
  const int sharded = params->kv_shards > 0; /* every (request, tile) writes partials */
  int64_t rpu = fi_prefill_rows_per_unit(ctx, pb->family, params, tiles);
  int64_t g = chunk_granularity(pb, params, pb->family == FI_OP_DECODE);
  int64_t total_qo = 0, total_kv = 0, max_kv = 0;
  for (int32_t i = 0; i < pb->batch; ++i) {
    int64_t kv = fi_problem_kv_len(pb, i);
    total_qo += fi_problem_qo_len(pb, i);
    total_kv += kv;
    if (kv > max_kv) max_kv = kv;
  }

  if (!workspace && workspace_bytes > 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "workspace is NULL but workspace_bytes is %zu: pass the buffer "
                        "allocated with %s's size", workspace_bytes, size_fn(pb->family));
  caps k = caps_from_bytes(pb->family, params, t, workspace ? workspace_bytes : 0);
  counts unsplit = count_for_chunk(pb, rpu, 0, sharded);
  int64_t target = pb->family == FI_OP_DECODE
                       ? decode_target_units(ctx, params, tiles, unsplit.units)
                       : fi_plan_prefill_target_units(ctx, pb->family, params, tiles);

  if (!fits(unsplit, &k)) {
    if (sharded) /* the fixed split's counts (>= the unsplit ones) when there is one */
      note_sharded_needs(plan, params->fixed_split_size > 0
                                   ? count_for_chunk(pb, rpu,
                                                     ceil_div(params->fixed_split_size, g) * g,
                                                     sharded)
                                   : unsplit);
    int32_t need_batch = pb->batch;
    size_t need = fi_plan_workspace_bytes(ctx, pb->family, params, need_batch, total_qo);
    return fi_set_error(ctx, FI_ERROR_WORKSPACE_TOO_SMALL,
                        "workspace of %zu bytes holds %lld work units but this batch needs "
                        "%lld: allocate %s(max_batch >= %d%s) = %zu bytes or more",
                        workspace ? workspace_bytes : (size_t)0, (long long)k.units,
                        (long long)unsplit.units, size_fn(pb->family), (int)need_batch,
                        pb->family == FI_OP_DECODE ? "" : ", max_qo_rows >= nnz_qo", need);
  }

  int64_t chunk = 0;
  if (params->fixed_split_size > 0) {
    chunk = ceil_div(params->fixed_split_size, g) * g;
    counts c = count_for_chunk(pb, rpu, chunk, sharded);
    if (!fits(c, &k)) {
      if (sharded) note_sharded_needs(plan, c);
      return fi_set_error(
          ctx, FI_ERROR_WORKSPACE_TOO_SMALL,
          "fixed_split_size = %d splits this batch into %lld work units, %lld partial rows "
          "and %lld merge units, but the workspace of %zu bytes holds %lld / %lld / %lld: "
          "use a larger fixed_split_size%s",
          (int)params->fixed_split_size, (long long)c.units, (long long)c.partial,
          (long long)c.merge, workspace_bytes, (long long)k.units, (long long)k.partial,
          (long long)k.merge,
          pb->family == FI_OP_DECODE
              ? ", or size the workspace with fi_decode_workspace_size_kv (the total KV "
                "tokens bound what a fixed split makes)"
              : "");
    }
  } else if (params->fixed_split_size == 0 && tiles.split_kv && unsplit.units < target) {
    const int64_t lo = ceil_div(FI_MIN_CHUNK, g), hi = ceil_div(max_kv, g);
    if (lo < hi) {
      int64_t kc = smallest_chunk_pages(pb, rpu, sharded, &k, g, target, lo, hi);
      const int64_t wave = fi_plan_one_wave_units(ctx, pb->family, params, tiles);
      if (wave > 0 && kc < hi && count_for_chunk(pb, rpu, kc * g, sharded).units > wave) {
        /* (k1 >= kc: fewer units take longer chunks; k1 = hi: none below hi fits one wave,
         * so it fits only unsplit) */
        const int64_t k1 = smallest_chunk_pages(pb, rpu, sharded, &k, g, wave, kc, hi);
        if (10 * k1 <= fi_plan_one_wave_tenths(ctx) * kc && (k1 < hi || unsplit.units <= wave))
          kc = k1;
      }
      chunk = kc * g;
      if (chunk >= max_kv) chunk = 0;
    }
  }

  counts c = count_for_chunk(pb, rpu, chunk, sharded);
  size_t scratch_bytes = (size_t)c.units * sizeof(fi_work_unit) +
                         (size_t)c.merge * sizeof(fi_merge_unit) + 11 * sizeof(int32_t);
  char *scratch = (char *)fi_context_plan_scratch(ctx, scratch_bytes);
  if (!scratch) return FI_ERROR_OUT_OF_MEMORY;
  fi_work_unit *work = (fi_work_unit *)scratch;
  fi_merge_unit *merge = (fi_merge_unit *)(scratch + (size_t)c.units * sizeof(fi_work_unit));

  int64_t nu = 0, nm = 0, next_partial = 0;
  /* rows of merge units (they never overlap); the kernel writes the others directly */
  int64_t split_rows = 0;
  for (int32_t i = 0; i < pb->batch; ++i) {
    int64_t qo = fi_problem_qo_len(pb, i), kv = fi_problem_kv_len(pb, i);
    int64_t row0 = pb->qo_indptr ? pb->qo_indptr[i] : i;
    int64_t n = (chunk > 0 && kv > chunk) ? ceil_div(kv, chunk) : 1;
    for (int64_t qs = 0; qs < qo; qs += rpu) {
      int64_t rows = qo - qs < rpu ? qo - qs : rpu;
      int64_t first = -1;
      if (n > 1 || sharded) {
        first = next_partial;
        next_partial += n * rows;
        merge[nm].out_row = (int32_t)(row0 + qs);
        merge[nm].rows = (int32_t)rows;
        merge[nm].first_partial_row = (int32_t)first;
        merge[nm].num_chunks = (int32_t)n;
        ++nm;
        split_rows += rows;
      }
      for (int64_t ch = 0; ch < n; ++ch) {
        fi_work_unit *u = &work[nu++];
        u->request = i;
        u->qo_start = (int32_t)qs;
        u->qo_len = (int32_t)rows;
        u->kv_start = (int32_t)(n > 1 ? ch * chunk : 0);
        u->kv_end = (int32_t)(n > 1 && (ch + 1) * chunk < kv ? (ch + 1) * chunk : kv);
        u->partial_row = (int32_t)(n > 1 || sharded ? first + ch * rows : -1);
      }
    }
  }
  qsort(work, (size_t)nu, sizeof(fi_work_unit), compare_units);
  const int32_t lead = pb->family == FI_OP_DECODE ? 0 : lead_units(ctx, work, nu);

  if (workspace) {
    char *base = (char *)workspace;
    size_t wb = (size_t)nu * sizeof(fi_work_unit), mb = (size_t)nm * sizeof(fi_merge_unit);
    int32_t *hdr = (int32_t *)(scratch + (size_t)c.units * sizeof(fi_work_unit) +
                               (size_t)c.merge * sizeof(fi_merge_unit));
    hdr[0] = (int32_t)nu;
    hdr[1] = (int32_t)nm;
    hdr[2] = hdr[3] = 0; /* scheduler counters (see the layout note) */
    hdr[4] = hdr[5] = hdr[6] = hdr[7] = 0; /* the device planner's status (none here) */
    hdr[8] = pb->batch;
    hdr[9] = lead;
    hdr[10] = (int32_t)(total_qo - split_rows);
    if (ctx->backend == FI_BACKEND_CUDA) {
      fi_status s = fi_cuda_upload(ctx, base, hdr, 11 * sizeof(int32_t));
      if (s == FI_SUCCESS && wb) s = fi_cuda_upload(ctx, base + k.off_work, work, wb);
      if (s == FI_SUCCESS && mb) s = fi_cuda_upload(ctx, base + k.off_merge, merge, mb);
      if (s != FI_SUCCESS) return s;
    } else {
      memcpy(base, hdr, 11 * sizeof(int32_t));
      if (wb) memcpy(base + k.off_work, work, wb);
      if (mb) memcpy(base + k.off_merge, merge, mb);
    }
  }

  fill_plan(ctx, plan, pb, params, tiles, &k, workspace, workspace_bytes);
  plan->num_work_units = (int32_t)nu;
  plan->num_partial_rows = (int32_t)next_partial;
  plan->total_qo_rows = total_qo;
  plan->total_kv = total_kv;
  plan->private_[FI_PLAN_NUM_MERGE] = (uint64_t)nm;
  plan->private_[FI_PLAN_FLAGS] |= few_chunks_flag(merge, nm);
  if (nm > 0 && split_rows == total_qo)
    plan->private_[FI_PLAN_FLAGS] |= FI_PLAN_FLAG_SPLITS_ALL;
  plan->private_[FI_PLAN_KV_CHUNK] = (uint64_t)chunk;
  plan->private_[FI_PLAN_ROWS_PER_UNIT] = (uint64_t)rpu;
  if (pb->family == FI_OP_DECODE) {
    int64_t launch = fi_plan_decode_launch_units(ctx, params, tiles, pb->batch, k.units);
    plan->private_[FI_PLAN_LAUNCH_UNITS] = (uint64_t)(launch > nu ? launch : nu);
  }
  return FI_SUCCESS;
}

int64_t fi_plan_decode_launch_units(const fi_context *ctx, const fi_attention_params *p,
                                    fi_tiles tiles, int32_t batch, int64_t cap_units) {
  /* A fixed split: the device cannot know the count before it plans, so both launch the
   * workspace's capacity (the kernels pick their warps per CTA by the grid's size, so
   * equal grids are what makes the two plans' runs bit-identical). */
  if (p->fixed_split_size > 0) return cap_units;
  int64_t target = decode_target_units(ctx, p, tiles, batch);
  if (p->fixed_split_size == 0 && tiles.split_kv && batch < target) return target;
  return batch;
}

fi_status fi_plan_prepare_device(fi_context *ctx, const fi_plan_problem *pb,
                                 const fi_attention_params *params, fi_tiles tiles,
                                 int64_t max_qo_rows, void *workspace, size_t workspace_bytes,
                                 fi_plan *plan, fi_cuda_device_plan_caps *dc) {
  const int decode = pb->family == FI_OP_DECODE;
  caps k = caps_from_bytes(pb->family, params, &ctx->target, workspace ? workspace_bytes : 0);
  int64_t rpu = fi_prefill_rows_per_unit(ctx, pb->family, params, tiles);
  /* Unsplit units: one per request (decode), at most one per rpu query rows plus one per
   * request (prefill). Every unsplit plan must fit, as on the host. */
  int64_t unsplit_bound = decode ? pb->batch : ceil_div(max_qo_rows, rpu) + pb->batch;
  if (!decode && unsplit_bound > max_qo_rows) unsplit_bound = max_qo_rows > 0 ? max_qo_rows : 0;
  if (!workspace || k.units < unsplit_bound)
    return fi_set_error(
        ctx, FI_ERROR_WORKSPACE_TOO_SMALL,
        "workspace of %zu bytes holds %lld work units but this batch may need %lld: allocate "
        "%s(max_batch >= %d%s) = %zu bytes or more", workspace ? workspace_bytes : (size_t)0,
        (long long)k.units, (long long)unsplit_bound, size_fn(pb->family), (int)pb->batch,
        decode ? "" : ", max_qo_rows >= the rows of q",
        fi_plan_workspace_bytes(ctx, pb->family, params, pb->batch, decode ? pb->batch : max_qo_rows));
  /* The units are staged in the partial-o area before they are sorted. */
  if ((size_t)k.units * sizeof(fi_work_unit) > k.off_plse - k.off_po) {
    if (!decode && (size_t)unsplit_bound * sizeof(fi_work_unit) <= k.off_plse - k.off_po)
      k.units = (int64_t)((k.off_plse - k.off_po) / sizeof(fi_work_unit));
    else
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "device planning stages its units in the partial-o area, which is "
                          "too small for num_qo_heads * head_dim = %d: plan on the host",
                          (int)(params->num_qo_heads * params->head_dim));
  }
  int64_t g = chunk_granularity(pb, params, decode);
  int64_t target = decode ? decode_target_units(ctx, params, tiles, pb->batch)
                          : fi_plan_prefill_target_units(ctx, pb->family, params, tiles);
  dc->units = k.units;
  dc->merge = k.merge;
  dc->partial = k.partial;
  dc->target = target;
  dc->one_wave = fi_plan_one_wave_units(ctx, pb->family, params, tiles);
  dc->one_wave_tenths = fi_plan_one_wave_tenths(ctx);
  dc->fixed_chunk = params->fixed_split_size > 0 ? ceil_div(params->fixed_split_size, g) * g : 0;
  dc->rows_per_unit = rpu;
  dc->granularity = g;
  dc->auto_split = params->fixed_split_size == 0 && tiles.split_kv;
  fill_plan(ctx, plan, pb, params, tiles, &k, workspace, workspace_bytes);
  if (decode) {
    plan->num_work_units =
        (int32_t)fi_plan_decode_launch_units(ctx, params, tiles, pb->batch, k.units);
    dc->max_units = k.units;
    plan->total_qo_rows = pb->batch;
    plan->private_[FI_PLAN_NUM_MERGE] = (uint64_t)pb->batch; /* merge grid: <= one per request */
  } else {
    /* The kernels stride over the units the device wrote; the grid covers the unsplit
     * bound or the target, whichever is larger (a fixed split: the capacity). */
    int64_t launch = params->fixed_split_size > 0 ? k.units
                                                   : (unsplit_bound > target ? unsplit_bound : target);
    if (launch > k.units) launch = k.units;
    plan->num_work_units = (int32_t)(launch > 0 ? launch : 1);
    dc->max_units = launch;
    plan->total_qo_rows = max_qo_rows;
    plan->private_[FI_PLAN_NUM_MERGE] = (uint64_t)(k.merge > 0 ? k.merge : 0);
  }
  plan->num_partial_rows = -1;
  plan->total_kv = -1;
  plan->private_[FI_PLAN_KV_CHUNK] = 0; /* known on the device only */
  plan->private_[FI_PLAN_ROWS_PER_UNIT] = (uint64_t)rpu;
  plan->private_[FI_PLAN_LAUNCH_UNITS] = (uint64_t)plan->num_work_units;
  plan->private_[FI_PLAN_FLAGS] = FI_PLAN_FLAG_DEVICE;
  return FI_SUCCESS;
}

fi_plan_layout fi_plan_get_layout(const fi_plan *plan) {
  fi_plan_layout l;
  char *base = (char *)plan->workspace;
  l.num_work_units = plan->num_work_units;
  l.num_merge_units = (int32_t)plan->private_[FI_PLAN_NUM_MERGE];
  l.num_partial_rows = plan->num_partial_rows;
  if (!base) {
    l.work = NULL;
    l.merge = NULL;
    l.partial_o = NULL;
    l.partial_lse = NULL;
    return l;
  }
  l.work = (fi_work_unit *)(base + plan->private_[FI_PLAN_OFF_WORK]);
  l.merge = (fi_merge_unit *)(base + plan->private_[FI_PLAN_OFF_MERGE]);
  l.partial_o = (float *)(base + plan->private_[FI_PLAN_OFF_PARTIAL_O]);
  l.partial_lse = (float *)(base + plan->private_[FI_PLAN_OFF_PARTIAL_LSE]);
  return l;
}

fi_status fi_device_plan_error(fi_context *ctx, const int32_t *st) {
  const int idx = st[1], val = st[2];
  switch (st[0]) {
  case 0: return FI_SUCCESS;
  case 1: /* kv_indptr[0] != 0; 8: qo_indptr's */
  case 8:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s[0] = %d: it must be 0 (device plan; nothing was computed)",
                        st[0] == 1 ? "kv_indptr" : "qo_indptr", val);
  case 2: /* kv_indptr decreases; 9: qo_indptr */
  case 9: {
    const char *name = st[0] == 2 ? "kv_indptr" : "qo_indptr";
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s[%d] = %d is below %s[%d]: indptr must be non-decreasing (device "
                        "plan; nothing was computed)", name, idx + 1, val, name, idx);
  }
  case 3:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv_indptr[%d] = %d is more pages than kv_indices holds: pass a "
                        "kv_indices buffer of at least that many elements (device plan; "
                        "nothing was computed)", idx, val);
  case 4:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv_last_page_len[%d] = %d: must be in 1..page_size (device plan; "
                        "nothing was computed)", idx, val);
  case 5:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv_indices[%d] = %d is not a page of the cache: page ids must be in "
                        "[0, num_pages) (device plan; nothing was computed)", idx, val);
  case 7:
    if (val >= 0)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "new token %d goes to page %d, which is not a page of the cache: page "
                          "ids must be in [0, num_pages) (device append; the token was not "
                          "written)", idx, val);
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "new token %d has no slot in its request's pages: kv_indptr, "
                        "kv_last_page_len and append_indptr disagree, or kv_indptr points past "
                        "kv_indices (device append; the token was not written)", idx);
  case 10:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "qo_indptr[%d] = %d is more query rows than the plan's max_qo_rows: "
                        "plan with max_qo_rows >= the rows of q and pass a q that large "
                        "(device plan; nothing was computed)", idx, val);
  case 11:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv_indptr[%d] = %d is more KV rows than the plan's max_kv_rows: "
                        "plan with max_kv_rows >= the rows of k and v (device plan; nothing "
                        "was computed)", idx, val);
  case 12:
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "append_indptr[batch] = %d new tokens but k and v hold %d rows: pass "
                        "new K/V tensors of at least that many rows (device append; nothing "
                        "was written)", idx, val);
  case FI_SHARD_PEER_FAILED: /* shard.cu: a peer's header carries a failed run's status */
    return fi_set_error(ctx, FI_ERROR_COMM,
                        "sharded run: rank %d failed its run with %s (its own error tells why); "
                        "this rank's o and lse are NaN", idx, fi_status_string((fi_status)val));
  case FI_SHARD_MISMATCH:
    return fi_set_error(ctx, FI_ERROR_COMM,
                        "sharded run: rank %d ran a plan that differs in %s: every rank must run "
                        "the plan of the same step; this rank's o and lse are NaN", idx,
                        val >= 0 ? fi_shard_word_name(val) : "its header");
  case FI_SHARD_NO_UNIT:
    return fi_set_error(ctx, FI_ERROR_COMM,
                        "sharded run: query row %d has no merge unit on rank %d (the ranks' plans "
                        "disagree on the query rows); this rank's o and lse are NaN", val, idx);
  case 6:
    return fi_set_error(ctx, FI_ERROR_WORKSPACE_TOO_SMALL,
                        "fixed_split_size splits this batch into more work units than the "
                        "workspace's %d: use a larger fixed_split_size or a larger workspace "
                        "(device plan; nothing was computed)", val);
  }
  return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "device plan status %d", (int)st[0]);
}

/* The first set bit in [from, to) of a little-endian bit array, or -1. */
static int64_t first_set_bit(const uint8_t *bits, int64_t from, int64_t to) {
  int64_t i = from;
  while (i < to && (i & 7)) {
    if ((bits[i >> 3] >> (i & 7)) & 1) return i;
    ++i;
  }
  while (i + 64 <= to) { /* whole 8-byte words */
    uint64_t w;
    memcpy(&w, bits + (i >> 3), 8);
    if (w) break;
    i += 64;
  }
  for (; i < to; ++i)
    if ((bits[i >> 3] >> (i & 7)) & 1) return i;
  return -1;
}

/* The first clear bit in [from, to), or -1. */
static int64_t first_clear_bit(const uint8_t *bits, int64_t from, int64_t to) {
  int64_t i = from;
  while (i < to && (i & 7)) {
    if (!((bits[i >> 3] >> (i & 7)) & 1)) return i;
    ++i;
  }
  while (i + 64 <= to) {
    uint64_t w;
    memcpy(&w, bits + (i >> 3), 8);
    if (w != ~(uint64_t)0) break;
    i += 64;
  }
  for (; i < to; ++i)
    if (!((bits[i >> 3] >> (i & 7)) & 1)) return i;
  return -1;
}

/* The last set bit in [from, to), or -1. */
static int64_t last_set_bit(const uint8_t *bits, int64_t from, int64_t to) {
  int64_t i = to; /* one past the candidate */
  while (i > from && (i & 7)) {
    --i;
    if ((bits[i >> 3] >> (i & 7)) & 1) return i;
  }
  while (i - 64 >= from) {
    uint64_t w;
    memcpy(&w, bits + ((i - 64) >> 3), 8);
    if (w) break;
    i -= 64;
  }
  while (i > from) {
    --i;
    if ((bits[i >> 3] >> (i & 7)) & 1) return i;
  }
  return -1;
}

fi_status fi_plan_store_mask_extents(fi_context *ctx, const fi_plan_problem *pb,
                                     const fi_custom_mask *mask, fi_plan *plan) {
  plan->private_[FI_PLAN_OFF_MASK_EXTENT] = 0;
  plan->private_[FI_PLAN_FLAGS] &= ~(uint64_t)FI_PLAN_FLAG_MASK_RUNS;
  if (!mask || !mask->bits || !plan->workspace || !pb->qo_indptr) return FI_SUCCESS;
  caps k = caps_from_bytes(pb->family, &plan->params, &ctx->target, plan->workspace_bytes);
  const int64_t rows = pb->qo_indptr[pb->batch];
  if (rows <= 0 || rows > k.extents) return FI_SUCCESS;
  int32_t *ext = (int32_t *)fi_context_plan_scratch(ctx, (size_t)rows * 2 * sizeof(int32_t));
  if (!ext) return FI_ERROR_OUT_OF_MEMORY;
  int runs = 1; /* every row keeps one run of keys or none */
  for (int32_t i = 0; i < pb->batch; ++i) {
    const int64_t qo = fi_problem_qo_len(pb, i), kv = fi_problem_kv_len(pb, i);
    const int64_t row0 = pb->qo_indptr[i], base = mask->indptr[i];
    for (int64_t r = 0; r < qo; ++r) {
      const int64_t b = base + r * kv;
      const int64_t f = first_set_bit(mask->bits, b, b + kv);
      int32_t *e = ext + 2 * (row0 + r);
      if (f < 0) {
        e[0] = (int32_t)kv, e[1] = 0;
      } else {
        const int64_t l = last_set_bit(mask->bits, f, b + kv);
        /* a hole between the first and the last kept key: the end negated */
        const int holes = l > f && first_clear_bit(mask->bits, f, l) >= 0;
        runs &= !holes;
        e[0] = (int32_t)(f - b);
        e[1] = (int32_t)(holes ? -(l - b + 1) : l - b + 1);
      }
    }
  }
  fi_status s = fi_cuda_upload(ctx, (char *)plan->workspace + k.off_ext, ext,
                               (size_t)rows * 2 * sizeof(int32_t));
  if (s != FI_SUCCESS) return s;
  plan->private_[FI_PLAN_OFF_MASK_EXTENT] = k.off_ext;
  if (runs) plan->private_[FI_PLAN_FLAGS] |= FI_PLAN_FLAG_MASK_RUNS;
  return FI_SUCCESS;
}

size_t fi_plan_mask_extent_room(const fi_context *ctx, const fi_plan *plan,
                                int64_t *capacity) {
  *capacity = 0;
  if (!plan->workspace || plan->params.kv_shards > 0 || plan->total_qo_rows <= 0 ||
      (plan->family != FI_OP_PAGED_PREFILL && plan->family != FI_OP_RAGGED_PREFILL))
    return 0;
  caps k = caps_from_bytes(plan->family, &plan->params, &ctx->target, plan->workspace_bytes);
  if (plan->total_qo_rows > k.extents) return 0;
  *capacity = k.extents;
  return k.off_ext;
}

/* --------------------------------------------- block-sparse attention on CUDA ------- */

/* The warp-specialised prefill kernel walks 128 GQA-packed query rows at a time: 128 /
 * group whole tokens (prefill_ws.cuh). A block-sparse work unit is at most that many query
 * rows of one block row, so every row of a unit shares the block row's KV blocks. */
static int64_t bsr_unit_rows(const fi_attention_params *p, int32_t block_rows) {
  int64_t per_chunk = 128 / (p->num_qo_heads / p->num_kv_heads);
  if (per_chunk < 1) per_chunk = 1;
  return per_chunk < block_rows ? per_chunk : block_rows;
}

/* Bounds of one problem's layout, for blocks of at least R x C (uniform or variable):
 * units <= ceil(M / rows) + ceil(M / R) (a block row's last unit may be short), plus one
 * per partial row a split may add; tiles per unit: each run of adjacent blocks gives
 * floor(run / 128) full tiles, then at most one 64-key half and one shorter piece (each
 * paired with another run's of its kind), so at most ceil(N / 128) + (runs <= blocks) + 1.
 * Partial rows and merge units: the prefill planner's budget. */
typedef struct bsr_caps {
  int64_t units, tiles, partial;
  size_t off_merge, off_po, off_plse, off_bsr, total;
} bsr_caps;

enum { BSR_TILE_INTS = 4, BSR_HALF = 64, BSR_MIN_CHUNK_TILES = 2, BSR_MAX_CHUNKS = 16 };

static bsr_caps bsr_layout(const fi_attention_params *p, int64_t units, int64_t tiles,
                           int64_t partial) {
  bsr_caps k;
  k.units = units, k.tiles = tiles, k.partial = partial;
  k.off_merge = FI_PLAN_HEADER_BYTES + align_up((size_t)units * sizeof(fi_work_unit));
  k.off_po = k.off_merge + align_up((size_t)partial * sizeof(fi_merge_unit));
  k.off_plse = k.off_po + align_up((size_t)partial * row_o_bytes(p));
  k.off_bsr = k.off_plse + align_up((size_t)partial * row_lse_bytes(p));
  /* the request's indptrs {0, M, 0, N}, then the tiles: two halves of 64 keys each
   * {first key, keys kept} (prefill_ws.cuh) */
  k.total = k.off_bsr + (size_t)(4 + BSR_TILE_INTS * tiles) * sizeof(int32_t);
  return k;
}

static bsr_caps bsr_bounds(const fi_context *ctx, const fi_attention_params *p, int64_t m,
                           int64_t n, int32_t r, int32_t c) {
  /* (r and c are the smallest blocks: with variable blocks a column block may be longer
   * than c, so the bound counts runs, not blocks of c keys) */
  const int64_t rows = bsr_unit_rows(p, r), blocks = ceil_div(n, c);
  const int64_t per_unit = ceil_div(n, 128) + blocks + 1;
  const int64_t units = ceil_div(m, rows) + ceil_div(m, r);
  const int64_t partial = prefill_partial_budget(&ctx->target, p);
  /* (no bound past 2^60 bytes: tiny blocks over huge lengths) */
  if ((double)units * (double)per_unit * BSR_TILE_INTS * sizeof(int32_t) > 0x1p60) {
    bsr_caps none = {0};
    none.total = SIZE_MAX;
    return none;
  }
  return bsr_layout(p, units + partial, units * per_unit, partial);
}

/* SIZE_MAX when the bound does not fit in 2^60 bytes. */
size_t fi_plan_block_sparse_cuda_bytes(const fi_context *ctx, const fi_attention_params *p,
                                       int64_t m, int64_t n, int32_t block_rows,
                                       int32_t block_cols) {
  return bsr_bounds(ctx, p, m, n, block_rows, block_cols).total;
}

static int compare_bsr_units(const void *pa, const void *pb) {
  const fi_work_unit *a = (const fi_work_unit *)pa, *b = (const fi_work_unit *)pb;
  const int32_t ta = a->kv_end - a->kv_start, tb = b->kv_end - b->kv_start;
  if (ta != tb) return ta > tb ? -1 : 1; /* most tiles first: the scheduler balances */
  if (a->qo_start != b->qo_start) return a->qo_start < b->qo_start ? -1 : 1;
  return a->kv_start < b->kv_start ? -1 : a->kv_start > b->kv_start;
}

/* Appends tile {a, la, b, lb} at index t of tl (when tl is not NULL). */
static void bsr_tile(int32_t *tl, int64_t t, int64_t a, int64_t la, int64_t b, int64_t lb) {
  if (!tl) return;
  int32_t *x = tl + BSR_TILE_INTS * t;
  x[0] = (int32_t)a, x[1] = (int32_t)la, x[2] = (int32_t)b, x[3] = (int32_t)lb;
}

/* The units of the BSR matrix (one per <= rows_per_unit query rows of a block row) and
 * their tiles; counts only when work and tl are NULL. */
static void bsr_units(const fi_attention_params *params, int64_t m, int64_t n,
                      const fi_bsr_matrix *bsr, int32_t key_align, fi_work_unit *work,
                      int32_t *tl, int64_t *nu, int64_t *nt) {
  const int causal = params->mask_mode == FI_MASK_CAUSAL;
  const int64_t rows_per_unit = bsr_unit_rows(params, INT32_MAX), shift = n - m;
  int64_t u = 0, t = 0;
  for (int64_t i = 0; i < fi_bsr_num_block_rows(bsr, m); ++i) {
    const int64_t row_end = fi_bsr_row_begin(bsr, i + 1, m);
    for (int64_t r0 = fi_bsr_row_begin(bsr, i, m); r0 < row_end; r0 += rows_per_unit) {
      const int64_t r1 = r0 + rows_per_unit < row_end ? r0 + rows_per_unit : row_end;
      /* Keys some row of the unit may keep: causal ends at the last row's position, a
       * window starts at the first row's left edge (the kernel masks the rest). */
      int64_t lo = 0, hi = n;
      if (causal && shift + r1 < hi) hi = shift + r1;
      if (params->window_left >= 0 && shift + r0 - params->window_left > lo)
        lo = shift + r0 - params->window_left;
      const int64_t t_begin = t;
      /* A full half and a short piece (< 64 keys) waiting for a partner of their kind: full
       * halves pair into tiles the kernel neither masks nor zeroes V rows of (with blocks
       * that are not multiples of 64 keys, every run ends in a short piece). */
      int64_t full = -1, piece = -1, piece_len = 0;
      for (int64_t e = bsr->indptr[i]; e < bsr->indptr[i + 1];) {
        int64_t e_last = e; /* a run of adjacent blocks */
        while (e_last + 1 < bsr->indptr[i + 1] &&
               bsr->indices[e_last + 1] == bsr->indices[e_last] + 1)
          ++e_last;
        int64_t k0 = fi_bsr_col_begin(bsr, bsr->indices[e], n);
        int64_t k1 = fi_bsr_col_begin(bsr, (int64_t)bsr->indices[e_last] + 1, n);
        e = e_last + 1;
        if (k0 < lo) { /* (k0 is aligned: the rounded start stays inside the run) */
          const int64_t a = lo - lo % key_align;
          k0 = a > k0 ? a : k0;
        }
        if (k1 > hi) k1 = hi;
        /* Full tiles, then the rest: a full half paired with another run's, and a short
         * piece with another run's (two halves from their own first keys). */
        for (; k1 - k0 >= 2 * BSR_HALF; k0 += 2 * BSR_HALF)
          bsr_tile(tl, t++, k0, BSR_HALF, k0 + BSR_HALF, BSR_HALF);
        if (k1 - k0 >= BSR_HALF) {
          if (full < 0) {
            full = k0;
          } else {
            bsr_tile(tl, t++, full, BSR_HALF, k0, BSR_HALF);
            full = -1;
          }
          k0 += BSR_HALF;
        }
        if (k1 > k0 && piece < 0) {
          piece = k0, piece_len = k1 - k0;
        } else if (k1 > k0) {
          bsr_tile(tl, t++, piece, piece_len, k0, k1 - k0);
          piece = -1;
        }
      }
      if (full >= 0 && piece >= 0)
        bsr_tile(tl, t++, full, BSR_HALF, piece, piece_len);
      else if (full >= 0)
        bsr_tile(tl, t++, full, BSR_HALF, full, 0);
      else if (piece >= 0)
        bsr_tile(tl, t++, piece, piece_len, piece, 0);
      if (work) {
        fi_work_unit *w = &work[u];
        w->request = 0;
        w->qo_start = (int32_t)r0;
        w->qo_len = (int32_t)(r1 - r0);
        w->kv_start = (int32_t)t_begin;
        w->kv_end = (int32_t)t;
        w->partial_row = -1;
      }
      ++u;
    }
  }
  *nu = u, *nt = t;
}

fi_status fi_plan_build_block_sparse(fi_context *ctx, const fi_attention_params *params,
                                     int64_t m, int64_t n, const fi_bsr_matrix *bsr,
                                     int32_t key_align, fi_tiles tiles, void *workspace,
                                     size_t workspace_bytes, fi_plan *plan) {
  const int32_t R = bsr->block_rows, C = bsr->block_cols;
  int64_t nu = 0, nt = 0;
  bsr_units(params, m, n, bsr, key_align, NULL, NULL, &nu, &nt);
  if (nt > INT32_MAX / 4) /* (the kernel indexes the tiles' ints in int32) */
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "block-sparse attention: %lld KV tiles are more than the plan's "
                        "int32 tile list indexes; split the sequence", (long long)nt);
  const int64_t budget = prefill_partial_budget(&ctx->target, params);
  /* Scratch: the units, the units after splitting (<= nu + budget: a split adds fewer
   * units than partial rows), the merge units and the tile list. */
  char *scratch = (char *)fi_context_plan_scratch(
      ctx, (size_t)(2 * nu + budget) * sizeof(fi_work_unit) +
               (size_t)budget * sizeof(fi_merge_unit) +
               (size_t)(4 + BSR_TILE_INTS * nt) * sizeof(int32_t));
  if (!scratch) return FI_ERROR_OUT_OF_MEMORY;
  fi_work_unit *units = (fi_work_unit *)scratch, *work = units + nu;
  fi_merge_unit *merge = (fi_merge_unit *)(work + nu + budget);
  int32_t *region = (int32_t *)(merge + budget);
  region[0] = 0, region[1] = (int32_t)m, region[2] = 0, region[3] = (int32_t)n;
  bsr_units(params, m, n, bsr, key_align, units, region + 4, &nu, &nt);
  qsort(units, (size_t)nu, sizeof(fi_work_unit), compare_bsr_units);

  /* Split-KV across long rows (tiles.split_kv): while the (unit, KV head) items do not fill
   * the SMs, each unit's tiles are split into chunks of about one SM's fair share (all
   * items' tiles over the SMs), the count rounded to the nearest (at most BSR_MAX_CHUNKS,
   * each >= 2 tiles; fp32 partial rows merged in chunk order), longest units first, within
   * the partial-row budget. Rounded, not up: a unit of about one share stays whole, since
   * halving units that nearly fill one wave only makes two waves of halves plus the partial
   * rows and their merge (block-sparse 64 x 64 at 50 %, 512 x 65536, 16 units x 8 KV heads
   * on 132 SMs: split in two 565 us, whole 542 us; bench/NOTES.md). */
  const int64_t sms = target_sms(ctx);
  const int64_t items = nu * params->num_kv_heads;
  double share = 0; /* tiles per SM; 0: no split */
  if (tiles.split_kv && items > 0 && items < sms) {
    int64_t total_tiles = 0;
    for (int64_t i = 0; i < nu; ++i) total_tiles += units[i].kv_end - units[i].kv_start;
    share = (double)total_tiles * (double)params->num_kv_heads / (double)sms;
  }
  int64_t nw = 0, nm = 0, partial = 0;
  for (int64_t i = 0; i < nu; ++i) {
    const fi_work_unit *un = &units[i];
    const int64_t tl = un->kv_end - un->kv_start;
    int64_t chunks = share > 0 ? (int64_t)((double)tl / share + 0.5) : 1;
    if (chunks > BSR_MAX_CHUNKS) chunks = BSR_MAX_CHUNKS;
    if (chunks > tl / BSR_MIN_CHUNK_TILES) chunks = tl / BSR_MIN_CHUNK_TILES;
    if (chunks > 1 && partial + chunks * un->qo_len > budget) chunks = 1;
    if (chunks <= 1) {
      work[nw++] = *un;
      continue;
    }
    merge[nm].out_row = un->qo_start; /* the one request starts at row 0 */
    merge[nm].rows = un->qo_len;
    merge[nm].first_partial_row = (int32_t)partial;
    merge[nm].num_chunks = (int32_t)chunks;
    ++nm;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      fi_work_unit *w = &work[nw++];
      *w = *un;
      w->kv_start = (int32_t)(un->kv_start + tl * ch / chunks);
      w->kv_end = (int32_t)(un->kv_start + tl * (ch + 1) / chunks);
      w->partial_row = (int32_t)(partial + ch * un->qo_len);
    }
    partial += chunks * un->qo_len;
  }
  if (nm > 0) qsort(work, (size_t)nw, sizeof(fi_work_unit), compare_bsr_units);

  /* (laid out for the partial rows this plan uses: a plan without splits needs no room
   * for them; the size query reserves the budget) */
  const bsr_caps k = bsr_layout(params, nw, nt, partial);
  if (!workspace || workspace_bytes < k.total)
    return fi_set_error(ctx, FI_ERROR_WORKSPACE_TOO_SMALL,
                        "block-sparse attention: this BSR matrix needs a workspace of %zu "
                        "bytes (%lld work units, %lld KV tiles) but it has %zu: allocate "
                        "fi_block_sparse_workspace_size(M = %lld, N = %lld, %d x %d blocks)",
                        k.total, (long long)nw, (long long)nt,
                        workspace ? workspace_bytes : (size_t)0, (long long)m, (long long)n,
                        (int)R, (int)C);
  int32_t hdr[10] = {(int32_t)nw, (int32_t)nm, 0, 0, 0, 0, 0, 0, 1, 0};
  char *base = (char *)workspace;
  fi_status s = fi_cuda_upload(ctx, base, hdr, sizeof hdr);
  if (s == FI_SUCCESS && nw)
    s = fi_cuda_upload(ctx, base + FI_PLAN_HEADER_BYTES, work, (size_t)nw * sizeof(fi_work_unit));
  if (s == FI_SUCCESS && nm)
    s = fi_cuda_upload(ctx, base + k.off_merge, merge, (size_t)nm * sizeof(fi_merge_unit));
  if (s == FI_SUCCESS)
    s = fi_cuda_upload(ctx, base + k.off_bsr, region,
                       (size_t)(4 + BSR_TILE_INTS * nt) * sizeof(int32_t));
  if (s != FI_SUCCESS) return s;
  memset(plan, 0, sizeof *plan);
  plan->family = FI_OP_BLOCK_SPARSE;
  plan->tiles = tiles;
  plan->batch = 1;
  plan->num_work_units = (int32_t)nw;
  plan->num_partial_rows = (int32_t)partial;
  plan->params = *params;
  plan->total_qo_rows = m;
  plan->total_kv = n;
  plan->workspace = workspace;
  plan->workspace_bytes = workspace_bytes;
  plan->private_[FI_PLAN_OFF_WORK] = FI_PLAN_HEADER_BYTES;
  plan->private_[FI_PLAN_OFF_MERGE] = k.off_merge;
  plan->private_[FI_PLAN_OFF_PARTIAL_O] = k.off_po;
  plan->private_[FI_PLAN_OFF_PARTIAL_LSE] = k.off_plse;
  plan->private_[FI_PLAN_NUM_MERGE] = (uint64_t)nm;
  plan->private_[FI_PLAN_FLAGS] |= few_chunks_flag(merge, nm);
  plan->private_[FI_PLAN_OFF_BSR] = k.off_bsr;
  plan->private_[FI_PLAN_ROWS_PER_UNIT] =
      (uint64_t)bsr_unit_rows(params, bsr->row_offsets ? INT32_MAX : R);
  plan->private_[FI_PLAN_MAGIC] = FI_PLAN_MAGIC_VALUE | (uint64_t)ctx->backend;
  plan->private_[FI_PLAN_BSR_SHAPE] = fi_bsr_shape_key(bsr);
  plan->private_[FI_PLAN_BSR_WINDOW] = (uint64_t)(params->window_left + 1);
  return FI_SUCCESS;
}
