/* Driver of test/E2E/block_sparse.mlir: random sequences and BSR matrices (16 x 32 blocks,
 * then variable blocks of at least 8 x 24, then 16 x 16 blocks over a paged cache of
 * 16-token pages, then 16 x 24 blocks over 24-token pages), each compiled function against the runtime called directly
 * (block_sparse_direct_any), bit for bit, on the backend FI_BACKEND names (CUDA:
 * scripts/gpu-e2e.sh). */
#include "bsr_offsets.h"
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_bsr_attention(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *);
void _mlir_ciface_bsr_variable(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *,
                               memref1 *, memref1 *);
void _mlir_ciface_bsr_paged(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *, memref1 *,
                            memref1 *, memref1 *, memref1 *);
void _mlir_ciface_bsr_paged24_mma(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                  memref1 *, memref1 *, memref1 *, memref1 *);
void _mlir_ciface_bsr_paged24(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *, memref1 *,
                              memref1 *, memref1 *, memref1 *);

enum { QH = 4, KVH = 2, HD = 64, R = 16, C = 32, TRIALS = 12, VR = 8, VC = 24 };

static int64_t draw_rng(void *r, int64_t lo, int64_t hi) { return rng_int((rng *)r, lo, hi); }

/* Variable blocks over `total` rows or keys (bsr_offsets.h), the offsets e2e_alloc'd. */
static int32_t random_offsets(rng *r, int64_t total, int32_t least, int32_t **out) {
  *out = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(total + 2));
  return random_bsr_offsets(total, least, *out, draw_rng, r);
}

/* 1 when the compiled result (res) and the direct run's (o, lse: m rows of QH heads)
 * differ in any bit; frees both. */
static int mismatched(o_lse *res, void *o, float *lse, int64_t m) {
  const char *got_o = (const char *)res->o.aligned + res->o.offset * 2;
  const float *got_l = (const float *)res->lse.aligned + res->lse.offset;
  /* (the compiled results may be device memory: compare reads copies) */
  const int bad = compare("o", got_o, o, FI_DTYPE_F16, m * QH * HD) ||
                  compare("lse", got_l, lse, FI_DTYPE_F32, m * QH);
  fi_rt_free(res->o.allocated);
  fi_rt_free(res->lse.allocated);
  e2e_free(o), e2e_free(lse);
  return bad;
}

/* The variable-block function against the runtime called directly; returns mismatches. */
static int variable_blocks(rng *r, fi_context *ctx) {
  int bad = 0, exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    const int64_t m = rng_int(r, VR, 180), n = rng_int(r, VC, 300);
    int32_t *ro, *co, *indptr, *indices;
    const int32_t rows = random_offsets(r, m, VR, &ro), cols = random_offsets(r, n, VC, &co);
    /* a BSR pattern over rows x cols blocks (random_bsr of 1 x 1 blocks) */
    const int32_t nnz = random_bsr(r, rows, cols, 1, 1, 0.3, &indptr, &indices);
    int64_t qs[3] = {m, QH, HD}, ks[3] = {n, KVH, HD};
    const int64_t nq = numel(3, qs), nk = numel(3, ks);
    void *q = random_tensor(r, FI_DTYPE_F16, nq, -2, 2);
    void *k = random_tensor(r, FI_DTYPE_F16, nk, -2, 2);
    void *v = random_tensor(r, FI_DTYPE_F16, nk, -2, 2);
    memref3 mq, mk, mv;
    memref1 mi, mx, mro, mco;
    mr_init(&mq, 3, q, qs);
    mr_init(&mk, 3, k, ks);
    mr_init(&mv, 3, v, ks);
    int64_t ni = rows + 1, nx = nnz, nr = rows + 1, nc = cols + 1;
    mr_init(&mi, 1, indptr, &ni);
    mr_init(&mx, 1, indices, &nx);
    mr_init(&mro, 1, ro, &nr);
    mr_init(&mco, 1, co, &nc);
    o_lse res;
    _mlir_ciface_bsr_variable(&res, &mq, &mk, &mv, &mi, &mx, &mro, &mco);
    fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
    fi_bsr_matrix bsr = {VR, VC, indptr, indices, rows, cols, ro, co};
    void *o;
    float *lse;
    block_sparse_direct(ctx, &p, m, n, &bsr, q, k, v, &o, &lse);
    if (mismatched(&res, o, lse, m)) {
      printf("MISMATCH variable trial %d (%lld x %lld, %d x %d blocks, %d listed)\n", trial,
             (long long)m, (long long)n, (int)rows, (int)cols, (int)nnz);
      ++bad;
    } else {
      ++exact;
    }
    e2e_free(q), e2e_free(k), e2e_free(v);
    e2e_free(indptr), e2e_free(indices), e2e_free(ro), e2e_free(co);
  }
  printf("block_sparse variable blocks: %d trials bit-exact\n", exact);
  return bad;
}

/* A paged function against fi_block_sparse_paged_plan/run called directly (a shuffled
 * pool of PAGE-token pages, one block column per page, NaN in the slots no key fills):
 * @bsr_paged (pages of 16, causal), @bsr_paged24 (pages of 24, soft cap 30) or
 * @bsr_paged24_mma (the same on the mma.sync kernel's tiles, which both sides force);
 * returns mismatches. */
typedef void (*paged_fn)(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *, memref1 *,
                         memref1 *, memref1 *, memref1 *);
static int paged_blocks(rng *r, fi_context *ctx, paged_fn fn, const int PAGE, const int causal,
                        const float cap, const fi_tiles *tiles, const char *name) {
  enum { PR = 16 };
  int bad = 0, exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    const int64_t m = rng_int(r, 1, 150), n = m + rng_int(r, 0, 200);
    const int32_t used = (int32_t)((n + PAGE - 1) / PAGE), pool = used + (int32_t)rng_int(r, 0, 3);
    int32_t *ids = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)pool);
    int32_t *kvp = (int32_t *)e2e_alloc(2 * sizeof(int32_t));
    int32_t *last = (int32_t *)e2e_alloc(sizeof(int32_t));
    for (int32_t i = 0; i < pool; ++i) ids[i] = i;
    for (int32_t i = pool - 1; i > 0; --i) {
      const int32_t j = (int32_t)rng_int(r, 0, i), t = ids[i];
      ids[i] = ids[j], ids[j] = t;
    }
    kvp[0] = 0, kvp[1] = used, last[0] = (int32_t)(n - (int64_t)(used - 1) * PAGE);
    int32_t *indptr, *indices;
    const int32_t nnz = random_bsr(r, m, n, PR, PAGE, 0.2, &indptr, &indices);
    int64_t qs[3] = {m, QH, HD}, cs[4] = {pool, PAGE, KVH, HD};
    const int64_t nq = numel(3, qs), nc = numel(4, cs);
    void *q = random_tensor(r, FI_DTYPE_F16, nq, -2, 2);
    uint16_t *k = (uint16_t *)random_tensor(r, FI_DTYPE_F16, nc, -2, 2);
    uint16_t *v = (uint16_t *)random_tensor(r, FI_DTYPE_F16, nc, -2, 2);
    for (int64_t j = n; j < (int64_t)used * PAGE; ++j) /* the last page's empty slots: NaN */
      for (int64_t e = 0; e < KVH * HD; ++e) {
        const int64_t at = ((int64_t)ids[j / PAGE] * PAGE + j % PAGE) * KVH * HD + e;
        k[at] = v[at] = 0x7e00;
      }
    memref3 mq;
    memref4 mk, mv;
    memref1 mi, mx, mp, mpx, ml;
    mr_init(&mq, 3, q, qs);
    mr_init(&mk, 4, k, cs);
    mr_init(&mv, 4, v, cs);
    int64_t ni = (m + PR - 1) / PR + 1, nx = nnz, np2 = 2, npx = pool, nl = 1;
    mr_init(&mi, 1, indptr, &ni);
    mr_init(&mx, 1, indices, &nx);
    mr_init(&mp, 1, kvp, &np2);
    mr_init(&mpx, 1, ids, &npx);
    mr_init(&ml, 1, last, &nl);
    o_lse res;
    fn(&res, &mq, &mk, &mv, &mi, &mx, &mp, &mpx, &ml);
    /* The runtime, directly. */
    fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
    p.mask_mode = causal ? FI_MASK_CAUSAL : FI_MASK_NONE;
    p.logits_soft_cap = cap;
    p.page_size = PAGE;
    const fi_bsr_matrix bsr = {PR, PAGE, indptr, indices};
    const fi_page_table pt = {kvp, ids, last};
    const fi_paged_kv_cache kv = {fi_tensor_contiguous(k, FI_DTYPE_F16, 4, cs),
                                  fi_tensor_contiguous(v, FI_DTYPE_F16, 4, cs), FI_LAYOUT_NHD};
    void *o;
    float *lse;
    block_sparse_direct_any(ctx, &p, m, n, &bsr, q, NULL, NULL, &kv, &pt, pool, tiles, &o,
                            &lse);
    if (mismatched(&res, o, lse, m)) {
      printf("MISMATCH %s trial %d (%lld x %lld, %d pages of %d, %d blocks)\n", name, trial,
             (long long)m, (long long)n, (int)used, PAGE, (int)nnz);
      ++bad;
    } else {
      ++exact;
    }
    e2e_free(q), e2e_free(k), e2e_free(v);
    e2e_free(indptr), e2e_free(indices), e2e_free(ids), e2e_free(kvp), e2e_free(last);
  }
  printf("block_sparse %s: %d trials bit-exact\n", name, exact);
  return bad;
}

int main(void) {
  e2e_setup();
  fi_context *ctx = fi_default_context();
  rng r = {77};
  int64_t bad = 0;
  int exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    const int64_t m = rng_int(&r, 1, 150), n = m + rng_int(&r, 0, 200);
    const int64_t rows = (m + R - 1) / R;
    int32_t *indptr, *indices;
    const int32_t nnz = random_bsr(&r, m, n, R, C, 0.2, &indptr, &indices);
    int64_t qs[3] = {m, QH, HD}, ks[3] = {n, KVH, HD};
    const int64_t nq = numel(3, qs), nk = numel(3, ks);
    void *q = random_tensor(&r, FI_DTYPE_F16, nq, -2, 2);
    void *k = random_tensor(&r, FI_DTYPE_F16, nk, -2, 2);
    void *v = random_tensor(&r, FI_DTYPE_F16, nk, -2, 2);
    memref3 mq, mk, mv;
    memref1 mi, mx;
    mr_init(&mq, 3, q, qs);
    mr_init(&mk, 3, k, ks);
    mr_init(&mv, 3, v, ks);
    int64_t ni = rows + 1, nx = nnz;
    mr_init(&mi, 1, indptr, &ni);
    mr_init(&mx, 1, indices, &nx);
    o_lse res;
    _mlir_ciface_bsr_attention(&res, &mq, &mk, &mv, &mi, &mx);
    /* The runtime, directly. */
    fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
    p.mask_mode = FI_MASK_CAUSAL;
    p.logits_soft_cap = 25.f;
    fi_bsr_matrix bsr = {R, C, indptr, indices};
    void *o;
    float *lse;
    block_sparse_direct(ctx, &p, m, n, &bsr, q, k, v, &o, &lse);
    if (mismatched(&res, o, lse, m)) {
      printf("MISMATCH trial %d (%lld x %lld, %d blocks)\n", trial, (long long)m, (long long)n,
             (int)nnz);
      ++bad;
    } else {
      ++exact;
    }
    e2e_free(q), e2e_free(k), e2e_free(v);
    e2e_free(indptr), e2e_free(indices);
  }
  printf("block_sparse: %d trials bit-exact\n", exact);
  bad += variable_blocks(&r, ctx);
  bad += paged_blocks(&r, ctx, _mlir_ciface_bsr_paged, 16, 1, 0.f, NULL, "paged");
  bad += paged_blocks(&r, ctx, _mlir_ciface_bsr_paged24, 24, 0, 30.f, NULL, "paged 24");
  const fi_tiles mma = {64, 32, 1, FI_CORES_TENSOR}; /* (@bsr_paged24_mma's) */
  bad += paged_blocks(&r, ctx, _mlir_ciface_bsr_paged24_mma, 24, 0, 30.f, &mma,
                      "paged 24 mma.sync");
  printf("E2E block-sparse: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
