/* Driver of test/E2E/variants.mlir: each variant written in IR against the built-in
 * feature it reimplements (both compiled, bit for bit), and the T5-bias variant against
 * the runtime called directly with C hooks that compute the same. Host backend (variants
 * are refused on CUDA for now). */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_ragged_cap_builtin(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *);
void _mlir_ciface_ragged_cap_variant(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *,
                                     float);
void _mlir_ciface_decode_window_builtin(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                        memref1 *, memref1 *);
void _mlir_ciface_decode_window_variant(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                        memref1 *, memref1 *, int32_t);
void _mlir_ciface_paged_alibi_builtin(o_lse *, memref3 *, memref1 *, memref4 *, memref4 *,
                                      memref1 *, memref1 *, memref1 *);
void _mlir_ciface_paged_alibi_variant(o_lse *, memref3 *, memref1 *, memref4 *, memref4 *,
                                      memref1 *, memref1 *, memref1 *, memref1 *);
void _mlir_ciface_bsr_t5(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *,
                         memref2 *);
void _mlir_ciface_bsr_t5_sliced(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *,
                                memref3 *);

enum { QH = 4, KVH = 2, HD = 64, PAGE = 16, TRIALS = 6, R = 16, C = 32, BUCKETS = 8 };

/* Compares two compiled results (o and lse of `rows` rows); frees them. */
static int same_results(const char *what, int trial, o_lse *a, o_lse *b, int64_t rows) {
  const int64_t no = rows * QH * HD, nl = rows * QH;
  void *ao = host_copy_of((const char *)a->o.aligned + a->o.offset * 2, (size_t)no * 2);
  float *al = (float *)host_copy_of((const float *)a->lse.aligned + a->lse.offset,
                                    sizeof(float) * (size_t)nl);
  int64_t bad = compare("o", (const char *)b->o.aligned + b->o.offset * 2, ao, FI_DTYPE_F16, no) +
                compare("lse", (const float *)b->lse.aligned + b->lse.offset, al, FI_DTYPE_F32, nl);
  if (bad) printf("MISMATCH %s trial %d (%lld rows)\n", what, trial, (long long)rows);
  free(ao), free(al);
  fi_rt_free(a->o.allocated), fi_rt_free(a->lse.allocated);
  fi_rt_free(b->o.allocated), fi_rt_free(b->lse.allocated);
  return bad != 0;
}

/* Causal ragged problems: qo_len <= kv_len per request. */
static void ragged_lengths(rng *r, int32_t batch, int32_t **qo, int32_t **kv, int64_t *nq,
                           int64_t *nk) {
  *qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
  *kv = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
  (*qo)[0] = (*kv)[0] = 0;
  for (int32_t i = 0; i < batch; ++i) {
    int32_t kl = (int32_t)rng_int(r, 1, 120), ql = (int32_t)rng_int(r, 1, kl);
    (*qo)[i + 1] = (*qo)[i] + ql;
    (*kv)[i + 1] = (*kv)[i] + kl;
  }
  *nq = (*qo)[batch];
  *nk = (*kv)[batch];
}

static int soft_cap_trials(rng *r) {
  int exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    int32_t batch = (int32_t)rng_int(r, 1, 5), *qo, *kv;
    int64_t nq, nk;
    ragged_lengths(r, batch, &qo, &kv, &nq, &nk);
    int64_t qs[3] = {nq, QH, HD}, ks[3] = {nk, KVH, HD}, nb = batch + 1;
    /* large logits, so that the cap bites */
    void *q = random_tensor(r, FI_DTYPE_F16, numel(3, qs), -4, 4);
    void *k = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -4, 4);
    void *v = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -2, 2);
    memref3 mq, mk, mv;
    memref1 mqo, mkv;
    mr_init(&mq, 3, q, qs), mr_init(&mk, 3, k, ks), mr_init(&mv, 3, v, ks);
    mr_init(&mqo, 1, qo, &nb), mr_init(&mkv, 1, kv, &nb);
    o_lse a, b;
    _mlir_ciface_ragged_cap_builtin(&a, &mq, &mk, &mv, &mqo, &mkv);
    _mlir_ciface_ragged_cap_variant(&b, &mq, &mk, &mv, &mqo, &mkv, 30.0f);
    exact += !same_results("soft cap", trial, &a, &b, nq);
    e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(qo), e2e_free(kv);
  }
  printf("soft cap (ragged prefill): %d trials bit-exact\n", exact);
  return exact == TRIALS;
}

static int window_trials(rng *r) {
  int exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    int32_t batch = (int32_t)rng_int(r, 1, 9);
    pages_t pg;
    make_pages(r, &pg, batch, PAGE, 1, 150, 0);
    decode_inputs d;
    decode_inputs_init(&d, r, batch, QH, KVH, HD, PAGE, pg.num_pages, pg.indptr, pg.indices,
                       pg.last);
    o_lse a, b;
    _mlir_ciface_decode_window_builtin(&a, &d.mq, &d.mk, &d.mv, &d.mi, &d.mx, &d.ml);
    _mlir_ciface_decode_window_variant(&b, &d.mq, &d.mk, &d.mv, &d.mi, &d.mx, &d.ml, 37);
    exact += !same_results("window", trial, &a, &b, batch);
    decode_inputs_free(&d);
    free_pages(&pg);
  }
  printf("window (paged decode): %d trials bit-exact\n", exact);
  return exact == TRIALS;
}

static int alibi_trials(rng *r) {
  int exact = 0;
  /* runtime.h's slopes for 4 heads (a power of two): 2^(-8 (h + 1) / 4) */
  float *slopes = (float *)e2e_alloc(sizeof(float) * QH);
  for (int h = 0; h < QH; ++h) slopes[h] = ldexpf(1.0f, -2 * (h + 1));
  int64_t ns = QH;
  memref1 msl;
  mr_init(&msl, 1, slopes, &ns);
  for (int trial = 0; trial < TRIALS; ++trial) {
    int32_t batch = (int32_t)rng_int(r, 1, 5);
    pages_t pg;
    make_pages(r, &pg, batch, PAGE, 1, 120, 0);
    int32_t *qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
    qo[0] = 0;
    for (int32_t i = 0; i < batch; ++i) qo[i + 1] = qo[i] + (int32_t)rng_int(r, 1, pg.kv_len[i]);
    int64_t nq = qo[batch], nb = batch + 1;
    decode_inputs d; /* its q is replaced by ragged queries */
    decode_inputs_init(&d, r, 1, QH, KVH, HD, PAGE, pg.num_pages, pg.indptr, pg.indices,
                       pg.last);
    int64_t qs[3] = {nq, QH, HD}, ni = batch + 1, nx = pg.indptr[batch], nl = batch;
    void *q = random_tensor(r, FI_DTYPE_F16, numel(3, qs), -2, 2);
    memref3 mq;
    memref1 mqo;
    mr_init(&mq, 3, q, qs), mr_init(&mqo, 1, qo, &nb);
    mr_init(&d.mi, 1, pg.indptr, &ni), mr_init(&d.mx, 1, pg.indices, &nx);
    mr_init(&d.ml, 1, pg.last, &nl);
    o_lse a, b;
    _mlir_ciface_paged_alibi_builtin(&a, &mq, &mqo, &d.mk, &d.mv, &d.mi, &d.mx, &d.ml);
    _mlir_ciface_paged_alibi_variant(&b, &mq, &mqo, &d.mk, &d.mv, &d.mi, &d.mx, &d.ml, &msl);
    exact += !same_results("alibi", trial, &a, &b, nq);
    e2e_free(q), e2e_free(qo);
    decode_inputs_free(&d);
    free_pages(&pg);
  }
  e2e_free(slopes);
  printf("alibi (paged prefill): %d trials bit-exact\n", exact);
  return exact == TRIALS;
}

/* The C twins of @t5_bias / @head_mask (the compiled read clamps the bucket). */
static float t5_score(float s, int32_t b, int32_t qh, int32_t kh, int32_t qp, int32_t kp,
                      const void *captures) {
  (void)b, (void)kh;
  const float *table = (const float *)captures;
  int32_t j = qp - kp;
  j = j < 0 ? 0 : j > BUCKETS - 1 ? BUCKETS - 1 : j;
  return s + table[qh * BUCKETS + j];
}
static int32_t head_mask(int32_t b, int32_t qh, int32_t qp, int32_t kp, const void *captures) {
  (void)b, (void)qp, (void)captures;
  return !(qh == 1 && kp % 2 == 1);
}

static int t5_trials(rng *r, fi_context *ctx) {
  int exact = 0;
  float *table = (float *)random_tensor(r, FI_DTYPE_F32, QH * BUCKETS, -3, 3);
  int64_t ts[2] = {QH, BUCKETS};
  memref2 mt;
  mr_init(&mt, 2, table, ts);
  fi_variant variant = {t5_score, head_mask, table, 0, NULL};
  /* the same table as layer 1 of a stack whose layer 0 is a decoy */
  float *stack = (float *)e2e_alloc(sizeof(float) * 2 * QH * BUCKETS);
  for (int i = 0; i < QH * BUCKETS; ++i) stack[i] = 100.0f, stack[QH * BUCKETS + i] = table[i];
  int64_t ss[3] = {2, QH, BUCKETS};
  memref3 mstack;
  mr_init(&mstack, 3, stack, ss);
  int sliced_exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    const int64_t m = rng_int(r, 1, 120), n = m + rng_int(r, 0, 150);
    const int64_t rows = (m + R - 1) / R;
    int32_t *indptr, *indices;
    const int32_t nnz = random_bsr(r, m, n, R, C, 0.3, &indptr, &indices);
    int64_t qs[3] = {m, QH, HD}, ks[3] = {n, KVH, HD}, ni = rows + 1, nx = nnz;
    const int64_t nq = numel(3, qs), nk = numel(3, ks);
    void *q = random_tensor(r, FI_DTYPE_F16, nq, -2, 2);
    void *k = random_tensor(r, FI_DTYPE_F16, nk, -2, 2);
    void *v = random_tensor(r, FI_DTYPE_F16, nk, -2, 2);
    memref3 mq, mk, mv;
    memref1 mi, mx;
    mr_init(&mq, 3, q, qs), mr_init(&mk, 3, k, ks), mr_init(&mv, 3, v, ks);
    mr_init(&mi, 1, indptr, &ni), mr_init(&mx, 1, indices, &nx);
    o_lse res;
    _mlir_ciface_bsr_t5(&res, &mq, &mk, &mv, &mi, &mx, &mt);
    fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
    p.mask_mode = FI_MASK_CAUSAL;
    p.variant = &variant;
    fi_bsr_matrix bsr = {R, C, indptr, indices};
    void *o;
    float *lse;
    block_sparse_direct(ctx, &p, m, n, &bsr, q, k, v, &o, &lse);
    int64_t bad = compare("o", (const char *)res.o.aligned + res.o.offset * 2, o, FI_DTYPE_F16, nq) +
                  compare("lse", (const float *)res.lse.aligned + res.lse.offset, lse, FI_DTYPE_F32, m * QH);
    if (bad) printf("MISMATCH t5 trial %d (%lld x %lld, %d blocks)\n", trial, (long long)m, (long long)n, (int)nnz);
    else ++exact;
    fi_rt_free(res.o.allocated), fi_rt_free(res.lse.allocated);
    _mlir_ciface_bsr_t5_sliced(&res, &mq, &mk, &mv, &mi, &mx, &mstack);
    bad = compare("o", (const char *)res.o.aligned + res.o.offset * 2, o, FI_DTYPE_F16, nq) +
          compare("lse", (const float *)res.lse.aligned + res.lse.offset, lse, FI_DTYPE_F32, m * QH);
    if (bad) printf("MISMATCH t5 (sliced table) trial %d\n", trial);
    else ++sliced_exact;
    fi_rt_free(res.o.allocated), fi_rt_free(res.lse.allocated);
    e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(o), e2e_free(lse);
    e2e_free(indptr), e2e_free(indices);
  }
  e2e_free(table), e2e_free(stack);
  printf("t5 bias + head mask (block sparse): %d trials bit-exact\n", exact);
  printf("t5 bias from a slice of a stacked table: %d trials bit-exact\n", sliced_exact);
  return exact == TRIALS && sliced_exact == TRIALS;
}

int main(void) {
  e2e_setup();
  fi_context *ctx = fi_default_context();
  if (fi_context_backend(ctx) == FI_BACKEND_CUDA) {
    printf("E2E variants: SKIP on CUDA (variants run on the host backend for now)\n");
    return 0;
  }
  rng r = {2024};
  int ok = soft_cap_trials(&r);
  ok &= window_trials(&r);
  ok &= alibi_trials(&r);
  ok &= t5_trials(&r, ctx);
  printf("E2E variants: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
