/* Driver of test/E2E/mask_tiles.mlir: each compiled mask_mod (run with the tile classifier
 * the compiler derived from it) against the runtime called directly with a C twin of the
 * mask and no classifier, on the same plan tiles, bit for bit. Host backend: it is the
 * host kernel that consults the classifier here (the CUDA kernel's use of it is checked by
 * variants_cuda on a GPU). */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
typedef void (*run_fn)(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *, int32_t,
                       int32_t);
#define RUN_DECL(name)                                                                      \
  void _mlir_ciface_run_##name(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *,         \
                               memref1 *, int32_t, int32_t);
RUN_DECL(block_diag)
RUN_DECL(dilated_sinks)
RUN_DECL(band_select)
RUN_DECL(unsigned_band)
RUN_DECL(wrapping_add)
RUN_DECL(trunc_i8)
RUN_DECL(min_max_ext)
RUN_DECL(and_index)
RUN_DECL(region)
RUN_DECL(product_i64)
RUN_DECL(keep_all)

enum { QH = 4, KVH = 2, HD = 64, TRIALS = 8 };

typedef struct { int32_t a, c; } caps;

/* The C twins: the same functions of (batch, qo_head, q_pos, kv_pos, a, c), i32 arithmetic
 * wrapping as the compiled code's does. */
static int32_t twin_block_diag(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h;
  return qp / k->a == kp / k->a;
}
static int32_t twin_dilated_sinks(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h;
  return (qp - kp) % k->a == 0 || kp < k->c;
}
static int32_t twin_band_select(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b;
  return h < 2 ? (qp - kp) * 3 <= k->a : (kp - qp) * 2 <= k->c;
}
static int32_t twin_unsigned_band(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h;
  return (uint32_t)(qp - kp) < (uint32_t)k->a;
}
static int32_t twin_wrapping_add(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h;
  return (int32_t)((uint32_t)kp + (uint32_t)k->c) > (int32_t)((uint32_t)qp + (uint32_t)k->c);
}
static int32_t twin_trunc_i8(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)qp;
  return (int8_t)(uint8_t)(kp & 0xff) >= 0 || h == k->c;
}
static int32_t twin_min_max_ext(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h;
  return kp >= (qp < k->a ? qp : k->a) && (kp > k->c ? kp : k->c) == kp;
}
static int32_t twin_and_index(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h, (void)qp;
  return ((int64_t)kp & (int64_t)k->a) == 0;
}
static int32_t twin_region(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b;
  return h == 0 ? kp >= qp - k->a : 1;
}
static int32_t twin_product_i64(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const caps *k = (const caps *)x;
  (void)b, (void)h;
  return (int64_t)kp * qp <= (int64_t)k->a * 1000;
}
static int32_t twin_keep_all(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  (void)b, (void)h, (void)qp, (void)kp, (void)x;
  return 1;
}

typedef struct mask_case {
  const char *name;
  run_fn run;
  fi_mask_mod_fn twin;
  int causal;
  int32_t a_lo, a_hi, c_lo, c_hi;
} mask_case;

#define CASE(name, causal, alo, ahi, clo, chi) \
  {#name, _mlir_ciface_run_##name, twin_##name, causal, alo, ahi, clo, chi}
static const mask_case cases[] = {
    CASE(block_diag, 0, 1, 40, 0, 0),
    CASE(dilated_sinks, 1, 1, 9, 0, 20),
    CASE(band_select, 0, 0, 200, 0, 100),
    CASE(unsigned_band, 0, 1, 150, 0, 0),
    CASE(wrapping_add, 0, 0, 0, 2147483647 - 150, 2147483647),
    CASE(trunc_i8, 1, 0, 0, 0, 4),
    CASE(min_max_ext, 0, 0, 100, 0, 100),
    CASE(and_index, 1, 0, 255, 0, 0),
    CASE(region, 1, 0, 60, 0, 0),
    CASE(product_i64, 0, 0, 60, 0, 0),
    CASE(keep_all, 1, 0, 0, 0, 0),
};

static int run_case(rng *r, fi_context *ctx, const mask_case *mc) {
  int exact = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    const int32_t batch = (int32_t)rng_int(r, 1, 4);
    int32_t *qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
    int32_t *kv = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
    qo[0] = kv[0] = 0;
    for (int32_t i = 0; i < batch; ++i) { /* keys past 128 and 256: i8 wraps, tiles vary */
      const int32_t kl = (int32_t)rng_int(r, 1, 300), ql = (int32_t)rng_int(r, 1, kl);
      qo[i + 1] = qo[i] + ql;
      kv[i + 1] = kv[i] + kl;
    }
    const int64_t nq = qo[batch], nk = kv[batch], nb = batch + 1;
    const caps cap = {(int32_t)rng_int(r, mc->a_lo, mc->a_hi),
                      (int32_t)rng_int(r, mc->c_lo, mc->c_hi)};
    int64_t qs[3] = {nq, QH, HD}, ks[3] = {nk, KVH, HD}, ls[2] = {nq, QH};
    void *q = random_tensor(r, FI_DTYPE_F16, numel(3, qs), -2, 2);
    void *k = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -2, 2);
    void *v = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -2, 2);
    memref3 mq, mk, mv;
    memref1 mqo, mkv;
    mr_init(&mq, 3, q, qs), mr_init(&mk, 3, k, ks), mr_init(&mv, 3, v, ks);
    mr_init(&mqo, 1, qo, &nb), mr_init(&mkv, 1, kv, &nb);
    fi_rt_plan_log_reset();
    o_lse res;
    mc->run(&res, &mq, &mk, &mv, &mqo, &mkv, cap.a, cap.c);
    fi_rt_synchronize();
    fi_tiles tiles = logged_tiles(0, FI_OP_RAGGED_PREFILL);

    /* The runtime directly, the same tiles, the twin and no classifier. */
    fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
    p.mask_mode = mc->causal ? FI_MASK_CAUSAL : FI_MASK_NONE;
    const fi_variant twin = {NULL, mc->twin, &cap, 0, NULL, NULL};
    p.variant = &twin;
    size_t ws_bytes = 0;
    CHECK_OK(ctx, fi_prefill_workspace_size(ctx, &p, batch, nq, &ws_bytes));
    void *ws = e2e_alloc(ws_bytes);
    fi_plan plan;
    CHECK_OK(ctx, fi_ragged_prefill_plan(ctx, &p, batch, qo, kv, NULL, &tiles, ws, ws_bytes,
                                         &plan));
    void *o = poisoned_tensor(FI_DTYPE_F16, numel(3, qs));
    float *lse = (float *)poisoned_tensor(FI_DTYPE_F32, numel(2, ls));
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
    fi_tensor tk = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, ks);
    fi_tensor tv = fi_tensor_contiguous(v, FI_DTYPE_F16, 3, ks);
    fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
    fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
    CHECK_OK(ctx, fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tv, qo, kv, NULL, &to, &tl));
    int64_t bad =
        compare("o", (const char *)res.o.aligned + res.o.offset * 2, o, FI_DTYPE_F16, numel(3, qs)) +
        compare("lse", (const float *)res.lse.aligned + res.lse.offset, lse, FI_DTYPE_F32, nq * QH);
    if (bad)
      printf("MISMATCH %s trial %d (batch %d, a %d, c %d)\n", mc->name, trial, (int)batch,
             (int)cap.a, (int)cap.c);
    else
      ++exact;
    fi_rt_free(res.o.allocated), fi_rt_free(res.lse.allocated);
    e2e_free(ws), e2e_free(o), e2e_free(lse);
    e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(qo), e2e_free(kv);
  }
  printf("%s: %d trials bit-exact\n", mc->name, exact);
  return exact == TRIALS;
}

int main(void) {
  e2e_setup();
  fi_context *ctx = fi_default_context();
  if (fi_context_backend(ctx) == FI_BACKEND_CUDA) {
    printf("E2E mask tiles: SKIP on CUDA (the host kernel's use of the classifier is tested)\n");
    return 0;
  }
  rng r = {7};
  int ok = 1;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) ok &= run_case(&r, ctx, &cases[i]);
  printf("E2E mask tiles: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
