/* test/runtime/test_block_sparse.c -- block-sparse attention (fi_block_sparse_plan/run) on
 * the host backend against the float64 oracle: random BSR matrices of the seeds' patterns
 * (local / sliding blocks, global blocks, random blocks, banded, empty and full block rows),
 * block shapes that do and do not divide the lengths, causal or not, with the other extras;
 * outputs poisoned, every element checked. The oracle's mask is built here from the BSR
 * definition (runtime.h), independently of the runtime. Then the bad input: each rule of a
 * BSR matrix refused with a message naming the array, index and value. */
#include "bsr_offsets.h"
#include "oracle.h"
#include "test_util.h"

static fi_context *ctx;

enum { PAT_LOCAL, PAT_GLOBAL_LOCAL, PAT_RANDOM, PAT_BANDED, PAT_EMPTY_ROWS, PAT_FULL, PAT_COUNT };
static const char *const pattern_names[PAT_COUNT] = {"local", "global+local", "random",
                                                     "banded", "empty rows", "full"};

/* A BSR matrix of `pattern` over rows x cols blocks: indptr [rows + 1], indices (sorted). */
static int32_t make_bsr(rng *r, int pattern, int64_t rows, int64_t cols, int32_t *indptr,
                        int32_t *indices) {
  const int64_t width = rng_int(r, 1, 3);
  int32_t nnz = 0;
  indptr[0] = 0;
  for (int64_t i = 0; i < rows; ++i) {
    /* the diagonal block of row i in column units (rows and cols may differ in count) */
    const int64_t diag = cols > 0 ? (i * cols) / (rows > 0 ? rows : 1) : 0;
    for (int64_t j = 0; j < cols; ++j) {
      int keep = 0;
      switch (pattern) {
        case PAT_LOCAL: keep = j <= diag && j > diag - width; break;
        case PAT_GLOBAL_LOCAL: keep = j == 0 || (j <= diag && j > diag - width); break;
        case PAT_RANDOM: keep = rng_uniform(r) < 0.35; break;
        case PAT_BANDED: keep = j >= diag - width && j <= diag + width; break;
        case PAT_EMPTY_ROWS: keep = i % 3 != 1 && rng_uniform(r) < 0.6; break;
        case PAT_FULL: keep = 1; break;
      }
      if (keep) indices[nnz++] = (int32_t)j;
    }
    indptr[i + 1] = nnz;
  }
  return nnz;
}

static int64_t draw_rng(void *r, int64_t lo, int64_t hi) { return rng_int((rng *)r, lo, hi); }
static int32_t make_offsets(rng *r, int64_t total, int32_t least, int32_t *off) {
  return random_bsr_offsets(total, least, off, draw_rng, r);
}

static void tolerances(fi_dtype d, double *atol, double *rtol) {
  if (d == FI_DTYPE_F32) { *atol = 1e-4; *rtol = 1e-4; }
  else if (d == FI_DTYPE_F16) { *atol = 2e-3; *rtol = 4e-3; }
  else { *atol = 1e-2; *rtol = 1.6e-2; }
}

static void one_case(rng *r, int trial) {
  static const int32_t blocks[] = {1, 2, 7, 16, 64};
  const int pattern = trial % PAT_COUNT;
  const int64_t m = rng_int(r, 1, 200);
  /* keys past the queries, and in one case of six fewer keys than queries (causal: the
   * first rows then keep no key) */
  const int64_t n = trial % 6 == 5 ? rng_int(r, 1, m) : m + rng_int(r, 0, 150);
  const int32_t hkv = (int32_t)rng_int(r, 1, 2), hq = hkv * (int32_t)rng_int(r, 1, 3);
  const int32_t hd = trial % 2 ? 16 : 64;
  fi_attention_params p = fi_attention_params_default(hq, hkv, hd);
  static const fi_dtype dts[] = {FI_DTYPE_F16, FI_DTYPE_BF16, FI_DTYPE_F32};
  p.q_dtype = p.kv_dtype = dts[trial % 3];
  p.mask_mode = rng_int(r, 0, 1) ? FI_MASK_CAUSAL : FI_MASK_NONE;
  if (rng_int(r, 0, 3) == 0) p.logits_soft_cap = 20.f;
  if (rng_int(r, 0, 4) == 0) p.window_left = (int32_t)rng_int(r, 0, n);
  if (rng_int(r, 0, 4) == 0) p.pos_encoding = FI_POS_ALIBI;
  fi_bsr_matrix bsr = {0};
  bsr.block_rows = blocks[rng_int(r, 0, 4)];
  bsr.block_cols = blocks[rng_int(r, 0, 4)];
  /* Variable block rows in trials 1 and 3 mod 4, variable column blocks in 2 and 3: the
   * smallest sizes are the blocks drawn above (at most M or N). */
  int32_t *row_off = xmalloc(sizeof(int32_t) * (size_t)(m + 1));
  int32_t *col_off = xmalloc(sizeof(int32_t) * (size_t)(n + 1));
  if (trial % 4 == 1 || trial % 4 == 3) {
    if (bsr.block_rows > m) bsr.block_rows = (int32_t)m;
    bsr.num_block_rows = make_offsets(r, m, bsr.block_rows, row_off);
    bsr.row_offsets = row_off;
  }
  if (trial % 4 >= 2) {
    if (bsr.block_cols > n) bsr.block_cols = (int32_t)n;
    bsr.num_block_cols = make_offsets(r, n, bsr.block_cols, col_off);
    bsr.col_offsets = col_off;
  }
  const int64_t rows = bsr.row_offsets ? bsr.num_block_rows
                                       : (m + bsr.block_rows - 1) / bsr.block_rows;
  const int64_t cols = bsr.col_offsets ? bsr.num_block_cols
                                       : (n + bsr.block_cols - 1) / bsr.block_cols;
  int32_t *indptr = xmalloc(sizeof(int32_t) * (size_t)(rows + 1));
  int32_t *indices = xmalloc(sizeof(int32_t) * (size_t)(rows * cols + 1));
  make_bsr(r, pattern, rows, cols, indptr, indices);
  bsr.indptr = indptr;
  bsr.indices = indices;

  /* Inputs, then the oracle: the BSR's pairs (causal bottom-right) as a dense mask. */
  const int64_t nq = m * hq * hd, nk = n * hkv * hd;
  void *q = xmalloc((size_t)nq * 4), *k = xmalloc((size_t)nk * 4), *v = xmalloc((size_t)nk * 4);
  fill_random(q, p.q_dtype, nq, r, -1, 1);
  fill_random(k, p.kv_dtype, nk, r, -1, 1);
  fill_random(v, p.kv_dtype, nk, r, -1, 1);
  uint8_t *bits = xmalloc((size_t)(m * n / 8 + 1));
  memset(bits, 0, (size_t)(m * n / 8 + 1));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t r0 = bsr.row_offsets ? row_off[i] : i * bsr.block_rows;
    const int64_t r1 = bsr.row_offsets ? row_off[i + 1] : (i + 1) * bsr.block_rows;
    for (int32_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t j = indices[e];
      const int64_t c0 = bsr.col_offsets ? col_off[j] : j * bsr.block_cols;
      const int64_t c1 = bsr.col_offsets ? col_off[j + 1] : (j + 1) * bsr.block_cols;
      for (int64_t row = r0; row < r1 && row < m; ++row)
        for (int64_t c = c0; c < c1 && c < n; ++c)
          if (p.mask_mode != FI_MASK_CAUSAL || c <= row + n - m)
            bits[(row * n + c) >> 3] |= (uint8_t)(1u << ((row * n + c) & 7));
    }
  }
  double *dq = xmalloc(sizeof(double) * (size_t)nq), *dk = xmalloc(sizeof(double) * (size_t)nk);
  double *dv = xmalloc(sizeof(double) * (size_t)nk), *want = xmalloc(sizeof(double) * (size_t)nq);
  double *want_lse = xmalloc(sizeof(double) * (size_t)(m * hq));
  for (int64_t i = 0; i < nq; ++i) dq[i] = fi_load_f32(q, p.q_dtype, i);
  for (int64_t i = 0; i < nk; ++i) dk[i] = fi_load_f32(k, p.kv_dtype, i);
  for (int64_t i = 0; i < nk; ++i) dv[i] = fi_load_f32(v, p.kv_dtype, i);
  fi_attention_params po = p;
  po.mask_mode = FI_MASK_CUSTOM;
  oracle_attention(&po, m, n, dq, dk, dv, bits, 0, want, want_lse);

  /* The runtime, on poisoned outputs. */
  size_t ws_bytes = 0;
  EXPECT_OK(fi_block_sparse_workspace_size(ctx, &p, m, n, bsr.block_rows, bsr.block_cols,
                                           &ws_bytes), ctx);
  void *ws = xmalloc(ws_bytes);
  fi_plan plan;
  EXPECT_OK(fi_block_sparse_plan(ctx, &p, m, n, &bsr, NULL, ws, ws_bytes, &plan), ctx);
  const int64_t qs[3] = {m, hq, hd}, ks[3] = {n, hkv, hd}, ls[2] = {m, hq};
  void *o = xmalloc((size_t)nq * 4);
  float *lse = xmalloc(sizeof(float) * (size_t)(m * hq));
  poison(o, (size_t)nq * 4);
  poison(lse, sizeof(float) * (size_t)(m * hq));
  fi_tensor tq = fi_tensor_contiguous(q, p.q_dtype, 3, qs), to = fi_tensor_contiguous(o, p.q_dtype, 3, qs);
  fi_tensor tk = fi_tensor_contiguous(k, p.kv_dtype, 3, ks), tv = fi_tensor_contiguous(v, p.kv_dtype, 3, ks);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  EXPECT_OK(fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &bsr, &to, &tl), ctx);
  double atol, rtol;
  tolerances(p.q_dtype, &atol, &rtol);
  int64_t bad = 0, lbad = 0;
  for (int64_t i = 0; i < nq; ++i)
    bad += !close_enough(fi_load_f32(o, p.q_dtype, i), want[i], atol, rtol);
  for (int64_t i = 0; i < m * hq; ++i) lbad += !close_enough(lse[i], want_lse[i], 1e-3, 1e-3);
  EXPECT(bad == 0 && lbad == 0,
         "trial %d (%s, %lld x %lld, blocks %d%s x %d%s, %s, %s): %lld o and %lld lse "
         "elements off", trial, pattern_names[pattern], (long long)m, (long long)n,
         (int)bsr.block_rows, bsr.row_offsets ? "+" : "", (int)bsr.block_cols,
         bsr.col_offsets ? "+" : "", fi_dtype_name(p.q_dtype),
         p.mask_mode == FI_MASK_CAUSAL ? "causal" : "no mask", (long long)bad, (long long)lbad);
  /* The same keys in a paged cache (every third trial): pages of 1-16 tokens in a shuffled
   * pool, NHD or HND, NaN in the slots no key fills; fi_block_sparse_paged_plan/run against
   * the same oracle. */
  if (trial % 3 == 0) {
    fi_attention_params pp = p;
    pp.page_size = (int32_t)rng_int(r, 1, 16);
    const int32_t used = (int32_t)((n + pp.page_size - 1) / pp.page_size);
    const int32_t pool = used + (int32_t)rng_int(r, 0, 3);
    const int hnd = (int)rng_int(r, 0, 1);
    int32_t *ids = xmalloc(sizeof(int32_t) * (size_t)pool);
    for (int32_t i = 0; i < pool; ++i) ids[i] = i;
    for (int32_t i = pool - 1; i > 0; --i) {
      const int32_t j = (int32_t)rng_int(r, 0, i), t = ids[i];
      ids[i] = ids[j], ids[j] = t;
    }
    const size_t es = fi_dtype_size(p.kv_dtype);
    const size_t cache = (size_t)pool * pp.page_size * hkv * hd * es;
    char *kc = xmalloc(cache), *vc = xmalloc(cache);
    memset(kc, 0xff, cache), memset(vc, 0xff, cache); /* NaN in every dtype */
    for (int64_t j = 0; j < n; ++j)
      for (int32_t h = 0; h < hkv; ++h) {
        const int64_t pg = ids[j / pp.page_size], slot = j % pp.page_size;
        const int64_t at = hnd ? ((pg * hkv + h) * pp.page_size + slot) * hd
                               : ((pg * pp.page_size + slot) * hkv + h) * hd;
        memcpy(kc + at * es, (char *)k + (j * hkv + h) * hd * es, (size_t)hd * es);
        memcpy(vc + at * es, (char *)v + (j * hkv + h) * hd * es, (size_t)hd * es);
      }
    const int64_t cs[4] = {pool, hnd ? hkv : pp.page_size, hnd ? pp.page_size : hkv, hd};
    fi_paged_kv_cache kv = {fi_tensor_contiguous(kc, p.kv_dtype, 4, cs),
                            fi_tensor_contiguous(vc, p.kv_dtype, 4, cs),
                            hnd ? FI_LAYOUT_HND : FI_LAYOUT_NHD};
    const int32_t pi[2] = {0, used}, pl[1] = {(int32_t)(n - (int64_t)(used - 1) * pp.page_size)};
    const fi_page_table pt = {pi, ids, pl};
    EXPECT_OK(fi_block_sparse_paged_plan(ctx, &pp, m, &pt, pool, &bsr, NULL, ws, ws_bytes, &plan),
              ctx);
    poison(o, (size_t)nq * 4);
    poison(lse, sizeof(float) * (size_t)(m * hq));
    EXPECT_OK(fi_block_sparse_paged_run(ctx, &plan, &tq, &kv, &pt, &bsr, &to, &tl), ctx);
    int64_t pbad = 0;
    for (int64_t i = 0; i < nq; ++i)
      pbad += !close_enough(fi_load_f32(o, p.q_dtype, i), want[i], atol, rtol);
    for (int64_t i = 0; i < m * hq; ++i) pbad += !close_enough(lse[i], want_lse[i], 1e-3, 1e-3);
    EXPECT(pbad == 0, "trial %d paged (pages of %d, %s): %lld elements off", trial,
           (int)pp.page_size, hnd ? "hnd" : "nhd", (long long)pbad);
    /* the contiguous run of a paged plan, and the paged run of a contiguous one */
    EXPECT_ERR(fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &bsr, &to, &tl),
               FI_ERROR_PLAN_MISMATCH, "paged cache", "fi_block_sparse_paged_run");
    free(ids), free(kc), free(vc);
  }
  free(row_off), free(col_off);
  free(indptr), free(indices), free(q), free(k), free(v), free(bits), free(dq), free(dk);
  free(dv), free(want), free(want_lse), free(ws), free(o), free(lse);
}

static void bad_input(void) {
  fi_attention_params p = fi_attention_params_default(2, 2, 16);
  size_t ws_bytes = 0;
  EXPECT_OK(fi_block_sparse_workspace_size(ctx, &p, 10, 20, 4, 8, &ws_bytes), ctx);
  EXPECT_ERR(fi_block_sparse_workspace_size(ctx, &p, 10, 20, 0, 8, &ws_bytes),
             FI_ERROR_INVALID_ARGUMENT, "block_rows = 0", ">= 1");
  char *ws = xmalloc(ws_bytes);
  fi_plan plan;
  /* M = 10 rows, N = 20 keys, 4 x 8 blocks: 3 block rows, 3 block columns */
  int32_t indptr[4] = {0, 2, 3, 5}, indices[5] = {0, 1, 2, 0, 2};
  fi_bsr_matrix b = {4, 8, indptr, indices};
  EXPECT_OK(fi_block_sparse_plan(ctx, &p, 10, 20, &b, NULL, ws, ws_bytes, &plan), ctx);
  int32_t dec[4] = {0, 2, 1, 5};
  fi_bsr_matrix bd = {4, 8, dec, indices};
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bd, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.indptr[2] = 1", "must not decrease");
  int32_t out[5] = {0, 1, 3, 0, 2};
  fi_bsr_matrix bo = {4, 8, indptr, out};
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bo, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.indices[2] = 3", "column blocks are 0..2");
  int32_t uns[5] = {1, 0, 2, 0, 2};
  fi_bsr_matrix bu = {4, 8, indptr, uns};
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bu, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.indices[1] = 0 follows 1", "strictly increase");
  int32_t start[4] = {1, 2, 3, 5};
  fi_bsr_matrix bs = {4, 8, start, indices};
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bs, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.indptr[0] = 1");
  fi_bsr_matrix bz = {0, 8, indptr, indices};
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bz, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "block_rows = 0");
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, NULL, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr is NULL");
  /* Variable blocks (M = 10: rows 0-3, 4-9; N = 20: keys 0-4, 5-11, 12-19). */
  int32_t ro[3] = {0, 4, 10}, co[4] = {0, 5, 12, 20}, vp[3] = {0, 2, 3}, vi[3] = {0, 2, 1};
  fi_bsr_matrix bv = {3, 4, vp, vi, 2, 3, ro, co};
  EXPECT_OK(fi_block_sparse_plan(ctx, &p, 10, 20, &bv, NULL, ws, ws_bytes, &plan), ctx);
  int32_t ro_short[3] = {0, 4, 9};
  fi_bsr_matrix bve = bv;
  bve.row_offsets = ro_short;
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bve, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.row_offsets[2] = 9", "M = 10");
  int32_t co_small[4] = {0, 5, 7, 20};
  bve = bv, bve.col_offsets = co_small;
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bve, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.col_offsets[2] = 7", "block 1 has 2 keys",
             "block_cols = 4");
  int32_t co_start[4] = {1, 5, 12, 20};
  bve = bv, bve.col_offsets = co_start;
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bve, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.col_offsets[0] = 1", "must be 0");
  bve = bv, bve.num_block_cols = 0;
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bve, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.col_offsets", "at least one block");
  int32_t vi_out[3] = {0, 3, 1};
  bve = bv, bve.indices = vi_out;
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 10, 20, &bve, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "bsr.indices[1] = 3", "num_block_cols");
  fi_attention_params pc = p;
  pc.mask_mode = FI_MASK_CUSTOM;
  EXPECT_ERR(fi_block_sparse_plan(ctx, &pc, 10, 20, &b, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "FI_MASK_CUSTOM", "BSR matrix is the mask");
  EXPECT_ERR(fi_block_sparse_plan(ctx, &p, 100000, 100000, &b, NULL, ws, ws_bytes, &plan),
             FI_ERROR_UNSUPPORTED, "2^31 - 1");
  /* a run with other blocks than the plan's, or a plan of another family */
  EXPECT_OK(fi_block_sparse_plan(ctx, &p, 10, 20, &b, NULL, ws, ws_bytes, &plan), ctx);
  uint16_t q[10 * 2 * 16], k[20 * 2 * 16], o[10 * 2 * 16];
  memset(q, 0, sizeof q), memset(k, 0, sizeof k);
  const int64_t qs[3] = {10, 2, 16}, ks[3] = {20, 2, 16};
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs), to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
  fi_tensor tk = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, ks);
  fi_bsr_matrix b2 = {2, 8, indptr, indices};
  EXPECT_ERR(fi_block_sparse_run(ctx, &plan, &tq, &tk, &tk, &b2, &to, NULL),
             FI_ERROR_PLAN_MISMATCH, "2 x 8", "4 x 8");
  fi_bsr_matrix b4v = {4, 8, indptr, indices, 0, 3, NULL, co};
  EXPECT_ERR(fi_block_sparse_run(ctx, &plan, &tq, &tk, &tk, &b4v, &to, NULL),
             FI_ERROR_PLAN_MISMATCH, "variable columns", "uniform columns");
  int32_t qi[2] = {0, 10}, ki[2] = {0, 20};
  EXPECT_ERR(fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tk, qi, ki, NULL, &to, NULL),
             FI_ERROR_PLAN_MISMATCH, "block-sparse attention", "ragged prefill");
  EXPECT_OK(fi_block_sparse_run(ctx, &plan, &tq, &tk, &tk, &b, &to, NULL), ctx);
  /* Paged: the paged run of a contiguous plan; a page table whose keys are not the plan's
   * N; a page table past the pool; a plan's page id out of range. (The cache: 3 pages of 8
   * tokens, NHD, the 20 keys in pages 2, 0, 1.) */
  p.page_size = 8;
  uint16_t kc[3 * 8 * 2 * 16];
  memset(kc, 0, sizeof kc);
  const int64_t cs[4] = {3, 8, 2, 16};
  const fi_paged_kv_cache kv = {fi_tensor_contiguous(kc, FI_DTYPE_F16, 4, cs),
                                fi_tensor_contiguous(kc, FI_DTYPE_F16, 4, cs), FI_LAYOUT_NHD};
  int32_t pi[2] = {0, 3}, px[3] = {2, 0, 1}, pl[1] = {4}, pl_short[1] = {3}, px_bad[3] = {2, 0, 3};
  const fi_page_table pt = {pi, px, pl}, pt_short = {pi, px, pl_short}, pt_bad = {pi, px_bad, pl};
  EXPECT_ERR(fi_block_sparse_paged_run(ctx, &plan, &tq, &kv, &pt, &b, &to, NULL),
             FI_ERROR_PLAN_MISMATCH, "contiguous K/V", "fi_block_sparse_run");
  EXPECT_ERR(fi_block_sparse_paged_plan(ctx, &p, 10, &pt_bad, 3, &b, NULL, ws, ws_bytes, &plan),
             FI_ERROR_INVALID_ARGUMENT, "kv_indices[2] = 3", "num_pages = 3");
  EXPECT_OK(fi_block_sparse_paged_plan(ctx, &p, 10, &pt, 3, &b, NULL, ws, ws_bytes, &plan), ctx);
  EXPECT_ERR(fi_block_sparse_paged_run(ctx, &plan, &tq, &kv, &pt_short, &b, &to, NULL),
             FI_ERROR_PLAN_MISMATCH, "holds 19 keys", "N = 20");
  EXPECT_OK(fi_block_sparse_paged_run(ctx, &plan, &tq, &kv, &pt, &b, &to, NULL), ctx);
  p.page_size = 16;
  /* CUDA (when there is a device): no workspace names the size function (or, before
   * Hopper, the device is refused by name). */
  fi_context *cuda = NULL;
  if (fi_context_create(FI_BACKEND_CUDA, &cuda) == FI_SUCCESS) {
    const fi_attention_params p64 = fi_attention_params_default(2, 2, 64); /* a CUDA head_dim */
    fi_status st = fi_block_sparse_plan(cuda, &p64, 10, 20, &b, NULL, NULL, 0, &plan);
    EXPECT((st == FI_ERROR_WORKSPACE_TOO_SMALL &&
            strstr(fi_last_error(cuda), "fi_block_sparse_workspace_size")) ||
               (st == FI_ERROR_UNSUPPORTED && strstr(fi_last_error(cuda), "Hopper")),
           "CUDA block-sparse plan: %s \"%s\"", fi_status_string(st), fi_last_error(cuda));
    fi_context_destroy(cuda);
  }
  free(ws);
}

int main(void) {
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) return 1;
  rng r = {20261125};
  for (int trial = 0; trial < 120; ++trial) one_case(&r, trial);
  bad_input();
  fi_context_destroy(ctx);
  return test_finish("test_block_sparse");
}
