/* Driver of test/E2E/shared_prefix.mlir: random page tables whose requests share leading
 * pages; the compiled decode against the runtime's composition (bit for bit) and against
 * a plain decode (within f16 rounding). Odd trials install lanes (fi_rt_set_lanes; the
 * compiled prefix runs in the main lane, the suffix decode in the side lane) and make the
 * composition in the same lanes; where the driver has no green contexts the trials say so
 * and run without. */
#include "e2e.h"
#include "fi/lanes.h"

typedef struct { memref3 o; memref2 lse; } o_lse;
void _mlir_ciface_decode_shared(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                memref1 *, memref1 *);

enum { QH = 8, KVH = 2, HD = 64, PAGE = 16, TRIALS = 16 };

int main(void) {
  e2e_setup();
  fi_context *ctx = fi_default_context();
  rng r = {4242};
  int64_t bad = 0;
  int exact = 0, in_lanes = 0;
  double worst = 0;
  fi_lanes *lanes = NULL;
  const fi_status made = fi_lanes_create(ctx, 0, &lanes);
  if (made == FI_ERROR_UNSUPPORTED)
    printf("note: no lanes (%s)\n", fi_last_error(ctx));
  else
    CHECK_OK(ctx, made);
  for (int trial = 0; trial < TRIALS; ++trial) {
    fi_lanes *use = trial % 2 ? lanes : NULL;
    CHECK_OK(ctx, fi_rt_set_lanes(ctx, use));
    in_lanes += use != NULL;
    /* Page tables: `shared` pages common to every request (trial 0: none), then each
     * request's own 1-5 pages, all ids distinct and shuffled over the cache. */
    const int32_t batch = trial == 1 ? 1 : (int32_t)rng_int(&r, 1, 9);
    const int32_t shared = trial == 0 ? 0 : (int32_t)rng_int(&r, 0, 40);
    int32_t own[16], total_own = 0;
    for (int32_t i = 0; i < batch; ++i) total_own += own[i] = (int32_t)rng_int(&r, 1, 5);
    const int32_t num_pages = shared + total_own + 3;
    int32_t *ids = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)num_pages);
    for (int32_t i = 0; i < num_pages; ++i) ids[i] = i;
    for (int32_t i = num_pages - 1; i > 0; --i) {
      int32_t j = (int32_t)rng_int(&r, 0, i), t = ids[i];
      ids[i] = ids[j], ids[j] = t;
    }
    int32_t *indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
    int32_t *indices = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch * shared + total_own));
    int32_t *last = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)batch);
    int32_t next_own = shared, n = 0;
    indptr[0] = 0;
    for (int32_t i = 0; i < batch; ++i) {
      for (int32_t j = 0; j < shared; ++j) indices[n++] = ids[j];
      for (int32_t j = 0; j < own[i]; ++j) indices[n++] = ids[next_own++];
      indptr[i + 1] = n;
      last[i] = (int32_t)rng_int(&r, 1, PAGE);
    }
    decode_inputs in;
    decode_inputs_init(&in, &r, batch, QH, KVH, HD, PAGE, num_pages, indptr, indices, last);
    const int64_t *qs = in.qs, *cs = in.cs, ls[2] = {batch, QH}, nq = in.nq;
    void *q = in.q, *k = in.k, *v = in.v;
    fi_rt_plan_log_reset();
    o_lse res;
    _mlir_ciface_decode_shared(&res, &in.mq, &in.mk, &in.mv, &in.mi, &in.mx, &in.ml);
    /* the two plans the compiled code made, in the order materialize-plans placed them */
    fi_op_family fam[2];
    fi_tiles logged[2];
    if (fi_rt_plan_log(fam, logged, 2) != 2) {
      printf("MISMATCH trial %d: the compiled step did not make two plans\n", trial);
      return 1;
    }
    const int pf = fam[0] == FI_OP_PAGED_PREFILL ? 0 : 1;
    const fi_tiles prefill_tiles = logged_tiles(pf, FI_OP_PAGED_PREFILL);
    const fi_tiles decode_tiles = logged_tiles(1 - pf, FI_OP_DECODE);

    /* (1) The runtime's composition, with the compiled code's tiles. */
    fi_attention_params p = fi_attention_params_default(QH, KVH, HD);
    p.page_size = PAGE;
    p.logits_soft_cap = 20.f;
    fi_paged_kv_cache kv;
    kv.k = fi_tensor_contiguous(k, FI_DTYPE_F16, 4, cs);
    kv.v = fi_tensor_contiguous(v, FI_DTYPE_F16, 4, cs);
    kv.layout = FI_LAYOUT_NHD;
    const fi_page_table pages = {indptr, indices, last};
    int32_t *split = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(6 + 2 * n + 2 * batch + 1));
    int32_t *qo = split, *pi = split + 2, *pl = split + 4, *px = split + 5, *sx = px + n;
    int32_t *si = sx + n, *sl = si + batch + 1;
    CHECK_OK(ctx, fi_split_shared_prefix(ctx, batch, PAGE, &pages, num_pages, qo, pi, px, pl,
                                         si, sx, sl));
    if (fi_rt_synchronize() != FI_SUCCESS) return 1; /* (CUDA: the host plans read them) */
    const fi_page_table pre = {pi, px, pl}, suf = {si, sx, sl};
    size_t w1 = 0, w2 = 0;
    CHECK_OK(ctx, fi_prefill_workspace_size(ctx, &p, 1, batch, &w1));
    CHECK_OK(ctx, fi_decode_workspace_size(ctx, &p, batch, &w2));
    void *ws1 = e2e_alloc(w1), *ws2 = e2e_alloc(w2);
    fi_plan plan1, plan2;
    /* (in lanes: each part planned and run in its lane, as the compiled code does) */
    if (use) CHECK_OK(ctx, fi_lanes_enter(use, FI_LANE_MAIN));
    CHECK_OK(ctx, fi_paged_prefill_plan(ctx, &p, 1, qo, &pre, num_pages, NULL, &prefill_tiles,
                                        ws1, w1, &plan1));
    if (use) CHECK_OK(ctx, fi_lanes_leave(use));
    if (use) CHECK_OK(ctx, fi_lanes_enter(use, FI_LANE_SIDE));
    CHECK_OK(ctx, fi_decode_plan(ctx, &p, batch, &suf, num_pages, &decode_tiles, ws2, w2,
                                 &plan2));
    if (use) CHECK_OK(ctx, fi_lanes_leave(use));
    void *o1 = poisoned_tensor(FI_DTYPE_F16, nq), *o2 = poisoned_tensor(FI_DTYPE_F16, nq);
    float *l1 = (float *)poisoned_tensor(FI_DTYPE_F32, batch * QH);
    float *l2 = (float *)poisoned_tensor(FI_DTYPE_F32, batch * QH);
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
    fi_tensor to1 = fi_tensor_contiguous(o1, FI_DTYPE_F16, 3, qs);
    fi_tensor to2 = fi_tensor_contiguous(o2, FI_DTYPE_F16, 3, qs);
    fi_tensor tl1 = fi_tensor_contiguous(l1, FI_DTYPE_F32, 2, ls);
    fi_tensor tl2 = fi_tensor_contiguous(l2, FI_DTYPE_F32, 2, ls);
    if (use) CHECK_OK(ctx, fi_lanes_enter(use, FI_LANE_MAIN));
    CHECK_OK(ctx, fi_paged_prefill_run(ctx, &plan1, &tq, qo, &kv, &pre, NULL, &to1, &tl1));
    if (use) CHECK_OK(ctx, fi_lanes_leave(use));
    if (use) CHECK_OK(ctx, fi_lanes_enter(use, FI_LANE_SIDE));
    CHECK_OK(ctx, fi_decode_run(ctx, &plan2, &tq, &kv, &suf, &to2, &tl2));
    if (use) CHECK_OK(ctx, fi_lanes_leave(use));
    if (use) CHECK_OK(ctx, fi_lanes_join(use));
    CHECK_OK(ctx, fi_merge_state(ctx, &to1, &tl1, &to2, &tl2, &to1, &tl1));
    const char *got_o = (const char *)res.o.aligned + res.o.offset * 2;
    const float *got_l = (const float *)res.lse.aligned + res.lse.offset;
    const int64_t b1 = compare("o", got_o, o1, FI_DTYPE_F16, nq);
    const int64_t b2 = compare("lse", got_l, l1, FI_DTYPE_F32, batch * QH);
    if (b1 || b2) {
      printf("MISMATCH trial %d (batch %d, %d shared pages): against the composition\n", trial,
             (int)batch, (int)shared);
      ++bad;
    } else {
      ++exact;
    }

    /* (2) A plain decode over the whole page tables. */
    size_t w3 = 0;
    CHECK_OK(ctx, fi_decode_workspace_size(ctx, &p, batch, &w3));
    void *ws3 = e2e_alloc(w3);
    fi_plan plan3;
    CHECK_OK(ctx, fi_decode_plan(ctx, &p, batch, &pages, num_pages, NULL, ws3, w3, &plan3));
    CHECK_OK(ctx, fi_decode_run(ctx, &plan3, &tq, &kv, &pages, &to2, &tl2));
    void *h = host_copy_of(got_o, (size_t)nq * 2);
    for (int64_t i = 0; i < nq; ++i) {
      const double a = fi_load_f32(h, FI_DTYPE_F16, i), b = fi_load_f32(o2, FI_DTYPE_F16, i);
      const double d = fabs(a - b);
      if (d > worst) worst = d;
      if (!(d <= 4e-3 + 4e-3 * fabs(b))) {
        if (bad < 8)
          printf("MISMATCH trial %d o[%lld]: compiled %g, plain decode %g\n", trial,
                 (long long)i, a, b);
        ++bad;
        break;
      }
    }
    free(h);
    fi_rt_free(res.o.allocated);
    fi_rt_free(res.lse.allocated);
    decode_inputs_free(&in);
    e2e_free(ids), e2e_free(indptr), e2e_free(indices);
    e2e_free(last), e2e_free(split), e2e_free(ws1), e2e_free(ws2), e2e_free(ws3);
    e2e_free(o1), e2e_free(o2), e2e_free(l1), e2e_free(l2);
  }
  CHECK_OK(ctx, fi_rt_set_lanes(ctx, NULL));
  fi_lanes_destroy(lanes);
  printf("shared_prefix: %d trials bit-exact against the composition (%d in lanes), within "
         "%.2g of plain decode\n", exact, lanes ? in_lanes : 0, worst);
  printf("E2E shared-prefix: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
