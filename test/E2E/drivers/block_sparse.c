/* Driver of test/E2E/block_sparse.mlir: random sequences and BSR matrices (16 x 32 blocks),
 * the compiled function against fi_block_sparse_plan/run called directly, bit for bit, on
 * the backend FI_BACKEND names (CUDA: scripts/gpu-e2e.sh). */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_bsr_attention(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *);

enum { QH = 4, KVH = 2, HD = 64, R = 16, C = 32, TRIALS = 12 };

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
  printf("E2E block-sparse: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
