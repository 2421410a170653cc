/* test/runtime/test_shard.c -- context parallelism on the host backend: N ranks emulated by
 * N threads (one host context each, an in-process communicator group), each holding a
 * contiguous segment of every request's KV in its own paged cache.
 *
 * Every configuration (decode and paged prefill, causal or not, GQA, soft cap, page sizes,
 * dtypes, 1-4 ranks, segments aligned to a fixed split, empty segments) checks, on every
 * rank, every element of o and lse:
 *  - bit for bit against the single-rank run of the whole cache with the same fixed split
 *    (the determinism contract of runtime.h), and a second sharded run bit for bit;
 *  - against a float64 oracle within the dtype's bounds (outputs poisoned first).
 * Then the bad inputs: a communicator of the wrong size, no communicator, refused features,
 * ranks that disagree at plan time (every rank's plan fails, naming the rank), a rank whose
 * plan fails (the others get its message), a rank whose run fails (the others' runs fail,
 * none hangs), a rank that never joins (timeout). */
#include <pthread.h>

#include "oracle.h"
#include "test_util.h"

typedef struct scase {
  int ranks, decode, batch, hq, hkv, hd, ps, causal, split;
  fi_dtype dt;
  float cap;
  uint64_t seed;
} scase;

/* One request's KV segments: tokens [seg_start[r], seg_start[r + 1]) on rank r. */
typedef struct request {
  int64_t qo_len, kv_len;
  int64_t seg_start[5];
} request;

typedef struct rank_data {
  /* the rank's cache and page table */
  void *k, *v;
  int32_t num_pages;
  int32_t *indptr, *indices, *last;
  /* outputs */
  void *o;
  float *lse;
} rank_data;

typedef struct world {
  const scase *c;
  fi_attention_params p;
  request *req;
  int32_t *qo_indptr;
  int64_t total_qo;
  void *q;             /* [total_qo, hq, hd] */
  float *kf, *vf;      /* the whole KV per request, float, [sum kv][hkv][hd] */
  int64_t *kv_off;     /* request -> first token in kf */
  rank_data rk[4];
  fi_comm *comms[4];
  fi_status plan_status[4], run_status[4];
  int run_twice;
} world;

static size_t esz(fi_dtype d) { return fi_dtype_size(d); }

/* Builds rank r's cache from its segments (pages of ps tokens, in a shuffled page order). */
static void build_rank(world *w, int r, rng *g) {
  const scase *c = w->c;
  rank_data *rd = &w->rk[r];
  int32_t pages = 0;
  rd->indptr = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(c->batch + 1));
  rd->last = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)c->batch);
  rd->indptr[0] = 0;
  for (int i = 0; i < c->batch; ++i) {
    int64_t n = w->req[i].seg_start[r + 1] - w->req[i].seg_start[r];
    int64_t np = (n + c->ps - 1) / c->ps;
    rd->indptr[i + 1] = rd->indptr[i] + (int32_t)np;
    rd->last[i] = np ? (int32_t)(n - (np - 1) * c->ps) : 1;
    pages += (int32_t)np;
  }
  rd->num_pages = pages + 1; /* one page nobody lists */
  rd->indices = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(pages + 1));
  for (int32_t e = 0; e < pages; ++e) rd->indices[e] = e;
  for (int32_t e = pages - 1; e > 0; --e) { /* shuffle */
    int32_t x = (int32_t)rng_int(g, 0, e), t = rd->indices[e];
    rd->indices[e] = rd->indices[x];
    rd->indices[x] = t;
  }
  const size_t page_elems = (size_t)c->ps * c->hkv * c->hd;
  rd->k = xmalloc(page_elems * (size_t)rd->num_pages * esz(c->dt));
  rd->v = xmalloc(page_elems * (size_t)rd->num_pages * esz(c->dt));
  poison(rd->k, page_elems * (size_t)rd->num_pages * esz(c->dt));
  poison(rd->v, page_elems * (size_t)rd->num_pages * esz(c->dt));
  for (int i = 0; i < c->batch; ++i) {
    for (int64_t t = w->req[i].seg_start[r]; t < w->req[i].seg_start[r + 1]; ++t) {
      int64_t lt = t - w->req[i].seg_start[r];
      int32_t page = rd->indices[rd->indptr[i] + lt / c->ps];
      for (int h = 0; h < c->hkv; ++h)
        for (int d = 0; d < c->hd; ++d) { /* NHD */
          size_t dst = (((size_t)page * c->ps + (size_t)(lt % c->ps)) * c->hkv + h) * c->hd + d;
          size_t src = (((size_t)(w->kv_off[i] + t)) * c->hkv + h) * c->hd + d;
          fi_store_f32(rd->k, c->dt, (int64_t)dst, w->kf[src]);
          fi_store_f32(rd->v, c->dt, (int64_t)dst, w->vf[src]);
        }
    }
  }
  size_t out = (size_t)w->total_qo * c->hq * c->hd;
  rd->o = xmalloc(out * esz(c->dt));
  rd->lse = (float *)xmalloc(sizeof(float) * (size_t)w->total_qo * c->hq);
}

static fi_paged_kv_cache cache_of(const scase *c, void *k, void *v, int32_t pages) {
  int64_t shape[4] = {pages, c->ps, c->hkv, c->hd};
  fi_paged_kv_cache kv;
  kv.k = fi_tensor_contiguous(k, c->dt, 4, shape);
  kv.v = fi_tensor_contiguous(v, c->dt, 4, shape);
  kv.layout = FI_LAYOUT_NHD;
  return kv;
}

/* How a rank misbehaves in the bad-input checks. */
enum { MODE_OK, MODE_OTHER_SPLIT, MODE_BAD_PAGES, MODE_BAD_RUN, MODE_ABSENT, MODE_SMALL_WS };
static _Thread_local int t_retries; /* plans made again after the ranks agreed on a size */

/* Plan and run one rank (ctx of the right backend and comm); returns the run's status. */
static fi_status plan_and_run(world *w, fi_context *ctx, const fi_attention_params *p,
                              rank_data *rd, int runs, fi_status *plan_status, int mode) {
  const scase *c = w->c;
  fi_page_table pt = {rd->indptr, rd->indices, rd->last};
  int32_t bad_index = rd->num_pages + 7;
  if (mode == MODE_BAD_PAGES && rd->indptr[c->batch] > 0) pt.indices = &bad_index;
  if (mode == MODE_BAD_PAGES && rd->indptr[c->batch] == 0) pt.last_page_len = NULL;
  size_t bytes = 0;
  fi_status s;
  int64_t kv_total = 0;
  for (int i = 0; i < c->batch; ++i) kv_total += w->req[i].kv_len;
  if (c->decode)
    s = fi_decode_workspace_size_kv(ctx, p, c->batch, kv_total, &bytes);
  else
    /* a sharded prefill's partial rows are its capacity: room for every (row, chunk) of
     * the fixed split (at most 4 chunks per request and rank here) */
    s = fi_prefill_workspace_size(ctx, p, c->batch, w->total_qo * (p->kv_shards ? 5 : 1),
                                  &bytes);
  if (s != FI_SUCCESS) return *plan_status = s;
  if (mode == MODE_SMALL_WS) fi_sharded_workspace_size(ctx, p, 1, &bytes);
  void *ws = xmalloc(bytes);
  fi_plan plan;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (c->decode)
      s = fi_decode_plan(ctx, p, c->batch, &pt, rd->num_pages, NULL, ws, bytes, &plan);
    else
      s = fi_paged_prefill_plan(ctx, p, c->batch, w->qo_indptr, &pt, rd->num_pages, NULL, NULL,
                                ws, bytes, &plan);
    /* the ranks agreed that every workspace must hold plan.num_partial_rows: all resize */
    if (s != FI_ERROR_WORKSPACE_TOO_SMALL || !p->kv_shards || plan.num_partial_rows <= 0) break;
    fi_sharded_workspace_size(ctx, p, plan.num_partial_rows, &bytes);
    free(ws);
    ws = xmalloc(bytes);
    ++t_retries;
  }
  *plan_status = s;
  if (s != FI_SUCCESS) {
    free(ws);
    return s;
  }
  int64_t qs[3] = {w->total_qo, c->hq, c->hd}, ls[2] = {w->total_qo, c->hq};
  fi_tensor q = fi_tensor_contiguous(w->q, c->dt, 3, qs);
  fi_paged_kv_cache kv = cache_of(c, rd->k, rd->v, rd->num_pages);
  for (int it = 0; it < runs && s == FI_SUCCESS; ++it) {
    poison(rd->o, (size_t)w->total_qo * c->hq * c->hd * esz(c->dt));
    poison(rd->lse, sizeof(float) * (size_t)w->total_qo * c->hq);
    fi_tensor o = fi_tensor_contiguous(rd->o, c->dt, 3, qs);
    fi_tensor lse = fi_tensor_contiguous(rd->lse, FI_DTYPE_F32, 2, ls);
    const fi_tensor *qa = mode == MODE_BAD_RUN ? NULL : &q;
    s = c->decode ? fi_decode_run(ctx, &plan, qa, &kv, &pt, &o, &lse)
                  : fi_paged_prefill_run(ctx, &plan, qa, w->qo_indptr, &kv, &pt, NULL, &o, &lse);
  }
  free(ws);
  return s;
}

typedef struct rank_job {
  world *w;
  int rank, mode, runs, retries;
  fi_status plan_status, run_status;
  char message[512];
} rank_job;

static void *rank_main(void *arg) {
  rank_job *j = (rank_job *)arg;
  world *w = j->w;
  j->plan_status = j->run_status = FI_SUCCESS;
  j->message[0] = 0;
  if (j->mode == MODE_ABSENT) return NULL;
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) {
    j->plan_status = FI_ERROR_BACKEND_UNAVAILABLE;
    return NULL;
  }
  fi_context_set_num_threads(ctx, 2);
  fi_context_set_comm(ctx, w->comms[j->rank]);
  fi_attention_params p = w->p;
  if (j->mode == MODE_OTHER_SPLIT) p.fixed_split_size = w->p.fixed_split_size * 2;
  t_retries = 0;
  j->run_status = plan_and_run(w, ctx, &p, &w->rk[j->rank], j->runs, &j->plan_status, j->mode);
  j->retries = t_retries;
  snprintf(j->message, sizeof j->message, "%s", fi_last_error(ctx));
  fi_context_destroy(ctx);
  return NULL;
}

/* Runs every rank on its own thread with `modes` (NULL: all fine). */
static void run_world(world *w, const int *modes, rank_job *jobs, int runs, int64_t timeout_ms) {
  const int R = w->c->ranks;
  if (fi_comm_create_local_group(R, w->comms) != FI_SUCCESS) {
    EXPECT(0, "fi_comm_create_local_group(%d) failed", R);
    return;
  }
  pthread_t th[4];
  for (int r = 0; r < R; ++r) {
    fi_comm_set_timeout_ms(w->comms[r], timeout_ms);
    jobs[r].w = w;
    jobs[r].rank = r;
    jobs[r].mode = modes ? modes[r] : MODE_OK;
    jobs[r].runs = runs;
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  for (int r = 0; r < R; ++r) pthread_join(th[r], NULL);
  for (int r = 0; r < R; ++r) fi_comm_destroy(w->comms[r]);
}

/* Draws a world: requests, segments aligned to the split's chunk, q, the whole KV. */
static void make_world(world *w, const scase *c) {
  memset(w, 0, sizeof *w);
  w->c = c;
  rng g = {c->seed};
  fi_attention_params p = fi_attention_params_default(c->hq, c->hkv, c->hd);
  p.page_size = c->ps;
  p.q_dtype = p.kv_dtype = c->dt;
  p.mask_mode = c->causal ? FI_MASK_CAUSAL : FI_MASK_NONE;
  p.logits_soft_cap = c->cap;
  p.fixed_split_size = c->split;
  w->p = p;
  const int64_t chunk = (c->split + c->ps - 1) / c->ps * c->ps;
  w->req = (request *)xmalloc(sizeof(request) * (size_t)c->batch);
  w->qo_indptr = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(c->batch + 1));
  w->kv_off = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)c->batch);
  w->qo_indptr[0] = 0;
  int64_t kv_sum = 0;
  for (int i = 0; i < c->batch; ++i) {
    request *q = &w->req[i];
    q->qo_len = c->decode ? 1 : rng_int(&g, 0, 9);
    /* ranks < R-1 hold whole chunks (possibly none); the last rank the rest, at least
     * qo_len tokens for a causal prefill */
    q->seg_start[0] = 0;
    for (int r = 0; r < c->ranks - 1; ++r)
      q->seg_start[r + 1] = q->seg_start[r] + chunk * rng_int(&g, 0, 3);
    const int64_t lo = c->causal ? q->qo_len : 0, hi = 2 * chunk + 5;
    int64_t tail = rng_int(&g, lo, hi > lo ? hi : lo);
    if (c->decode && i == 0 && c->ranks > 1) tail = 0; /* a request the last rank lacks */
    q->kv_len = q->seg_start[c->ranks - 1] + tail;
    q->seg_start[c->ranks] = q->kv_len;
    w->kv_off[i] = kv_sum;
    kv_sum += q->kv_len;
    w->qo_indptr[i + 1] = w->qo_indptr[i] + (int32_t)q->qo_len;
  }
  w->total_qo = w->qo_indptr[c->batch];
  size_t qn = (size_t)w->total_qo * c->hq * c->hd, kn = (size_t)kv_sum * c->hkv * c->hd;
  w->q = xmalloc(qn * esz(c->dt) + 1);
  fill_random(w->q, c->dt, (int64_t)qn, &g, -1.0, 1.0);
  w->kf = (float *)xmalloc(sizeof(float) * (kn + 1));
  w->vf = (float *)xmalloc(sizeof(float) * (kn + 1));
  for (size_t e = 0; e < kn; ++e) {
    /* values the cache's dtype holds exactly */
    fi_store_f32(&w->kf[e], FI_DTYPE_F32, 0, (float)rng_range(&g, -1.5, 1.5));
    fi_store_f32(&w->vf[e], FI_DTYPE_F32, 0, (float)rng_range(&g, -1.0, 1.0));
    uint32_t tmp = 0;
    fi_store_f32(&tmp, c->dt, 0, w->kf[e]);
    w->kf[e] = fi_load_f32(&tmp, c->dt, 0);
    fi_store_f32(&tmp, c->dt, 0, w->vf[e]);
    w->vf[e] = fi_load_f32(&tmp, c->dt, 0);
  }
  for (int r = 0; r < c->ranks; ++r) build_rank(w, r, &g);
}

static void free_world(world *w) {
  for (int r = 0; r < w->c->ranks; ++r) {
    rank_data *rd = &w->rk[r];
    free(rd->k), free(rd->v), free(rd->indptr), free(rd->indices), free(rd->last);
    free(rd->o), free(rd->lse);
  }
  free(w->req), free(w->qo_indptr), free(w->kv_off), free(w->q), free(w->kf), free(w->vf);
}

/* The whole cache on one rank: every rank's pages side by side, each request's page list
 * the concatenation of its segments' (segments of ranks < R-1 are whole pages). */
static void single_rank_reference(world *w, void *o, float *lse) {
  const scase *c = w->c;
  int32_t pages = 0, entries = 0;
  for (int r = 0; r < c->ranks; ++r) {
    pages += w->rk[r].num_pages;
    entries += w->rk[r].indptr[c->batch];
  }
  const size_t pe = (size_t)c->ps * c->hkv * c->hd * esz(c->dt);
  char *k = (char *)xmalloc(pe * (size_t)pages), *v = (char *)xmalloc(pe * (size_t)pages);
  int32_t *indptr = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(c->batch + 1));
  int32_t *indices = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(entries + 1));
  int32_t *last = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)c->batch);
  int32_t base = 0;
  for (int r = 0; r < c->ranks; ++r) {
    memcpy(k + pe * (size_t)base, w->rk[r].k, pe * (size_t)w->rk[r].num_pages);
    memcpy(v + pe * (size_t)base, w->rk[r].v, pe * (size_t)w->rk[r].num_pages);
    base += w->rk[r].num_pages;
  }
  indptr[0] = 0;
  int32_t e = 0;
  for (int i = 0; i < c->batch; ++i) {
    int32_t off = 0;
    for (int r = 0; r < c->ranks; ++r) {
      for (int32_t x = w->rk[r].indptr[i]; x < w->rk[r].indptr[i + 1]; ++x)
        indices[e++] = off + w->rk[r].indices[x];
      off += w->rk[r].num_pages;
    }
    indptr[i + 1] = e;
    int64_t n = w->req[i].kv_len;
    last[i] = n ? (int32_t)(n - ((n + c->ps - 1) / c->ps - 1) * c->ps) : 1;
  }
  rank_data one = {k, v, pages, indptr, indices, last, o, lse};
  fi_context *ctx = NULL;
  fi_context_create(FI_BACKEND_HOST, &ctx);
  fi_context_set_num_threads(ctx, 2);
  fi_attention_params p = w->p;
  p.kv_shards = 0;
  fi_status ps;
  fi_status s = plan_and_run(w, ctx, &p, &one, 1, &ps, MODE_OK);
  EXPECT(s == FI_SUCCESS, "single-rank reference: %s %s", fi_status_string(s), fi_last_error(ctx));
  fi_context_destroy(ctx);
  free(k), free(v), free(indptr), free(indices), free(last);
}

static void describe(const scase *c, char *buf, size_t n) {
  snprintf(buf, n, "%s R=%d batch=%d heads=%d/%d hd=%d page=%d %s cap=%g split=%d %s seed=%llu",
           c->decode ? "decode" : "prefill", c->ranks, c->batch, c->hq, c->hkv, c->hd, c->ps,
           c->causal ? "causal" : "none", (double)c->cap, c->split, fi_dtype_name(c->dt),
           (unsigned long long)c->seed);
}

static void check_case(const scase *c) {
  world w;
  make_world(&w, c);
  w.p.kv_shards = c->ranks;
  char what[192];
  describe(c, what, sizeof what);
  const size_t on = (size_t)w.total_qo * c->hq * c->hd;
  void *ref_o = xmalloc(on * esz(c->dt) + 1);
  float *ref_lse = (float *)xmalloc(sizeof(float) * ((size_t)w.total_qo * c->hq + 1));
  single_rank_reference(&w, ref_o, ref_lse);
  rank_job jobs[4];
  run_world(&w, NULL, jobs, 2, 60000);
  double atol, rtol;
  if (c->dt == FI_DTYPE_F32) atol = rtol = 1e-4;
  else if (c->dt == FI_DTYPE_F16) atol = 2e-3, rtol = 4e-3;
  else atol = 1e-2, rtol = 1.6e-2;
  /* float64 oracle per request */
  double *qd = (double *)xmalloc(sizeof(double) * (on + 1));
  for (size_t e = 0; e < on; ++e) qd[e] = fi_load_f32(w.q, c->dt, (int64_t)e);
  double *od = (double *)xmalloc(sizeof(double) * (on + 1));
  double *ld = (double *)xmalloc(sizeof(double) * ((size_t)w.total_qo * c->hq + 1));
  fi_attention_params po = w.p;
  po.kv_shards = 0;
  for (int i = 0; i < c->batch; ++i) {
    const request *q = &w.req[i];
    size_t kvn = (size_t)q->kv_len * c->hkv * c->hd;
    double *kd = (double *)xmalloc(sizeof(double) * (kvn + 1)), *vd = (double *)xmalloc(sizeof(double) * (kvn + 1));
    for (size_t e = 0; e < kvn; ++e) {
      kd[e] = w.kf[(size_t)w.kv_off[i] * c->hkv * c->hd + e];
      vd[e] = w.vf[(size_t)w.kv_off[i] * c->hkv * c->hd + e];
    }
    size_t qoff = (size_t)w.qo_indptr[i] * c->hq * c->hd;
    oracle_attention(&po, q->qo_len, q->kv_len, qd + qoff, kd, vd, NULL, 0, od + qoff,
                     ld + (size_t)w.qo_indptr[i] * c->hq);
    free(kd), free(vd);
  }
  for (int r = 0; r < c->ranks; ++r) {
    EXPECT(jobs[r].plan_status == FI_SUCCESS && jobs[r].run_status == FI_SUCCESS,
           "%s rank %d: plan %s run %s: %s", what, r, fi_status_string(jobs[r].plan_status),
           fi_status_string(jobs[r].run_status), jobs[r].message);
    if (jobs[r].plan_status || jobs[r].run_status) continue;
    int bad_bits = 0, bad_oracle = 0;
    for (size_t e = 0; e < on; ++e) {
      float got = fi_load_f32(w.rk[r].o, c->dt, (int64_t)e);
      float ref = fi_load_f32(ref_o, c->dt, (int64_t)e);
      if (memcmp(&got, &ref, sizeof got) != 0) ++bad_bits;
      if (!close_enough(got, od[e], atol, rtol)) ++bad_oracle;
    }
    for (size_t e = 0; e < (size_t)w.total_qo * c->hq; ++e) {
      if (memcmp(&w.rk[r].lse[e], &ref_lse[e], sizeof(float)) != 0) ++bad_bits;
      if (!close_enough(w.rk[r].lse[e], ld[e], 1e-3, 1e-3)) ++bad_oracle;
    }
    EXPECT(bad_bits == 0, "%s rank %d: %d elements differ from the single-rank run's bits", what,
           r, bad_bits);
    EXPECT(bad_oracle == 0, "%s rank %d: %d elements off the float64 oracle", what, r, bad_oracle);
  }
  free(qd), free(od), free(ld), free(ref_o), free(ref_lse);
  free_world(&w);
}

/* The bad-input checks of one world: `modes` per rank; what each rank must report. */
static void check_failure(const scase *c, const int *modes, int64_t timeout_ms,
                          const fi_status *want_plan, const fi_status *want_run,
                          const char *const *want_text) {
  world w;
  make_world(&w, c);
  w.p.kv_shards = c->ranks;
  char what[192];
  describe(c, what, sizeof what);
  rank_job jobs[4];
  run_world(&w, modes, jobs, 1, timeout_ms);
  for (int r = 0; r < c->ranks; ++r) {
    if (modes[r] == MODE_ABSENT) continue;
    EXPECT(jobs[r].plan_status == want_plan[r] && jobs[r].run_status == want_run[r] &&
               (!want_text[r] || strstr(jobs[r].message, want_text[r])),
           "%s rank %d (mode %d): plan %s run %s \"%s\"; want plan %s run %s with \"%s\"",
           what, r, modes[r], fi_status_string(jobs[r].plan_status),
           fi_status_string(jobs[r].run_status), jobs[r].message,
           fi_status_string(want_plan[r]), fi_status_string(want_run[r]),
           want_text[r] ? want_text[r] : "");
  }
  free_world(&w);
}

static void check_bad_input(void) {
  const scase base = {2, 1, 3, 8, 2, 64, 16, 0, 32, FI_DTYPE_F16, 0.f, 99};
  /* ranks that disagree: every rank's plan fails, naming the other rank */
  {
    const int modes[2] = {MODE_OK, MODE_OTHER_SPLIT};
    const fi_status wp[2] = {FI_ERROR_COMM, FI_ERROR_COMM}, wr[2] = {FI_ERROR_COMM, FI_ERROR_COMM};
    const char *wt[2] = {"rank 1 has", "rank 0 has"};
    check_failure(&base, modes, 60000, wp, wr, wt);
  }
  /* a rank whose plan fails: its own error; the other gets its message */
  {
    const int modes[2] = {MODE_BAD_PAGES, MODE_OK};
    const fi_status wp[2] = {FI_ERROR_INVALID_ARGUMENT, FI_ERROR_COMM};
    const fi_status wr[2] = {FI_ERROR_INVALID_ARGUMENT, FI_ERROR_COMM};
    const char *wt[2] = {NULL, "rank 0 failed its plan with FI_ERROR_INVALID_ARGUMENT"};
    check_failure(&base, modes, 60000, wp, wr, wt);
  }
  /* a rank whose run fails: it still joins; the other's run fails naming it */
  {
    const int modes[2] = {MODE_OK, MODE_BAD_RUN};
    const fi_status wp[2] = {FI_SUCCESS, FI_SUCCESS};
    const fi_status wr[2] = {FI_ERROR_COMM, FI_ERROR_INVALID_ARGUMENT};
    const char *wt[2] = {"rank 1 failed its run with FI_ERROR_INVALID_ARGUMENT", "q"};
    check_failure(&base, modes, 60000, wp, wr, wt);
  }
  /* a rank whose workspace is too small: every rank's plan fails alike, names the size,
   * and after every rank resized to it the step runs */
  {
    world w;
    make_world(&w, &base);
    w.p.kv_shards = base.ranks;
    rank_job jobs[2];
    const int modes[2] = {MODE_SMALL_WS, MODE_OK};
    run_world(&w, modes, jobs, 1, 60000);
    for (int r = 0; r < 2; ++r)
      EXPECT(jobs[r].plan_status == FI_SUCCESS && jobs[r].run_status == FI_SUCCESS &&
                 jobs[r].retries == 1,
             "small workspace on rank 0: rank %d plan %s run %s after %d retries: %s", r,
             fi_status_string(jobs[r].plan_status), fi_status_string(jobs[r].run_status),
             jobs[r].retries, jobs[r].message);
    free_world(&w);
  }
  /* a rank that never joins: the other's plan times out, no hang */
  {
    const int modes[2] = {MODE_OK, MODE_ABSENT};
    const fi_status wp[2] = {FI_ERROR_COMM, FI_SUCCESS}, wr[2] = {FI_ERROR_COMM, FI_SUCCESS};
    const char *wt[2] = {"did not join the exchange in time", NULL};
    check_failure(&base, modes, 300, wp, wr, wt);
  }
  /* the wrong communicator, none, refused features, device plans */
  fi_context *ctx = NULL;
  fi_context_create(FI_BACKEND_HOST, &ctx);
  fi_comm *comms[3];
  EXPECT_OK(fi_comm_create_local_group(3, comms), ctx);
  fi_comm_set_timeout_ms(comms[0], 50); /* the other two ranks never plan */
  fi_attention_params p = fi_attention_params_default(8, 2, 64);
  p.page_size = 16;
  p.kv_shards = 2;
  int32_t indptr[2] = {0, 1}, indices[1] = {0}, last[1] = {5};
  fi_page_table pt = {indptr, indices, last};
  char ws[1 << 16];
  fi_plan plan;
  EXPECT_ERR(fi_decode_plan(ctx, &p, 1, &pt, 1, NULL, ws, sizeof ws, &plan),
             FI_ERROR_INVALID_ARGUMENT, "no communicator", "fi_context_set_comm");
  EXPECT_OK(fi_context_set_comm(ctx, comms[0]), ctx);
  EXPECT_ERR(fi_decode_plan(ctx, &p, 1, &pt, 1, NULL, ws, sizeof ws, &plan),
             FI_ERROR_INVALID_ARGUMENT, "kv_shards = 2", "communicator has 3 ranks");
  p.kv_shards = 3;
  p.pos_encoding = FI_POS_ROPE_LLAMA;
  EXPECT_ERR(fi_decode_plan(ctx, &p, 1, &pt, 1, NULL, ws, sizeof ws, &plan),
             FI_ERROR_UNSUPPORTED, "RoPE", "key positions are per shard");
  p.pos_encoding = FI_POS_NONE;
  p.window_left = 8;
  EXPECT_ERR(fi_decode_plan(ctx, &p, 1, &pt, 1, NULL, ws, sizeof ws, &plan),
             FI_ERROR_UNSUPPORTED, "sliding window");
  p.window_left = -1;
  fi_tiles t = {1, 16, 1, FI_CORES_CUDA};
  EXPECT_ERR(fi_decode_plan_device(ctx, &p, 1, &pt, 1, 1, &t, ws, sizeof ws, &plan),
             FI_ERROR_UNSUPPORTED, "kv_shards = 3", "fi_decode_plan");
  p.kv_shards = -1;
  size_t bytes;
  EXPECT_ERR(fi_decode_workspace_size(ctx, &p, 4, &bytes), FI_ERROR_INVALID_ARGUMENT,
             "kv_shards = -1");
  fi_comm *nc = NULL;
  fi_status st = fi_comm_wrap_nccl(NULL, &nc);
  EXPECT(st == FI_ERROR_INVALID_ARGUMENT, "fi_comm_wrap_nccl(NULL) -> %s", fi_status_string(st));
  for (int r = 0; r < 3; ++r) fi_comm_destroy(comms[r]);
  fi_context_destroy(ctx);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 60;
  rng g = {20261127};
  static const int groups[][2] = {{4, 4}, {8, 2}, {6, 1}, {12, 4}, {4, 1}};
  static const int pages[] = {1, 3, 16, 32};
  static const fi_dtype dts[] = {FI_DTYPE_F16, FI_DTYPE_BF16, FI_DTYPE_F32};
  for (int i = 0; i < n; ++i) {
    scase c;
    c.ranks = (int)rng_int(&g, 1, 4);
    c.decode = (int)rng_int(&g, 0, 1);
    c.batch = (int)rng_int(&g, 1, 5);
    int gi = (int)rng_int(&g, 0, 4);
    c.hq = groups[gi][0];
    c.hkv = groups[gi][1];
    c.hd = rng_int(&g, 0, 1) ? 64 : 128;
    c.ps = pages[rng_int(&g, 0, 3)];
    c.causal = !c.decode && rng_int(&g, 0, 1);
    c.split = (int)(c.ps * rng_int(&g, 1, 4) + (rng_int(&g, 0, 1) ? 0 : 1)); /* rounded up */
    c.dt = dts[rng_int(&g, 0, 2)];
    c.cap = rng_int(&g, 0, 3) == 0 ? 20.f : 0.f;
    c.seed = rng_next(&g);
    check_case(&c);
  }
  check_bad_input();
  return test_finish("test_shard");
}
