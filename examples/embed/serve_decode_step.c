/* examples/embed/serve_decode_step.c -- serving a compiled decode step as a runtime does.
 *
 * The step is the one examples/embed/decode_step_capi.c builds through the C API (LAYERS
 * layers of fi.paged_decode, 32 query heads, 8 KV heads, head_dim 128, page 16, fp16, one
 * page table for all layers), lowered with its plans on the device and linked here:
 *
 *   fi-embed-decode-step step.ll 32 device && llc -O2 -filetype=obj step.ll -o step.o
 *   cc serve_decode_step.c step.o -lfi_runtime -lcudart -o serve     (scripts/gpu-e2e.sh)
 *
 * What this program does, as an embedder (a serving runtime) would:
 *  - owns the CUDA stream (fi_context_set_stream) and the allocator of the buffers compiled
 *    code allocates (fi_rt_set_allocator: a small caching allocator, its state passed as
 *    user data);
 *  - keeps a paged K and V cache per layer and a page table in device memory with room for
 *    the whole cache, and serves --batch requests: every step each request grows by one
 *    token (a new page when its last one is full); a request that reaches --max-kv leaves
 *    and a new one of random length takes its place (pages back to a free list);
 *  - runs step 1 directly and checks it, bit for bit, against the runtime called layer by
 *    layer (host plan, same tiles); captures the step once in a CUDA graph; then serves
 *    --steps steps: upload the page table (cudaMemcpyAsync from pinned memory on the
 *    stream), replay, and print the host time (upload + replay call) and the GPU time
 *    (events) of each step; every 25th step and the last are checked against the runtime
 *    called directly;
 *  - checks that the steady state makes no allocation and no synchronisation of the
 *    runtime's own, and that a page table larger than the captured capacity is reported
 *    (naming the array) instead of being read out of bounds;
 *  - prints the step's GPU time beside the sum of the same kernels run alone and the floor
 *    (the step's bytes at the copy ceiling measured in the same run).
 *
 * Options: --batch=32 --max-kv=2048 --steps=100 --seed=1. Exit 77 without the CUDA backend. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "fi/mlir_adapters.h"
#include "fi/runtime.h"

#ifndef LAYERS
#define LAYERS 32 /* must match the compiled step (fi-embed-decode-step's layers) */
#endif
enum { QH = 32, KVH = 8, HD = 128, PS = 16 };

/* Memref descriptors of the C interface (_mlir_ciface_*): MLIR's ABI. */
typedef struct { void *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } memref1;
typedef struct { void *allocated, *aligned; int64_t offset, sizes[3], strides[3]; } memref3;
typedef struct { void *allocated, *aligned; int64_t offset, sizes[4], strides[4]; } memref4;

static void mr_init(void *desc, int rank, void *data, const int64_t *shape) {
  void **p = (void **)desc;
  p[0] = p[1] = data;
  int64_t *d = (int64_t *)(p + 2), stride = 1;
  d[0] = 0;
  for (int i = rank - 1; i >= 0; --i) {
    d[1 + i] = shape[i];
    d[1 + rank + i] = stride;
    stride *= shape[i];
  }
}

#define KV(l) memref4 *, memref4 *
#define KV4(l) KV(l), KV(l), KV(l), KV(l)
#define KV32 KV4(0), KV4(0), KV4(0), KV4(0), KV4(0), KV4(0), KV4(0), KV4(0)
#if LAYERS != 32
#error "the call below passes 32 layers; change it with LAYERS"
#endif
void _mlir_ciface_decode_step(memref3 *result, memref3 *q, KV32, memref1 *indptr,
                              memref1 *indices, memref1 *last);

#define CUDA_OK(expr)                                                                      \
  do {                                                                                     \
    cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      printf("FAILED %s: %s\n", #expr, cudaGetErrorString(e_));                            \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)
#define FI_OK(ctx, expr)                                                                   \
  do {                                                                                     \
    fi_status s_ = (expr);                                                                 \
    if (s_ != FI_SUCCESS) {                                                                \
      printf("FAILED %s: %s\n", #expr, fi_last_error(ctx));                                \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* ------------------------------------------------ the embedder's caching allocator -- */
/* Blocks are reused once freed: every buffer is used on the one stream, so a block freed
 * in stream order may be handed out again at once (the rule of PyTorch's allocator). */
typedef struct {
  struct { void *ptr; size_t bytes; int in_use; } block[512];
  int n;
  long device_mallocs, allocs;
} caching_allocator;

static void *cache_alloc(void *user, size_t bytes, void *stream) {
  caching_allocator *a = (caching_allocator *)user;
  (void)stream;
  ++a->allocs;
  for (int i = 0; i < a->n; ++i)
    if (!a->block[i].in_use && a->block[i].bytes >= bytes && a->block[i].bytes <= 2 * bytes) {
      a->block[i].in_use = 1;
      return a->block[i].ptr;
    }
  if (a->n == 512) return NULL;
  void *p = NULL;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return NULL;
  ++a->device_mallocs;
  a->block[a->n].ptr = p;
  a->block[a->n].bytes = bytes;
  a->block[a->n++].in_use = 1;
  return p;
}

static void cache_free(void *user, void *ptr, void *stream) {
  caching_allocator *a = (caching_allocator *)user;
  (void)stream;
  for (int i = 0; i < a->n; ++i)
    if (a->block[i].ptr == ptr) a->block[i].in_use = 0;
}

/* ------------------------------------------------------------------- requests ------ */
static uint64_t rng_state;
static int64_t rnd(int64_t lo, int64_t hi) { /* uniform in [lo, hi] */
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

typedef struct {
  int32_t batch, max_kv, max_pages_per_req, num_pages;
  int32_t *len;        /* [batch] tokens */
  int32_t *pages;      /* [batch][max_pages_per_req] page ids */
  int32_t *free_pages; /* stack of free page ids */
  int32_t num_free;
  int32_t *table;      /* pinned: indptr [batch + 1], last [batch], indices [num_pages] */
} requests;

static int32_t take_page(requests *r) { return r->free_pages[--r->num_free]; }

static void admit(requests *r, int32_t i, int32_t len) {
  r->len[i] = len;
  for (int32_t p = 0; p < (len + PS - 1) / PS; ++p) r->pages[i * r->max_pages_per_req + p] = take_page(r);
}

static void leave(requests *r, int32_t i) {
  for (int32_t p = 0; p < (r->len[i] + PS - 1) / PS; ++p)
    r->free_pages[r->num_free++] = r->pages[i * r->max_pages_per_req + p];
}

/* One decoding step of every request: one more token (a new page past a full one); a
 * request at max_kv leaves and a new one of random length joins. */
static void advance(requests *r) {
  for (int32_t i = 0; i < r->batch; ++i) {
    if (r->len[i] >= r->max_kv) {
      leave(r, i);
      admit(r, i, (int32_t)rnd(1, r->max_kv / 2));
    } else {
      if (r->len[i] % PS == 0) r->pages[i * r->max_pages_per_req + r->len[i] / PS] = take_page(r);
      ++r->len[i];
    }
  }
}

/* The page table in the pinned buffer; returns the KV tokens in it. */
static int64_t write_table(requests *r) {
  int32_t *indptr = r->table, *last = indptr + r->batch + 1, *indices = last + r->batch;
  int64_t tokens = 0;
  indptr[0] = 0;
  for (int32_t i = 0; i < r->batch; ++i) {
    int32_t np = (r->len[i] + PS - 1) / PS;
    memcpy(indices + indptr[i], r->pages + i * r->max_pages_per_req, sizeof(int32_t) * (size_t)np);
    indptr[i + 1] = indptr[i] + np;
    last[i] = r->len[i] - (np - 1) * PS;
    tokens += r->len[i];
  }
  return tokens;
}

/* ------------------------------------------------------------------- the step ------ */
typedef struct {
  memref3 q, result;
  memref4 k[LAYERS], v[LAYERS];
  memref1 indptr, indices, last;
} step_args;

static void step(void *user) {
  step_args *s = (step_args *)user;
#define L(l) &s->k[l], &s->v[l]
#define L4(l) L(l), L(l + 1), L(l + 2), L(l + 3)
  _mlir_ciface_decode_step(&s->result, &s->q, L4(0), L4(4), L4(8), L4(12), L4(16), L4(20),
                           L4(24), L4(28), &s->indptr, &s->indices, &s->last);
}

/* The runtime called directly, layer after layer, with a host plan of `tiles` over the
 * host page table; the last layer's output lands in `out` (device). */
typedef struct {
  fi_context *ctx;
  fi_attention_params p;
  void *ws, *h[2];
  size_t ws_bytes;
  void *q, *k[LAYERS], *v[LAYERS];
  int64_t qshape[3], cshape[4];
} direct_runs;

static void *run_direct(direct_runs *d, requests *r, const int32_t *dindptr,
                        const int32_t *dindices, const int32_t *dlast, const fi_tiles *tiles,
                        fi_plan *plan, int make_plan) {
  int32_t *indptr = r->table, *last = indptr + r->batch + 1, *indices = last + r->batch;
  if (make_plan) {
    fi_page_table host = {indptr, indices, last};
    FI_OK(d->ctx, fi_decode_plan(d->ctx, &d->p, r->batch, &host, r->num_pages, tiles, d->ws,
                                 d->ws_bytes, plan));
  }
  fi_page_table dev = {dindptr, dindices, dlast};
  const void *x = d->q;
  for (int l = 0; l < LAYERS; ++l) {
    void *o = d->h[l & 1];
    fi_tensor tq = fi_tensor_contiguous((void *)x, FI_DTYPE_F16, 3, d->qshape);
    fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, d->qshape);
    fi_paged_kv_cache cache = {fi_tensor_contiguous(d->k[l], FI_DTYPE_F16, 4, d->cshape),
                               fi_tensor_contiguous(d->v[l], FI_DTYPE_F16, 4, d->cshape),
                               FI_LAYOUT_NHD};
    FI_OK(d->ctx, fi_decode_run(d->ctx, plan, &tq, &cache, &dev, &to, NULL));
    x = o;
  }
  return (void *)x;
}

/* Elements of two device fp16 arrays that differ in any bit (or are not finite), after
 * the work on `stream` (a non-blocking stream: cudaMemcpy would not wait for it). */
static int64_t differ(const void *a, const void *b, int64_t n, cudaStream_t stream) {
  uint16_t *ha = malloc((size_t)n * 2), *hb = malloc((size_t)n * 2);
  CUDA_OK(cudaMemcpyAsync(ha, a, (size_t)n * 2, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaMemcpyAsync(hb, b, (size_t)n * 2, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += ha[i] != hb[i] || (ha[i] & 0x7c00) == 0x7c00;
  free(ha), free(hb);
  return bad;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long arg(int argc, char **argv, const char *name, long dflt) {
  size_t n = strlen(name);
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 && argv[i][2 + n] == '=')
      return atol(argv[i] + 3 + n);
  return dflt;
}

static char recorded[1024];
static void recording_handler(const char *op, fi_status status, const char *message) {
  snprintf(recorded, sizeof(recorded), "%s: %s: %s", op, fi_status_string(status), message);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  requests r = {0};
  r.batch = (int32_t)arg(argc, argv, "batch", 32);
  r.max_kv = (int32_t)arg(argc, argv, "max-kv", 2048);
  int steps = (int)arg(argc, argv, "steps", 100);
  rng_state = (uint64_t)arg(argc, argv, "seed", 1) * 0x9e3779b97f4a7c15ull + 7;
  if (r.batch < 1 || r.max_kv < 2 || steps < 1 || steps > 10000) {
    printf("bad options: --batch >= 1, --max-kv >= 2, --steps in 1..10000\n");
    return 2;
  }

  /* The embedder's context, stream and allocator. */
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_CUDA, &ctx) != FI_SUCCESS) {
    printf("serve_decode_step: SKIP (no CUDA backend: %s)\n", fi_last_error(NULL));
    return 77;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FI_OK(ctx, fi_context_set_stream(ctx, stream));
  FI_OK(ctx, fi_rt_set_context(ctx));
  caching_allocator *alloc = calloc(1, sizeof(caching_allocator));
  fi_rt_set_allocator(cache_alloc, cache_free, alloc);
  struct cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));

  /* Copy ceiling of this GPU in this run: 1 GiB device to device (read + write). */
  size_t cbytes = (size_t)1 << 30;
  void *ca, *cb;
  CUDA_OK(cudaMalloc(&ca, cbytes));
  CUDA_OK(cudaMalloc(&cb, cbytes));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  double tc[7];
  for (int i = 0; i < 7; ++i) {
    CUDA_OK(cudaEventRecord(e0, stream));
    CUDA_OK(cudaMemcpyAsync(cb, ca, cbytes, cudaMemcpyDeviceToDevice, stream));
    CUDA_OK(cudaEventRecord(e1, stream));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    tc[i] = ms;
  }
  double copy_gbs = 2.0 * (double)cbytes / (median(tc, 7) * 1e6);
  CUDA_OK(cudaFree(ca));
  CUDA_OK(cudaFree(cb));

  /* Requests and the cache: room for every request at max_kv plus one page each. */
  r.max_pages_per_req = (r.max_kv + PS - 1) / PS + 1;
  r.num_pages = r.batch * r.max_pages_per_req;
  r.len = calloc((size_t)r.batch, sizeof(int32_t));
  r.pages = calloc((size_t)r.batch * (size_t)r.max_pages_per_req, sizeof(int32_t));
  r.free_pages = malloc(sizeof(int32_t) * (size_t)r.num_pages);
  /* a shuffled free list: requests' pages land all over the cache */
  for (int32_t i = 0; i < r.num_pages; ++i) r.free_pages[i] = i;
  for (int32_t i = r.num_pages - 1; i > 0; --i) {
    int32_t j = (int32_t)rnd(0, i), t = r.free_pages[i];
    r.free_pages[i] = r.free_pages[j], r.free_pages[j] = t;
  }
  r.num_free = r.num_pages;
  for (int32_t i = 0; i < r.batch; ++i) admit(&r, i, (int32_t)rnd(1, r.max_kv));
  size_t table_ints = (size_t)(2 * r.batch + 1 + r.num_pages);
  CUDA_OK(cudaMallocHost((void **)&r.table, sizeof(int32_t) * table_ints));

  int64_t qshape[3] = {r.batch, QH, HD}, cshape[4] = {r.num_pages, PS, KVH, HD};
  int64_t nq = r.batch * QH * HD, nc = (int64_t)r.num_pages * PS * KVH * HD;
  /* Random fp16 in [-2, 2] for q and the caches: one host pattern, each layer's K and V
   * copied from a different offset of it. */
  int64_t npat = nc + 64 * 1021;
  uint16_t *pat = malloc((size_t)npat * 2);
  for (int64_t i = 0; i < npat; ++i) {
    float x = (float)rnd(-20000, 20000) * 1e-4f; /* exact in fp16 up to rounding below */
    uint32_t bits;
    memcpy(&bits, &x, 4);
    int exp = (int)((bits >> 23) & 0xff) - 127 + 15;
    pat[i] = x == 0.f ? 0 : (uint16_t)(((bits >> 16) & 0x8000) | (exp << 10) | ((bits >> 13) & 0x3ff));
  }
  step_args s;
  direct_runs d = {ctx, fi_attention_params_default(QH, KVH, HD), NULL, {NULL, NULL}, 0, NULL,
                   {NULL}, {NULL}, {r.batch, QH, HD}, {r.num_pages, PS, KVH, HD}};
  d.p.page_size = PS;
  CUDA_OK(cudaMalloc(&d.q, (size_t)nq * 2));
  CUDA_OK(cudaMemcpy(d.q, pat + 17, (size_t)nq * 2, cudaMemcpyHostToDevice));
  mr_init(&s.q, 3, d.q, qshape);
  for (int l = 0; l < LAYERS; ++l) {
    CUDA_OK(cudaMalloc(&d.k[l], (size_t)nc * 2));
    CUDA_OK(cudaMalloc(&d.v[l], (size_t)nc * 2));
    CUDA_OK(cudaMemcpy(d.k[l], pat + 2 * l * 1021, (size_t)nc * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d.v[l], pat + (2 * l + 1) * 1021, (size_t)nc * 2, cudaMemcpyHostToDevice));
    mr_init(&s.k[l], 4, d.k[l], cshape);
    mr_init(&s.v[l], 4, d.v[l], cshape);
  }
  free(pat);
  int32_t *dtable;
  CUDA_OK(cudaMalloc((void **)&dtable, sizeof(int32_t) * table_ints));
  int32_t *dindptr = dtable, *dlast = dtable + r.batch + 1, *dindices = dlast + r.batch;
  int64_t nb1 = r.batch + 1, nb = r.batch, cap = r.num_pages;
  mr_init(&s.indptr, 1, dindptr, &nb1);
  mr_init(&s.last, 1, dlast, &nb);
  mr_init(&s.indices, 1, dindices, &cap); /* capacity: the device plan reads indptr */
  FI_OK(ctx, fi_decode_workspace_size(ctx, &d.p, r.batch, &d.ws_bytes));
  CUDA_OK(cudaMalloc(&d.ws, d.ws_bytes));
  CUDA_OK(cudaMalloc(&d.h[0], (size_t)nq * 2));
  CUDA_OK(cudaMalloc(&d.h[1], (size_t)nq * 2));
  double gb_per_token = (double)LAYERS * KVH * HD * 2 * 2 / 1e9;
  double gb_fixed = (double)LAYERS * 2 * nq * 2 / 1e9; /* q in, o out per layer */
  printf("serve_decode_step: %s, %d layers, batch %d, max_kv %d, %d pages of %d tokens "
         "(%.1f GB of cache); copy ceiling %.0f GB/s\n", prop.name, LAYERS, (int)r.batch,
         (int)r.max_kv, (int)r.num_pages, PS, 2.0 * LAYERS * (double)nc * 2 / 1e9, copy_gbs);

  /* Step 1, called directly, then checked against the runtime layer by layer. */
  int bad = 0;
  int64_t tokens = write_table(&r);
  CUDA_OK(cudaMemcpyAsync(dtable, r.table, sizeof(int32_t) * table_ints, cudaMemcpyHostToDevice, stream));
  fi_rt_plan_log_reset();
  step(&s);
  FI_OK(ctx, fi_rt_synchronize());
  fi_op_family fam;
  fi_tiles tiles;
  if (fi_rt_plan_log(&fam, &tiles, 1) != 1 || fam != FI_OP_DECODE) {
    printf("FAILED: the compiled step made %d plans, wanted 1 decode plan for %d layers\n",
           fi_rt_plan_log(NULL, NULL, 0), LAYERS);
    return 1;
  }
  char tname[64];
  fi_plan plan;
  void *want = run_direct(&d, &r, dindptr, dindices, dlast, &tiles, &plan, 1);
  int64_t off = differ(s.result.aligned, want, nq, stream);
  printf("  step 1 (direct call): %lld KV tokens, variant %s, 1 plan for %d layers; vs the "
         "runtime called directly: %s\n", (long long)tokens,
         fi_tiles_name(tiles, 1, tname, sizeof tname), LAYERS, off ? "MISMATCH" : "bit-exact");
  bad += off != 0;
  /* The step's result was allocated by the step: give it back (the allocator's cache). */
  fi_rt_free(s.result.allocated);

  /* One capture; the graph owns the buffers the step allocates while captured. */
  fi_rt_graph *graph = NULL;
  FI_OK(ctx, fi_rt_graph_capture(step, &s, &graph));
  long mallocs0 = alloc->device_mallocs, allocs0 = alloc->allocs, syncs = 0;

  double host_us[10000], gpu_ms[10000];
  int64_t min_tok = INT64_MAX, max_tok = 0;
  double sum_tok = 0;
  for (int st = 1; st <= steps; ++st) {
    advance(&r);
    tokens = write_table(&r);
    long syncs0 = fi_rt_sync_count();
    double t0 = now_us();
    CUDA_OK(cudaMemcpyAsync(dtable, r.table, sizeof(int32_t) * table_ints, cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaEventRecord(e0, stream));
    FI_OK(ctx, fi_rt_graph_replay(graph));
    CUDA_OK(cudaEventRecord(e1, stream));
    host_us[st - 1] = now_us() - t0;
    CUDA_OK(cudaEventSynchronize(e1)); /* the embedder's own wait (it reads the logits) */
    float ms;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    gpu_ms[st - 1] = ms;
    FI_OK(ctx, fi_rt_check());
    syncs += fi_rt_sync_count() - syncs0; /* the checks' host plans below wait; not counted */
    min_tok = tokens < min_tok ? tokens : min_tok;
    max_tok = tokens > max_tok ? tokens : max_tok;
    sum_tok += (double)tokens;
    double gb = gb_per_token * (double)tokens + gb_fixed;
    printf("  step %3d: %7lld KV tokens, %.2f GB; host %5.1f us (upload + replay call), "
           "GPU %.3f ms (%.0f GB/s, floor %.3f ms)", st, (long long)tokens, gb, host_us[st - 1],
           ms, gb / (ms * 1e-3), gb / copy_gbs * 1e3);
    if (st % 25 == 0 || st == steps) {
      want = run_direct(&d, &r, dindptr, dindices, dlast, &tiles, &plan, 1);
      off = differ(s.result.aligned, want, nq, stream);
      printf("; vs direct: %s", off ? "MISMATCH" : "bit-exact");
      bad += off != 0;
    }
    printf("\n");
  }
  long new_mallocs = alloc->device_mallocs - mallocs0, new_allocs = alloc->allocs - allocs0;
  printf("  steady state: %ld allocations, %ld runtime synchronisations in %d steps\n",
         new_allocs + new_mallocs, syncs, steps);
  if (new_allocs || new_mallocs || syncs) {
    printf("MISMATCH: the steady state allocated or synchronised\n");
    ++bad;
  }

  /* Timing on the last page table: the graph, and the same runs called directly with the
   * plan made beforehand (the kernel sum). */
  double tg[20], tk[20], th[20];
  for (int i = 0; i < 20; ++i) {
    double t0 = now_us();
    CUDA_OK(cudaEventRecord(e0, stream));
    FI_OK(ctx, fi_rt_graph_replay(graph));
    CUDA_OK(cudaEventRecord(e1, stream));
    th[i] = now_us() - t0;
    CUDA_OK(cudaEventSynchronize(e1));
    float ms;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    tg[i] = ms;
    CUDA_OK(cudaEventRecord(e0, stream));
    run_direct(&d, &r, dindptr, dindices, dlast, &tiles, &plan, 0);
    CUDA_OK(cudaEventRecord(e1, stream));
    CUDA_OK(cudaEventSynchronize(e1));
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    tk[i] = ms;
  }
  double gb = gb_per_token * (double)tokens + gb_fixed;
  double g = median(tg, 20), k = median(tk, 20), floor_ms = gb / copy_gbs * 1e3;
  printf("  last page table (%lld KV tokens, %.2f GB): graph %.3f ms, kernel sum %.3f ms "
         "(graph / kernels %.3fx), floor %.3f ms (graph / floor %.2fx); host per replay "
         "call %.1f us\n", (long long)tokens, gb, g, k, g / k, floor_ms, g / floor_ms,
         median(th, 20));
  printf("  per step over %d steps (%lld..%lld KV tokens, mean %.0f): host median %.1f us, "
         "GPU median %.3f ms\n", steps, (long long)min_tok, (long long)max_tok,
         sum_tok / steps, median(host_us, steps), median(gpu_ms, steps));

  /* Bad input at replay: a page table longer than the captured kv_indices capacity must be
   * reported by the device plan, naming the array, not read out of bounds. */
  int32_t *indptr = r.table;
  int32_t saved = indptr[r.batch];
  indptr[r.batch] = r.num_pages + 5;
  CUDA_OK(cudaMemcpyAsync(dindptr + r.batch, indptr + r.batch, sizeof(int32_t),
                          cudaMemcpyHostToDevice, stream));
  fi_rt_error_handler old = fi_rt_set_error_handler(recording_handler);
  recorded[0] = 0;
  FI_OK(ctx, fi_rt_graph_replay(graph));
  fi_status status = fi_rt_synchronize();
  fi_rt_set_error_handler(old);
  printf("  page table past the captured capacity: %s\n", recorded[0] ? recorded : "NOT REPORTED");
  if (status == FI_SUCCESS || !strstr(recorded, "kv_indptr")) {
    printf("MISMATCH: a page table past the capacity was not reported\n");
    ++bad;
  }
  indptr[r.batch] = saved;

  fi_rt_graph_destroy(graph);
  printf("serve_decode_step: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
