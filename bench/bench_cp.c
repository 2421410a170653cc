/* bench/bench_cp.c -- context-parallel decode: one long-context decode step on one GPU vs
 * the same step with every request's KV sharded over 2 GPUs (runtime.h, "Context
 * parallelism": params.kv_shards, fi_comm over NCCL).
 *
 * Rows (fp16, 32 qo heads / 8 kv heads, head_dim 128, page 16, NHD, one query per request):
 * 1 x 1,048,576 tokens (split S = 8192), 64 x 131,072 and 16 x 131,072 (S = 16384). The KV
 * cache is random (never zeros): page j of request i holds a copy of pool page
 * hash(i, j) of a random 64 MiB pool uploaded to each device, so that the single GPU and the
 * ranks hold the same keys behind their own shuffled page tables.
 *
 * For each row:
 *  1. One GPU (device 0, the driver's context and stream): the whole cache; fi_decode_plan
 *     with the fixed split S (its tiles, chosen by the heuristics, are then forced on every
 *     other plan of the row) and with the automatic split (fixed_split_size = 0, its own
 *     tiles). Each plan made once; fi_bench_time_ms times fi_decode_run (median of the
 *     driver's repeats after its warm-up). GB/s = (K and V of every token + q + o) / time, and
 *     its fraction of device 0's copy ceiling (measured by the driver in this process).
 *  2. Two ranks (devices 0 and 1, a host thread each: cudaSetDevice, an fi CUDA context on
 *     its own stream, an NCCL communicator made with fi_comm_init_nccl from one unique id).
 *     Each request's KV is cut in two contiguous segments: rank 0 the first half rounded
 *     down to a multiple of the chunk (S rounded up to the page size), rank 1 the rest; each
 *     rank builds its own paged cache of its segments. Sharded plan: kv_shards = 2, fixed
 *     split S, the single GPU's tiles, a workspace of the same size on both ranks
 *     (fi_decode_workspace_size_kv for the larger rank's tokens), planned concurrently (the
 *     plan exchanges a signature). Timing: both threads loop {pthread barrier (not timed);
 *     event; fi_decode_run; event}; per iteration the max over ranks of the event time;
 *     median over the repeats after a warm-up of >= the driver's warm-up repeats and
 *     FI_BENCH_WARM_MS (counted in iterations, the same on both ranks: every sharded run
 *     is a collective). The same loop times a local, unsharded decode of each rank's own
 *     pages (kv_shards = 0, same split and tiles): overhead = step - local step (the
 *     exchange and the merge over ranks, and waiting for the slower rank).
 *     Speedup = one GPU (fixed split S) / 2-rank step; also vs the automatic split.
 *  3. Correctness: the o of both ranks against the single GPU's o with split S, fp16 bit
 *     for bit (runtime.h promises bit-identity with the same split and tiles).
 * Each row's buffers are freed before the next (64 x 128k: 34 GB on one GPU, 17 GB a rank).
 * Needs >= 2 CUDA devices for the 2-rank part (with one, only the single-GPU columns).
 *
 * Output: one line per row (GPUs, copy ceilings, S, single-GPU fixed and automatic split:
 * us, GB/s, % of copy; 2 ranks: step us, aggregate GB/s and % of the two copy ceilings,
 * speedups, local step and overhead, bit-identity), then an indented detail line (variants,
 * work units, per-rank times, workspace sizes).
 *
 * Environment: FI_BENCH_CP_SPLIT=S overrides every row's split (tokens, > 0);
 * FI_BENCH_CP_ROWS="batch,kv_len[,S] ..." times these rows instead (the runtime dlopens
 * libnccl.so.2 from the library path). NCCL_NVLS_ENABLE is forced to 0 before NCCL is
 * first used (NVLink multicast must stay off on the device machines). */
#define _POSIX_C_SOURCE 200809L /* setenv, pthread barriers */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "bench.h"

enum {
  CP_QO_HEADS = 32,
  CP_KV_HEADS = 8,
  CP_HEAD_DIM = 128,
  CP_PAGE = 16,
  CP_RANKS = 2,
  CP_POOL_PAGES = 1024, /* 64 MiB of random pages */
  CP_MAX_ROWS = 16,
};

/* Bytes of one page of the combined cache [pages, 2, page, kv_heads, head_dim] (fp16). */
static const size_t cp_page_bytes = (size_t)2 * CP_PAGE * CP_KV_HEADS * CP_HEAD_DIM * 2;

/* ------------------------------------------------------------ rows ---------------- */

typedef struct cp_row {
  int batch;
  int64_t kv_len;
  int split; /* S, tokens */
} cp_row;

/* A row's derived facts: the chunk and the token range [seg[r], seg[r + 1]) of every
 * request on rank r. */
typedef struct cp_problem {
  cp_row row;
  int64_t chunk;
  int64_t seg[CP_RANKS + 1];
  double bytes; /* K and V of every token, q read, o written */
} cp_problem;

static cp_problem cp_problem_of(cp_row row) {
  cp_problem pr;
  memset(&pr, 0, sizeof pr);
  pr.row = row;
  pr.chunk = ((int64_t)row.split + CP_PAGE - 1) / CP_PAGE * CP_PAGE;
  pr.seg[0] = 0;
  pr.seg[1] = row.kv_len / 2 / pr.chunk * pr.chunk;
  pr.seg[2] = row.kv_len;
  const double qo_bytes = (double)row.batch * CP_QO_HEADS * CP_HEAD_DIM * 2;
  pr.bytes = (double)row.batch * (double)row.kv_len * CP_KV_HEADS * CP_HEAD_DIM * 2 * 2 +
             2 * qo_bytes;
  return pr;
}

static int cp_default_split(int64_t kv_len) { return kv_len >= (1 << 20) ? 8192 : 16384; }

/* The rows to time: FI_BENCH_CP_ROWS or the three default ones; FI_BENCH_CP_SPLIT
 * overrides the split of every row that does not name its own. */
static int cp_rows(cp_row *rows) {
  int split_override = 0;
  const char *split_env = getenv("FI_BENCH_CP_SPLIT");
  if (split_env) {
    split_override = atoi(split_env);
    if (split_override <= 0) {
      fprintf(stderr, "cp: FI_BENCH_CP_SPLIT=%s: need a split size > 0 (tokens)\n", split_env);
      exit(1);
    }
  }
  int n = 0;
  const char *env = getenv("FI_BENCH_CP_ROWS");
  if (env) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *tok = strtok(buf, " "); tok && n < CP_MAX_ROWS; tok = strtok(NULL, " ")) {
      int batch = 0, split = 0;
      long long kv_len = 0;
      int got = sscanf(tok, "%d,%lld,%d", &batch, &kv_len, &split);
      if (got < 2 || batch <= 0 || kv_len <= 0 || kv_len > INT32_MAX ||
          (got == 3 && split <= 0)) {
        fprintf(stderr, "cp: bad row %s (batch,kv_len[,split])\n", tok);
        continue;
      }
      rows[n].batch = batch;
      rows[n].kv_len = kv_len;
      rows[n].split = got == 3 ? split : split_override ? split_override
                                                        : cp_default_split(kv_len);
      ++n;
    }
    return n;
  }
  static const cp_row defaults[] = {{1, 1 << 20, 0}, {64, 1 << 17, 0}, {16, 1 << 17, 0}};
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; ++i) {
    rows[n] = defaults[i];
    rows[n].split = split_override ? split_override : cp_default_split(defaults[i].kv_len);
    ++n;
  }
  return n;
}

/* ------------------------------------------------------ random data --------------- */

/* Host copies every device gets: the page pool and the queries of the largest row. */
typedef struct cp_source {
  uint16_t *pool; /* CP_POOL_PAGES pages */
  uint16_t *q;    /* [max_batch, qo_heads, head_dim] */
  int max_batch;
} cp_source;

/* fp16 values of magnitude in [0.125, 0.25) with random signs and mantissas (as
 * fi_bench_random_device: never zero, NaN or inf). */
static void cp_fill_random(uint16_t *h, size_t n, uint32_t seed) {
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    h[i] = (uint16_t)(0x3000u | ((x >> 16) & 0x83ffu));
  }
}

static cp_source cp_source_make(int max_batch) {
  cp_source s;
  s.max_batch = max_batch;
  const size_t pool_elems = (size_t)CP_POOL_PAGES * cp_page_bytes / 2;
  const size_t q_elems = (size_t)max_batch * CP_QO_HEADS * CP_HEAD_DIM;
  s.pool = (uint16_t *)malloc(pool_elems * 2);
  s.q = (uint16_t *)malloc(q_elems * 2);
  if (!s.pool || !s.q) {
    fprintf(stderr, "cp: out of host memory for the random pool\n");
    exit(1);
  }
  cp_fill_random(s.pool, pool_elems, 12345u);
  cp_fill_random(s.q, q_elems, 777u);
  return s;
}

static void cp_source_free(cp_source *s) {
  free(s->pool);
  free(s->q);
}

/* The pool page that page `page` (counted from the start of the request) of request
 * `request` copies: a hash of both, the same on every device. */
static size_t cp_pool_page(int request, int64_t page) {
  uint64_t z = ((uint64_t)(uint32_t)request << 32) + (uint64_t)page + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (size_t)(z % CP_POOL_PAGES);
}

/* ------------------------------------------------------ paged caches -------------- */

/* One device's paged cache of tokens [begin, end) of every request (its own page ids,
 * shuffled), with the page table on the host and on the device. */
typedef struct cp_cache {
  void *kv; /* [num_pages, 2, page, kv_heads, head_dim] */
  int32_t num_pages;
  int64_t tokens; /* sum over requests */
  int32_t *indptr, *indices, *last;
  int32_t *d_indptr, *d_indices, *d_last;
} cp_cache;

static void cp_shuffle(int32_t *a, int32_t n, uint32_t seed) {
  uint32_t x = seed ? seed : 1u;
  for (int32_t i = n - 1; i > 0; --i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    int32_t j = (int32_t)(x % (uint32_t)(i + 1)), t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* A device copy of a host buffer, complete when this returns (stream-ordered: the runs'
 * streams do not wait for the legacy default stream). */
static void *cp_device_copy(const void *host, size_t bytes, cudaStream_t stream) {
  void *d = NULL;
  FI_BENCH_CK(cudaMalloc(&d, bytes ? bytes : 16));
  if (bytes) FI_BENCH_CK(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, stream));
  FI_BENCH_CK(cudaStreamSynchronize(stream));
  return d;
}

/* The host page table: ceil(n / page) pages per request of n = end - begin tokens. */
static void cp_cache_table(cp_cache *c, int batch, int64_t begin, int64_t end, uint32_t seed) {
  const int64_t n = end - begin, pages_per = (n + CP_PAGE - 1) / CP_PAGE;
  if ((int64_t)batch * pages_per > INT32_MAX - 1) {
    fprintf(stderr, "cp: %d x %lld pages do not fit int32 page ids\n", batch,
            (long long)pages_per);
    exit(1);
  }
  const int32_t total = (int32_t)(batch * pages_per);
  c->num_pages = total > 0 ? total : 1;
  c->tokens = (int64_t)batch * n;
  c->indptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(batch + 1));
  c->last = (int32_t *)malloc(sizeof(int32_t) * (size_t)batch);
  c->indices = (int32_t *)malloc(sizeof(int32_t) * (size_t)c->num_pages);
  for (int i = 0; i <= batch; ++i) c->indptr[i] = (int32_t)(i * pages_per);
  for (int i = 0; i < batch; ++i)
    c->last[i] = pages_per ? (int32_t)(n - (pages_per - 1) * CP_PAGE) : 1;
  for (int32_t i = 0; i < c->num_pages; ++i) c->indices[i] = i;
  cp_shuffle(c->indices, total, seed);
}

/* Builds the cache of tokens [begin, end) of every request on the current device: every
 * page a copy (on `stream`) of its pool page, then waits for the copies. */
static void cp_cache_build(cp_cache *c, int batch, int64_t begin, int64_t end,
                           const cp_source *src, cudaStream_t stream, uint32_t seed) {
  memset(c, 0, sizeof *c);
  if (begin % CP_PAGE) {
    fprintf(stderr, "cp: a segment starts at token %lld, not on a page boundary\n",
            (long long)begin);
    exit(1);
  }
  cp_cache_table(c, batch, begin, end, seed);
  void *pool = cp_device_copy(src->pool, (size_t)CP_POOL_PAGES * cp_page_bytes, stream);
  FI_BENCH_CK(cudaMalloc(&c->kv, (size_t)c->num_pages * cp_page_bytes));
  const int64_t first_page = begin / CP_PAGE;
  for (int i = 0; i < batch; ++i)
    for (int32_t e = c->indptr[i]; e < c->indptr[i + 1]; ++e) {
      const int64_t page = first_page + (e - c->indptr[i]);
      char *dst = (char *)c->kv + (size_t)c->indices[e] * cp_page_bytes;
      const char *from = (const char *)pool + cp_pool_page(i, page) * cp_page_bytes;
      FI_BENCH_CK(cudaMemcpyAsync(dst, from, cp_page_bytes, cudaMemcpyDeviceToDevice, stream));
    }
  FI_BENCH_CK(cudaStreamSynchronize(stream));
  FI_BENCH_CK(cudaFree(pool));
  c->d_indptr = (int32_t *)cp_device_copy(c->indptr, sizeof(int32_t) * (size_t)(batch + 1),
                                          stream);
  c->d_indices = (int32_t *)cp_device_copy(c->indices,
                                           sizeof(int32_t) * (size_t)c->num_pages, stream);
  c->d_last = (int32_t *)cp_device_copy(c->last, sizeof(int32_t) * (size_t)batch, stream);
}

static void cp_cache_free(cp_cache *c) {
  cudaFree(c->kv);
  cudaFree(c->d_indptr);
  cudaFree(c->d_indices);
  cudaFree(c->d_last);
  free(c->indptr);
  free(c->indices);
  free(c->last);
  memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------ decode runs --------------- */

static fi_attention_params cp_params(int split, int kv_shards) {
  fi_attention_params p = fi_attention_params_default(CP_QO_HEADS, CP_KV_HEADS, CP_HEAD_DIM);
  p.page_size = CP_PAGE;
  p.fixed_split_size = split;
  p.kv_shards = kv_shards;
  return p;
}

/* A decode's q, o, lse on the current device (o poisoned with fp16 NaNs, so that a run that
 * writes nothing cannot pass the bit comparison). */
typedef struct cp_io {
  void *q, *o, *lse;
  int batch;
} cp_io;

static cp_io cp_io_make(const cp_source *src, int batch, cudaStream_t stream) {
  cp_io io;
  const size_t q_bytes = (size_t)batch * CP_QO_HEADS * CP_HEAD_DIM * 2;
  io.batch = batch;
  io.q = cp_device_copy(src->q, q_bytes, stream);
  FI_BENCH_CK(cudaMalloc(&io.o, q_bytes));
  FI_BENCH_CK(cudaMemsetAsync(io.o, 0xff, q_bytes, stream));
  FI_BENCH_CK(cudaMalloc(&io.lse, (size_t)batch * CP_QO_HEADS * 4));
  return io;
}

static void cp_io_free(cp_io *io) {
  cudaFree(io->q);
  cudaFree(io->o);
  cudaFree(io->lse);
}

/* Everything fi_decode_run needs, and the plan's workspace. */
typedef struct cp_decode {
  fi_context *ctx;
  fi_plan plan;
  fi_tensor q, o, lse;
  fi_paged_kv_cache kv;
  fi_page_table pages;
  void *workspace;
  size_t workspace_bytes;
} cp_decode;

static size_t cp_workspace_bytes(fi_context *ctx, const fi_attention_params *p, int batch,
                                 int64_t max_kv_tokens) {
  size_t bytes = 0;
  FI_BENCH_OK(ctx, fi_decode_workspace_size_kv(ctx, p, batch, max_kv_tokens, &bytes));
  return bytes;
}

/* Plans a decode of `cache` into a new workspace of `workspace_bytes` (tiles NULL: the
 * heuristics' choice). */
static void cp_decode_plan(cp_decode *d, fi_context *ctx, const fi_attention_params *p,
                           const cp_cache *cache, const cp_io *io, const fi_tiles *tiles,
                           size_t workspace_bytes) {
  memset(d, 0, sizeof *d);
  d->ctx = ctx;
  d->workspace_bytes = workspace_bytes;
  FI_BENCH_CK(cudaMalloc(&d->workspace, workspace_bytes));
  fi_page_table host_pages = {cache->indptr, cache->indices, cache->last};
  FI_BENCH_OK(ctx, fi_decode_plan(ctx, p, io->batch, &host_pages, cache->num_pages, tiles,
                                  d->workspace, workspace_bytes, &d->plan));
  int64_t qshape[3] = {io->batch, CP_QO_HEADS, CP_HEAD_DIM}, lshape[2] = {io->batch, CP_QO_HEADS};
  int64_t kvshape[5] = {cache->num_pages, 2, CP_PAGE, CP_KV_HEADS, CP_HEAD_DIM};
  d->q = fi_tensor_contiguous(io->q, FI_DTYPE_F16, 3, qshape);
  d->o = fi_tensor_contiguous(io->o, FI_DTYPE_F16, 3, qshape);
  d->lse = fi_tensor_contiguous(io->lse, FI_DTYPE_F32, 2, lshape);
  fi_tensor kv = fi_tensor_contiguous(cache->kv, FI_DTYPE_F16, 5, kvshape);
  FI_BENCH_OK(ctx, fi_paged_kv_cache_from_combined(&kv, FI_LAYOUT_NHD, &d->kv));
  d->pages.indptr = cache->d_indptr;
  d->pages.indices = cache->d_indices;
  d->pages.last_page_len = cache->d_last;
}

static void cp_decode_free(cp_decode *d) {
  cudaFree(d->workspace);
  d->workspace = NULL;
}

static void cp_run_decode(void *arg) {
  cp_decode *d = (cp_decode *)arg;
  FI_BENCH_OK(d->ctx, fi_decode_run(d->ctx, &d->plan, &d->q, &d->kv, &d->pages, &d->o, &d->lse));
}

/* "decode_tc_q16_kv64_split u128" */
static void cp_variant(const fi_plan *plan, char *buf, size_t len) {
  char tn[64];
  fi_tiles_name(plan->tiles, 1, tn, sizeof tn);
  snprintf(buf, len, "%s u%d", tn, plan->num_work_units);
}

/* o of a decode, copied to a new host buffer. */
static uint16_t *cp_download_o(const cp_io *io, cudaStream_t stream) {
  const size_t bytes = (size_t)io->batch * CP_QO_HEADS * CP_HEAD_DIM * 2;
  uint16_t *h = (uint16_t *)malloc(bytes);
  FI_BENCH_CK(cudaMemcpyAsync(h, io->o, bytes, cudaMemcpyDeviceToHost, stream));
  FI_BENCH_CK(cudaStreamSynchronize(stream));
  return h;
}

static int64_t cp_count_differing(const uint16_t *a, const uint16_t *b, size_t n) {
  int64_t d = 0;
  for (size_t i = 0; i < n; ++i) d += a[i] != b[i];
  return d;
}

static int cp_cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static double cp_median(const float *v, int n) {
  float *t = (float *)malloc(sizeof(float) * (size_t)n);
  memcpy(t, v, sizeof(float) * (size_t)n);
  qsort(t, (size_t)n, sizeof(float), cp_cmp_float);
  double m = n % 2 ? (double)t[n / 2] : 0.5 * ((double)t[n / 2 - 1] + (double)t[n / 2]);
  free(t);
  return m;
}

/* ------------------------------------------------------ one GPU ------------------- */

typedef struct cp_single {
  double fixed_ms, auto_ms;
  fi_tiles tiles; /* the fixed-split plan's, forced on the ranks' plans */
  char fixed_variant[96], auto_variant[96];
  uint16_t *o; /* host copy of the fixed-split o */
} cp_single;

static cp_single cp_time_single(fi_bench_ctx *b, const cp_problem *pr, const cp_source *src) {
  cp_single r;
  memset(&r, 0, sizeof r);
  const int batch = pr->row.batch;
  cp_cache cache;
  cp_cache_build(&cache, batch, 0, pr->row.kv_len, src, b->stream, 0x5eed0001u);
  cp_io io = cp_io_make(src, batch, b->stream);

  fi_attention_params fixed = cp_params(pr->row.split, 0);
  cp_decode d;
  cp_decode_plan(&d, b->ctx, &fixed, &cache, &io, NULL,
                 cp_workspace_bytes(b->ctx, &fixed, batch, cache.tokens));
  r.tiles = d.plan.tiles;
  cp_variant(&d.plan, r.fixed_variant, sizeof r.fixed_variant);
  r.fixed_ms = fi_bench_time_ms(b, cp_run_decode, &d);
  FI_BENCH_OK(b->ctx, fi_plan_device_status(b->ctx, &d.plan));
  r.o = cp_download_o(&io, b->stream);
  cp_decode_free(&d);

  fi_attention_params automatic = cp_params(0, 0);
  cp_decode_plan(&d, b->ctx, &automatic, &cache, &io, NULL,
                 cp_workspace_bytes(b->ctx, &automatic, batch, cache.tokens));
  cp_variant(&d.plan, r.auto_variant, sizeof r.auto_variant);
  r.auto_ms = fi_bench_time_ms(b, cp_run_decode, &d);
  FI_BENCH_OK(b->ctx, fi_plan_device_status(b->ctx, &d.plan));
  cp_decode_free(&d);

  cp_io_free(&io);
  cp_cache_free(&cache);
  return r;
}

/* ------------------------------------------------------ two ranks ----------------- */

typedef struct cp_rank_result {
  float *step_ms, *local_ms; /* [reps], per iteration */
  uint16_t *o;               /* host copy of the sharded o */
  char variant[96], local_variant[96];
  size_t workspace_bytes;
  int64_t tokens;
} cp_rank_result;

typedef struct cp_world {
  const cp_problem *pr;
  const cp_source *src;
  fi_tiles tiles;
  uint8_t nccl_id[FI_COMM_ID_BYTES];
  pthread_barrier_t barrier;
  int warmup, reps;
  size_t workspace_bytes[CP_RANKS]; /* each rank's size of the sharded workspace */
  cp_rank_result res[CP_RANKS];
} cp_world;

typedef struct cp_rank_arg {
  cp_world *w;
  int rank;
} cp_rank_arg;

static void cp_barrier(cp_world *w) {
  int e = pthread_barrier_wait(&w->barrier);
  if (e != 0 && e != PTHREAD_BARRIER_SERIAL_THREAD) {
    fprintf(stderr, "cp: pthread_barrier_wait failed (%d)\n", e);
    exit(1);
  }
}

/* The lockstep loop of both ranks: w->warmup runs, then w->reps runs, each after a host
 * barrier and between two events on `stream`; ms[i] the event time of run i. */
static void cp_time_lockstep(cp_world *w, cudaStream_t stream, cp_decode *d, float *ms) {
  for (int i = 0; i < w->warmup; ++i) {
    cp_barrier(w);
    cp_run_decode(d);
  }
  FI_BENCH_CK(cudaStreamSynchronize(stream));
  const int n = w->reps;
  cudaEvent_t *ev = (cudaEvent_t *)malloc(sizeof(cudaEvent_t) * 2 * (size_t)n);
  for (int i = 0; i < 2 * n; ++i) FI_BENCH_CK(cudaEventCreate(&ev[i]));
  for (int i = 0; i < n; ++i) {
    cp_barrier(w);
    FI_BENCH_CK(cudaEventRecord(ev[2 * i], stream));
    cp_run_decode(d);
    FI_BENCH_CK(cudaEventRecord(ev[2 * i + 1], stream));
  }
  FI_BENCH_CK(cudaStreamSynchronize(stream));
  FI_BENCH_CK(cudaGetLastError());
  for (int i = 0; i < n; ++i) FI_BENCH_CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  for (int i = 0; i < 2 * n; ++i) cudaEventDestroy(ev[i]);
  free(ev);
}

/* The sharded workspace: the same size on every rank (the plan's signature includes its
 * capacity): each rank's size for the larger rank's tokens, then the max over ranks. */
static size_t cp_shared_workspace_bytes(cp_world *w, int rank, fi_context *ctx,
                                        const fi_attention_params *p) {
  int64_t max_tokens = 0;
  for (int r = 0; r < CP_RANKS; ++r) {
    int64_t t = (int64_t)w->pr->row.batch * (w->pr->seg[r + 1] - w->pr->seg[r]);
    if (t > max_tokens) max_tokens = t;
  }
  w->workspace_bytes[rank] = cp_workspace_bytes(ctx, p, w->pr->row.batch, max_tokens);
  cp_barrier(w);
  size_t bytes = 0;
  for (int r = 0; r < CP_RANKS; ++r)
    if (w->workspace_bytes[r] > bytes) bytes = w->workspace_bytes[r];
  return bytes;
}

static void *cp_rank_main(void *arg) {
  cp_world *w = ((cp_rank_arg *)arg)->w;
  const int rank = ((cp_rank_arg *)arg)->rank;
  const cp_problem *pr = w->pr;
  cp_rank_result *res = &w->res[rank];
  FI_BENCH_CK(cudaSetDevice(rank));
  cudaStream_t stream;
  FI_BENCH_CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  fi_context *ctx = NULL;
  FI_BENCH_OK(NULL, fi_context_create(FI_BACKEND_CUDA, &ctx));
  FI_BENCH_OK(ctx, fi_context_set_stream(ctx, stream));
  fi_comm *comm = NULL;
  FI_BENCH_OK(NULL, fi_comm_init_nccl(w->nccl_id, CP_RANKS, rank, &comm));
  FI_BENCH_OK(ctx, fi_context_set_comm(ctx, comm));

  cp_cache cache;
  cp_cache_build(&cache, pr->row.batch, pr->seg[rank], pr->seg[rank + 1], w->src, stream,
                 0x5eed0100u + (uint32_t)rank);
  res->tokens = cache.tokens;
  cp_io io = cp_io_make(w->src, pr->row.batch, stream);
  cp_io local_io = cp_io_make(w->src, pr->row.batch, stream);

  /* Both ranks plan together: the sharded plan exchanges a signature (blocking). */
  fi_attention_params sharded = cp_params(pr->row.split, CP_RANKS);
  fi_attention_params local = cp_params(pr->row.split, 0);
  cp_decode ds, dl;
  size_t ws_bytes = cp_shared_workspace_bytes(w, rank, ctx, &sharded);
  res->workspace_bytes = ws_bytes;
  cp_decode_plan(&ds, ctx, &sharded, &cache, &io, &w->tiles, ws_bytes);
  cp_decode_plan(&dl, ctx, &local, &cache, &local_io, &w->tiles,
                 cp_workspace_bytes(ctx, &local, pr->row.batch, cache.tokens));
  cp_variant(&ds.plan, res->variant, sizeof res->variant);
  cp_variant(&dl.plan, res->local_variant, sizeof res->local_variant);

  cp_time_lockstep(w, stream, &ds, res->step_ms);
  FI_BENCH_OK(ctx, fi_plan_device_status(ctx, &ds.plan)); /* a peer's failure: FI_ERROR_COMM */
  res->o = cp_download_o(&io, stream);
  cp_time_lockstep(w, stream, &dl, res->local_ms);
  FI_BENCH_OK(ctx, fi_plan_device_status(ctx, &dl.plan));

  cp_decode_free(&ds);
  cp_decode_free(&dl);
  cp_io_free(&io);
  cp_io_free(&local_io);
  cp_cache_free(&cache);
  fi_context_destroy(ctx);
  fi_comm_destroy(comm);
  FI_BENCH_CK(cudaStreamDestroy(stream));
  return NULL;
}

/* Runs both ranks (a thread each) and waits for them. */
static void cp_run_ranks(cp_world *w) {
  FI_BENCH_OK(NULL, fi_comm_nccl_unique_id(w->nccl_id));
  if (pthread_barrier_init(&w->barrier, NULL, CP_RANKS) != 0) {
    fprintf(stderr, "cp: pthread_barrier_init failed\n");
    exit(1);
  }
  pthread_t threads[CP_RANKS];
  cp_rank_arg args[CP_RANKS];
  for (int r = 0; r < CP_RANKS; ++r) {
    w->res[r].step_ms = (float *)calloc((size_t)w->reps, sizeof(float));
    w->res[r].local_ms = (float *)calloc((size_t)w->reps, sizeof(float));
    args[r].w = w;
    args[r].rank = r;
    if (pthread_create(&threads[r], NULL, cp_rank_main, &args[r]) != 0) {
      fprintf(stderr, "cp: pthread_create failed\n");
      exit(1);
    }
  }
  for (int r = 0; r < CP_RANKS; ++r) pthread_join(threads[r], NULL);
  pthread_barrier_destroy(&w->barrier);
}

/* Median over iterations of the slowest rank's time of that iteration. */
static double cp_median_of_max(const cp_world *w, int local) {
  float *m = (float *)malloc(sizeof(float) * (size_t)w->reps);
  for (int i = 0; i < w->reps; ++i) {
    m[i] = 0;
    for (int r = 0; r < CP_RANKS; ++r) {
      float t = local ? w->res[r].local_ms[i] : w->res[r].step_ms[i];
      if (t > m[i]) m[i] = t;
    }
  }
  double med = cp_median(m, w->reps);
  free(m);
  return med;
}

static void cp_world_free(cp_world *w) {
  for (int r = 0; r < CP_RANKS; ++r) {
    free(w->res[r].step_ms);
    free(w->res[r].local_ms);
    free(w->res[r].o);
  }
}

/* ------------------------------------------------------ devices ------------------- */

typedef struct cp_devices {
  int count;
  char name[CP_RANKS][256];
  double copy_gbps[CP_RANKS];
} cp_devices;

typedef struct cp_copy {
  void *dst, *src;
  size_t bytes;
  cudaStream_t stream;
} cp_copy;

static void cp_run_copy(void *arg) {
  cp_copy *c = (cp_copy *)arg;
  FI_BENCH_CK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->stream));
}

/* The copy ceiling of `device` as the driver measures device 0's: a 1 GiB device-to-device
 * copy, bytes read + written. */
static double cp_copy_ceiling(const fi_bench_ctx *b, int device) {
  int previous = 0;
  FI_BENCH_CK(cudaGetDevice(&previous));
  FI_BENCH_CK(cudaSetDevice(device));
  fi_bench_ctx timer = *b;
  FI_BENCH_CK(cudaStreamCreateWithFlags(&timer.stream, cudaStreamNonBlocking));
  cp_copy c;
  c.bytes = (size_t)1 << 30;
  c.src = fi_bench_random_device(c.bytes);
  FI_BENCH_CK(cudaMalloc(&c.dst, c.bytes));
  c.stream = timer.stream;
  double ms = fi_bench_time_ms(&timer, cp_run_copy, &c);
  FI_BENCH_CK(cudaFree(c.src));
  FI_BENCH_CK(cudaFree(c.dst));
  FI_BENCH_CK(cudaStreamDestroy(timer.stream));
  FI_BENCH_CK(cudaSetDevice(previous));
  return 2.0 * (double)c.bytes / (ms * 1e-3) / 1e9;
}

static cp_devices cp_devices_probe(const fi_bench_ctx *b) {
  cp_devices d;
  memset(&d, 0, sizeof d);
  FI_BENCH_CK(cudaGetDeviceCount(&d.count));
  for (int r = 0; r < CP_RANKS && r < d.count; ++r) {
    struct cudaDeviceProp prop;
    FI_BENCH_CK(cudaGetDeviceProperties(&prop, r));
    snprintf(d.name[r], sizeof d.name[r], "%.200s (%d SMs)", prop.name,
             prop.multiProcessorCount);
  }
  d.copy_gbps[0] = b->copy_gbps; /* the driver's, on device 0 */
  if (d.count >= CP_RANKS) d.copy_gbps[1] = cp_copy_ceiling(b, 1);
  return d;
}

/* ------------------------------------------------------ the suite ----------------- */

static double cp_gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

static void cp_print_row(const cp_devices *dev, const cp_problem *pr, const cp_single *s,
                         const cp_world *w, int ranks_ran) {
  const double fixed_gbps = cp_gbps(pr->bytes, s->fixed_ms);
  const double auto_gbps = cp_gbps(pr->bytes, s->auto_ms);
  char ceilings[64];
  if (ranks_ran)
    snprintf(ceilings, sizeof ceilings, "%.0f / %.0f", dev->copy_gbps[0], dev->copy_gbps[1]);
  else
    snprintf(ceilings, sizeof ceilings, "%.0f", dev->copy_gbps[0]);
  printf("cp %d x %lld | GPU %s x%d | copy GB/s %s | S %d (chunk %lld, rank 0 %lld "
         "tokens/request) | 1 GPU S: %.1f us %.0f GB/s %.1f%% copy | 1 GPU auto: %.1f us "
         "%.0f GB/s %.1f%% copy | ",
         pr->row.batch, (long long)pr->row.kv_len, dev->name[0], dev->count, ceilings,
         pr->row.split, (long long)pr->chunk,
         (long long)pr->seg[1], s->fixed_ms * 1e3, fixed_gbps,
         100.0 * fixed_gbps / dev->copy_gbps[0], s->auto_ms * 1e3, auto_gbps,
         100.0 * auto_gbps / dev->copy_gbps[0]);
  if (!ranks_ran) {
    printf("2 ranks: skipped (%d CUDA device%s, need %d)\n", dev->count,
           dev->count == 1 ? "" : "s", CP_RANKS);
    printf("    detail: 1 GPU S %s; auto %s\n", s->fixed_variant, s->auto_variant);
    fflush(stdout);
    return;
  }
  const double step = cp_median_of_max(w, 0), local = cp_median_of_max(w, 1);
  const double step_gbps = cp_gbps(pr->bytes, step);
  const size_t o_elems = (size_t)pr->row.batch * CP_QO_HEADS * CP_HEAD_DIM;
  int64_t differing[CP_RANKS];
  for (int r = 0; r < CP_RANKS; ++r) differing[r] = cp_count_differing(w->res[r].o, s->o, o_elems);
  printf("2 ranks: %.1f us %.0f GB/s %.1f%% of both copy | speedup %.2fx (vs auto %.2fx) | "
         "local %.1f us, overhead %.1f us %.1f%% | bit-identical: %s (%lld differing",
         step * 1e3, step_gbps, 100.0 * step_gbps / (dev->copy_gbps[0] + dev->copy_gbps[1]),
         s->fixed_ms / step, s->auto_ms / step, local * 1e3, (step - local) * 1e3,
         100.0 * (step - local) / step, differing[0] == 0 && differing[1] == 0 ? "yes" : "no",
         (long long)differing[0]);
  printf(", rank 1 %lld)\n", (long long)differing[1]);
  printf("    detail: 1 GPU S %s; auto %s; sharded r0 %s, r1 %s; local r0 %s, r1 %s; "
         "medians r0 %.1f / %.1f us, r1 %.1f / %.1f us (step / local); tokens r0 %lld, r1 "
         "%lld; sharded workspace %.1f MiB; %d warm-up + %d timed iterations\n",
         s->fixed_variant, s->auto_variant, w->res[0].variant, w->res[1].variant,
         w->res[0].local_variant, w->res[1].local_variant,
         cp_median(w->res[0].step_ms, w->reps) * 1e3,
         cp_median(w->res[0].local_ms, w->reps) * 1e3,
         cp_median(w->res[1].step_ms, w->reps) * 1e3,
         cp_median(w->res[1].local_ms, w->reps) * 1e3, (long long)w->res[0].tokens,
         (long long)w->res[1].tokens, (double)w->res[0].workspace_bytes / (1 << 20), w->warmup,
         w->reps);
  fflush(stdout);
}

/* Warm-up iterations of the lockstep loops: the driver's count, and at least its warm-up
 * time at half the single GPU's step (the same count on both ranks). */
static int cp_warmup_iterations(const fi_bench_ctx *b, double single_ms) {
  double half = 0.5 * single_ms;
  int n = half > 0 ? (int)ceil(b->warm_ms / half) : 0;
  if (n < b->warmup) n = b->warmup;
  return n > 1000 ? 1000 : n;
}

static void cp_run_row(fi_bench_ctx *b, const cp_devices *dev, const cp_source *src,
                       cp_row row) {
  char name[96];
  snprintf(name, sizeof name, "cp %d x %lld", row.batch, (long long)row.kv_len);
  if (!fi_bench_selected(b, name)) return;
  cp_problem pr = cp_problem_of(row);
  cp_single single = cp_time_single(b, &pr, src);
  cp_world w;
  memset(&w, 0, sizeof w);
  const int ranks = dev->count >= CP_RANKS;
  if (ranks) {
    w.pr = &pr;
    w.src = src;
    w.tiles = single.tiles;
    w.warmup = cp_warmup_iterations(b, single.fixed_ms);
    w.reps = b->reps < 20 ? 20 : b->reps;
    cp_run_ranks(&w);
  }
  cp_print_row(dev, &pr, &single, &w, ranks);
  cp_world_free(&w);
  free(single.o);
}

void fi_bench_cp(fi_bench_ctx *b) {
  /* NVLink multicast (NVLS) stays off on these machines; before NCCL is first used. */
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  int device = 0;
  FI_BENCH_CK(cudaGetDevice(&device));
  if (device != 0)
    fprintf(stderr, "cp: the driver's context is on device %d, not 0: the single-GPU rows "
            "run there, rank 0 on device 0\n", device);
  cp_row rows[CP_MAX_ROWS];
  const int n = cp_rows(rows);
  int max_batch = 1;
  for (int i = 0; i < n; ++i)
    if (rows[i].batch > max_batch) max_batch = rows[i].batch;
  cp_devices dev = cp_devices_probe(b);
  printf("\ncp: context-parallel decode (fp16, %d/%d heads, head_dim %d, page %d, NHD): 1 "
         "GPU vs %d ranks over NCCL; %d CUDA device%s: %s; copy ceilings %.0f GB/s (device "
         "0)",
         CP_QO_HEADS, CP_KV_HEADS, CP_HEAD_DIM, CP_PAGE, CP_RANKS, dev.count,
         dev.count == 1 ? "" : "s", dev.name[0], dev.copy_gbps[0]);
  if (dev.count >= CP_RANKS)
    printf(", %.0f GB/s (device 1: %s)\n", dev.copy_gbps[1], dev.name[1]);
  else
    printf("\ncp: fewer than %d CUDA devices: the 2-rank columns are skipped (single-GPU "
           "baseline only)\n", CP_RANKS);
  fflush(stdout);
  cp_source src = cp_source_make(max_batch);
  for (int i = 0; i < n; ++i) cp_run_row(b, &dev, &src, rows[i]);
  cp_source_free(&src);
}
