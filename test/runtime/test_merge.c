/* test/runtime/test_merge.c -- merge of attention states on the host: against the float64
 * oracle, commutativity (bitwise), associativity (1e-5), -inf identities, n-ary merge, in
 * place, and split-KV: merging partial states reproduces the unsplit result (1e-5, fp32);
 * the cascade form (an unmerged prefill run, then fi_prefill_merge_run with another
 * state) reproduces the unsplit result too, and its bad input is refused. */
#include "oracle.h"
#include "test_util.h"

enum { ROWS = 37, HEADS = 4, HD = 64 };

static fi_tensor vt(float *d, int64_t rows) {
  int64_t s[3] = {rows, HEADS, HD};
  return fi_tensor_contiguous(d, FI_DTYPE_F32, 3, s);
}
static fi_tensor st(float *d, int64_t rows) {
  int64_t s[2] = {rows, HEADS};
  return fi_tensor_contiguous(d, FI_DTYPE_F32, 2, s);
}

static void random_state(rng *r, float *v, float *s, int empty_every) {
  for (int64_t i = 0; i < (int64_t)ROWS * HEADS * HD; ++i) v[i] = (float)rng_range(r, -1, 1);
  for (int64_t i = 0; i < (int64_t)ROWS * HEADS; ++i)
    s[i] = (empty_every && i % empty_every == 0) ? -INFINITY : (float)rng_range(r, -5, 8);
  if (empty_every)
    for (int64_t i = 0; i < (int64_t)ROWS * HEADS; i += empty_every)
      for (int d = 0; d < HD; ++d) v[i * HD + d] = 0.0f;
}

static void test_pairwise(fi_context *ctx) {
  rng r = {11};
  const size_t nv = (size_t)ROWS * HEADS * HD, ns = (size_t)ROWS * HEADS;
  float *va = xmalloc(4 * nv), *vb = xmalloc(4 * nv), *vc = xmalloc(4 * nv);
  float *sa = xmalloc(4 * ns), *sb = xmalloc(4 * ns), *sc = xmalloc(4 * ns);
  float *o1 = xmalloc(4 * nv), *o2 = xmalloc(4 * nv), *o3 = xmalloc(4 * nv), *o4 = xmalloc(4 * nv);
  float *l1 = xmalloc(4 * ns), *l2 = xmalloc(4 * ns), *l3 = xmalloc(4 * ns), *l4 = xmalloc(4 * ns);
  random_state(&r, va, sa, 5);
  random_state(&r, vb, sb, 7);
  random_state(&r, vc, sc, 0);
  fi_tensor Va = vt(va, ROWS), Vb = vt(vb, ROWS), Vc = vt(vc, ROWS), O1 = vt(o1, ROWS),
            O2 = vt(o2, ROWS), O3 = vt(o3, ROWS), O4 = vt(o4, ROWS);
  fi_tensor Sa = st(sa, ROWS), Sb = st(sb, ROWS), Sc = st(sc, ROWS), L1 = st(l1, ROWS),
            L2 = st(l2, ROWS), L3 = st(l3, ROWS), L4 = st(l4, ROWS);
  poison(o1, 4 * nv); poison(o2, 4 * nv); poison(l1, 4 * ns); poison(l2, 4 * ns);
  EXPECT_OK(fi_merge_state(ctx, &Va, &Sa, &Vb, &Sb, &O1, &L1), ctx);
  EXPECT_OK(fi_merge_state(ctx, &Vb, &Sb, &Va, &Sa, &O2, &L2), ctx);
  EXPECT(memcmp(o1, o2, 4 * nv) == 0 && memcmp(l1, l2, 4 * ns) == 0,
         "merge(a, b) != merge(b, a) bitwise");
  /* oracle */
  int64_t bad = 0;
  for (int64_t x = 0; x < (int64_t)ns; ++x) {
    double v[2 * HD], s[2] = {sa[x], sb[x]}, vo[HD], so;
    for (int d = 0; d < HD; ++d) v[d] = va[x * HD + d], v[HD + d] = vb[x * HD + d];
    oracle_merge(2, HD, v, s, vo, &so);
    if (!close_enough(l1[x], so, 1e-5, 1e-5)) bad++;
    for (int d = 0; d < HD; ++d)
      if (!close_enough(o1[x * HD + d], vo[d], 1e-6, 1e-5)) bad++;
    if (sa[x] == -INFINITY && sb[x] == -INFINITY)
      EXPECT(l1[x] == -INFINITY && o1[x * HD] == 0.0f, "empty + empty is not empty");
    if (sa[x] == -INFINITY && sb[x] != -INFINITY) /* identity */
      for (int d = 0; d < HD; ++d)
        if (o1[x * HD + d] != vb[x * HD + d] || l1[x] != sb[x]) { bad++; break; }
  }
  EXPECT(bad == 0, "merge_state: %lld elements differ from the oracle / identity", (long long)bad);
  /* associativity: (a+b)+c vs a+(b+c) */
  EXPECT_OK(fi_merge_state(ctx, &O1, &L1, &Vc, &Sc, &O3, &L3), ctx);
  EXPECT_OK(fi_merge_state(ctx, &Vb, &Sb, &Vc, &Sc, &O4, &L4), ctx);
  EXPECT_OK(fi_merge_state(ctx, &Va, &Sa, &O4, &L4, &O4, &L4), ctx); /* in place on b+c */
  bad = 0;
  for (size_t i = 0; i < nv; ++i)
    if (!close_enough(o3[i], o4[i], 1e-6, 1e-5)) bad++;
  for (size_t i = 0; i < ns; ++i)
    if (!close_enough(l3[i], l4[i], 1e-6, 1e-5)) bad++;
  EXPECT(bad == 0, "merge is not associative to 1e-5: %lld elements", (long long)bad);
  /* n-ary: merge_states over [a, b, c] equals the pairwise chain */
  float *vn = xmalloc(4 * 3 * nv), *sn = xmalloc(4 * 3 * ns), *on = xmalloc(4 * nv), *ln = xmalloc(4 * ns);
  for (int64_t x = 0; x < ROWS; ++x)
    for (int c = 0; c < 3; ++c) {
      const float *sv = c == 0 ? va : c == 1 ? vb : vc, *ss = c == 0 ? sa : c == 1 ? sb : sc;
      memcpy(vn + ((x * 3 + c) * HEADS) * HD, sv + x * HEADS * HD, 4 * HEADS * HD);
      memcpy(sn + (x * 3 + c) * HEADS, ss + x * HEADS, 4 * HEADS);
    }
  int64_t s4[4] = {ROWS, 3, HEADS, HD}, s3[3] = {ROWS, 3, HEADS};
  fi_tensor Vn = fi_tensor_contiguous(vn, FI_DTYPE_F32, 4, s4), Sn = fi_tensor_contiguous(sn, FI_DTYPE_F32, 3, s3);
  fi_tensor On = vt(on, ROWS), Ln = st(ln, ROWS);
  poison(on, 4 * nv); poison(ln, 4 * ns);
  EXPECT_OK(fi_merge_states(ctx, &Vn, &Sn, &On, &Ln), ctx);
  bad = 0;
  for (size_t i = 0; i < nv; ++i)
    if (!close_enough(on[i], o3[i], 1e-6, 1e-5)) bad++;
  for (size_t i = 0; i < ns; ++i)
    if (!close_enough(ln[i], l3[i], 1e-6, 1e-5)) bad++;
  EXPECT(bad == 0, "merge_states differs from the pairwise chain: %lld elements", (long long)bad);
  /* f16 / bf16 values */
  uint16_t *ha = xmalloc(2 * nv), *hb = xmalloc(2 * nv), *ho = xmalloc(2 * nv);
  for (int dt = 0; dt < 2; ++dt) {
    fi_dtype d = dt ? FI_DTYPE_BF16 : FI_DTYPE_F16;
    for (size_t i = 0; i < nv; ++i) fi_store_f32(ha, d, (int64_t)i, va[i]), fi_store_f32(hb, d, (int64_t)i, vb[i]);
    poison(ho, 2 * nv);
    fi_tensor Ha = vt((float *)ha, ROWS), Hb = vt((float *)hb, ROWS), Ho = vt((float *)ho, ROWS);
    Ha.dtype = Hb.dtype = Ho.dtype = d;
    EXPECT_OK(fi_merge_state(ctx, &Ha, &Sa, &Hb, &Sb, &Ho, &L2), ctx);
    bad = 0;
    for (size_t i = 0; i < nv; ++i)
      if (!close_enough(fi_load_f32(ho, d, (int64_t)i), o1[i], 1e-2, 1.6e-2)) bad++;
    EXPECT(bad == 0, "%s merge differs: %lld elements", fi_dtype_name(d), (long long)bad);
  }
  free(ha); free(hb); free(ho);
  free(va); free(vb); free(vc); free(sa); free(sb); free(sc); free(o1); free(o2); free(o3); free(o4);
  free(l1); free(l2); free(l3); free(l4); free(vn); free(sn); free(on); free(ln);
}

/* Elements of (o, l) [n_o, n_l] outside 1e-5 of the reference; *worst: the largest |o diff|. */
static int64_t count_off(const float *o, const float *l, const float *o_ref, const float *l_ref,
                         int64_t n_o, int64_t n_l, double *worst) {
  int64_t bad = 0;
  *worst = 0;
  for (int64_t i = 0; i < n_o; ++i) {
    if (!close_enough(o[i], o_ref[i], 1e-6, 1e-5)) bad++;
    if (fabs(o[i] - o_ref[i]) > *worst) *worst = fabs(o[i] - o_ref[i]);
  }
  for (int64_t i = 0; i < n_l; ++i)
    if (!close_enough(l[i], l_ref[i], 1e-6, 1e-5)) bad++;
  return bad;
}

/* Split-KV: attention over KV halves (two ragged runs with LSE) merged equals one run over
 * the whole KV; and the planner's own split (fixed_split_size) equals no split. fp32. */
static void test_split_reproduces_unsplit(fi_context *ctx) {
  rng r = {23};
  const int batch = 3, hq = 8, hkv = 2, hd = 128;
  int32_t qo_len[3] = {5, 1, 17}, kv_len[3] = {300, 77, 513};
  int32_t qo_indptr[4] = {0}, kv_indptr[4] = {0}, lo_indptr[4] = {0}, hi_indptr[4] = {0};
  for (int i = 0; i < batch; ++i) {
    qo_indptr[i + 1] = qo_indptr[i] + qo_len[i];
    kv_indptr[i + 1] = kv_indptr[i] + kv_len[i];
    lo_indptr[i + 1] = lo_indptr[i] + kv_len[i] / 3;
    hi_indptr[i + 1] = hi_indptr[i] + (kv_len[i] - kv_len[i] / 3);
  }
  const int64_t nq = qo_indptr[batch], nk = kv_indptr[batch];
  float *q = xmalloc(4 * (size_t)(nq * hq * hd)), *k = xmalloc(4 * (size_t)(nk * hkv * hd)),
        *v = xmalloc(4 * (size_t)(nk * hkv * hd));
  fill_random(q, FI_DTYPE_F32, nq * hq * hd, &r, -2, 2);
  fill_random(k, FI_DTYPE_F32, nk * hkv * hd, &r, -2, 2);
  fill_random(v, FI_DTYPE_F32, nk * hkv * hd, &r, -1, 1);
  /* the two halves as separate ragged K/V arrays */
  float *klo = xmalloc(4 * (size_t)(nk * hkv * hd)), *vlo = xmalloc(4 * (size_t)(nk * hkv * hd));
  float *khi = xmalloc(4 * (size_t)(nk * hkv * hd)), *vhi = xmalloc(4 * (size_t)(nk * hkv * hd));
  const int64_t tok = (int64_t)hkv * hd;
  for (int i = 0; i < batch; ++i) {
    int32_t cut = kv_len[i] / 3;
    memcpy(klo + lo_indptr[i] * tok, k + kv_indptr[i] * tok, 4 * (size_t)(cut * tok));
    memcpy(vlo + lo_indptr[i] * tok, v + kv_indptr[i] * tok, 4 * (size_t)(cut * tok));
    memcpy(khi + hi_indptr[i] * tok, k + (kv_indptr[i] + cut) * tok, 4 * (size_t)((kv_len[i] - cut) * tok));
    memcpy(vhi + hi_indptr[i] * tok, v + (kv_indptr[i] + cut) * tok, 4 * (size_t)((kv_len[i] - cut) * tok));
  }
  fi_attention_params p = fi_attention_params_default(hq, hkv, hd);
  p.q_dtype = p.kv_dtype = FI_DTYPE_F32;
  p.fixed_split_size = -1;
  size_t bytes = 0;
  EXPECT_OK(fi_prefill_workspace_size(ctx, &p, batch, nq, &bytes), ctx);
  void *ws = xmalloc(bytes);
  int64_t qs[3] = {nq, hq, hd}, ls[2] = {nq, hq};
  float *o_full = xmalloc(4 * (size_t)(nq * hq * hd)), *l_full = xmalloc(4 * (size_t)(nq * hq));
  float *o_a = xmalloc(4 * (size_t)(nq * hq * hd)), *l_a = xmalloc(4 * (size_t)(nq * hq));
  float *o_b = xmalloc(4 * (size_t)(nq * hq * hd)), *l_b = xmalloc(4 * (size_t)(nq * hq));
  fi_tensor Q = fi_tensor_contiguous(q, FI_DTYPE_F32, 3, qs);
  struct { float *o, *l, *k, *v; int32_t *kvp; } runs[3] = {
      {o_full, l_full, k, v, kv_indptr}, {o_a, l_a, klo, vlo, lo_indptr}, {o_b, l_b, khi, vhi, hi_indptr}};
  for (int run = 0; run < 3; ++run) {
    int64_t ks[3] = {runs[run].kvp[batch], hkv, hd};
    fi_tensor K = fi_tensor_contiguous(runs[run].k, FI_DTYPE_F32, 3, ks);
    fi_tensor V = fi_tensor_contiguous(runs[run].v, FI_DTYPE_F32, 3, ks);
    fi_tensor O = fi_tensor_contiguous(runs[run].o, FI_DTYPE_F32, 3, qs);
    fi_tensor L = fi_tensor_contiguous(runs[run].l, FI_DTYPE_F32, 2, ls);
    fi_plan plan;
    EXPECT_OK(fi_ragged_prefill_plan(ctx, &p, batch, qo_indptr, runs[run].kvp, NULL, NULL, ws, bytes, &plan), ctx);
    EXPECT_OK(fi_ragged_prefill_run(ctx, &plan, &Q, &K, &V, qo_indptr, runs[run].kvp, NULL, &O, &L), ctx);
  }
  fi_tensor Oa = fi_tensor_contiguous(o_a, FI_DTYPE_F32, 3, qs), La = fi_tensor_contiguous(l_a, FI_DTYPE_F32, 2, ls);
  fi_tensor Ob = fi_tensor_contiguous(o_b, FI_DTYPE_F32, 3, qs), Lb = fi_tensor_contiguous(l_b, FI_DTYPE_F32, 2, ls);
  EXPECT_OK(fi_merge_state(ctx, &Oa, &La, &Ob, &Lb, &Oa, &La), ctx);
  double worst = 0;
  int64_t bad = count_off(o_a, l_a, o_full, l_full, nq * hq * hd, nq * hq, &worst);
  EXPECT(bad == 0, "merged halves differ from the unsplit run in %lld elements", (long long)bad);
  printf("merge of KV halves vs unsplit: max|diff| %.2e\n", worst);

  /* the planner's split (chunks of 64 tokens, merged by the plan's merge units) */
  int64_t ks[3] = {nk, hkv, hd};
  fi_tensor K = fi_tensor_contiguous(k, FI_DTYPE_F32, 3, ks), V = fi_tensor_contiguous(v, FI_DTYPE_F32, 3, ks);
  fi_tensor O = fi_tensor_contiguous(o_b, FI_DTYPE_F32, 3, qs), L = fi_tensor_contiguous(l_b, FI_DTYPE_F32, 2, ls);
  p.fixed_split_size = 64;
  fi_plan plan;
  EXPECT_OK(fi_ragged_prefill_plan(ctx, &p, batch, qo_indptr, kv_indptr, NULL, NULL, ws, bytes, &plan), ctx);
  EXPECT(plan.num_partial_rows > 0, "fixed_split_size 64 did not split");
  EXPECT_OK(fi_ragged_prefill_run(ctx, &plan, &Q, &K, &V, qo_indptr, kv_indptr, NULL, &O, &L), ctx);
  bad = count_off(o_b, l_b, o_full, l_full, nq * hq * hd, nq * hq, &worst);
  EXPECT(bad == 0, "planner split-KV differs from the unsplit run in %lld elements", (long long)bad);
  printf("planner split-KV (%d partial rows) vs unsplit: max|diff| %.2e\n", plan.num_partial_rows, worst);

  /* The cascade: the last two thirds of each request's keys as an unmerged (split) run,
   * then merged with the first third's state (o_a, l_a: recomputed, the merge above wrote
   * them) -- the whole attention again. */
  {
    int64_t ks_lo[3] = {lo_indptr[batch], hkv, hd}, ks_hi[3] = {hi_indptr[batch], hkv, hd};
    fi_tensor Klo = fi_tensor_contiguous(klo, FI_DTYPE_F32, 3, ks_lo);
    fi_tensor Vlo = fi_tensor_contiguous(vlo, FI_DTYPE_F32, 3, ks_lo);
    fi_tensor Khi = fi_tensor_contiguous(khi, FI_DTYPE_F32, 3, ks_hi);
    fi_tensor Vhi = fi_tensor_contiguous(vhi, FI_DTYPE_F32, 3, ks_hi);
    p.fixed_split_size = -1;
    fi_plan lo_plan, hi_plan;
    EXPECT_OK(fi_ragged_prefill_plan(ctx, &p, batch, qo_indptr, lo_indptr, NULL, NULL, ws, bytes, &lo_plan), ctx);
    EXPECT_OK(fi_ragged_prefill_run(ctx, &lo_plan, &Q, &Klo, &Vlo, qo_indptr, lo_indptr, NULL, &Oa, &La), ctx);
    p.fixed_split_size = 64;
    EXPECT_OK(fi_ragged_prefill_plan(ctx, &p, batch, qo_indptr, hi_indptr, NULL, NULL, ws, bytes, &hi_plan), ctx);
    EXPECT_OK(fi_ragged_prefill_run_unmerged(ctx, &hi_plan, &Q, &Khi, &Vhi, qo_indptr, hi_indptr, NULL, &O, &L), ctx);
    EXPECT_OK(fi_prefill_merge_run(ctx, &hi_plan, &Oa, &La, &O, &L), ctx);
    bad = count_off(o_b, l_b, o_full, l_full, nq * hq * hd, nq * hq, &worst);
    EXPECT(bad == 0, "cascade (unmerged run + merge with the other third) differs from the "
           "unsplit run in %lld elements", (long long)bad);
    printf("cascade (unmerged run + fi_prefill_merge_run) vs unsplit: max|diff| %.2e\n", worst);

    /* without another state: the merged run's bits */
    float *o_c = xmalloc(4 * (size_t)(nq * hq * hd)), *l_c = xmalloc(4 * (size_t)(nq * hq));
    fi_tensor Oc = fi_tensor_contiguous(o_c, FI_DTYPE_F32, 3, qs), Lc = fi_tensor_contiguous(l_c, FI_DTYPE_F32, 2, ls);
    EXPECT_OK(fi_ragged_prefill_run(ctx, &hi_plan, &Q, &Khi, &Vhi, qo_indptr, hi_indptr, NULL, &Oc, &Lc), ctx);
    EXPECT_OK(fi_ragged_prefill_run_unmerged(ctx, &hi_plan, &Q, &Khi, &Vhi, qo_indptr, hi_indptr, NULL, &O, &L), ctx);
    EXPECT_OK(fi_prefill_merge_run(ctx, &hi_plan, NULL, NULL, &O, &L), ctx);
    EXPECT(memcmp(o_b, o_c, 4 * (size_t)(nq * hq * hd)) == 0 &&
           memcmp(l_b, l_c, 4 * (size_t)(nq * hq)) == 0,
           "unmerged run + merge without another state differs from the merged run");

    /* bad input */
    EXPECT_ERR(fi_ragged_prefill_run_unmerged(ctx, &hi_plan, &Q, &Khi, &Vhi, qo_indptr, hi_indptr, NULL, &O, NULL),
               FI_ERROR_INVALID_ARGUMENT, "lse is NULL", "fi_ragged_prefill_run_unmerged");
    EXPECT_ERR(fi_prefill_merge_run(ctx, &hi_plan, &Oa, NULL, &O, &L), FI_ERROR_INVALID_ARGUMENT,
               "v_other is given but s_other is NULL");
    EXPECT_ERR(fi_prefill_merge_run(ctx, &hi_plan, &Oa, &La, &O, NULL), FI_ERROR_INVALID_ARGUMENT,
               "lse is NULL", "fi_prefill_merge_run");
    int64_t short_s[3] = {nq - 1, hq, hd};
    fi_tensor Oshort = fi_tensor_contiguous(o_a, FI_DTYPE_F32, 3, short_s);
    EXPECT_ERR(fi_prefill_merge_run(ctx, &hi_plan, &Oshort, &La, &O, &L), FI_ERROR_INVALID_ARGUMENT,
               "v_other");
    EXPECT_ERR(fi_prefill_merge_run(ctx, &hi_plan, &O, &La, &O, &L), FI_ERROR_INVALID_ARGUMENT,
               "v_other", "o");
    fi_plan bad_plan = hi_plan;
    bad_plan.batch += 1;
    EXPECT_ERR(fi_prefill_merge_run(ctx, &bad_plan, &Oa, &La, &O, &L), FI_ERROR_PLAN_MISMATCH,
               "checksum");
    free(o_c), free(l_c);
  }
  free(q); free(k); free(v); free(klo); free(vlo); free(khi); free(vhi); free(ws);
  free(o_full); free(l_full); free(o_a); free(l_a); free(o_b); free(l_b);
}

int main(void) {
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) return 1;
  test_pairwise(ctx);
  test_split_reproduces_unsplit(ctx);
  fi_context_destroy(ctx);
  return test_finish("test_merge");
}
