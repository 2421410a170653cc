/* test/gpu/test_shard_gpu.c -- context parallelism on CUDA: R ranks (one GPU each, one host
 * thread each, an NCCL communicator made from a unique id), each holding a contiguous
 * segment of every request's KV in its own paged cache on its own device.
 *
 * For each random configuration (decode and paged prefill, causal or not, GQA groups,
 * head_dim 64 / 128, f16 / bf16, soft cap, pages of 16 or 32, a fixed split the segments
 * align to, empty segments) every rank's o and lse (poisoned before each run) are checked
 *  - against the host backend's run of the whole cache (every element, dtype bounds);
 *  - bit for bit against the single-GPU run of the whole cache on device 0 with the same
 *    fixed split and the same tiles (runtime.h's determinism contract);
 *  - bit for bit between two runs of the same plan.
 * Then a rank whose run fails (NULL q): it still joins the exchange, and the other rank's
 * merge writes NaN and records the failure, which fi_plan_device_status reports.
 * R = the number of devices (at most 4; FI_TEST_SHARD_RANKS overrides); one device runs
 * R = 1 (NCCL cannot put two ranks of one communicator on one GPU). Exit 77 (skipped)
 * without a device or without NCCL. FI_TEST_SHARD_CONFIGS (default 50), FI_TEST_SEED. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "gpu_common.h"

enum { MAX_RANKS = 4 };

typedef struct scase {
  int ranks, decode, batch, hq, hkv, hd, ps, causal, split;
  fi_dtype dt;
  float cap;
} scase;

typedef struct rank_state {
  /* host copies */
  void *k, *v; /* [num_pages, ps, hkv, hd] */
  int32_t num_pages;
  int32_t *indptr, *indices, *last;
  /* device */
  int device;
  fi_context *ctx;
  fi_comm *comm;
  void *dk, *dv, *dq, *dqo_indptr, *do_, *dlse, *ws;
  int32_t *dindptr, *dindices, *dlast;
  size_t ws_bytes;
  fi_plan plan;
  /* results */
  void *o, *o2;
  float *lse, *lse2;
  fi_status plan_status, run_status, device_status;
  char message[512];
} rank_state;

typedef struct world {
  scase c;
  fi_attention_params p;
  int64_t *seg; /* [batch][ranks + 1] segment starts */
  int64_t *qo_len, *kv_len;
  int32_t *qo_indptr;
  int64_t total_qo;
  void *q;      /* host [total_qo, hq, hd] */
  void *kvk, *kvv; /* host, the whole KV: [sum kv, hkv, hd] */
  int64_t *kv_off;
  rank_state rk[MAX_RANKS];
  fi_tiles tiles;
  int bad_run_rank; /* -1: none */
} world;

static size_t esz(fi_dtype d) { return fi_dtype_size(d); }
static int64_t seg(const world *w, int i, int r) { return w->seg[(size_t)i * (w->c.ranks + 1) + r]; }

static void build_rank_cache(world *w, int r) {
  const scase *c = &w->c;
  rank_state *rs = &w->rk[r];
  int32_t *len = (int32_t *)malloc(sizeof(int32_t) * (size_t)c->batch);
  for (int i = 0; i < c->batch; ++i) len[i] = (int32_t)(seg(w, i, r + 1) - seg(w, i, r));
  gpu_pages pg = gpu_make_pages(c->batch, len, c->ps, 2);
  rs->indptr = pg.indptr;
  rs->indices = pg.indices;
  rs->last = pg.last_page_len;
  rs->num_pages = pg.num_pages;
  const size_t row = (size_t)c->hkv * c->hd, pe = (size_t)c->ps * row;
  const size_t bytes = pe * (size_t)rs->num_pages * esz(c->dt);
  rs->k = malloc(bytes);
  rs->v = malloc(bytes);
  gpu_fill_random(rs->k, c->dt, pe * (size_t)rs->num_pages); /* unread slots: random */
  gpu_fill_random(rs->v, c->dt, pe * (size_t)rs->num_pages);
  for (int i = 0; i < c->batch; ++i)
    for (int64_t t = seg(w, i, r); t < seg(w, i, r + 1); ++t) {
      int64_t lt = t - seg(w, i, r);
      int32_t page = rs->indices[rs->indptr[i] + lt / c->ps];
      size_t dst = ((size_t)page * c->ps + (size_t)(lt % c->ps)) * row;
      size_t src = (size_t)(w->kv_off[i] + t) * row;
      memcpy((char *)rs->k + dst * esz(c->dt), (char *)w->kvk + src * esz(c->dt), row * esz(c->dt));
      memcpy((char *)rs->v + dst * esz(c->dt), (char *)w->kvv + src * esz(c->dt), row * esz(c->dt));
    }
  free(len);
}

static void make_world(world *w, const scase *c) {
  memset(w, 0, sizeof *w);
  w->c = *c;
  w->bad_run_rank = -1;
  fi_attention_params p = fi_attention_params_default(c->hq, c->hkv, c->hd);
  p.page_size = c->ps;
  p.q_dtype = p.kv_dtype = c->dt;
  p.mask_mode = c->causal ? FI_MASK_CAUSAL : FI_MASK_NONE;
  p.logits_soft_cap = c->cap;
  p.fixed_split_size = c->split;
  w->p = p;
  const int64_t chunk = (c->split + c->ps - 1) / c->ps * c->ps;
  w->seg = (int64_t *)calloc((size_t)c->batch * (c->ranks + 1), sizeof(int64_t));
  w->qo_len = (int64_t *)malloc(sizeof(int64_t) * (size_t)c->batch);
  w->kv_len = (int64_t *)malloc(sizeof(int64_t) * (size_t)c->batch);
  w->kv_off = (int64_t *)malloc(sizeof(int64_t) * (size_t)c->batch);
  w->qo_indptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(c->batch + 1));
  w->qo_indptr[0] = 0;
  int64_t kv_sum = 0;
  for (int i = 0; i < c->batch; ++i) {
    int64_t *s = w->seg + (size_t)i * (c->ranks + 1);
    w->qo_len[i] = c->decode ? 1 : gpu_rand_int(0, 40);
    s[0] = 0;
    for (int r = 0; r < c->ranks - 1; ++r) s[r + 1] = s[r] + chunk * gpu_rand_int(0, 6);
    int lo = c->causal ? (int)w->qo_len[i] : 0, hi = (int)(3 * chunk + 17);
    int64_t tail = gpu_rand_int(lo, hi > lo ? hi : lo);
    if (i == 0 && c->ranks > 1) tail = c->causal ? lo : 0; /* short last segments */
    w->kv_len[i] = s[c->ranks - 1] + tail;
    s[c->ranks] = w->kv_len[i];
    w->kv_off[i] = kv_sum;
    kv_sum += w->kv_len[i];
    w->qo_indptr[i + 1] = w->qo_indptr[i] + (int32_t)w->qo_len[i];
  }
  w->total_qo = w->qo_indptr[c->batch];
  size_t qn = (size_t)w->total_qo * c->hq * c->hd, kn = (size_t)kv_sum * c->hkv * c->hd;
  w->q = malloc(qn * esz(c->dt) + 16);
  gpu_fill_random(w->q, c->dt, qn);
  w->kvk = malloc(kn * esz(c->dt) + 16);
  w->kvv = malloc(kn * esz(c->dt) + 16);
  gpu_fill_random(w->kvk, c->dt, kn);
  gpu_fill_random(w->kvv, c->dt, kn);
  for (int r = 0; r < c->ranks; ++r) build_rank_cache(w, r);
}

static void free_world(world *w) {
  for (int r = 0; r < w->c.ranks; ++r) {
    rank_state *rs = &w->rk[r];
    free(rs->k), free(rs->v), free(rs->indptr), free(rs->indices), free(rs->last);
    free(rs->o), free(rs->o2), free(rs->lse), free(rs->lse2);
  }
  free(w->seg), free(w->qo_len), free(w->kv_len), free(w->kv_off), free(w->qo_indptr);
  free(w->q), free(w->kvk), free(w->kvv);
}

static fi_paged_kv_cache cache_view(const scase *c, void *k, void *v, int32_t pages) {
  int64_t shape[4] = {pages, c->ps, c->hkv, c->hd};
  fi_paged_kv_cache kv;
  kv.k = fi_tensor_contiguous(k, c->dt, 4, shape);
  kv.v = fi_tensor_contiguous(v, c->dt, 4, shape);
  kv.layout = FI_LAYOUT_NHD;
  return kv;
}

/* Plans (host arrays) and runs `runs` times on ctx: outputs downloaded into o / lse (and
 * o2 / lse2 for the second run). Buffers on the current device. Returns the run status. */
static fi_status plan_run(world *w, fi_context *ctx, const fi_attention_params *p,
                          const fi_tiles *tiles, rank_state *rs, int runs, int null_q) {
  const scase *c = &w->c;
  const size_t pe = (size_t)c->ps * c->hkv * c->hd * esz(c->dt);
  const size_t on = (size_t)w->total_qo * c->hq * c->hd;
  int64_t kv_total = 0;
  for (int i = 0; i < c->batch; ++i) kv_total += w->kv_len[i];
  fi_status s = c->decode ? fi_decode_workspace_size_kv(ctx, p, c->batch, kv_total, &rs->ws_bytes)
                          : fi_prefill_workspace_size(ctx, p, c->batch,
                                                      w->total_qo * (p->kv_shards ? 8 : 1),
                                                      &rs->ws_bytes);
  if (s != FI_SUCCESS) return rs->plan_status = s;
  rs->dk = gpu_upload(rs->k, pe * (size_t)rs->num_pages);
  rs->dv = gpu_upload(rs->v, pe * (size_t)rs->num_pages);
  rs->dq = gpu_upload(w->q, on * esz(c->dt));
  rs->dqo_indptr = gpu_upload(w->qo_indptr, sizeof(int32_t) * (size_t)(c->batch + 1));
  rs->dindptr = (int32_t *)gpu_upload(rs->indptr, sizeof(int32_t) * (size_t)(c->batch + 1));
  rs->dindices = (int32_t *)gpu_upload(rs->indices, sizeof(int32_t) * (size_t)(rs->indptr[c->batch] + 1));
  rs->dlast = (int32_t *)gpu_upload(rs->last, sizeof(int32_t) * (size_t)c->batch);
  GPU_CK(cudaMalloc(&rs->ws, rs->ws_bytes));
  rs->do_ = gpu_alloc_poisoned(on * esz(c->dt) + 16);
  rs->dlse = gpu_alloc_poisoned(sizeof(float) * (size_t)w->total_qo * c->hq + 16);
  fi_page_table hp = {rs->indptr, rs->indices, rs->last};
  if (c->decode)
    s = fi_decode_plan(ctx, p, c->batch, &hp, rs->num_pages, tiles, rs->ws, rs->ws_bytes, &rs->plan);
  else
    s = fi_paged_prefill_plan(ctx, p, c->batch, w->qo_indptr, &hp, rs->num_pages, NULL, tiles,
                              rs->ws, rs->ws_bytes, &rs->plan);
  rs->plan_status = s;
  if (s == FI_SUCCESS) {
    int64_t qs[3] = {w->total_qo, c->hq, c->hd}, ls[2] = {w->total_qo, c->hq};
    fi_tensor q = fi_tensor_contiguous(rs->dq, c->dt, 3, qs);
    fi_tensor o = fi_tensor_contiguous(rs->do_, c->dt, 3, qs);
    fi_tensor lse = fi_tensor_contiguous(rs->dlse, FI_DTYPE_F32, 2, ls);
    fi_paged_kv_cache kv = cache_view(c, rs->dk, rs->dv, rs->num_pages);
    fi_page_table dp = {rs->dindptr, rs->dindices, rs->dlast};
    rs->o = malloc(on * esz(c->dt) + 16), rs->o2 = malloc(on * esz(c->dt) + 16);
    rs->lse = (float *)malloc(sizeof(float) * ((size_t)w->total_qo * c->hq + 1));
    rs->lse2 = (float *)malloc(sizeof(float) * ((size_t)w->total_qo * c->hq + 1));
    for (int it = 0; it < runs && s == FI_SUCCESS; ++it) {
      GPU_CK(cudaMemset(rs->do_, 0xff, on * esz(c->dt)));
      GPU_CK(cudaMemset(rs->dlse, 0xff, sizeof(float) * (size_t)w->total_qo * c->hq));
      const fi_tensor *qa = null_q ? NULL : &q;
      s = c->decode ? fi_decode_run(ctx, &rs->plan, qa, &kv, &dp, &o, &lse)
                    : fi_paged_prefill_run(ctx, &rs->plan, qa, (const int32_t *)rs->dqo_indptr,
                                           &kv, &dp, NULL, &o, &lse);
      if (s != FI_SUCCESS) break;
      GPU_CK(cudaDeviceSynchronize());
      gpu_download(it ? rs->o2 : rs->o, rs->do_, on * esz(c->dt));
      gpu_download(it ? rs->lse2 : rs->lse, rs->dlse, sizeof(float) * (size_t)w->total_qo * c->hq);
    }
  }
  rs->device_status = fi_plan_device_status(ctx, &rs->plan);
  if (s == FI_SUCCESS && rs->device_status != FI_SUCCESS) s = rs->device_status;
  snprintf(rs->message, sizeof rs->message, "%s", fi_last_error(ctx));
  cudaFree(rs->dk), cudaFree(rs->dv), cudaFree(rs->dq), cudaFree(rs->dqo_indptr);
  cudaFree(rs->dindptr), cudaFree(rs->dindices), cudaFree(rs->dlast), cudaFree(rs->ws);
  cudaFree(rs->do_), cudaFree(rs->dlse);
  return s;
}

typedef struct rank_arg {
  world *w;
  int rank;
} rank_arg;

static void *rank_main(void *arg) {
  rank_arg *a = (rank_arg *)arg;
  world *w = a->w;
  rank_state *rs = &w->rk[a->rank];
  GPU_CK(cudaSetDevice(rs->device));
  rs->ctx = NULL;
  rs->plan_status = rs->run_status = FI_ERROR_BACKEND_UNAVAILABLE;
  if (fi_context_create(FI_BACKEND_CUDA, &rs->ctx) != FI_SUCCESS) return NULL;
  cudaStream_t st;
  GPU_CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  fi_context_set_stream(rs->ctx, st);
  fi_context_set_comm(rs->ctx, rs->comm);
  fi_attention_params p = w->p;
  p.kv_shards = w->c.ranks;
  rs->run_status = plan_run(w, rs->ctx, &p, &w->tiles, rs, w->bad_run_rank >= 0 ? 1 : 2,
                            a->rank == w->bad_run_rank);
  fi_context_destroy(rs->ctx);
  cudaStreamDestroy(st);
  return NULL;
}

/* The single-GPU run of the whole cache (device 0), and the host backend's. */
static fi_status whole_cache_run(world *w, fi_backend backend, fi_tiles *tiles, void *o,
                                 float *lse) {
  const scase *c = &w->c;
  rank_state one;
  memset(&one, 0, sizeof one);
  int32_t *len = (int32_t *)malloc(sizeof(int32_t) * (size_t)c->batch);
  for (int i = 0; i < c->batch; ++i) len[i] = (int32_t)w->kv_len[i];
  gpu_pages pg = gpu_make_pages(c->batch, len, c->ps, 1);
  one.indptr = pg.indptr, one.indices = pg.indices, one.last = pg.last_page_len;
  one.num_pages = pg.num_pages;
  const size_t row = (size_t)c->hkv * c->hd, pe = (size_t)c->ps * row;
  one.k = calloc(pe * (size_t)one.num_pages, esz(c->dt));
  one.v = calloc(pe * (size_t)one.num_pages, esz(c->dt));
  for (int i = 0; i < c->batch; ++i)
    for (int64_t t = 0; t < w->kv_len[i]; ++t) {
      int32_t page = one.indices[one.indptr[i] + t / c->ps];
      size_t dst = ((size_t)page * c->ps + (size_t)(t % c->ps)) * row, src = (size_t)(w->kv_off[i] + t) * row;
      memcpy((char *)one.k + dst * esz(c->dt), (char *)w->kvk + src * esz(c->dt), row * esz(c->dt));
      memcpy((char *)one.v + dst * esz(c->dt), (char *)w->kvv + src * esz(c->dt), row * esz(c->dt));
    }
  free(len);
  fi_context *ctx = NULL;
  GPU_CK(cudaSetDevice(0));
  fi_status s = fi_context_create(backend, &ctx);
  if (s == FI_SUCCESS) {
    if (backend == FI_BACKEND_HOST) {
      /* host memory is the host backend's device memory: run through the same helper by
       * pointing the "device" buffers at host copies */
      const size_t on = (size_t)w->total_qo * c->hq * c->hd;
      fi_page_table hp = {one.indptr, one.indices, one.last};
      size_t bytes = 0;
      int64_t kv_total = 0;
      for (int i = 0; i < c->batch; ++i) kv_total += w->kv_len[i];
      s = c->decode ? fi_decode_workspace_size_kv(ctx, &w->p, c->batch, kv_total, &bytes)
                    : fi_prefill_workspace_size(ctx, &w->p, c->batch, w->total_qo, &bytes);
      void *ws = malloc(bytes + 16);
      fi_plan plan;
      if (s == FI_SUCCESS)
        s = c->decode ? fi_decode_plan(ctx, &w->p, c->batch, &hp, one.num_pages, NULL, ws, bytes, &plan)
                      : fi_paged_prefill_plan(ctx, &w->p, c->batch, w->qo_indptr, &hp, one.num_pages,
                                              NULL, NULL, ws, bytes, &plan);
      if (s == FI_SUCCESS) {
        int64_t qs[3] = {w->total_qo, c->hq, c->hd}, ls[2] = {w->total_qo, c->hq};
        fi_tensor q = fi_tensor_contiguous(w->q, c->dt, 3, qs);
        fi_tensor ot = fi_tensor_contiguous(o, c->dt, 3, qs);
        fi_tensor lt = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
        fi_paged_kv_cache kv = cache_view(c, one.k, one.v, one.num_pages);
        memset(o, 0xff, on * esz(c->dt));
        s = c->decode ? fi_decode_run(ctx, &plan, &q, &kv, &hp, &ot, &lt)
                      : fi_paged_prefill_run(ctx, &plan, &q, w->qo_indptr, &kv, &hp, NULL, &ot, &lt);
      }
      free(ws);
    } else {
      s = plan_run(w, ctx, &w->p, NULL, &one, 1, 0);
      if (s == FI_SUCCESS) {
        *tiles = one.plan.tiles;
        memcpy(o, one.o, (size_t)w->total_qo * c->hq * c->hd * esz(c->dt));
        memcpy(lse, one.lse, sizeof(float) * (size_t)w->total_qo * c->hq);
      }
    }
    if (s != FI_SUCCESS)
      fprintf(stderr, "  whole-cache %s run: %s: %s\n", backend == FI_BACKEND_HOST ? "host" : "CUDA",
              fi_status_string(s), fi_last_error(ctx));
    fi_context_destroy(ctx);
  }
  free(one.k), free(one.v), free(one.indptr), free(one.indices), free(one.last);
  free(one.o), free(one.o2), free(one.lse), free(one.lse2);
  return s;
}

/* One NCCL communicator per rank for the whole test (made once, concurrently). */
static fi_comm *g_comms[MAX_RANKS];
typedef struct init_arg {
  const uint8_t *id;
  int ranks, rank;
  fi_status status;
} init_arg;
static void *init_main(void *arg) {
  init_arg *a = (init_arg *)arg;
  GPU_CK(cudaSetDevice(a->rank));
  a->status = fi_comm_init_nccl(a->id, a->ranks, a->rank, &g_comms[a->rank]);
  if (a->status == FI_SUCCESS) fi_comm_set_timeout_ms(g_comms[a->rank], 20000);
  else fprintf(stderr, "fi_comm_init_nccl(rank %d): %s\n", a->rank, fi_last_error(NULL));
  return NULL;
}
static void make_comms(const uint8_t *id, int ranks) {
  pthread_t th[MAX_RANKS];
  init_arg args[MAX_RANKS];
  for (int r = 0; r < ranks; ++r) {
    args[r].id = id, args[r].ranks = ranks, args[r].rank = r;
    pthread_create(&th[r], NULL, init_main, &args[r]);
  }
  for (int r = 0; r < ranks; ++r) pthread_join(th[r], NULL);
  for (int r = 0; r < ranks; ++r)
    if (args[r].status != FI_SUCCESS) exit(1);
}

static void run_ranks(world *w) {
  pthread_t th[MAX_RANKS];
  rank_arg args[MAX_RANKS];
  for (int r = 0; r < w->c.ranks; ++r) {
    w->rk[r].device = r;
    w->rk[r].comm = g_comms[r];
    args[r].w = w;
    args[r].rank = r;
    pthread_create(&th[r], NULL, rank_main, &args[r]);
  }
  for (int r = 0; r < w->c.ranks; ++r) pthread_join(th[r], NULL);
}

static void describe(const scase *c, char *buf, size_t n) {
  snprintf(buf, n, "%s R=%d batch=%d heads=%d/%d hd=%d page=%d %s cap=%g split=%d %s",
           c->decode ? "decode" : "prefill", c->ranks, c->batch, c->hq, c->hkv, c->hd, c->ps,
           c->causal ? "causal" : "none", (double)c->cap, c->split, fi_dtype_name(c->dt));
}

static int check_case(const scase *c, long long *bit_diffs) {
  world w;
  make_world(&w, c);
  char what[160];
  describe(c, what, sizeof what);
  const size_t on = (size_t)w.total_qo * c->hq * c->hd, ln = (size_t)w.total_qo * c->hq;
  void *one_o = malloc(on * esz(c->dt) + 16), *host_o = malloc(on * esz(c->dt) + 16);
  float *one_l = (float *)malloc(sizeof(float) * (ln + 1)), *host_l = (float *)malloc(sizeof(float) * (ln + 1));
  int failed = 0;
  if (whole_cache_run(&w, FI_BACKEND_CUDA, &w.tiles, one_o, one_l) != FI_SUCCESS ||
      whole_cache_run(&w, FI_BACKEND_HOST, NULL, host_o, host_l) != FI_SUCCESS) {
    fprintf(stderr, "FAIL %s: a whole-cache run failed\n", what);
    failed = 1;
  }
  if (!failed) run_ranks(&w);
  const double tol = c->dt == FI_DTYPE_BF16 ? 2e-2 : 4e-3;
  for (int r = 0; !failed && r < c->ranks; ++r) {
    rank_state *rs = &w.rk[r];
    if (rs->plan_status != FI_SUCCESS || rs->run_status != FI_SUCCESS) {
      fprintf(stderr, "FAIL %s rank %d: plan %s run %s: %s\n", what, r,
              fi_status_string(rs->plan_status), fi_status_string(rs->run_status), rs->message);
      failed = 1;
      break;
    }
    gpu_err e = {0, 0, 0, 0};
    char label[200];
    snprintf(label, sizeof label, "%s rank %d o", what, r);
    long long bad = gpu_compare_rows(label, rs->o, host_o, c->dt, w.total_qo * c->hq, c->hd, c->hd,
                                     tol, 0.05, &e);
    bad += gpu_compare_lse(rs->lse, host_l, (int64_t)ln, 1e-3, &e);
    long long diff = 0, again = 0;
    for (size_t i = 0; i < on * esz(c->dt); i += esz(c->dt))
      diff += memcmp((char *)rs->o + i, (char *)one_o + i, esz(c->dt)) != 0,
      again += memcmp((char *)rs->o + i, (char *)rs->o2 + i, esz(c->dt)) != 0;
    for (size_t i = 0; i < ln; ++i)
      diff += memcmp(&rs->lse[i], &one_l[i], 4) != 0, again += memcmp(&rs->lse[i], &rs->lse2[i], 4) != 0;
    *bit_diffs += diff;
    if (bad || diff || again) {
      fprintf(stderr, "FAIL %s rank %d: %lld elements off the host backend (max rel %.3g), %lld "
              "differ from the single-GPU run's bits, %lld between two runs\n", what, r, bad,
              e.max_rel, diff, again);
      failed = 1;
    }
  }
  free(one_o), free(host_o), free(one_l), free(host_l);
  free_world(&w);
  return failed;
}

/* A rank whose run fails joins the exchange; the others' merge writes NaN and records it. */
static int check_failed_run(int ranks) {
  scase c = {ranks, 1, 3, 8, 2, 128, 16, 0, 64, FI_DTYPE_F16, 0.f};
  world w;
  make_world(&w, &c);
  w.bad_run_rank = ranks - 1;
  fi_tiles *forced = &w.tiles; /* the ranks' own choice: plan the whole cache once */
  void *o = malloc((size_t)w.total_qo * c.hq * c.hd * 2 + 16);
  float *l = (float *)malloc(sizeof(float) * ((size_t)w.total_qo * c.hq + 1));
  if (whole_cache_run(&w, FI_BACKEND_CUDA, forced, o, l) != FI_SUCCESS) return 1;
  free(o), free(l);
  run_ranks(&w);
  int failed = 0;
  for (int r = 0; r < ranks; ++r) {
    rank_state *rs = &w.rk[r];
    int ok = r == w.bad_run_rank
                 ? rs->run_status == FI_ERROR_INVALID_ARGUMENT
                 : (rs->run_status == FI_ERROR_COMM && strstr(rs->message, "failed its run"));
    if (r != w.bad_run_rank && rs->o) {
      size_t on = (size_t)w.total_qo * c.hq * c.hd;
      for (size_t i = 0; i < on; ++i)
        if (!isnan(gpu_load(rs->o, c.dt, (int64_t)i))) ok = 0;
    }
    if (!ok) {
      fprintf(stderr, "FAIL failed-run check rank %d: run %s \"%s\"\n", r,
              fi_status_string(rs->run_status), rs->message);
      failed = 1;
    }
  }
  free_world(&w);
  return failed;
}

int main(void) {
  gpu_require_device("test_shard_gpu");
  setenv("NCCL_NVLS_ENABLE", "0", 0); /* no NVLink multicast on shared machines */
  uint8_t id[FI_COMM_ID_BYTES];
  if (fi_comm_nccl_unique_id(id) != FI_SUCCESS) {
    printf("test_shard_gpu: skipped: %s\n", fi_last_error(NULL));
    return 77;
  }
  int devices = 0;
  GPU_CK(cudaGetDeviceCount(&devices));
  int ranks = (int)gpu_env_u64("FI_TEST_SHARD_RANKS", (uint64_t)(devices < MAX_RANKS ? devices : MAX_RANKS));
  if (ranks < 1 || ranks > devices) ranks = 1;
  make_comms(id, ranks);
  const int configs = (int)gpu_env_u64("FI_TEST_SHARD_CONFIGS", 50);
  gpu_seed(gpu_env_u64("FI_TEST_SEED", 0x5eed5a4d));
  static const int groups[][2] = {{32, 8}, {8, 8}, {16, 2}, {12, 4}, {32, 4}};
  int failures = 0;
  long long bit_diffs = 0;
  for (int i = 0; i < configs; ++i) {
    scase c;
    c.ranks = ranks;
    c.decode = gpu_rand_int(0, 2) != 0;
    c.batch = gpu_rand_int(1, 8);
    int g = gpu_rand_int(0, 4);
    c.hq = groups[g][0], c.hkv = groups[g][1];
    c.hd = gpu_rand_int(0, 1) ? 128 : 64;
    c.ps = gpu_rand_int(0, 2) ? 16 : 32;
    c.causal = !c.decode && gpu_rand_int(0, 1);
    c.split = c.ps * gpu_rand_int(1, 8);
    c.dt = gpu_rand_int(0, 1) ? FI_DTYPE_F16 : FI_DTYPE_BF16;
    c.cap = gpu_rand_int(0, 3) == 0 ? 30.f : 0.f;
    failures += check_case(&c, &bit_diffs);
  }
  if (ranks > 1) failures += check_failed_run(ranks);
  for (int r = 0; r < ranks; ++r) fi_comm_destroy(g_comms[r]);
  printf("test_shard_gpu: %d ranks, %d configurations, %d failed (%lld elements differed from the "
         "single-GPU bits)\n", ranks, configs, failures, bit_diffs);
  return failures ? 1 : 0;
}
