/* Runs examples/decode_step.mlir compiled by fi-to-llvm: a 4-layer LLaMA-style decode
 * step (32 q heads, 8 KV heads, head_dim 128, page 16, fp16, RoPE) over a random paged
 * cache, which it appends to in place. Its plans are made on the device (`on_device`).
 *
 *  1. Step 1 on host-filled (managed) buffers: the outputs and the caches are checked
 *     against the runtime called directly with host plans (append, then decode, per
 *     layer); device and host planning must agree bit for bit.
 *  2. Steady state on device buffers: --steps compiled steps; the runtime must make no
 *     synchronisation of its own (fi_rt_sync_count) and allocate no workspace.
 *  3. CUDA only (built with -DFI_DRIVER_CUDA): the step captured once in a CUDA graph on the
 *     driver's stream, then --replays replays with a new random page table (lengths and
 *     pages) every replay, each output compared with the runtime called directly; the
 *     caches after the last replay too. Then a bad page id at replay must reach the error
 *     handler at the next synchronisation, naming the plan and the array.
 *  Timing (CUDA): compiled, graph, and the runs alone (kernel sum, the runtime's runs with
 *  plans made beforehand), per step, with the bytes the step must move.
 * Options: --batch=8 --max-kv=1024 --steps=5 --replays=50 --seed=1 */
#include "example.h"

#ifdef FI_DRIVER_CUDA
#include <cuda_runtime_api.h>
#endif

enum { LAYERS = 4, QH = 32, KVH = 8, HD = 128, PS = 16 };

/* The step returns the attention output of each layer; it appends to the caller's
 * caches (memref arguments) in place. */
typedef struct { memref3 o[LAYERS]; } step_out;
void _mlir_ciface_decode_step(step_out *, memref3 *, memref3 *, memref3 *, memref5 *,
                              memref3 *, memref3 *, memref3 *, memref5 *, memref3 *,
                              memref3 *, memref3 *, memref5 *, memref3 *, memref3 *,
                              memref3 *, memref5 *, memref1 *, memref1 *, memref1 *,
                              memref1 *, int64_t);

/* Everything one call of the compiled step takes. */
typedef struct step_args {
  memref3 q[LAYERS], k[LAYERS], v[LAYERS];
  memref5 cache[LAYERS];
  memref1 indptr, indices, last, append_indptr;
  int64_t num_pages;
  step_out out;
} step_args;

static void run_step(void *user) {
  step_args *a = (step_args *)user;
  _mlir_ciface_decode_step(&a->out, &a->q[0], &a->k[0], &a->v[0], &a->cache[0], &a->q[1],
                           &a->k[1], &a->v[1], &a->cache[1], &a->q[2], &a->k[2], &a->v[2],
                           &a->cache[2], &a->q[3], &a->k[3], &a->v[3], &a->cache[3],
                           &a->indptr, &a->indices, &a->last, &a->append_indptr,
                           a->num_pages);
}

static void free_outputs(step_args *a) {
  for (int l = 0; l < LAYERS; ++l) fi_rt_free(a->out.o[l].allocated);
}

/* The direct runtime: its plans (made on the host) and the step's runs. */
typedef struct direct_t {
  fi_context *ctx;
  fi_attention_params p;
  void *ws;
  size_t ws_bytes;
  fi_plan aplan, dplan;
} direct_t;

static void direct_plan(direct_t *d, const pages_t *pg, const int32_t *append_indptr,
                        const fi_tiles *tiles) {
  fi_page_table table = {pg->indptr, pg->indices, pg->last};
  CHECK_OK(d->ctx, fi_append_paged_kv_plan(d->ctx, pg->batch, PS, append_indptr, &table,
                                           pg->num_pages, &d->aplan));
  CHECK_OK(d->ctx, fi_decode_plan(d->ctx, &d->p, pg->batch, &table, pg->num_pages, tiles, d->ws,
                                  d->ws_bytes, &d->dplan));
}

/* One step's runs through the runtime: per layer the append (unless `aplan` is NULL),
 * then the decode. */
static void step_runs(fi_context *ctx, const fi_plan *aplan, const fi_plan *dplan,
                      const fi_page_table *table, const int32_t *append_indptr,
                      void *const *q, void *const *k, void *const *v, void *const *cache,
                      void *const *o, const int64_t *qs, const int64_t *ns, const int64_t *cs) {
  for (int l = 0; l < LAYERS; ++l) {
    fi_tensor tc = fi_tensor_contiguous(cache[l], FI_DTYPE_F16, 5, cs);
    fi_paged_kv_cache kvc;
    CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&tc, FI_LAYOUT_NHD, &kvc));
    if (aplan) {
      fi_tensor tk = fi_tensor_contiguous(k[l], FI_DTYPE_F16, 3, ns);
      fi_tensor tv = fi_tensor_contiguous(v[l], FI_DTYPE_F16, 3, ns);
      CHECK_OK(ctx, fi_append_paged_kv_run(ctx, aplan, &tk, &tv, append_indptr, &kvc, table));
    }
    fi_tensor tq = fi_tensor_contiguous(q[l], FI_DTYPE_F16, 3, qs);
    fi_tensor to = fi_tensor_contiguous(o[l], FI_DTYPE_F16, 3, qs);
    CHECK_OK(ctx, fi_decode_run(ctx, dplan, &tq, &kvc, table, &to, NULL));
  }
}

/* The direct runtime's step on the driver's (managed) buffers with its host plans. */
static void direct_runs(direct_t *d, const pages_t *pg, const int32_t *append_indptr,
                        void *const *q, void *const *k, void *const *v, void *const *cache,
                        void *const *o, const int64_t *qs, const int64_t *ns,
                        const int64_t *cs) {
  fi_page_table table = {pg->indptr, pg->indices, pg->last};
  step_runs(d->ctx, &d->aplan, &d->dplan, &table, append_indptr, q, k, v, cache, o, qs, ns, cs);
}

#ifdef FI_DRIVER_CUDA
/* A new page table for the same batch and cache: random lengths in [1, max_kv] (shrunk
 * so that the pages fit the cache) on a random permutation of the cache's pages. The
 * arrays keep their capacity (indices: num_pages). */
static void reshuffle_pages(rng *r, pages_t *pg, int64_t max_kv) {
  int64_t used = 0;
  pg->total_kv = 0;
  for (int32_t i = 0; i < pg->batch; ++i) {
    int64_t room = pg->num_pages - used - (pg->batch - 1 - i); /* a page for each later one */
    int64_t len = rng_int(r, 1, max_kv);
    if ((len + PS - 1) / PS > room) len = room * PS;
    int64_t pages = (len + PS - 1) / PS;
    pg->kv_len[i] = len;
    pg->total_kv += len;
    used += pages;
    pg->indptr[i + 1] = (int32_t)used;
    pg->last[i] = (int32_t)(len - (pages - 1) * PS);
  }
  for (int32_t i = 0; i < pg->num_pages; ++i) pg->indices[i] = i;
  for (int32_t i = pg->num_pages - 1; i > 0; --i) {
    int32_t j = (int32_t)rng_int(r, 0, i), t = pg->indices[i];
    pg->indices[i] = pg->indices[j];
    pg->indices[j] = t;
  }
}

#endif

#ifdef FI_DRIVER_CUDA
/* What the GPU timings call (gpu_ms_per_call): a compiled step, a replay, the runs alone
 * and the device plan alone. */
typedef struct timed_t {
  step_args *dev;
  fi_rt_graph *graph;
  fi_context *ctx;
  direct_t *d;
  fi_page_table table;
  const int32_t *append_indptr;
  void **q, **k, **v, **cache, **o;
  const int64_t *qs, *ns, *cs;
  int32_t batch;
  int64_t cap_indices, num_pages;
  const fi_tiles *tiles;
} timed_t;
static void timed_compiled(void *u) {
  step_args a = *((timed_t *)u)->dev; /* its own outputs */
  run_step(&a);
  free_outputs(&a);
}
static void timed_graph(void *u) { fi_rt_graph_replay(((timed_t *)u)->graph); }
static void timed_runs(void *u) {
  timed_t *t = (timed_t *)u;
  step_runs(t->ctx, &t->d->aplan, &t->d->dplan, &t->table, t->append_indptr, t->q, t->k, t->v,
            t->cache, t->o, t->qs, t->ns, t->cs);
}
static void timed_plan(void *u) {
  timed_t *t = (timed_t *)u;
  fi_plan plan;
  CHECK_OK(t->ctx, fi_decode_plan_device(t->ctx, &t->d->p, t->batch, &t->table, t->cap_indices,
                                         t->num_pages, t->tiles, t->d->ws, t->d->ws_bytes, &plan));
}

/* The error handler of part 3's bad-input check: records instead of aborting. */
static char recorded[1024];
static void recording_handler(const char *op, fi_status status, const char *message) {
  if (!recorded[0]) /* the first report: the plan the device rejected */
    snprintf(recorded, sizeof(recorded), "%s: %s: %s", op, fi_status_string(status), message);
}
#endif

int main(int argc, char **argv) {
  int32_t batch = (int32_t)arg_long(argc, argv, "batch", 8);
  int64_t max_kv = arg_long(argc, argv, "max-kv", 1024);
  int steps = (int)arg_long(argc, argv, "steps", 5);
  int replays = (int)arg_long(argc, argv, "replays", 50);
  rng r = {(uint64_t)arg_long(argc, argv, "seed", 1) * 0x9e3779b97f4a7c15ull + 1};
  e2e_setup();
  fi_context *ctx = fi_default_context();
  int cuda = fi_context_backend(ctx) == FI_BACKEND_CUDA;
#ifdef FI_DRIVER_CUDA
  /* As an embedder does: the driver owns the stream compiled code runs on. */
  cudaStream_t stream = NULL;
  if (cuda) {
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 2;
    CHECK_OK(ctx, fi_context_set_stream(ctx, stream));
  }
#endif

  pages_t pg;
  make_pages(&r, &pg, batch, PS, 1, max_kv, 0); /* every request has its new token */
  int64_t nb1 = batch + 1, nb = batch, used = pg.indptr[batch];
  int32_t *append_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)nb1);
  for (int32_t i = 0; i <= batch; ++i) append_indptr[i] = i;
  int64_t qs[3] = {batch, QH, HD}, ns[3] = {batch, KVH, HD};
  int64_t cs[5] = {pg.num_pages, 2, PS, KVH, HD};
  int64_t nq = numel(3, qs), nn = numel(3, ns), nc = numel(5, cs);
  size_t cache_bytes = (size_t)nc * 2;
  printf("decode_step: batch %d, %lld KV tokens (max %lld per request), %d pages, %d layers\n",
         (int)batch, (long long)pg.total_kv, (long long)max_kv, (int)pg.num_pages, LAYERS);

  void *q[LAYERS], *k[LAYERS], *v[LAYERS], *cache[LAYERS], *want_cache[LAYERS];
  step_args a;
  memset(&a, 0, sizeof(a));
  for (int l = 0; l < LAYERS; ++l) {
    q[l] = random_tensor(&r, FI_DTYPE_F16, nq, -2, 2);
    k[l] = random_tensor(&r, FI_DTYPE_F16, nn, -2, 2);
    v[l] = random_tensor(&r, FI_DTYPE_F16, nn, -2, 2);
    cache[l] = random_tensor(&r, FI_DTYPE_F16, nc, -2, 2);
    want_cache[l] = copy_of(cache[l], cache_bytes);
    mr_init(&a.q[l], 3, q[l], qs);
    mr_init(&a.k[l], 3, k[l], ns);
    mr_init(&a.v[l], 3, v[l], ns);
    mr_init(&a.cache[l], 5, cache[l], cs);
  }
  mr_init(&a.indptr, 1, pg.indptr, &nb1);
  mr_init(&a.indices, 1, pg.indices, &used);
  mr_init(&a.last, 1, pg.last, &nb);
  mr_init(&a.append_indptr, 1, append_indptr, &nb1);
  a.num_pages = pg.num_pages;

  /* 1. Step 1: compiled, then checked against the runtime with host plans. */
  fi_rt_plan_log_reset();
  double t0 = now_ms();
  run_step(&a);
  fi_rt_synchronize();
  double first_ms = now_ms() - t0;
  fi_op_family fam[8];
  fi_tiles tiles[8];
  int plans = fi_rt_plan_log(fam, tiles, 8);
  long allocs_after_first = fi_rt_workspace_allocations();
  fi_tiles decode_tiles = logged_tiles(1, FI_OP_DECODE);
  printf("  compiled step 1: %.2f ms (plans made: %d -- append, %s; workspace allocations: %ld)\n",
         first_ms, plans, tiles_str(decode_tiles, 1), allocs_after_first);

  direct_t d = {ctx, fi_attention_params_default(QH, KVH, HD), NULL, 0, {0}, {0}};
  d.p.page_size = PS;
  d.p.pos_encoding = FI_POS_ROPE_LLAMA;
  d.p.rope_theta = 500000.0f;
  CHECK_OK(ctx, fi_decode_workspace_size(ctx, &d.p, batch, &d.ws_bytes));
  d.ws = fi_rt_alloc(d.ws_bytes);
  void *want_o[LAYERS];
  for (int l = 0; l < LAYERS; ++l) want_o[l] = poisoned_tensor(FI_DTYPE_F16, nq);
  double t1 = now_ms();
  direct_plan(&d, &pg, append_indptr, &decode_tiles);
  direct_runs(&d, &pg, append_indptr, q, k, v, want_cache, want_o, qs, ns, cs);
  fi_rt_synchronize();
  double direct_ms = now_ms() - t1;
  void *got_o[LAYERS];
  for (int l = 0; l < LAYERS; ++l) got_o[l] = data_ptr(&a.out.o[l], FI_DTYPE_F16);
  int64_t bad = compare_step(LAYERS, got_o, want_o, nq, cache, want_cache, nc, FI_DTYPE_F16);
  printf("  runtime called directly: %.2f ms; compiled vs direct: %s\n", direct_ms,
         bad ? "MISMATCH" : "bit-exact");
  free_outputs(&a);

  /* 2. Steady state on device buffers (host memory on the host backend). The same token
   * is appended again (idempotent). */
  step_args dev = a;
  void *dq[LAYERS], *dk[LAYERS], *dv[LAYERS], *dcache[LAYERS];
  for (int l = 0; l < LAYERS; ++l) {
    dq[l] = device_copy(q[l], (size_t)nq * 2);
    dk[l] = device_copy(k[l], (size_t)nn * 2);
    dv[l] = device_copy(v[l], (size_t)nn * 2);
    dcache[l] = device_copy(cache[l], cache_bytes);
    mr_init(&dev.q[l], 3, dq[l], qs);
    mr_init(&dev.k[l], 3, dk[l], ns);
    mr_init(&dev.v[l], 3, dv[l], ns);
    mr_init(&dev.cache[l], 5, dcache[l], cs);
  }
  int64_t cap_indices = pg.num_pages; /* room for any page table of this cache */
  int32_t *dindptr = (int32_t *)device_copy(pg.indptr, sizeof(int32_t) * (size_t)nb1);
  int32_t *dindices = (int32_t *)fi_rt_alloc(sizeof(int32_t) * (size_t)cap_indices);
  fi_rt_copy(dindices, pg.indices, sizeof(int32_t) * (size_t)used);
  int32_t *dlast = (int32_t *)device_copy(pg.last, sizeof(int32_t) * (size_t)nb);
  int32_t *dappend = (int32_t *)device_copy(append_indptr, sizeof(int32_t) * (size_t)nb1);
  mr_init(&dev.indptr, 1, dindptr, &nb1);
  mr_init(&dev.indices, 1, dindices, &cap_indices); /* its capacity: the plan reads indptr */
  mr_init(&dev.last, 1, dlast, &nb);
  mr_init(&dev.append_indptr, 1, dappend, &nb1);
  fi_rt_synchronize();

  double t[256];
  if (steps > 256) steps = 256;
  long syncs_before = fi_rt_sync_count();
  for (int s = 0; s < steps; ++s) {
    double b = now_ms();
    run_step(&dev);
    fi_rt_synchronize();
    t[s] = now_ms() - b;
    free_outputs(&dev);
  }
  long steady_syncs = fi_rt_sync_count() - syncs_before;
  bad += report_steady_state(t, steps, fi_rt_workspace_allocations() - allocs_after_first);
  printf("  runtime synchronisations in steps 2..%d: %ld\n", steps + 1, steady_syncs);
  if (steady_syncs) {
    printf("MISMATCH: the runtime synchronised in steady-state steps\n");
    ++bad;
  }
  /* Bytes the step must move at least: every layer reads its KV tokens (K and V), q, and
   * writes o, plus the appended token. */
  double step_bytes = (double)LAYERS * ((double)pg.total_kv * 2 * KVH * HD * 2 +
                                        (double)nq * 2 * 2 + (double)nn * 2 * 2);
  double compiled_ms = median(t, steps), first_bytes = step_bytes;

#ifdef FI_DRIVER_CUDA
  if (cuda) {
    /* Kernel sum: the runtime's runs alone (plans made beforehand), on the same buffers. */
    fi_page_table dtable = {dindptr, dindices, dlast};
    direct_plan(&d, &pg, append_indptr, &decode_tiles);
    void *runs_o[LAYERS];
    for (int l = 0; l < LAYERS; ++l) runs_o[l] = fi_rt_alloc((size_t)nq * 2);
    double tr[256], tn[256];
    for (int s = 0; s < steps; ++s) {
      double b = now_ms();
      step_runs(ctx, &d.aplan, &d.dplan, &dtable, dappend, dq, dk, dv, dcache, runs_o, qs, ns, cs);
      fi_rt_synchronize();
      tr[s] = now_ms() - b;
    }
    double runs_ms = median(tr, steps);
    /* The decode runs alone without RoPE (the plan's copy with pos_encoding none): how much
     * of the kernel time is the rotary embedding of K. */
    fi_plan norope = d.dplan;
    norope.params.pos_encoding = FI_POS_NONE;
    for (int s = 0; s < steps; ++s) {
      double b = now_ms();
      step_runs(ctx, NULL, &norope, &dtable, dappend, dq, dk, dv, dcache, runs_o, qs, ns, cs);
      fi_rt_synchronize();
      tn[s] = now_ms() - b;
    }
    double norope_ms = median(tn, steps);
    /* The device planner alone (what a compiled step adds to the runs). */
    fi_plan dev_plan;
    double tp[256];
    for (int s = 0; s < steps; ++s) {
      double b = now_ms();
      CHECK_OK(ctx, fi_decode_plan_device(ctx, &d.p, batch, &dtable, cap_indices, pg.num_pages,
                                          &decode_tiles, d.ws, d.ws_bytes, &dev_plan));
      fi_rt_synchronize();
      tp[s] = now_ms() - b;
    }
    double plan_ms = median(tp, steps);
    /* GPU time per call from CUDA events (gpu_ms_per_call): the compiled step, the runs
     * alone (host plans made above), then the device plan alone (it rewrites the same
     * workspace with the same partition); the graph's after its replays below. */
    timed_t tt = {&dev, NULL, ctx, &d, dtable, dappend, dq, dk, dv, dcache, runs_o,
                  qs, ns, cs, batch, cap_indices, pg.num_pages, &decode_tiles};
    fi_rt_set_poison(0); /* no memset per allocation in the timed steps */
    const double ceiling = copy_ceiling_gbs(stream);
    const double compiled_gpu = gpu_ms_per_call(stream, 20, 9, timed_compiled, &tt);
    const double runs_gpu = gpu_ms_per_call(stream, 20, 9, timed_runs, &tt);
    const double plan_gpu = gpu_ms_per_call(stream, 20, 9, timed_plan, &tt);
    int32_t *first_indptr = (int32_t *)copy_of(pg.indptr, sizeof(int32_t) * (size_t)nb1);
    int32_t *first_indices = (int32_t *)copy_of(pg.indices, sizeof(int32_t) * (size_t)used);
    int32_t *first_last = (int32_t *)copy_of(pg.last, sizeof(int32_t) * (size_t)nb);
    int64_t first_used = used;

    /* 3. One capture, then replays with a new page table every time (kv_indices of the
     * driver's own table grows to the cache's capacity first). */
    int32_t *grown = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)pg.num_pages);
    memcpy(grown, pg.indices, sizeof(int32_t) * (size_t)used);
    e2e_free(pg.indices);
    pg.indices = grown;
    fi_rt_graph *graph = NULL;
    if (fi_rt_graph_capture(run_step, &dev, &graph) != FI_SUCCESS) {
      printf("MISMATCH: capturing the step failed\n");
      return 1;
    }
    int64_t graph_bad = 0;
    for (int i = 0; i < replays; ++i) {
      reshuffle_pages(&r, &pg, max_kv);
      used = pg.indptr[batch];
      fi_rt_copy(dindptr, pg.indptr, sizeof(int32_t) * (size_t)nb1);
      fi_rt_copy(dindices, pg.indices, sizeof(int32_t) * (size_t)used);
      fi_rt_copy(dlast, pg.last, sizeof(int32_t) * (size_t)nb);
      if (fi_rt_graph_replay(graph) != FI_SUCCESS) return 1;
      direct_plan(&d, &pg, append_indptr, &decode_tiles);
      direct_runs(&d, &pg, append_indptr, q, k, v, want_cache, want_o, qs, ns, cs);
      fi_rt_synchronize();
      for (int l = 0; l < LAYERS; ++l) {
        char name[48];
        snprintf(name, sizeof(name), "replay %d layer %d o", i, l);
        graph_bad += compare(name, data_ptr(&dev.out.o[l], FI_DTYPE_F16), want_o[l],
                             FI_DTYPE_F16, nq);
      }
    }
    for (int l = 0; l < LAYERS; ++l) {
      char name[48];
      snprintf(name, sizeof(name), "graph layer %d cache", l);
      graph_bad += compare(name, dcache[l], want_cache[l], FI_DTYPE_F16, nc);
    }
    printf("  graph: %d replays with a new page table each (last: %lld KV tokens): %s\n",
           replays, (long long)pg.total_kv, graph_bad ? "MISMATCH" : "bit-exact");
    bad += graph_bad;

    /* Timing of replays on the first page table (the caches hold other tokens now: the
     * time does not depend on them), and the host time of a replay call. */
    fi_rt_copy(dindptr, first_indptr, sizeof(int32_t) * (size_t)nb1);
    fi_rt_copy(dindices, first_indices, sizeof(int32_t) * (size_t)first_used);
    fi_rt_copy(dlast, first_last, sizeof(int32_t) * (size_t)nb);
    fi_rt_synchronize();
    double tg[256], th[256];
    syncs_before = fi_rt_sync_count();
    for (int s = 0; s < steps; ++s) {
      double b = now_ms();
      fi_rt_graph_replay(graph);
      th[s] = now_ms() - b;
      fi_rt_synchronize();
      tg[s] = now_ms() - b;
    }
    long graph_syncs = fi_rt_sync_count() - syncs_before;
    double graph_ms = median(tg, steps);
    printf("  step of %.3f GB (first page table), per step: compiled %.3f ms (%.0f GB/s), graph "
           "%.3f ms (%.0f GB/s), runs alone (kernel sum) %.3f ms (%.0f GB/s); compiled / runs "
           "%.2fx, graph / runs %.2fx; the runs without RoPE %.3f ms (%.0f GB/s); device plan "
           "alone %.3f ms\n", first_bytes / 1e9, compiled_ms, first_bytes / (compiled_ms * 1e6),
           graph_ms, first_bytes / (graph_ms * 1e6), runs_ms, first_bytes / (runs_ms * 1e6),
           compiled_ms / runs_ms, graph_ms / runs_ms, norope_ms,
           first_bytes / (norope_ms * 1e6), plan_ms);
    printf("  graph replay: host %.1f us per replay call, runtime synchronisations %ld\n",
           median(th, steps) * 1e3, graph_syncs);
    if (graph_syncs) {
      printf("MISMATCH: the runtime synchronised in graph replays\n");
      ++bad;
    }
    /* A graph captured without poisoning (the checked one memsets its outputs). */
    step_args timing_args = dev;
    if (fi_rt_graph_capture(run_step, &timing_args, &tt.graph) != FI_SUCCESS) return 1;
    const double graph_gpu = gpu_ms_per_call(stream, 20, 9, timed_graph, &tt);
    fi_rt_graph_destroy(tt.graph);
    fi_rt_set_poison(1);
    print_step_timing("first page table", first_bytes, ceiling, compiled_gpu, graph_gpu,
                      runs_gpu, plan_gpu);

    /* Bad input at replay: a page id outside the cache must be reported at the next
     * synchronisation (naming the plan and the array), not read out of bounds. */
    int32_t bad_page = pg.num_pages + 7;
    fi_rt_copy(dindices, &bad_page, sizeof(bad_page));
    fi_rt_error_handler old = fi_rt_set_error_handler(recording_handler);
    recorded[0] = 0;
    fi_rt_graph_replay(graph);
    fi_status st = fi_rt_synchronize();
    fi_rt_set_error_handler(old);
    printf("  bad page id at replay: %s\n", recorded[0] ? recorded : "NOT REPORTED");
    if (st == FI_SUCCESS || !strstr(recorded, "kv_indices")) {
      printf("MISMATCH: a bad page table at replay was not reported\n");
      ++bad;
    }
    fi_rt_copy(dindices, pg.indices, sizeof(int32_t));

    /* A host pointer where device memory is required: the capture checks every buffer. */
    step_args host_q = dev;
    void *plain = malloc((size_t)nq * 2);
    mr_init(&host_q.q[0], 3, plain, qs);
    fi_rt_graph *g2 = NULL;
    old = fi_rt_set_error_handler(recording_handler);
    recorded[0] = 0;
    st = fi_rt_graph_capture(run_step, &host_q, &g2);
    fi_rt_set_error_handler(old);
    printf("  host memory as q: %s\n", recorded[0] ? recorded : "NOT REPORTED");
    if (st == FI_SUCCESS || !strstr(recorded, "q is host memory")) {
      printf("MISMATCH: host memory given as q was not reported\n");
      ++bad;
    }
    free(plain);
    fi_rt_graph_destroy(g2);
    fi_rt_graph_destroy(graph);
    for (int l = 0; l < LAYERS; ++l) fi_rt_free(runs_o[l]);
    e2e_free(first_indptr), e2e_free(first_indices), e2e_free(first_last);
  }
#else
  if (cuda) printf("  graph: not built (compile the driver with -DFI_DRIVER_CUDA)\n");
#endif
  if (!cuda) printf("  graph: skipped (CUDA graphs need the CUDA backend)\n");
  (void)first_bytes, (void)compiled_ms, (void)replays;
  printf("decode_step: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
