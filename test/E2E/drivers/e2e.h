/* test/E2E/drivers/e2e.h -- shared pieces of the end-to-end drivers: memref descriptors
 * for the C interface of compiled functions, random ragged problems, and the comparison
 * of a compiled function's result with the runtime called directly.
 *
 * The drivers run with FI_RT_POISON=1 semantics forced on (see main of each driver), so
 * every buffer compiled code allocates starts as NaN; buffers of the direct runtime call
 * are poisoned here. Comparisons are bit-for-bit, falling back to |got - want| <= 1e-6 *
 * max(1, |want|) per element (only ever needed for reassociated fp32 sums). */
#ifndef FI_E2E_H
#define _POSIX_C_SOURCE 200809L
#define FI_E2E_H

#include <stdlib.h>

#include "fi/mlir_adapters.h"
#include "test_util.h"

#define FI_MEMREF_T(r)                                                                     \
  typedef struct memref##r {                                                               \
    void *allocated;                                                                       \
    void *aligned;                                                                         \
    int64_t offset;                                                                        \
    int64_t sizes[r];                                                                      \
    int64_t strides[r];                                                                    \
  } memref##r;
FI_MEMREF_T(1)
FI_MEMREF_T(2)
FI_MEMREF_T(3)
FI_MEMREF_T(4)
FI_MEMREF_T(5)

/* A contiguous row-major descriptor of `rank` dims over `data` (any memrefN*). */
static inline void mr_init(void *desc, int rank, void *data, const int64_t *shape) {
  void **p = (void **)desc;
  p[0] = data;
  p[1] = data;
  int64_t *d = (int64_t *)(p + 2);
  d[0] = 0;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    d[1 + i] = shape[i];
    d[1 + rank + i] = stride;
    stride *= shape[i];
  }
}

static inline int64_t numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

/* A buffer both the host (which fills and checks it) and the default context's backend can
 * read: managed memory on CUDA. (Buffers compiled code allocates are device memory.) */
static inline void *e2e_alloc(size_t bytes) {
  void *p = fi_rt_alloc_managed(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(2);
  }
  return p;
}

static inline void e2e_free(void *p) { fi_rt_free_managed(p); }

static inline void *random_tensor(rng *r, fi_dtype dtype, int64_t n, double lo, double hi) {
  void *p = e2e_alloc((size_t)n * fi_dtype_size(dtype));
  fill_random(p, dtype, n, r, lo, hi);
  return p;
}

static inline void *poisoned_tensor(fi_dtype dtype, int64_t n) {
  size_t bytes = (size_t)n * fi_dtype_size(dtype);
  void *p = e2e_alloc(bytes);
  poison(p, bytes);
  return p;
}

/* A random paged KV page table: request i gets kv_len[i] tokens (0 allowed when
 * allow_empty) on distinct random pages out of num_pages (a few spare pages too). */
typedef struct pages_t {
  int32_t batch, page_size, num_pages;
  int32_t *indptr, *indices, *last;
  int64_t *kv_len;
  int64_t total_kv;
} pages_t;

static inline void make_pages(rng *r, pages_t *pg, int32_t batch, int32_t page_size,
                              int64_t min_kv, int64_t max_kv, int allow_empty) {
  pg->batch = batch;
  pg->page_size = page_size;
  pg->kv_len = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)(batch ? batch : 1));
  pg->indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
  pg->last = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch ? batch : 1));
  int64_t used = 0;
  pg->total_kv = 0;
  pg->indptr[0] = 0;
  for (int32_t i = 0; i < batch; ++i) {
    int64_t len = rng_int(r, min_kv, max_kv);
    if (allow_empty && rng_int(r, 0, 7) == 0) len = 0;
    pg->kv_len[i] = len;
    pg->total_kv += len;
    int64_t pages = (len + page_size - 1) / page_size;
    used += pages;
    pg->indptr[i + 1] = (int32_t)used;
    pg->last[i] = pages ? (int32_t)(len - (pages - 1) * page_size) : 1;
  }
  pg->num_pages = (int32_t)(used + rng_int(r, 1, 4));
  int32_t *perm = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)pg->num_pages);
  for (int32_t i = 0; i < pg->num_pages; ++i) perm[i] = i;
  for (int32_t i = pg->num_pages - 1; i > 0; --i) {
    int32_t j = (int32_t)rng_int(r, 0, i);
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  pg->indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(used ? used : 1));
  memcpy(pg->indices, perm, sizeof(int32_t) * (size_t)used);
  free(perm);
}

static inline void free_pages(pages_t *pg) {
  free(pg->kv_len);
  e2e_free(pg->indptr);
  e2e_free(pg->indices);
  e2e_free(pg->last);
}

/* A paged decode's inputs as a compiled function takes them: q [batch, qo_heads, hd] and
 * the k, v caches [num_pages, page, kv_heads, hd], random fp16 in [-2, 2], and memrefs
 * over them and over a page table (indptr [batch + 1], indices [indptr[batch]], last). */
typedef struct decode_inputs {
  void *q, *k, *v;
  int64_t qs[3], cs[4], nq; /* q's and a cache's shapes; elements of q */
  memref3 mq;
  memref4 mk, mv;
  memref1 mi, mx, ml;
} decode_inputs;

static inline void decode_inputs_init(decode_inputs *d, rng *r, int32_t batch, int32_t qo_heads,
                                      int32_t kv_heads, int32_t hd, int32_t page,
                                      int32_t num_pages, int32_t *indptr, int32_t *indices,
                                      int32_t *last) {
  const int64_t qs[3] = {batch, qo_heads, hd}, cs[4] = {num_pages, page, kv_heads, hd};
  memcpy(d->qs, qs, sizeof qs);
  memcpy(d->cs, cs, sizeof cs);
  d->nq = numel(3, qs);
  d->q = random_tensor(r, FI_DTYPE_F16, d->nq, -2, 2);
  d->k = random_tensor(r, FI_DTYPE_F16, numel(4, cs), -2, 2);
  d->v = random_tensor(r, FI_DTYPE_F16, numel(4, cs), -2, 2);
  mr_init(&d->mq, 3, d->q, qs);
  mr_init(&d->mk, 4, d->k, cs);
  mr_init(&d->mv, 4, d->v, cs);
  const int64_t ni = batch + 1, nx = indptr[batch], nl = batch;
  mr_init(&d->mi, 1, indptr, &ni);
  mr_init(&d->mx, 1, indices, &nx);
  mr_init(&d->ml, 1, last, &nl);
}

static inline void decode_inputs_free(decode_inputs *d) {
  e2e_free(d->q), e2e_free(d->k), e2e_free(d->v);
}

/* A random ragged indptr of `batch` segments with lengths in [lo, hi]. */
static inline int32_t *random_indptr(rng *r, int32_t batch, int64_t lo, int64_t hi,
                                     int64_t *total) {
  int32_t *p = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
  p[0] = 0;
  for (int32_t i = 0; i < batch; ++i) p[i + 1] = p[i] + (int32_t)rng_int(r, lo, hi);
  *total = p[batch];
  return p;
}

/* A host copy (malloc) of `bytes` at `p`, which may be device memory. */
static inline void *host_copy_of(const void *p, size_t bytes) {
  void *h = xmalloc(bytes ? bytes : 1);
  if (fi_rt_copy(h, p, bytes) != FI_SUCCESS || fi_rt_synchronize() != FI_SUCCESS) exit(2);
  return h;
}

/* Counts the elements where got and want differ (bits, then 1e-6 relative); prints the
 * first few. NaN in got (poison never overwritten) always counts. */
static inline int64_t compare(const char *what, const void *got_any, const void *want,
                              fi_dtype dtype, int64_t n) {
  size_t es = fi_dtype_size(dtype);
  /* `got` may be device memory (what compiled code allocated): read a copy. */
  void *got = xmalloc((size_t)n * es + 1);
  if (fi_rt_copy(got, got_any, (size_t)n * es) != FI_SUCCESS || fi_rt_synchronize() != FI_SUCCESS) {
    printf("MISMATCH %s: could not read the compiled result back\n", what);
    free(got);
    return n ? n : 1;
  }
  int64_t bad = 0, exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (memcmp((const char *)got + i * (int64_t)es, (const char *)want + i * (int64_t)es, es) == 0) {
      float g = fi_load_f32(got, dtype, i);
      if (g == g) {
        ++exact;
        continue;
      }
    }
    float g = fi_load_f32(got, dtype, i), w = fi_load_f32(want, dtype, i);
    double tol = 1e-6 * (fabs(w) > 1 ? fabs(w) : 1);
    if (g == g && w == w && fabs((double)g - (double)w) <= tol) continue;
    if (bad < 5)
      printf("MISMATCH %s[%lld]: compiled %.9g, runtime %.9g\n", what, (long long)i, g, w);
    ++bad;
  }
  printf("  %s: %lld elements, %lld bit-exact, %lld mismatches\n", what, (long long)n,
         (long long)exact, (long long)bad);
  free(got);
  return bad;
}

/* The tiles of the i-th plan the compiled code made (the runtime's direct call forces
 * the same variant, so the two compute in the same order). */
static inline fi_tiles logged_tiles(int i, fi_op_family want) {
  fi_op_family fam[64];
  fi_tiles tiles[64];
  int n = fi_rt_plan_log(fam, tiles, 64);
  if (i >= n || fam[i] != want) {
    printf("MISMATCH plan log: %d plans, wanted #%d of family %d\n", n, i, (int)want);
    exit(1);
  }
  return tiles[i];
}

static inline const char *tiles_str(fi_tiles t, int decode) {
  static char buf[4][64]; /* rotating: several may appear in one printf */
  static int next = 0;
  next = (next + 1) % 4;
  return fi_tiles_name(t, decode, buf[next], sizeof(buf[next]));
}

#define CHECK_OK(ctx, expr)                                                                \
  do {                                                                                     \
    fi_status s_ = (expr);                                                                 \
    if (s_ != FI_SUCCESS) {                                                                \
      printf("FAILED %s: %s: %s\n", #expr, fi_status_string(s_), fi_last_error(ctx));      \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* On the CUDA backend some cases have no kernel (f32 queries, head_dim 32, ...): the
 * adapters report FI_ERROR_UNSUPPORTED through this handler, which records it so that
 * the driver reports the case as skipped; every other error aborts as by default. */
static char e2e_unsupported[512];
static void e2e_error_handler(const char *op, fi_status status, const char *message) {
  if (status == FI_ERROR_UNSUPPORTED) {
    snprintf(e2e_unsupported, sizeof(e2e_unsupported), "%s: %s", op, message);
    return;
  }
  fprintf(stderr, "fi: %s: %s: %s\n", op, fi_status_string(status), message);
  abort();
}
/* 1 (after printing SKIP) if the compiled call hit an unsupported case. */
static inline int e2e_skipped(const char *name) {
  if (!e2e_unsupported[0]) return 0;
  printf("  SKIP %s on this backend: %s\n", name, e2e_unsupported);
  e2e_unsupported[0] = 0;
  return 1;
}

/* A random BSR matrix of r x c blocks over m query rows and n keys (bottom-right causal
 * alignment): every block row lists block column 0, the blocks around its diagonal, and
 * each other block with probability `density`. Returns the number of blocks. */
static inline int32_t random_bsr(rng *r, int64_t m, int64_t n, int32_t br, int32_t bc,
                                 double density, int32_t **indptr_out, int32_t **indices_out) {
  const int64_t rows = (m + br - 1) / br, cols = (n + bc - 1) / bc;
  int32_t *indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(rows + 1));
  int32_t *indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(rows * cols + 1));
  int32_t nnz = 0;
  indptr[0] = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t diag = (i * br + br - 1 + n - m) / bc; /* the block of the row's last key */
    for (int64_t j = 0; j < cols; ++j)
      if (j == 0 || (j <= diag && j + 2 > diag) || rng_uniform(r) < density)
        indices[nnz++] = (int32_t)j;
    indptr[i + 1] = nnz;
  }
  *indptr_out = indptr;
  *indices_out = indices;
  return nnz;
}

/* fi_ragged_prefill_plan / run called directly on q [qo_indptr[batch], qo heads, hd] and k, v
 * [kv_indptr[batch], kv heads, hd] (shapes and dtypes from `p`, o of its output dtype;
 * `mask` when custom; a prefill stage when the backend wants one), with the tiles the
 * compiled run used (so both sum in the same order), into a poisoned o and, when lse_out,
 * lse [rows, qo heads]; the caller e2e_frees them. */
static inline void ragged_prefill_direct(fi_context *ctx, const fi_attention_params *p,
                                         int32_t batch, const int32_t *qo_indptr,
                                         const int32_t *kv_indptr, const fi_custom_mask *mask,
                                         const fi_tiles *tiles, void *q, void *k, void *v,
                                         void **o_out, float **lse_out) {
  const int64_t nq = qo_indptr[batch], nk = kv_indptr[batch];
  const int64_t qs[3] = {nq, p->num_qo_heads, p->head_dim};
  const int64_t ks[3] = {nk, p->num_kv_heads, p->head_dim}, ls[2] = {nq, p->num_qo_heads};
  const fi_dtype od = fi_output_dtype(p);
  size_t ws_bytes = 0, stage_bytes = 0;
  CHECK_OK(ctx, fi_prefill_workspace_size(ctx, p, batch, nq, &ws_bytes));
  CHECK_OK(ctx, fi_prefill_stage_size(ctx, p, 0, nq, nk, &stage_bytes));
  void *ws = e2e_alloc(ws_bytes), *stage = stage_bytes ? e2e_alloc(stage_bytes) : NULL;
  if (stage) CHECK_OK(ctx, fi_context_set_prefill_stage(ctx, stage, stage_bytes));
  fi_plan plan;
  CHECK_OK(ctx, fi_ragged_prefill_plan(ctx, p, batch, qo_indptr, kv_indptr, mask, tiles, ws,
                                       ws_bytes, &plan));
  void *o = poisoned_tensor(od, numel(3, qs));
  float *lse = lse_out ? (float *)poisoned_tensor(FI_DTYPE_F32, numel(2, ls)) : NULL;
  fi_tensor tq = fi_tensor_contiguous(q, p->q_dtype, 3, qs);
  fi_tensor to = fi_tensor_contiguous(o, od, 3, qs);
  fi_tensor tk = fi_tensor_contiguous(k, p->kv_dtype, 3, ks);
  fi_tensor tv = fi_tensor_contiguous(v, p->kv_dtype, 3, ks);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  CHECK_OK(ctx, fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tv, qo_indptr, kv_indptr, mask,
                                      &to, lse ? &tl : NULL));
  if (stage) {
    fi_rt_synchronize(); /* (the stage is in use until the run is done) */
    CHECK_OK(ctx, fi_context_set_prefill_stage(ctx, NULL, 0));
    e2e_free(stage);
  }
  e2e_free(ws);
  *o_out = o;
  if (lse_out) *lse_out = lse;
}

/* fi_block_sparse_plan / run called directly on f16 q [m, qo heads, hd] and k, v [n, kv
 * heads, hd] (shapes from `p`) -- or, with `cache`, fi_block_sparse_paged_plan / run over
 * that cache and the page table `pages` of `num_pages` pages (k, v unused) -- into a
 * poisoned o (f16, like q) and lse [m, qo heads]; the caller e2e_frees both. */
static inline void block_sparse_direct_any(fi_context *ctx, const fi_attention_params *p,
                                           int64_t m, int64_t n, const fi_bsr_matrix *bsr,
                                           void *q, void *k, void *v,
                                           const fi_paged_kv_cache *cache,
                                           const fi_page_table *pages, int32_t num_pages,
                                           const fi_tiles *tiles, void **o_out,
                                           float **lse_out) {
  const int64_t qs[3] = {m, p->num_qo_heads, p->head_dim};
  const int64_t ks[3] = {n, p->num_kv_heads, p->head_dim}, ls[2] = {m, p->num_qo_heads};
  size_t ws_bytes = 0, stage_bytes = 0;
  CHECK_OK(ctx, fi_block_sparse_workspace_size(ctx, p, m, n, bsr->block_rows, bsr->block_cols,
                                               &ws_bytes));
  /* a prefill stage where the run takes one (CUDA: RoPE, fp8 KV, pages that are not a
   * multiple of 16 or load as boxes of 16 or 32 rows), sized for the sequence's whole pages */
  const int64_t stage_rows = cache ? (n + p->page_size - 1) / p->page_size * p->page_size : n;
  if (cache)
    CHECK_OK(ctx, fi_block_sparse_stage_size(ctx, p, stage_rows, &stage_bytes));
  else
    CHECK_OK(ctx, fi_prefill_stage_size(ctx, p, 0, m, stage_rows, &stage_bytes));
  void *ws = e2e_alloc(ws_bytes), *stage = stage_bytes ? e2e_alloc(stage_bytes) : NULL;
  if (stage) CHECK_OK(ctx, fi_context_set_prefill_stage(ctx, stage, stage_bytes));
  fi_plan plan;
  if (cache)
    CHECK_OK(ctx, fi_block_sparse_paged_plan(ctx, p, m, pages, num_pages, bsr, tiles, ws,
                                             ws_bytes, &plan));
  else
    CHECK_OK(ctx, fi_block_sparse_plan(ctx, p, m, n, bsr, tiles, ws, ws_bytes, &plan));
  void *o = poisoned_tensor(FI_DTYPE_F16, numel(3, qs));
  float *lse = (float *)poisoned_tensor(FI_DTYPE_F32, numel(2, ls));
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
  fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  if (cache) {
    CHECK_OK(ctx, fi_block_sparse_paged_run(ctx, &plan, &tq, cache, pages, bsr, &to, &tl));
  } else {
    fi_tensor tk = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, ks);
    fi_tensor tv = fi_tensor_contiguous(v, FI_DTYPE_F16, 3, ks);
    CHECK_OK(ctx, fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, bsr, &to, &tl));
  }
  if (fi_rt_synchronize() != FI_SUCCESS) exit(2); /* (the run reads ws until it is done) */
  if (stage) {
    CHECK_OK(ctx, fi_context_set_prefill_stage(ctx, NULL, 0));
    e2e_free(stage);
  }
  e2e_free(ws);
  *o_out = o;
  *lse_out = lse;
}
static inline void block_sparse_direct(fi_context *ctx, const fi_attention_params *p,
                                       int64_t m, int64_t n, const fi_bsr_matrix *bsr,
                                       void *q, void *k, void *v, void **o_out,
                                       float **lse_out) {
  block_sparse_direct_any(ctx, p, m, n, bsr, q, k, v, NULL, NULL, 0, NULL, o_out, lse_out);
}

static inline void e2e_setup(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines reach the log even if a handler aborts */
  setenv("FI_RT_POISON", "1", 1);
  fi_rt_set_error_handler(e2e_error_handler);
  fi_context *ctx = fi_default_context();
  if (!ctx) {
    printf("FAILED: no default context: %s\n", fi_last_error(NULL));
    exit(1);
  }
  printf("backend: %s\n", fi_context_backend(ctx) == FI_BACKEND_CUDA ? "cuda" : "host");
}

#endif
