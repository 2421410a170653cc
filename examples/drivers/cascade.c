/* Runs examples/cascade.mlir compiled by fi-to-llvm: 8 requests that share a long prefix
 * decode one token each (32 q heads, 8 KV heads, head_dim 128, page 16, fp16, 2 layers);
 * the prefix is attended once for all 8 queries (paged prefill with one 8-row request),
 * the unique suffixes by batch decode, the two states merged with fi.merge_state.
 * Checked bit-for-bit against the same three runtime calls made directly, and against a
 * plain (non-cascade) decode over prefix + suffix pages (a different summation order, so
 * to fp16 rounding), then timed.
 * CUDA only (built with -DFI_DRIVER_CUDA): the step on device buffers, captured once in a
 * CUDA graph on the driver's stream and replayed --replays times with new suffix lengths
 * (the suffix page table rewritten in device memory), each replay compared bit for bit with
 * the runtime called directly; then GPU times per step (CUDA events) beside the kernel sum
 * and the HBM floor.
 * Options: --prefix-pages=64 --max-suffix=200 --steps=5 --replays=20 */
#include "example.h"

enum { REQ = 8, LAYERS = 2, QH = 32, KVH = 8, HD = 128, PS = 16 };

typedef struct { memref3 o0, o1; } cascade_out;
void _mlir_ciface_cascade_decode_step(cascade_out *, memref3 *, memref5 *, memref3 *,
                                      memref5 *, memref1 *, memref1 *, memref1 *, memref1 *,
                                      memref1 *, memref1 *, memref1 *, int64_t);

/* Everything one call of the compiled step takes. */
typedef struct step_args {
  memref3 q[LAYERS];
  memref5 cache[LAYERS];
  memref1 pqo, pind, pidx, plast, sind, sidx, slast;
  int64_t num_pages;
  cascade_out out;
} step_args;

static void run_step(void *user) {
  step_args *a = (step_args *)user;
  _mlir_ciface_cascade_decode_step(&a->out, &a->q[0], &a->cache[0], &a->q[1], &a->cache[1],
                                   &a->pqo, &a->pind, &a->pidx, &a->plast, &a->sind, &a->sidx,
                                   &a->slast, a->num_pages);
}

/* The runtime's runs of one cascade step with plans made beforehand: per layer the prefix
 * (one 8-row request, with its lse), the suffix decode (with its lse), and the merge into
 * o[l]. The partial states and the merged lse live in `tmp` (5 buffers per layer). */
typedef struct cascade_runs {
  fi_context *ctx;
  fi_plan pplan, splan;
  fi_page_table pt, st;
  const int32_t *p_qo;
  void *q[LAYERS], *cache[LAYERS], *o[LAYERS], *tmp[LAYERS][5];
  int32_t num_pages;
} cascade_runs;

static void step_runs(void *user) {
  cascade_runs *c = (cascade_runs *)user;
  int64_t qs[3] = {REQ, QH, HD}, cs[5] = {c->num_pages, 2, PS, KVH, HD}, ls[2] = {REQ, QH};
  for (int l = 0; l < LAYERS; ++l) {
    fi_tensor tc = fi_tensor_contiguous(c->cache[l], FI_DTYPE_F16, 5, cs);
    fi_paged_kv_cache kvc;
    CHECK_OK(c->ctx, fi_paged_kv_cache_from_combined(&tc, FI_LAYOUT_NHD, &kvc));
    fi_tensor tq = fi_tensor_contiguous(c->q[l], FI_DTYPE_F16, 3, qs);
    fi_tensor top = fi_tensor_contiguous(c->tmp[l][0], FI_DTYPE_F16, 3, qs);
    fi_tensor tos = fi_tensor_contiguous(c->tmp[l][1], FI_DTYPE_F16, 3, qs);
    fi_tensor tlp = fi_tensor_contiguous(c->tmp[l][2], FI_DTYPE_F32, 2, ls);
    fi_tensor tls = fi_tensor_contiguous(c->tmp[l][3], FI_DTYPE_F32, 2, ls);
    fi_tensor tw = fi_tensor_contiguous(c->o[l], FI_DTYPE_F16, 3, qs);
    fi_tensor tlo = fi_tensor_contiguous(c->tmp[l][4], FI_DTYPE_F32, 2, ls);
    CHECK_OK(c->ctx, fi_paged_prefill_run(c->ctx, &c->pplan, &tq, c->p_qo, &kvc, &c->pt, NULL,
                                          &top, &tlp));
    CHECK_OK(c->ctx, fi_decode_run(c->ctx, &c->splan, &tq, &kvc, &c->st, &tos, &tls));
    CHECK_OK(c->ctx, fi_merge_state(c->ctx, &top, &tlp, &tos, &tls, &tw, &tlo));
  }
}

#ifdef FI_DRIVER_CUDA
static fi_rt_graph *timed_graph_of;
static void timed_graph(void *u) { (void)u; fi_rt_graph_replay(timed_graph_of); }
static void timed_compiled(void *u) {
  step_args a = *(step_args *)u; /* its own outputs: the captured step's are the graph's */
  run_step(&a);
  fi_rt_free(a.out.o0.allocated);
  fi_rt_free(a.out.o1.allocated);
}
typedef struct cascade_plans {
  fi_context *ctx;
  const fi_attention_params *p;
  const fi_tiles *prefix_tiles, *suffix_tiles;
  const int32_t *p_qo;
  fi_page_table pt, st;
  int64_t prefix_pages, suffix_cap;
  int32_t num_pages;
  void *pws, *sws;
  size_t pws_bytes, sws_bytes;
} cascade_plans;
/* The step's two device plans alone. */
static void timed_plans(void *u) {
  cascade_plans *c = (cascade_plans *)u;
  fi_plan pp, sp;
  CHECK_OK(c->ctx, fi_paged_prefill_plan_device(c->ctx, c->p, 1, c->p_qo, REQ, &c->pt,
                                                c->prefix_pages, c->num_pages, c->prefix_tiles,
                                                c->pws, c->pws_bytes, &pp));
  CHECK_OK(c->ctx, fi_decode_plan_device(c->ctx, c->p, REQ, &c->st, c->suffix_cap, c->num_pages,
                                         c->suffix_tiles, c->sws, c->sws_bytes, &sp));
}
#endif

int main(int argc, char **argv) {
  int32_t prefix_pages = (int32_t)arg_long(argc, argv, "prefix-pages", 64);
  int64_t max_suffix = arg_long(argc, argv, "max-suffix", 200);
  int steps = (int)arg_long(argc, argv, "steps", 5);
  int replays = (int)arg_long(argc, argv, "replays", 20);
  rng r = {(uint64_t)arg_long(argc, argv, "seed", 1) * 0x9e3779b97f4a7c15ull + 3};
  e2e_setup();
  fi_context *ctx = fi_default_context();

  /* Page ids: a random permutation; the prefix takes the first prefix_pages, the suffixes
   * the next ones. The prefix is whole pages, so prefix + suffix is a valid page list. */
  int64_t suffix_len[REQ], suffix_pages[REQ], total_suffix_pages = 0;
  for (int i = 0; i < REQ; ++i) {
    suffix_len[i] = rng_int(&r, 1, max_suffix);
    suffix_pages[i] = (suffix_len[i] + PS - 1) / PS;
    total_suffix_pages += suffix_pages[i];
  }
  int32_t num_pages = (int32_t)(prefix_pages + total_suffix_pages + 3);
  int32_t *perm = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)num_pages);
  for (int32_t i = 0; i < num_pages; ++i) perm[i] = i;
  for (int32_t i = num_pages - 1; i > 0; --i) {
    int32_t j = (int32_t)rng_int(&r, 0, i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int32_t *p_qo = (int32_t *)e2e_alloc(8), *p_indptr = (int32_t *)e2e_alloc(8);
  int32_t *p_indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)prefix_pages);
  int32_t *p_last = (int32_t *)e2e_alloc(4);
  p_qo[0] = 0, p_qo[1] = REQ, p_indptr[0] = 0, p_indptr[1] = prefix_pages, p_last[0] = PS;
  memcpy(p_indices, perm, sizeof(int32_t) * (size_t)prefix_pages);
  int32_t *s_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (REQ + 1));
  int32_t *s_indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)total_suffix_pages);
  int32_t *s_last = (int32_t *)e2e_alloc(sizeof(int32_t) * REQ);
  /* The plain decode's page table: the prefix pages, then the request's suffix pages. */
  int32_t *f_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (REQ + 1));
  int32_t *f_indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(REQ * prefix_pages + total_suffix_pages));
  s_indptr[0] = f_indptr[0] = 0;
  int32_t next = prefix_pages;
  for (int i = 0; i < REQ; ++i) {
    s_indptr[i + 1] = s_indptr[i] + (int32_t)suffix_pages[i];
    s_last[i] = (int32_t)(suffix_len[i] - (suffix_pages[i] - 1) * PS);
    f_indptr[i + 1] = f_indptr[i] + prefix_pages + (int32_t)suffix_pages[i];
    memcpy(f_indices + f_indptr[i], p_indices, sizeof(int32_t) * (size_t)prefix_pages);
    for (int64_t k = 0; k < suffix_pages[i]; ++k) {
      s_indices[s_indptr[i] + k] = perm[next];
      f_indices[f_indptr[i] + prefix_pages + k] = perm[next++];
    }
  }
  printf("cascade: %d requests share a %d-token prefix (%d pages) + suffixes of 1..%lld tokens, "
         "%d layers\n", REQ, prefix_pages * PS, (int)prefix_pages, (long long)max_suffix, LAYERS);

  int64_t qs[3] = {REQ, QH, HD}, cs[5] = {num_pages, 2, PS, KVH, HD}, ls[2] = {REQ, QH};
  int64_t nq = numel(3, qs), nc = numel(5, cs), nl = numel(2, ls);
  void *q[LAYERS], *cache[LAYERS];
  memref3 mq[LAYERS];
  memref5 mc[LAYERS];
  for (int l = 0; l < LAYERS; ++l) {
    q[l] = random_tensor(&r, FI_DTYPE_F16, nq, -2, 2);
    cache[l] = random_tensor(&r, FI_DTYPE_F16, nc, -2, 2);
    mr_init(&mq[l], 3, q[l], qs);
    mr_init(&mc[l], 5, cache[l], cs);
  }
  int64_t two = 2, one = 1, npp = prefix_pages, nreq1 = REQ + 1, nreq = REQ, nsp = total_suffix_pages;
  memref1 m_pqo, m_pind, m_pidx, m_plast, m_sind, m_sidx, m_slast;
  mr_init(&m_pqo, 1, p_qo, &two);
  mr_init(&m_pind, 1, p_indptr, &two);
  mr_init(&m_pidx, 1, p_indices, &npp);
  mr_init(&m_plast, 1, p_last, &one);
  mr_init(&m_sind, 1, s_indptr, &nreq1);
  mr_init(&m_sidx, 1, s_indices, &nsp);
  mr_init(&m_slast, 1, s_last, &nreq);

  fi_rt_plan_log_reset();
  cascade_out res;
  double t0 = now_ms();
  _mlir_ciface_cascade_decode_step(&res, &mq[0], &mc[0], &mq[1], &mc[1], &m_pqo, &m_pind, &m_pidx,
                                   &m_plast, &m_sind, &m_sidx, &m_slast, num_pages);
  fi_rt_synchronize();
  double first_ms = now_ms() - t0;
  fi_tiles prefix_tiles = logged_tiles(0, FI_OP_PAGED_PREFILL);
  fi_tiles suffix_tiles = logged_tiles(1, FI_OP_DECODE);
  long allocs_after_first = fi_rt_workspace_allocations();
  printf("  compiled step 1: %.2f ms (plans: prefix %s, suffix %s)\n", first_ms,
         tiles_str(prefix_tiles, 0), tiles_str(suffix_tiles, 1));

  /* The runtime directly: prefix (one 8-row request), suffix decode, merge. */
  fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
  p.page_size = PS;
  size_t pws_bytes, sws_bytes, fws_bytes;
  CHECK_OK(ctx, fi_prefill_workspace_size(ctx, &p, 1, REQ, &pws_bytes));
  CHECK_OK(ctx, fi_decode_workspace_size(ctx, &p, REQ, &sws_bytes));
  CHECK_OK(ctx, fi_decode_workspace_size(ctx, &p, REQ, &fws_bytes));
  void *pws = e2e_alloc(pws_bytes), *sws = e2e_alloc(sws_bytes), *fws = e2e_alloc(fws_bytes);
  fi_page_table pt = {p_indptr, p_indices, p_last}, st = {s_indptr, s_indices, s_last};
  fi_page_table ft = {f_indptr, f_indices, s_last};
  fi_plan pplan, splan, fplan;
  double t1 = now_ms();
  CHECK_OK(ctx, fi_paged_prefill_plan(ctx, &p, 1, p_qo, &pt, num_pages, NULL, &prefix_tiles, pws, pws_bytes, &pplan));
  CHECK_OK(ctx, fi_decode_plan(ctx, &p, REQ, &st, num_pages, &suffix_tiles, sws, sws_bytes, &splan));
  void *want[LAYERS], *plain[LAYERS];
  for (int l = 0; l < LAYERS; ++l) {
    fi_tensor tc = fi_tensor_contiguous(cache[l], FI_DTYPE_F16, 5, cs);
    fi_paged_kv_cache kvc;
    CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&tc, FI_LAYOUT_NHD, &kvc));
    fi_tensor tq = fi_tensor_contiguous(q[l], FI_DTYPE_F16, 3, qs);
    void *op = poisoned_tensor(FI_DTYPE_F16, nq), *os = poisoned_tensor(FI_DTYPE_F16, nq);
    void *lp = poisoned_tensor(FI_DTYPE_F32, nl), *lsf = poisoned_tensor(FI_DTYPE_F32, nl);
    void *ls_out = poisoned_tensor(FI_DTYPE_F32, nl);
    want[l] = poisoned_tensor(FI_DTYPE_F16, nq);
    fi_tensor top = fi_tensor_contiguous(op, FI_DTYPE_F16, 3, qs), tos = fi_tensor_contiguous(os, FI_DTYPE_F16, 3, qs);
    fi_tensor tlp = fi_tensor_contiguous(lp, FI_DTYPE_F32, 2, ls), tls = fi_tensor_contiguous(lsf, FI_DTYPE_F32, 2, ls);
    fi_tensor tw = fi_tensor_contiguous(want[l], FI_DTYPE_F16, 3, qs);
    fi_tensor tlo = fi_tensor_contiguous(ls_out, FI_DTYPE_F32, 2, ls);
    CHECK_OK(ctx, fi_paged_prefill_run(ctx, &pplan, &tq, p_qo, &kvc, &pt, NULL, &top, &tlp));
    CHECK_OK(ctx, fi_decode_run(ctx, &splan, &tq, &kvc, &st, &tos, &tls));
    CHECK_OK(ctx, fi_merge_state(ctx, &top, &tlp, &tos, &tls, &tw, &tlo));
    e2e_free(op), e2e_free(os), e2e_free(lp), e2e_free(lsf), e2e_free(ls_out);
  }
  fi_rt_synchronize();
  double direct_ms = now_ms() - t1;
  /* A plain decode over prefix + suffix pages: what cascade must equal up to rounding. */
  double t2 = now_ms();
  CHECK_OK(ctx, fi_decode_plan(ctx, &p, REQ, &ft, num_pages, NULL, fws, fws_bytes, &fplan));
  for (int l = 0; l < LAYERS; ++l) {
    fi_tensor tc = fi_tensor_contiguous(cache[l], FI_DTYPE_F16, 5, cs);
    fi_paged_kv_cache kvc;
    CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&tc, FI_LAYOUT_NHD, &kvc));
    fi_tensor tq = fi_tensor_contiguous(q[l], FI_DTYPE_F16, 3, qs);
    plain[l] = poisoned_tensor(FI_DTYPE_F16, nq);
    fi_tensor tp = fi_tensor_contiguous(plain[l], FI_DTYPE_F16, 3, qs);
    CHECK_OK(ctx, fi_decode_run(ctx, &fplan, &tq, &kvc, &ft, &tp, NULL));
  }
  fi_rt_synchronize();
  double plain_ms = now_ms() - t2;

  int64_t bad = 0;
  double max_rel = 0;
  for (int l = 0; l < LAYERS; ++l) {
    void *got = host_copy_of(data_ptr(l ? (void *)&res.o1 : (void *)&res.o0, FI_DTYPE_F16),
                             (size_t)nq * 2);
    bad += compare(l ? "layer 1 o" : "layer 0 o", got, want[l], FI_DTYPE_F16, nq);
    for (int64_t i = 0; i < nq; ++i) {
      double g = fi_load_f32(got, FI_DTYPE_F16, i), w = fi_load_f32(plain[l], FI_DTYPE_F16, i);
      double rel = fabs(g - w) / (1 + fabs(w));
      if (!(rel <= 1e-2)) {
        if (bad < 5) printf("MISMATCH cascade vs plain decode [%lld]: %g vs %g\n", (long long)i, g, w);
        ++bad;
      }
      if (rel > max_rel) max_rel = rel;
    }
    free(got);
  }
  printf("  runtime called directly (prefix + suffix + merge): %.2f ms; compiled vs direct: %s\n",
         direct_ms, bad ? "MISMATCH" : "bit-exact");
  printf("  plain decode over prefix + suffix pages: %.2f ms; cascade vs plain: max |diff|/(1+|x|) "
         "= %.2e (fp16 rounding)\n", plain_ms, max_rel);
  fi_rt_free(res.o0.allocated);
  fi_rt_free(res.o1.allocated);

  double t[256];
  if (steps > 256) steps = 256;
  for (int s = 0; s < steps; ++s) {
    double a = now_ms();
    _mlir_ciface_cascade_decode_step(&res, &mq[0], &mc[0], &mq[1], &mc[1], &m_pqo, &m_pind,
                                     &m_pidx, &m_plast, &m_sind, &m_sidx, &m_slast, num_pages);
    fi_rt_synchronize();
    t[s] = now_ms() - a;
    fi_rt_free(res.o0.allocated);
    fi_rt_free(res.o1.allocated);
  }
  long extra = fi_rt_workspace_allocations() - allocs_after_first;
  printf("  compiled steps 2..%d: median %.2f ms per step; workspace allocations after step 1: %ld\n",
         steps + 1, median(t, steps), extra);
  if (extra) ++bad;

#ifdef FI_DRIVER_CUDA
  if (fi_context_backend(ctx) == FI_BACKEND_CUDA && replays > 0) {
    /* The step on device buffers, on the driver's own stream, captured once and replayed
     * with new suffix lengths (each request keeps its pages; the tail shrinks or grows
     * within them), every replay against the runtime called directly with host plans. */
    cudaStream_t stream = NULL;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 2;
    CHECK_OK(ctx, fi_context_set_stream(ctx, stream));
    step_args dev;
    memset(&dev, 0, sizeof(dev));
    for (int l = 0; l < LAYERS; ++l) {
      mr_init(&dev.q[l], 3, device_copy(q[l], (size_t)nq * 2), qs);
      mr_init(&dev.cache[l], 5, device_copy(cache[l], (size_t)nc * 2), cs);
    }
    int32_t *d_sind = (int32_t *)device_copy(s_indptr, sizeof(int32_t) * (REQ + 1));
    int32_t *d_sidx = (int32_t *)device_copy(s_indices, sizeof(int32_t) * (size_t)nsp);
    int32_t *d_slast = (int32_t *)device_copy(s_last, sizeof(int32_t) * REQ);
    mr_init(&dev.pqo, 1, device_copy(p_qo, 8), &two);
    mr_init(&dev.pind, 1, device_copy(p_indptr, 8), &two);
    mr_init(&dev.pidx, 1, device_copy(p_indices, sizeof(int32_t) * (size_t)npp), &npp);
    mr_init(&dev.plast, 1, device_copy(p_last, 4), &one);
    mr_init(&dev.sind, 1, d_sind, &nreq1);
    mr_init(&dev.sidx, 1, d_sidx, &nsp); /* its capacity: the plan reads indptr */
    mr_init(&dev.slast, 1, d_slast, &nreq);
    dev.num_pages = num_pages;
    fi_rt_synchronize();
    fi_rt_graph *graph = NULL;
    if (fi_rt_graph_capture(run_step, &dev, &graph) != FI_SUCCESS) {
      printf("MISMATCH: capturing the step failed\n");
      return 1;
    }
    /* The direct runtime on the managed buffers, with its own partial-state buffers. */
    cascade_runs direct;
    memset(&direct, 0, sizeof(direct));
    direct.ctx = ctx, direct.p_qo = p_qo, direct.num_pages = num_pages;
    direct.pt = pt, direct.st = st;
    for (int l = 0; l < LAYERS; ++l) {
      direct.q[l] = q[l], direct.cache[l] = cache[l], direct.o[l] = want[l];
      for (int j = 0; j < 5; ++j) direct.tmp[l][j] = e2e_alloc((size_t)nq * 4);
    }
    int32_t *orig_indices = (int32_t *)copy_of(s_indices, sizeof(int32_t) * (size_t)nsp);
    int64_t graph_bad = 0, tokens = 0, first_page[REQ];
    for (int i = 0; i < REQ; ++i) first_page[i] = i ? first_page[i - 1] + suffix_pages[i - 1] : 0;
    for (int rep = 0; rep < replays; ++rep) {
      /* New suffix lengths within each request's pages, packed into the same arrays. */
      tokens = 0;
      for (int i = 0; i < REQ; ++i) {
        int64_t len = rng_int(&r, 1, suffix_pages[i] * PS), pages = (len + PS - 1) / PS;
        s_indptr[i + 1] = s_indptr[i] + (int32_t)pages;
        memcpy(s_indices + s_indptr[i], orig_indices + first_page[i],
               sizeof(int32_t) * (size_t)pages);
        s_last[i] = (int32_t)(len - (pages - 1) * PS);
        tokens += len;
      }
      fi_rt_copy(d_sind, s_indptr, sizeof(int32_t) * (REQ + 1));
      fi_rt_copy(d_sidx, s_indices, sizeof(int32_t) * (size_t)s_indptr[REQ]);
      fi_rt_copy(d_slast, s_last, sizeof(int32_t) * REQ);
      if (fi_rt_graph_replay(graph) != FI_SUCCESS) return 1;
      for (int l = 0; l < LAYERS; ++l) poison(want[l], (size_t)nq * 2);
      CHECK_OK(ctx, fi_decode_plan(ctx, &p, REQ, &st, num_pages, &suffix_tiles, sws, sws_bytes,
                                   &direct.splan));
      direct.pplan = pplan;
      step_runs(&direct);
      fi_rt_synchronize();
      for (int l = 0; l < LAYERS; ++l) {
        char name[48];
        snprintf(name, sizeof(name), "replay %d layer %d o", rep, l);
        memref3 *o = l ? &dev.out.o1 : &dev.out.o0;
        graph_bad += compare(name, data_ptr(o, FI_DTYPE_F16), want[l], FI_DTYPE_F16, nq);
      }
    }
    printf("  graph: %d replays with new suffix lengths each (last: %lld suffix tokens): %s\n",
           replays, (long long)tokens, graph_bad ? "MISMATCH" : "bit-exact");
    bad += graph_bad;

    /* GPU time per step (the last replay's lengths): the runs alone on device buffers with
     * host plans in device workspaces, the two device plans alone, compiled and graph. */
    cascade_runs runs = direct;
    runs.pt = (fi_page_table){(int32_t *)dev.pind.aligned, (int32_t *)dev.pidx.aligned,
                              (int32_t *)dev.plast.aligned};
    runs.st = (fi_page_table){d_sind, d_sidx, d_slast};
    runs.p_qo = (const int32_t *)dev.pqo.aligned;
    void *dpws = fi_rt_alloc(pws_bytes), *dsws = fi_rt_alloc(sws_bytes);
    CHECK_OK(ctx, fi_paged_prefill_plan(ctx, &p, 1, p_qo, &pt, num_pages, NULL, &prefix_tiles,
                                        dpws, pws_bytes, &runs.pplan));
    CHECK_OK(ctx, fi_decode_plan(ctx, &p, REQ, &st, num_pages, &suffix_tiles, dsws, sws_bytes,
                                 &runs.splan));
    for (int l = 0; l < LAYERS; ++l) {
      runs.q[l] = dev.q[l].aligned, runs.cache[l] = dev.cache[l].aligned;
      runs.o[l] = fi_rt_alloc((size_t)nq * 2);
      for (int j = 0; j < 5; ++j) runs.tmp[l][j] = fi_rt_alloc((size_t)nq * 4);
    }
    cascade_plans cp = {ctx, &p, &prefix_tiles, &suffix_tiles, runs.p_qo, runs.pt, runs.st,
                        prefix_pages, nsp, num_pages, dpws, dsws, pws_bytes, sws_bytes};
    fi_rt_set_poison(0); /* no memset per allocation in the timed steps */
    step_args timing_args = dev; /* a graph captured without poisoning */
    if (fi_rt_graph_capture(run_step, &timing_args, &timed_graph_of) != FI_SUCCESS) return 1;
    const double ceiling = copy_ceiling_gbs(stream);
    const double compiled_gpu = gpu_ms_per_call(stream, 20, 9, timed_compiled, &dev);
    const double graph_gpu = gpu_ms_per_call(stream, 20, 9, timed_graph, NULL);
    const double runs_gpu = gpu_ms_per_call(stream, 20, 9, step_runs, &runs);
    const double plan_gpu = gpu_ms_per_call(stream, 20, 9, timed_plans, &cp);
    /* Bytes: per layer the prefix pages once and every suffix token (K and V), q, o. */
    const double bytes = (double)LAYERS * ((double)(prefix_pages * PS + tokens) * 2 * KVH * HD * 2 +
                                           (double)nq * 2 * 2);
    print_step_timing("last replay's lengths", bytes, ceiling, compiled_gpu, graph_gpu, runs_gpu,
                      plan_gpu);
    fi_rt_graph_destroy(timed_graph_of);
    fi_rt_set_poison(1);
    fi_rt_graph_destroy(graph);
  }
#endif
  (void)replays;
  printf("cascade: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
