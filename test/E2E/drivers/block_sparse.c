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
    const int64_t rows = (m + R - 1) / R, cols = (n + C - 1) / C;
    int32_t *indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(rows + 1));
    int32_t *indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(rows * cols + 1));
    int32_t nnz = 0;
    indptr[0] = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t diag = (i * R + R - 1 + n - m) / C; /* the block of the row's last key */
      for (int64_t j = 0; j < cols; ++j)
        if (j == 0 || (j <= diag && j + 2 > diag) || rng_uniform(&r) < 0.2)
          indices[nnz++] = (int32_t)j;
      indptr[i + 1] = nnz;
    }
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
    size_t ws_bytes = 0;
    CHECK_OK(ctx, fi_block_sparse_workspace_size(ctx, &p, m, n, R, C, &ws_bytes));
    void *ws = e2e_alloc(ws_bytes);
    fi_plan plan;
    CHECK_OK(ctx, fi_block_sparse_plan(ctx, &p, m, n, &bsr, NULL, ws, ws_bytes, &plan));
    void *o = poisoned_tensor(FI_DTYPE_F16, nq);
    float *lse = (float *)poisoned_tensor(FI_DTYPE_F32, m * QH);
    int64_t ls[2] = {m, QH};
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs), to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
    fi_tensor tk = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, ks), tv = fi_tensor_contiguous(v, FI_DTYPE_F16, 3, ks);
    fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
    CHECK_OK(ctx, fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &bsr, &to, &tl));
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
    e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(o), e2e_free(lse), e2e_free(ws);
    e2e_free(indptr), e2e_free(indices);
  }
  printf("block_sparse: %d trials bit-exact\n", exact);
  printf("E2E block-sparse: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
