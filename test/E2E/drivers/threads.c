/* Driver of test/E2E/threads.mlir: 4 threads, each on its own host context, call the
 * compiled two-layer decode 30 times with their own random batches (1..40 requests, so
 * workspaces are re-planned and grown while other threads run) and compare every output
 * bit for bit with fi_decode_plan/run called directly on the thread's context. */
#include <pthread.h>

#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_decode_two_layers(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                    memref1 *, memref1 *);

enum { THREADS = 4, CALLS = 30, QH = 8, KVH = 2, HD = 64, PS = 16 };

typedef struct worker {
  int id;
  fi_context *ctx;
  int64_t bad, exact_calls;
} worker;

/* fi_decode_run with a plan of `tiles` on ctx: q -> o, lse. */
static void direct(fi_context *ctx, const fi_attention_params *p, const fi_tiles *tiles,
                   const pages_t *pg, void *k, void *v, void *q, void *o, float *lse) {
  const int32_t b = pg->batch;
  size_t ws_bytes = 0;
  CHECK_OK(ctx, fi_decode_workspace_size(ctx, p, b, &ws_bytes));
  void *ws = xmalloc(ws_bytes);
  fi_plan plan;
  fi_page_table table = {pg->indptr, pg->indices, pg->last};
  CHECK_OK(ctx, fi_decode_plan(ctx, p, b, &table, pg->num_pages, tiles, ws, ws_bytes, &plan));
  int64_t qs[3] = {b, QH, HD}, ls[2] = {b, QH}, cs[4] = {pg->num_pages, PS, KVH, HD};
  fi_paged_kv_cache kv = {fi_tensor_contiguous(k, FI_DTYPE_F16, 4, cs),
                          fi_tensor_contiguous(v, FI_DTYPE_F16, 4, cs), FI_LAYOUT_NHD};
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
  fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  CHECK_OK(ctx, fi_decode_run(ctx, &plan, &tq, &kv, &table, &to, &tl));
  free(ws);
}

static void *run_worker(void *arg) {
  worker *w = (worker *)arg;
  fi_rt_set_thread_context(w->ctx);
  rng r = {1000u + (uint64_t)w->id};
  fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
  p.page_size = PS;
  for (int call = 0; call < CALLS; ++call) {
    const int32_t batch = (int32_t)rng_int(&r, 1, 40);
    pages_t pg;
    make_pages(&r, &pg, batch, PS, 1, 300, 1);
    decode_inputs in;
    decode_inputs_init(&in, &r, batch, QH, KVH, HD, PS, pg.num_pages, pg.indptr, pg.indices,
                       pg.last);
    const int64_t nq = in.nq;
    void *q = in.q, *k = in.k, *v = in.v;
    fi_rt_plan_log_reset(); /* this thread's log */
    o_lse res;
    _mlir_ciface_decode_two_layers(&res, &in.mq, &in.mk, &in.mv, &in.mi, &in.mx, &in.ml);
    const fi_tiles tiles = logged_tiles(0, FI_OP_DECODE);
    /* The runtime, directly: layer 1, then layer 2 on layer 1's output. */
    void *o1 = poisoned_tensor(FI_DTYPE_F16, nq), *o2 = poisoned_tensor(FI_DTYPE_F16, nq);
    float *l1 = (float *)poisoned_tensor(FI_DTYPE_F32, batch * QH);
    float *l2 = (float *)poisoned_tensor(FI_DTYPE_F32, batch * QH);
    direct(w->ctx, &p, &tiles, &pg, k, v, q, o1, l1);
    direct(w->ctx, &p, &tiles, &pg, k, v, o1, o2, l2);
    const char *got_o = (const char *)res.o.aligned + res.o.offset * 2;
    const float *got_l = (const float *)res.lse.aligned + res.lse.offset;
    const int same = memcmp(got_o, o2, (size_t)nq * 2) == 0 &&
                     memcmp(got_l, l2, (size_t)batch * QH * 4) == 0;
    if (!same) {
      printf("MISMATCH thread %d call %d (batch %d)\n", w->id, call, (int)batch);
      ++w->bad;
    } else {
      ++w->exact_calls;
    }
    fi_rt_free(res.o.allocated);
    fi_rt_free(res.lse.allocated);
    decode_inputs_free(&in);
    e2e_free(o1), e2e_free(o2), e2e_free(l1), e2e_free(l2);
    free_pages(&pg);
  }
  return NULL;
}

int main(void) {
  e2e_setup();
  worker w[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    w[i].id = i;
    w[i].bad = w[i].exact_calls = 0;
    if (fi_context_create(FI_BACKEND_HOST, &w[i].ctx) != FI_SUCCESS) return 1;
    fi_context_set_num_threads(w[i].ctx, 1);
  }
  for (int i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, run_worker, &w[i]);
  int64_t bad = 0, exact = 0;
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(t[i], NULL);
    bad += w[i].bad;
    exact += w[i].exact_calls;
  }
  printf("threads: %d threads x %d calls, %lld calls bit-exact\n", THREADS, CALLS,
         (long long)exact);
  for (int i = 0; i < THREADS; ++i) fi_context_destroy(w[i].ctx);
  printf("E2E threads: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
