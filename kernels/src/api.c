/* kernels/src/api.c -- the public plan / run entry points: every argument is validated
 * here (so backends trust their inputs), then the call is dispatched to the context's
 * backend. */
#include <string.h>

#include "fi/cuda_variants.h"
#include "internal.h"
#include "shard.h"

#define CHECK(expr)                                                                        \
  do {                                                                                     \
    fi_status check_status_ = (expr);                                                      \
    if (check_status_ != FI_SUCCESS) return check_status_;                                 \
  } while (0)

#define NEED_CTX(ctx)                                                                      \
  do {                                                                                     \
    if (!(ctx))                                                                            \
      return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,                                 \
                          "ctx is NULL: create one with fi_context_create or use "         \
                          "fi_default_context()");                                         \
  } while (0)

static const char *family_name(fi_op_family f) {
  switch (f) {
  case FI_OP_DECODE: return "decode";
  case FI_OP_PAGED_PREFILL: return "paged prefill";
  case FI_OP_RAGGED_PREFILL: return "ragged prefill";
  case FI_OP_APPEND_PAGED_KV: return "append paged kv";
  case FI_OP_BLOCK_SPARSE: return "block-sparse attention";
  }
  return "unknown";
}

/* ------------------------------------------------------------ workspace sizes ----- */

fi_status fi_decode_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                   int32_t max_batch, size_t *bytes) {
  NEED_CTX(ctx);
  CHECK(fi_validate_params(ctx, params, 1, 0));
  if (max_batch < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "max_batch = %d: must be >= 0",
                        (int)max_batch);
  if (!bytes) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  if (params->fixed_split_size > 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.fixed_split_size = %d: a fixed split makes work units in "
                        "proportion to the KV length, which max_batch does not bound; size "
                        "the workspace with fi_decode_workspace_size_kv (max_kv_tokens)",
                        (int)params->fixed_split_size);
  *bytes = fi_plan_workspace_bytes(ctx, FI_OP_DECODE, params, max_batch, max_batch);
  return FI_SUCCESS;
}

fi_status fi_decode_workspace_size_kv(fi_context *ctx, const fi_attention_params *params,
                                      int32_t max_batch, int64_t max_kv_tokens, size_t *bytes) {
  NEED_CTX(ctx);
  CHECK(fi_validate_params(ctx, params, 1, 0));
  if (max_batch < 0 || max_kv_tokens < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "max_batch = %d, max_kv_tokens = %lld: both must be >= 0",
                        (int)max_batch, (long long)max_kv_tokens);
  if (!bytes) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = fi_plan_decode_workspace_bytes_kv(ctx, params, max_batch, max_kv_tokens);
  return FI_SUCCESS;
}

fi_status fi_prefill_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                    int32_t max_batch, int64_t max_qo_rows, size_t *bytes) {
  NEED_CTX(ctx);
  CHECK(fi_validate_params(ctx, params, 0, 1));
  if (max_batch < 0 || max_qo_rows < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "max_batch = %d, max_qo_rows = %lld: both must be >= 0",
                        (int)max_batch, (long long)max_qo_rows);
  if (!bytes) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = fi_plan_workspace_bytes(ctx, FI_OP_PAGED_PREFILL, params, max_batch,
                                   max_qo_rows);
  return FI_SUCCESS;
}

fi_status fi_block_sparse_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                        int64_t max_qo_rows, int64_t max_kv_rows,
                                        int32_t block_rows, int32_t block_cols,
                                        size_t *bytes) {
  NEED_CTX(ctx);
  CHECK(fi_validate_params(ctx, params, 0, 0));
  if (max_qo_rows < 0 || max_kv_rows < 0 || max_qo_rows > INT32_MAX || max_kv_rows > INT32_MAX)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "max_qo_rows = %lld, max_kv_rows = %lld: each must be in [0, 2^31)",
                        (long long)max_qo_rows, (long long)max_kv_rows);
  if (block_rows < 1 || block_cols < 1)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "block_rows = %d, block_cols = %d: both must be >= 1", (int)block_rows,
                        (int)block_cols);
  if (!bytes) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = ctx->backend == FI_BACKEND_CUDA
               ? fi_plan_block_sparse_cuda_bytes(ctx, params, max_qo_rows, max_kv_rows,
                                                 block_rows, block_cols)
               : fi_plan_workspace_bytes(ctx, FI_OP_RAGGED_PREFILL, params, 1, max_qo_rows);
  if (*bytes == SIZE_MAX)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "block-sparse attention of %lld x %lld keys in %d x %d blocks needs a "
                        "workspace beyond 2^60 bytes: use larger blocks or split the sequence",
                        (long long)max_qo_rows, (long long)max_kv_rows, (int)block_rows,
                        (int)block_cols);
  return FI_SUCCESS;
}

fi_status fi_prefill_stage_size(fi_context *ctx, const fi_attention_params *params,
                                int32_t paged, int64_t max_qo_rows, int64_t max_kv_rows,
                                size_t *bytes) {
  NEED_CTX(ctx);
  CHECK(fi_validate_params(ctx, params, paged != 0, 1));
  if (max_qo_rows < 0 || max_kv_rows < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "max_qo_rows = %lld, max_kv_rows = %lld: both must be >= 0",
                        (long long)max_qo_rows, (long long)max_kv_rows);
  if (!bytes) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = fi_prefill_stage_layout(ctx, params, paged != 0, max_kv_rows).total;
  return FI_SUCCESS;
}

fi_status fi_block_sparse_stage_size(fi_context *ctx, const fi_attention_params *params,
                                     int64_t max_kv_rows, size_t *bytes) {
  NEED_CTX(ctx);
  CHECK(fi_validate_params(ctx, params, 1, 1));
  if (max_kv_rows < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "max_kv_rows = %lld: must be >= 0",
                        (long long)max_kv_rows);
  if (!bytes) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = fi_bsr_stage_layout(ctx, params, 1, max_kv_rows).total;
  return FI_SUCCESS;
}

/* ------------------------------------------------------------------- plans -------- */

uint64_t fi_plan_checksum(const fi_plan *plan) {
  /* A word at a time (each run checks it): multiply by an odd constant, fold the high half
   * down, so that a change in any bit of any field reaches the result. */
  uint64_t h = 1469598103934665603ull;
#define FI_MIX(v)                                       \
  do {                                                  \
    h = (h ^ (uint64_t)(v)) * 0x9e3779b97f4a7c15ull;    \
    h ^= h >> 32;                                       \
  } while (0)
  FI_MIX(plan->family);
  FI_MIX(plan->tiles.q_tile);
  FI_MIX(plan->tiles.kv_tile);
  FI_MIX(plan->tiles.split_kv);
  FI_MIX(plan->tiles.cores);
  FI_MIX(plan->batch);
  FI_MIX(plan->num_work_units);
  FI_MIX(plan->num_partial_rows);
  FI_MIX(plan->total_qo_rows);
  FI_MIX(plan->total_kv);
  FI_MIX(plan->num_pages);
  FI_MIX((uintptr_t)plan->workspace);
  FI_MIX(plan->workspace_bytes);
  const fi_attention_params *p = &plan->params;
  FI_MIX(p->num_qo_heads);
  FI_MIX(p->num_kv_heads);
  FI_MIX(p->head_dim);
  FI_MIX(p->page_size);
  FI_MIX(p->q_dtype);
  FI_MIX(p->kv_dtype);
  FI_MIX(p->o_dtype);
  FI_MIX(p->mask_mode);
  FI_MIX(p->kv_shards);
  for (int i = 0; i < FI_PLAN_CHECKSUM; ++i) FI_MIX(plan->private_[i]);
#undef FI_MIX
  return h;
}

/* Stores the checksum of a plan that `status` says was made. */
static fi_status seal(fi_plan *plan, fi_status status) {
  if (status == FI_SUCCESS) plan->private_[FI_PLAN_CHECKSUM] = fi_plan_checksum(plan);
  return status;
}

static int one_of(int32_t v, const int32_t *set, int n) {
  for (int i = 0; i < n; ++i)
    if (set[i] == v) return 1;
  return 0;
}

static fi_status check_forced_tiles(fi_context *ctx, const fi_tiles *t, int decode) {
  static const int32_t q_tiles[] = {1, 16, 32, 64, 128};
  static const int32_t kv_tiles[] = {16, 32, 64, 128};
  if (t->kv_tile == FI_WS_WIDE_KV_TILE &&
      (decode || t->q_tile != 128 || t->cores != FI_CORES_WGMMA))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "tiles {q_tile %d, kv_tile %d, cores %d}: kv_tile %d is the "
                        "warp-specialised Hopper prefill kernel's (q_tile 128, cores 2 (wgmma)); "
                        "pass those or kv_tile 128", (int)t->q_tile, (int)t->kv_tile,
                        (int)t->cores, FI_WS_WIDE_KV_TILE);
  if (!one_of(t->q_tile, q_tiles, 5) ||
      !(one_of(t->kv_tile, kv_tiles, 4) || t->kv_tile == FI_WS_WIDE_KV_TILE) ||
      (t->split_kv != 0 && t->split_kv != 1) ||
      (t->cores != FI_CORES_CUDA && t->cores != FI_CORES_TENSOR &&
       (decode || t->cores != FI_CORES_WGMMA)) ||
      (!decode && t->q_tile == 1))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "tiles {q_tile %d, kv_tile %d, split_kv %d, cores %d}: no such %s "
                        "variant (q_tile in {%s16,32,64,128}, kv_tile in {16,32,64,128} or "
                        "176 (prefill, wgmma), "
                        "split_kv 0/1, cores 0 (cuda), 1 (tensor)%s)", (int)t->q_tile,
                        (int)t->kv_tile, (int)t->split_kv, (int)t->cores,
                        decode ? "decode" : "prefill", decode ? "1," : "",
                        decode ? "" : " or 2 (wgmma)");
  return FI_SUCCESS;
}

/* fast_path (prefill): the warp-specialised Hopper kernel can take the run, directly (16-bit
 * KV of q's type, no RoPE, pages a multiple of 16) or through the stage pass when the
 * context has a prefill stage (fi_context_set_prefill_stage). */
static fi_tile_problem tile_problem(const fi_context *ctx, const fi_attention_params *p,
                                    int32_t batch, int64_t total_qo, int64_t total_kv,
                                    int paged) {
  fi_tile_problem tp = {0}; /* (fields added later read 0: heuristics.h) */
  tp.batch = batch;
  tp.num_qo_heads = p->num_qo_heads;
  tp.num_kv_heads = p->num_kv_heads;
  tp.head_dim = p->head_dim;
  tp.q_dtype_bytes = (int32_t)fi_dtype_size(p->q_dtype);
  tp.kv_dtype_bytes = (int32_t)fi_dtype_size(p->kv_dtype);
  tp.avg_qo_len = batch > 0 ? (total_qo + batch - 1) / batch : 0;
  tp.avg_kv_len = batch > 0 ? (total_kv + batch - 1) / batch : 0;
  tp.fast_path = (p->kv_dtype == p->q_dtype && p->pos_encoding != FI_POS_ROPE_LLAMA &&
                  (!paged || p->page_size % 16 == 0)) ||
                 (ctx->prefill_stage_bytes > 0 &&
                  fi_prefill_stage_layout(ctx, p, paged, 1).total > 0);
  tp.variant = 0; /* (decode: select_decode_tiles) */
  tp.page_size = 0; /* (decode: select_decode_tiles) */
  return tp;
}

/* The heuristics' decode choice for this context: the decode fast path is the
 * warp-specialised kernel's (pages it loads in boxes, fi_decode_page_box_rows: a multiple
 * of 4 tokens; 16-bit KV of q's dtype, or fp8 KV; RoPE included), which only a runtime
 * with sm_90a code on a Hopper device, the kernel not turned off, can launch. */
static fi_tiles select_decode_tiles(const fi_context *ctx, const fi_attention_params *p,
                                    fi_tile_problem *tp) {
  const int fp8_kv = p->kv_dtype == FI_DTYPE_E4M3 || p->kv_dtype == FI_DTYPE_E5M2;
  tp->fast_path = fi_decode_page_box_rows(p->page_size) != 0 &&
                  (p->q_dtype == FI_DTYPE_F16 || p->q_dtype == FI_DTYPE_BF16) &&
                  (fp8_kv || p->kv_dtype == p->q_dtype);
  fi_target t = ctx->target;
  if (ctx->backend == FI_BACKEND_CUDA && (!ctx->wgmma_available || ctx->tuning.warp_spec == 0))
    t.sm_version = 80;
  const fi_variant *v = p->variant;
  tp->variant = ctx->backend == FI_BACKEND_CUDA && v && (v->score_mod || v->mask_mod);
  tp->page_size = p->page_size;
  tp->rope = p->pos_encoding == FI_POS_ROPE_LLAMA;
  fi_tiles tiles = fi_select_decode_tiles(&t, tp);
  /* (the planner still splits only where the unsplit units are fewer than its target) */
  if (ctx->tuning.decode_split == 0 || ctx->tuning.decode_split == 1)
    tiles.split_kv = ctx->tuning.decode_split;
  return tiles;
}

/* The heuristics' prefill choice for this context: a device or build without the Hopper tier
 * (see fi_context.wgmma_available) is planned as a non-Hopper one, so that a plan never
 * needs a variant this runtime cannot launch. */
static fi_tiles select_prefill_tiles(const fi_context *ctx, const fi_tile_problem *tp) {
  fi_target t = ctx->target;
  if (!ctx->wgmma_available && t.sm_version == 90) t.sm_version = 80;
  return fi_select_prefill_tiles(&t, tp);
}

static fi_status finish_plan(fi_context *ctx, const fi_plan_problem *pb,
                             const fi_attention_params *params, const fi_tiles *forced,
                             fi_tiles chosen, void *workspace, size_t workspace_bytes,
                             int32_t num_pages, fi_plan *plan) {
  fi_tiles tiles = chosen;
  if (forced) {
    CHECK(check_forced_tiles(ctx, forced, pb->family == FI_OP_DECODE));
    tiles = *forced;
  }
  if (ctx->backend == FI_BACKEND_CUDA)
    CHECK(fi_cuda_check_supported(ctx, pb->family, params, &tiles));
  CHECK(fi_plan_build(ctx, pb, params, tiles, workspace, workspace_bytes, plan));
  plan->num_pages = num_pages;
  return FI_SUCCESS;
}

/* The warp-specialised kernel's layout for a host prefill plan at head_dim 128, 16-bit q,
 * without extras but a soft cap or ALiBi (prefill_ws.cuh WsShape), from its work units' KV length
 * (the plan's split chunk; a fixed split: that alone, so results stay batch-invariant; or
 * the mean KV length) and its requests' mean query rows (GQA-packed).
 *   - A few query tiles per request (at most FI_WS_DEEP_MAX_ROWS rows) over units of at
 *     least FI_WS_WIDE_MIN_KV keys, with K and V of more than FI_WS_DEEP_L2_TIMES times the
 *     L2 cache: each K/V tile is read by few CTAs and streams from DRAM, not from L2. Then
 *     128 x 128 tiles with the deep ring (one Q slot, three stages; FI_PLAN_FLAG_WS_DEEP),
 *     except over pages that the 176-key tile (below) takes, which widen instead.
 *     Measured on H200s (bench/NOTES.md, session 45): the shared prefix's 64 queries (256
 *     rows) over 32768 keys (134 MB) 74 us against 85 with 176-key tiles and 85.5 with the
 *     two-slot ring; long causal sequences (1-2 requests of 16k-64k tokens, K/V 134-268 MB,
 *     mostly re-read from L2) 1-4 % slower than with 176 keys (hence the rows' rule); 2048
 *     rows over 4096 keys: consecutive pages 5-14 % faster, shuffled pages up to 4 % slower;
 *     units of 512 keys 2-6 % slower (one Q slot: hence the length rule). Since then the
 *     176-key tile gained its own order (V released at the next S, the row maxima first):
 *     on H100s (session 71) it beat the deep ring over the prefix's pages of 16 (80.3-81.9
 *     against 84.9-85.6 us in the shared-prefix step's lane of 112 SMs; the step 1-4 us
 *     faster), while over token rows the deep ring still won (69-73 against 74.6-77.2 us).
 *   - Otherwise, with no tiles given: 128 x FI_WS_WIDE_KV_TILE (176 keys, FA3's non-causal
 *     tile) on units of at least FI_WS_WIDE_MIN_KV keys (causal: FI_WS_WIDE_MIN_KV_CAUSAL;
 *     session 43: without a mask 3.5-5 % faster on units of 8192 keys and more, the same at
 *     4096, 3 % slower at 2048 and 11 % at 512; causal 3 % faster at 8192 and 16384, 1-15 %
 *     slower on shorter rows), token rows or pages of 16. A soft-capped or ALiBi plan (not
 *     both), or one whose custom mask keeps one run of keys in every row (FI_PLAN_FLAG_MASK_RUNS,
 *     the causal length rule) takes this rule alone (the deep ring's instance has no extras;
 *     session 65: the soft cap on 176 keys 1.00-1.03x the 128-key tile on (1, 8192) and
 *     (2, 8192), the same on (1, 16384); ALiBi and masks: bench/NOTES.md, session 75).
 * The plan records both (the tile in its tiles: a device plan made with them runs the same
 * kernel, bit-identical; the deep ring computes the same numbers as the two-slot one, so
 * device plans, which never take it, still match). Tuning prefill_ws_deep (A / B runs,
 * tests): 0 never deep (widened as by the second rule alone), 1 deep on every such plan that
 * the second rule leaves at 128 x 128. */
static void choose_ws_layout(const fi_context *ctx, const fi_attention_params *p, int paged,
                             int tiles_given, fi_plan *plan) {
  const fi_tiles t = plan->tiles;
  const int sixteen_bit = p->q_dtype == FI_DTYPE_F16 || p->q_dtype == FI_DTYPE_BF16;
  /* (a custom mask only where every row keeps one run of keys: mask_extents ran first) */
  if (ctx->backend != FI_BACKEND_CUDA || !ctx->wgmma_available ||
      ctx->tuning.prefill_warp_spec == 0 || t.cores != FI_CORES_WGMMA ||
      t.q_tile != 128 || t.kv_tile != 128 || p->head_dim != 128 || !sixteen_bit ||
      !fi_plan_fits_wide_tile(plan, p) || p->kv_shards > 0 || p->num_kv_heads <= 0 ||
      p->num_qo_heads / p->num_kv_heads > 128)
    return;
  const int64_t chunk = (int64_t)plan->private_[FI_PLAN_KV_CHUNK];
  const int64_t mean_kv = plan->batch > 0 ? plan->total_kv / plan->batch : 0;
  const int64_t unit_kv = p->fixed_split_size > 0 ? chunk
                          : chunk > 0 && chunk < mean_kv ? chunk
                                                         : mean_kv;
  const double kv_bytes = (double)plan->total_kv * p->num_kv_heads * p->head_dim * 2 * 2;
  const int64_t group = p->num_qo_heads / p->num_kv_heads;
  const int64_t rows = plan->batch > 0 ? plan->total_qo_rows * group / plan->batch : 0;
  const int widens =
      !tiles_given && !(paged && p->page_size % 16 == 0 && p->page_size != 16) &&
      unit_kv >= (p->mask_mode != FI_MASK_NONE ? FI_WS_WIDE_MIN_KV_CAUSAL : FI_WS_WIDE_MIN_KV);
  const int deep_rule = !(paged && widens) && unit_kv >= FI_WS_WIDE_MIN_KV &&
                        rows <= FI_WS_DEEP_MAX_ROWS && ctx->l2_bytes > 0 &&
                        kv_bytes > (double)FI_WS_DEEP_L2_TIMES * (double)ctx->l2_bytes;
  const int by_rule = ctx->tuning.prefill_ws_deep < 0;
  /* (the deep ring's instance has no extras: a soft-capped, ALiBi or masked plan widens or
   * stays) */
  const int scored = fi_params_modify_scores(p);
  const int deep = !scored && (by_rule ? deep_rule : ctx->tuning.prefill_ws_deep > 0);
  if ((scored || !(by_rule && deep_rule)) && widens) {
    plan->tiles.kv_tile = FI_WS_WIDE_KV_TILE;
    return;
  }
  if (deep) plan->private_[FI_PLAN_FLAGS] |= FI_PLAN_FLAG_WS_DEEP;
}

/* A custom-mask prefill on CUDA: the query rows' kept-key extents for the kernel. */
static fi_status mask_extents(fi_context *ctx, const fi_plan_problem *pb,
                              const fi_attention_params *params, const fi_custom_mask *mask,
                              fi_plan *plan) {
  if (ctx->backend != FI_BACKEND_CUDA || params->mask_mode != FI_MASK_CUSTOM) return FI_SUCCESS;
  return fi_plan_store_mask_extents(ctx, pb, mask, plan);
}

/* What every attention plan checks first: the plan pointer, the parameters (paged: the
 * page size too), a sharded KV (`sharded`: the family of a plan function that takes one,
 * 0 for the others) and the batch size. */
static fi_status check_plan_args(fi_context *ctx, fi_plan *plan,
                                 const fi_attention_params *params, int paged, int32_t batch,
                                 fi_op_family sharded, int decode) {
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  CHECK(fi_validate_params(ctx, params, paged, !decode));
  if (params->kv_shards != 0 && !sharded)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "params.kv_shards = %d: a sharded KV is planned by fi_decode_plan or "
                        "fi_paged_prefill_plan (host plans: the plan exchanges a signature "
                        "between the ranks), not by this plan function",
                        (int)params->kv_shards);
  if (sharded) CHECK(fi_shard_check_params(ctx, params, sharded));
  if (batch < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "batch = %d: must be >= 0",
                        (int)batch);
  return FI_SUCCESS;
}

/* What a decode plan checks wherever it is made (host or device). */
static fi_status check_decode_plan_args(fi_context *ctx, fi_plan *plan,
                                        const fi_attention_params *params, int32_t batch,
                                        int host) {
  CHECK(check_plan_args(ctx, plan, params, 1, batch, host ? FI_OP_DECODE : 0, 1));
  if (params->mask_mode == FI_MASK_CUSTOM)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.mask_mode is FI_MASK_CUSTOM but decode takes no mask: use "
                        "fi_paged_prefill_* with one query row per request");
  return FI_SUCCESS;
}

/* A sharded plan: the ranks' signature exchange, whatever the local result `s` was
 * (api.c's plan functions clear the plan first, so that a failed one says nothing). */
static int sharded_plan(const fi_attention_params *params, const fi_plan *plan) {
  return params && params->kv_shards > 0 && plan;
}
static fi_status agree_sharded(fi_context *ctx, const fi_attention_params *params,
                               fi_op_family family, int32_t batch, fi_status s,
                               void *workspace, size_t workspace_bytes, fi_plan *plan) {
  return seal(plan, fi_shard_plan_agree(ctx, params, family, batch, s,
                                        workspace ? workspace_bytes : 0, plan));
}

static fi_status decode_plan(fi_context *ctx, const fi_attention_params *params, int32_t batch,
                             const fi_page_table *host_pages, int32_t num_pages,
                             const fi_tiles *tiles, void *workspace, size_t workspace_bytes,
                             fi_plan *plan) {
  CHECK(check_decode_plan_args(ctx, plan, params, batch, 1));
  int64_t total_kv = 0;
  CHECK(fi_validate_page_table(ctx, host_pages, batch, params->page_size, num_pages,
                               &total_kv));
  fi_plan_problem pb = {FI_OP_DECODE, batch, NULL, host_pages->indptr,
                        host_pages->last_page_len, params->page_size};
  fi_tile_problem tp = tile_problem(ctx, params, batch, batch, total_kv, 1);
  return seal(plan, finish_plan(ctx, &pb, params, tiles, select_decode_tiles(ctx, params, &tp),
                                workspace, workspace_bytes, num_pages, plan));
}

fi_status fi_decode_plan(fi_context *ctx, const fi_attention_params *params, int32_t batch,
                         const fi_page_table *host_pages, int32_t num_pages,
                         const fi_tiles *tiles, void *workspace, size_t workspace_bytes,
                         fi_plan *plan) {
  NEED_CTX(ctx);
  if (sharded_plan(params, plan)) memset(plan, 0, sizeof *plan);
  fi_status s = decode_plan(ctx, params, batch, host_pages, num_pages, tiles, workspace,
                            workspace_bytes, plan);
  if (!sharded_plan(params, plan)) return s;
  return agree_sharded(ctx, params, FI_OP_DECODE, batch, s, workspace, workspace_bytes, plan);
}

/* A device plan's page table as the host sees it: the pointers and counts (the arrays
 * themselves are checked on the device). */
static fi_status check_device_pages(fi_context *ctx, const fi_page_table *device_pages,
                                    int64_t num_indices, int32_t num_pages) {
  if (!device_pages || !device_pages->indptr || !device_pages->indices ||
      !device_pages->last_page_len)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "device_pages (kv_indptr, kv_indices, kv_last_page_len) must not be "
                        "NULL");
  if (num_indices < 0 || num_pages < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "num_indices = %lld, num_pages = %d: both must be >= 0",
                        (long long)num_indices, (int)num_pages);
  return FI_SUCCESS;
}

/* Host backend: a device plan's indptr (host memory there) and the bound its device
 * planner would check indptr[batch] against (`what` holds max_rows `unit`). */
static fi_status check_host_rows(fi_context *ctx, const char *name, const int32_t *indptr,
                                 int32_t batch, int64_t max_rows, const char *what,
                                 const char *unit) {
  int64_t total = 0;
  CHECK(fi_validate_indptr(ctx, name, indptr, batch, &total));
  if (total > max_rows)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s[%d] = %lld but %s holds %lld %s",
                        name, (int)batch, (long long)total, what, (long long)max_rows, unit);
  return FI_SUCCESS;
}

fi_status fi_decode_plan_device(fi_context *ctx, const fi_attention_params *params,
                                int32_t batch, const fi_page_table *device_pages,
                                int64_t num_indices, int32_t num_pages, const fi_tiles *tiles,
                                void *workspace, size_t workspace_bytes, fi_plan *plan) {
  NEED_CTX(ctx);
  CHECK(check_decode_plan_args(ctx, plan, params, batch, 0));
  if (!tiles)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_decode_plan_device: tiles is NULL: a device plan needs the variant "
                        "chosen on the host (fi_select_decode_tiles, or #fi.tiles from "
                        "fi-select-tiles)");
  CHECK(check_device_pages(ctx, device_pages, num_indices, num_pages));
  if (ctx->backend == FI_BACKEND_HOST) {
    /* Host memory is the device's: the host planner makes the same partition. */
    CHECK(check_host_rows(ctx, "kv_indptr", device_pages->indptr, batch, num_indices,
                          "kv_indices", "elements"));
    return fi_decode_plan(ctx, params, batch, device_pages, num_pages, tiles, workspace,
                          workspace_bytes, plan);
  }
  CHECK(check_forced_tiles(ctx, tiles, 1));
  CHECK(fi_cuda_check_supported(ctx, FI_OP_DECODE, params, tiles));
  fi_plan_problem pb = {FI_OP_DECODE, batch, NULL, NULL, NULL, params->page_size};
  fi_cuda_device_plan_caps caps;
  CHECK(fi_plan_prepare_device(ctx, &pb, params, *tiles, batch, workspace, workspace_bytes,
                               plan, &caps));
  plan->num_pages = num_pages;
  fi_cuda_device_plan_problem dp = {NULL, device_pages->indptr, device_pages->indices,
                                    device_pages->last_page_len, batch, params->page_size,
                                    num_pages, num_indices, batch, 0};
  return seal(plan, fi_cuda_plan_device(ctx, &dp, &caps, plan));
}

/* What a prefill plan made on the device checks on the host (the arrays are checked on
 * the device). */
static fi_status check_prefill_device_args(fi_context *ctx, const fi_attention_params *params,
                                           const char *fn, const int32_t *qo_indptr,
                                           int64_t max_qo_rows, const fi_tiles *tiles) {
  if (!tiles)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s: tiles is NULL: a device plan needs the variant chosen on the host "
                        "(fi_select_prefill_tiles, or #fi.tiles from fi-select-tiles)", fn);
  if (!qo_indptr)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s: qo_indptr must not be NULL", fn);
  if (max_qo_rows < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s: max_qo_rows = %lld: pass the rows of q (>= 0)", fn,
                        (long long)max_qo_rows);
  if (params->mask_mode == FI_MASK_CUSTOM)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "%s: a custom mask is checked against the query and KV lengths on the "
                        "host: make this plan with fi_%s_prefill_plan", fn,
                        strstr(fn, "ragged") ? "ragged" : "paged");
  CHECK(check_forced_tiles(ctx, tiles, 0));
  return FI_SUCCESS;
}

fi_status fi_paged_prefill_plan_device(fi_context *ctx, const fi_attention_params *params,
                                       int32_t batch, const int32_t *device_qo_indptr,
                                       int64_t max_qo_rows, const fi_page_table *device_pages,
                                       int64_t num_indices, int32_t num_pages,
                                       const fi_tiles *tiles, void *workspace,
                                       size_t workspace_bytes, fi_plan *plan) {
  NEED_CTX(ctx);
  CHECK(check_plan_args(ctx, plan, params, 1, batch, 0, 0));
  CHECK(check_prefill_device_args(ctx, params, "fi_paged_prefill_plan_device",
                                  device_qo_indptr, max_qo_rows, tiles));
  CHECK(check_device_pages(ctx, device_pages, num_indices, num_pages));
  if (ctx->backend == FI_BACKEND_HOST) {
    /* Host memory is the device's: the host planner makes the same partition. */
    CHECK(check_host_rows(ctx, "qo_indptr", device_qo_indptr, batch, max_qo_rows, "q", "rows"));
    CHECK(check_host_rows(ctx, "kv_indptr", device_pages->indptr, batch, num_indices,
                          "kv_indices", "elements"));
    return fi_paged_prefill_plan(ctx, params, batch, device_qo_indptr, device_pages, num_pages,
                                 NULL, tiles, workspace, workspace_bytes, plan);
  }
  CHECK(fi_cuda_check_supported(ctx, FI_OP_PAGED_PREFILL, params, tiles));
  fi_plan_problem pb = {FI_OP_PAGED_PREFILL, batch, device_qo_indptr, device_pages->indptr,
                        device_pages->last_page_len, params->page_size};
  fi_cuda_device_plan_caps caps;
  CHECK(fi_plan_prepare_device(ctx, &pb, params, *tiles, max_qo_rows, workspace,
                               workspace_bytes, plan, &caps));
  plan->num_pages = num_pages;
  plan->private_[FI_PLAN_KV_ENTRIES] = (uint64_t)num_indices;
  fi_cuda_device_plan_problem dp = {device_qo_indptr, device_pages->indptr, device_pages->indices,
                                    device_pages->last_page_len, batch, params->page_size,
                                    num_pages, num_indices, max_qo_rows, 0};
  return seal(plan, fi_cuda_plan_device(ctx, &dp, &caps, plan));
}

fi_status fi_ragged_prefill_plan_device(fi_context *ctx, const fi_attention_params *params,
                                        int32_t batch, const int32_t *device_qo_indptr,
                                        int64_t max_qo_rows, const int32_t *device_kv_indptr,
                                        int64_t max_kv_rows, const fi_tiles *tiles,
                                        void *workspace, size_t workspace_bytes,
                                        fi_plan *plan) {
  NEED_CTX(ctx);
  CHECK(check_plan_args(ctx, plan, params, 0, batch, 0, 0));
  CHECK(check_prefill_device_args(ctx, params, "fi_ragged_prefill_plan_device",
                                  device_qo_indptr, max_qo_rows, tiles));
  if (!device_kv_indptr)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_ragged_prefill_plan_device: kv_indptr must not be NULL");
  if (max_kv_rows < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_ragged_prefill_plan_device: max_kv_rows = %lld: pass the rows of "
                        "k and v (>= 0)", (long long)max_kv_rows);
  if (ctx->backend == FI_BACKEND_HOST) {
    CHECK(check_host_rows(ctx, "qo_indptr", device_qo_indptr, batch, max_qo_rows, "q", "rows"));
    CHECK(check_host_rows(ctx, "kv_indptr", device_kv_indptr, batch, max_kv_rows, "k", "rows"));
    return fi_ragged_prefill_plan(ctx, params, batch, device_qo_indptr, device_kv_indptr, NULL,
                                  tiles, workspace, workspace_bytes, plan);
  }
  CHECK(fi_cuda_check_supported(ctx, FI_OP_RAGGED_PREFILL, params, tiles));
  fi_plan_problem pb = {FI_OP_RAGGED_PREFILL, batch, device_qo_indptr, device_kv_indptr, NULL, 1};
  fi_cuda_device_plan_caps caps;
  CHECK(fi_plan_prepare_device(ctx, &pb, params, *tiles, max_qo_rows, workspace,
                               workspace_bytes, plan, &caps));
  fi_cuda_device_plan_problem dp = {device_qo_indptr, device_kv_indptr, NULL, NULL, batch, 1, 0,
                                    0, max_qo_rows, max_kv_rows};
  plan->total_kv = max_kv_rows; /* the run's k and v must hold this many rows */
  return seal(plan, fi_cuda_plan_device(ctx, &dp, &caps, plan));
}

fi_status fi_plan_device_status(fi_context *ctx, const fi_plan *plan) {
  NEED_CTX(ctx);
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  if (!(plan->private_[FI_PLAN_FLAGS] & FI_PLAN_FLAG_DEVICE) && !fi_plan_is_sharded(plan))
    return FI_SUCCESS;
  if (!plan->workspace || ctx->backend != FI_BACKEND_CUDA) return FI_SUCCESS;
  int32_t hdr[8];
  CHECK(fi_cuda_download_sync(ctx, hdr, plan->workspace, sizeof hdr));
  return fi_device_plan_error(ctx, hdr + 4);
}

static fi_status paged_prefill_plan(fi_context *ctx, const fi_attention_params *params,
                                    int32_t batch, const int32_t *host_qo_indptr,
                                    const fi_page_table *host_pages, int32_t num_pages,
                                    const fi_custom_mask *host_mask, const fi_tiles *tiles,
                                    void *workspace, size_t workspace_bytes, fi_plan *plan) {
  CHECK(check_plan_args(ctx, plan, params, 1, batch, FI_OP_PAGED_PREFILL, 0));
  fi_attention_params local = *params;
  /* Causal over a sharded KV: the new tokens lie on the last rank; the other ranks hold
   * only older keys, which every query sees (runtime.h, "Context parallelism"). The plan
   * keeps the op's mask; its runs compute with fi_shard_effective_plan's. */
  const fi_mask_mode op_mask = params->mask_mode;
  if (params->kv_shards > 0 && params->mask_mode == FI_MASK_CAUSAL &&
      ctx->comm->rank < params->kv_shards - 1)
    local.mask_mode = FI_MASK_NONE;
  params = &local;
  int64_t total_qo = 0, total_kv = 0;
  CHECK(fi_validate_indptr(ctx, "qo_indptr", host_qo_indptr, batch, &total_qo));
  CHECK(fi_validate_page_table(ctx, host_pages, batch, params->page_size, num_pages,
                               &total_kv));
  fi_plan_problem pb = {FI_OP_PAGED_PREFILL, batch, host_qo_indptr, host_pages->indptr,
                        host_pages->last_page_len, params->page_size};
  CHECK(fi_validate_mask(ctx, params, &pb, host_mask));
  fi_tile_problem tp = tile_problem(ctx, params, batch, total_qo, total_kv, 1);
  CHECK(finish_plan(ctx, &pb, params, tiles, select_prefill_tiles(ctx, &tp), workspace,
                    workspace_bytes, num_pages, plan));
  plan->private_[FI_PLAN_KV_ENTRIES] = (uint64_t)host_pages->indptr[batch];
  plan->params.mask_mode = op_mask;
  /* (the mask's extents first: the layout reads whether its rows are runs) */
  const fi_status s = mask_extents(ctx, &pb, params, host_mask, plan);
  if (s == FI_SUCCESS) choose_ws_layout(ctx, params, 1, tiles != NULL, plan);
  return seal(plan, s);
}

fi_status fi_paged_prefill_plan(fi_context *ctx, const fi_attention_params *params,
                                int32_t batch, const int32_t *host_qo_indptr,
                                const fi_page_table *host_pages, int32_t num_pages,
                                const fi_custom_mask *host_mask, const fi_tiles *tiles,
                                void *workspace, size_t workspace_bytes, fi_plan *plan) {
  NEED_CTX(ctx);
  if (sharded_plan(params, plan)) memset(plan, 0, sizeof *plan);
  fi_status s = paged_prefill_plan(ctx, params, batch, host_qo_indptr, host_pages, num_pages,
                                   host_mask, tiles, workspace, workspace_bytes, plan);
  if (!sharded_plan(params, plan)) return s;
  return agree_sharded(ctx, params, FI_OP_PAGED_PREFILL, batch, s, workspace, workspace_bytes,
                       plan);
}

fi_status fi_ragged_prefill_plan(fi_context *ctx, const fi_attention_params *params,
                                 int32_t batch, const int32_t *host_qo_indptr,
                                 const int32_t *host_kv_indptr,
                                 const fi_custom_mask *host_mask, const fi_tiles *tiles,
                                 void *workspace, size_t workspace_bytes, fi_plan *plan) {
  NEED_CTX(ctx);
  CHECK(check_plan_args(ctx, plan, params, 0, batch, 0, 0));
  int64_t total_qo = 0, total_kv = 0;
  CHECK(fi_validate_indptr(ctx, "qo_indptr", host_qo_indptr, batch, &total_qo));
  CHECK(fi_validate_indptr(ctx, "kv_indptr", host_kv_indptr, batch, &total_kv));
  fi_plan_problem pb = {FI_OP_RAGGED_PREFILL, batch, host_qo_indptr, host_kv_indptr, NULL, 1};
  CHECK(fi_validate_mask(ctx, params, &pb, host_mask));
  fi_tile_problem tp = tile_problem(ctx, params, batch, total_qo, total_kv, 0);
  CHECK(finish_plan(ctx, &pb, params, tiles, select_prefill_tiles(ctx, &tp), workspace,
                    workspace_bytes, 0, plan));
  /* (the mask's extents first: the layout reads whether its rows are runs) */
  const fi_status s = mask_extents(ctx, &pb, params, host_mask, plan);
  if (s == FI_SUCCESS) choose_ws_layout(ctx, params, 0, tiles != NULL, plan);
  return seal(plan, s);
}

/* ------------------------------------------------------------- run checks --------- */

static fi_status check_plan(fi_context *ctx, const fi_plan *plan, fi_op_family family) {
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  if ((plan->private_[FI_PLAN_MAGIC] & ~(uint64_t)0xff) != FI_PLAN_MAGIC_VALUE)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "plan was not made by a fi_*_plan function (or was overwritten)");
  if ((fi_backend)(plan->private_[FI_PLAN_MAGIC] & 0xff) != ctx->backend)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "plan was made on a %s context but run on a %s context",
                        (plan->private_[FI_PLAN_MAGIC] & 0xff) ? "CUDA" : "host",
                        ctx->backend == FI_BACKEND_CUDA ? "CUDA" : "host");
  if (plan->family != family)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "plan was made for %s but passed to the %s run function",
                        family_name(plan->family), family_name(family));
  if (plan->private_[FI_PLAN_CHECKSUM] != fi_plan_checksum(plan))
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "plan's fields no longer match their checksum (the plan was modified "
                        "or overwritten after its plan function returned): make a new plan "
                        "and pass it unchanged");
  return FI_SUCCESS;
}

/* Row-indexed tensors (q, o, lse, ragged k and v) may hold more rows than the plan's:
 * buffers at their capacity, as a CUDA graph replayed after re-planning needs. Rows past
 * the plan's are neither read nor written. `shape[0]` < 0: unknown to the host. */
static fi_status check_rows(fi_context *ctx, const char *name, const fi_tensor *t,
                            fi_dtype dtype, int32_t rank, const int64_t *shape) {
  int64_t any_rows[3] = {-1, shape[1], rank > 2 ? shape[2] : -1};
  CHECK(fi_validate_tensor(ctx, name, t, dtype, rank, any_rows));
  if (shape[0] >= 0 && t->shape[0] < shape[0])
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s.shape[0] = %lld: expected %lld (the plan's rows; more are allowed)",
                        name, (long long)t->shape[0], (long long)shape[0]);
  return FI_SUCCESS;
}

static fi_status check_q_o_lse(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                               const fi_tensor *o, const fi_tensor *lse) {
  const fi_attention_params *p = &plan->params;
  int64_t shape[3] = {plan->total_qo_rows, p->num_qo_heads, p->head_dim};
  CHECK(check_rows(ctx, "q [nnz_qo, qo_heads, head_dim]", q, p->q_dtype, 3, shape));
  CHECK(check_rows(ctx, "o [nnz_qo, qo_heads, head_dim]", o, fi_output_dtype(p), 3, shape));
  if (lse) CHECK(check_rows(ctx, "lse [nnz_qo, qo_heads]", lse, FI_DTYPE_F32, 2, shape));
  CHECK(fi_validate_no_self_overlap(ctx, "o", o));
  if (lse) CHECK(fi_validate_no_self_overlap(ctx, "lse", lse));
  CHECK(fi_validate_disjoint(ctx, "o", o, "q", q));
  CHECK(fi_validate_disjoint(ctx, "lse", lse, "q", q));
  CHECK(fi_validate_disjoint(ctx, "lse", lse, "o", o));
  return FI_SUCCESS;
}

/* The outputs of an attention run against its K and V. */
static fi_status check_outputs_vs_kv(fi_context *ctx, const fi_tensor *o, const fi_tensor *lse,
                                     const fi_tensor *k, const fi_tensor *v) {
  CHECK(fi_validate_disjoint(ctx, "o", o, "k", k));
  CHECK(fi_validate_disjoint(ctx, "o", o, "v", v));
  CHECK(fi_validate_disjoint(ctx, "lse", lse, "k", k));
  return fi_validate_disjoint(ctx, "lse", lse, "v", v);
}

/* On the host backend the run-time index arrays are host memory: re-check them against
 * the plan so that a run with other arrays fails instead of reading out of bounds. */
static fi_status check_run_problem(fi_context *ctx, const fi_plan *plan,
                                   const fi_plan_problem *pb, const fi_custom_mask *mask) {
  if (ctx->backend != FI_BACKEND_HOST) return FI_SUCCESS;
  int64_t total_qo = pb->batch;
  if (pb->qo_indptr) CHECK(fi_validate_indptr(ctx, "qo_indptr", pb->qo_indptr, pb->batch, &total_qo));
  int64_t total_kv = 0;
  for (int32_t i = 0; i < pb->batch; ++i) total_kv += fi_problem_kv_len(pb, i);
  if (total_qo != plan->total_qo_rows || total_kv != plan->total_kv)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "run arrays describe %lld query rows and %lld KV tokens but the plan "
                        "was made for %lld and %lld: re-plan when the index arrays change",
                        (long long)total_qo, (long long)total_kv,
                        (long long)plan->total_qo_rows, (long long)plan->total_kv);
  fi_plan_layout l = fi_plan_get_layout(plan);
  for (int32_t u = 0; u < l.num_work_units; ++u) {
    const fi_work_unit *w = &l.work[u];
    if (w->request < 0 || w->request >= pb->batch ||
        w->qo_start + w->qo_len > fi_problem_qo_len(pb, w->request) ||
        w->kv_end > fi_problem_kv_len(pb, w->request))
      return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                          "work unit %d (request %d) does not match the run's index arrays: "
                          "re-plan when the index arrays change", (int)u, (int)w->request);
  }
  if (plan->params.mask_mode == FI_MASK_CUSTOM) CHECK(fi_validate_mask(ctx, &plan->params, pb, mask));
  return FI_SUCCESS;
}

static fi_status check_pages_present(fi_context *ctx, const fi_page_table *pages) {
  if (!pages || !pages->indptr || !pages->last_page_len)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "pages (kv_indptr, kv_indices, kv_last_page_len) must not be NULL");
  return FI_SUCCESS;
}

static fi_status check_host_pages(fi_context *ctx, const fi_plan *plan,
                                  const fi_page_table *pages) {
  if (ctx->backend != FI_BACKEND_HOST) return FI_SUCCESS;
  return fi_validate_page_table(ctx, pages, plan->batch, plan->params.page_size,
                                plan->num_pages, NULL);
}

/* A user-written variant (params.variant with a score_mod or mask_mod; both NULL is none)
 * on the CUDA backend: prefill, decode and block-sparse attention from a device image (the CUDA
 * backend checks the rest: the kernel the plan runs, the image). Checked at run, where the
 * plan's copy of the params is what the backend executes (compiled code sets the variant on
 * its run's copy). */
static fi_status check_variant_backend(fi_context *ctx, const fi_plan *plan) {
  const fi_variant *v = plan->params.variant;
  if (ctx->backend == FI_BACKEND_HOST || !v || (!v->score_mod && !v->mask_mod))
    return FI_SUCCESS;
  const int compiled = plan->family == FI_OP_PAGED_PREFILL ||
                       plan->family == FI_OP_RAGGED_PREFILL || plan->family == FI_OP_DECODE ||
                       plan->family == FI_OP_BLOCK_SPARSE;
  if (compiled && v->device_image) {
    if (v->captures_bytes > FI_VARIANT_MAX_CAPTURE_BYTES || (v->captures_bytes && !v->captures))
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "params.variant: %zu bytes of captures%s; a CUDA kernel takes at "
                          "most %d bytes of captured values: capture a tensor (one pointer) "
                          "instead of many scalars",
                          v->captures_bytes, v->captures ? "" : " at a NULL pointer",
                          FI_VARIANT_MAX_CAPTURE_BYTES);
    return FI_SUCCESS;
  }
  return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                      "params.variant (%s%s%s) in a %s run on the CUDA backend: %s. Run this "
                      "op on the host backend or express it with the built-in attributes "
                      "(logits_soft_cap, window_left, pos_encoding, custom mask)",
                      v->score_mod ? "score_mod" : "",
                      v->score_mod && v->mask_mod ? " and " : "",
                      v->mask_mod ? "mask_mod" : "", family_name(plan->family),
                      compiled ? "the variant has no device image (compile the program with "
                                 "fi-to-llvm=backend=cuda, which links the variant into the "
                                 "kernels)"
                               : "variants run on CUDA in prefill, decode and block-sparse "
                                 "attention only");
}

#define DISPATCH(ctx, fn, ...)                                                             \
  ((ctx)->backend == FI_BACKEND_HOST ? fi_host_##fn(__VA_ARGS__) : fi_cuda_##fn(__VA_ARGS__))

static fi_status decode_run_checks(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                   const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                   fi_tensor *o, fi_tensor *lse);
static fi_status paged_prefill_run_checks(fi_context *ctx, const fi_plan *plan,
                                          const fi_tensor *q, const int32_t *qo_indptr,
                                          const fi_paged_kv_cache *kv,
                                          const fi_page_table *pages,
                                          const fi_custom_mask *mask, fi_tensor *o,
                                          fi_tensor *lse);

fi_status fi_decode_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                        const fi_paged_kv_cache *kv, const fi_page_table *pages,
                        fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_DECODE));
  fi_status s = decode_run_checks(ctx, plan, q, kv, pages, o, lse);
  if (s != FI_SUCCESS)
    return fi_plan_is_sharded(plan) ? fi_shard_run_failed(ctx, plan, s) : s;
  return DISPATCH(ctx, decode_run, ctx, plan, q, kv, pages, o, lse);
}

static fi_status decode_run_checks(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                   const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                   fi_tensor *o, fi_tensor *lse) {
  CHECK(check_variant_backend(ctx, plan));
  CHECK(check_q_o_lse(ctx, plan, q, o, lse));
  CHECK(fi_validate_kv_cache(ctx, kv, &plan->params, plan->num_pages));
  CHECK(check_pages_present(ctx, pages));
  CHECK(check_host_pages(ctx, plan, pages));
  CHECK(check_outputs_vs_kv(ctx, o, lse, &kv->k, &kv->v));
  fi_plan_problem pb = {FI_OP_DECODE, plan->batch, NULL, pages->indptr, pages->last_page_len,
                        plan->params.page_size};
  return check_run_problem(ctx, plan, &pb, NULL);
}

fi_status fi_paged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                               const int32_t *qo_indptr, const fi_paged_kv_cache *kv,
                               const fi_page_table *pages, const fi_custom_mask *mask,
                               fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_PAGED_PREFILL));
  const fi_plan eff = fi_shard_effective_plan(ctx, plan);
  fi_status s = paged_prefill_run_checks(ctx, &eff, q, qo_indptr, kv, pages, mask, o, lse);
  if (s != FI_SUCCESS)
    return fi_plan_is_sharded(plan) ? fi_shard_run_failed(ctx, plan, s) : s;
  return DISPATCH(ctx, paged_prefill_run, ctx, &eff, q, qo_indptr, kv, pages, mask, o, lse);
}

static fi_status paged_prefill_run_checks(fi_context *ctx, const fi_plan *plan,
                                          const fi_tensor *q, const int32_t *qo_indptr,
                                          const fi_paged_kv_cache *kv,
                                          const fi_page_table *pages,
                                          const fi_custom_mask *mask, fi_tensor *o,
                                          fi_tensor *lse) {
  CHECK(check_variant_backend(ctx, plan));
  CHECK(check_q_o_lse(ctx, plan, q, o, lse));
  CHECK(fi_validate_kv_cache(ctx, kv, &plan->params, plan->num_pages));
  CHECK(check_pages_present(ctx, pages));
  if (!qo_indptr) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "qo_indptr is NULL");
  if (plan->params.mask_mode == FI_MASK_CUSTOM && (!mask || !mask->bits || !mask->indptr))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "the plan uses a custom mask but mask (bits, indptr) is NULL");
  CHECK(check_host_pages(ctx, plan, pages));
  CHECK(check_outputs_vs_kv(ctx, o, lse, &kv->k, &kv->v));
  fi_plan_problem pb = {FI_OP_PAGED_PREFILL, plan->batch, qo_indptr, pages->indptr,
                        pages->last_page_len, plan->params.page_size};
  return check_run_problem(ctx, plan, &pb, mask);
}

/* q, o, lse against the plan and k, v as [total_kv, kv_heads, head_dim] token rows (ragged
 * prefill and block-sparse attention). */
static fi_status check_ragged_tensors(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                      const fi_tensor *k, const fi_tensor *v, fi_tensor *o,
                                      fi_tensor *lse) {
  CHECK(check_q_o_lse(ctx, plan, q, o, lse));
  const fi_attention_params *p = &plan->params;
  int64_t kshape[3] = {plan->total_kv, p->num_kv_heads, p->head_dim};
  CHECK(check_rows(ctx, "k [nnz_kv, kv_heads, head_dim]", k, p->kv_dtype, 3, kshape));
  CHECK(check_rows(ctx, "v [nnz_kv, kv_heads, head_dim]", v, p->kv_dtype, 3, kshape));
  return check_outputs_vs_kv(ctx, o, lse, k, v);
}

fi_status fi_ragged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                const fi_tensor *k, const fi_tensor *v,
                                const int32_t *qo_indptr, const int32_t *kv_indptr,
                                const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_RAGGED_PREFILL));
  CHECK(check_variant_backend(ctx, plan));
  CHECK(check_ragged_tensors(ctx, plan, q, k, v, o, lse));
  const fi_attention_params *p = &plan->params;
  if (!qo_indptr || !kv_indptr)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "qo_indptr and kv_indptr must not be NULL");
  if (p->mask_mode == FI_MASK_CUSTOM && (!mask || !mask->bits || !mask->indptr))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "the plan uses a custom mask but mask (bits, indptr) is NULL");
  if (ctx->backend == FI_BACKEND_HOST)
    CHECK(fi_validate_indptr(ctx, "kv_indptr", kv_indptr, plan->batch, NULL));
  fi_plan_problem pb = {FI_OP_RAGGED_PREFILL, plan->batch, qo_indptr, kv_indptr, NULL, 1};
  CHECK(check_run_problem(ctx, plan, &pb, mask));
  return DISPATCH(ctx, ragged_prefill_run, ctx, plan, q, k, v, qo_indptr, kv_indptr, mask, o, lse);
}

/* ------------------------------------------------------------ cascades ------------ */

/* The unmerged runs: the backend run with ctx->defer_merge set (prefill.cu then leaves the
 * split rows' partials in the workspace for fi_prefill_merge_run). */
static fi_status unmerged_checks(fi_context *ctx, const fi_plan *plan, const fi_tensor *lse,
                                 const char *fn) {
  if (fi_plan_is_sharded(plan))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "%s: a KV-sharded plan merges across ranks inside its run; run it with "
                        "the merged run function and fi_merge_state", fn);
  if (!lse)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s: lse is NULL, but the deferred merge needs the attention's own lse "
                        "(pass an f32 [nnz_qo, qo_heads] tensor)", fn);
  return FI_SUCCESS;
}

fi_status fi_paged_prefill_run_unmerged(fi_context *ctx, const fi_plan *plan,
                                        const fi_tensor *q, const int32_t *qo_indptr,
                                        const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                        const fi_custom_mask *mask, fi_tensor *o,
                                        fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_PAGED_PREFILL));
  CHECK(unmerged_checks(ctx, plan, lse, "fi_paged_prefill_run_unmerged"));
  CHECK(paged_prefill_run_checks(ctx, plan, q, qo_indptr, kv, pages, mask, o, lse));
  ctx->defer_merge = 1;
  const fi_status s = DISPATCH(ctx, paged_prefill_run, ctx, plan, q, qo_indptr, kv, pages, mask,
                               o, lse);
  ctx->defer_merge = 0;
  return s;
}

fi_status fi_ragged_prefill_run_unmerged(fi_context *ctx, const fi_plan *plan,
                                         const fi_tensor *q, const fi_tensor *k,
                                         const fi_tensor *v, const int32_t *qo_indptr,
                                         const int32_t *kv_indptr, const fi_custom_mask *mask,
                                         fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_RAGGED_PREFILL));
  CHECK(unmerged_checks(ctx, plan, lse, "fi_ragged_prefill_run_unmerged"));
  ctx->defer_merge = 1;
  const fi_status s = fi_ragged_prefill_run(ctx, plan, q, k, v, qo_indptr, kv_indptr, mask, o,
                                            lse);
  ctx->defer_merge = 0;
  return s;
}

fi_status fi_prefill_merge_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *v_other,
                               const fi_tensor *s_other, fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  if (plan && plan->family == FI_OP_RAGGED_PREFILL)
    CHECK(check_plan(ctx, plan, FI_OP_RAGGED_PREFILL));
  else
    CHECK(check_plan(ctx, plan, FI_OP_PAGED_PREFILL));
  CHECK(unmerged_checks(ctx, plan, lse, "fi_prefill_merge_run"));
  const fi_attention_params *p = &plan->params;
  int64_t shape[3] = {plan->total_qo_rows, p->num_qo_heads, p->head_dim};
  CHECK(check_rows(ctx, "o [nnz_qo, qo_heads, head_dim]", o, fi_output_dtype(p), 3, shape));
  CHECK(check_rows(ctx, "lse [nnz_qo, qo_heads]", lse, FI_DTYPE_F32, 2, shape));
  CHECK(fi_validate_no_self_overlap(ctx, "o", o));
  CHECK(fi_validate_no_self_overlap(ctx, "lse", lse));
  CHECK(fi_validate_disjoint(ctx, "lse", lse, "o", o));
  if (!v_other != !s_other)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_prefill_merge_run: v_other is %s but s_other is %s: pass both (the "
                        "other state) or neither (the plan's merge alone)",
                        v_other ? "given" : "NULL", s_other ? "given" : "NULL");
  if (v_other) {
    const int64_t vshape[3] = {o->shape[0], o->shape[1], o->shape[2]};
    CHECK(fi_validate_tensor(ctx, "v_other [rows, qo_heads, head_dim] (o's shape and dtype)",
                             v_other, o->dtype, 3, vshape));
    CHECK(fi_validate_tensor(ctx, "s_other [rows, qo_heads] (lse's shape)", s_other,
                             FI_DTYPE_F32, 2, vshape));
    const fi_tensor *const ins[2] = {v_other, s_other};
    static const char *const in_names[2] = {"v_other", "s_other"};
    for (int i = 0; i < 2; ++i) {
      CHECK(fi_validate_disjoint(ctx, "o", o, in_names[i], ins[i]));
      CHECK(fi_validate_disjoint(ctx, "lse", lse, in_names[i], ins[i]));
    }
  }
  /* (the rows of the plan only: o and lse may hold more, as the runs allow) */
  fi_tensor ov = *o, lv = *lse, vv, sv;
  if (plan->total_qo_rows >= 0 && plan->total_qo_rows < o->shape[0]) {
    ov.shape[0] = lv.shape[0] = plan->total_qo_rows;
  }
  if (v_other) {
    vv = *v_other, sv = *s_other;
    vv.shape[0] = sv.shape[0] = ov.shape[0];
  }
  return DISPATCH(ctx, prefill_merge_run, ctx, plan, v_other ? &vv : NULL,
                  s_other ? &sv : NULL, &ov, &lv);
}

/* ------------------------------------------------------------ merge --------------- */

fi_status fi_merge_state(fi_context *ctx, const fi_tensor *v_a, const fi_tensor *s_a,
                         const fi_tensor *v_b, const fi_tensor *s_b, fi_tensor *v_out,
                         fi_tensor *s_out) {
  NEED_CTX(ctx);
  CHECK(fi_validate_float_tensor(ctx, "v_a [rows, heads, head_dim]", v_a, 3, NULL));
  int64_t vshape[3] = {v_a->shape[0], v_a->shape[1], v_a->shape[2]};
  CHECK(fi_validate_tensor(ctx, "v_b [rows, heads, head_dim] (like v_a)", v_b, v_a->dtype, 3, vshape));
  CHECK(fi_validate_tensor(ctx, "v_out [rows, heads, head_dim] (like v_a)", v_out, v_a->dtype, 3, vshape));
  CHECK(fi_validate_tensor(ctx, "s_a [rows, heads]", s_a, FI_DTYPE_F32, 2, vshape));
  CHECK(fi_validate_tensor(ctx, "s_b [rows, heads]", s_b, FI_DTYPE_F32, 2, vshape));
  CHECK(fi_validate_tensor(ctx, "s_out [rows, heads]", s_out, FI_DTYPE_F32, 2, vshape));
  /* In place over a or b (the same views: each element reads only its own index) is
   * allowed; any other overlap of an output is not. */
  CHECK(fi_validate_no_self_overlap(ctx, "v_out", v_out));
  CHECK(fi_validate_no_self_overlap(ctx, "s_out", s_out));
  const fi_tensor *const ins[4] = {v_a, v_b, s_a, s_b};
  static const char *const in_names[4] = {"v_a", "v_b", "s_a", "s_b"};
  for (int i = 0; i < 4; ++i) {
    if (!fi_tensor_same_view(v_out, ins[i]))
      CHECK(fi_validate_disjoint(ctx, "v_out", v_out, in_names[i], ins[i]));
    if (!fi_tensor_same_view(s_out, ins[i]))
      CHECK(fi_validate_disjoint(ctx, "s_out", s_out, in_names[i], ins[i]));
  }
  CHECK(fi_validate_disjoint(ctx, "s_out", s_out, "v_out", v_out));
  return DISPATCH(ctx, merge_state, ctx, v_a, s_a, v_b, s_b, v_out, s_out);
}

fi_status fi_merge_states(fi_context *ctx, const fi_tensor *v, const fi_tensor *s,
                          fi_tensor *v_out, fi_tensor *s_out) {
  NEED_CTX(ctx);
  CHECK(fi_validate_float_tensor(ctx, "v [rows, n, heads, head_dim]", v, 4, NULL));
  int64_t sshape[3] = {v->shape[0], v->shape[1], v->shape[2]};
  int64_t oshape[3] = {v->shape[0], v->shape[2], v->shape[3]};
  CHECK(fi_validate_tensor(ctx, "s [rows, n, heads]", s, FI_DTYPE_F32, 3, sshape));
  CHECK(fi_validate_tensor(ctx, "v_out [rows, heads, head_dim] (dtype of v)", v_out, v->dtype, 3, oshape));
  if (s_out) CHECK(fi_validate_tensor(ctx, "s_out [rows, heads]", s_out, FI_DTYPE_F32, 2, oshape));
  CHECK(fi_validate_no_self_overlap(ctx, "v_out", v_out));
  CHECK(fi_validate_disjoint(ctx, "v_out", v_out, "v", v));
  CHECK(fi_validate_disjoint(ctx, "v_out", v_out, "s", s));
  if (s_out) {
    CHECK(fi_validate_no_self_overlap(ctx, "s_out", s_out));
    CHECK(fi_validate_disjoint(ctx, "s_out", s_out, "v", v));
    CHECK(fi_validate_disjoint(ctx, "s_out", s_out, "s", s));
    CHECK(fi_validate_disjoint(ctx, "s_out", s_out, "v_out", v_out));
  }
  return DISPATCH(ctx, merge_states, ctx, v, s, v_out, s_out);
}

/* ---------------------------------------------------- block-sparse attention ------- */

/* On the host backend, block-sparse attention is the ragged prefill of one request whose
 * custom mask is the BSR matrix's pairs (causal folded in): the bits are made from the
 * BSR arrays at plan and at every run (the context's mask scratch), so the host backend
 * computes exactly the pairs of the listed blocks. The mask's bit indptr is int32, which
 * bounds M x N. */
enum { FI_BSR_MAX_PAIRS = 2147483647 };

static fi_status bsr_check_size(fi_context *ctx, int64_t m, int64_t n) {
  if (m < 0 || n < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "num_qo_rows = %lld, num_kv_rows = %lld: both must be >= 0",
                        (long long)m, (long long)n);
  if (n > 0 && m > FI_BSR_MAX_PAIRS / n)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "block-sparse attention of %lld x %lld pairs: the host backend takes "
                        "at most 2^31 - 1 (query row, key) pairs; split the sequence",
                        (long long)m, (long long)n);
  return FI_SUCCESS;
}

/* The BSR matrix's pairs as mask bits (little bit order, row-major M x N). */
static uint8_t *bsr_bits(fi_context *ctx, const fi_bsr_matrix *b, int64_t m, int64_t n,
                         int causal) {
  const size_t bytes = (size_t)((m * n + 7) / 8) + 1;
  uint8_t *bits = (uint8_t *)fi_context_mask_scratch(ctx, bytes);
  if (!bits) return NULL;
  memset(bits, 0, bytes);
  const int64_t rows = fi_bsr_num_block_rows(b, m);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t r0 = fi_bsr_row_begin(b, i, m), r1 = fi_bsr_row_begin(b, i + 1, m);
    for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; ++e) {
      const int64_t c0 = fi_bsr_col_begin(b, b->indices[e], n);
      const int64_t c1 = fi_bsr_col_begin(b, (int64_t)b->indices[e] + 1, n);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t last = causal ? r + n - m : n - 1; /* bottom-right aligned */
        for (int64_t c = c0; c < c1 && c <= last; ++c) {
          const int64_t bit = r * n + c;
          bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));
        }
      }
    }
  }
  return bits;
}

/* A paged block-sparse plan on the warp-specialised kernel: the key alignment of its
 * tiles' halves. Page sizes that are a multiple of 16: the kernel's page box (min(64, the
 * largest power of two dividing page_size)), with every column block starting on it (0
 * otherwise, with the error set when `report`). Other page sizes: 1 -- the stage pass
 * gathers the sequence's pages into token rows (the context's prefill stage,
 * fi_prefill_stage_size), which the kernel loads as contiguous K/V. */
static int32_t bsr_page_box(fi_context *ctx, const fi_attention_params *p,
                            const fi_bsr_matrix *b, int64_t n, int report) {
  if (p->page_size % 16 != 0) return 1; /* K and V both staged as token rows */
  int32_t box = 64;
  while (box > 1 && p->page_size % box != 0) box /= 2;
  const int64_t cols = fi_bsr_num_block_cols(b, n);
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t k0 = fi_bsr_col_begin(b, j, n);
    if (k0 % box != 0) {
      if (!report) return 0;
      fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                   "paged block-sparse attention on CUDA: column block %lld starts at key "
                   "%lld, not a multiple of %d (min(64, the largest power of two dividing "
                   "page_size = %d)): the wgmma kernel loads each block's keys in boxes of "
                   "one page; align the column blocks to that (e.g. block_cols = page_size), "
                   "plan with cores = tensor tiles (the mma.sync kernel) or without tiles, or "
                   "use the host backend",
                   (long long)j, (long long)k0, (int)box, (int)p->page_size);
      return 0;
    }
  }
  return box;
}

/* Block-sparse attention's tiles on the mma.sync kernel (prefill_kernel.cuh): the
 * heuristics' choice for a dense prefill of the same shape on a non-Hopper device, split
 * along long rows. */
static fi_tiles bsr_mma_tiles(const fi_context *ctx, const fi_attention_params *p, int64_t m,
                              int64_t n, int paged) {
  const fi_tile_problem tp = tile_problem(ctx, p, 1, m, n, paged);
  fi_target t = ctx->target;
  t.sm_version = 80;
  fi_tiles tiles = fi_select_prefill_tiles(&t, &tp);
  tiles.cores = FI_CORES_TENSOR;
  tiles.split_kv = 1;
  return tiles;
}

/* The kernel a block-sparse plan takes when none is forced: the warp-specialised Hopper
 * kernel (wgmma 128 x 128 tiles) where the device and build have it, it is not turned off
 * (tuning prefill_warp_spec) and it takes the head dim and group, else the mma.sync
 * kernel. */
static fi_tiles bsr_default_tiles(const fi_context *ctx, const fi_attention_params *p,
                                  int64_t m, int64_t n, int paged) {
  const fi_tiles ws = {128, 128, 1, FI_CORES_WGMMA};
  if (ctx->wgmma_available && ctx->tuning.prefill_warp_spec != 0 &&
      fi_cuda_variant_supported(FI_OP_BLOCK_SPARSE, p, &ws, NULL, 0))
    return ws;
  return bsr_mma_tiles(ctx, p, m, n, paged);
}

/* Both block-sparse plans (host_pages NULL for contiguous K/V). CUDA: the plan's KV tiles
 * (a paged plan's halves start on the kernel's page box); host: the prefill plan the run
 * will be (ragged, or paged over host_pages) with the BSR matrix's pairs as its custom mask.
 * Leaves the plan unsealed. */
static fi_status block_sparse_plan(fi_context *ctx, const fi_attention_params *params,
                                   int64_t num_qo_rows, int64_t num_kv_rows,
                                   const fi_bsr_matrix *host_bsr,
                                   const fi_page_table *host_pages, int32_t num_pages,
                                   const fi_tiles *tiles, void *workspace,
                                   size_t workspace_bytes, fi_plan *plan) {
  if (params->mask_mode == FI_MASK_CUSTOM)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.mask_mode = FI_MASK_CUSTOM: the BSR matrix is the mask of "
                        "block-sparse attention; use FI_MASK_NONE or FI_MASK_CAUSAL");
  if (ctx->backend == FI_BACKEND_CUDA) {
    if (num_qo_rows < 0 || num_kv_rows < 0 || num_qo_rows > INT32_MAX || num_kv_rows > INT32_MAX)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "num_qo_rows = %lld, num_kv_rows = %lld: each must be in [0, 2^31)",
                          (long long)num_qo_rows, (long long)num_kv_rows);
    CHECK(fi_validate_bsr(ctx, host_bsr, num_qo_rows, num_kv_rows));
    if (num_kv_rows == 0 && num_qo_rows > 0)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "block-sparse attention over N = 0 keys: the CUDA kernel needs at "
                          "least one key (every output row would be 0, its LSE -inf); skip "
                          "the op or run it on the host backend");
    if (tiles) CHECK(check_forced_tiles(ctx, tiles, 0));
    fi_tiles chosen = tiles ? *tiles
                            : bsr_default_tiles(ctx, params, num_qo_rows, num_kv_rows,
                                                host_pages != NULL);
    /* (the warp-specialised kernel loads a paged block's keys in page boxes; the mma.sync
     * kernel row by row, from any key) */
    int32_t key_align = 1;
    if (host_pages && chosen.cores == FI_CORES_WGMMA) {
      key_align = bsr_page_box(ctx, params, host_bsr, num_kv_rows, tiles != NULL);
      if (!key_align && tiles) return FI_ERROR_UNSUPPORTED;
      if (!key_align) { /* blocks off the page box: the kernel that takes any key */
        chosen = bsr_mma_tiles(ctx, params, num_qo_rows, num_kv_rows, 1);
        key_align = 1;
      }
    }
    CHECK(fi_cuda_check_supported(ctx, FI_OP_BLOCK_SPARSE, params, &chosen));
    return fi_plan_build_block_sparse(ctx, params, num_qo_rows, num_kv_rows, host_bsr,
                                      key_align, chosen, workspace, workspace_bytes, plan);
  }
  CHECK(bsr_check_size(ctx, num_qo_rows, num_kv_rows));
  CHECK(fi_validate_bsr(ctx, host_bsr, num_qo_rows, num_kv_rows));
  uint8_t *bits = bsr_bits(ctx, host_bsr, num_qo_rows, num_kv_rows,
                           params->mask_mode == FI_MASK_CAUSAL);
  if (!bits) return FI_ERROR_OUT_OF_MEMORY;
  const int32_t qo[2] = {0, (int32_t)num_qo_rows}, kv[2] = {0, (int32_t)num_kv_rows};
  const int32_t mi[2] = {0, (int32_t)(num_qo_rows * num_kv_rows)};
  const fi_custom_mask mask = {bits, mi};
  fi_attention_params p = *params;
  p.mask_mode = FI_MASK_CUSTOM;
  CHECK(host_pages ? fi_paged_prefill_plan(ctx, &p, 1, qo, host_pages, num_pages, &mask, tiles,
                                           workspace, workspace_bytes, plan)
                   : fi_ragged_prefill_plan(ctx, &p, 1, qo, kv, &mask, tiles, workspace,
                                            workspace_bytes, plan));
  plan->family = FI_OP_BLOCK_SPARSE;
  plan->params.mask_mode = params->mask_mode;
  plan->private_[FI_PLAN_BSR_SHAPE] = fi_bsr_shape_key(host_bsr);
  return FI_SUCCESS;
}

fi_status fi_block_sparse_plan(fi_context *ctx, const fi_attention_params *params,
                               int64_t num_qo_rows, int64_t num_kv_rows,
                               const fi_bsr_matrix *host_bsr, const fi_tiles *tiles,
                               void *workspace, size_t workspace_bytes, fi_plan *plan) {
  NEED_CTX(ctx);
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  CHECK(fi_validate_params(ctx, params, 0, 0));
  CHECK(block_sparse_plan(ctx, params, num_qo_rows, num_kv_rows, host_bsr, NULL, 0, tiles,
                          workspace, workspace_bytes, plan));
  return seal(plan, FI_SUCCESS);
}

fi_status fi_block_sparse_paged_plan(fi_context *ctx, const fi_attention_params *params,
                                     int64_t num_qo_rows, const fi_page_table *host_pages,
                                     int32_t num_pages, const fi_bsr_matrix *host_bsr,
                                     const fi_tiles *tiles, void *workspace,
                                     size_t workspace_bytes, fi_plan *plan) {
  NEED_CTX(ctx);
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  CHECK(fi_validate_params(ctx, params, 1, 0));
  int64_t n = 0;
  CHECK(fi_validate_page_table(ctx, host_pages, 1, params->page_size, num_pages, &n));
  CHECK(block_sparse_plan(ctx, params, num_qo_rows, n, host_bsr, host_pages, num_pages, tiles,
                          workspace, workspace_bytes, plan));
  plan->num_pages = num_pages > 0 ? num_pages : 1; /* (> 0: the plan is paged) */
  return seal(plan, FI_SUCCESS);
}

/* A block-sparse run's checks shared by both forms: variant, bsr's block shape against the
 * plan's, and on CUDA the window the plan's tiles were clipped to (a run may narrow it). */
static fi_status check_bsr_run(fi_context *ctx, const fi_plan *plan, const fi_bsr_matrix *bsr) {
  CHECK(check_variant_backend(ctx, plan));
  if (!bsr) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bsr is NULL");
  const uint64_t shape = plan->private_[FI_PLAN_BSR_SHAPE], run = fi_bsr_shape_key(bsr);
  if (run != shape)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "bsr blocks are %d x %d (%s rows, %s columns) but the plan was made for "
                        "%d x %d (%s rows, %s columns): re-plan", (int)bsr->block_rows,
                        (int)bsr->block_cols, run >> 63 ? "variable" : "uniform",
                        run & (1u << 31) ? "variable" : "uniform",
                        (int)(shape >> 32 & 0x7fffffffu), (int)(shape & 0x7fffffffu),
                        shape >> 63 ? "variable" : "uniform",
                        shape & (1u << 31) ? "variable" : "uniform");
  if (ctx->backend != FI_BACKEND_CUDA) return FI_SUCCESS;
  const fi_attention_params *p = &plan->params;
  /* The plan's tiles left out the keys left of its window: a run may narrow it only. */
  const int64_t planned = (int64_t)plan->private_[FI_PLAN_BSR_WINDOW] - 1;
  if (planned >= 0 && (p->window_left < 0 || p->window_left > planned))
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "window_left = %d but the plan was made for window_left = %lld "
                        "(its KV tiles stop there): re-plan with the run's window",
                        (int)p->window_left, (long long)planned);
  return FI_SUCCESS;
}

/* The host backend's run of a block-sparse plan: the BSR matrix's pairs as the custom mask
 * of the prefill plan it is (ragged over k, v, or paged over kv and pages). */
static fi_status block_sparse_host_run(fi_context *ctx, const fi_plan *plan,
                                       const fi_tensor *q, const fi_tensor *k,
                                       const fi_tensor *v, const fi_paged_kv_cache *kv,
                                       const fi_page_table *pages, const fi_bsr_matrix *bsr,
                                       fi_tensor *o, fi_tensor *lse) {
  const int64_t m = plan->total_qo_rows, n = plan->total_kv;
  CHECK(fi_validate_bsr(ctx, bsr, m, n));
  uint8_t *bits = bsr_bits(ctx, bsr, m, n, plan->params.mask_mode == FI_MASK_CAUSAL);
  if (!bits) return FI_ERROR_OUT_OF_MEMORY;
  const int32_t qo[2] = {0, (int32_t)m}, kv_indptr[2] = {0, (int32_t)n};
  const int32_t mi[2] = {0, (int32_t)(m * n)};
  const fi_custom_mask mask = {bits, mi};
  fi_plan rp = *plan; /* the prefill plan it is, sealed as such */
  rp.family = pages ? FI_OP_PAGED_PREFILL : FI_OP_RAGGED_PREFILL;
  rp.params.mask_mode = FI_MASK_CUSTOM;
  seal(&rp, FI_SUCCESS);
  return pages ? fi_paged_prefill_run(ctx, &rp, q, qo, kv, pages, &mask, o, lse)
               : fi_ragged_prefill_run(ctx, &rp, q, k, v, qo, kv_indptr, &mask, o, lse);
}

fi_status fi_block_sparse_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                              const fi_tensor *k, const fi_tensor *v, const fi_bsr_matrix *bsr,
                              fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_BLOCK_SPARSE));
  if (plan->num_pages > 0)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "the plan was made for a paged cache (fi_block_sparse_paged_plan): run "
                        "it with fi_block_sparse_paged_run, or re-plan with "
                        "fi_block_sparse_plan for contiguous K/V");
  CHECK(check_bsr_run(ctx, plan, bsr));
  if (ctx->backend != FI_BACKEND_CUDA)
    return block_sparse_host_run(ctx, plan, q, k, v, NULL, NULL, bsr, o, lse);
  /* The kernel walks the plan's tiles (made from the plan's host arrays): bsr's arrays are
   * not read, and may be device pointers. */
  CHECK(check_ragged_tensors(ctx, plan, q, k, v, o, lse));
  return fi_cuda_block_sparse_run(ctx, plan, q, k, v, o, lse);
}

fi_status fi_block_sparse_paged_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                    const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                    const fi_bsr_matrix *bsr, fi_tensor *o, fi_tensor *lse) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_BLOCK_SPARSE));
  if (plan->num_pages <= 0)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "the plan was made for contiguous K/V (fi_block_sparse_plan): run it "
                        "with fi_block_sparse_run, or re-plan with fi_block_sparse_paged_plan");
  CHECK(check_bsr_run(ctx, plan, bsr));
  CHECK(check_q_o_lse(ctx, plan, q, o, lse));
  CHECK(fi_validate_kv_cache(ctx, kv, &plan->params, plan->num_pages));
  CHECK(check_pages_present(ctx, pages));
  CHECK(check_outputs_vs_kv(ctx, o, lse, &kv->k, &kv->v));
  if (ctx->backend == FI_BACKEND_CUDA)
    return fi_cuda_block_sparse_paged_run(ctx, plan, q, kv, pages, o, lse);
  /* Host: the page table (host arrays) must hold the plan's N keys (the mask is N wide). */
  int64_t total = 0;
  CHECK(fi_validate_page_table(ctx, pages, 1, plan->params.page_size, kv->k.shape[0], &total));
  if (total != plan->total_kv)
    return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                        "the page table holds %lld keys but the plan was made for N = %lld: "
                        "re-plan", (long long)total, (long long)plan->total_kv);
  return block_sparse_host_run(ctx, plan, q, NULL, NULL, kv, pages, bsr, o, lse);
}

/* ------------------------------------------------------------ shared prefix ------- */

fi_status fi_split_shared_prefix(fi_context *ctx, int32_t batch, int32_t page_size,
                                 const fi_page_table *pages, int32_t num_pages,
                                 int32_t *prefix_qo_indptr, int32_t *prefix_indptr,
                                 int32_t *prefix_indices, int32_t *prefix_last_page_len,
                                 int32_t *suffix_indptr, int32_t *suffix_indices,
                                 int32_t *suffix_last_page_len) {
  NEED_CTX(ctx);
  if (batch < 0 || page_size < 1 || num_pages < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "batch = %d, page_size = %d, num_pages = %d: batch and num_pages must "
                        "be >= 0, page_size >= 1", (int)batch, (int)page_size, (int)num_pages);
  if (!pages || !pages->indptr || !pages->indices || !pages->last_page_len)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "pages (indptr, indices, last_page_len) must not be NULL");
  if (!prefix_qo_indptr || !prefix_indptr || !prefix_indices || !prefix_last_page_len ||
      !suffix_indptr || !suffix_indices || !suffix_last_page_len)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "the seven output arrays (prefix_qo_indptr, prefix_indptr, "
                        "prefix_indices, prefix_last_page_len, suffix_indptr, "
                        "suffix_indices, suffix_last_page_len) must not be NULL");
  if (ctx->backend == FI_BACKEND_HOST) {
    int64_t total = 0;
    CHECK(fi_validate_page_table(ctx, pages, batch, page_size, num_pages, &total));
  }
  return DISPATCH(ctx, split_shared_prefix, ctx, batch, page_size, pages, prefix_qo_indptr,
                  prefix_indptr,
                  prefix_indices, prefix_last_page_len, suffix_indptr, suffix_indices,
                  suffix_last_page_len);
}

/* ------------------------------------------------------------ append -------------- */

fi_status fi_append_paged_kv_plan(fi_context *ctx, int32_t batch, int32_t page_size,
                                  const int32_t *host_append_indptr,
                                  const fi_page_table *host_pages, int32_t num_pages,
                                  fi_plan *plan) {
  NEED_CTX(ctx);
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  if (batch < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "batch = %d: must be >= 0", (int)batch);
  if (page_size <= 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "page_size = %d: must be >= 1",
                        (int)page_size);
  int64_t total_append = 0, total_kv = 0;
  CHECK(fi_validate_indptr(ctx, "append_indptr", host_append_indptr, batch, &total_append));
  CHECK(fi_validate_page_table(ctx, host_pages, batch, page_size, num_pages, &total_kv));
  fi_plan_problem pb = {FI_OP_APPEND_PAGED_KV, batch, host_append_indptr, host_pages->indptr,
                        host_pages->last_page_len, page_size};
  for (int32_t i = 0; i < batch; ++i) {
    int64_t n = fi_problem_qo_len(&pb, i), kv = fi_problem_kv_len(&pb, i);
    if (n > kv)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "request %d appends %lld tokens but its page table holds only %lld: "
                          "the page table must already include the new tokens",
                          (int)i, (long long)n, (long long)kv);
  }
  memset(plan, 0, sizeof(*plan));
  plan->family = FI_OP_APPEND_PAGED_KV;
  plan->batch = batch;
  plan->total_qo_rows = total_append;
  plan->total_kv = total_kv;
  plan->num_pages = num_pages;
  plan->params.page_size = page_size;
  plan->private_[FI_PLAN_MAGIC] = FI_PLAN_MAGIC_VALUE | (uint64_t)ctx->backend;
  return seal(plan, FI_SUCCESS);
}

fi_status fi_append_paged_kv_plan_device(fi_context *ctx, int32_t batch, int32_t page_size,
                                         int32_t num_pages, int64_t num_indices,
                                         int32_t *device_status, fi_plan *plan) {
  NEED_CTX(ctx);
  if (!plan) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "plan is NULL");
  if (batch < 0 || page_size <= 0 || num_pages < 0 || num_indices < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "batch = %d, page_size = %d, num_pages = %d, num_indices = %lld: batch, "
                        "num_pages and num_indices must be >= 0, page_size >= 1", (int)batch,
                        (int)page_size, (int)num_pages, (long long)num_indices);
  memset(plan, 0, sizeof(*plan));
  plan->family = FI_OP_APPEND_PAGED_KV;
  plan->batch = batch;
  plan->total_qo_rows = -1; /* known to the device only */
  plan->total_kv = -1;
  plan->num_pages = num_pages;
  plan->params.page_size = page_size;
  plan->private_[FI_PLAN_FLAGS] = FI_PLAN_FLAG_DEVICE;
  plan->private_[FI_PLAN_STATUS] = (uint64_t)(uintptr_t)device_status;
  plan->private_[FI_PLAN_NUM_INDICES] = (uint64_t)num_indices;
  plan->private_[FI_PLAN_STATUS_MIRROR] = (uint64_t)(uintptr_t)ctx->plan_status_mirror;
  plan->private_[FI_PLAN_MAGIC] = FI_PLAN_MAGIC_VALUE | (uint64_t)ctx->backend;
  return seal(plan, FI_SUCCESS);
}

fi_status fi_append_paged_kv_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *k,
                                 const fi_tensor *v, const int32_t *append_indptr,
                                 fi_paged_kv_cache *kv, const fi_page_table *pages) {
  NEED_CTX(ctx);
  CHECK(check_plan(ctx, plan, FI_OP_APPEND_PAGED_KV));
  if (!kv) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "kv cache is NULL");
  if (!k) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "k is NULL");
  if (k->rank != 3)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "k has rank %d: expected [nnz_append, kv_heads, head_dim]", (int)k->rank);
  fi_attention_params p = fi_attention_params_default((int32_t)k->shape[1], (int32_t)k->shape[1],
                                                      (int32_t)k->shape[2]);
  p.page_size = plan->params.page_size;
  p.kv_dtype = kv->k.dtype;
  const int device_plan = (plan->private_[FI_PLAN_FLAGS] & FI_PLAN_FLAG_DEVICE) != 0;
  int64_t shape[3] = {device_plan ? k->shape[0] : plan->total_qo_rows, k->shape[1], k->shape[2]};
  if (k->shape[1] <= 0 || k->shape[2] <= 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "k.shape = [%lld, %lld, %lld]: kv_heads and head_dim must be >= 1",
                        (long long)k->shape[0], (long long)k->shape[1], (long long)k->shape[2]);
  CHECK(fi_validate_tensor(ctx, "k [nnz_append, kv_heads, head_dim] (cache dtype)", k, p.kv_dtype, 3, shape));
  CHECK(fi_validate_tensor(ctx, "v [nnz_append, kv_heads, head_dim] (cache dtype)", v, p.kv_dtype, 3, shape));
  CHECK(fi_validate_kv_cache(ctx, kv, &p, plan->num_pages));
  /* the cache is written: one element per index, and not over the new tokens it reads */
  CHECK(fi_validate_no_self_overlap(ctx, "kv.k", &kv->k));
  CHECK(fi_validate_no_self_overlap(ctx, "kv.v", &kv->v));
  CHECK(fi_validate_disjoint(ctx, "kv.k", &kv->k, "k", k));
  CHECK(fi_validate_disjoint(ctx, "kv.k", &kv->k, "v", v));
  CHECK(fi_validate_disjoint(ctx, "kv.v", &kv->v, "k", k));
  CHECK(fi_validate_disjoint(ctx, "kv.v", &kv->v, "v", v));
  CHECK(check_pages_present(ctx, pages));
  if (!append_indptr)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "append_indptr is NULL");
  if (ctx->backend == FI_BACKEND_HOST) {
    CHECK(check_host_pages(ctx, plan, pages));
    int64_t total = 0;
    CHECK(fi_validate_indptr(ctx, "append_indptr", append_indptr, plan->batch, &total));
    fi_plan_problem pb = {FI_OP_APPEND_PAGED_KV, plan->batch, append_indptr, pages->indptr,
                          pages->last_page_len, plan->params.page_size};
    int64_t total_kv = 0;
    for (int32_t i = 0; i < plan->batch; ++i) {
      total_kv += fi_problem_kv_len(&pb, i);
      if (fi_problem_qo_len(&pb, i) > fi_problem_kv_len(&pb, i))
        return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                            "request %d appends more tokens than its page table holds: "
                            "re-plan when the index arrays change", (int)i);
    }
    if (device_plan && total > k->shape[0])
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "append_indptr[%d] = %lld new tokens but k holds %lld rows: pass "
                          "new K/V tensors of at least that many rows",
                          (int)plan->batch, (long long)total, (long long)k->shape[0]);
    if (!device_plan && (total != plan->total_qo_rows || total_kv != plan->total_kv))
      return fi_set_error(ctx, FI_ERROR_PLAN_MISMATCH,
                          "run arrays describe %lld appended and %lld KV tokens but the plan "
                          "was made for %lld and %lld: re-plan when the index arrays change",
                          (long long)total, (long long)total_kv,
                          (long long)plan->total_qo_rows, (long long)plan->total_kv);
  }
  return DISPATCH(ctx, append_paged_kv_run, ctx, plan, k, v, append_indptr, kv, pages);
}
