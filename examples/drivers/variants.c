/* Runs examples/variants.mlir compiled by fi-to-llvm.
 * Host backend: each variant written in IR against the runtime called directly with what
 * computes the same without a variant -- the built-in custom mask with the same bits
 * (packed documents, sinks + window), the built-in ALiBi and soft cap (their composition),
 * and C hooks (T5 bias, whose bucket function has no built-in; the decode's sinks + window,
 * decode having no custom mask); bit for bit.
 * CUDA (FI_BACKEND=cuda, the object compiled with fi-to-llvm=backend=cuda): each variant on
 * the GPU against the host backend running the same object (gpu_vs_host, example.h: the
 * prefill tolerances of test/gpu, a second GPU run bit-identical).
 * Fresh random problems per configuration, every element compared; outputs poisoned.
 * Options: --configs=25 (per variant) --seed=1 */
#include "example.h"

enum { QH = 8, KVH = 2, HD = 64, PS = 16, BUCKETS = 32 };

void _mlir_ciface_packed_documents(memref3 *, memref3 *, memref3 *, memref3 *, memref1 *,
                                   memref1 *, memref1 *);
void _mlir_ciface_t5_relative_bias(memref3 *, memref3 *, memref3 *, memref3 *, memref1 *,
                                   memref1 *, memref2 *);
void _mlir_ciface_alibi_soft_cap_prefill(memref3 *, memref3 *, memref3 *, memref3 *, memref1 *,
                                         memref1 *, memref1 *, float);
void _mlir_ciface_streaming_prefill(memref3 *, memref3 *, memref1 *, memref4 *, memref4 *,
                                    memref1 *, memref1 *, memref1 *, int32_t, int32_t);
void _mlir_ciface_streaming_decode(memref3 *, memref3 *, memref4 *, memref4 *, memref1 *,
                                   memref1 *, memref1 *, int32_t, int32_t);

typedef int (*keep_fn)(int64_t q_pos, int64_t kv_pos, int64_t token0, const void *arg);

/* The bit-packed custom mask of `keep` (and causal) over ragged requests. */
static uint8_t *mask_of(int32_t batch, const int32_t *qo, const int64_t *kv_len,
                        const int64_t *kv_start, keep_fn keep, const void *arg,
                        int32_t **indptr_out) {
  int32_t *indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
  indptr[0] = 0;
  for (int32_t b = 0; b < batch; ++b)
    indptr[b + 1] = indptr[b] + (int32_t)((qo[b + 1] - qo[b]) * kv_len[b]);
  uint8_t *bits = (uint8_t *)e2e_alloc((size_t)indptr[batch] / 8 + 1);
  memset(bits, 0, (size_t)indptr[batch] / 8 + 1);
  for (int32_t b = 0; b < batch; ++b) {
    const int64_t ql = qo[b + 1] - qo[b], kl = kv_len[b];
    for (int64_t i = 0; i < ql; ++i)
      for (int64_t j = 0; j < kl; ++j) {
        int64_t qp = kl - ql + i, bit = indptr[b] + i * kl + j;
        if (j <= qp && keep(qp, j, kv_start[b], arg)) bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));
      }
  }
  *indptr_out = indptr;
  return bits;
}

static int same_document(int64_t qp, int64_t kp, int64_t token0, const void *doc_ids) {
  const int32_t *d = (const int32_t *)doc_ids;
  return d[token0 + qp] == d[token0 + kp];
}
typedef struct { int32_t sinks, window; } streaming;
static int sinks_and_window(int64_t qp, int64_t kp, int64_t token0, const void *arg) {
  (void)token0;
  const streaming *s = (const streaming *)arg;
  return kp < s->sinks || kp >= qp - s->window;
}

/* The C twin of @sinks_and_window (fi_mask_mod_fn; captures: the two ints). */
static int32_t sinks_and_window_hook(int32_t b, int32_t qh, int32_t qp, int32_t kp,
                                     const void *captures) {
  (void)b, (void)qh;
  return sinks_and_window(qp, kp, 0, captures);
}

/* The C twin of @t5_bias. */
static float t5_bias(float s, int32_t b, int32_t qh, int32_t kh, int32_t qp, int32_t kp,
                     const void *captures) {
  (void)b, (void)kh;
  int32_t dist = qp - kp, bucket;
  if (dist < 16) {
    bucket = dist;
  } else {
    float frac = logf((float)dist / 16.0f) / 2.07944154f;
    bucket = 16 + (int32_t)(frac * 16.0f);
    bucket = bucket < 31 ? bucket : 31;
  }
  bucket = bucket < 0 ? 0 : bucket; /* (the compiled read clamps) */
  return s + ((const float *)captures)[qh * BUCKETS + bucket];
}

/* Ragged causal problem: batch requests, kv_len >= qo_len. */
typedef struct {
  int32_t batch, *qo, *kv;
  int64_t nq, nk, kv_len[16], kv_start[16];
  void *q, *k, *v;
  memref3 mq, mk, mv;
  memref1 mqo, mkv;
} ragged;

static void ragged_init(ragged *p, rng *r) {
  p->batch = (int32_t)rng_int(r, 1, 6);
  p->qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(p->batch + 1));
  p->kv = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(p->batch + 1));
  p->qo[0] = p->kv[0] = 0;
  for (int32_t i = 0; i < p->batch; ++i) {
    int32_t kl = (int32_t)rng_int(r, 1, 300), ql = (int32_t)rng_int(r, 1, kl < 64 ? kl : 64);
    p->kv_len[i] = kl;
    p->kv_start[i] = p->kv[i];
    p->qo[i + 1] = p->qo[i] + ql;
    p->kv[i + 1] = p->kv[i] + kl;
  }
  p->nq = p->qo[p->batch];
  p->nk = p->kv[p->batch];
  int64_t qs[3] = {p->nq, QH, HD}, ks[3] = {p->nk, KVH, HD}, nb = p->batch + 1;
  p->q = random_tensor(r, FI_DTYPE_F16, numel(3, qs), -3, 3);
  p->k = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -3, 3);
  p->v = random_tensor(r, FI_DTYPE_F16, numel(3, ks), -2, 2);
  mr_init(&p->mq, 3, p->q, qs), mr_init(&p->mk, 3, p->k, ks), mr_init(&p->mv, 3, p->v, ks);
  mr_init(&p->mqo, 1, p->qo, &nb), mr_init(&p->mkv, 1, p->kv, &nb);
}
static void ragged_free(ragged *p) {
  e2e_free(p->q), e2e_free(p->k), e2e_free(p->v), e2e_free(p->qo), e2e_free(p->kv);
}

/* The runtime's ragged prefill of `p` with `params` (and `mask` when custom) into a
 * poisoned o, with the variant the compiled run used (so both sum in the same order). */
static void *ragged_direct(fi_context *ctx, ragged *p, fi_attention_params *params,
                           fi_custom_mask *mask) {
  fi_tiles tiles = logged_tiles(0, FI_OP_RAGGED_PREFILL); /* the compiled run's variant */
  void *o;
  ragged_prefill_direct(ctx, params, p->batch, p->qo, p->kv, mask, &tiles, p->q, p->k, p->v,
                        &o, NULL);
  return o;
}

static int check(const char *what, int config, memref3 *got, void *want, int64_t n) {
  int64_t bad = compare("o", data_ptr(got, FI_DTYPE_F16), want, FI_DTYPE_F16, n);
  if (bad) printf("MISMATCH %s config %d\n", what, config);
  fi_rt_free(got->allocated);
  e2e_free(want);
  return bad == 0;
}

/* ---- CUDA: each example on the GPU against the host backend, from the same object ---- */
typedef struct {
  ragged p;
  memref1 mdoc, msl;
  memref2 mt;
} ragged_case;
static void run_documents(void *st, void *out) {
  ragged_case *c = (ragged_case *)st;
  _mlir_ciface_packed_documents((memref3 *)out, &c->p.mq, &c->p.mk, &c->p.mv, &c->p.mqo,
                                &c->p.mkv, &c->mdoc);
}
static void run_t5(void *st, void *out) {
  ragged_case *c = (ragged_case *)st;
  _mlir_ciface_t5_relative_bias((memref3 *)out, &c->p.mq, &c->p.mk, &c->p.mv, &c->p.mqo,
                                &c->p.mkv, &c->mt);
}
static void run_alibi_cap(void *st, void *out) {
  ragged_case *c = (ragged_case *)st;
  _mlir_ciface_alibi_soft_cap_prefill((memref3 *)out, &c->p.mq, &c->p.mk, &c->p.mv, &c->p.mqo,
                                      &c->p.mkv, &c->msl, 20.0f);
}
typedef struct {
  decode_inputs d; /* the caches and page-table memrefs; q is ragged */
  memref3 mq;
  memref1 mqo;
  streaming s;
} paged_case;
static void run_streaming(void *st, void *out) {
  paged_case *c = (paged_case *)st;
  _mlir_ciface_streaming_prefill((memref3 *)out, &c->mq, &c->mqo, &c->d.mk, &c->d.mv, &c->d.mi,
                                 &c->d.mx, &c->d.ml, c->s.sinks, c->s.window);
}

typedef struct {
  pages_t pg;
  decode_inputs d;
  streaming s;
} decode_case;
/* A random paged decode (lengths up to 3000: most pages lie between the sinks and the
 * window) and its StreamingLLM mask. */
static void decode_case_init(decode_case *c, rng *r) {
  const int32_t batch = (int32_t)rng_int(r, 1, 8);
  make_pages(r, &c->pg, batch, PS, 1, 3000, 0);
  decode_inputs_init(&c->d, r, batch, QH, KVH, HD, PS, c->pg.num_pages, c->pg.indptr,
                     c->pg.indices, c->pg.last);
  c->s.sinks = (int32_t)rng_int(r, 0, 8);
  c->s.window = (int32_t)rng_int(r, 0, 500);
}
static void decode_case_free(decode_case *c) {
  decode_inputs_free(&c->d);
  free_pages(&c->pg);
}
static void run_streaming_decode(void *st, void *out) {
  decode_case *c = (decode_case *)st;
  _mlir_ciface_streaming_decode((memref3 *)out, &c->d.mq, &c->d.mk, &c->d.mv, &c->d.mi,
                                &c->d.mx, &c->d.ml, c->s.sinks, c->s.window);
}

static int gpu_main(fi_context *gpu, int configs, rng *r) {
  fi_context *host;
  if (fi_context_create(FI_BACKEND_HOST, &host) != FI_SUCCESS) return 2;
  fi_context_set_num_threads(host, 0);
  int passed[5] = {0, 0, 0, 0, 0};
  float *table = (float *)random_tensor(r, FI_DTYPE_F32, QH * BUCKETS, -2, 2);
  float *slopes = (float *)e2e_alloc(sizeof(float) * QH);
  for (int h = 0; h < QH; ++h) slopes[h] = ldexpf(1.0f, -(h + 1));
  for (int c = 0; c < configs; ++c) {
    ragged_case rc;
    ragged_init(&rc.p, r);
    int32_t *doc = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)rc.p.nk);
    for (int32_t b = 0, d = 0; b < rc.p.batch; ++b)
      for (int64_t t = rc.p.kv[b]; t < rc.p.kv[b + 1]; ++t) {
        if (t == rc.p.kv[b] || rng_uniform(r) < 0.02) ++d;
        doc[t] = d;
      }
    int64_t nd = rc.p.nk, ns = QH, ts[2] = {QH, BUCKETS};
    mr_init(&rc.mdoc, 1, doc, &nd), mr_init(&rc.msl, 1, slopes, &ns), mr_init(&rc.mt, 2, table, ts);
    const int64_t n = rc.p.nq * QH * HD;
    passed[0] += gpu_vs_host(gpu, host, "packed documents", c, run_documents, &rc, FI_DTYPE_F16, n, 0, 0);
    passed[1] += gpu_vs_host(gpu, host, "t5 bias", c, run_t5, &rc, FI_DTYPE_F16, n, 0, 0);
    passed[2] += gpu_vs_host(gpu, host, "alibi + soft cap", c, run_alibi_cap, &rc, FI_DTYPE_F16, n, 0, 0);
    e2e_free(doc);
    ragged_free(&rc.p);

    paged_case pc;
    const int32_t batch = (int32_t)rng_int(r, 1, 6);
    pages_t pg;
    make_pages(r, &pg, batch, PS, 1, 600, 0);
    int32_t *qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
    qo[0] = 0;
    for (int32_t i = 0; i < batch; ++i)
      qo[i + 1] = qo[i] + (int32_t)rng_int(r, 1, pg.kv_len[i] < 200 ? pg.kv_len[i] : 200);
    int64_t nq = qo[batch], nb = batch + 1, qs[3] = {nq, QH, HD};
    decode_inputs_init(&pc.d, r, batch, QH, KVH, HD, PS, pg.num_pages, pg.indptr, pg.indices, pg.last);
    void *q = random_tensor(r, FI_DTYPE_F16, numel(3, qs), -3, 3);
    mr_init(&pc.mq, 3, q, qs), mr_init(&pc.mqo, 1, qo, &nb);
    pc.s.sinks = (int32_t)rng_int(r, 0, 8);
    pc.s.window = (int32_t)rng_int(r, 0, 300);
    passed[3] += gpu_vs_host(gpu, host, "sinks + window", c, run_streaming, &pc, FI_DTYPE_F16,
                             numel(3, qs), 0, 0);
    e2e_free(q), e2e_free(qo);
    decode_inputs_free(&pc.d);
    free_pages(&pg);

    decode_case dc;
    decode_case_init(&dc, r);
    passed[4] += gpu_vs_host(gpu, host, "sinks + window decode", c, run_streaming_decode, &dc,
                             FI_DTYPE_F16, dc.d.nq, 0, 0);
    decode_case_free(&dc);
  }
  e2e_free(table), e2e_free(slopes);
  const char *names[5] = {"packed documents (mask_mod)", "t5 relative bias (score_mod)",
                          "alibi + soft cap (score_mod)", "sinks + window (mask_mod)",
                          "sinks + window decode (mask_mod)"};
  int ok = 1;
  for (int i = 0; i < 5; ++i) {
    printf("%s: %d/%d configurations on the GPU match the host backend\n", names[i], passed[i],
           configs);
    ok &= passed[i] == configs;
  }
  fi_context_destroy(host);
  printf("variants: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  e2e_setup();
  fi_context *ctx = fi_default_context();
  if (fi_context_backend(ctx) == FI_BACKEND_CUDA) {
    rng gr = {(uint64_t)arg_long(argc, argv, "seed", 1)};
    return gpu_main(ctx, (int)arg_long(argc, argv, "configs", 25), &gr);
  }
  const int configs = (int)arg_long(argc, argv, "configs", 25);
  rng r = {(uint64_t)arg_long(argc, argv, "seed", 1)};
  int passed[5] = {0, 0, 0, 0, 0};

  for (int c = 0; c < configs; ++c) { /* 1. packed documents */
    ragged p;
    ragged_init(&p, &r);
    int32_t *doc = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)p.nk);
    for (int32_t b = 0, d = 0; b < p.batch; ++b)
      for (int64_t t = p.kv[b]; t < p.kv[b + 1]; ++t) {
        if (t == p.kv[b] || rng_uniform(&r) < 0.02) ++d; /* a new document */
        doc[t] = d;
      }
    int64_t nd = p.nk;
    memref1 mdoc;
    mr_init(&mdoc, 1, doc, &nd);
    memref3 got;
    fi_rt_plan_log_reset();
    _mlir_ciface_packed_documents(&got, &p.mq, &p.mk, &p.mv, &p.mqo, &p.mkv, &mdoc);
    int32_t *mindptr;
    uint8_t *bits = mask_of(p.batch, p.qo, p.kv_len, p.kv_start, same_document, doc, &mindptr);
    fi_custom_mask mask = {bits, mindptr};
    fi_attention_params params = fi_attention_params_default(QH, KVH, HD);
    params.mask_mode = FI_MASK_CUSTOM;
    passed[0] += check("packed documents", c, &got, ragged_direct(ctx, &p, &params, &mask),
                       p.nq * QH * HD);
    e2e_free(bits), e2e_free(mindptr), e2e_free(doc);
    ragged_free(&p);
  }

  float *table = (float *)random_tensor(&r, FI_DTYPE_F32, QH * BUCKETS, -2, 2);
  for (int c = 0; c < configs; ++c) { /* 2. T5 relative bias */
    ragged p;
    ragged_init(&p, &r);
    int64_t ts[2] = {QH, BUCKETS};
    memref2 mt;
    mr_init(&mt, 2, table, ts);
    memref3 got;
    fi_rt_plan_log_reset();
    _mlir_ciface_t5_relative_bias(&got, &p.mq, &p.mk, &p.mv, &p.mqo, &p.mkv, &mt);
    fi_variant hooks = {t5_bias, NULL, table, 0, NULL, NULL};
    fi_attention_params params = fi_attention_params_default(QH, KVH, HD);
    params.mask_mode = FI_MASK_CAUSAL;
    params.variant = &hooks;
    passed[1] += check("t5 bias", c, &got, ragged_direct(ctx, &p, &params, NULL), p.nq * QH * HD);
    ragged_free(&p);
  }
  e2e_free(table);

  /* runtime.h's ALiBi slopes for 8 heads: 2^-(h + 1) */
  float *slopes = (float *)e2e_alloc(sizeof(float) * QH);
  for (int h = 0; h < QH; ++h) slopes[h] = ldexpf(1.0f, -(h + 1));
  for (int c = 0; c < configs; ++c) { /* 3. ALiBi then soft cap */
    ragged p;
    ragged_init(&p, &r);
    int64_t ns = QH;
    memref1 msl;
    mr_init(&msl, 1, slopes, &ns);
    memref3 got;
    fi_rt_plan_log_reset();
    _mlir_ciface_alibi_soft_cap_prefill(&got, &p.mq, &p.mk, &p.mv, &p.mqo, &p.mkv, &msl, 20.0f);
    fi_attention_params params = fi_attention_params_default(QH, KVH, HD);
    params.mask_mode = FI_MASK_CAUSAL;
    params.pos_encoding = FI_POS_ALIBI;
    params.logits_soft_cap = 20.0f;
    passed[2] += check("alibi + soft cap", c, &got, ragged_direct(ctx, &p, &params, NULL),
                       p.nq * QH * HD);
    ragged_free(&p);
  }
  e2e_free(slopes);

  for (int c = 0; c < configs; ++c) { /* 4. sinks + sliding window, paged prefill */
    int32_t batch = (int32_t)rng_int(&r, 1, 6);
    pages_t pg;
    make_pages(&r, &pg, batch, PS, 1, 300, 0);
    int32_t *qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
    int64_t kv_start[16];
    qo[0] = 0;
    for (int32_t i = 0; i < batch; ++i) {
      qo[i + 1] = qo[i] + (int32_t)rng_int(&r, 1, pg.kv_len[i] < 64 ? pg.kv_len[i] : 64);
      kv_start[i] = 0;
    }
    int64_t nq = qo[batch], nb = batch + 1, qs[3] = {nq, QH, HD};
    decode_inputs d; /* the caches and page-table memrefs; q is ragged below */
    decode_inputs_init(&d, &r, batch, QH, KVH, HD, PS, pg.num_pages, pg.indptr, pg.indices, pg.last);
    void *q = random_tensor(&r, FI_DTYPE_F16, numel(3, qs), -3, 3);
    memref3 mq;
    memref1 mqo;
    mr_init(&mq, 3, q, qs), mr_init(&mqo, 1, qo, &nb);
    streaming s = {(int32_t)rng_int(&r, 0, 8), (int32_t)rng_int(&r, 0, 100)};
    memref3 got;
    fi_rt_plan_log_reset();
    _mlir_ciface_streaming_prefill(&got, &mq, &mqo, &d.mk, &d.mv, &d.mi, &d.mx, &d.ml, s.sinks,
                                   s.window);
    int32_t *mindptr;
    uint8_t *bits = mask_of(batch, qo, pg.kv_len, kv_start, sinks_and_window, &s, &mindptr);
    fi_custom_mask mask = {bits, mindptr};
    fi_attention_params params = fi_attention_params_default(QH, KVH, HD);
    params.page_size = PS;
    params.mask_mode = FI_MASK_CUSTOM;
    fi_page_table table_ = {pg.indptr, pg.indices, pg.last};
    size_t ws_bytes = 0;
    CHECK_OK(ctx, fi_prefill_workspace_size(ctx, &params, batch, nq, &ws_bytes));
    void *ws = e2e_alloc(ws_bytes);
    fi_plan plan;
    fi_tiles tiles = logged_tiles(0, FI_OP_PAGED_PREFILL);
    CHECK_OK(ctx, fi_paged_prefill_plan(ctx, &params, batch, qo, &table_, pg.num_pages, &mask,
                                        &tiles, ws, ws_bytes, &plan));
    void *o = poisoned_tensor(FI_DTYPE_F16, numel(3, qs));
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs), to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
    fi_paged_kv_cache kv = {fi_tensor_contiguous(d.k, FI_DTYPE_F16, 4, d.cs),
                            fi_tensor_contiguous(d.v, FI_DTYPE_F16, 4, d.cs), FI_LAYOUT_NHD};
    CHECK_OK(ctx, fi_paged_prefill_run(ctx, &plan, &tq, qo, &kv, &table_, &mask, &to, NULL));
    passed[3] += check("sinks + window", c, &got, o, numel(3, qs));
    e2e_free(ws), e2e_free(bits), e2e_free(mindptr), e2e_free(q), e2e_free(qo);
    decode_inputs_free(&d);
    free_pages(&pg);
  }

  for (int c = 0; c < configs; ++c) { /* 5. sinks + sliding window, decode */
    decode_case dc;
    decode_case_init(&dc, &r);
    memref3 got;
    fi_rt_plan_log_reset();
    _mlir_ciface_streaming_decode(&got, &dc.d.mq, &dc.d.mk, &dc.d.mv, &dc.d.mi, &dc.d.mx,
                                  &dc.d.ml, dc.s.sinks, dc.s.window);
    fi_variant hooks = {NULL, sinks_and_window_hook, &dc.s, 0, NULL, NULL};
    fi_attention_params params = fi_attention_params_default(QH, KVH, HD);
    params.page_size = PS;
    params.variant = &hooks;
    const int32_t batch = dc.pg.batch;
    fi_page_table table_ = {dc.pg.indptr, dc.pg.indices, dc.pg.last};
    size_t ws_bytes = 0;
    CHECK_OK(ctx, fi_decode_workspace_size(ctx, &params, batch, &ws_bytes));
    void *ws = e2e_alloc(ws_bytes);
    fi_plan plan;
    fi_tiles tiles = logged_tiles(0, FI_OP_DECODE);
    CHECK_OK(ctx, fi_decode_plan(ctx, &params, batch, &table_, dc.pg.num_pages, &tiles, ws,
                                 ws_bytes, &plan));
    void *o = poisoned_tensor(FI_DTYPE_F16, dc.d.nq);
    fi_tensor tq = fi_tensor_contiguous(dc.d.q, FI_DTYPE_F16, 3, dc.d.qs),
              to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, dc.d.qs);
    fi_paged_kv_cache kv = {fi_tensor_contiguous(dc.d.k, FI_DTYPE_F16, 4, dc.d.cs),
                            fi_tensor_contiguous(dc.d.v, FI_DTYPE_F16, 4, dc.d.cs), FI_LAYOUT_NHD};
    CHECK_OK(ctx, fi_decode_run(ctx, &plan, &tq, &kv, &table_, &to, NULL));
    passed[4] += check("sinks + window decode", c, &got, o, dc.d.nq);
    e2e_free(ws);
    decode_case_free(&dc);
  }

  const char *names[5] = {"packed documents (mask_mod vs custom mask)",
                          "t5 relative bias (score_mod vs C hook)",
                          "alibi + soft cap (score_mod vs built-in)",
                          "sinks + window (mask_mod vs custom mask)",
                          "sinks + window decode (mask_mod vs C hook)"};
  int ok = 1;
  for (int i = 0; i < 5; ++i) {
    printf("%s: %d/%d configurations equal\n", names[i], passed[i], configs);
    ok &= passed[i] == configs;
  }
  printf("variants: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
