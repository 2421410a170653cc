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

#define RUN_TABLE_DECL(name)                                                                \
  void _mlir_ciface_run_##name(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *,         \
                               memref1 *, memref1 *, int32_t);
RUN_TABLE_DECL(table_clamped)
RUN_TABLE_DECL(table_strided)
RUN_TABLE_DECL(table_i8)
RUN_TABLE_DECL(table_i64)
RUN_TABLE_DECL(table_index)
RUN_TABLE_DECL(table_wide_range)

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

/* Masks over a captured table: its entries as int64 (whatever their width), its length,
 * and `a`. A read clamps its index into the table and an empty table reads 0, as the
 * compiled reads do. */
typedef struct { const int64_t *t; int64_t n; int32_t a; int64_t stride; } table_caps;
static int64_t entry(const table_caps *k, int64_t i) {
  if (k->n == 0) return 0;
  return k->t[(i < 0 ? 0 : i >= k->n ? k->n - 1 : i) * k->stride];
}
static int32_t twin_table_clamped(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const table_caps *k = (const table_caps *)x;
  (void)b, (void)h;
  return entry(k, (int64_t)qp - k->a) == entry(k, (int64_t)kp - k->a);
}
/* table_strided: table_clamped over every second entry (a strided view of the capture) */
static int32_t twin_table_strided(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  return twin_table_clamped(b, h, qp, kp, x);
}
static int32_t twin_table_i8(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const table_caps *k = (const table_caps *)x;
  (void)b, (void)h;
  /* i8 arithmetic wraps */
  return (int8_t)entry(k, qp) <= (int8_t)(uint8_t)((uint8_t)entry(k, kp) + (uint8_t)k->a);
}
static int32_t twin_table_i64(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const table_caps *k = (const table_caps *)x;
  (void)b, (void)h;
  return entry(k, qp) - entry(k, kp) <= (int64_t)k->a;
}
static int32_t twin_table_index(int32_t b, int32_t h, int32_t qp, int32_t kp, const void *x) {
  const table_caps *k = (const table_caps *)x;
  (void)b, (void)h;
  return entry(k, kp) <= entry(k, qp) && entry(k, kp) <= k->a; /* (empty: 0 <= 0 and a) */
}
static int32_t twin_table_wide_range(int32_t b, int32_t h, int32_t qp, int32_t kp,
                                     const void *x) {
  const table_caps *k = (const table_caps *)x;
  (void)b, (void)h;
  return entry(k, (int64_t)kp * 8) >= entry(k, qp);
}
typedef void (*run_table_fn)(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *, memref1 *,
                             memref1 *, int32_t);
typedef struct table_case {
  const char *name;
  run_table_fn run;
  fi_mask_mod_fn twin;
  int causal;
  int esize; /* bytes per entry: i8, i32, i64 / index */
  int32_t a_lo, a_hi;
  int stride; /* the mask reads every stride-th entry of the captured table */
} table_case;
#define TCASE(name, causal, es, alo, ahi, stride) \
  {#name, _mlir_ciface_run_##name, twin_##name, causal, es, alo, ahi, stride}

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

/* One random ragged problem: the compiled op (run by `compiled`, which knows its own
 * captures) against the runtime called directly with the same tiles, `twin` reading
 * `twin_caps` and no classifier; returns 1 when bit-exact. */
typedef void (*compiled_fn)(const void *arg, o_lse *res, memref3 *q, memref3 *k, memref3 *v,
                            memref1 *qo, memref1 *kv);
static int trial(rng *r, fi_context *ctx, int causal, compiled_fn compiled, const void *arg,
                 fi_mask_mod_fn twin_fn, const void *twin_caps) {
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
  int64_t qs[3] = {nq, QH, HD}, ks[3] = {nk, KVH, HD};
  void *q = random_tensor(r, FI_DTYPE_F16, numel(3, qs), -2, 2);
  void *k = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -2, 2);
  void *v = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -2, 2);
  memref3 mq, mk, mv;
  memref1 mqo, mkv;
  mr_init(&mq, 3, q, qs), mr_init(&mk, 3, k, ks), mr_init(&mv, 3, v, ks);
  mr_init(&mqo, 1, qo, &nb), mr_init(&mkv, 1, kv, &nb);
  fi_rt_plan_log_reset();
  o_lse res;
  compiled(arg, &res, &mq, &mk, &mv, &mqo, &mkv);
  fi_rt_synchronize();
  fi_tiles tiles = logged_tiles(0, FI_OP_RAGGED_PREFILL);

  fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
  p.mask_mode = causal ? FI_MASK_CAUSAL : FI_MASK_NONE;
  const fi_variant twin = {NULL, twin_fn, twin_caps, 0, NULL, NULL};
  p.variant = &twin;
  void *o;
  float *lse;
  ragged_prefill_direct(ctx, &p, batch, qo, kv, NULL, &tiles, q, k, v, &o, &lse);
  int64_t bad =
      compare("o", (const char *)res.o.aligned + res.o.offset * 2, o, FI_DTYPE_F16, numel(3, qs)) +
      compare("lse", (const float *)res.lse.aligned + res.lse.offset, lse, FI_DTYPE_F32, nq * QH);
  if (bad) printf("MISMATCH (batch %d)\n", (int)batch);
  fi_rt_free(res.o.allocated), fi_rt_free(res.lse.allocated);
  e2e_free(o), e2e_free(lse);
  e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(qo), e2e_free(kv);
  return bad == 0;
}

typedef struct { const mask_case *mc; caps cap; } scalar_arg;
static void run_scalar(const void *arg, o_lse *res, memref3 *q, memref3 *k, memref3 *v,
                       memref1 *qo, memref1 *kv) {
  const scalar_arg *s = (const scalar_arg *)arg;
  s->mc->run(res, q, k, v, qo, kv, s->cap.a, s->cap.c);
}
static int run_case(rng *r, fi_context *ctx, const mask_case *mc) {
  int exact = 0;
  for (int t = 0; t < TRIALS; ++t) {
    scalar_arg s = {mc, {(int32_t)rng_int(r, mc->a_lo, mc->a_hi),
                         (int32_t)rng_int(r, mc->c_lo, mc->c_hi)}};
    const int ok = trial(r, ctx, mc->causal, run_scalar, &s, mc->twin, &s.cap);
    if (!ok) printf("MISMATCH %s trial %d (a %d, c %d)\n", mc->name, t, (int)s.cap.a, (int)s.cap.c);
    exact += ok;
  }
  printf("%s: %d trials bit-exact\n", mc->name, exact);
  return exact == TRIALS;
}

/* A table case's table: runs of equal values, as document ids, of random lengths,
 * long and ascending in even trials, short and up and down in odd ones (so that a range's
 * bounds are not its ends); some trials an empty table. Compiled as `esize`-byte entries, twin as int64. */
typedef struct { const table_case *tc; memref1 mt; table_caps caps; } table_arg;
static void run_table(const void *arg, o_lse *res, memref3 *q, memref3 *k, memref3 *v,
                      memref1 *qo, memref1 *kv) {
  const table_arg *s = (const table_arg *)arg;
  s->tc->run(res, q, k, v, qo, kv, (memref1 *)&s->mt, s->caps.a);
}
static int run_table_case(rng *r, fi_context *ctx, const table_case *tc) {
  int exact = 0;
  for (int t = 0; t < TRIALS; ++t) {
    const int64_t n = t == 3 ? 0 : rng_int(r, 1, 400); /* trial 3: an empty table */
    int64_t *wide = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    void *narrow = e2e_alloc((size_t)(tc->esize * (n ? n : 1)));
    int64_t val = rng_int(r, -3, 3);
    for (int64_t i = 0; i < n; ++i) {
      if (rng_uniform(r) < (t % 2 ? 0.2 : 0.02)) val += t % 2 ? rng_int(r, -3, 3) : rng_int(r, 1, 3);
      wide[i] = val;
      if (tc->esize == 1) ((int8_t *)narrow)[i] = (int8_t)val;
      else if (tc->esize == 4) ((int32_t *)narrow)[i] = (int32_t)val;
      else ((int64_t *)narrow)[i] = val;
    }
    table_arg s;
    s.tc = tc;
    mr_init(&s.mt, 1, narrow, &n);
    s.caps = (table_caps){wide, (n + tc->stride - 1) / tc->stride,
                          (int32_t)rng_int(r, tc->a_lo, tc->a_hi), tc->stride};
    const int ok = trial(r, ctx, tc->causal, run_table, &s, tc->twin, &s.caps);
    if (!ok) printf("MISMATCH %s trial %d (table of %lld, a %d)\n", tc->name, t, (long long)n, (int)s.caps.a);
    exact += ok;
    free(wide), e2e_free(narrow);
  }
  printf("%s: %d trials bit-exact\n", tc->name, exact);
  return exact == TRIALS;
}

static const table_case table_cases[] = {
    TCASE(table_clamped, 0, 4, -40, 40, 1),
    TCASE(table_strided, 0, 4, -40, 40, 2),
    TCASE(table_i8, 1, 1, -2, 2, 1),
    TCASE(table_i64, 0, 8, -1, 2, 1),
    TCASE(table_index, 1, 8, -1, 1, 1),
    TCASE(table_wide_range, 0, 4, 0, 0, 1),
};

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
  for (size_t i = 0; i < sizeof(table_cases) / sizeof(table_cases[0]); ++i)
    ok &= run_table_case(&r, ctx, &table_cases[i]);
  printf("E2E mask tiles: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
