/* bench/bench_sparse.c -- block-sparse attention (fi_block_sparse_plan/run) beside the dense
 * kernel of the same shape: one sequence of 16384 query rows and keys, 32 / 8 heads,
 * head_dim 128, fp16, no causal mask. The dense row is the ragged prefill of the whole
 * square (the warp-specialised kernel), and again on the instance with the extras (a window
 * wider than the sequence: what block-sparse tiles run on); then BSR matrices of blocks 64 x 64 and 128 x 128:
 * every block listed (0 % sparsity), random blocks at 50, 90 and 98 % sparsity (each block
 * row lists the same count, at random columns), and a causal local + global pattern
 * (StreamingLLM-like: the first block column and the 8 blocks up to the diagonal); then
 * variable blocks of 32 .. 192 rows and keys at random, 50 and 90 % sparse; and the 64 x 64
 * random rows over a paged cache (pages of 64, 16 and 24 tokens, a shuffled page table;
 * pages of 16 both through the prefill stage, as the runtime runs them with one, and as
 * page boxes, without one).
 *
 * FLOPs: 4 * head_dim * qo_heads * (pairs of the listed blocks; causal: the kept ones), so a
 * kernel that computes only the listed blocks keeps the dense row's TFLOP/s; the variant
 * column gives that ratio. Bytes: q and o once, k and v once per listed block row
 * (a lower bound of the traffic). Then the shared-prefix decode (see shared_prefix;
 * FI_BENCH_SP_SPLIT=<tokens> sets its prefix plan's fixed_split_size, FI_BENCH_SP_HND=1 puts
 * its cache in HND, FI_BENCH_SP_L2=<pages> adds a row of its prefix over pages 0 .. pages-1
 * listed again and again: the same tiles with K/V that fits in L2;
 * FI_BENCH_SP_PRE_TILES=<q>x<kv> gives its prefix plan wgmma tiles). FI_BENCH_SP_TILES=<q>x<kv>
 * plans the dense and block-sparse rows on the
 * mma.sync kernel with those tiles (split) instead of the default kernel. Two more rows: the
 * shared prefix as one fused paged prefill (FI_BENCH_SP_FUSED_TILES=<q>x<kv>,
 * FI_BENCH_SP_FUSED_SPLIT) and overlapped with its suffix decode on a second stream
 * (FI_BENCH_SP_OV_CTAS, FI_BENCH_SP_OV_SPLIT, FI_BENCH_SP_OV_DECODE_CTAS: at most that many
 * CTAs for the decode, FI_DECODE_MAX_CTAS) and in lanes (fi/lanes.h: the prefix planned and
 * run in the main lane, the decode in the side lane, FI_BENCH_SP_LANES=<side SMs>, 0 the
 * default share; FI_BENCH_SP_LN_ALL=pre|suf|both makes that plan outside the lanes, for all
 * SMs, FI_BENCH_SP_LN_SPLIT=<tokens> the lane prefix plan's fixed split; two more rows time
 * each alone in its lane). FI_BENCH_SP_STRESS=<n>[,<every>]:
 * the composed and overlapped steps about n more times each, their results snapshotted every
 * `every` runs and compared bit for bit with the composed step's (stress_row). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "fi/lanes.h"

enum { SEQ = 16384, QO_HEADS = 32, KV_HEADS = 8, HD = 128 };

typedef struct sparse_arg {
  fi_context *ctx;
  fi_plan plan;
  fi_tensor q, k, v, o;
  fi_bsr_matrix bsr;
  int32_t *indptr; /* dense row: qo = kv indptr {0, SEQ} on the device */
  int dense;
  int paged; /* k, v as a paged cache (cache, pages on the device, host_pages) */
  fi_paged_kv_cache cache;
  fi_page_table pages, host_pages;
} sparse_arg;

static void run_sparse(void *p) {
  sparse_arg *a = (sparse_arg *)p;
  if (a->dense)
    FI_BENCH_OK(a->ctx, fi_ragged_prefill_run(a->ctx, &a->plan, &a->q, &a->k, &a->v,
                                              a->indptr, a->indptr, NULL, &a->o, NULL));
  else if (a->paged)
    FI_BENCH_OK(a->ctx, fi_block_sparse_paged_run(a->ctx, &a->plan, &a->q, &a->cache,
                                                  &a->pages, &a->bsr, &a->o, NULL));
  else
    FI_BENCH_OK(a->ctx, fi_block_sparse_run(a->ctx, &a->plan, &a->q, &a->k, &a->v, &a->bsr,
                                            &a->o, NULL));
}

static uint64_t sparse_rng = 0x9e3779b97f4a7c15ull;
/* FI_BENCH_SP_TILES: the tiles forced on the dense and block-sparse rows (NULL: none). */
static const fi_tiles *forced_tiles(void) {
  static fi_tiles t;
  const char *env = getenv("FI_BENCH_SP_TILES");
  int q = 0, kv = 0;
  if (!env || sscanf(env, "%dx%d", &q, &kv) != 2) return NULL;
  t.q_tile = q, t.kv_tile = kv, t.split_kv = 1, t.cores = FI_CORES_TENSOR;
  return &t;
}

static uint32_t sparse_rand(void) {
  sparse_rng ^= sparse_rng << 13;
  sparse_rng ^= sparse_rng >> 7;
  sparse_rng ^= sparse_rng << 17;
  return (uint32_t)(sparse_rng >> 16);
}

/* PAT_DENSE_EXTRAS: the dense row on the kernel with the extras (a window wider than the
 * sequence: no pair dropped), the instance block-sparse tiles run on with mma.sync tiles */
enum { PAT_DENSE_KERNEL, PAT_DENSE_EXTRAS, PAT_RANDOM, PAT_LOCAL_GLOBAL };

/* a's q, o [m, QO_HEADS, HD] and k, v [n, KV_HEADS, HD], fp16 on the device (q, k, v
 * random), with the context; sparse_free gives them back. */
static void sparse_tensors(fi_bench_ctx *b, sparse_arg *a, int64_t m, int64_t n) {
  memset(a, 0, sizeof *a);
  a->ctx = b->ctx;
  const int64_t qshape[3] = {m, QO_HEADS, HD}, kshape[3] = {n, KV_HEADS, HD};
  const size_t qbytes = (size_t)m * QO_HEADS * HD * 2, kbytes = (size_t)n * KV_HEADS * HD * 2;
  a->q = fi_tensor_contiguous(fi_bench_random_device(qbytes), FI_DTYPE_F16, 3, qshape);
  a->k = fi_tensor_contiguous(fi_bench_random_device(kbytes), FI_DTYPE_F16, 3, kshape);
  a->v = fi_tensor_contiguous(fi_bench_random_device(kbytes), FI_DTYPE_F16, 3, kshape);
  void *obuf = NULL;
  FI_BENCH_CK(cudaMalloc(&obuf, qbytes));
  a->o = fi_tensor_contiguous(obuf, FI_DTYPE_F16, 3, qshape);
}

static void sparse_free(sparse_arg *a) {
  cudaFree((void *)(uintptr_t)a->q.data);
  cudaFree(a->k.data);
  cudaFree(a->v.data);
  cudaFree(a->o.data);
  cudaFree(a->indptr);
}

/* One row; returns its rate (FLOP per ms, 0 when skipped). */
/* Plans a->bsr (or the dense row), times it and prints the row: FLOPs over `pairs`, bytes
 * q and o once plus k and v once per listed block row (`kv_share` of the block rows);
 * returns the TFLOP/s rate (0 when the plan is refused). */
static double time_plan(fi_bench_ctx *b, sparse_arg *a, const char *name,
                        const fi_attention_params *p, double pairs, double kv_share,
                        double dense_rate) {
  size_t ws_bytes = 0;
  if (a->dense)
    FI_BENCH_OK(b->ctx, fi_prefill_workspace_size(b->ctx, p, 1, SEQ, &ws_bytes));
  else
    FI_BENCH_OK(b->ctx, fi_block_sparse_workspace_size(b->ctx, p, SEQ, SEQ, a->bsr.block_rows,
                                                       a->bsr.block_cols, &ws_bytes));
  void *ws = NULL;
  FI_BENCH_CK(cudaMalloc(&ws, ws_bytes));
  const int32_t host_indptr[2] = {0, SEQ};
  const fi_tiles *tiles = forced_tiles();
  fi_status s = a->dense ? fi_ragged_prefill_plan(b->ctx, p, 1, host_indptr, host_indptr, NULL,
                                                  tiles, ws, ws_bytes, &a->plan)
                : a->paged ? fi_block_sparse_paged_plan(b->ctx, p, SEQ, &a->host_pages,
                                                        (int32_t)a->cache.k.shape[0], &a->bsr,
                                                        tiles, ws, ws_bytes, &a->plan)
                           : fi_block_sparse_plan(b->ctx, p, SEQ, SEQ, &a->bsr, tiles, ws,
                                                  ws_bytes, &a->plan);
  double rate = 0;
  if (s != FI_SUCCESS) {
    printf("| sparse   | %-34s | plan refused: %s\n", name, fi_last_error(b->ctx));
  } else {
    const double ms = fi_bench_time_ms(b, run_sparse, a);
    const double flops = 4.0 * HD * QO_HEADS * pairs;
    rate = flops / ms;
    char tn[64], variant[96];
    fi_tiles_name(a->plan.tiles, 0, tn, sizeof tn);
    if (dense_rate > 0)
      snprintf(variant, sizeof variant, "%s %.2fx dense",
               a->dense ? tn : a->plan.tiles.cores == FI_CORES_WGMMA ? "bsr_ws" : tn,
               rate / dense_rate);
    else
      snprintf(variant, sizeof variant, "%s", tn);
    const double qo_bytes = 2.0 * SEQ * QO_HEADS * HD * 2;
    const double kv_bytes = 2.0 * SEQ * KV_HEADS * HD * 2 * kv_share;
    fi_bench_row(b, "sparse", name, variant, ms, qo_bytes + kv_bytes, flops);
  }
  cudaFree(ws);
  return rate;
}

/* (page > 0: a paged cache with the stage fi_block_sparse_stage_size asks for; page < 0:
 * pages of -page tokens without a stage, so pages of a multiple of 16 load as page boxes) */
static double sparse_case(fi_bench_ctx *b, sparse_arg *a, int pattern, int block,
                          double sparsity, double dense_rate, int page) {
  const int boxes = page < 0;
  if (boxes) page = -page;
  char name[96];
  if (pattern == PAT_DENSE_KERNEL)
    snprintf(name, sizeof name, "dense prefill L%d h%d/%d", SEQ, QO_HEADS, KV_HEADS);
  else if (pattern == PAT_DENSE_EXTRAS)
    snprintf(name, sizeof name, "dense, extras kernel (window > L)");
  else if (pattern == PAT_RANDOM && page)
    snprintf(name, sizeof name, "bsr %dx%d random %.0f%% paged %d%s", block, block,
             sparsity * 100, page, boxes ? " boxes" : "");
  else if (pattern == PAT_RANDOM)
    snprintf(name, sizeof name, "bsr %dx%d random %.0f%% sparse", block, block, sparsity * 100);
  else
    snprintf(name, sizeof name, "bsr %dx%d causal local8+global", block, block);
  if (!fi_bench_selected(b, name)) return 0;
  fi_attention_params p = fi_attention_params_default(QO_HEADS, KV_HEADS, HD);
  p.mask_mode = pattern == PAT_LOCAL_GLOBAL ? FI_MASK_CAUSAL : FI_MASK_NONE;
  if (pattern == PAT_DENSE_EXTRAS) p.window_left = 2 * SEQ;
  const int64_t blocks = block > 0 ? SEQ / block : 0; /* (the dense row lists none) */
  int32_t *indptr = malloc(sizeof(int32_t) * (size_t)(blocks + 1));
  int32_t *indices = malloc(sizeof(int32_t) * (size_t)(blocks * blocks));
  int32_t *perm = malloc(sizeof(int32_t) * (size_t)blocks);
  double pairs = 0, listed_rows = 0;
  indptr[0] = 0;
  for (int64_t i = 0; i < blocks; ++i) {
    int32_t nnz = indptr[i];
    if (pattern == PAT_RANDOM) {
      int64_t keep = (int64_t)((1.0 - sparsity) * (double)blocks + 0.5);
      if (keep < 1) keep = 1;
      for (int64_t j = 0; j < blocks; ++j) perm[j] = (int32_t)j;
      for (int64_t j = 0; j < keep; ++j) { /* a random subset, then sorted */
        const int64_t r = j + sparse_rand() % (uint32_t)(blocks - j);
        const int32_t t = perm[j];
        perm[j] = perm[r];
        perm[r] = t;
      }
      for (int64_t j = 1; j < keep; ++j)
        for (int64_t l = j; l > 0 && perm[l - 1] > perm[l]; --l) {
          const int32_t t = perm[l];
          perm[l] = perm[l - 1];
          perm[l - 1] = t;
        }
      for (int64_t j = 0; j < keep; ++j) indices[nnz++] = perm[j];
      pairs += (double)keep * block * block;
    } else if (pattern == PAT_LOCAL_GLOBAL) {
      for (int64_t j = 0; j <= i; ++j)
        if (j == 0 || j > i - 8) {
          indices[nnz++] = (int32_t)j;
          pairs += j < i ? (double)block * block : (double)block * (block + 1) / 2;
        }
    }
    indptr[i + 1] = nnz;
    listed_rows += nnz > indptr[i];
  }
  if (pattern == PAT_DENSE_KERNEL || pattern == PAT_DENSE_EXTRAS) pairs = (double)SEQ * SEQ;
  memset(&a->bsr, 0, sizeof a->bsr);
  a->bsr.block_rows = a->bsr.block_cols = block;
  a->bsr.indptr = indptr;
  a->bsr.indices = indices;
  a->dense = pattern == PAT_DENSE_KERNEL || pattern == PAT_DENSE_EXTRAS;
  /* Paged: the same keys' shapes in pages of `page` tokens, a shuffled page table (the
   * values are random: only the time is read). */
  int32_t *ids = NULL;
  const int32_t used = page ? (SEQ + page - 1) / page : 0, pt_indptr[2] = {0, used},
                pt_last[1] = {SEQ - (used - 1) * page};
  void *stage = NULL;
  if (page) {
    p.page_size = page;
    ids = malloc(sizeof(int32_t) * (size_t)used);
    for (int32_t i = 0; i < used; ++i) ids[i] = i;
    for (int32_t i = used - 1; i > 0; --i) {
      const int32_t j = (int32_t)(sparse_rand() % (uint32_t)(i + 1)), t = ids[i];
      ids[i] = ids[j], ids[j] = t;
    }
    const int64_t shape[4] = {used, page, KV_HEADS, HD};
    const size_t bytes = (size_t)used * page * KV_HEADS * HD * 2;
    a->cache.k = fi_tensor_contiguous(fi_bench_random_device(bytes), FI_DTYPE_F16, 4, shape);
    a->cache.v = fi_tensor_contiguous(fi_bench_random_device(bytes), FI_DTYPE_F16, 4, shape);
    a->cache.layout = FI_LAYOUT_NHD;
    int32_t *d = NULL;
    FI_BENCH_CK(cudaMalloc((void **)&d, sizeof(int32_t) * (size_t)(used + 3)));
    FI_BENCH_CK(cudaMemcpy(d, pt_indptr, sizeof pt_indptr, cudaMemcpyHostToDevice));
    FI_BENCH_CK(cudaMemcpy(d + 2, pt_last, sizeof pt_last, cudaMemcpyHostToDevice));
    FI_BENCH_CK(cudaMemcpy(d + 3, ids, sizeof(int32_t) * (size_t)used, cudaMemcpyHostToDevice));
    a->pages = (fi_page_table){d, d + 3, d + 2};
    a->host_pages = (fi_page_table){pt_indptr, ids, pt_last};
    a->paged = 1;
    /* pages that are not a multiple of 16 go through the stage pass (token rows), and
     * pages of a multiple of 16 but not of 64 when it is there */
    size_t stage_bytes = 0;
    if (!boxes)
      FI_BENCH_OK(b->ctx, fi_block_sparse_stage_size(b->ctx, &p, (int64_t)used * page,
                                                     &stage_bytes));
    if (stage_bytes) FI_BENCH_CK(cudaMalloc(&stage, stage_bytes));
    FI_BENCH_OK(b->ctx, fi_context_set_prefill_stage(b->ctx, stage, stage_bytes));
  }
  const double rate =
      time_plan(b, a, name, &p, pairs, a->dense ? 1.0 : listed_rows / (double)blocks, dense_rate);
  if (page) {
    FI_BENCH_OK(b->ctx, fi_context_set_prefill_stage(b->ctx, NULL, 0));
    cudaFree(stage);
    cudaFree(a->cache.k.data), cudaFree(a->cache.v.data), cudaFree((void *)(uintptr_t)a->pages.indptr);
    a->paged = 0;
    free(ids);
  }
  free(indptr);
  free(indices);
  free(perm);
  return rate;
}

/* Variable blocks (FlashInfer's variable block-sparse form): block rows and column blocks of
 * 32 .. 192 rows / keys at random, each block row listing a random (1 - sparsity) share of
 * the column blocks. */
static void variable_case(fi_bench_ctx *b, sparse_arg *a, double sparsity, double dense_rate) {
  char name[96];
  snprintf(name, sizeof name, "bsr variable 32..192 random %.0f%% sparse", sparsity * 100);
  if (!fi_bench_selected(b, name)) return;
  fi_attention_params p = fi_attention_params_default(QO_HEADS, KV_HEADS, HD);
  int32_t *off = malloc(sizeof(int32_t) * (SEQ / 32 + 2)); /* rows and columns alike */
  int32_t count = 0;
  off[0] = 0;
  while (SEQ - off[count] > 192) {
    off[count + 1] = off[count] + 32 + (int32_t)(sparse_rand() % 161);
    ++count;
  }
  off[++count] = SEQ; /* the last block: 1 .. 192 rows; below 32 is merged into the one before */
  if (count > 1 && off[count] - off[count - 1] < 32) off[--count] = SEQ;
  int32_t *indptr = malloc(sizeof(int32_t) * (size_t)(count + 1));
  int32_t *indices = malloc(sizeof(int32_t) * (size_t)count * count);
  uint8_t *take = malloc((size_t)count);
  double pairs = 0;
  indptr[0] = 0;
  for (int32_t i = 0; i < count; ++i) {
    int32_t nnz = indptr[i];
    memset(take, 0, (size_t)count);
    int64_t keep = (int64_t)((1.0 - sparsity) * count + 0.5);
    if (keep < 1) keep = 1;
    for (int64_t left = keep; left > 0;) {
      const int32_t j = (int32_t)(sparse_rand() % (uint32_t)count);
      if (!take[j]) take[j] = 1, --left;
    }
    for (int32_t j = 0; j < count; ++j)
      if (take[j]) {
        indices[nnz++] = j;
        pairs += (double)(off[i + 1] - off[i]) * (off[j + 1] - off[j]);
      }
    indptr[i + 1] = nnz;
  }
  memset(&a->bsr, 0, sizeof a->bsr);
  a->bsr.block_rows = a->bsr.block_cols = 32; /* the smallest block */
  a->bsr.indptr = indptr;
  a->bsr.indices = indices;
  a->bsr.num_block_rows = a->bsr.num_block_cols = count;
  a->bsr.row_offsets = a->bsr.col_offsets = off;
  a->dense = 0;
  time_plan(b, a, name, &p, pairs, 1.0, dense_rate);
  free(off), free(indptr), free(indices), free(take);
}

/* ---- long rows: 512 query rows against 65536 keys, 64 x 64 blocks at random, 50 % sparse:
 * 16 units x 8 KV heads do not fill the GPU, so the plan splits each unit along its tiles
 * (split_kv, merged); the same matrix with split_kv = 0 beside it. */
static void long_rows(fi_bench_ctx *b, double dense_rate) {
  enum { LM = 512, LN = 65536, LB = 64 };
  const int64_t blocks_r = LM / LB, blocks_c = LN / LB, keep = blocks_c / 2;
  int32_t *indptr = malloc(sizeof(int32_t) * (blocks_r + 1));
  int32_t *indices = malloc(sizeof(int32_t) * blocks_r * keep);
  indptr[0] = 0;
  for (int64_t i = 0; i < blocks_r; ++i) {
    int64_t nnz = indptr[i], left = keep;
    for (int64_t j = 0; j < blocks_c; ++j) /* `keep` of the blocks, each with the odds left */
      if ((int64_t)(sparse_rand() % (uint32_t)(blocks_c - j)) < left)
        indices[nnz++] = (int32_t)j, --left;
    indptr[i + 1] = (int32_t)nnz;
  }
  sparse_arg a;
  sparse_tensors(b, &a, LM, LN);
  const size_t qbytes = (size_t)LM * QO_HEADS * HD * 2, kbytes = (size_t)LN * KV_HEADS * HD * 2;
  void *ws = NULL;
  a.bsr.block_rows = a.bsr.block_cols = LB;
  a.bsr.indptr = indptr;
  a.bsr.indices = indices;
  fi_attention_params p = fi_attention_params_default(QO_HEADS, KV_HEADS, HD);
  size_t ws_bytes = 0;
  FI_BENCH_OK(b->ctx, fi_block_sparse_workspace_size(b->ctx, &p, LM, LN, LB, LB, &ws_bytes));
  FI_BENCH_CK(cudaMalloc(&ws, ws_bytes));
  const double flops = 4.0 * HD * QO_HEADS * (double)LM * keep * LB;
  for (int split = 1; split >= 0; --split) {
    char name[96], variant[96];
    snprintf(name, sizeof name, "bsr 64x64 50%% M%d N%d%s", LM, LN, split ? "" : " no split");
    if (!fi_bench_selected(b, name)) continue;
    const fi_tiles t = {128, 128, split, FI_CORES_WGMMA};
    FI_BENCH_OK(b->ctx,
                fi_block_sparse_plan(b->ctx, &p, LM, LN, &a.bsr, &t, ws, ws_bytes, &a.plan));
    const double ms = fi_bench_time_ms(b, run_sparse, &a);
    snprintf(variant, sizeof variant, "u%d p%d %.2fx dense", a.plan.num_work_units,
             a.plan.num_partial_rows, flops / ms / dense_rate);
    fi_bench_row(b, "sparse", name, variant, ms, qbytes * 2.0 + kbytes * 2.0, flops);
  }
  cudaFree(ws);
  sparse_free(&a);
  free(indptr), free(indices);
}

/* ---- shared prefix (the paper's composable formats): 64 requests decode one token each
 * over a shared 32768-token prefix (2048 pages of 16, stored once) plus 256 tokens of
 * their own. Plain: one paged decode whose page tables all list the prefix pages (read
 * once per request). Composed: the prefix as ONE block row of all 64 queries (a paged
 * prefill of one request with 64 query rows: each KV tile loaded once for all rows of a
 * 128-row chunk), the suffixes as a decode (block rows of 1), the two states merged. */
enum { SP_BATCH = 64, SP_PREFIX_PAGES = 2048, SP_SUFFIX_PAGES = 16, SP_PAGE = 16 };

typedef struct prefix_arg {
  fi_context *ctx;
  fi_plan plain, prefix, suffix;
  fi_tensor q, o, o_prefix, lse_prefix, o_suffix, lse_suffix;
  fi_paged_kv_cache kv;
  fi_page_table all, pre, suf;
  fi_page_table pre_l2; /* FI_BENCH_SP_L2: the prefix's chunks all over its first pages */
  int32_t *qo_indptr; /* {0, SP_BATCH} */
  /* the prefix's attention over contiguous K/V (its keys as token rows): the paging's cost */
  fi_plan ragged;
  fi_tensor k_rows, v_rows;
  int32_t *kv_indptr; /* {0, prefix tokens} */
  /* fused: ONE paged prefill whose first request is the prefix (the 64 queries as one block
   * row) and whose 64 others are the suffixes (block rows of 1), over q written twice; the
   * two halves of its output merged */
  fi_plan fused;
  fi_page_table fused_pages;
  int32_t *fused_qo_indptr;
  fi_tensor q2, o2, lse2, o2_head, lse2_head, o2_tail, lse2_tail;
  cudaStream_t stream;
  /* overlapped: the prefix on a context whose warp-specialised kernel keeps to fewer CTAs
   * (FI_PREFILL_WS_CTAS) and the suffix decode at the same time on a second stream, joined
   * by events before the merge */
  fi_context *ctx_pre, *ctx_suf;
  fi_plan ov_prefix, ov_suffix;
  cudaStream_t side; /* the decode's (the prefix runs on the timed stream) */
  cudaEvent_t fork, join;
  /* 0: the prefix's own merge, then fi_merge_state (the composed and overlapped rows, as
   * fi-decompose-shared-prefix emits); 1: one merge (fi_paged_prefill_run_unmerged, then
   * fi_prefill_merge_run with the suffixes' state: the "one merge" rows); 2: the same with
   * the prefix before the decode (run_composed only) */
  int one_merge;
  /* lanes: the prefix's plan made in the main lane (split for its SMs), the decode's in the
   * side lane, on a.ctx */
  fi_lanes *lanes;
  fi_plan lane_prefix, lane_suffix;
  /* the lanes step with one merge: the prefix unmerged in the main lane, its partials and
   * the suffixes' state merged by fi_prefill_merge_run after the join */
  int lanes_one_merge;
} prefix_arg;

/* The overlapped row's halves, each on its context's stream. */
static void ov_prefix_run(prefix_arg *a) {
  FI_BENCH_OK(a->ctx_pre, (a->one_merge ? fi_paged_prefill_run_unmerged : fi_paged_prefill_run)(
                              a->ctx_pre, &a->ov_prefix, &a->q, a->qo_indptr, &a->kv, &a->pre,
                              NULL, &a->o_prefix, &a->lse_prefix));
}
static void ov_suffix_run(prefix_arg *a) {
  FI_BENCH_OK(a->ctx_suf, fi_decode_run(a->ctx_suf, &a->ov_suffix, &a->q, &a->kv, &a->suf,
                                        &a->o_suffix, &a->lse_suffix));
}

static void run_overlapped(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  FI_BENCH_CK(cudaEventRecord(a->fork, a->stream));
  FI_BENCH_CK(cudaStreamWaitEvent(a->side, a->fork, 0));
  /* (the prefix first: its CTAs take their SMs before the decode's fill the rest) */
  ov_prefix_run(a);
  ov_suffix_run(a);
  FI_BENCH_CK(cudaEventRecord(a->join, a->side));
  FI_BENCH_CK(cudaStreamWaitEvent(a->stream, a->join, 0));
  if (a->one_merge)
    FI_BENCH_OK(a->ctx_pre, fi_prefill_merge_run(a->ctx_pre, &a->ov_prefix, &a->o_suffix,
                                                 &a->lse_suffix, &a->o_prefix, &a->lse_prefix));
  else
    FI_BENCH_OK(a->ctx_pre, fi_merge_state(a->ctx_pre, &a->o_prefix, &a->lse_prefix,
                                           &a->o_suffix, &a->lse_suffix, &a->o_prefix,
                                           &a->lse_prefix));
}

/* The shared-prefix step in lanes (fi/lanes.h): the prefix in the main lane, the suffix
 * decode in the side lane at the same time, joined before the merge (part 1 / 2: that
 * lane's half alone; part 3: the merge alone, over an earlier run's outputs). With
 * lanes_one_merge the prefix runs unmerged and fi_prefill_merge_run merges its partials with
 * the suffixes' state; else fi_merge_state merges the two outputs. */
static void lanes_step(prefix_arg *a, int part) {
  const int prefix = part == 0 || part == 1, suffix = part == 0 || part == 2,
            merge = part == 0 || part == 3;
  if (prefix) {
    FI_BENCH_OK(a->ctx, fi_lanes_enter(a->lanes, FI_LANE_MAIN));
    FI_BENCH_OK(a->ctx, (a->lanes_one_merge ? fi_paged_prefill_run_unmerged
                                            : fi_paged_prefill_run)(
                            a->ctx, &a->lane_prefix, &a->q, a->qo_indptr, &a->kv, &a->pre,
                            NULL, &a->o_prefix, &a->lse_prefix));
    FI_BENCH_OK(a->ctx, fi_lanes_leave(a->lanes));
  }
  if (suffix) {
    FI_BENCH_OK(a->ctx, fi_lanes_enter(a->lanes, FI_LANE_SIDE));
    FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->lane_suffix, &a->q, &a->kv, &a->suf,
                                      &a->o_suffix, &a->lse_suffix));
    FI_BENCH_OK(a->ctx, fi_lanes_leave(a->lanes));
  }
  if (prefix || suffix) FI_BENCH_OK(a->ctx, fi_lanes_join(a->lanes));
  if (!merge) return;
  if (a->lanes_one_merge)
    FI_BENCH_OK(a->ctx, fi_prefill_merge_run(a->ctx, &a->lane_prefix, &a->o_suffix,
                                             &a->lse_suffix, &a->o_prefix, &a->lse_prefix));
  else
    FI_BENCH_OK(a->ctx, fi_merge_state(a->ctx, &a->o_prefix, &a->lse_prefix, &a->o_suffix,
                                       &a->lse_suffix, &a->o_prefix, &a->lse_prefix));
}

static void run_lanes(void *p) { lanes_step((prefix_arg *)p, 0); }
static void run_lane_prefix(void *p) { lanes_step((prefix_arg *)p, 1); }
static void run_lane_suffix(void *p) { lanes_step((prefix_arg *)p, 2); }
static void run_lane_merge(void *p) { lanes_step((prefix_arg *)p, 3); }

/* A CUDA context created with the tuning variable `name` (read at context creation) set to
 * `cap` (0: none). */
static fi_context *context_with_cap(const char *name, int cap) {
  char value[16];
  snprintf(value, sizeof value, "%d", cap);
  setenv(name, value, 1);
  fi_context *ctx = NULL;
  FI_BENCH_OK(NULL, fi_context_create(FI_BACKEND_CUDA, &ctx));
  unsetenv(name);
  return ctx;
}

static void run_fused(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  const size_t half = (size_t)SP_BATCH * QO_HEADS * HD * 2;
  FI_BENCH_CK(cudaMemcpyAsync((char *)a->q2.data + half, a->q2.data, half,
                              cudaMemcpyDeviceToDevice, a->stream));
  FI_BENCH_OK(a->ctx, fi_paged_prefill_run(a->ctx, &a->fused, &a->q2, a->fused_qo_indptr, &a->kv,
                                           &a->fused_pages, NULL, &a->o2, &a->lse2));
  FI_BENCH_OK(a->ctx, fi_merge_state(a->ctx, &a->o2_head, &a->lse2_head, &a->o2_tail,
                                     &a->lse2_tail, &a->o2_head, &a->lse2_head));
}

static void run_plain(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->plain, &a->q, &a->kv, &a->all, &a->o, NULL));
}

/* One merge (one_merge 1): the suffixes' decode first (its state is the merge's other
 * input), then the prefix with its merge deferred, then that merge with the suffixes' state
 * folded in (the prefix's partial rows still in L2). Prefix first (one_merge 2): the prefix
 * unmerged, the decode, the merge (the same bits; the partial rows may have left L2). Two
 * merges (0): the prefix run, the decode, merge_state. */
static void run_composed(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  if (a->one_merge) {
    if (a->one_merge == 1)
      FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->suffix, &a->q, &a->kv, &a->suf,
                                        &a->o_suffix, &a->lse_suffix));
    FI_BENCH_OK(a->ctx, fi_paged_prefill_run_unmerged(a->ctx, &a->prefix, &a->q, a->qo_indptr,
                                                      &a->kv, &a->pre, NULL, &a->o_prefix,
                                                      &a->lse_prefix));
    if (a->one_merge == 2)
      FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->suffix, &a->q, &a->kv, &a->suf,
                                        &a->o_suffix, &a->lse_suffix));
    FI_BENCH_OK(a->ctx, fi_prefill_merge_run(a->ctx, &a->prefix, &a->o_suffix, &a->lse_suffix,
                                             &a->o_prefix, &a->lse_prefix));
    return;
  }
  FI_BENCH_OK(a->ctx, fi_paged_prefill_run(a->ctx, &a->prefix, &a->q, a->qo_indptr, &a->kv,
                                           &a->pre, NULL, &a->o_prefix, &a->lse_prefix));
  FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->suffix, &a->q, &a->kv, &a->suf, &a->o_suffix,
                                    &a->lse_suffix));
  FI_BENCH_OK(a->ctx, fi_merge_state(a->ctx, &a->o_prefix, &a->lse_prefix, &a->o_suffix,
                                     &a->lse_suffix, &a->o_prefix, &a->lse_prefix));
}

static void run_prefix_only(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  FI_BENCH_OK(a->ctx, fi_paged_prefill_run(a->ctx, &a->prefix, &a->q, a->qo_indptr, &a->kv,
                                           &a->pre, NULL, &a->o_prefix, &a->lse_prefix));
}

static void run_prefix_l2(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  FI_BENCH_OK(a->ctx, fi_paged_prefill_run(a->ctx, &a->prefix, &a->q, a->qo_indptr, &a->kv,
                                           &a->pre_l2, NULL, &a->o_prefix, &a->lse_prefix));
}

static void run_prefix_ragged(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  FI_BENCH_OK(a->ctx, fi_ragged_prefill_run(a->ctx, &a->ragged, &a->q, &a->k_rows, &a->v_rows,
                                            a->qo_indptr, a->kv_indptr, NULL, &a->o_prefix,
                                            &a->lse_prefix));
}

static void run_suffix_only(void *p) {
  prefix_arg *a = (prefix_arg *)p;
  FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->suffix, &a->q, &a->kv, &a->suf, &a->o_suffix,
                                    &a->lse_suffix));
}

static int32_t *to_device(const int32_t *h, size_t n) {
  int32_t *d = NULL;
  FI_BENCH_CK(cudaMalloc((void **)&d, sizeof(int32_t) * (n ? n : 1)));
  if (n) FI_BENCH_CK(cudaMemcpy(d, h, sizeof(int32_t) * n, cudaMemcpyHostToDevice));
  return d;
}

static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  uint32_t x;
  if (e == 0) {
    const float f = (float)m * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  x = sign | ((e == 31 ? 255 : e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* The fp16 [SP_BATCH, QO_HEADS, HD] output `dev` (once `stream` is done) downloaded into
 * `host`: its largest |difference| from `ref`. */
static double max_diff_from(const uint16_t *ref, const void *dev, uint16_t *host, size_t bytes,
                            cudaStream_t stream) {
  FI_BENCH_CK(cudaStreamSynchronize(stream));
  FI_BENCH_CK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (size_t i = 0; i < bytes / 2; ++i) {
    const double d = fabs((double)half_to_float(ref[i]) - (double)half_to_float(host[i]));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/* FI_BENCH_SP_STRESS=<n>[,<every>]: run `fn` n / every x every more times back to back and
 * snapshot the step's outputs (D2D copies on the timed stream) after every `every`-th run
 * (default 1; at most 4096 snapshots, 1 MiB each per output), then compare each snapshot
 * with its reference bit for bit: a step whose result differs between runs of the same
 * inputs reads or writes out of order. Reports the differing snapshots on stderr, per
 * output. outs: fp16 [SP_BATCH, QO_HEADS, HD] device buffers with their names and host
 * references, ended by one with a NULL name. */
typedef struct stress_out {
  const char *name;
  const void *dev;
  const uint16_t *ref;
} stress_out;

static void stress_row(fi_bench_ctx *b, const char *name, void (*fn)(void *), void *arg,
                       const stress_out *outs) {
  const char *env = getenv("FI_BENCH_SP_STRESS");
  if (!env) return;
  int n = 0, every = 1, nout = 0;
  if (sscanf(env, "%d,%d", &n, &every) < 1 || n <= 0) return;
  if (every < 1) every = 1;
  const int snaps = n / every < 4096 ? n / every : 4096;
  if (snaps < 1) return;
  while (outs[nout].name) ++nout;
  const size_t bytes = (size_t)SP_BATCH * QO_HEADS * HD * 2;
  char *dev = NULL;
  FI_BENCH_CK(cudaMalloc((void **)&dev, bytes * (size_t)snaps * nout));
  for (int i = 0; i < snaps * every; ++i) {
    fn(arg);
    if ((i + 1) % every == 0)
      for (int k = 0; k < nout; ++k)
        FI_BENCH_CK(cudaMemcpyAsync(dev + bytes * ((size_t)(i / every) * nout + k), outs[k].dev,
                                    bytes, cudaMemcpyDeviceToDevice, b->stream));
  }
  FI_BENCH_CK(cudaStreamSynchronize(b->stream));
  uint16_t *h = malloc(bytes);
  for (int k = 0; k < nout; ++k) {
    int bad = 0;
    for (int s = 0; s < snaps; ++s) {
      FI_BENCH_CK(cudaMemcpy(h, dev + bytes * ((size_t)s * nout + k), bytes,
                             cudaMemcpyDeviceToHost));
      size_t diff = 0, first = 0, last = 0;
      double worst = 0;
      for (size_t i = 0; i < bytes / 2; ++i) {
        if (h[i] == outs[k].ref[i]) continue;
        if (!diff++) first = i;
        last = i;
        const double d =
            fabs((double)half_to_float(h[i]) - (double)half_to_float(outs[k].ref[i]));
        if (!(d <= worst)) worst = d;
      }
      if (diff && bad == 0 && getenv("FI_BENCH_SP_STRESS_DUMP")) /* the first one's elements */
        for (size_t i = first, shown = 0; i <= last && shown < 128; ++i)
          if (h[i] != outs[k].ref[i]) {
            fprintf(stderr, "  %s row %zu head %zu dim %zu: %.6f (ref %.6f)\n", outs[k].name,
                    i / (QO_HEADS * HD), i / HD % QO_HEADS, i % HD, half_to_float(h[i]),
                    half_to_float(outs[k].ref[i]));
            ++shown;
          }
      if (diff && bad++ < 6)
        fprintf(stderr, "stress %s, %s: run %d differs in %zu elements (|d| <= %.1e), rows "
                "%zu..%zu (heads %zu..%zu)\n", name, outs[k].name, (s + 1) * every, diff, worst,
                first / (QO_HEADS * HD), last / (QO_HEADS * HD), first / HD % QO_HEADS,
                last / HD % QO_HEADS);
    }
    fprintf(stderr, "stress %s, %s: %d of %d snapshots (every %d of %d runs) differ\n", name,
            outs[k].name, bad, snaps, every, snaps * every);
  }
  free(h);
  cudaFree(dev);
}

/* A row of the shared prefix's attention (64 query rows x the prefix's keys). */
static void prefix_row(fi_bench_ctx *b, const char *name, const fi_plan *plan, double ms) {
  char tn[64], variant[96];
  fi_tiles_name(plan->tiles, 0, tn, sizeof tn);
  snprintf(variant, sizeof variant, "%s u%d p%d", tn, plan->num_work_units,
           plan->num_partial_rows);
  const double keys = (double)SP_PREFIX_PAGES * SP_PAGE;
  fi_bench_row(b, "sparse", name, variant, ms, keys * KV_HEADS * HD * 2 * 2,
               4.0 * HD * QO_HEADS * SP_BATCH * keys);
}

static void shared_prefix(fi_bench_ctx *b) {
  const char *plain_name = "shared prefix b64 32k+256: plain", *comp_name =
      "shared prefix b64 32k+256: composed";
  if (!fi_bench_selected(b, plain_name) && !fi_bench_selected(b, comp_name)) return;
  fi_attention_params p = fi_attention_params_default(QO_HEADS, KV_HEADS, HD);
  p.page_size = SP_PAGE;
  const int num_pages = SP_PREFIX_PAGES + SP_BATCH * SP_SUFFIX_PAGES;
  /* Page ids: the prefix on pages 0 .. 2047, request i's suffix after them. */
  const int per_req = SP_PREFIX_PAGES + SP_SUFFIX_PAGES;
  int32_t *all_indptr = malloc(sizeof(int32_t) * (SP_BATCH + 1));
  int32_t *all_indices = malloc(sizeof(int32_t) * (size_t)SP_BATCH * per_req);
  int32_t *suf_indptr = malloc(sizeof(int32_t) * (SP_BATCH + 1));
  int32_t *suf_indices = malloc(sizeof(int32_t) * SP_BATCH * SP_SUFFIX_PAGES);
  int32_t *pre_indices = malloc(sizeof(int32_t) * SP_PREFIX_PAGES);
  int32_t last[SP_BATCH], pre_indptr[2] = {0, SP_PREFIX_PAGES}, pre_last[1] = {SP_PAGE};
  int32_t qo_indptr[2] = {0, SP_BATCH};
  for (int j = 0; j < SP_PREFIX_PAGES; ++j) pre_indices[j] = j;
  for (int i = 0; i <= SP_BATCH; ++i)
    all_indptr[i] = i * per_req, suf_indptr[i] = i * SP_SUFFIX_PAGES;
  for (int i = 0; i < SP_BATCH; ++i) {
    last[i] = SP_PAGE;
    for (int j = 0; j < SP_PREFIX_PAGES; ++j) all_indices[i * per_req + j] = j;
    for (int j = 0; j < SP_SUFFIX_PAGES; ++j) {
      const int32_t page = SP_PREFIX_PAGES + i * SP_SUFFIX_PAGES + j;
      all_indices[i * per_req + SP_PREFIX_PAGES + j] = page;
      suf_indices[i * SP_SUFFIX_PAGES + j] = page;
    }
  }
  prefix_arg a;
  memset(&a, 0, sizeof a);
  a.ctx = b->ctx;
  /* FI_BENCH_SP_HND=1: the cache in HND (each page's rows of one head contiguous) */
  const int hnd = getenv("FI_BENCH_SP_HND") && atoi(getenv("FI_BENCH_SP_HND")) > 0;
  const int64_t kvshape[5] = {num_pages, 2, hnd ? KV_HEADS : SP_PAGE, hnd ? SP_PAGE : KV_HEADS, HD};
  const int64_t qshape[3] = {SP_BATCH, QO_HEADS, HD}, lshape[2] = {SP_BATCH, QO_HEADS};
  const size_t kv_bytes = (size_t)num_pages * 2 * SP_PAGE * KV_HEADS * HD * 2;
  const size_t q_bytes = (size_t)SP_BATCH * QO_HEADS * HD * 2;
  const size_t l_bytes = (size_t)SP_BATCH * QO_HEADS * 4;
  fi_tensor kvt = fi_tensor_contiguous(fi_bench_random_device(kv_bytes), FI_DTYPE_F16, 5, kvshape);
  FI_BENCH_OK(NULL, fi_paged_kv_cache_from_combined(&kvt, hnd ? FI_LAYOUT_HND : FI_LAYOUT_NHD, &a.kv));
  a.q = fi_tensor_contiguous(fi_bench_random_device(q_bytes), FI_DTYPE_F16, 3, qshape);
  void *bufs[5];
  for (int i = 0; i < 5; ++i) FI_BENCH_CK(cudaMalloc(&bufs[i], i % 2 ? l_bytes : q_bytes));
  a.o = fi_tensor_contiguous(bufs[0], FI_DTYPE_F16, 3, qshape);
  a.lse_prefix = fi_tensor_contiguous(bufs[1], FI_DTYPE_F32, 2, lshape);
  a.o_prefix = fi_tensor_contiguous(bufs[2], FI_DTYPE_F16, 3, qshape);
  a.lse_suffix = fi_tensor_contiguous(bufs[3], FI_DTYPE_F32, 2, lshape);
  a.o_suffix = fi_tensor_contiguous(bufs[4], FI_DTYPE_F16, 3, qshape);
  fi_page_table h_all = {all_indptr, all_indices, last};
  fi_page_table h_pre = {pre_indptr, pre_indices, pre_last};
  fi_page_table h_suf = {suf_indptr, suf_indices, last};
  a.all.indptr = to_device(all_indptr, SP_BATCH + 1);
  a.all.indices = to_device(all_indices, (size_t)SP_BATCH * per_req);
  a.all.last_page_len = a.suf.last_page_len = to_device(last, SP_BATCH);
  a.pre.indptr = to_device(pre_indptr, 2);
  a.pre.indices = to_device(pre_indices, SP_PREFIX_PAGES);
  a.pre.last_page_len = to_device(pre_last, 1);
  a.suf.indptr = to_device(suf_indptr, SP_BATCH + 1);
  a.suf.indices = to_device(suf_indices, SP_BATCH * SP_SUFFIX_PAGES);
  a.qo_indptr = to_device(qo_indptr, 2);
  size_t w1 = 0, w2 = 0, w3 = 0;
  FI_BENCH_OK(b->ctx, fi_decode_workspace_size(b->ctx, &p, SP_BATCH, &w1));
  FI_BENCH_OK(b->ctx, fi_prefill_workspace_size(b->ctx, &p, 1, SP_BATCH, &w2));
  FI_BENCH_OK(b->ctx, fi_decode_workspace_size(b->ctx, &p, SP_BATCH, &w3));
  void *ws[3];
  FI_BENCH_CK(cudaMalloc(&ws[0], w1));
  FI_BENCH_CK(cudaMalloc(&ws[1], w2));
  FI_BENCH_CK(cudaMalloc(&ws[2], w3));
  FI_BENCH_OK(b->ctx, fi_decode_plan(b->ctx, &p, SP_BATCH, &h_all, num_pages, NULL, ws[0], w1,
                                     &a.plain));
  /* FI_BENCH_SP_SPLIT=<tokens>: the prefix plan's fixed_split_size (split sweeps) */
  fi_attention_params pp = p;
  const char *sp_split = getenv("FI_BENCH_SP_SPLIT");
  if (sp_split) pp.fixed_split_size = atoi(sp_split);
  /* FI_BENCH_SP_PRE_TILES=<q>x<kv>: wgmma tiles for the prefix plan (default: the planner's) */
  fi_tiles pt = {128, 128, 1, FI_CORES_WGMMA};
  const char *pre_tiles = getenv("FI_BENCH_SP_PRE_TILES");
  if (pre_tiles) sscanf(pre_tiles, "%dx%d", &pt.q_tile, &pt.kv_tile);
  FI_BENCH_OK(b->ctx, fi_paged_prefill_plan(b->ctx, &pp, 1, qo_indptr, &h_pre, num_pages, NULL,
                                            pre_tiles ? &pt : NULL, ws[1], w2, &a.prefix));
  FI_BENCH_OK(b->ctx, fi_decode_plan(b->ctx, &p, SP_BATCH, &h_suf, num_pages, NULL, ws[2], w3,
                                     &a.suffix));
  const double ms_plain = fi_bench_time_ms(b, run_plain, &a);
  /* The composed step with two merges (the compiled form), then with one, each against
   * plain (fp16 outputs; the merge orders differ): the largest difference. */
  uint16_t *h1 = malloc(q_bytes), *h2 = malloc(q_bytes);
  double ms_comps[3] = {0, 0, 0}, diffs[3] = {0, 0, 0}; /* two merges, one, prefix first */
  for (int one = 2; one >= 0; --one) { /* (two merges last: the o the stress rows compare) */
    a.one_merge = one;
    ms_comps[one] = fi_bench_time_ms(b, run_composed, &a);
    FI_BENCH_CK(cudaStreamSynchronize(b->stream));
    if (one == 2) FI_BENCH_CK(cudaMemcpy(h1, bufs[0], q_bytes, cudaMemcpyDeviceToHost));
    diffs[one] = max_diff_from(h1, bufs[2], h2, q_bytes, b->stream);
  }
  /* the composed step's result and its suffix decode's, bit for bit (FI_BENCH_SP_STRESS) */
  uint16_t *h_comp = malloc(q_bytes), *h_suf_out = malloc(q_bytes);
  memcpy(h_comp, h2, q_bytes);
  FI_BENCH_CK(cudaMemcpy(h_suf_out, bufs[4], q_bytes, cudaMemcpyDeviceToHost));
  const stress_out outs[3] = {{"o", bufs[2], h_comp}, {"o_suffix", bufs[4], h_suf_out}, {NULL}};
  stress_row(b, "composed", run_composed, &a, outs);
  const double ms_prefix = fi_bench_time_ms(b, run_prefix_only, &a); /* (after the diff) */
  /* FI_BENCH_SP_L2=<pages>: the same prefix plan run over a page table that lists pages
   * 0 .. pages-1 again and again (the same tiles and boxes, but K/V small enough to stay
   * in L2): what the prefix costs when HBM is out of the way. */
  int l2_pages = getenv("FI_BENCH_SP_L2") ? atoi(getenv("FI_BENCH_SP_L2")) : 0;
  if (l2_pages > SP_PREFIX_PAGES) l2_pages = SP_PREFIX_PAGES; /* (the prefix's own pages) */
  double ms_l2 = 0;
  if (l2_pages > 0) {
    int32_t *l2_indices = malloc(sizeof(int32_t) * SP_PREFIX_PAGES);
    for (int j = 0; j < SP_PREFIX_PAGES; ++j) l2_indices[j] = j % l2_pages;
    a.pre_l2 = a.pre;
    a.pre_l2.indices = to_device(l2_indices, SP_PREFIX_PAGES);
    ms_l2 = fi_bench_time_ms(b, run_prefix_l2, &a);
    FI_BENCH_CK(cudaStreamSynchronize(b->stream));
    cudaFree((void *)(uintptr_t)a.pre_l2.indices);
    free(l2_indices);
  }
  /* the same attention over contiguous K/V rows (random values: only the time is read) */
  const int32_t pre_tokens = SP_PREFIX_PAGES * SP_PAGE, kv_ind[2] = {0, pre_tokens};
  const int64_t rshape[3] = {pre_tokens, KV_HEADS, HD};
  const size_t rbytes = (size_t)pre_tokens * KV_HEADS * HD * 2;
  a.k_rows = fi_tensor_contiguous(fi_bench_random_device(rbytes), FI_DTYPE_F16, 3, rshape);
  a.v_rows = fi_tensor_contiguous(fi_bench_random_device(rbytes), FI_DTYPE_F16, 3, rshape);
  a.kv_indptr = to_device(kv_ind, 2);
  void *ws_ragged = NULL;
  FI_BENCH_CK(cudaMalloc(&ws_ragged, w2));
  FI_BENCH_OK(b->ctx, fi_ragged_prefill_plan(b->ctx, &pp, 1, qo_indptr, kv_ind, NULL, NULL,
                                             ws_ragged, w2, &a.ragged));
  const double ms_ragged = fi_bench_time_ms(b, run_prefix_ragged, &a);
  FI_BENCH_CK(cudaStreamSynchronize(b->stream));
  cudaFree(a.k_rows.data), cudaFree(a.v_rows.data), cudaFree(a.kv_indptr), cudaFree(ws_ragged);
  const double ms_suffix = fi_bench_time_ms(b, run_suffix_only, &a);

  /* lanes (fi/lanes.h), on the bench's context: each plan made in the lane that runs it */
  const int side_sms = getenv("FI_BENCH_SP_LANES") ? atoi(getenv("FI_BENCH_SP_LANES")) : 0;
  /* (lane parts: prefix, suffix, prefix unmerged, the one merge; 1: the one-merge step) */
  double ms_lanes = 0, ms_lanes1 = 0, ms_lane_parts[4] = {0, 0, 0, 0};
  double lanes_diff = 0, lanes_diff1 = 0;
  void *ws_ln[2] = {NULL, NULL};
  const fi_status lanes_made = fi_lanes_create(a.ctx, side_sms, &a.lanes);
  if (lanes_made != FI_SUCCESS) {
    fprintf(stderr, "note: no lanes row: %s\n", fi_last_error(a.ctx));
  } else {
    FI_BENCH_CK(cudaMalloc(&ws_ln[0], w2));
    FI_BENCH_CK(cudaMalloc(&ws_ln[1], w3));
    /* FI_BENCH_SP_LN_ALL=pre|suf|both: that plan made outside the lanes (for all SMs);
     * FI_BENCH_SP_LN_SPLIT=<tokens>: the lane prefix plan's fixed_split_size */
    const char *ln_all = getenv("FI_BENCH_SP_LN_ALL") ? getenv("FI_BENCH_SP_LN_ALL") : "";
    const int pre_all = !strcmp(ln_all, "pre") || !strcmp(ln_all, "both");
    const int suf_all = !strcmp(ln_all, "suf") || !strcmp(ln_all, "both");
    fi_attention_params pl = p;
    if (getenv("FI_BENCH_SP_LN_SPLIT")) pl.fixed_split_size = atoi(getenv("FI_BENCH_SP_LN_SPLIT"));
    if (!pre_all) FI_BENCH_OK(a.ctx, fi_lanes_enter(a.lanes, FI_LANE_MAIN));
    FI_BENCH_OK(a.ctx, fi_paged_prefill_plan(a.ctx, &pl, 1, qo_indptr, &h_pre, num_pages, NULL,
                                             NULL, ws_ln[0], w2, &a.lane_prefix));
    if (!pre_all) FI_BENCH_OK(a.ctx, fi_lanes_leave(a.lanes));
    if (!suf_all) FI_BENCH_OK(a.ctx, fi_lanes_enter(a.lanes, FI_LANE_SIDE));
    FI_BENCH_OK(a.ctx, fi_decode_plan(a.ctx, &p, SP_BATCH, &h_suf, num_pages, NULL, ws_ln[1],
                                      w3, &a.lane_suffix));
    if (!suf_all) FI_BENCH_OK(a.ctx, fi_lanes_leave(a.lanes));
    FI_BENCH_OK(a.ctx, fi_lanes_join(a.lanes));
    ms_lanes = fi_bench_time_ms(b, run_lanes, &a);
    lanes_diff = max_diff_from(h1, bufs[2], h2, q_bytes, b->stream);
    ms_lane_parts[0] = fi_bench_time_ms(b, run_lane_prefix, &a);
    ms_lane_parts[1] = fi_bench_time_ms(b, run_lane_suffix, &a);
    a.lanes_one_merge = 1; /* (the merge alone after the unmerged prefix alone) */
    ms_lanes1 = fi_bench_time_ms(b, run_lanes, &a);
    lanes_diff1 = max_diff_from(h1, bufs[2], h2, q_bytes, b->stream);
    ms_lane_parts[2] = fi_bench_time_ms(b, run_lane_prefix, &a);
    ms_lane_parts[3] = fi_bench_time_ms(b, run_lane_merge, &a);
  }

  /* fused: request 0 = the prefix with all 64 queries, request 1 + i = request i's suffix
   * with its query again (q2's second half) */
  const int fb = SP_BATCH + 1;
  int32_t *f_qo = malloc(sizeof(int32_t) * (fb + 1)), *f_indptr = malloc(sizeof(int32_t) * (fb + 1));
  int32_t *f_last = malloc(sizeof(int32_t) * fb);
  int32_t *f_indices = malloc(sizeof(int32_t) * (SP_PREFIX_PAGES + SP_BATCH * SP_SUFFIX_PAGES));
  f_qo[0] = 0, f_indptr[0] = 0;
  for (int i = 0; i < fb; ++i) {
    f_qo[i + 1] = SP_BATCH + i;
    f_indptr[i + 1] = SP_PREFIX_PAGES + i * SP_SUFFIX_PAGES;
    f_last[i] = SP_PAGE;
  }
  for (int j = 0; j < SP_PREFIX_PAGES; ++j) f_indices[j] = pre_indices[j];
  for (int j = 0; j < SP_BATCH * SP_SUFFIX_PAGES; ++j)
    f_indices[SP_PREFIX_PAGES + j] = suf_indices[j];
  const int64_t q2shape[3] = {2 * SP_BATCH, QO_HEADS, HD}, l2shape[2] = {2 * SP_BATCH, QO_HEADS};
  void *q2d = NULL, *o2d = NULL, *l2d = NULL;
  FI_BENCH_CK(cudaMalloc(&q2d, 2 * q_bytes));
  FI_BENCH_CK(cudaMalloc(&o2d, 2 * q_bytes));
  FI_BENCH_CK(cudaMalloc(&l2d, 2 * l_bytes));
  FI_BENCH_CK(cudaMemcpy(q2d, a.q.data, q_bytes, cudaMemcpyDeviceToDevice));
  a.q2 = fi_tensor_contiguous(q2d, FI_DTYPE_F16, 3, q2shape);
  a.o2 = fi_tensor_contiguous(o2d, FI_DTYPE_F16, 3, q2shape);
  a.lse2 = fi_tensor_contiguous(l2d, FI_DTYPE_F32, 2, l2shape);
  a.o2_head = fi_tensor_contiguous(o2d, FI_DTYPE_F16, 3, qshape);
  a.o2_tail = fi_tensor_contiguous((char *)o2d + q_bytes, FI_DTYPE_F16, 3, qshape);
  a.lse2_head = fi_tensor_contiguous(l2d, FI_DTYPE_F32, 2, lshape);
  a.lse2_tail = fi_tensor_contiguous((char *)l2d + l_bytes, FI_DTYPE_F32, 2, lshape);
  a.stream = b->stream;
  fi_page_table h_fused = {f_indptr, f_indices, f_last};
  a.fused_pages.indptr = to_device(f_indptr, fb + 1);
  a.fused_pages.indices = to_device(f_indices, SP_PREFIX_PAGES + SP_BATCH * SP_SUFFIX_PAGES);
  a.fused_pages.last_page_len = to_device(f_last, fb);
  a.fused_qo_indptr = to_device(f_qo, fb + 1);
  size_t w4 = 0;
  void *ws_fused = NULL;
  FI_BENCH_OK(b->ctx, fi_prefill_workspace_size(b->ctx, &p, fb, 2 * SP_BATCH, &w4));
  FI_BENCH_CK(cudaMalloc(&ws_fused, w4));
  fi_attention_params pf = p;
  const char *f_split = getenv("FI_BENCH_SP_FUSED_SPLIT");
  if (f_split) pf.fixed_split_size = atoi(f_split);
  /* FI_BENCH_SP_FUSED_TILES=<q>x<kv>: wgmma tiles for the fused plan */
  fi_tiles ft = {128, 128, 1, FI_CORES_WGMMA};
  const char *f_tiles = getenv("FI_BENCH_SP_FUSED_TILES");
  if (f_tiles) sscanf(f_tiles, "%dx%d", &ft.q_tile, &ft.kv_tile);
  FI_BENCH_OK(b->ctx, fi_paged_prefill_plan(b->ctx, &pf, fb, f_qo, &h_fused, num_pages, NULL,
                                            f_tiles ? &ft : NULL, ws_fused, w4, &a.fused));
  const double ms_fused = fi_bench_time_ms(b, run_fused, &a);

  /* overlapped: FI_BENCH_SP_OV_CTAS caps the prefix's persistent CTAs (default: none, one
   * per SM), FI_BENCH_SP_OV_SPLIT its fixed split (default: the planner's) */
  int ov_ctas = getenv("FI_BENCH_SP_OV_CTAS") ? atoi(getenv("FI_BENCH_SP_OV_CTAS")) : 0;
  const int ov_split = getenv("FI_BENCH_SP_OV_SPLIT") ? atoi(getenv("FI_BENCH_SP_OV_SPLIT")) : 0;
  const int ov_dec_ctas = getenv("FI_BENCH_SP_OV_DECODE_CTAS")
                              ? atoi(getenv("FI_BENCH_SP_OV_DECODE_CTAS"))
                              : 0;
  a.ctx_pre = context_with_cap("FI_PREFILL_WS_CTAS", ov_ctas);
  a.ctx_suf = context_with_cap("FI_DECODE_MAX_CTAS", ov_dec_ctas);
  FI_BENCH_CK(cudaStreamCreateWithFlags(&a.side, cudaStreamNonBlocking));
  FI_BENCH_CK(cudaEventCreateWithFlags(&a.fork, cudaEventDisableTiming));
  FI_BENCH_CK(cudaEventCreateWithFlags(&a.join, cudaEventDisableTiming));
  FI_BENCH_OK(a.ctx_pre, fi_context_set_stream(a.ctx_pre, b->stream));
  FI_BENCH_OK(a.ctx_suf, fi_context_set_stream(a.ctx_suf, a.side));
  void *ws_ov[2];
  FI_BENCH_CK(cudaMalloc(&ws_ov[0], w2));
  FI_BENCH_CK(cudaMalloc(&ws_ov[1], w3));
  fi_attention_params po = p;
  po.fixed_split_size = ov_split;
  FI_BENCH_OK(a.ctx_pre, fi_paged_prefill_plan(a.ctx_pre, &po, 1, qo_indptr, &h_pre, num_pages,
                                               NULL, NULL, ws_ov[0], w2, &a.ov_prefix));
  FI_BENCH_OK(a.ctx_suf, fi_decode_plan(a.ctx_suf, &p, SP_BATCH, &h_suf, num_pages, NULL,
                                        ws_ov[1], w3, &a.ov_suffix));
  a.one_merge = 0;
  const double ms_ov2 = fi_bench_time_ms(b, run_overlapped, &a);
  const double ov_diff2 = max_diff_from(h1, bufs[2], h2, q_bytes, b->stream);
  a.one_merge = 1;
  const double ms_ov = fi_bench_time_ms(b, run_overlapped, &a);
  const double ov_diff = max_diff_from(h1, bufs[2], h2, q_bytes, b->stream);
  /* (its final o is the composed step's bits only where both prefix plans are the same:
   * with FI_BENCH_SP_SPLIT, _PRE_TILES or _OV_SPLIT set only its suffix decode is compared) */
  const int same_prefix_plan = !getenv("FI_BENCH_SP_SPLIT") && !getenv("FI_BENCH_SP_PRE_TILES") &&
                               !getenv("FI_BENCH_SP_OV_SPLIT");
  stress_row(b, "overlapped", run_overlapped, &a, same_prefix_plan ? outs : outs + 1);
  cudaFree(ws_ov[0]), cudaFree(ws_ov[1]);
  cudaEventDestroy(a.fork), cudaEventDestroy(a.join);
  cudaStreamDestroy(a.side);
  fi_context_destroy(a.ctx_pre), fi_context_destroy(a.ctx_suf);
  const double fused_diff = max_diff_from(h1, o2d, h2, q_bytes, b->stream);
  const double plain_bytes = (double)SP_BATCH * per_req * SP_PAGE * KV_HEADS * HD * 2 * 2;
  const double unique_bytes = (double)num_pages * SP_PAGE * KV_HEADS * HD * 2 * 2;
  const double suffix_bytes = (double)SP_BATCH * SP_SUFFIX_PAGES * SP_PAGE * KV_HEADS * HD * 2 * 2;
  char tn[64], variant[96];
  fi_tiles_name(a.plain.tiles, 1, tn, sizeof tn);
  fi_bench_row(b, "sparse", plain_name, tn, ms_plain, plain_bytes, 0);
  const char *comp_rows[3] = {
      comp_name, "  composed, one merge (decode, prefix unmerged, merge run)",
      "  composed, one merge, prefix first (prefix unmerged, decode, merge run)"};
  for (int k = 0; k < 3; ++k) {
    snprintf(variant, sizeof variant, "%.1fx plain, |d| %.1e", ms_plain / ms_comps[k], diffs[k]);
    fi_bench_row(b, "sparse", comp_rows[k], variant, ms_comps[k], unique_bytes, 0);
  }
  fi_tiles_name(a.fused.tiles, 0, tn, sizeof tn);
  snprintf(variant, sizeof variant, "%s u%d p%d %.1fx plain, |d| %.1e", tn,
           a.fused.num_work_units, a.fused.num_partial_rows, ms_plain / ms_fused, fused_diff);
  fi_bench_row(b, "sparse", "shared prefix b64 32k+256: fused", variant, ms_fused, unique_bytes,
               0);
  snprintf(variant, sizeof variant, "CTAs %d+%d, split %d, u%d: %.1fx plain, |d| %.1e",
           ov_ctas, ov_dec_ctas, ov_split, a.ov_prefix.num_work_units, ms_plain / ms_ov2,
           ov_diff2);
  fi_bench_row(b, "sparse", "shared prefix b64 32k+256: overlapped", variant, ms_ov2,
               unique_bytes, 0);
  snprintf(variant, sizeof variant, "%.1fx plain, |d| %.1e", ms_plain / ms_ov, ov_diff);
  fi_bench_row(b, "sparse", "  overlapped, one merge (prefix unmerged; merge after the join)",
               variant, ms_ov, unique_bytes, 0);
  if (a.lanes) { /* (the halves alone, each in its lane) */
    snprintf(variant, sizeof variant, "%d+%d SMs, u%d: %.1fx plain, |d| %.1e",
             fi_lanes_sm_count(a.lanes, FI_LANE_MAIN), fi_lanes_sm_count(a.lanes, FI_LANE_SIDE),
             a.lane_prefix.num_work_units, ms_plain / ms_lanes, lanes_diff);
    fi_bench_row(b, "sparse", "shared prefix b64 32k+256: lanes", variant, ms_lanes,
                 unique_bytes, 0);
    snprintf(variant, sizeof variant, "%.1fx plain, |d| %.1e", ms_plain / ms_lanes1, lanes_diff1);
    fi_bench_row(b, "sparse", "  lanes, one merge (prefix unmerged; merge after the join)",
                 variant, ms_lanes1, unique_bytes, 0);
    prefix_row(b, "  lanes: its prefix alone (main lane)", &a.lane_prefix, ms_lane_parts[0]);
    prefix_row(b, "  lanes: its prefix unmerged alone (main lane)", &a.lane_prefix,
               ms_lane_parts[2]);
    fi_bench_row(b, "sparse", "  lanes: the one merge alone (all SMs)", "", ms_lane_parts[3], 0,
                 0);
    fi_tiles_name(a.lane_suffix.tiles, 1, tn, sizeof tn);
    snprintf(variant, sizeof variant, "%s u%d, side lane of %d SMs", tn,
             a.lane_suffix.num_work_units, fi_lanes_sm_count(a.lanes, FI_LANE_SIDE));
    fi_bench_row(b, "sparse", "  lanes: its suffixes alone (side lane)", variant,
                 ms_lane_parts[1], suffix_bytes, 0);
    fi_lanes_destroy(a.lanes);
    a.lanes = NULL;
    cudaFree(ws_ln[0]), cudaFree(ws_ln[1]);
  }
  /* its parts: the prefix (FLOPs of 64 rows x 32768 keys), paged and over contiguous K/V,
   * and the suffix decode */
  prefix_row(b, "  its prefix (one block row of 64)", &a.prefix, ms_prefix);
  prefix_row(b, "  the prefix over contiguous K/V", &a.ragged, ms_ragged);
  if (l2_pages > 0) prefix_row(b, "  its prefix, K/V in L2 (FI_BENCH_SP_L2)", &a.prefix, ms_l2);
  fi_tiles_name(a.suffix.tiles, 1, tn, sizeof tn);
  fi_bench_row(b, "sparse", "  its suffixes (decode)", tn, ms_suffix, suffix_bytes, 0);
  free(h1), free(h2), free(h_comp), free(h_suf_out);
  cudaFree(q2d), cudaFree(o2d), cudaFree(l2d), cudaFree(ws_fused);
  cudaFree((void *)(uintptr_t)a.fused_pages.indptr);
  cudaFree((void *)(uintptr_t)a.fused_pages.indices);
  cudaFree((void *)(uintptr_t)a.fused_pages.last_page_len), cudaFree(a.fused_qo_indptr);
  free(f_qo), free(f_indptr), free(f_last), free(f_indices);
  cudaFree(kvt.data), cudaFree((void *)(uintptr_t)a.q.data);
  for (int i = 0; i < 5; ++i) cudaFree(bufs[i]);
  for (int i = 0; i < 3; ++i) cudaFree(ws[i]);
  cudaFree((void *)(uintptr_t)a.all.indptr), cudaFree((void *)(uintptr_t)a.all.indices);
  cudaFree((void *)(uintptr_t)a.all.last_page_len), cudaFree((void *)(uintptr_t)a.pre.indptr);
  cudaFree((void *)(uintptr_t)a.pre.indices), cudaFree((void *)(uintptr_t)a.pre.last_page_len);
  cudaFree((void *)(uintptr_t)a.suf.indptr), cudaFree((void *)(uintptr_t)a.suf.indices);
  cudaFree(a.qo_indptr);
  free(all_indptr), free(all_indices), free(suf_indptr), free(suf_indices), free(pre_indices);
}

void fi_bench_sparse(fi_bench_ctx *b) {
  sparse_arg a;
  sparse_tensors(b, &a, SEQ, SEQ);
  const int32_t host_indptr[2] = {0, SEQ};
  FI_BENCH_CK(cudaMalloc((void **)&a.indptr, sizeof host_indptr));
  FI_BENCH_CK(cudaMemcpy(a.indptr, host_indptr, sizeof host_indptr, cudaMemcpyHostToDevice));
  const double dense = sparse_case(b, &a, PAT_DENSE_KERNEL, 0, 0, 0, 0);
  sparse_case(b, &a, PAT_DENSE_EXTRAS, 0, 0, dense, 0);
  static const int blocks[2] = {64, 128};
  static const double sparsities[4] = {0.0, 0.5, 0.9, 0.98};
  for (int bi = 0; bi < 2; ++bi) {
    for (int si = 0; si < 4; ++si)
      sparse_case(b, &a, PAT_RANDOM, blocks[bi], sparsities[si], dense, 0);
    sparse_case(b, &a, PAT_LOCAL_GLOBAL, blocks[bi], 0, dense, 0);
  }
  /* The 64 x 64 rows over a paged cache: pages of 64 (one page box per half), 16 through
   * the stage pass (it gathers the pages into token rows first) and as page boxes (four per
   * half), and 24 (not a multiple of 16: staged) */
  for (int si = 1; si < 4; ++si) {
    sparse_case(b, &a, PAT_RANDOM, 64, sparsities[si], dense, 64);
    sparse_case(b, &a, PAT_RANDOM, 64, sparsities[si], dense, 16);
    sparse_case(b, &a, PAT_RANDOM, 64, sparsities[si], dense, -16);
    sparse_case(b, &a, PAT_RANDOM, 64, sparsities[si], dense, 24);
  }
  variable_case(b, &a, 0.5, dense);
  variable_case(b, &a, 0.9, dense);
  sparse_free(&a);
  if (dense > 0) long_rows(b, dense);
  shared_prefix(b);
}
