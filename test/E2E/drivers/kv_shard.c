/* Driver of test/E2E/kv_shard.mlir: compiled KV-sharded steps on the host backend, two ranks
 * on two threads.
 *
 * Each step draws a problem for one of the three compiled functions (sharded decode, sharded
 * causal paged prefill, the sharded cascade), with its own batch size and lengths (so every
 * plan is re-made and workspaces grow while the contexts live on), and cuts every sequence's
 * KV in two: rank 0 holds a multiple of the 32-token split (0 to 3 chunks), rank 1 the rest
 * (at least the request's new tokens for the causal prefill; a decode request may lack a
 * segment on either rank). Each rank builds its own paged cache (pages shuffled, spare pages,
 * random fp16 everywhere, never zeros) and page table. The two rank threads, each on its own
 * host context with its communicator (fi_comm_create_local_group(2)), call the compiled
 * function with their shard; compiled outputs start poisoned (FI_RT_POISON). The reference is
 * the single-rank run of the whole cache (both ranks' pages side by side, each sequence's
 * page list the concatenation of its segments'), the runtime called directly on a third
 * context with params.fixed_split_size = 32, kv_shards = 0 and the tiles the compiled plans
 * used (fi_rt_plan_log); for the cascade, the prefix prefill, the suffix decode and
 * fi_merge_state. Every element of o and lse on both ranks must equal it bit for bit.
 *
 * Then the bad inputs through the compiled code, caught with fi_rt_set_error_handler: the
 * sharded decode on a context without a communicator, and a decode sharded over 3 ranks on a
 * context whose communicator has 2. */
#include "e2e.h"

#include <pthread.h>

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_decode_sharded(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                 memref1 *, memref1 *);
void _mlir_ciface_prefill_sharded(o_lse *, memref3 *, memref1 *, memref4 *, memref4 *,
                                  memref1 *, memref1 *, memref1 *);
void _mlir_ciface_cascade_sharded(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                  memref1 *, memref1 *, memref1 *, memref1 *, memref1 *,
                                  memref1 *);
void _mlir_ciface_decode_sharded3(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                  memref1 *, memref1 *);

enum { RANKS = 2, STEPS = 6, QH = 8, KVH = 2, HD = 64, PS = 16, SPLIT = 32 };
enum { F_DECODE, F_PREFILL, F_CASCADE, NFUNC };
static const char *const func_names[NFUNC] = {"decode_sharded", "prefill_sharded",
                                              "cascade_sharded"};

/* One KV cache [num_pages, PS, KVH, HD] (NHD, f16) and a page table over `nseq` sequences. */
typedef struct cache_t {
  int32_t num_pages;
  void *k, *v;
  int32_t *indptr, *indices, *last;
} cache_t;

/* A step: `nseq` KV sequences (decode / prefill: one per request; cascade: the shared
 * prefix first, then one suffix per query), each cut at seg0[s] tokens between the ranks. */
typedef struct step_t {
  int func;
  int32_t batch;         /* requests; the cascade's queries */
  int32_t nseq;
  int64_t *seg0, *len;   /* per sequence: rank 0's tokens, all tokens */
  int32_t *qo_indptr;    /* prefill: [batch + 1]; cascade: the prefix's {0, batch} */
  int64_t nq;            /* query rows */
  void *q;               /* [nq, QH, HD] */
  cache_t rk[RANKS], whole;
} step_t;

static const int64_t CHUNK = (SPLIT + PS - 1) / PS * PS; /* the split in whole pages */

static size_t cache_bytes(int32_t pages) { return (size_t)pages * PS * KVH * HD * 2; }

/* Rank r's cache: the pages of its segment of every sequence, shuffled, plus spare pages;
 * every element random (never zero). */
static void build_rank(rng *g, step_t *st, int r) {
  cache_t *c = &st->rk[r];
  c->indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(st->nseq + 1));
  c->last = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)st->nseq);
  c->indptr[0] = 0;
  for (int32_t s = 0; s < st->nseq; ++s) {
    const int64_t n = r == 0 ? st->seg0[s] : st->len[s] - st->seg0[s];
    const int64_t np = (n + PS - 1) / PS;
    c->indptr[s + 1] = c->indptr[s] + (int32_t)np;
    c->last[s] = np ? (int32_t)(n - (np - 1) * PS) : 1;
  }
  const int32_t used = c->indptr[st->nseq];
  c->num_pages = used + (int32_t)rng_int(g, 1, 3);
  int32_t *perm = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)c->num_pages);
  for (int32_t i = 0; i < c->num_pages; ++i) perm[i] = i;
  for (int32_t i = c->num_pages - 1; i > 0; --i) {
    int32_t j = (int32_t)rng_int(g, 0, i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  c->indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(used ? used : 1));
  memcpy(c->indices, perm, sizeof(int32_t) * (size_t)used);
  free(perm);
  const int64_t n = (int64_t)c->num_pages * PS * KVH * HD;
  c->k = random_tensor(g, FI_DTYPE_F16, n, 0.05, 1.5);
  c->v = random_tensor(g, FI_DTYPE_F16, n, 0.05, 1.0);
  /* random signs, still never zero */
  uint16_t *kh = (uint16_t *)c->k, *vh = (uint16_t *)c->v;
  for (int64_t e = 0; e < n; ++e) {
    if (rng_next(g) & 1) kh[e] ^= 0x8000;
    if (rng_next(g) & 1) vh[e] ^= 0x8000;
  }
}

/* The whole cache on one rank: both ranks' pages side by side, each sequence's page list
 * rank 0's (whole pages) then rank 1's. */
static void build_whole(step_t *st) {
  cache_t *w = &st->whole;
  w->num_pages = st->rk[0].num_pages + st->rk[1].num_pages;
  w->k = e2e_alloc(cache_bytes(w->num_pages));
  w->v = e2e_alloc(cache_bytes(w->num_pages));
  memcpy(w->k, st->rk[0].k, cache_bytes(st->rk[0].num_pages));
  memcpy(w->v, st->rk[0].v, cache_bytes(st->rk[0].num_pages));
  memcpy((char *)w->k + cache_bytes(st->rk[0].num_pages), st->rk[1].k,
         cache_bytes(st->rk[1].num_pages));
  memcpy((char *)w->v + cache_bytes(st->rk[0].num_pages), st->rk[1].v,
         cache_bytes(st->rk[1].num_pages));
  w->indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(st->nseq + 1));
  w->last = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)st->nseq);
  const int32_t entries = st->rk[0].indptr[st->nseq] + st->rk[1].indptr[st->nseq];
  w->indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(entries ? entries : 1));
  int32_t e = 0;
  w->indptr[0] = 0;
  for (int32_t s = 0; s < st->nseq; ++s) {
    int32_t base = 0;
    for (int r = 0; r < RANKS; ++r) {
      for (int32_t x = st->rk[r].indptr[s]; x < st->rk[r].indptr[s + 1]; ++x)
        w->indices[e++] = base + st->rk[r].indices[x];
      base += st->rk[r].num_pages;
    }
    w->indptr[s + 1] = e;
    const int64_t n = st->len[s], np = (n + PS - 1) / PS;
    w->last[s] = np ? (int32_t)(n - (np - 1) * PS) : 1;
  }
}

static void free_cache(cache_t *c) {
  e2e_free(c->k), e2e_free(c->v);
  e2e_free(c->indptr), e2e_free(c->indices), e2e_free(c->last);
}

static void make_step(rng *g, step_t *st, int func) {
  memset(st, 0, sizeof *st);
  st->func = func;
  st->batch = (int32_t)rng_int(g, 1, func == F_PREFILL ? 12 : 24);
  st->nseq = func == F_CASCADE ? st->batch + 1 : st->batch;
  st->seg0 = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)st->nseq);
  st->len = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)st->nseq);
  int64_t *qo_len = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)st->nseq);
  for (int32_t s = 0; s < st->nseq; ++s) {
    qo_len[s] = func == F_PREFILL ? rng_int(g, 1, 9) : 1;
    const int64_t lo = func == F_PREFILL ? qo_len[s] : 0; /* causal: new tokens on rank 1 */
    st->seg0[s] = CHUNK * rng_int(g, 0, 3);
    int64_t tail = rng_int(g, lo, 2 * CHUNK + 7);
    if (func == F_CASCADE && s == 0) { /* the shared prefix: longer */
      st->seg0[s] = CHUNK * rng_int(g, 1, 4);
      tail = rng_int(g, 0, 3 * CHUNK);
    }
    if (func != F_PREFILL && s == st->nseq - 1) tail = 0; /* a sequence rank 1 lacks */
    if (st->seg0[s] + tail == 0) tail = rng_int(g, 1, 20); /* no empty sequence */
    st->len[s] = st->seg0[s] + tail;
  }
  if (func == F_PREFILL) {
    st->qo_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(st->batch + 1));
    st->qo_indptr[0] = 0;
    for (int32_t i = 0; i < st->batch; ++i)
      st->qo_indptr[i + 1] = st->qo_indptr[i] + (int32_t)qo_len[i];
    st->nq = st->qo_indptr[st->batch];
  } else {
    st->nq = st->batch;
    if (func == F_CASCADE) {
      st->qo_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * 2);
      st->qo_indptr[0] = 0;
      st->qo_indptr[1] = st->batch;
    }
  }
  free(qo_len);
  st->q = random_tensor(g, FI_DTYPE_F16, st->nq * QH * HD, -2, 2);
  for (int r = 0; r < RANKS; ++r) build_rank(g, st, r);
  build_whole(st);
}

static void free_step(step_t *st) {
  for (int r = 0; r < RANKS; ++r) free_cache(&st->rk[r]);
  free_cache(&st->whole);
  free(st->seg0), free(st->len);
  if (st->qo_indptr) e2e_free(st->qo_indptr);
  e2e_free(st->q);
}

/* ------------------------------------------------------------- compiled calls ------ */

/* The cascade's two page tables out of one over [prefix, suffix_0 .. suffix_{b-1}]: the
 * prefix's entries and a rebased copy of the suffixes' indptr. */
typedef struct cascade_tables {
  int32_t p_indptr[2], p_last[1];
  int32_t *s_indptr;
} cascade_tables;

static void split_tables(const step_t *st, const cache_t *c, cascade_tables *t) {
  t->p_indptr[0] = 0;
  t->p_indptr[1] = c->indptr[1];
  t->p_last[0] = c->last[0];
  t->s_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(st->batch + 1));
  for (int32_t i = 0; i <= st->batch; ++i) t->s_indptr[i] = c->indptr[i + 1] - c->indptr[1];
}

/* Calls the step's compiled function on the caller's context with cache `c` (a rank's). */
static o_lse call_compiled(const step_t *st, const cache_t *c,
                           void (*decode_fn)(o_lse *, memref3 *, memref4 *, memref4 *,
                                             memref1 *, memref1 *, memref1 *)) {
  o_lse res;
  memset(&res, 0, sizeof res);
  const int64_t qs[3] = {st->nq, QH, HD}, cs[4] = {c->num_pages, PS, KVH, HD};
  memref3 mq;
  memref4 mk, mv;
  mr_init(&mq, 3, st->q, qs);
  mr_init(&mk, 4, c->k, cs);
  mr_init(&mv, 4, c->v, cs);
  const int64_t nseq1 = st->nseq + 1, nseq = st->nseq, nx = c->indptr[st->nseq];
  memref1 mi, mx, ml;
  mr_init(&mi, 1, c->indptr, &nseq1);
  mr_init(&mx, 1, c->indices, &nx);
  mr_init(&ml, 1, c->last, &nseq);
  if (st->func == F_DECODE) {
    decode_fn(&res, &mq, &mk, &mv, &mi, &mx, &ml);
  } else if (st->func == F_PREFILL) {
    const int64_t nb1 = st->batch + 1;
    memref1 mqo;
    mr_init(&mqo, 1, st->qo_indptr, &nb1);
    _mlir_ciface_prefill_sharded(&res, &mq, &mqo, &mk, &mv, &mi, &mx, &ml);
  } else {
    cascade_tables t;
    split_tables(st, c, &t);
    const int64_t two = 2, one = 1, nb1 = st->batch + 1, nb = st->batch;
    const int64_t npx = t.p_indptr[1], nsx = t.s_indptr[st->batch];
    memref1 pqo, pi, px, pl, si, sx, sl;
    mr_init(&pqo, 1, st->qo_indptr, &two);
    mr_init(&pi, 1, t.p_indptr, &two);
    mr_init(&px, 1, c->indices, &npx);
    mr_init(&pl, 1, t.p_last, &one);
    mr_init(&si, 1, t.s_indptr, &nb1);
    mr_init(&sx, 1, c->indices + npx, &nsx);
    mr_init(&sl, 1, c->last + 1, &nb);
    _mlir_ciface_cascade_sharded(&res, &mq, &mk, &mv, &pqo, &pi, &px, &pl, &si, &sx, &sl);
    e2e_free(t.s_indptr);
  }
  return res;
}

/* What a rank thread did with a step: host copies of its outputs, the tiles of its plans. */
typedef struct rank_job {
  int rank;
  fi_context *ctx;
  const step_t *st;
  void *o;
  float *lse;
  int have_decode_tiles, have_prefill_tiles;
  fi_tiles decode_tiles, prefill_tiles;
  int plans;
} rank_job;

static void *rank_main(void *arg) {
  rank_job *j = (rank_job *)arg;
  const step_t *st = j->st;
  fi_rt_set_thread_context(j->ctx);
  fi_rt_plan_log_reset(); /* this thread's log */
  o_lse res = call_compiled(st, &st->rk[j->rank], _mlir_ciface_decode_sharded);
  const size_t ob = (size_t)st->nq * QH * HD * 2, lb = (size_t)st->nq * QH * 4;
  j->o = xmalloc(ob);
  j->lse = (float *)xmalloc(lb);
  memcpy(j->o, (const char *)res.o.aligned + res.o.offset * 2, ob);
  memcpy(j->lse, (const float *)res.lse.aligned + res.lse.offset, lb);
  fi_rt_free(res.o.allocated);
  fi_rt_free(res.lse.allocated);
  fi_op_family fam[64];
  fi_tiles tiles[64];
  j->plans = fi_rt_plan_log(fam, tiles, 64);
  j->have_decode_tiles = j->have_prefill_tiles = 0;
  for (int i = 0; i < j->plans && i < 64; ++i) {
    if (fam[i] == FI_OP_DECODE) j->decode_tiles = tiles[i], j->have_decode_tiles = 1;
    if (fam[i] == FI_OP_PAGED_PREFILL) j->prefill_tiles = tiles[i], j->have_prefill_tiles = 1;
  }
  fi_rt_set_thread_context(NULL);
  return NULL;
}

/* ------------------------------------------------------------- the reference ------- */

static int same_tiles(fi_tiles a, fi_tiles b) {
  return a.q_tile == b.q_tile && a.kv_tile == b.kv_tile && a.cores == b.cores;
}

static fi_attention_params ref_params(fi_mask_mode mask) {
  fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
  p.page_size = PS;
  p.mask_mode = mask;
  p.fixed_split_size = SPLIT;
  p.kv_shards = 0;
  return p;
}

static fi_paged_kv_cache kv_of(const cache_t *c) {
  const int64_t cs[4] = {c->num_pages, PS, KVH, HD};
  fi_paged_kv_cache kv = {fi_tensor_contiguous(c->k, FI_DTYPE_F16, 4, cs),
                          fi_tensor_contiguous(c->v, FI_DTYPE_F16, 4, cs), FI_LAYOUT_NHD};
  return kv;
}

/* The single-rank decode of `batch` rows of q over the page table, into o / lse. */
static void ref_decode(fi_context *ctx, const fi_tiles *tiles, const cache_t *c,
                       const fi_page_table *pt, int32_t batch, void *q, void *o, float *lse) {
  fi_attention_params p = ref_params(FI_MASK_NONE);
  int64_t total = 0;
  for (int32_t i = 0; i < batch; ++i) total += (int64_t)(pt->indptr[i + 1] - pt->indptr[i]) * PS;
  size_t bytes = 0;
  CHECK_OK(ctx, fi_decode_workspace_size_kv(ctx, &p, batch, total, &bytes));
  void *ws = e2e_alloc(bytes);
  fi_plan plan;
  CHECK_OK(ctx, fi_decode_plan(ctx, &p, batch, pt, c->num_pages, tiles, ws, bytes, &plan));
  const int64_t qs[3] = {batch, QH, HD}, ls[2] = {batch, QH};
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
  fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  fi_paged_kv_cache kv = kv_of(c);
  CHECK_OK(ctx, fi_decode_run(ctx, &plan, &tq, &kv, pt, &to, &tl));
  e2e_free(ws);
}

/* The single-rank paged prefill (qo_indptr over `batch` requests) into o / lse. */
static void ref_prefill(fi_context *ctx, fi_mask_mode mask, const fi_tiles *tiles,
                        const cache_t *c, const fi_page_table *pt, int32_t batch,
                        const int32_t *qo_indptr, void *q, void *o, float *lse) {
  fi_attention_params p = ref_params(mask);
  const int64_t nq = qo_indptr[batch];
  size_t bytes = 0;
  CHECK_OK(ctx, fi_prefill_workspace_size(ctx, &p, batch, nq, &bytes));
  void *ws = e2e_alloc(bytes);
  fi_plan plan;
  CHECK_OK(ctx, fi_paged_prefill_plan(ctx, &p, batch, qo_indptr, pt, c->num_pages, NULL, tiles,
                                      ws, bytes, &plan));
  const int64_t qs[3] = {nq, QH, HD}, ls[2] = {nq, QH};
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
  fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  fi_paged_kv_cache kv = kv_of(c);
  CHECK_OK(ctx, fi_paged_prefill_run(ctx, &plan, &tq, qo_indptr, &kv, pt, NULL, &to, &tl));
  e2e_free(ws);
}

/* The step's single-rank result over the whole cache, with the compiled plans' tiles. */
static void reference(fi_context *ctx, const step_t *st, const rank_job *j, void *o,
                      float *lse) {
  const cache_t *w = &st->whole;
  if (st->func == F_DECODE) {
    fi_page_table pt = {w->indptr, w->indices, w->last};
    ref_decode(ctx, &j->decode_tiles, w, &pt, st->batch, st->q, o, lse);
  } else if (st->func == F_PREFILL) {
    fi_page_table pt = {w->indptr, w->indices, w->last};
    ref_prefill(ctx, FI_MASK_CAUSAL, &j->prefill_tiles, w, &pt, st->batch, st->qo_indptr,
                st->q, o, lse);
  } else {
    cascade_tables t;
    split_tables(st, w, &t);
    const int64_t n = st->nq * QH * HD;
    void *op = poisoned_tensor(FI_DTYPE_F16, n), *os = poisoned_tensor(FI_DTYPE_F16, n);
    float *lp = (float *)poisoned_tensor(FI_DTYPE_F32, st->nq * QH);
    float *ls = (float *)poisoned_tensor(FI_DTYPE_F32, st->nq * QH);
    fi_page_table ppt = {t.p_indptr, w->indices, t.p_last};
    fi_page_table spt = {t.s_indptr, w->indices + t.p_indptr[1], w->last + 1};
    ref_prefill(ctx, FI_MASK_NONE, &j->prefill_tiles, w, &ppt, 1, st->qo_indptr, st->q, op,
                lp);
    ref_decode(ctx, &j->decode_tiles, w, &spt, st->batch, st->q, os, ls);
    const int64_t qs[3] = {st->nq, QH, HD}, lsz[2] = {st->nq, QH};
    fi_tensor va = fi_tensor_contiguous(op, FI_DTYPE_F16, 3, qs);
    fi_tensor sa = fi_tensor_contiguous(lp, FI_DTYPE_F32, 2, lsz);
    fi_tensor vb = fi_tensor_contiguous(os, FI_DTYPE_F16, 3, qs);
    fi_tensor sb = fi_tensor_contiguous(ls, FI_DTYPE_F32, 2, lsz);
    fi_tensor vo = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
    fi_tensor so = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, lsz);
    CHECK_OK(ctx, fi_merge_state(ctx, &va, &sa, &vb, &sb, &vo, &so));
    e2e_free(op), e2e_free(os), e2e_free(lp), e2e_free(ls);
    e2e_free(t.s_indptr);
  }
}

/* Elements of got that differ in any bit from want (or are NaN: poison left unwritten). */
static int64_t count_diff(const char *what, int step, int rank, const void *got,
                          const void *want, size_t es, int64_t n, int is_f16) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const char *g = (const char *)got + i * (int64_t)es, *w = (const char *)want + i * (int64_t)es;
    float gv = fi_load_f32(got, is_f16 ? FI_DTYPE_F16 : FI_DTYPE_F32, i);
    if (memcmp(g, w, es) == 0 && gv == gv) continue;
    if (bad < 5)
      printf("MISMATCH step %d rank %d %s[%lld]: compiled %.9g, single rank %.9g\n", step, rank,
             what, (long long)i, gv, fi_load_f32(want, is_f16 ? FI_DTYPE_F16 : FI_DTYPE_F32, i));
    ++bad;
  }
  return bad;
}

/* ------------------------------------------------------------- bad inputs ---------- */

static char bad_op[64], bad_msg[1024];
static fi_status bad_status;
static int bad_reports;
static void catch_error(const char *op, fi_status status, const char *message) {
  if (bad_reports++ == 0) { /* the first: the plan's; the run then reports the failed plan */
    snprintf(bad_op, sizeof bad_op, "%s", op);
    snprintf(bad_msg, sizeof bad_msg, "%s", message);
    bad_status = status;
  }
}

/* Runs a small sharded decode (compiled `fn`) on `ctx` with the catching handler; 1 when
 * the first report is the plan's FI_ERROR_INVALID_ARGUMENT containing both texts. */
static int expect_bad(const char *what, fi_context *ctx,
                      void (*fn)(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                 memref1 *, memref1 *),
                      const char *text1, const char *text2) {
  rng g = {77};
  step_t st;
  make_step(&g, &st, F_DECODE);
  fi_rt_error_handler prev = fi_rt_set_error_handler(catch_error);
  bad_reports = 0;
  bad_op[0] = bad_msg[0] = 0;
  fi_rt_set_thread_context(ctx);
  o_lse res = call_compiled(&st, &st.rk[0], fn);
  fi_rt_set_thread_context(NULL);
  fi_rt_set_error_handler(prev);
  if (res.o.allocated) fi_rt_free(res.o.allocated);
  if (res.lse.allocated) fi_rt_free(res.lse.allocated);
  free_step(&st);
  const int ok = bad_reports > 0 && strcmp(bad_op, "fi.decode_plan") == 0 &&
                 bad_status == FI_ERROR_INVALID_ARGUMENT && strstr(bad_msg, text1) &&
                 strstr(bad_msg, text2);
  printf("bad input: %s: %s: %s: %s\n", what, bad_reports ? bad_op : "(no report)",
         bad_reports ? fi_status_string(bad_status) : "-", bad_msg);
  if (!ok) printf("MISMATCH bad input %s: wanted fi.decode_plan, FI_ERROR_INVALID_ARGUMENT, "
                  "\"%s\" and \"%s\"\n", what, text1, text2);
  return ok;
}

int main(void) {
  e2e_setup();
  fi_context *ctx[RANKS], *ref_ctx;
  fi_comm *comms[RANKS];
  if (fi_comm_create_local_group(RANKS, comms) != FI_SUCCESS) {
    printf("FAILED fi_comm_create_local_group: %s\n", fi_last_error(NULL));
    return 1;
  }
  for (int r = 0; r < RANKS; ++r) {
    if (fi_context_create(FI_BACKEND_HOST, &ctx[r]) != FI_SUCCESS) return 1;
    fi_context_set_num_threads(ctx[r], 1);
    CHECK_OK(ctx[r], fi_context_set_comm(ctx[r], comms[r]));
  }
  if (fi_context_create(FI_BACKEND_HOST, &ref_ctx) != FI_SUCCESS) return 1;
  fi_context_set_num_threads(ref_ctx, 1);

  rng g = {20260611};
  int64_t bad = 0, exact = 0;
  for (int s = 0; s < STEPS; ++s) {
    for (int f = 0; f < NFUNC; ++f) {
      step_t st;
      make_step(&g, &st, f);
      rank_job jobs[RANKS];
      pthread_t th[RANKS];
      for (int r = 0; r < RANKS; ++r) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].rank = r;
        jobs[r].ctx = ctx[r];
        jobs[r].st = &st;
        pthread_create(&th[r], NULL, rank_main, &jobs[r]);
      }
      for (int r = 0; r < RANKS; ++r) pthread_join(th[r], NULL);
      /* Every rank made the step's plans, with the same tiles (their split_kv flag says
       * whether the rank's own segments were split; a fixed split ignores it). */
      const int want_plans = f == F_CASCADE ? 2 : 1;
      int ok_tiles = 1;
      for (int r = 0; r < RANKS; ++r)
        if (jobs[r].plans != want_plans ||
            (f != F_PREFILL && !jobs[r].have_decode_tiles) ||
            (f != F_DECODE && !jobs[r].have_prefill_tiles) ||
            !same_tiles(jobs[r].decode_tiles, jobs[0].decode_tiles) ||
            !same_tiles(jobs[r].prefill_tiles, jobs[0].prefill_tiles))
          ok_tiles = 0;
      if (!ok_tiles) {
        printf("MISMATCH step %d %s: the ranks' plans differ: rank 0 made %d (%s, %s), rank 1 "
               "%d (%s, %s)\n", s, func_names[f], jobs[0].plans,
               tiles_str(jobs[0].decode_tiles, 1), tiles_str(jobs[0].prefill_tiles, 0),
               jobs[1].plans, tiles_str(jobs[1].decode_tiles, 1),
               tiles_str(jobs[1].prefill_tiles, 0));
        bad += RANKS;
        free(jobs[0].o), free(jobs[0].lse), free(jobs[1].o), free(jobs[1].lse);
        free_step(&st);
        continue;
      }
      const int64_t no = st.nq * QH * HD, nl = st.nq * QH;
      void *ref_o = poisoned_tensor(FI_DTYPE_F16, no);
      float *ref_lse = (float *)poisoned_tensor(FI_DTYPE_F32, nl);
      reference(ref_ctx, &st, &jobs[0], ref_o, ref_lse);
      int64_t tokens[RANKS] = {0, 0};
      for (int32_t q = 0; q < st.nseq; ++q) {
        tokens[0] += st.seg0[q];
        tokens[1] += st.len[q] - st.seg0[q];
      }
      int64_t step_bad = 0;
      for (int r = 0; r < RANKS; ++r) {
        const int64_t b = count_diff("o", s, r, jobs[r].o, ref_o, 2, no, 1) +
                          count_diff("lse", s, r, jobs[r].lse, ref_lse, 4, nl, 0);
        step_bad += b;
        if (b) ++bad; else ++exact;
        free(jobs[r].o), free(jobs[r].lse);
      }
      printf("  step %d %-15s batch %2d, %3lld query rows, KV tokens %lld + %lld, tiles %s%s%s: "
             "%s\n", s, func_names[f], (int)st.batch, (long long)st.nq, (long long)tokens[0],
             (long long)tokens[1], f == F_PREFILL ? "" : tiles_str(jobs[0].decode_tiles, 1),
             f == F_CASCADE ? " + " : "",
             f == F_DECODE ? "" : tiles_str(jobs[0].prefill_tiles, 0),
             step_bad ? "DIFFERENT" : "bit-exact on both ranks");
      e2e_free(ref_o), e2e_free(ref_lse);
      free_step(&st);
    }
  }
  printf("kv_shard: %d ranks x %d steps x %d functions, %lld results bit-exact against the "
         "single-rank run\n", RANKS, STEPS, NFUNC, (long long)exact);

  /* Bad inputs: no communicator; a communicator of 2 ranks for a 3-rank op. */
  fi_context *lone;
  if (fi_context_create(FI_BACKEND_HOST, &lone) != FI_SUCCESS) return 1;
  int bad_ok = expect_bad("no communicator", lone, _mlir_ciface_decode_sharded, "kv_shards = 2",
                          "no communicator");
  bad_ok &= expect_bad("communicator of 2 ranks for kv_shard ranks = 3", ctx[0],
                       _mlir_ciface_decode_sharded3, "kv_shards = 3", "communicator has 2 ranks");
  fi_context_destroy(lone);

  for (int r = 0; r < RANKS; ++r) fi_context_destroy(ctx[r]);
  for (int r = 0; r < RANKS; ++r) fi_comm_destroy(comms[r]);
  fi_context_destroy(ref_ctx);
  const int pass = bad == 0 && bad_ok;
  printf("E2E kv_shard: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
