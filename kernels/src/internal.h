/* kernels/src/internal.h -- validation and planner entry points shared inside the runtime
 * (api.c calls them; the host backend and tests of the planner read their results through
 * fi_plan_get_layout). Not installed. */
#ifndef FI_KERNELS_INTERNAL_H
#define FI_KERNELS_INTERNAL_H

#include "context.h"
#include "fi/cuda_variants.h" /* fi_params_fit_wide_tile (fi_plan_fits_wide_tile) */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ validation ---------- */

/* Sizes, dtypes, mask / position modes, scalars. `paged` also checks page_size. */
fi_status fi_validate_params(fi_context *ctx, const fi_attention_params *p, int paged,
                             int allow_fp8_q);
/* indptr non-NULL, indptr[0] == 0, non-decreasing; *total = indptr[batch]. */
fi_status fi_validate_indptr(fi_context *ctx, const char *name, const int32_t *indptr,
                             int32_t batch, int64_t *total);
/* The CSR page table: indptr, page ids in [0, num_pages), last_page_len in 1..page_size;
 * *total_kv = sum of KV lengths. */
fi_status fi_validate_page_table(fi_context *ctx, const fi_page_table *pages, int32_t batch,
                                 int32_t page_size, int32_t num_pages, int64_t *total_kv);
/* Causal needs qo_len <= kv_len; custom needs mask bits and a mask indptr whose segments
 * are qo_len*kv_len bits. kv_len_of(i) comes from the problem. */
struct fi_plan_problem;
fi_status fi_validate_mask(fi_context *ctx, const fi_attention_params *p,
                           const struct fi_plan_problem *pb, const fi_custom_mask *mask);

/* A tensor argument: non-NULL, dtype, rank, shape (-1 in `shape` = any), innermost stride
 * 1, non-negative strides. `name` is the argument's name in messages. */
fi_status fi_validate_tensor(fi_context *ctx, const char *name, const fi_tensor *t,
                             fi_dtype dtype, int32_t rank, const int64_t *shape);
/* A BSR matrix of M query rows and N keys (fi_bsr_matrix's rules), naming the array, index
 * and value it rejects. */
fi_status fi_validate_bsr(fi_context *ctx, const fi_bsr_matrix *bsr, int64_t num_qo_rows,
                          int64_t num_kv_rows);
/* Decode pages of a multiple of 4 tokens that is not one of 16 (4, 8, 12, 24, 40,
 * ...): the warp-specialised decode kernel loads each 16-token sub-tile of them as 4 or 2
 * boxes of 4 or 8 rows (fi_decode_page_box_rows), so the planner chunks them on 16-token
 * boundaries that are also page boundaries (fi_decode_sub_tile_chunk). Pages of other
 * sizes run the per-warp kernels. */
static inline int fi_decode_several_boxes(int64_t page_size) {
  const int32_t rows = fi_decode_page_box_rows(page_size);
  return rows == 4 || rows == 8;
}
/* The chunk granularity of such pages: lcm(page_size, 16) tokens (16 for pages of 4 and 8,
 * 48 for 24 or 12, 80 for 40). */
static inline int64_t fi_decode_sub_tile_chunk(int64_t page_size) {
  return page_size * (16 / fi_decode_page_box_rows(page_size));
}

/* Whether a decode plan's chunks start on 16-token sub-tiles, which that kernel needs: pages
 * a multiple of 16, or loaded as several boxes unless a fixed split (rounded up to whole
 * pages, as the planner's chunk_granularity keeps it) is not a multiple of 16. */
static inline int fi_decode_chunks_on_sub_tiles(int64_t page_size, int64_t fixed_split_size) {
  if (page_size % 16 == 0) return 1;
  if (!fi_decode_several_boxes(page_size)) return 0;
  return fixed_split_size <= 0 ||
         (fixed_split_size + page_size - 1) / page_size * page_size % 16 == 0;
}

/* Heads of one KV head's group that one tensor-core decode CTA computes: the largest divisor
 * of the group up to 16. */
static inline int fi_decode_tc_heads_per_cta(int64_t group) {
  int64_t h = group < 16 ? group : 16;
  while (h > 1 && group % h != 0) --h;
  return h < 1 ? 1 : (int)h;
}

/* The plan-level conditions of the warp-specialised decode kernel (decode_tws.cuh), which
 * the launch (decode.cu) and the planner's split target (planner.c) share: 16-bit KV of q's
 * dtype at head_dim 64 or 128, or fp8 KV at 128; chunks on 16-token sub-tiles; at most 8
 * heads per CTA. */
static inline int fi_decode_tws_shape_ok(fi_dtype q_dtype, fi_dtype kv_dtype, int64_t head_dim,
                                         int64_t group, int64_t page_size,
                                         int64_t fixed_split_size) {
  const int fp8 = kv_dtype == FI_DTYPE_E4M3 || kv_dtype == FI_DTYPE_E5M2;
  const int kv_ok = fp8 ? head_dim == 128
                        : kv_dtype == q_dtype && (head_dim == 64 || head_dim == 128);
  return kv_ok && fi_decode_chunks_on_sub_tiles(page_size, fixed_split_size) &&
         fi_decode_tc_heads_per_cta(group) <= 8;
}

/* A BSR matrix's block rows and column blocks over M query rows and N keys, uniform or
 * variable (fi_bsr_matrix): their counts, and where block row i / column block j starts
 * (i == count gives M / N). */
static inline int64_t fi_bsr_num_block_rows(const fi_bsr_matrix *b, int64_t m) {
  return b->row_offsets ? b->num_block_rows : (m + b->block_rows - 1) / b->block_rows;
}
static inline int64_t fi_bsr_num_block_cols(const fi_bsr_matrix *b, int64_t n) {
  return b->col_offsets ? b->num_block_cols : (n + b->block_cols - 1) / b->block_cols;
}
static inline int64_t fi_bsr_row_begin(const fi_bsr_matrix *b, int64_t i, int64_t m) {
  if (b->row_offsets) return b->row_offsets[i];
  return i * b->block_rows < m ? i * b->block_rows : m;
}
static inline int64_t fi_bsr_col_begin(const fi_bsr_matrix *b, int64_t j, int64_t n) {
  if (b->col_offsets) return b->col_offsets[j];
  return j * b->block_cols < n ? j * b->block_cols : n;
}
/* The block shape a plan records (FI_PLAN_BSR_SHAPE): block_rows << 32 | block_cols, bit 63
 * for variable block rows, bit 31 for variable column blocks. */
static inline uint64_t fi_bsr_shape_key(const fi_bsr_matrix *b) {
  return (uint64_t)(uint32_t)b->block_rows << 32 | (uint32_t)b->block_cols |
         (b->row_offsets ? (uint64_t)1 << 63 : 0) | (b->col_offsets ? (uint64_t)1 << 31 : 0);
}
/* An output whose strides give two indices one element is refused (naming the stride). */
fi_status fi_validate_no_self_overlap(fi_context *ctx, const char *name, const fi_tensor *t);
/* An output whose bytes overlap an input's (a run reads the input while it writes the
 * output) is refused; NULL tensors pass. */
fi_status fi_validate_disjoint(fi_context *ctx, const char *out_name, const fi_tensor *out,
                               const char *in_name, const fi_tensor *in);
/* 1 when two tensors are the same view of the same memory (in-place merges). */
int fi_tensor_same_view(const fi_tensor *a, const fi_tensor *b);
/* Like fi_validate_tensor but dtype may be any of f16/bf16/f32. */
fi_status fi_validate_float_tensor(fi_context *ctx, const char *name, const fi_tensor *t,
                                   int32_t rank, const int64_t *shape);
/* The K/V cache for `params` with `num_pages` pages. */
fi_status fi_validate_kv_cache(fi_context *ctx, const fi_paged_kv_cache *kv,
                               const fi_attention_params *p, int32_t num_pages);

/* ---------------------------------------------------------------- planner --------- */

/* The index structure of one problem, as the planner sees it (host copies). */
typedef struct fi_plan_problem {
  fi_op_family family;
  int32_t batch;
  const int32_t *qo_indptr;     /* NULL: one query row per request (decode) */
  const int32_t *kv_indptr;     /* paged: page indptr; ragged: token indptr */
  const int32_t *last_page_len; /* paged: last page lengths; ragged: NULL */
  int32_t page_size;            /* paged: tokens per page; ragged: 1 */
} fi_plan_problem;

static inline int64_t fi_problem_qo_len(const fi_plan_problem *pb, int32_t i) {
  return pb->qo_indptr ? (int64_t)pb->qo_indptr[i + 1] - pb->qo_indptr[i] : 1;
}
static inline int64_t fi_problem_kv_len(const fi_plan_problem *pb, int32_t i) {
  int64_t n = (int64_t)pb->kv_indptr[i + 1] - pb->kv_indptr[i];
  if (!pb->last_page_len) return n;
  return n == 0 ? 0 : (int64_t)pb->page_size * (n - 1) + pb->last_page_len[i];
}

/* Work units a plan of `family` targets when it splits KV: enough CTAs (units x kv_heads)
 * for two per SM of ctx's target (decode: more, see planner.c). */
int32_t fi_plan_target_units_for(const fi_context *ctx, fi_op_family family,
                                 const fi_attention_params *p);

/* Exact decode workspace bytes for any problem of <= max_batch requests and
 * <= max_kv_tokens KV tokens in all (the bound a fixed split size needs). */
size_t fi_plan_decode_workspace_bytes_kv(const fi_context *ctx, const fi_attention_params *p,
                                         int32_t max_batch, int64_t max_kv_tokens);
/* Exact workspace bytes for any problem of `family` with <= max_batch requests and
 * <= max_qo_rows query rows (decode: ignored). */
size_t fi_plan_workspace_bytes(const fi_context *ctx, fi_op_family family,
                               const fi_attention_params *p, int32_t max_batch,
                               int64_t max_qo_rows);

/* Whether the CUDA warp-specialised prefill kernel's Q tiles pack a GQA group's rows across
 * tokens (prefill_ws.cuh): a group of at most 32 that does not divide 128, unless the
 * context's tuning prefill_rows_across is 0 (FI_PREFILL_WS_ROWS_ACROSS). */
static inline int fi_prefill_rows_across(const fi_context *ctx, int64_t group) {
  return ctx->tuning.prefill_rows_across != 0 && group > 0 && 128 % group != 0 && group <= 32;
}

/* The warp-specialised Hopper prefill kernel's long KV tile (prefill_ws.cuh, WsShape WIDE):
 * head_dim 128, 16-bit q, no extras but a soft cap or ALiBi (fi_params_fit_wide_tile), or a
 * custom mask of one run of keys per row (FI_PLAN_FLAG_MASK_RUNS); host plans with chosen
 * tiles take it on work units of at least FI_WS_WIDE_MIN_KV keys (causal or a custom mask:
 * FI_WS_WIDE_MIN_KV_CAUSAL; api.c choose_ws_layout). */
enum { FI_WS_WIDE_KV_TILE = 176, FI_WS_WIDE_MIN_KV = 4096, FI_WS_WIDE_MIN_KV_CAUSAL = 8192 };
/* The deep ring instead (FI_PLAN_FLAG_WS_DEEP, tiles kept at 128 x 128): requests of at most
 * FI_WS_DEEP_MAX_ROWS GQA-packed query rows over units of at least FI_WS_WIDE_MIN_KV keys,
 * K and V larger than FI_WS_DEEP_L2_TIMES times the L2 cache, over token rows or pages the
 * 176-key tile does not take (api.c choose_ws_layout). */
enum { FI_WS_DEEP_L2_TIMES = 2, FI_WS_DEEP_MAX_ROWS = 512 };

/* Whether `t` are the CUDA warp-specialised prefill kernel's tiles (prefill_ws.cuh): wgmma
 * 128 x 128 (head_dim 128 also 128 x FI_WS_WIDE_KV_TILE), and 128 x 64 at head_dim 256 (the
 * KV tile that fits its shared memory). */
static inline int fi_prefill_ws_tiles(const fi_attention_params *p, fi_tiles t) {
  return t.cores == FI_CORES_WGMMA && t.q_tile == 128 &&
         (t.kv_tile == (p->head_dim > 128 ? 64 : 128) ||
          (p->head_dim == 128 && t.kv_tile == FI_WS_WIDE_KV_TILE));
}

/* Units of one wave of CTAs (prefill plans on the warp-specialised kernel's tiles; else 0):
 * the chunk whose items fit it replaces the two-wave chunk when at most
 * fi_plan_one_wave_tenths / 10 times as long (planner.c). */
int64_t fi_plan_one_wave_units(const fi_context *ctx, fi_op_family family,
                               const fi_attention_params *p, fi_tiles tiles);
/* A split prefill plan's unit target for these tiles: fi_plan_target_units_for, or on the
 * persistent warp-specialised kernel's tiles two waves rounded down (planner.c). */
int64_t fi_plan_prefill_target_units(const fi_context *ctx, fi_op_family family,
                                     const fi_attention_params *p, fi_tiles tiles);
int64_t fi_plan_one_wave_tenths(const fi_context *ctx);

/* Query rows (tokens) per work unit of a plan of this family, params and tiles on `ctx`
 * (planner.c): decode 1; prefill q_tile / group, or whole tiles of rows across tokens where
 * the CUDA warp-specialised prefill kernel packs them so (fi_prefill_rows_across). */
int64_t fi_prefill_rows_per_unit(const fi_context *ctx, fi_op_family family,
                                 const fi_attention_params *params, fi_tiles tiles);

/* Builds the partition of `pb` for `tiles` and writes it into `workspace` (host: memcpy;
 * CUDA: fi_cuda_upload). Fills every field of `plan` except num_pages. */
fi_status fi_plan_build(fi_context *ctx, const fi_plan_problem *pb,
                        const fi_attention_params *params, fi_tiles tiles, void *workspace,
                        size_t workspace_bytes, fi_plan *plan);

/* A custom-mask prefill plan on CUDA: writes each query row's extent of kept keys
 * {first, last + 1} (relative to its request's KV; {kv_len, 0} for a row that keeps none;
 * the end negated when the row drops a key between its first and last kept ones)
 * into the workspace's extent region and records its offset in the plan, so that the
 * warp-specialised kernel loads no KV tile outside a chunk's extents. Leaves the plan
 * without extents (every tile computed, as before) when the region holds fewer pairs than
 * q has rows. */
fi_status fi_plan_store_mask_extents(fi_context *ctx, const fi_plan_problem *pb,
                                     const fi_custom_mask *mask, fi_plan *plan);

/* A custom-mask prefill plan made without the mask's bits (mask.bits NULL at plan: the
 * compiled plan steps) has no extents; the CUDA run computes them on the device into the
 * workspace's extent region. Its offset when the region holds a pair per query row of the
 * plan (*capacity: the pairs it holds), else 0. */
size_t fi_plan_mask_extent_room(const fi_context *ctx, const fi_plan *plan,
                                int64_t *capacity);

/* The message of a device planner's status record {code, index, value} (plan_device.cu's
 * PlanError codes): FI_SUCCESS for code 0, else the status with ctx's last error set. */
fi_status fi_device_plan_error(fi_context *ctx, const int32_t *status);

/* Private words of fi_plan. */
enum {
  FI_PLAN_OFF_WORK = 0,
  FI_PLAN_OFF_MERGE = 1,
  FI_PLAN_OFF_PARTIAL_O = 2,
  FI_PLAN_OFF_PARTIAL_LSE = 3,
  FI_PLAN_NUM_MERGE = 4,
  FI_PLAN_KV_CHUNK = 5,     /* split chunk in tokens, 0 = no split */
  FI_PLAN_ROWS_PER_UNIT = 6,
  FI_PLAN_MAGIC = 7,        /* FI_PLAN_MAGIC_VALUE | backend */
  FI_PLAN_LAUNCH_UNITS = 8, /* decode: the grid's unit slots (0: num_work_units) */
  FI_PLAN_FLAGS = 9,        /* FI_PLAN_FLAG_* */
  FI_PLAN_STATUS = 10,      /* append planned on the device: int32[4] device status or 0 */
  FI_PLAN_NUM_INDICES = 11, /* append planned on the device: elements of kv_indices */
  FI_PLAN_STATUS_MIRROR = 12, /* append planned on the device: ctx->plan_status_mirror */
  FI_PLAN_OFF_MASK_EXTENT = 13, /* custom-mask prefill on CUDA: offset of the query rows'
                                   kept-key extents in the workspace (0: none) */
  FI_PLAN_KV_ENTRIES = 14, /* paged prefill: page-table entries the plan may cover (host:
                              kv_indptr[batch]; device: num_indices), the stage's bound */
  FI_PLAN_BSR_SHAPE = 15,  /* block-sparse: block_rows << 32 | block_cols */
  FI_PLAN_CHECKSUM = 16, /* fi_plan_checksum of the rest, stored last by every plan function */
};
/* Block-sparse plans on CUDA have no mask extents: their slot holds the offset of the BSR
 * region (the one request's indptrs {0, M, 0, N}, then the KV tiles {first, end}). */
enum { FI_PLAN_OFF_BSR = FI_PLAN_OFF_MASK_EXTENT };
/* KV-sharded plans have neither: the BSR-shape slot holds the exchange counts agreed by
 * the ranks (merge units << 32 | partial rows; shard.h). */
enum { FI_PLAN_SHARD_COUNTS = FI_PLAN_BSR_SHAPE };
/* ... and they are never paged: the KV-entries slot holds the window_left + 1 their tiles
 * were clipped to (0: no window), which a run may narrow but not widen. */
enum { FI_PLAN_BSR_WINDOW = FI_PLAN_KV_ENTRIES };

/* Block-sparse attention on CUDA (fi_block_sparse_plan): work units of at most 128 / group
 * query rows inside one block row, each with its list of KV tiles of two 64-key halves
 * (runs of adjacent listed blocks cut into 128 keys, the 64-key halves and the shorter
 * pieces left over each paired with their kind; causal and window applied; uniform or
 * variable blocks), most tiles first; units split along their tiles
 * (merged like split-KV prefill) while the units alone do not fill the SMs; the workspace
 * size that bounds every matrix of these shapes. key_align (paged K/V: the kernel's page
 * box; 1 otherwise): a window's clipped start is rounded down to it (the kernel masks the
 * keys between), so that every half starts where a listed block does or 64 keys on. */
fi_status fi_plan_build_block_sparse(fi_context *ctx, const fi_attention_params *params,
                                     int64_t m, int64_t n, const fi_bsr_matrix *bsr,
                                     int32_t key_align, fi_tiles tiles, void *workspace,
                                     size_t workspace_bytes, fi_plan *plan);
size_t fi_plan_block_sparse_cuda_bytes(const fi_context *ctx, const fi_attention_params *p,
                                       int64_t m, int64_t n, int32_t block_rows,
                                       int32_t block_cols);

/* A hash of everything a run trusts in a plan: the public counts and workspace, the shape
 * parameters (heads, head_dim, page size, dtypes, mask mode; not the per-run attributes the
 * compiled code's adapters set on their copy) and the private words before it. Every plan function
 * stores it last; every run refuses a plan whose fields no longer match it. */
uint64_t fi_plan_checksum(const fi_plan *plan);

/* 1 when a prefill with these params reaches the warp-specialised kernel only through the
 * stage pass (kernels/cuda/prefill_stage.cu): RoPE, fp8 KV or (paged) a page size that is
 * not a multiple of 16. */
int fi_prefill_needs_stage(const fi_attention_params *p, int paged);
/* Where the stage pass puts a run's staged K and V in the context's prefill stage: byte
 * offsets (SIZE_MAX: not staged) and the total (0: the run needs no stage, or cannot take
 * the warp-specialised kernel anyway). Staged: K whenever a stage is needed; V with fp8 KV
 * or odd pages (Q never: the kernel rotates it as it lands). kv_rows: rows of k (ragged),
 * page-table entries times the page size (paged). */
typedef struct fi_stage_layout {
  size_t k, v, total;
} fi_stage_layout;
fi_stage_layout fi_prefill_stage_layout(const fi_context *ctx, const fi_attention_params *p,
                                        int paged, int64_t kv_rows);
/* 1 when a paged block-sparse run may take the stage pass without needing it: pages that
 * are a multiple of 16 but not of 64, which the kernel otherwise loads in page boxes of
 * 16 or 32 rows (the largest power of two dividing the page); as token rows (K and V
 * staged) they run faster (bench/NOTES.md, "v19 -- staged pages"), so the run takes the
 * stage when the context holds one. (Boxes of 64 rows stay: the stage's O(N) copy costs a
 * sparse run more than it saves.) */
int fi_bsr_stage_optional(const fi_attention_params *p, int paged);
/* fi_prefill_stage_layout of a paged block-sparse run: the same, and for
 * fi_bsr_stage_optional pages, K and V as token rows. */
fi_stage_layout fi_bsr_stage_layout(const fi_context *ctx, const fi_attention_params *p,
                                    int paged, int64_t kv_rows);
/* fp8 attention's V^T in the stage (layout.v): [kv heads][head_dim][pitch] bytes, the pitch
 * kv_rows rounded up to the stage pass's 128-row tiles; K (paged only, layout.k) as e4m3
 * token rows. */
static inline int64_t fi_fp8_vt_pitch(int64_t kv_rows) {
  return ((kv_rows > 0 ? kv_rows : 1) + 127) / 128 * 128;
}
enum {
  FI_PLAN_FLAG_DEVICE = 1, /* made by the device planner: counts live on the device */
  /* The warp-specialised prefill kernel runs this plan's 128 x 128 tiles with one Q slot and
   * three K/V stages (prefill_ws.cuh, WsShape DEEP): host plans whose units stream K/V
   * from DRAM (api.c choose_ws_layout). The same numbers as the two-slot layout, bit for
   * bit, so device plans (which never set it) still match host plans exactly. */
  FI_PLAN_FLAG_WS_DEEP = 2,
  /* Every split-KV merge unit of this host plan has at most FI_MERGE_FEW_CHUNKS chunks: its
   * merge runs a warp per (row, head) (merge.cu, unless the merge_warps knob is 0; the same bits
   * as the block-per-row form that device plans, whose units only the device knows, run). */
  FI_PLAN_FLAG_FEW_CHUNKS = 4,
  /* Every output row of this host plan is some merge unit's (the plan splits every row):
   * fi_prefill_merge_run folds another state into the split merge alone (merge.cu). */
  FI_PLAN_FLAG_SPLITS_ALL = 8,
  /* This host plan's custom mask keeps one run of keys (or none) in every query row, and
   * the plan's extents in the workspace say which (fi_plan_store_mask_extents): the
   * warp-specialised kernel's 176-key tile runs it from those extents, reading no bits
   * (api.c choose_ws_layout, prefill.cu). */
  FI_PLAN_FLAG_MASK_RUNS = 16
};
/* 1 when a run with parameters `p` of this plan may keep its 176-key tiles: the tile runs
 * these scores (fi_params_fit_wide_tile), or a custom mask alone whose every row the plan
 * found to keep one run of keys (FI_PLAN_FLAG_MASK_RUNS: set only with the rows' extents
 * stored, which the kernel then applies as the mask). */
static inline int fi_plan_fits_wide_tile(const fi_plan *plan, const fi_attention_params *p) {
  return fi_params_fit_wide_tile(p) ||
         ((plan->private_[FI_PLAN_FLAGS] & FI_PLAN_FLAG_MASK_RUNS) != 0 &&
          fi_params_fit_wide_tile_mask_runs(p));
}
enum { FI_MERGE_FEW_CHUNKS = 16 };

/* The decode grid's unit slots, the same for a host and a device plan of one problem (so
 * that both launch identical kernels and their outputs are bit-identical): the batch when
 * no split can happen, the target when the automatic split may split, the workspace's
 * unit capacity with a fixed split size (so one workspace gives both the same grid). */
int64_t fi_plan_decode_launch_units(const fi_context *ctx, const fi_attention_params *p,
                                    fi_tiles tiles, int32_t batch, int64_t cap_units);

/* What the device planner needs beyond the arrays: capacities of the workspace, the unit
 * target and the split rule; fills `plan` like fi_plan_build except the counts (the
 * device writes them). Decode and prefill; max_qo_rows: the rows of q (prefill). */
fi_status fi_plan_prepare_device(fi_context *ctx, const fi_plan_problem *pb,
                                 const fi_attention_params *params, fi_tiles tiles,
                                 int64_t max_qo_rows, void *workspace, size_t workspace_bytes,
                                 fi_plan *plan, fi_cuda_device_plan_caps *caps);
#define FI_PLAN_MAGIC_VALUE 0x46495f504c414e00ULL /* "FI_PLAN\0" */

#ifdef __cplusplus
}
#endif
#endif
