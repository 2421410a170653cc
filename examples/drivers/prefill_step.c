/* Runs examples/prefill_step.mlir compiled by fi-to-llvm: a 4-layer LLaMA-style prefill
 * (append attention) step over ragged requests (32 q heads, 8 KV heads, head_dim 128,
 * page 16, bf16, causal, RoPE): each layer appends the new tokens' K/V to its paged cache
 * in place and attends causally. The outputs and the caches are checked against the
 * runtime called directly, then timed. Its plans are made `on_device` (planning kernels on
 * the CUDA backend, host plans on the host backend).
 * CUDA only (built with -DFI_DRIVER_CUDA): the step is captured once in a CUDA graph on the
 * driver's stream, over q, k, v at their capacity (batch * max-q rows), and replayed
 * --replays times with new query lengths each time (qo_indptr rewritten in device memory);
 * every replay's outputs are compared with the runtime called directly (host plans), and
 * the caches after the last replay.
 * Options: --batch=4 --max-kv=512 --max-q=64 --steps=3 --replays=20 --seed=1 */
#include "example.h"

#ifdef FI_DRIVER_CUDA
#include <cuda_runtime_api.h>
#endif

enum { LAYERS = 4, QH = 32, KVH = 8, HD = 128, PS = 16 };

/* The step returns the attention output of each layer; it appends to the caller's
 * caches (memref arguments) in place. */
typedef struct { memref3 o[LAYERS]; } step_out;
void _mlir_ciface_prefill_step(step_out *, memref3 *, memref3 *, memref3 *, memref5 *,
                              memref3 *, memref3 *, memref3 *, memref5 *, memref3 *,
                              memref3 *, memref3 *, memref5 *, memref3 *, memref3 *,
                              memref3 *, memref5 *, memref1 *, memref1 *, memref1 *,
                              memref1 *, int64_t);
#define STEP _mlir_ciface_prefill_step

/* The prefill stage RoPE needs on the fast kernel (fi_context_set_prefill_stage), as the
 * compiled step's runs have one: sized for nnz query rows and every page of the cache (the
 * page table here never repeats a page); none on the host backend. */
static void *stage = NULL;
static size_t stage_bytes = 0;
static void set_stage(fi_context *ctx, const fi_attention_params *p, int64_t nnz,
                      int32_t num_pages) {
  size_t need = 0;
  CHECK_OK(ctx, fi_prefill_stage_size(ctx, p, 1, nnz, (int64_t)num_pages * PS, &need));
  if (need > stage_bytes) {
    fi_rt_free(stage);
    stage = fi_rt_alloc(need);
    stage_bytes = stage ? need : 0;
  }
  CHECK_OK(ctx, fi_context_set_prefill_stage(ctx, need ? stage : NULL, need ? stage_bytes : 0));
}

/* The runtime's runs of one step with plans made beforehand: per layer, append the new
 * tokens' K/V (nnz rows) to cache[l], then attend into o[l]. The arrays (qo, table) are
 * where the runs read them: host-filled managed memory or device memory. */
static void step_runs(fi_context *ctx, const fi_plan *aplan, const fi_plan *pplan,
                      const fi_page_table *table, const int32_t *qo, int64_t nnz,
                      int32_t num_pages, void *const *q, void *const *k, void *const *v,
                      void *const *cache, void *const *o) {
  int64_t qs[3] = {nnz, QH, HD}, ns[3] = {nnz, KVH, HD};
  int64_t cs[5] = {num_pages, 2, PS, KVH, HD};
  set_stage(ctx, &pplan->params, nnz, num_pages);
  for (int l = 0; l < LAYERS; ++l) {
    fi_tensor tc = fi_tensor_contiguous(cache[l], FI_DTYPE_BF16, 5, cs);
    fi_paged_kv_cache kvc;
    CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&tc, FI_LAYOUT_NHD, &kvc));
    fi_tensor tk = fi_tensor_contiguous(k[l], FI_DTYPE_BF16, 3, ns);
    fi_tensor tv = fi_tensor_contiguous(v[l], FI_DTYPE_BF16, 3, ns);
    CHECK_OK(ctx, fi_append_paged_kv_run(ctx, aplan, &tk, &tv, qo, &kvc, table));
    fi_tensor tq = fi_tensor_contiguous(q[l], FI_DTYPE_BF16, 3, qs);
    fi_tensor to = fi_tensor_contiguous(o[l], FI_DTYPE_BF16, 3, qs);
    CHECK_OK(ctx, fi_paged_prefill_run(ctx, pplan, &tq, qo, &kvc, table, NULL, &to, NULL));
  }
  CHECK_OK(ctx, fi_context_set_prefill_stage(ctx, NULL, 0));
}

/* Host plans of one step (append and prefill) from host-readable arrays. */
static void host_plans(fi_context *ctx, const fi_attention_params *p, const fi_tiles *tiles,
                       const pages_t *pg, const int32_t *qo, void *ws, size_t ws_bytes,
                       fi_plan *aplan, fi_plan *pplan) {
  fi_page_table table = {pg->indptr, pg->indices, pg->last};
  CHECK_OK(ctx, fi_append_paged_kv_plan(ctx, pg->batch, PS, qo, &table, pg->num_pages, aplan));
  CHECK_OK(ctx, fi_paged_prefill_plan(ctx, p, pg->batch, qo, &table, pg->num_pages, NULL, tiles,
                                      ws, ws_bytes, pplan));
}

/* The runtime called directly with host plans, as the step does. nnz = qo[batch]. */
static void direct_step(fi_context *ctx, const fi_attention_params *p, const fi_tiles *tiles,
                        const pages_t *pg, const int32_t *qo, void *ws, size_t ws_bytes,
                        void *const *q, void *const *k, void *const *v, void *const *cache,
                        void *const *o) {
  fi_plan aplan, pplan;
  host_plans(ctx, p, tiles, pg, qo, ws, ws_bytes, &aplan, &pplan);
  fi_page_table table = {pg->indptr, pg->indices, pg->last};
  step_runs(ctx, &aplan, &pplan, &table, qo, qo[pg->batch], pg->num_pages, q, k, v, cache, o);
}

#ifdef FI_DRIVER_CUDA
/* Everything one call of the compiled step takes (the graph part). */
typedef struct step_args {
  memref3 q[LAYERS], k[LAYERS], v[LAYERS];
  memref5 cache[LAYERS];
  memref1 qo_indptr, indptr, indices, last;
  int64_t num_pages;
  step_out out;
} step_args;

static void run_step(void *user) {
  step_args *a = (step_args *)user;
  STEP(&a->out, &a->q[0], &a->k[0], &a->v[0], &a->cache[0], &a->q[1], &a->k[1], &a->v[1],
       &a->cache[1], &a->q[2], &a->k[2], &a->v[2], &a->cache[2], &a->q[3], &a->k[3], &a->v[3],
       &a->cache[3], &a->qo_indptr, &a->indptr, &a->indices, &a->last, a->num_pages);
}

/* What the GPU timings call (gpu_ms_per_call): a compiled step, a replay, the runs alone
 * and the device plans alone, all on device buffers. */
typedef struct timed_t {
  step_args *dev;
  fi_rt_graph *graph;
  fi_context *ctx;
  const fi_attention_params *p;
  const fi_tiles *tiles;
  fi_plan aplan, pplan;
  fi_page_table table;
  int64_t nnz, used;
  int32_t batch, num_pages;
  void *q[LAYERS], *k[LAYERS], *v[LAYERS], *cache[LAYERS], *o[LAYERS];
  void *ws;
  size_t ws_bytes;
} timed_t;
static void timed_compiled(void *u) {
  step_args a = *((timed_t *)u)->dev; /* its own outputs: dev's are the graph's */
  run_step(&a);
  for (int l = 0; l < LAYERS; ++l) fi_rt_free(a.out.o[l].allocated);
}
static void timed_graph(void *u) { fi_rt_graph_replay(((timed_t *)u)->graph); }
static void timed_runs(void *u) {
  timed_t *t = (timed_t *)u;
  step_runs(t->ctx, &t->aplan, &t->pplan, &t->table, (const int32_t *)t->dev->qo_indptr.aligned,
            t->nnz, t->num_pages, t->q, t->k, t->v, t->cache, t->o);
}
static void timed_plans(void *u) {
  timed_t *t = (timed_t *)u;
  fi_plan plan;
  CHECK_OK(t->ctx, fi_paged_prefill_plan_device(
                       t->ctx, t->p, t->batch, (const int32_t *)t->dev->qo_indptr.aligned,
                       t->dev->q[0].sizes[0], &t->table, t->used, t->num_pages, t->tiles, t->ws,
                       t->ws_bytes, &plan));
}

/* The graph part: capture over capacity-sized q, k, v; replay with new query lengths;
 * compare each replay with the runtime called directly (host plans, managed buffers).
 * Returns the number of mismatching elements. */
static int64_t graph_replays(rng *r, fi_context *ctx, cudaStream_t stream,
                             const fi_attention_params *p, const fi_tiles *tiles, pages_t *pg,
                             int64_t max_q, void **cache, int replays) {
  const int32_t batch = pg->batch;
  int64_t nb1 = batch + 1, nb = batch, used = pg->indptr[batch];
  const int64_t cap = (int64_t)batch * max_q; /* q, k, v rows at capacity */
  int64_t qs[3] = {cap, QH, HD}, ns[3] = {cap, KVH, HD};
  int64_t cs[5] = {pg->num_pages, 2, PS, KVH, HD};
  int64_t nq = numel(3, qs), nn = numel(3, ns), nc = numel(5, cs);
  void *q[LAYERS], *k[LAYERS], *v[LAYERS], *ref_cache[LAYERS], *ref_o[LAYERS];
  step_args dev;
  memset(&dev, 0, sizeof(dev));
  for (int l = 0; l < LAYERS; ++l) {
    q[l] = random_tensor(r, FI_DTYPE_BF16, nq, -2, 2);
    k[l] = random_tensor(r, FI_DTYPE_BF16, nn, -2, 2);
    v[l] = random_tensor(r, FI_DTYPE_BF16, nn, -2, 2);
    ref_cache[l] = copy_of(cache[l], (size_t)nc * 2);
    ref_o[l] = poisoned_tensor(FI_DTYPE_BF16, nq);
    mr_init(&dev.q[l], 3, device_copy(q[l], (size_t)nq * 2), qs);
    mr_init(&dev.k[l], 3, device_copy(k[l], (size_t)nn * 2), ns);
    mr_init(&dev.v[l], 3, device_copy(v[l], (size_t)nn * 2), ns);
    mr_init(&dev.cache[l], 5, device_copy(cache[l], (size_t)nc * 2), cs);
  }
  int32_t *qo = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)nb1);
  qo[0] = 0;
  for (int32_t i = 0; i < batch; ++i) qo[i + 1] = qo[i] + 1;
  int32_t *dqo = (int32_t *)device_copy(qo, sizeof(int32_t) * (size_t)nb1);
  mr_init(&dev.qo_indptr, 1, dqo, &nb1);
  mr_init(&dev.indptr, 1, device_copy(pg->indptr, sizeof(int32_t) * (size_t)nb1), &nb1);
  mr_init(&dev.indices, 1, device_copy(pg->indices, sizeof(int32_t) * (size_t)used), &used);
  mr_init(&dev.last, 1, device_copy(pg->last, sizeof(int32_t) * (size_t)nb), &nb);
  dev.num_pages = pg->num_pages;
  fi_rt_synchronize();
  fi_rt_graph *graph = NULL;
  if (fi_rt_graph_capture(run_step, &dev, &graph) != FI_SUCCESS) {
    printf("MISMATCH: capturing the step failed\n");
    return 1;
  }
  size_t ws_bytes;
  CHECK_OK(ctx, fi_prefill_workspace_size(ctx, p, batch, cap, &ws_bytes));
  void *ws = e2e_alloc(ws_bytes);
  int64_t bad = 0, last_nnz = 0;
  for (int rep = 0; rep < replays; ++rep) {
    for (int32_t i = 0; i < batch; ++i) {
      int64_t hi = pg->kv_len[i] < max_q ? pg->kv_len[i] : max_q;
      qo[i + 1] = qo[i] + (int32_t)rng_int(r, 1, hi);
    }
    const int64_t nnz = last_nnz = qo[batch];
    for (int l = 0; l < LAYERS; ++l) poison(ref_o[l], (size_t)nq * 2);
    fi_rt_copy(dqo, qo, sizeof(int32_t) * (size_t)nb1);
    if (fi_rt_graph_replay(graph) != FI_SUCCESS) return 1;
    /* The runtime called directly on the same inputs (host plans). */
    direct_step(ctx, p, tiles, pg, qo, ws, ws_bytes, q, k, v, ref_cache, ref_o);
    fi_rt_synchronize();
    for (int l = 0; l < LAYERS; ++l) {
      char name[48];
      snprintf(name, sizeof(name), "replay %d layer %d o", rep, l);
      bad += compare(name, data_ptr(&dev.out.o[l], FI_DTYPE_BF16), ref_o[l], FI_DTYPE_BF16,
                     nnz * QH * HD);
    }
  }
  for (int l = 0; l < LAYERS; ++l) {
    char name[48];
    snprintf(name, sizeof(name), "graph layer %d cache", l);
    bad += compare(name, dev.cache[l].aligned, ref_cache[l], FI_DTYPE_BF16, nc);
  }
  printf("  graph: %d replays with new query lengths each (last: %lld of %lld rows): %s\n",
         replays, (long long)last_nnz, (long long)cap, bad ? "MISMATCH" : "bit-exact");

  /* GPU time per step at the last replay's query lengths (CUDA events), with the copy
   * ceiling and the kernel sum of the same run. The runs alone use host plans of those
   * lengths in their own device workspace; the device plan alone rewrites it. */
  timed_t tt;
  memset(&tt, 0, sizeof(tt));
  tt.dev = &dev, tt.ctx = ctx, tt.p = p, tt.tiles = tiles;
  tt.table = (fi_page_table){(int32_t *)dev.indptr.aligned, (int32_t *)dev.indices.aligned,
                             (int32_t *)dev.last.aligned};
  tt.nnz = last_nnz, tt.used = used, tt.batch = batch, tt.num_pages = pg->num_pages;
  for (int l = 0; l < LAYERS; ++l) {
    tt.q[l] = dev.q[l].aligned, tt.k[l] = dev.k[l].aligned, tt.v[l] = dev.v[l].aligned;
    tt.cache[l] = dev.cache[l].aligned;
    tt.o[l] = fi_rt_alloc((size_t)nq * 2);
  }
  tt.ws_bytes = ws_bytes;
  tt.ws = fi_rt_alloc(ws_bytes);
  host_plans(ctx, p, tiles, pg, qo, tt.ws, ws_bytes, &tt.aplan, &tt.pplan);
  fi_rt_set_poison(0); /* no memset per allocation in the timed steps */
  step_args timing_args = dev; /* a graph captured without poisoning */
  if (fi_rt_graph_capture(run_step, &timing_args, &tt.graph) != FI_SUCCESS) return 1;
  const double ceiling = copy_ceiling_gbs(stream);
  const double compiled_gpu = gpu_ms_per_call(stream, 20, 9, timed_compiled, &tt);
  const double graph_gpu = gpu_ms_per_call(stream, 20, 9, timed_graph, &tt);
  fi_rt_graph_destroy(tt.graph);
  fi_rt_set_poison(1);
  const double runs_gpu = gpu_ms_per_call(stream, 20, 9, timed_runs, &tt);
  const double plan_gpu = gpu_ms_per_call(stream, 20, 9, timed_plans, &tt);
  /* Bytes the step must move: per layer the KV it attends to (the cache's tokens after the
   * append), q, o, and the appended k and v read and written. */
  const double bytes = (double)LAYERS * ((double)pg->total_kv * 2 * KVH * HD * 2 +
                                         (double)last_nnz * (2 * QH + 4 * KVH) * HD * 2);
  char what[96];
  snprintf(what, sizeof(what), "%lld query rows", (long long)last_nnz);
  print_step_timing(what, bytes, ceiling, compiled_gpu, graph_gpu, runs_gpu, plan_gpu);
  for (int l = 0; l < LAYERS; ++l) fi_rt_free(tt.o[l]);
  fi_rt_free(tt.ws);
  fi_rt_graph_destroy(graph);
  return bad;
}
#endif

int main(int argc, char **argv) {
  int32_t batch = (int32_t)arg_long(argc, argv, "batch", 4);
  int64_t max_kv = arg_long(argc, argv, "max-kv", 512);
  int64_t max_q = arg_long(argc, argv, "max-q", 64);
  int steps = (int)arg_long(argc, argv, "steps", 3);
  int replays = (int)arg_long(argc, argv, "replays", 20);
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
  make_pages(&r, &pg, batch, PS, 1, max_kv, 0);
  int64_t nb1 = batch + 1, nb = batch, used = pg.indptr[batch];
  /* The queries are the new tokens: the last qo_len_i <= kv_len_i of each request. */
  int32_t *append_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)nb1);
  append_indptr[0] = 0;
  for (int32_t i = 0; i < batch; ++i)
    append_indptr[i + 1] = append_indptr[i] +
                           (int32_t)rng_int(&r, 1, pg.kv_len[i] < max_q ? pg.kv_len[i] : max_q);
  int64_t nnz = append_indptr[batch];
  int64_t qs[3] = {nnz, QH, HD}, ns[3] = {nnz, KVH, HD};
  int64_t cs[5] = {pg.num_pages, 2, PS, KVH, HD};
  int64_t nq = numel(3, qs), nn = numel(3, ns), nc = numel(5, cs);
  size_t cache_bytes = (size_t)nc * 2; /* bf16 */
  printf("prefill_step: batch %d, %lld new tokens (queries), %lld KV tokens, %d pages, %d layers\n",
         (int)batch, (long long)nnz, (long long)pg.total_kv, (int)pg.num_pages, LAYERS);

  void *q[LAYERS], *k[LAYERS], *v[LAYERS], *cache[LAYERS], *want_cache[LAYERS];
  memref3 mq[LAYERS], mk[LAYERS], mv[LAYERS];
  memref5 mc[LAYERS];
  for (int l = 0; l < LAYERS; ++l) {
    q[l] = random_tensor(&r, FI_DTYPE_BF16, nq, -2, 2);
    k[l] = random_tensor(&r, FI_DTYPE_BF16, nn, -2, 2);
    v[l] = random_tensor(&r, FI_DTYPE_BF16, nn, -2, 2);
    cache[l] = random_tensor(&r, FI_DTYPE_BF16, nc, -2, 2);
    want_cache[l] = copy_of(cache[l], cache_bytes);
    mr_init(&mq[l], 3, q[l], qs);
    mr_init(&mk[l], 3, k[l], ns);
    mr_init(&mv[l], 3, v[l], ns);
    mr_init(&mc[l], 5, cache[l], cs);
  }
  memref1 mp, mi, ml, ma; /* kv_indptr, kv_indices, kv_last_page_len, qo_indptr */
  mr_init(&mp, 1, pg.indptr, &nb1);
  mr_init(&mi, 1, pg.indices, &used);
  mr_init(&ml, 1, pg.last, &nb);
  mr_init(&ma, 1, append_indptr, &nb1);

  /* Step 1: compiled, then checked. */
  fi_rt_plan_log_reset();
  step_out res;
  double t0 = now_ms();
  STEP(&res, &mq[0], &mk[0], &mv[0], &mc[0], &mq[1], &mk[1], &mv[1], &mc[1],
                           &mq[2], &mk[2], &mv[2], &mc[2], &mq[3], &mk[3], &mv[3], &mc[3], &ma,
                           &mp, &mi, &ml, pg.num_pages);
  fi_rt_synchronize();
  double first_ms = now_ms() - t0;
  fi_op_family fam[8];
  fi_tiles tiles[8];
  int plans = fi_rt_plan_log(fam, tiles, 8);
  long allocs_after_first = fi_rt_workspace_allocations();
  fi_tiles decode_tiles = logged_tiles(1, FI_OP_PAGED_PREFILL);
  printf("  compiled step 1: %.2f ms (plans made: %d -- append, %s; workspace allocations: %ld)\n",
         first_ms, plans, tiles_str(decode_tiles, 0), allocs_after_first);

  fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
  p.q_dtype = p.kv_dtype = FI_DTYPE_BF16;
  p.mask_mode = FI_MASK_CAUSAL;
  p.page_size = PS;
  p.pos_encoding = FI_POS_ROPE_LLAMA;
  p.rope_theta = 500000.0f;
  size_t ws_bytes;
  CHECK_OK(ctx, fi_prefill_workspace_size(ctx, &p, batch, nnz, &ws_bytes));
  void *ws = e2e_alloc(ws_bytes);
  void *want_o[LAYERS];
  for (int l = 0; l < LAYERS; ++l) want_o[l] = poisoned_tensor(FI_DTYPE_BF16, nq);
  double t1 = now_ms();
  direct_step(ctx, &p, &decode_tiles, &pg, append_indptr, ws, ws_bytes, q, k, v, want_cache,
              want_o);
  fi_rt_synchronize();
  double direct_ms = now_ms() - t1;
  void *got_o[LAYERS];
  for (int l = 0; l < LAYERS; ++l) got_o[l] = data_ptr(&res.o[l], FI_DTYPE_BF16);
  int64_t bad = compare_step(LAYERS, got_o, want_o, nq, cache, want_cache, nc, FI_DTYPE_BF16);
  printf("  runtime called directly: %.2f ms; compiled vs direct: %s\n", direct_ms,
         bad ? "MISMATCH" : "bit-exact");
  for (int l = 0; l < LAYERS; ++l) fi_rt_free(res.o[l].allocated);

  /* Steady state: the same step again (appending the same token is idempotent). */
  double t[256];
  if (steps > 256) steps = 256;
  for (int s = 0; s < steps; ++s) {
    double a = now_ms();
    STEP(&res, &mq[0], &mk[0], &mv[0], &mc[0], &mq[1], &mk[1], &mv[1], &mc[1],
                             &mq[2], &mk[2], &mv[2], &mc[2], &mq[3], &mk[3], &mv[3], &mc[3], &ma,
                             &mp, &mi, &ml, pg.num_pages);
    fi_rt_synchronize();
    t[s] = now_ms() - a;
    for (int l = 0; l < LAYERS; ++l) fi_rt_free(res.o[l].allocated);
  }
  bad += report_steady_state(t, steps, fi_rt_workspace_allocations() - allocs_after_first);
#ifdef FI_DRIVER_CUDA
  if (cuda && replays > 0)
    bad += graph_replays(&r, ctx, stream, &p, &decode_tiles, &pg, max_q, cache, replays);
#else
  if (cuda) printf("  graph: not built (compile the driver with -DFI_DRIVER_CUDA)\n");
#endif
  if (!cuda) printf("  graph: skipped (CUDA graphs need the CUDA backend)\n");
  printf("prefill_step: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
