/* Driver of test/E2E/block_sparse.mlir: random sequences and BSR matrices (16 x 32 blocks,
 * then variable blocks of at least 8 x 24), each compiled function against fi_block_sparse_plan/run called directly, bit for bit, on
 * the backend FI_BACKEND names (CUDA: scripts/gpu-e2e.sh). */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_bsr_attention(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *);
void _mlir_ciface_bsr_variable(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *,
                               memref1 *, memref1 *);

enum { QH = 4, KVH = 2, HD = 64, R = 16, C = 32, TRIALS = 12, VR = 8, VC = 24 };

/* Variable blocks over `total` rows or keys, each `least` .. 3 x `least` long (the last one
 * may be up to 4 x): offsets (e2e_alloc'd) from 0 to total; returns the count. */
static int32_t random_offsets(rng *r, int64_t total, int32_t least, int32_t **out) {
  int32_t *off = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(total + 2));
  int32_t count = 0;
  int64_t pos = 0;
  off[0] = 0;
  while (total - pos >= 2 * (int64_t)least) {
    int64_t most = total - pos - least;
    if (most > 3 * (int64_t)least) most = 3 * (int64_t)least;
    pos += rng_int(r, least, most);
    off[++count] = (int32_t)pos;
  }
  off[++count] = (int32_t)total;
  *out = off;
  return count;
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
    const char *got_o = (const char *)res.o.aligned + res.o.offset * 2;
    const float *got_l = (const float *)res.lse.aligned + res.lse.offset;
    if (compare("o", got_o, o, FI_DTYPE_F16, nq) || compare("lse", got_l, lse, FI_DTYPE_F32, m * QH)) {
      printf("MISMATCH variable trial %d (%lld x %lld, %d x %d blocks, %d listed)\n", trial,
             (long long)m, (long long)n, (int)rows, (int)cols, (int)nnz);
      ++bad;
    } else {
      ++exact;
    }
    fi_rt_free(res.o.allocated);
    fi_rt_free(res.lse.allocated);
    e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(o), e2e_free(lse);
    e2e_free(indptr), e2e_free(indices), e2e_free(ro), e2e_free(co);
  }
  printf("block_sparse variable blocks: %d trials bit-exact\n", exact);
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
    const char *got_o = (const char *)res.o.aligned + res.o.offset * 2;
    const float *got_l = (const float *)res.lse.aligned + res.lse.offset;
    /* (the compiled results may be device memory: compare reads copies) */
    if (compare("o", got_o, o, FI_DTYPE_F16, nq) || compare("lse", got_l, lse, FI_DTYPE_F32, m * QH)) {
      printf("MISMATCH trial %d (%lld x %lld, %d blocks)\n", trial, (long long)m, (long long)n,
             (int)nnz);
      ++bad;
    } else {
      ++exact;
    }
    fi_rt_free(res.o.allocated);
    fi_rt_free(res.lse.allocated);
    e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(o), e2e_free(lse);
    e2e_free(indptr), e2e_free(indices);
  }
  printf("block_sparse: %d trials bit-exact\n", exact);
  bad += variable_blocks(&r, ctx);
  printf("E2E block-sparse: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
