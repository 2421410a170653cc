/* test/runtime/test_variants.c -- attention variants written by the user (params.variant:
 * score_mod / mask_mod, runtime.h) on the host backend, through decode, paged prefill,
 * ragged prefill and block-sparse attention; GQA groups 1 to 4, several requests of
 * different lengths (empty ones among them), split-KV planned or fixed; every problem
 * drawn afresh, outputs poisoned with NaN, every element of o and lse checked.
 *  a. score_mod soft cap (cap * tanhf(s / cap)) vs the built-in logits_soft_cap:
 *     bit-identical (the same float operations); a variant with both functions NULL is
 *     none (bit-identical to no variant).
 *  b. mask_mod sliding window vs window_left, and mask_mod causal vs FI_MASK_CAUSAL:
 *     bit-identical.
 *  c. score_mod ALiBi from a captured slope table vs FI_POS_ALIBI: within fp32 rounding
 *     (the slopes recomputed here from runtime.h's formula).
 *  d. T5-style bucketed relative bias from a captured table plus a mask_mod dropping one
 *     head's odd keys, together with the built-in causal mask (and half the time the
 *     built-in soft cap, which score_mod follows): vs a float64 oracle.
 *  e. score_mod returning -inf for every key of some rows (all heads of one, one head of
 *     another): those rows get o = 0 and lse = -inf, as the built-in gives a row with no
 *     key, also when the row's keys were split over several chunks.
 *  f. a CUDA context refuses a run with a variant that has no device image
 *     (FI_ERROR_UNSUPPORTED naming params.variant: the host hooks cannot run on the GPU);
 *     skipped where no CUDA context can be made.
 * Every variant also checks its arguments against the problem (batch, query and key
 * positions as runtime.h defines them, kv_head = qo_head / group): score_mod returns NaN,
 * mask_mod drops the pair, on a wrong one, which fails the comparison. */
#include "fi/mlir_adapters.h"
#include "test_util.h"

static fi_context *ctx;

enum { FAM_DECODE, FAM_PAGED, FAM_RAGGED, FAM_BSR, FAM_COUNT };
static const char *const fam_names[FAM_COUNT] = {"decode", "paged prefill", "ragged prefill",
                                                 "block-sparse"};

/* ---------------------------------------------------------------- problems -------- */

/* One attention problem: lengths, index arrays, q / k / v (paged: NHD pages in a shuffled
 * order; ragged and block-sparse: token rows), the BSR matrix (block-sparse: batch 1). */
typedef struct problem {
  int fam, batch, hq, hkv, hd, ps, fixed_split;
  fi_dtype dt; /* q, o and kv */
  int32_t *qo_len, *kv_len, *qo_indptr, *kv_indptr, *last, *indices;
  int32_t num_pages;
  int64_t nnz_qo, nnz_kv_slots;
  void *q, *k, *v;
  fi_tensor tq, tk, tv;
  fi_paged_kv_cache cache;
  fi_page_table pages;
  int32_t *bsr_indptr, *bsr_indices;
  fi_bsr_matrix bsr;
} problem;

typedef struct config {
  int fam, batch, hq, hkv, hd, ps, fixed_split; /* fixed_split: params.fixed_split_size */
  fi_dtype dt;
  int empties; /* request 1 has no KV (prefill: request 2 no query rows) */
} config;

static void make_problem(problem *pr, const config *c, rng *r) {
  memset(pr, 0, sizeof(*pr));
  pr->fam = c->fam;
  pr->batch = c->fam == FAM_BSR ? 1 : c->batch;
  pr->hq = c->hq, pr->hkv = c->hkv, pr->hd = c->hd;
  pr->ps = (c->fam == FAM_DECODE || c->fam == FAM_PAGED) ? c->ps : 1;
  pr->fixed_split = c->fixed_split;
  pr->dt = c->dt;
  const int batch = pr->batch, paged = c->fam == FAM_DECODE || c->fam == FAM_PAGED;
  pr->qo_len = xmalloc(sizeof(int32_t) * batch);
  pr->kv_len = xmalloc(sizeof(int32_t) * batch);
  for (int i = 0; i < batch; ++i) {
    pr->kv_len[i] = (int32_t)rng_int(r, 1, c->fam == FAM_BSR ? 160 : 130);
    pr->qo_len[i] = c->fam == FAM_DECODE ? 1 : (int32_t)rng_int(r, 1, 40);
    if (c->fam == FAM_PAGED || c->fam == FAM_RAGGED) {
      /* the causal mask needs qo_len <= kv_len; now and then equal (the first row then
       * sees key 0 only) */
      if (pr->qo_len[i] > pr->kv_len[i] || rng_int(r, 0, 3) == 0) pr->kv_len[i] = pr->qo_len[i];
    }
  }
  if (c->empties && batch >= 3) { /* decode: a row without keys; prefill: a request of
                                     neither rows nor keys, and one of keys only */
    pr->kv_len[1] = 0;
    if (c->fam != FAM_DECODE) pr->qo_len[1] = pr->qo_len[2] = 0;
  }
  pr->qo_indptr = xmalloc(sizeof(int32_t) * (batch + 1));
  pr->kv_indptr = xmalloc(sizeof(int32_t) * (batch + 1));
  pr->last = xmalloc(sizeof(int32_t) * batch);
  pr->qo_indptr[0] = pr->kv_indptr[0] = 0;
  for (int i = 0; i < batch; ++i) {
    pr->qo_indptr[i + 1] = pr->qo_indptr[i] + pr->qo_len[i];
    const int32_t n = paged ? (pr->kv_len[i] + pr->ps - 1) / pr->ps : pr->kv_len[i];
    pr->kv_indptr[i + 1] = pr->kv_indptr[i] + n;
    pr->last[i] = pr->kv_len[i] == 0 ? 1 : pr->kv_len[i] - pr->ps * (n - 1);
  }
  pr->nnz_qo = pr->qo_indptr[batch];
  pr->nnz_kv_slots = pr->kv_indptr[batch];
  const int hq = pr->hq, hkv = pr->hkv, hd = pr->hd;
  const size_t dsz = fi_dtype_size(pr->dt);

  const int64_t nq = pr->nnz_qo * hq * hd;
  pr->q = xmalloc(dsz * (size_t)(nq + 1));
  fill_random(pr->q, pr->dt, nq, r, -1, 1);
  int64_t qshape[3] = {pr->nnz_qo, hq, hd};
  pr->tq = fi_tensor_contiguous(pr->q, pr->dt, 3, qshape);

  if (paged) {
    pr->num_pages = (int32_t)pr->nnz_kv_slots + 2; /* two pages stay unused */
    int32_t *perm = xmalloc(sizeof(int32_t) * pr->num_pages);
    for (int i = 0; i < pr->num_pages; ++i) perm[i] = i;
    for (int i = pr->num_pages - 1; i > 0; --i) {
      int j = (int)rng_int(r, 0, i);
      int32_t t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    pr->indices = xmalloc(sizeof(int32_t) * (size_t)(pr->nnz_kv_slots + 1));
    memcpy(pr->indices, perm, sizeof(int32_t) * (size_t)pr->nnz_kv_slots);
    free(perm);
    const int64_t n = (int64_t)pr->num_pages * pr->ps * hkv * hd;
    pr->k = xmalloc(dsz * (size_t)n);
    pr->v = xmalloc(dsz * (size_t)n);
    fill_random(pr->k, pr->dt, n, r, -1, 1);
    fill_random(pr->v, pr->dt, n, r, -1, 1);
    int64_t dims[4] = {pr->num_pages, pr->ps, hkv, hd};
    pr->cache.k = fi_tensor_contiguous(pr->k, pr->dt, 4, dims);
    pr->cache.v = fi_tensor_contiguous(pr->v, pr->dt, 4, dims);
    pr->cache.layout = FI_LAYOUT_NHD;
    pr->pages = (fi_page_table){pr->kv_indptr, pr->indices, pr->last};
  } else {
    const int64_t n = pr->nnz_kv_slots * hkv * hd;
    pr->k = xmalloc(dsz * (size_t)(n + 1));
    pr->v = xmalloc(dsz * (size_t)(n + 1));
    fill_random(pr->k, pr->dt, n, r, -1, 1);
    fill_random(pr->v, pr->dt, n, r, -1, 1);
    int64_t dims[3] = {pr->nnz_kv_slots, hkv, hd};
    pr->tk = fi_tensor_contiguous(pr->k, pr->dt, 3, dims);
    pr->tv = fi_tensor_contiguous(pr->v, pr->dt, 3, dims);
  }

  if (c->fam == FAM_BSR) { /* random blocks (some block rows empty), shapes not dividing */
    static const int32_t shapes[] = {3, 7, 16};
    pr->bsr.block_rows = shapes[rng_int(r, 0, 2)];
    pr->bsr.block_cols = shapes[rng_int(r, 0, 2)];
    const int64_t m = pr->qo_len[0], n = pr->kv_len[0];
    const int64_t rows = (m + pr->bsr.block_rows - 1) / pr->bsr.block_rows;
    const int64_t cols = (n + pr->bsr.block_cols - 1) / pr->bsr.block_cols;
    pr->bsr_indptr = xmalloc(sizeof(int32_t) * (size_t)(rows + 1));
    pr->bsr_indices = xmalloc(sizeof(int32_t) * (size_t)(rows * cols + 1));
    int32_t nnz = 0;
    pr->bsr_indptr[0] = 0;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j)
        if (rng_uniform(r) < 0.6) pr->bsr_indices[nnz++] = (int32_t)j;
      pr->bsr_indptr[i + 1] = nnz;
    }
    pr->bsr.indptr = pr->bsr_indptr;
    pr->bsr.indices = pr->bsr_indices;
  }
}

static void free_problem(problem *pr) {
  free(pr->qo_len), free(pr->kv_len), free(pr->qo_indptr), free(pr->kv_indptr);
  free(pr->last), free(pr->indices), free(pr->q), free(pr->k), free(pr->v);
  free(pr->bsr_indptr), free(pr->bsr_indices);
}

/* The problem's parameters without extras (the caller adds masks, variants). */
static fi_attention_params base_params(const problem *pr) {
  fi_attention_params p = fi_attention_params_default(pr->hq, pr->hkv, pr->hd);
  p.page_size = pr->ps;
  p.q_dtype = p.kv_dtype = pr->dt;
  p.fixed_split_size = pr->fixed_split;
  return p;
}

/* Output buffers of one run: o [nnz_qo, hq, hd] in the problem's dtype, lse [nnz_qo, hq]. */
typedef struct outputs {
  void *o;
  float *lse;
  size_t o_bytes, lse_bytes;
} outputs;

static outputs make_outputs(const problem *pr) {
  outputs out;
  out.o_bytes = fi_dtype_size(pr->dt) * (size_t)(pr->nnz_qo * pr->hq * pr->hd + 1);
  out.lse_bytes = sizeof(float) * (size_t)(pr->nnz_qo * pr->hq + 1);
  out.o = xmalloc(out.o_bytes);
  out.lse = xmalloc(out.lse_bytes);
  return out;
}

/* Plans and runs the problem with `p` into poisoned outputs; returns the run's status. */
static fi_status run_problem(const problem *pr, const fi_attention_params *p, outputs *out) {
  poison(out->o, out->o_bytes);
  poison(out->lse, out->lse_bytes);
  int64_t oshape[3] = {pr->nnz_qo, pr->hq, pr->hd}, lshape[2] = {pr->nnz_qo, pr->hq};
  fi_tensor to = fi_tensor_contiguous(out->o, pr->dt, 3, oshape);
  fi_tensor tl = fi_tensor_contiguous(out->lse, FI_DTYPE_F32, 2, lshape);
  int64_t total_kv = 0;
  for (int i = 0; i < pr->batch; ++i) total_kv += pr->kv_len[i];
  size_t ws_bytes = 0;
  fi_status st;
  if (pr->fam == FAM_DECODE)
    st = fi_decode_workspace_size_kv(ctx, p, pr->batch, total_kv, &ws_bytes);
  else if (pr->fam == FAM_BSR)
    st = fi_block_sparse_workspace_size(ctx, p, pr->qo_len[0], pr->kv_len[0],
                                        pr->bsr.block_rows, pr->bsr.block_cols, &ws_bytes);
  else
    st = fi_prefill_workspace_size(ctx, p, pr->batch, pr->nnz_qo, &ws_bytes);
  if (st != FI_SUCCESS) return st;
  void *ws = xmalloc(ws_bytes);
  poison(ws, ws_bytes);
  fi_plan plan;
  switch (pr->fam) {
  case FAM_DECODE:
    st = fi_decode_plan(ctx, p, pr->batch, &pr->pages, pr->num_pages, NULL, ws, ws_bytes, &plan);
    if (st == FI_SUCCESS) st = fi_decode_run(ctx, &plan, &pr->tq, &pr->cache, &pr->pages, &to, &tl);
    break;
  case FAM_PAGED:
    st = fi_paged_prefill_plan(ctx, p, pr->batch, pr->qo_indptr, &pr->pages, pr->num_pages,
                               NULL, NULL, ws, ws_bytes, &plan);
    if (st == FI_SUCCESS)
      st = fi_paged_prefill_run(ctx, &plan, &pr->tq, pr->qo_indptr, &pr->cache, &pr->pages,
                                NULL, &to, &tl);
    break;
  case FAM_RAGGED:
    st = fi_ragged_prefill_plan(ctx, p, pr->batch, pr->qo_indptr, pr->kv_indptr, NULL, NULL,
                                ws, ws_bytes, &plan);
    if (st == FI_SUCCESS)
      st = fi_ragged_prefill_run(ctx, &plan, &pr->tq, &pr->tk, &pr->tv, pr->qo_indptr,
                                 pr->kv_indptr, NULL, &to, &tl);
    break;
  default:
    st = fi_block_sparse_plan(ctx, p, pr->qo_len[0], pr->kv_len[0], &pr->bsr, NULL, ws,
                              ws_bytes, &plan);
    if (st == FI_SUCCESS)
      st = fi_block_sparse_run(ctx, &plan, &pr->tq, &pr->tk, &pr->tv, &pr->bsr, &to, &tl);
  }
  free(ws);
  return st;
}

/* --------------------------------------------------------------- the variants ----- */

/* What every capture of this test starts with: the problem, to check the arguments. */
typedef struct arg_check {
  const problem *pr;
} arg_check;

static int args_ok(const arg_check *c, int32_t b, int32_t h, int32_t kvh, int32_t qpos,
                   int32_t kpos) {
  const problem *pr = c->pr;
  if (b < 0 || b >= pr->batch || h < 0 || h >= pr->hq) return 0;
  if (kvh != h / (pr->hq / pr->hkv)) return 0;
  const int32_t ql = pr->qo_len[b], kl = pr->kv_len[b];
  return qpos >= kl - ql && qpos < kl && kpos >= 0 && kpos < kl;
}

#define CHECK_ARGS(cap, b, h, kvh, qpos, kpos)                                             \
  do {                                                                                     \
    if (!args_ok((const arg_check *)(cap), b, h, kvh, qpos, kpos)) return NAN;             \
  } while (0)

/* a. soft cap */
typedef struct cap_captures {
  arg_check chk;
  float cap;
} cap_captures;

static float soft_cap_mod(float s, int32_t b, int32_t h, int32_t kvh, int32_t qpos,
                          int32_t kpos, const void *captures) {
  CHECK_ARGS(captures, b, h, kvh, qpos, kpos);
  const float cap = ((const cap_captures *)captures)->cap;
  return cap * tanhf(s / cap);
}

/* b. sliding window and causal masks */
typedef struct window_captures {
  arg_check chk;
  int32_t window;
} window_captures;

static int32_t window_mask(int32_t b, int32_t h, int32_t qpos, int32_t kpos,
                           const void *captures) {
  const window_captures *c = (const window_captures *)captures;
  const problem *pr = c->chk.pr;
  if (!args_ok(&c->chk, b, h, h / (pr->hq / pr->hkv), qpos, kpos)) return 0;
  return kpos >= qpos - c->window;
}

static int32_t causal_mask(int32_t b, int32_t h, int32_t qpos, int32_t kpos,
                           const void *captures) {
  const arg_check *c = (const arg_check *)captures;
  if (!args_ok(c, b, h, h / (c->pr->hq / c->pr->hkv), qpos, kpos)) return 0;
  return kpos <= qpos;
}

/* c. ALiBi from a slope table: the built-in's expression, s + slope * (float)(j - i) */
typedef struct alibi_captures {
  arg_check chk;
  const float *slopes; /* [hq] */
} alibi_captures;

static float alibi_mod(float s, int32_t b, int32_t h, int32_t kvh, int32_t qpos, int32_t kpos,
                       const void *captures) {
  CHECK_ARGS(captures, b, h, kvh, qpos, kpos);
  const float *slopes = ((const alibi_captures *)captures)->slopes;
  return s + slopes[h] * (float)(kpos - qpos);
}

/* d. T5-style relative bias: buckets of kv_pos - q_pos (exact near 0, then one bucket per
 * doubling of the distance, clamped), both signs, a bias per (head, bucket); and one head
 * that drops its odd keys. Integer-only bucketing: the oracle uses the same function. */
enum { T5_EXACT = 4, T5_HALF = 10, T5_BUCKETS = 2 * T5_HALF };

static int t5_bucket(int32_t rel) {
  const int neg = rel < 0;
  int32_t d = neg ? -rel : rel, b;
  if (d < T5_EXACT) {
    b = d;
  } else {
    b = T5_EXACT;
    for (int32_t x = d / T5_EXACT; x > 1; x >>= 1) ++b; /* + floor(log2(d / EXACT)) */
    if (b > T5_HALF - 1) b = T5_HALF - 1;
  }
  return neg ? T5_HALF + b : b;
}

typedef struct t5_captures {
  arg_check chk;
  const float *table; /* [hq][T5_BUCKETS] */
  int32_t odd_head;   /* drops its odd keys */
} t5_captures;

static float t5_mod(float s, int32_t b, int32_t h, int32_t kvh, int32_t qpos, int32_t kpos,
                    const void *captures) {
  CHECK_ARGS(captures, b, h, kvh, qpos, kpos);
  const t5_captures *c = (const t5_captures *)captures;
  return s + c->table[h * T5_BUCKETS + t5_bucket(kpos - qpos)];
}

static int32_t t5_mask(int32_t b, int32_t h, int32_t qpos, int32_t kpos, const void *captures) {
  const t5_captures *c = (const t5_captures *)captures;
  const problem *pr = c->chk.pr;
  if (!args_ok(&c->chk, b, h, h / (pr->hq / pr->hkv), qpos, kpos)) return 0;
  return !(h == c->odd_head && (kpos & 1));
}

/* e. rows dropped by the score: every head of (drop_batch, drop_qpos), and head
 * one_head of (one_batch, one_qpos); other pairs keep their logit. */
typedef struct drop_captures {
  arg_check chk;
  int32_t drop_batch, drop_qpos;
  int32_t one_batch, one_qpos, one_head;
} drop_captures;

static float drop_mod(float s, int32_t b, int32_t h, int32_t kvh, int32_t qpos, int32_t kpos,
                      const void *captures) {
  CHECK_ARGS(captures, b, h, kvh, qpos, kpos);
  const drop_captures *c = (const drop_captures *)captures;
  if (b == c->drop_batch && qpos == c->drop_qpos) return -INFINITY;
  if (b == c->one_batch && qpos == c->one_qpos && h == c->one_head) return -INFINITY;
  return s;
}

/* ------------------------------------------------------------------ the oracle ----- */

/* The variant of the oracle, in float64: keep (NULL: all) and score (NULL: identity). */
typedef struct oracle_variant {
  int (*keep)(const void *cap, int32_t b, int32_t h, int32_t qpos, int32_t kpos);
  double (*score)(const void *cap, double s, int32_t b, int32_t h, int32_t qpos, int32_t kpos);
  const void *cap;
} oracle_variant;

static int t5_keep(const void *cap, int32_t b, int32_t h, int32_t qpos, int32_t kpos) {
  (void)b, (void)qpos;
  return !(h == ((const t5_captures *)cap)->odd_head && (kpos & 1));
}
static double t5_score(const void *cap, double s, int32_t b, int32_t h, int32_t qpos,
                       int32_t kpos) {
  (void)b;
  return s + (double)((const t5_captures *)cap)->table[h * T5_BUCKETS + t5_bucket(kpos - qpos)];
}
static double drop_score(const void *cap, double s, int32_t b, int32_t h, int32_t qpos,
                         int32_t kpos) {
  (void)kpos;
  const drop_captures *c = (const drop_captures *)cap;
  if (b == c->drop_batch && qpos == c->drop_qpos) return -INFINITY;
  if (b == c->one_batch && qpos == c->one_qpos && h == c->one_head) return -INFINITY;
  return s;
}

static int bsr_keeps(const problem *pr, int64_t row, int64_t key) {
  const int64_t i = row / pr->bsr.block_rows, col = key / pr->bsr.block_cols;
  for (int32_t e = pr->bsr.indptr[i]; e < pr->bsr.indptr[i + 1]; ++e)
    if (pr->bsr.indices[e] == col) return 1;
  return 0;
}

static double k_elem(const problem *pr, const void *base, int b, int64_t j, int kh, int d) {
  int64_t off;
  if (pr->fam == FAM_DECODE || pr->fam == FAM_PAGED) {
    const int64_t page = pr->indices[pr->kv_indptr[b] + j / pr->ps], slot = j % pr->ps;
    off = ((page * pr->ps + slot) * pr->hkv + kh) * pr->hd + d;
  } else {
    off = (((int64_t)pr->kv_indptr[b] + j) * pr->hkv + kh) * pr->hd + d;
  }
  return fi_load_f32(base, pr->dt, off);
}

/* Naive float64 attention of the problem with p's causal mask, window and soft cap (no
 * other built-in extras), the BSR blocks, and the oracle variant after them (runtime.h's
 * order): o [nnz_qo, hq, hd], lse. */
static void oracle(const problem *pr, const fi_attention_params *p, const oracle_variant *ov,
                   double *o, double *lse) {
  const int hq = pr->hq, hd = pr->hd, group = pr->hq / pr->hkv;
  int32_t max_kv = 1;
  for (int b = 0; b < pr->batch; ++b)
    if (pr->kv_len[b] > max_kv) max_kv = pr->kv_len[b];
  double *logit = xmalloc(sizeof(double) * (size_t)max_kv);
  for (int b = 0; b < pr->batch; ++b) {
    const int64_t ql = pr->qo_len[b], kl = pr->kv_len[b];
    for (int64_t i = 0; i < ql; ++i) {
      const int64_t row = pr->qo_indptr[b] + i, qpos = kl - ql + i;
      for (int h = 0; h < hq; ++h) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < kl; ++j) {
          int keep = 1;
          if (p->mask_mode == FI_MASK_CAUSAL && j > qpos) keep = 0;
          if (p->window_left >= 0 && j < qpos - p->window_left) keep = 0;
          if (pr->fam == FAM_BSR && !bsr_keeps(pr, i, j)) keep = 0;
          if (keep && ov && ov->keep && !ov->keep(ov->cap, b, h, (int32_t)qpos, (int32_t)j))
            keep = 0;
          logit[j] = -INFINITY;
          if (!keep) continue;
          double dot = 0;
          for (int d = 0; d < hd; ++d)
            dot += fi_load_f32(pr->q, pr->dt, (row * hq + h) * hd + d) *
                   k_elem(pr, pr->k, b, j, h / group, d);
          double s = dot * (double)p->sm_scale;
          if (p->logits_soft_cap > 0)
            s = (double)p->logits_soft_cap * tanh(s / (double)p->logits_soft_cap);
          if (ov && ov->score) s = ov->score(ov->cap, s, b, h, (int32_t)qpos, (int32_t)j);
          logit[j] = s;
          if (s > mx) mx = s;
        }
        double *orow = o + (row * hq + h) * hd;
        for (int d = 0; d < hd; ++d) orow[d] = 0;
        if (mx == -INFINITY) {
          lse[row * hq + h] = -INFINITY;
          continue;
        }
        double den = 0;
        for (int64_t j = 0; j < kl; ++j)
          if (logit[j] != -INFINITY) den += exp(logit[j] - mx);
        for (int64_t j = 0; j < kl; ++j) {
          if (logit[j] == -INFINITY) continue;
          const double w = exp(logit[j] - mx) / den;
          for (int d = 0; d < hd; ++d) orow[d] += w * k_elem(pr, pr->v, b, j, h / group, d);
        }
        lse[row * hq + h] = mx + log(den);
      }
    }
  }
  free(logit);
}

/* -------------------------------------------------------------- comparisons ------- */

static void tolerances(fi_dtype d, double *atol, double *rtol) {
  if (d == FI_DTYPE_F32) { *atol = 1e-4; *rtol = 1e-4; }
  else if (d == FI_DTYPE_F16) { *atol = 2e-3; *rtol = 4e-3; }
  else { *atol = 1e-2; *rtol = 1.6e-2; }
}

/* Every element written: o finite, lse finite or -inf (the poison is NaN). */
static int64_t unwritten(const problem *pr, const outputs *out) {
  int64_t n = 0;
  for (int64_t i = 0; i < pr->nnz_qo * pr->hq * pr->hd; ++i)
    n += !isfinite(fi_load_f32(out->o, pr->dt, i));
  for (int64_t i = 0; i < pr->nnz_qo * pr->hq; ++i)
    n += isnan(out->lse[i]) || out->lse[i] == INFINITY;
  return n;
}

/* a and b: the variant's run and the built-in's hold the same bits, every one written. */
static void expect_identical(const char *what, const problem *pr, const outputs *got,
                             const outputs *want) {
  const int64_t no = pr->nnz_qo * pr->hq * pr->hd, nl = pr->nnz_qo * pr->hq;
  const size_t dsz = fi_dtype_size(pr->dt);
  int64_t diff = 0, first = -1;
  for (int64_t i = 0; i < no; ++i)
    if (memcmp((const char *)got->o + i * dsz, (const char *)want->o + i * dsz, dsz)) {
      if (first < 0) first = i;
      ++diff;
    }
  int64_t ldiff = 0;
  for (int64_t i = 0; i < nl; ++i) ldiff += memcmp(&got->lse[i], &want->lse[i], sizeof(float)) != 0;
  const int64_t nan_got = unwritten(pr, got), nan_want = unwritten(pr, want);
  EXPECT(diff == 0 && ldiff == 0 && nan_got == 0 && nan_want == 0,
         "%s (%s, %s): %lld o and %lld lse elements differ from the built-in's (first o "
         "element %lld: %.9g vs %.9g); %lld / %lld unwritten", what, fam_names[pr->fam],
         fi_dtype_name(pr->dt), (long long)diff, (long long)ldiff, (long long)first,
         first >= 0 ? fi_load_f32(got->o, pr->dt, first) : 0.0,
         first >= 0 ? fi_load_f32(want->o, pr->dt, first) : 0.0, (long long)nan_got,
         (long long)nan_want);
}

/* d and e: every element of `got` against the float64 oracle of (pr, p, ov) (the dtype's
 * tolerance as in test_attention; lse 2e-4). */
static void expect_oracle(const char *what, const problem *pr, const fi_attention_params *p,
                          const oracle_variant *ov, const outputs *got) {
  double *o = xmalloc(sizeof(double) * (size_t)(pr->nnz_qo * pr->hq * pr->hd + 1));
  double *lse = xmalloc(sizeof(double) * (size_t)(pr->nnz_qo * pr->hq + 1));
  oracle(pr, p, ov, o, lse);
  double atol, rtol;
  tolerances(pr->dt, &atol, &rtol);
  int64_t bad = 0, lbad = 0;
  double worst = 0;
  for (int64_t i = 0; i < pr->nnz_qo * pr->hq * pr->hd; ++i) {
    const double g = fi_load_f32(got->o, pr->dt, i);
    if (!close_enough(g, o[i], atol, rtol)) {
      if (bad < 3)
        fprintf(stderr, "  %s (%s): o[%lld] = %.7g, want %.7g\n", what, fam_names[pr->fam],
                (long long)i, g, o[i]);
      ++bad;
    }
    if (!isnan(g) && fabs(g - o[i]) > worst) worst = fabs(g - o[i]);
  }
  for (int64_t i = 0; i < pr->nnz_qo * pr->hq; ++i)
    if (!close_enough(got->lse[i], lse[i], 2e-4, 2e-4)) {
      if (lbad < 3)
        fprintf(stderr, "  %s (%s): lse[%lld] = %.8g, want %.8g\n", what, fam_names[pr->fam],
                (long long)i, got->lse[i], lse[i]);
      ++lbad;
    }
  EXPECT(bad == 0 && lbad == 0, "%s (%s, %s): %lld o and %lld lse elements differ from the "
         "float64 oracle", what, fam_names[pr->fam], fi_dtype_name(pr->dt), (long long)bad,
         (long long)lbad);
  free(o), free(lse);
}

/* ------------------------------------------------------------------- the cases ----- */

static void case_soft_cap(const config *c, rng *r) {
  problem pr;
  make_problem(&pr, c, r);
  cap_captures cap = {{&pr}, 0.75f};
  const fi_variant var = {soft_cap_mod, NULL, &cap};
  fi_attention_params builtin = base_params(&pr), user = base_params(&pr);
  builtin.sm_scale = user.sm_scale = 0.9f; /* logits of a few units: the cap bites */
  builtin.logits_soft_cap = cap.cap;
  user.variant = &var;
  outputs a = make_outputs(&pr), b = make_outputs(&pr);
  EXPECT_OK(run_problem(&pr, &builtin, &a), ctx);
  EXPECT_OK(run_problem(&pr, &user, &b), ctx);
  expect_identical("a: score_mod soft cap vs logits_soft_cap", &pr, &b, &a);
  /* A variant of two NULL functions is none; so is one of the built-in's own extras. */
  const fi_variant none = {NULL, NULL, &cap};
  fi_attention_params empty = builtin;
  empty.variant = &none;
  EXPECT_OK(run_problem(&pr, &empty, &b), ctx);
  expect_identical("a: variant {NULL, NULL} vs none", &pr, &b, &a);
  free(a.o), free(a.lse), free(b.o), free(b.lse);
  free_problem(&pr);
}

static void case_masks(const config *c, rng *r) {
  /* sliding window: with the built-in causal mask on prefill (a window needs one to be a
   * sliding window there), alone on decode */
  problem pr;
  make_problem(&pr, c, r);
  window_captures win = {{&pr}, (int32_t)rng_int(r, 0, 24)};
  const fi_variant wvar = {NULL, window_mask, &win};
  fi_attention_params builtin = base_params(&pr), user = base_params(&pr);
  if (pr.fam != FAM_DECODE) builtin.mask_mode = user.mask_mode = FI_MASK_CAUSAL;
  builtin.window_left = win.window;
  user.variant = &wvar;
  outputs a = make_outputs(&pr), b = make_outputs(&pr);
  EXPECT_OK(run_problem(&pr, &builtin, &a), ctx);
  EXPECT_OK(run_problem(&pr, &user, &b), ctx);
  expect_identical("b: mask_mod window vs window_left", &pr, &b, &a);
  free(a.o), free(a.lse), free(b.o), free(b.lse);
  free_problem(&pr);

  /* causal */
  make_problem(&pr, c, r);
  arg_check chk = {&pr};
  const fi_variant cvar = {NULL, causal_mask, &chk};
  builtin = base_params(&pr), user = base_params(&pr);
  builtin.mask_mode = FI_MASK_CAUSAL;
  user.variant = &cvar;
  a = make_outputs(&pr), b = make_outputs(&pr);
  EXPECT_OK(run_problem(&pr, &builtin, &a), ctx);
  EXPECT_OK(run_problem(&pr, &user, &b), ctx);
  expect_identical("b: mask_mod causal vs FI_MASK_CAUSAL", &pr, &b, &a);
  free(a.o), free(a.lse), free(b.o), free(b.lse);
  free_problem(&pr);
}

/* How many ALiBi comparisons came out bit-identical (they do where the compiler contracts
 * neither expression into an FMA: the same operations in the same order). */
static int g_alibi_runs = 0, g_alibi_exact = 0;

static void case_alibi(const config *c, rng *r) {
  /* fp32 q / kv / o, so that a last-bit difference of the logit would show unrounded */
  config c32 = *c;
  c32.dt = FI_DTYPE_F32;
  problem pr;
  make_problem(&pr, &c32, r);
  float *slopes = xmalloc(sizeof(float) * (size_t)pr.hq);
  alibi_slopes(pr.hq, slopes);
  alibi_captures al = {{&pr}, slopes};
  const fi_variant var = {alibi_mod, NULL, &al};
  fi_attention_params builtin = base_params(&pr), user = base_params(&pr);
  if (pr.fam != FAM_DECODE) builtin.mask_mode = user.mask_mode = FI_MASK_CAUSAL;
  builtin.pos_encoding = FI_POS_ALIBI;
  user.variant = &var;
  outputs a = make_outputs(&pr), b = make_outputs(&pr);
  EXPECT_OK(run_problem(&pr, &builtin, &a), ctx);
  EXPECT_OK(run_problem(&pr, &user, &b), ctx);
  /* rtol 1e-5, atol 1e-6 of the output's scale (the largest |element|) */
  const int64_t no = pr.nnz_qo * pr.hq * pr.hd, nl = pr.nnz_qo * pr.hq;
  const float *oa = (const float *)a.o, *ob = (const float *)b.o;
  double oscale = 0, lscale = 0, worst = 0;
  for (int64_t i = 0; i < no; ++i) oscale = fmax(oscale, fabs(oa[i]));
  for (int64_t i = 0; i < nl; ++i)
    if (isfinite(a.lse[i])) lscale = fmax(lscale, fabs(a.lse[i]));
  int64_t bad = 0, exact = 1;
  for (int64_t i = 0; i < no; ++i) {
    bad += !close_enough(ob[i], oa[i], 1e-6 * oscale, 1e-5);
    exact &= ob[i] == oa[i];
    if (!isnan(ob[i])) worst = fmax(worst, fabs((double)ob[i] - oa[i]));
  }
  for (int64_t i = 0; i < nl; ++i) {
    bad += !close_enough(b.lse[i], a.lse[i], 1e-6 * lscale, 1e-5);
    exact &= b.lse[i] == a.lse[i] || (isinf(a.lse[i]) && b.lse[i] == a.lse[i]);
  }
  bad += unwritten(&pr, &a) + unwritten(&pr, &b);
  EXPECT(bad == 0, "c: score_mod ALiBi vs FI_POS_ALIBI (%s): %lld elements beyond fp32 "
         "rounding (max |diff| %.3g)", fam_names[pr.fam], (long long)bad, worst);
  g_alibi_runs += 1;
  g_alibi_exact += exact;
  free(slopes), free(a.o), free(a.lse), free(b.o), free(b.lse);
  free_problem(&pr);
}

static void case_t5(const config *c, rng *r) {
  problem pr;
  make_problem(&pr, c, r);
  float *table = xmalloc(sizeof(float) * (size_t)(pr.hq * T5_BUCKETS));
  for (int i = 0; i < pr.hq * T5_BUCKETS; ++i) table[i] = (float)rng_range(r, -2, 2);
  /* the odd-key head: the last head of the first KV group (GQA: the others of its group
   * keep every key, so the group's rows differ in their masks) */
  t5_captures t5 = {{&pr}, table, (int32_t)(pr.hq / pr.hkv - 1)};
  const fi_variant var = {t5_mod, t5_mask, &t5};
  fi_attention_params p = base_params(&pr);
  if (pr.fam != FAM_DECODE) p.mask_mode = FI_MASK_CAUSAL; /* applied together */
  /* half the time a built-in soft cap, which comes before score_mod: capped logits of at
   * most 0.5 plus a bias of up to 2 */
  if (rng_int(r, 0, 1)) p.logits_soft_cap = 0.5f;
  p.variant = &var;
  outputs out = make_outputs(&pr);
  EXPECT_OK(run_problem(&pr, &p, &out), ctx);
  const oracle_variant ov = {t5_keep, t5_score, &t5};
  expect_oracle("d: T5 bias + odd-key head mask", &pr, &p, &ov, &out);
  free(table), free(out.o), free(out.lse);
  free_problem(&pr);
}

static void case_drop_rows(const config *c, rng *r) {
  problem pr;
  make_problem(&pr, c, r);
  /* two requests with a query row and keys (or the same one twice) */
  int32_t cand[64], nc = 0;
  for (int b = 0; b < pr.batch && nc < 64; ++b)
    if (pr.qo_len[b] > 0 && pr.kv_len[b] > 0) cand[nc++] = b;
  EXPECT(nc > 0, "e: the problem has no request with queries and keys");
  if (nc == 0) {
    free_problem(&pr);
    return;
  }
  drop_captures dc;
  dc.chk.pr = &pr;
  dc.drop_batch = cand[rng_int(r, 0, nc - 1)];
  dc.one_batch = cand[rng_int(r, 0, nc - 1)];
  /* rows that see keys through the built-in masks: the last row of each request */
  dc.drop_qpos = pr.kv_len[dc.drop_batch] - 1 - (int32_t)rng_int(r, 0, pr.qo_len[dc.drop_batch] > 1);
  dc.one_qpos = pr.kv_len[dc.one_batch] - 1;
  dc.one_head = pr.hq - 1;
  const fi_variant var = {drop_mod, NULL, &dc};
  fi_attention_params p = base_params(&pr);
  if (pr.fam != FAM_DECODE) p.mask_mode = FI_MASK_CAUSAL;
  p.variant = &var;
  outputs out = make_outputs(&pr);
  EXPECT_OK(run_problem(&pr, &p, &out), ctx);
  const oracle_variant ov = {NULL, drop_score, &dc};
  expect_oracle("e: score_mod -inf rows", &pr, &p, &ov, &out);
  /* the dropped rows exactly: o = 0 (positive zero as the built-in writes), lse = -inf */
  int64_t wrong = 0, rows = 0;
  for (int b = 0; b < pr.batch; ++b)
    for (int64_t i = 0; i < pr.qo_len[b]; ++i) {
      const int64_t row = pr.qo_indptr[b] + i, qpos = pr.kv_len[b] - pr.qo_len[b] + i;
      for (int h = 0; h < pr.hq; ++h) {
        const int dropped = (b == dc.drop_batch && qpos == dc.drop_qpos) ||
                            (b == dc.one_batch && qpos == dc.one_qpos && h == dc.one_head);
        if (!dropped) continue;
        ++rows;
        wrong += out.lse[row * pr.hq + h] != -INFINITY;
        for (int d = 0; d < pr.hd; ++d) {
          const float x = fi_load_f32(out.o, pr.dt, (row * pr.hq + h) * pr.hd + d);
          wrong += x != 0.0f || signbit(x);
        }
      }
    }
  EXPECT(wrong == 0 && rows >= 1, "e: %s: %lld elements of the %lld dropped (row, head) pairs "
         "are not o = 0 / lse = -inf", fam_names[pr.fam], (long long)wrong, (long long)rows);
  free(out.o), free(out.lse);
  free_problem(&pr);
}

/* f. the CUDA backend refuses every run with a variant and no device image, after a valid
 * plan (device workspace from fi_rt_alloc on that context); tensors are not looked at
 * first. (Device images: test/E2E/variants_cuda.mlir.) */
static void case_cuda(void) {
  fi_context *cuda = NULL;
  if (fi_context_create(FI_BACKEND_CUDA, &cuda) != FI_SUCCESS) {
    printf("f: CUDA backend refuses variants: skipped (no CUDA context: %s)\n",
           fi_last_error(NULL));
    return;
  }
  fi_rt_set_context(cuda);
  arg_check chk = {NULL};
  const fi_variant var = {NULL, causal_mask, &chk};
  fi_attention_params p = fi_attention_params_default(8, 2, 128);
  int32_t qo_indptr[3] = {0, 3, 5}, kv_indptr[3] = {0, 2, 3}, last[2] = {16, 7};
  int32_t indices[3] = {0, 2, 1}, tok_indptr[3] = {0, 40, 70};
  const fi_page_table pages = {kv_indptr, indices, last};
  int32_t bi[3] = {0, 1, 2}, bx[2] = {0, 0};
  const fi_bsr_matrix bsr = {64, 64, bi, bx};
  const size_t ws_bytes = 64u << 20;
  void *ws = fi_rt_alloc(ws_bytes);
  fi_tensor none;
  memset(&none, 0, sizeof(none));
  fi_paged_kv_cache kv = {none, none, FI_LAYOUT_NHD};
  int tested = 0;
  for (int fam = 0; fam < FAM_COUNT && ws; ++fam) {
    fi_plan plan;
    fi_status st;
    p.variant = &var; /* the plan keeps it (runs refuse it, plans need not) */
    if (fam == FAM_DECODE)
      st = fi_decode_plan(cuda, &p, 2, &pages, 3, NULL, ws, ws_bytes, &plan);
    else if (fam == FAM_PAGED)
      st = fi_paged_prefill_plan(cuda, &p, 2, qo_indptr, &pages, 3, NULL, NULL, ws, ws_bytes,
                                 &plan);
    else if (fam == FAM_RAGGED)
      st = fi_ragged_prefill_plan(cuda, &p, 2, qo_indptr, tok_indptr, NULL, NULL, ws, ws_bytes,
                                  &plan);
    else
      st = fi_block_sparse_plan(cuda, &p, 100, 120, &bsr, NULL, ws, ws_bytes, &plan);
    if (st != FI_SUCCESS) { /* e.g. block-sparse before Hopper */
      printf("f: %s on CUDA: skipped (plan: %s)\n", fam_names[fam], fi_last_error(cuda));
      continue;
    }
    if (fam == FAM_DECODE)
      st = fi_decode_run(cuda, &plan, &none, &kv, &pages, &none, NULL);
    else if (fam == FAM_PAGED)
      st = fi_paged_prefill_run(cuda, &plan, &none, qo_indptr, &kv, &pages, NULL, &none, NULL);
    else if (fam == FAM_RAGGED)
      st = fi_ragged_prefill_run(cuda, &plan, &none, &none, &none, qo_indptr, tok_indptr, NULL,
                                 &none, NULL);
    else
      st = fi_block_sparse_run(cuda, &plan, &none, &none, &none, &bsr, &none, NULL);
    const char *msg = fi_last_error(cuda);
    EXPECT(st == FI_ERROR_UNSUPPORTED && strstr(msg, "params.variant") &&
               strstr(msg, "host backend") && strstr(msg, "mask_mod"),
           "f: %s run with a variant on CUDA: got %s \"%s\", want FI_ERROR_UNSUPPORTED naming "
           "params.variant", fam_names[fam], fi_status_string(st), msg);
    ++tested;
  }
  printf("f: CUDA backend refuses variants: %d op families checked\n", tested);
  fi_rt_free(ws);
  fi_rt_synchronize();
  fi_rt_set_context(NULL);
  fi_context_destroy(cuda);
}

#define F16 FI_DTYPE_F16
#define BF16 FI_DTYPE_BF16
#define F32 FI_DTYPE_F32

/* Fields: fam, batch, hq, hkv, hd, page size, fixed_split, dtype, empties */
static const config configs[] = {
    {FAM_DECODE, 6, 8, 2, 64, 16, 0, F16, 1},
    {FAM_DECODE, 3, 4, 1, 32, 5, 16, F32, 0},  /* split-KV into 16-key chunks */
    {FAM_PAGED, 4, 8, 2, 64, 16, 0, F16, 1},
    {FAM_PAGED, 3, 6, 3, 48, 7, 32, BF16, 0},
    {FAM_RAGGED, 5, 6, 3, 64, 1, 0, BF16, 1},
    {FAM_RAGGED, 3, 4, 1, 32, 1, 16, F32, 0},
    {FAM_BSR, 1, 4, 4, 64, 1, 0, F16, 0},
    {FAM_BSR, 1, 8, 2, 32, 1, 16, F32, 0},
};

int main(void) {
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) {
    fprintf(stderr, "cannot create a host context: %s\n", fi_last_error(NULL));
    return 1;
  }
  rng r = {20260417};
  for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); ++i) {
    const config *c = &configs[i];
    const int before = g_failures;
    for (int rep = 0; rep < 3; ++rep) {
      case_soft_cap(c, &r);
      case_masks(c, &r);
      case_alibi(c, &r);
      case_t5(c, &r);
      case_drop_rows(c, &r);
    }
    printf("%-16s gqa %d hd %3d %-4s split %2d: %s\n", fam_names[c->fam], c->hq / c->hkv, c->hd,
           fi_dtype_name(c->dt), c->fixed_split, g_failures == before ? "ok" : "FAIL");
  }
  printf("c: ALiBi as score_mod: %d of %d runs bit-identical to FI_POS_ALIBI (the rest within "
         "fp32 rounding)\n", g_alibi_exact, g_alibi_runs);
  /* one worker thread computes the same as several */
  fi_context_set_num_threads(ctx, 1);
  case_t5(&configs[3], &r);
  case_drop_rows(&configs[1], &r);
  case_cuda();
  fi_context_destroy(ctx);
  return test_finish("test_variants");
}
