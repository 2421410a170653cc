/* test/gpu/test_block_sparse_gpu.c -- block-sparse attention on the CUDA backend (the
 * warp-specialised Hopper prefill kernel or the mma.sync prefill kernel walking the plan's
 * KV tiles) against the host backend, which computes exactly the pairs of the listed
 * blocks.
 *
 * FI_TEST_CONFIGS random configurations (default 240; seed FI_TEST_SEED; lengths up to
 * FI_TEST_MAXLEN, default 1024): BSR matrices of the seeds' patterns (local / sliding,
 * global + local, random at 2-50 % density, banded, empty block rows, full), block shapes
 * from 16 to 256 that do and do not divide the lengths or the kernel's 128-key tiles, and
 * in half the configurations variable block rows and/or column blocks (from 1 row and 3
 * keys; FlashInfer's variable block-sparse form), GQA
 * groups 1-16 (dividing 128 or not), head_dim 64 and 128, f16 / bf16, fp8 KV and RoPE
 * (through the prefill stage), causal or not, soft cap, sliding window, ALiBi, LSE; one
 * config in three over a paged cache of 1-128-token pages (those not a multiple of 16
 * through the stage pass; other pages that are not a multiple of 64 through it too when the
 * context holds the stage, and a third run without it -- page boxes -- must give the same
 * bits). The
 * CUDA run gets the BSR arrays in device memory (it reads the plan's tiles); one config in
 * five has few, long rows (the plan splits them along their tiles and merges); its outputs
 * are poisoned with NaN, every element is checked, and a second run must be bit-identical.
 * One config in four (every one with FI_TEST_BSR_MMA=1; the default kernel on a device
 * without the Hopper tier) forces mma.sync tiles (cores = tensor, a random (q, kv) pair of
 * the compiled list), head_dim 64, 128 or 256, over pages of any size without a stage; a
 * wgmma plan that needs a stage (RoPE, fp8 KV, pages not a multiple of 16) runs a third
 * time without it, on the mma.sync kernel, against the host's output. Every wgmma run is
 * also made by a context with FI_PREFILL_BSR_HALF_SKIP=0 (a tile's empty second half
 * loaded and multiplied as before the skip), FI_PREFILL_Q_AHEAD=0 (the next chunk's Q
 * copied after the chunk's last tile, into a slot released at its end; the main context
 * runs with it at 1, block-sparse runs' default, unless the environment sets it),
 * FI_PREFILL_L2_HINTS=0 (every copy at L2's normal eviction priority) and
 * FI_PREFILL_V_LAG=0 (K, then V, of each tile) and must give the same bits. Then the
 * CUDA backend's refusals. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "../runtime/bsr_offsets.h"
#include "gpu_common.h"

#include "fi/cuda_variants.h"

static fi_context *host, *cuda;
/* A CUDA context created with FI_PREFILL_BSR_HALF_SKIP=0, FI_PREFILL_Q_AHEAD=0,
 * FI_PREFILL_L2_HINTS=0 and FI_PREFILL_V_LAG=0: a tile's empty second half loaded, zeroed
 * and multiplied as any short half, each chunk's Q copied late, every copy at L2's normal
 * eviction priority, each tile's V right after its K;
 * every wgmma run must give the bits it gives with the default (the skipped steps add
 * exactly 0; the order of the copies and their priorities change no arithmetic). */
static fi_context *cuda_full;

enum { PAT_LOCAL, PAT_GLOBAL_LOCAL, PAT_RANDOM, PAT_BANDED, PAT_EMPTY_ROWS, PAT_FULL, PAT_COUNT };
static const char *const pattern_names[PAT_COUNT] = {"local", "global+local", "random",
                                                     "banded", "empty-rows", "full"};

/* A BSR matrix of `pattern` over rows x cols blocks: indptr [rows + 1], sorted indices. */
static void make_bsr(int pattern, int64_t rows, int64_t cols, int32_t *indptr,
                     int32_t *indices) {
  const int64_t width = gpu_rand_int(1, 4);
  static const float densities[] = {0.02f, 0.1f, 0.5f};
  const float density = densities[gpu_rand() % 3];
  int32_t nnz = 0;
  indptr[0] = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t diag = (i * cols) / (rows > 0 ? rows : 1);
    for (int64_t j = 0; j < cols; ++j) {
      int keep = 0;
      switch (pattern) {
        case PAT_LOCAL: keep = j <= diag && j > diag - width; break;
        case PAT_GLOBAL_LOCAL: keep = j == 0 || (j <= diag && j > diag - width); break;
        case PAT_RANDOM: keep = gpu_rand_uniform(0.f, 1.f) < density; break;
        case PAT_BANDED: keep = j >= diag - width && j <= diag + width; break;
        case PAT_EMPTY_ROWS: keep = i % 3 != 1 && gpu_rand_uniform(0.f, 1.f) < 0.6f; break;
        case PAT_FULL: keep = 1; break;
      }
      if (keep) indices[nnz++] = (int32_t)j;
    }
    indptr[i + 1] = nnz;
  }
}

static int64_t draw_gpu(void *unused, int64_t lo, int64_t hi) {
  (void)unused;
  return gpu_rand_int((int)lo, (int)hi);
}
static int32_t make_offsets(int64_t total, int32_t least, int32_t *off) {
  return random_bsr_offsets(total, least, off, draw_gpu, NULL);
}

static size_t dsize(fi_dtype d) {
  return d == FI_DTYPE_F32 ? 4 : (d == FI_DTYPE_E4M3 || d == FI_DTYPE_E5M2) ? 1 : 2;
}

static fi_tensor tensor3(void *data, fi_dtype dt, int64_t a, int64_t b, int64_t c) {
  const int64_t shape[3] = {a, b, c};
  return fi_tensor_contiguous(data, dt, 3, shape);
}

/* Elements of got off ref (n values of dt): |got - ref| <= atol + rtol |ref|, atol relative
 * to ref's largest; *first: the first one off. */
static size_t elements_off(const void *ref, const void *got, fi_dtype dt, size_t n,
                           size_t *first) {
  const double rtol = dt == FI_DTYPE_BF16 ? 2e-2 : 1e-2;
  double maxref = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = gpu_load(ref, dt, (int64_t)i);
    if (fabs(r) > maxref) maxref = fabs(r);
  }
  const double atol = rtol * (maxref > 0 ? maxref : 1.0);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = gpu_load(ref, dt, (int64_t)i), g = gpu_load(got, dt, (int64_t)i);
    if (!(fabs(g - r) <= atol + rtol * fabs(r)) && !bad++) *first = i;
  }
  return bad;
}

/* LSE values of got off ref (n, natural log): -inf where ref is, else within 1e-2 (1 + |ref|). */
static size_t lse_off(const float *ref, const float *got, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = ref[i], g = got[i];
    const int ok = isinf(r) && r < 0 ? isinf(g) && g < 0 : fabs(g - r) <= 1e-2 * (1 + fabs(r));
    bad += !ok;
  }
  return bad;
}

/* One configuration; returns 1 on failure. */
static int split_configs; /* plans that split units along their tiles (merged) */
static int paged_configs; /* configurations over a paged cache */
static int unstaged_configs; /* of those, pages staged by choice run again without it */
static int mma_configs; /* planned on the mma.sync kernel */
static int fallback_configs; /* wgmma plans run again without their stage: mma.sync */
static int half_ab_configs; /* wgmma runs again with all three knobs at 0: same bits */
static int all_mma;     /* FI_TEST_BSR_MMA=1 */

/* One CUDA run of plan cp: over the paged cache (paged) or contiguous k, v. */
typedef struct bsr_run_args {
  const fi_plan *plan;
  const fi_tensor *q, *k, *v;
  const fi_paged_kv_cache *cache;
  const fi_page_table *pages;
  const fi_bsr_matrix *bsr;
  fi_tensor *o, *lse;
  int paged;
} bsr_run_args;

static fi_status bsr_run(fi_context *ctx, const bsr_run_args *a) {
  return a->paged ? fi_block_sparse_paged_run(ctx, a->plan, a->q, a->cache, a->pages, a->bsr,
                                              a->o, a->lse)
                  : fi_block_sparse_run(ctx, a->plan, a->q, a->k, a->v, a->bsr, a->o, a->lse);
}

static int run_config(int idx, int maxlen, long long *elements) {
  static const int32_t rs[] = {16, 32, 48, 64, 100, 128, 256};
  static const int32_t cs[] = {16, 32, 64, 96, 128, 200, 256};
  static const int groups[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16};
  const int pattern = idx % PAT_COUNT;
  const int group = groups[gpu_rand() % 10];
  const int hkv = group >= 8 ? 1 : gpu_rand_int(1, 3), hq = hkv * group;
  /* mma.sync tiles forced in one config in four: a (q, kv) pair of the compiled list */
  static const int32_t mma_tiles[][2] = {
#define PAIR(Q, KV) {Q, KV},
      FI_CUDA_PREFILL_TILE_LIST(PAIR)
#undef PAIR
  };
  const int mma = all_mma || gpu_rand() % 4 == 0;
  const int mt = (int)(gpu_rand() % (sizeof mma_tiles / sizeof mma_tiles[0]));
  const fi_tiles forced = {mma_tiles[mt][0], mma_tiles[mt][1], 1, FI_CORES_TENSOR};
  const int hd = mma && gpu_rand() % 4 == 0 ? 256 : gpu_rand() % 3 ? 128 : 64;
  fi_attention_params p = fi_attention_params_default(hq, hkv, hd);
  p.q_dtype = gpu_rand() & 1 ? FI_DTYPE_BF16 : FI_DTYPE_F16;
  const uint32_t kvr = gpu_rand() % 8;
  p.kv_dtype = kvr == 0 ? FI_DTYPE_E4M3 : kvr == 1 ? FI_DTYPE_E5M2 : p.q_dtype;
  p.mask_mode = gpu_rand() & 1 ? FI_MASK_CAUSAL : FI_MASK_NONE;
  if (gpu_rand() % 4 == 0) p.logits_soft_cap = 10.f + 20.f * gpu_rand_uniform(0.f, 1.f);
  if (gpu_rand() % 6 == 0) p.pos_encoding = FI_POS_ALIBI;
  else if (gpu_rand() % 5 == 0) p.pos_encoding = FI_POS_ROPE_LLAMA;
  const int with_lse = gpu_rand() & 1;
  int64_t m = gpu_rand_log(1, maxlen);
  int64_t n = p.mask_mode == FI_MASK_CAUSAL ? m + gpu_rand_int(0, (int)(m / 2 + 8))
                                            : gpu_rand_log(1, maxlen + maxlen / 2);
  if (p.mask_mode == FI_MASK_CAUSAL && idx % 7 == 6) /* fewer keys: rows that keep none */
    n = gpu_rand_int(1, (int)m);
  if (idx % 5 == 4) { /* long rows, few units: the plan splits them along their tiles */
    m = gpu_rand_log(1, 96);
    n = m + gpu_rand_int(2 * maxlen, 6 * maxlen);
  }
  if (gpu_rand() % 5 == 0) p.window_left = gpu_rand_int(0, (int)n);
  fi_bsr_matrix bsr = {0};
  bsr.block_rows = rs[gpu_rand() % 7];
  bsr.block_cols = cs[gpu_rand() % 7];
  /* Variable blocks (FlashInfer's variable block-sparse form) in half the configurations:
   * rows, columns or both, from the smallest sizes drawn above (down to 1 and 3). */
  int32_t *row_off = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m + 1));
  int32_t *col_off = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n + 1));
  const int variable = idx % 2 ? (int)(gpu_rand() % 3) + 1 : 0;
  if (variable & 1) {
    if (gpu_rand() % 3 == 0) bsr.block_rows = 1;
    if (bsr.block_rows > m) bsr.block_rows = (int32_t)m;
    bsr.num_block_rows = make_offsets(m, bsr.block_rows, row_off);
    bsr.row_offsets = row_off;
  }
  /* A paged cache in one configuration in three (pages of 1-128 tokens, NHD or HND, in a
   * shuffled pool with NaN in every slot no key fills). Pages of a multiple of 16: column
   * blocks start on the kernel's page box, min(64, the largest power of two dividing the
   * page size); other page sizes run through the stage pass (token rows), any blocks. */
  const int paged = idx % 3 == 2;
  static const int32_t page_sizes[] = {16, 32, 48, 64, 128, 1, 5, 24, 100};
  const int32_t page = paged ? page_sizes[gpu_rand() % 9] : 0;
  /* (the mma.sync kernel reads any key: no box) */
  const int32_t box = mma ? 1 : page % 64 == 0 ? 64 : page % 32 == 0 ? 32 : page % 16 == 0 ? 16 : 1;
  if (paged && box > 1 && !(variable & 2)) bsr.block_cols = box * gpu_rand_int(1, 8);
  if (variable & 2) {
    if (gpu_rand() % 3 == 0) bsr.block_cols = 3;
    if (bsr.block_cols > n) bsr.block_cols = (int32_t)n;
    if (paged && box > 1 && n >= box) { /* offsets in boxes; the last block takes the rest */
      const int32_t least = bsr.block_cols / box > 0 ? bsr.block_cols / box : 1;
      bsr.num_block_cols = make_offsets(n / box, least, col_off);
      for (int32_t j = 0; j <= bsr.num_block_cols; ++j) col_off[j] *= box;
      col_off[bsr.num_block_cols] = (int32_t)n;
      bsr.block_cols = least * box;
    } else if (paged && box > 1) { /* one block of all n keys */
      bsr.num_block_cols = 1, col_off[0] = 0, col_off[1] = (int32_t)n;
      bsr.block_cols = (int32_t)n;
    } else {
      bsr.num_block_cols = make_offsets(n, bsr.block_cols, col_off);
    }
    bsr.col_offsets = col_off;
  }
  const int64_t rows = bsr.row_offsets ? bsr.num_block_rows
                                       : (m + bsr.block_rows - 1) / bsr.block_rows;
  const int64_t cols = bsr.col_offsets ? bsr.num_block_cols
                                       : (n + bsr.block_cols - 1) / bsr.block_cols;
  int32_t *indptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(rows + 1));
  int32_t *indices = (int32_t *)malloc(sizeof(int32_t) * (size_t)(rows * cols + 1));
  make_bsr(pattern, rows, cols, indptr, indices);
  bsr.indptr = indptr;
  bsr.indices = indices;
  char desc[320];
  snprintf(desc, sizeof desc,
           "%s M %lld N %lld blocks %d%sx%d%s pages %d heads %d/%d hd %d %s/%s %s cap %.1f "
           "win %d pos %d lse %d%s", pattern_names[pattern], (long long)m, (long long)n,
           (int)bsr.block_rows, bsr.row_offsets ? "+" : "", (int)bsr.block_cols,
           bsr.col_offsets ? "+" : "", (int)page, hq, hkv, hd, fi_dtype_name(p.q_dtype),
           fi_dtype_name(p.kv_dtype),
           p.mask_mode == FI_MASK_CAUSAL ? "causal" : "none", p.logits_soft_cap,
           (int)p.window_left, (int)p.pos_encoding, with_lse, mma ? " mma" : "");
  if (mma)
    snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " tiles %dx%d",
             (int)forced.q_tile, (int)forced.kv_tile);

  const size_t qn = (size_t)m * hq * hd, kn = (size_t)n * hkv * hd;
  const size_t qb = qn * dsize(p.q_dtype), kb = kn * dsize(p.kv_dtype), lb = (size_t)m * hq * 4;
  void *q = malloc(qb), *k = malloc(kb), *v = malloc(kb);
  void *oh = malloc(qb), *od = malloc(qb), *od2 = malloc(qb);
  float *lh = (float *)malloc(lb + 4), *ld = (float *)malloc(lb + 4);
  float *ld2 = (float *)malloc(lb + 4);
  gpu_fill_random(q, p.q_dtype, qn);
  gpu_fill_random(k, p.kv_dtype, kn);
  gpu_fill_random(v, p.kv_dtype, kn);

  /* The host backend. */
  int failed = 0;
  fi_plan hp, cp;
  size_t hws_bytes = 0;
  FI_CK(host, fi_block_sparse_workspace_size(host, &p, m, n, bsr.block_rows, bsr.block_cols,
                                             &hws_bytes));
  void *hws = malloc(hws_bytes + 1);
  FI_CK(host, fi_block_sparse_plan(host, &p, m, n, &bsr, NULL, hws, hws_bytes, &hp));
  fi_tensor tq = tensor3(q, p.q_dtype, m, hq, hd), tk = tensor3(k, p.kv_dtype, n, hkv, hd);
  fi_tensor tv = tensor3(v, p.kv_dtype, n, hkv, hd), to = tensor3(oh, p.q_dtype, m, hq, hd);
  const int64_t lshape[2] = {m, hq};
  fi_tensor tl = fi_tensor_contiguous(lh, FI_DTYPE_F32, 2, lshape);
  FI_CK(host, fi_block_sparse_run(host, &hp, &tq, &tk, &tv, &bsr, &to, with_lse ? &tl : NULL));

  /* The CUDA backend: device tensors, BSR arrays in device memory, poisoned outputs. */
  void *dq = gpu_upload(q, qb), *dk = gpu_upload(k, kb), *dv = gpu_upload(v, kb);
  void *dout = gpu_alloc_poisoned(qb), *dlse = gpu_alloc_poisoned(lb + 4);
  int32_t *d_indptr = (int32_t *)gpu_upload(indptr, sizeof(int32_t) * (size_t)(rows + 1));
  int32_t *d_indices = (int32_t *)gpu_upload(indices, sizeof(int32_t) * (size_t)(indptr[rows] + 1));
  int32_t *d_row_off = (int32_t *)gpu_upload(row_off, sizeof(int32_t) * (size_t)(m + 1));
  int32_t *d_col_off = (int32_t *)gpu_upload(col_off, sizeof(int32_t) * (size_t)(n + 1));
  fi_bsr_matrix dbsr = bsr;
  dbsr.indptr = d_indptr;
  dbsr.indices = d_indices;
  if (bsr.row_offsets) dbsr.row_offsets = d_row_off;
  if (bsr.col_offsets) dbsr.col_offsets = d_col_off;
  /* Paged: K and V scattered into pages of a shuffled pool (NaN in the slots no key fills),
   * the page table in device memory for the run, on the host for the plan. */
  const int32_t num_used = paged ? (int32_t)((n + page - 1) / page) : 0;
  const int32_t pool = paged ? num_used + gpu_rand_int(0, 4) : 0;
  const int hnd = paged && (gpu_rand() & 1);
  int32_t *pt_indices = (int32_t *)malloc(sizeof(int32_t) * (size_t)(pool + 1));
  int32_t pt_indptr[2] = {0, num_used}, pt_last[1] = {(int32_t)(n - (int64_t)(num_used - 1) * page)};
  void *dkc = NULL, *dvc = NULL, *d_pt_indptr = NULL, *d_pt_indices = NULL, *d_pt_last = NULL;
  fi_paged_kv_cache dcache;
  fi_page_table host_pt = {pt_indptr, pt_indices, pt_last}, dev_pt;
  if (paged) {
    p.page_size = page;
    for (int32_t i = 0; i < pool; ++i) pt_indices[i] = i;
    for (int32_t i = pool - 1; i > 0; --i) { /* a shuffled pool */
      const int32_t j = (int32_t)(gpu_rand() % (uint32_t)(i + 1)), t = pt_indices[i];
      pt_indices[i] = pt_indices[j], pt_indices[j] = t;
    }
    const size_t es = dsize(p.kv_dtype), cache_bytes = (size_t)pool * page * hkv * hd * es;
    char *hk = (char *)malloc(cache_bytes), *hv = (char *)malloc(cache_bytes);
    memset(hk, 0xff, cache_bytes); /* NaN in every dtype */
    memset(hv, 0xff, cache_bytes);
    for (int64_t j = 0; j < n; ++j)
      for (int h = 0; h < hkv; ++h) {
        const int64_t pg = pt_indices[j / page], slot = j % page;
        const int64_t at = hnd ? ((pg * hkv + h) * page + slot) * hd : ((pg * page + slot) * hkv + h) * hd;
        memcpy(hk + at * es, (const char *)k + ((j * hkv + h) * hd) * es, hd * es);
        memcpy(hv + at * es, (const char *)v + ((j * hkv + h) * hd) * es, hd * es);
      }
    dkc = gpu_upload(hk, cache_bytes), dvc = gpu_upload(hv, cache_bytes);
    free(hk), free(hv);
    const int64_t shape[4] = {pool, hnd ? hkv : page, hnd ? page : hkv, hd};
    dcache.k = fi_tensor_contiguous(dkc, p.kv_dtype, 4, shape);
    dcache.v = fi_tensor_contiguous(dvc, p.kv_dtype, 4, shape);
    dcache.layout = hnd ? FI_LAYOUT_HND : FI_LAYOUT_NHD;
    d_pt_indptr = gpu_upload(pt_indptr, sizeof pt_indptr);
    d_pt_indices = gpu_upload(pt_indices, sizeof(int32_t) * (size_t)(pool + 1));
    d_pt_last = gpu_upload(pt_last, sizeof pt_last);
    dev_pt.indptr = (const int32_t *)d_pt_indptr;
    dev_pt.indices = (const int32_t *)d_pt_indices;
    dev_pt.last_page_len = (const int32_t *)d_pt_last;
    snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " %s pool %d", hnd ? "hnd" : "nhd",
             (int)pool);
  }
  size_t ws_bytes = 0, stage_bytes = 0;
  FI_CK(cuda, fi_block_sparse_workspace_size(cuda, &p, m, n, bsr.block_rows, bsr.block_cols,
                                             &ws_bytes));
  void *dws = gpu_alloc_poisoned(ws_bytes);
  if (paged)
    FI_CK(cuda, fi_block_sparse_stage_size(cuda, &p, (int64_t)num_used * page, &stage_bytes));
  else
    FI_CK(cuda, fi_prefill_stage_size(cuda, &p, 0, m, n, &stage_bytes));
  /* pages staged by choice (boxes of 16 or 32 rows, nothing else that needs the stage):
   * token rows with the stage, page boxes without, a third run */
  size_t needed = 0;
  if (paged) FI_CK(cuda, fi_prefill_stage_size(cuda, &p, 1, m, (int64_t)num_used * page, &needed));
  const int optional_stage = !mma && paged && page % 16 == 0 && page % 64 != 0 &&
                             stage_bytes > 0 && needed == 0;
  /* a stage the wgmma plan needs (pages, RoPE, fp8 KV): a third run without it takes the
   * mma.sync kernel */
  const int fallback = !mma && !optional_stage && (paged ? needed > 0 : stage_bytes > 0);
  void *stage = stage_bytes ? gpu_alloc_poisoned(stage_bytes) : NULL;
  FI_CK(cuda, fi_context_set_prefill_stage(cuda, stage, stage_bytes));
  const fi_tiles *tiles = mma ? &forced : NULL;
  fi_status s = paged ? fi_block_sparse_paged_plan(cuda, &p, m, &host_pt, pool, &bsr, tiles,
                                                   dws, ws_bytes, &cp)
                      : fi_block_sparse_plan(cuda, &p, m, n, &bsr, tiles, dws, ws_bytes, &cp);
  if (s != FI_SUCCESS) {
    fprintf(stderr, "FAIL config %d: %s\n  plan: %s\n", idx, desc, fi_last_error(cuda));
    failed = 1;
  } else {
    split_configs += cp.num_partial_rows > 0;
    mma_configs += cp.tiles.cores == FI_CORES_TENSOR;
  }
  fi_tensor dtq = tensor3(dq, p.q_dtype, m, hq, hd), dtk = tensor3(dk, p.kv_dtype, n, hkv, hd);
  fi_tensor dtv = tensor3(dv, p.kv_dtype, n, hkv, hd), dto = tensor3(dout, p.q_dtype, m, hq, hd);
  fi_tensor dtl = fi_tensor_contiguous(dlse, FI_DTYPE_F32, 2, lshape);
  const bsr_run_args ra = {&cp, &dtq, &dtk, &dtv, &dcache, &dev_pt, &dbsr,
                           &dto, with_lse ? &dtl : NULL, paged};
  for (int pass = 0; pass < 2 + (optional_stage || fallback) && !failed; ++pass) {
    if (pass >= 1) { /* poisoned again: the second run must write every element itself */
      GPU_CK(cudaMemset(dout, 0xff, qb));
      GPU_CK(cudaMemset(dlse, 0xff, lb + 4));
    }
    if (pass == 2) FI_CK(cuda, fi_context_set_prefill_stage(cuda, NULL, 0));
    s = bsr_run(cuda, &ra);
    if (s != FI_SUCCESS) {
      fprintf(stderr, "FAIL config %d: %s\n  run: %s\n", idx, desc, fi_last_error(cuda));
      failed = 1;
      break;
    }
    GPU_CK(cudaDeviceSynchronize());
    if (pass == 2 && fallback) { /* the mma.sync kernel's run against the host's */
      void *od3 = malloc(qb);
      float *ld3 = (float *)malloc(lb + 4);
      gpu_download(od3, dout, qb);
      gpu_download(ld3, dlse, lb);
      size_t first = 0;
      const size_t bad = elements_off(oh, od3, p.q_dtype, qn, &first);
      const size_t lbad3 = with_lse ? lse_off(lh, ld3, (size_t)m * hq) : 0;
      if (bad || lbad3) {
        fprintf(stderr, "FAIL config %d: %s\n  without the stage (mma.sync): o %zu/%zu off "
                "(first %zu: gpu %g host %g); lse %zu off\n", idx, desc, bad, qn, first,
                gpu_load(od3, p.q_dtype, (int64_t)first), gpu_load(oh, p.q_dtype, (int64_t)first),
                lbad3);
        failed = 1;
      }
      free(od3), free(ld3);
      ++fallback_configs;
      break;
    }
    if (pass == 2) { /* the page boxes' bits against the staged run's */
      void *od3 = malloc(qb);
      float *ld3 = (float *)malloc(lb + 4);
      gpu_download(od3, dout, qb);
      gpu_download(ld3, dlse, lb);
      const int same = memcmp(od, od3, qb) == 0 && (!with_lse || memcmp(ld, ld3, lb) == 0);
      free(od3), free(ld3);
      if (!same) {
        fprintf(stderr, "FAIL config %d: %s\n  staged and page-box runs differ\n", idx, desc);
        failed = 1;
      }
      ++unstaged_configs;
      break;
    }
    gpu_download(pass ? od2 : od, dout, qb);
    gpu_download(pass ? ld2 : ld, dlse, lb);
  }

  if (!failed && cp.tiles.cores != FI_CORES_TENSOR) { /* the empty halves' skip: same bits */
    FI_CK(cuda_full, fi_context_set_prefill_stage(cuda_full, stage, stage_bytes));
    GPU_CK(cudaMemset(dout, 0xff, qb));
    GPU_CK(cudaMemset(dlse, 0xff, lb + 4));
    s = bsr_run(cuda_full, &ra);
    GPU_CK(cudaDeviceSynchronize());
    FI_CK(cuda_full, fi_context_set_prefill_stage(cuda_full, NULL, 0));
    if (s != FI_SUCCESS) {
      fprintf(stderr,
              "FAIL config %d: %s\n  run with FI_PREFILL_BSR_HALF_SKIP=0 FI_PREFILL_Q_AHEAD=0 "
              "FI_PREFILL_L2_HINTS=0 FI_PREFILL_V_LAG=0: %s\n",
              idx, desc, fi_last_error(cuda_full));
      failed = 1;
    } else {
      gpu_download(od2, dout, qb);
      gpu_download(ld2, dlse, lb);
      if (memcmp(od, od2, qb) != 0 || (with_lse && memcmp(ld, ld2, lb) != 0)) {
        fprintf(stderr, "FAIL config %d: %s\n  the run with FI_PREFILL_BSR_HALF_SKIP=0 "
                "FI_PREFILL_Q_AHEAD=0 FI_PREFILL_L2_HINTS=0 FI_PREFILL_V_LAG=0 differs from "
                "the default's\n",
                idx, desc);
        failed = 1;
      }
      /* (the second run's own bits, compared below, again) */
      GPU_CK(cudaMemset(dout, 0xff, qb));
      GPU_CK(cudaMemset(dlse, 0xff, lb + 4));
      FI_CK(cuda, fi_context_set_prefill_stage(cuda, stage, stage_bytes));
      s = bsr_run(cuda, &ra);
      GPU_CK(cudaDeviceSynchronize());
      if (s != FI_SUCCESS) {
        fprintf(stderr, "FAIL config %d: %s\n  run: %s\n", idx, desc, fi_last_error(cuda));
        failed = 1;
      } else {
        gpu_download(od2, dout, qb);
        gpu_download(ld2, dlse, lb);
      }
    }
    ++half_ab_configs;
  }

  if (!failed) {
    /* Every element */
    size_t first = 0, lbad = 0;
    const size_t bad = elements_off(oh, od, p.q_dtype, qn, &first);
    if (with_lse) lbad = lse_off(lh, ld, (size_t)m * hq);
    const int differs = memcmp(od, od2, qb) != 0 || (with_lse && memcmp(ld, ld2, lb) != 0);
    *elements += (long long)qn + (with_lse ? (long long)m * hq : 0);
    if (bad || lbad || differs) {
      fprintf(stderr, "FAIL config %d: %s\n  o: %zu/%zu off", idx, desc, bad, qn);
      if (bad)
        fprintf(stderr, " (first %zu: gpu %g host %g)", first,
                gpu_load(od, p.q_dtype, (int64_t)first), gpu_load(oh, p.q_dtype, (int64_t)first));
      fprintf(stderr, "; lse: %zu off%s\n", lbad,
              differs ? "; a second run differs from the first" : "");
      failed = 1;
    } else if (getenv("FI_TEST_VERBOSE")) {
      printf("ok config %d: %s (%d units)\n", idx, desc, (int)cp.num_work_units);
    }
  }
  FI_CK(cuda, fi_context_set_prefill_stage(cuda, NULL, 0));
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dlse), cudaFree(dws);
  cudaFree(d_indptr), cudaFree(d_indices), cudaFree(stage), cudaFree(d_row_off);
  cudaFree(d_col_off), free(row_off), free(col_off);
  cudaFree(dkc), cudaFree(dvc), cudaFree(d_pt_indptr), cudaFree(d_pt_indices);
  cudaFree(d_pt_last), free(pt_indices);
  if (paged) ++paged_configs;
  free(q), free(k), free(v), free(oh), free(od), free(od2), free(lh), free(ld), free(ld2);
  free(hws), free(indptr), free(indices);
  return failed;
}

/* The CUDA backend's refusals, each with a message naming the fix. */
static int refusals(void) {
  int bad = 0;
  const int32_t indptr[3] = {0, 1, 2}, indices[2] = {0, 1};
  const fi_bsr_matrix bsr = {64, 64, indptr, indices};
  fi_attention_params p = fi_attention_params_default(8, 2, 128);
  fi_plan plan;
  size_t need = 0;
  FI_CK(cuda, fi_block_sparse_workspace_size(cuda, &p, 128, 128, 64, 64, &need));
  void *ws = gpu_alloc_poisoned(need);
  struct {
    const char *what, *expect;
    fi_status status;
    fi_tiles tiles;
    int hd, small;
  } cases[] = {
      {"CUDA-core tiles", "run on tensor cores", FI_ERROR_UNSUPPORTED,
       {64, 64, 0, FI_CORES_CUDA}, 128, 0},
      {"mma.sync 128 x 128 tiles", "no CUDA variant with q_tile 128, kv_tile 128",
       FI_ERROR_UNSUPPORTED, {128, 128, 0, FI_CORES_TENSOR}, 128, 0},
      {"wgmma 64 x 128 tiles", "not q_tile 64", FI_ERROR_UNSUPPORTED,
       {64, 128, 1, FI_CORES_WGMMA}, 128, 0},
      {"head_dim 256 on wgmma tiles", "head_dim 64 and 128", FI_ERROR_UNSUPPORTED,
       {128, 128, 1, FI_CORES_WGMMA}, 256, 0},
      {"small workspace", "fi_block_sparse_workspace_size", FI_ERROR_WORKSPACE_TOO_SMALL,
       {0, 0, 0, 0}, 128, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    p.head_dim = cases[i].hd;
    const fi_tiles *t = cases[i].tiles.q_tile ? &cases[i].tiles : NULL;
    fi_status s = fi_block_sparse_plan(cuda, &p, 128, 128, &bsr, t, ws,
                                       cases[i].small ? 64 : need, &plan);
    const int ok = s == cases[i].status && strstr(fi_last_error(cuda), cases[i].expect);
    printf("refused %s: %s (%s)\n", cases[i].what, ok ? "ok" : "WRONG", fi_last_error(cuda));
    bad += !ok;
  }
  /* Paged: pages of 24 tokens (not a multiple of 16: through the stage pass) planned, and
   * run without a prefill stage (the mma.sync kernel); a column block off the page box of
   * pages of 64 refused by name with wgmma tiles, planned on the mma.sync kernel without. */
  {
    const int32_t pi[2] = {0, 2}, px[2] = {1, 0}, pl[1] = {40}, pl24[1] = {10};
    const fi_page_table pt = {pi, px, pl}, pt24 = {pi, px, pl24};
    fi_attention_params pp = p;
    pp.head_dim = 128;
    pp.page_size = 24;
    const int32_t bi[2] = {0, 1}, bx[1] = {0};
    const fi_bsr_matrix b1 = {64, 64, bi, bx};
    fi_status ps = fi_block_sparse_paged_plan(cuda, &pp, 64, &pt24, 2, &b1, NULL, ws, need, &plan);
    int pok = ps == FI_SUCCESS;
    printf("planned paged page_size 24: %s (%s)\n", pok ? "ok" : "WRONG",
           pok ? "" : fi_last_error(cuda));
    bad += !pok;
    if (pok) { /* q, o [64, 8, 128], a cache of 2 pages of 24 (NHD), no stage */
      const int64_t qs[3] = {64, 8, 128}, cs[4] = {2, 24, 2, 128};
      const size_t qb = 64 * 8 * 128 * 2, cb = 2 * 24 * 2 * 128 * 2;
      void *dq = gpu_alloc_poisoned(qb), *dout = gpu_alloc_poisoned(qb);
      void *dk = gpu_alloc_poisoned(cb), *dv = gpu_alloc_poisoned(cb);
      void *dpi = gpu_upload(pi, sizeof pi), *dpx = gpu_upload(px, sizeof px);
      void *dpl = gpu_upload(pl24, sizeof pl24), *dbi = gpu_upload(bi, sizeof bi);
      void *dbx = gpu_upload(bx, sizeof bx);
      fi_tensor tq = fi_tensor_contiguous(dq, FI_DTYPE_F16, 3, qs);
      fi_tensor to = fi_tensor_contiguous(dout, FI_DTYPE_F16, 3, qs);
      fi_paged_kv_cache c24;
      c24.k = fi_tensor_contiguous(dk, FI_DTYPE_F16, 4, cs);
      c24.v = fi_tensor_contiguous(dv, FI_DTYPE_F16, 4, cs);
      c24.layout = FI_LAYOUT_NHD;
      const fi_page_table dpt = {(const int32_t *)dpi, (const int32_t *)dpx,
                                 (const int32_t *)dpl};
      const fi_bsr_matrix db1 = {64, 64, (const int32_t *)dbi, (const int32_t *)dbx};
      FI_CK(cuda, fi_context_set_prefill_stage(cuda, NULL, 0));
      ps = fi_block_sparse_paged_run(cuda, &plan, &tq, &c24, &dpt, &db1, &to, NULL);
      pok = ps == FI_SUCCESS;
      printf("ran paged page_size 24 without a stage (the mma.sync kernel): %s (%s)\n",
             pok ? "ok" : "WRONG", pok ? "" : fi_last_error(cuda));
      bad += !pok;
      cudaFree(dq), cudaFree(dout), cudaFree(dk), cudaFree(dv), cudaFree(dpi), cudaFree(dpx);
      cudaFree(dpl), cudaFree(dbi), cudaFree(dbx);
    }
    pp.page_size = 64;
    /* blocks of 40 keys: block 1 starts at 40, off the wgmma kernel's page box: refused
     * with its tiles forced, planned on the mma.sync kernel without tiles */
    const int32_t bi2[2] = {0, 2}, bx2[2] = {0, 1};
    const fi_bsr_matrix b3 = {64, 40, bi2, bx2};
    const fi_tiles wg = {128, 128, 1, FI_CORES_WGMMA};
    ps = fi_block_sparse_paged_plan(cuda, &pp, 64, &pt, 2, &b3, &wg, ws, need, &plan);
    pok = ps == FI_ERROR_UNSUPPORTED && strstr(fi_last_error(cuda), "starts at key 40");
    printf("refused paged block off the box on wgmma tiles: %s (%s)\n", pok ? "ok" : "WRONG",
           fi_last_error(cuda));
    bad += !pok;
    ps = fi_block_sparse_paged_plan(cuda, &pp, 64, &pt, 2, &b3, NULL, ws, need, &plan);
    pok = ps == FI_SUCCESS && plan.tiles.cores == FI_CORES_TENSOR;
    printf("planned paged block off the box on the mma.sync kernel: %s (%s)\n",
           pok ? "ok" : "WRONG", ps == FI_SUCCESS ? "" : fi_last_error(cuda));
    bad += !pok;
  }
  /* N = 0 keys: refused at plan, by name */
  p.head_dim = 128;
  const int32_t empty_indptr[3] = {0, 0, 0};
  const fi_bsr_matrix none = {64, 64, empty_indptr, indices};
  fi_status s = fi_block_sparse_plan(cuda, &p, 128, 0, &none, NULL, ws, need, &plan);
  const int ok = s == FI_ERROR_UNSUPPORTED && strstr(fi_last_error(cuda), "N = 0 keys");
  printf("refused N = 0: %s (%s)\n", ok ? "ok" : "WRONG", fi_last_error(cuda));
  bad += !ok;
  cudaFree(ws);
  return bad;
}

int main(void) {
  gpu_require_device("test_block_sparse_gpu");
  FI_CK(NULL, fi_context_create(FI_BACKEND_HOST, &host));
  const int q_ahead_env = getenv("FI_PREFILL_Q_AHEAD") != NULL;
  if (!q_ahead_env) setenv("FI_PREFILL_Q_AHEAD", "1", 1); /* (read at context creation) */
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &cuda));
  setenv("FI_PREFILL_BSR_HALF_SKIP", "0", 1); /* (read once, when the context is created) */
  setenv("FI_PREFILL_Q_AHEAD", "0", 1);
  setenv("FI_PREFILL_L2_HINTS", "0", 1);
  setenv("FI_PREFILL_V_LAG", "0", 1);
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &cuda_full));
  unsetenv("FI_PREFILL_BSR_HALF_SKIP");
  unsetenv("FI_PREFILL_Q_AHEAD");
  unsetenv("FI_PREFILL_L2_HINTS");
  unsetenv("FI_PREFILL_V_LAG");
  all_mma = gpu_env_u64("FI_TEST_BSR_MMA", 0) != 0;
  gpu_seed(gpu_env_u64("FI_TEST_SEED", 20261125));
  const int n = (int)gpu_env_u64("FI_TEST_CONFIGS", 240);
  const int maxlen = (int)gpu_env_u64("FI_TEST_MAXLEN", 1024);
  int failed = 0;
  long long elements = 0;
  for (int i = 0; i < n; ++i) failed += run_config(i, maxlen, &elements);
  printf("block_sparse: %d configs, %d failed, %lld elements checked, second runs bit-identical "
         "unless reported; %d plans split long rows, %d over a paged cache (%d of them also "
         "run through page boxes, bit-identical to the staged run), %d on the mma.sync "
         "kernel; %d wgmma plans also run without the stage they need (on the mma.sync "
         "kernel); %d wgmma runs bit-identical with FI_PREFILL_BSR_HALF_SKIP=0, "
         "FI_PREFILL_Q_AHEAD=0, FI_PREFILL_L2_HINTS=0 and FI_PREFILL_V_LAG=0\n", n, failed,
         elements, split_configs, paged_configs, unstaged_configs, mma_configs,
         fallback_configs, half_ab_configs);
  if (n >= 50 && split_configs == 0) { /* one config in five has long rows: some must split */
    printf("FAIL: no plan split a long row\n");
    ++failed;
  }
  if (n >= 50 && mma_configs == 0) { /* one config in four forces mma.sync tiles */
    printf("FAIL: no plan on the mma.sync kernel\n");
    ++failed;
  }
  failed += refusals();
  fi_context_destroy(cuda_full);
  fi_context_destroy(cuda);
  fi_context_destroy(host);
  printf("test_block_sparse_gpu: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
