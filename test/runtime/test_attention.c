/* test/runtime/test_attention.c -- the host backend's decode, paged prefill and ragged
 * prefill against the naive float64 oracle on seeded random inputs: every feature alone
 * and combined, GQA 1/4/8, page sizes 1/16, head_dim 64/128/256 (and odd ones), NHD/HND,
 * separate and combined K/V, and the edges (kv_len 1, full last pages, qo_len 0, kv_len 0,
 * batch 1 and 512). Outputs are poisoned with NaN first and every element is checked. */
#include "oracle.h"
#include "test_util.h"

typedef struct acase {
  const char *name;
  fi_op_family family;
  int batch;
  int qo_min, qo_max; /* prefill */
  int kv_min, kv_max;
  int hq, hkv, hd, page_size;
  fi_kv_layout layout;
  int combined;
  fi_dtype q_dtype, kv_dtype;
  fi_mask_mode mask;
  fi_pos_encoding pos;
  int window_left; /* -1 off */
  float cap;
  int fixed_split;
  int with_lse;
  float sm_scale; /* 0: default */
  float k_scale, v_scale; /* 0: 1 */
  int full_last_page;
  int empty_requests; /* request 0 gets kv_len 0 (if allowed), request 1 qo_len 0 */
  int padded;         /* q / o rows with a padded stride */
  uint64_t seed;
  float q_scale;      /* fp8 attention (q e4m3): q's scale (0: 1); o is then o_dtype */
  fi_dtype o_dtype;   /* (f16 by default) */
  int head_scales;    /* fp8 attention: per-head q, k and v scales too (heads <= 64) */
} acase;

static void tolerances(fi_dtype d, double *atol, double *rtol) {
  if (d == FI_DTYPE_F32) { *atol = 1e-4; *rtol = 1e-4; }
  else if (d == FI_DTYPE_F16) { *atol = 2e-3; *rtol = 4e-3; }
  else { *atol = 1e-2; *rtol = 1.6e-2; }
}

static void run_case(fi_context *ctx, const acase *c) {
  rng r = {c->seed};
  const int batch = c->batch, hq = c->hq, hkv = c->hkv, hd = c->hd;
  const int paged = c->family != FI_OP_RAGGED_PREFILL;
  const int ps = paged ? c->page_size : 1;
  int failures_before = g_failures;

  fi_attention_params p = fi_attention_params_default(hq, hkv, hd);
  p.page_size = ps;
  p.q_dtype = c->q_dtype;
  p.kv_dtype = c->kv_dtype;
  p.mask_mode = c->mask;
  p.pos_encoding = c->pos;
  p.window_left = c->window_left;
  p.logits_soft_cap = c->cap;
  p.fixed_split_size = c->fixed_split;
  if (c->sm_scale != 0) p.sm_scale = c->sm_scale;
  if (c->k_scale != 0) p.k_scale = c->k_scale;
  if (c->v_scale != 0) p.v_scale = c->v_scale;
  if (c->q_scale != 0) p.q_scale = c->q_scale;
  p.o_dtype = c->o_dtype;
  float head_scales[3 * 64];
  if (c->head_scales) { /* fp8 attention's per-head scales (q per qo head, k / v per kv head) */
    for (int h = 0; h < 3 * 64; ++h) head_scales[h] = 0.5f + 0.25f * (float)(h % 5);
    p.q_scale_heads = head_scales;
    p.k_scale_heads = head_scales + 64;
    p.v_scale_heads = head_scales + 128;
  }
  const fi_dtype odt = fi_output_dtype(&p);
  if (c->pos == FI_POS_ROPE_LLAMA) { p.rope_scale = 2.0f; p.rope_theta = 5e4f; }

  /* lengths */
  int32_t *qo_len = xmalloc(sizeof(int32_t) * batch), *kv_len = xmalloc(sizeof(int32_t) * batch);
  for (int i = 0; i < batch; ++i) {
    kv_len[i] = (int32_t)rng_int(&r, c->kv_min, c->kv_max);
    if (c->full_last_page) kv_len[i] = (kv_len[i] + ps - 1) / ps * ps;
    qo_len[i] = c->family == FI_OP_DECODE ? 1 : (int32_t)rng_int(&r, c->qo_min, c->qo_max);
    if (c->mask == FI_MASK_CAUSAL && qo_len[i] > kv_len[i]) qo_len[i] = kv_len[i];
  }
  if (c->empty_requests && batch >= 2) {
    kv_len[0] = 0;
    if (c->mask == FI_MASK_CAUSAL) qo_len[0] = 0;
    if (c->family != FI_OP_DECODE) qo_len[1] = 0;
  }
  int32_t *qo_indptr = xmalloc(sizeof(int32_t) * (batch + 1));
  int32_t *kv_indptr = xmalloc(sizeof(int32_t) * (batch + 1)); /* pages or tokens */
  int32_t *last = xmalloc(sizeof(int32_t) * batch);
  qo_indptr[0] = 0;
  kv_indptr[0] = 0;
  for (int i = 0; i < batch; ++i) {
    qo_indptr[i + 1] = qo_indptr[i] + qo_len[i];
    int32_t n = paged ? (kv_len[i] + ps - 1) / ps : kv_len[i];
    kv_indptr[i + 1] = kv_indptr[i] + n;
    last[i] = kv_len[i] == 0 ? 1 : kv_len[i] - ps * (n - 1);
  }
  const int64_t nnz_qo = qo_indptr[batch], nnz_kv_slots = kv_indptr[batch];
  const int32_t num_pages = paged ? (int32_t)nnz_kv_slots + 3 : 0;
  int32_t *indices = xmalloc(sizeof(int32_t) * (nnz_kv_slots + 1));
  if (paged) { /* a random permutation of the pages; 3 pages stay unused */
    int32_t *perm = xmalloc(sizeof(int32_t) * num_pages);
    for (int i = 0; i < num_pages; ++i) perm[i] = i;
    for (int i = num_pages - 1; i > 0; --i) {
      int j = (int)rng_int(&r, 0, i);
      int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    memcpy(indices, perm, sizeof(int32_t) * nnz_kv_slots);
    free(perm);
  }

  /* q / o / lse */
  const int64_t row_stride = (int64_t)hq * hd + (c->padded ? 8 : 0);
  const size_t qsz = fi_dtype_size(c->q_dtype), osz = fi_dtype_size(odt);
  void *qd = xmalloc(qsz * (size_t)(row_stride * (nnz_qo + 1)));
  void *od = xmalloc(osz * (size_t)(row_stride * (nnz_qo + 1)));
  float *lsed = xmalloc(sizeof(float) * (size_t)(nnz_qo * hq + 1));
  fill_random(qd, c->q_dtype, row_stride * nnz_qo, &r, -1, 1);
  poison(od, osz * (size_t)(row_stride * (nnz_qo + 1)));
  poison(lsed, sizeof(float) * (size_t)(nnz_qo * hq + 1));
  fi_tensor q, o, lse;
  int64_t qshape[3] = {nnz_qo, hq, hd}, lshape[2] = {nnz_qo, hq};
  q = fi_tensor_contiguous(qd, c->q_dtype, 3, qshape);
  q.strides[0] = row_stride;
  o = fi_tensor_contiguous(od, odt, 3, qshape);
  o.strides[0] = row_stride;
  lse = fi_tensor_contiguous(lsed, FI_DTYPE_F32, 2, lshape);

  /* K / V storage */
  const size_t ksz = fi_dtype_size(c->kv_dtype);
  fi_paged_kv_cache cache;
  fi_tensor kt, vt; /* ragged */
  void *kvd = NULL, *kd = NULL, *vd = NULL;
  int64_t slot_elems = (int64_t)ps * hkv * hd; /* one page (or one token when ragged) */
  if (paged) {
    int64_t dims[4] = {num_pages, ps, hkv, hd};
    if (c->layout == FI_LAYOUT_HND) { dims[1] = hkv; dims[2] = ps; }
    if (c->combined) {
      kvd = xmalloc(ksz * (size_t)(2 * num_pages * slot_elems));
      fill_random(kvd, c->kv_dtype, 2 * num_pages * slot_elems, &r, -1, 1);
      int64_t cdims[5] = {num_pages, 2, dims[1], dims[2], dims[3]};
      fi_tensor comb = fi_tensor_contiguous(kvd, c->kv_dtype, 5, cdims);
      EXPECT_OK(fi_paged_kv_cache_from_combined(&comb, c->layout, &cache), NULL);
    } else {
      kd = xmalloc(ksz * (size_t)(num_pages * slot_elems));
      vd = xmalloc(ksz * (size_t)(num_pages * slot_elems));
      fill_random(kd, c->kv_dtype, num_pages * slot_elems, &r, -1, 1);
      fill_random(vd, c->kv_dtype, num_pages * slot_elems, &r, -1, 1);
      cache.k = fi_tensor_contiguous(kd, c->kv_dtype, 4, dims);
      cache.v = fi_tensor_contiguous(vd, c->kv_dtype, 4, dims);
      cache.layout = c->layout;
    }
  } else {
    int64_t dims[3] = {nnz_kv_slots, hkv, hd};
    kd = xmalloc(ksz * (size_t)(nnz_kv_slots * hkv * hd + 1));
    vd = xmalloc(ksz * (size_t)(nnz_kv_slots * hkv * hd + 1));
    fill_random(kd, c->kv_dtype, nnz_kv_slots * hkv * hd, &r, -1, 1);
    fill_random(vd, c->kv_dtype, nnz_kv_slots * hkv * hd, &r, -1, 1);
    kt = fi_tensor_contiguous(kd, c->kv_dtype, 3, dims);
    vt = fi_tensor_contiguous(vd, c->kv_dtype, 3, dims);
  }

  /* custom mask */
  int32_t *mask_indptr = xmalloc(sizeof(int32_t) * (batch + 1));
  mask_indptr[0] = 0;
  for (int i = 0; i < batch; ++i) mask_indptr[i + 1] = mask_indptr[i] + qo_len[i] * kv_len[i];
  uint8_t *bits = xmalloc((size_t)mask_indptr[batch] / 8 + 1);
  for (int64_t b = 0; b < (int64_t)mask_indptr[batch] / 8 + 1; ++b)
    bits[b] = (uint8_t)(((rng_uniform(&r) < 0.7) << 0) | ((rng_uniform(&r) < 0.7) << 1) |
                        ((rng_uniform(&r) < 0.7) << 2) | ((rng_uniform(&r) < 0.7) << 3) |
                        ((rng_uniform(&r) < 0.7) << 4) | ((rng_uniform(&r) < 0.7) << 5) |
                        ((rng_uniform(&r) < 0.7) << 6) | ((rng_uniform(&r) < 0.7) << 7));
  fi_custom_mask mask = {bits, mask_indptr};
  fi_page_table pages = {kv_indptr, indices, last};

  /* plan + run */
  size_t ws_bytes = 0;
  int64_t total_kv = 0;
  for (int i = 0; i < batch; ++i) total_kv += kv_len[i];
  if (c->family == FI_OP_DECODE)
    EXPECT_OK(fi_decode_workspace_size_kv(ctx, &p, batch, total_kv, &ws_bytes), ctx);
  else
    EXPECT_OK(fi_prefill_workspace_size(ctx, &p, batch, nnz_qo, &ws_bytes), ctx);
  void *ws = xmalloc(ws_bytes);
  poison(ws, ws_bytes);
  fi_plan plan;
  fi_status st;
  if (c->family == FI_OP_DECODE) {
    st = fi_decode_plan(ctx, &p, batch, &pages, num_pages, NULL, ws, ws_bytes, &plan);
    EXPECT(st == FI_SUCCESS, "%s: plan: %s", c->name, fi_last_error(ctx));
    if (st == FI_SUCCESS)
      st = fi_decode_run(ctx, &plan, &q, &cache, &pages, &o, c->with_lse ? &lse : NULL);
  } else if (c->family == FI_OP_PAGED_PREFILL) {
    st = fi_paged_prefill_plan(ctx, &p, batch, qo_indptr, &pages, num_pages,
                               c->mask == FI_MASK_CUSTOM ? &mask : NULL, NULL, ws, ws_bytes,
                               &plan);
    EXPECT(st == FI_SUCCESS, "%s: plan: %s", c->name, fi_last_error(ctx));
    if (st == FI_SUCCESS)
      st = fi_paged_prefill_run(ctx, &plan, &q, qo_indptr, &cache, &pages,
                                c->mask == FI_MASK_CUSTOM ? &mask : NULL, &o,
                                c->with_lse ? &lse : NULL);
  } else {
    st = fi_ragged_prefill_plan(ctx, &p, batch, qo_indptr, kv_indptr,
                                c->mask == FI_MASK_CUSTOM ? &mask : NULL, NULL, ws, ws_bytes,
                                &plan);
    EXPECT(st == FI_SUCCESS, "%s: plan: %s", c->name, fi_last_error(ctx));
    if (st == FI_SUCCESS)
      st = fi_ragged_prefill_run(ctx, &plan, &q, &kt, &vt, qo_indptr, kv_indptr,
                                 c->mask == FI_MASK_CUSTOM ? &mask : NULL, &o,
                                 c->with_lse ? &lse : NULL);
  }
  EXPECT(st == FI_SUCCESS, "%s: run: %s", c->name, fi_last_error(ctx));

  /* oracle, request by request */
  double atol, rtol;
  tolerances(odt, &atol, &rtol);
  int64_t bad = 0, checked = 0;
  double worst = 0;
  for (int i = 0; i < batch && st == FI_SUCCESS; ++i) {
    int64_t ql = qo_len[i], kl = kv_len[i];
    double *dq = xmalloc(sizeof(double) * (size_t)(ql * hq * hd + 1));
    double *dk = xmalloc(sizeof(double) * (size_t)(kl * hkv * hd + 1));
    double *dv = xmalloc(sizeof(double) * (size_t)(kl * hkv * hd + 1));
    double *ro = xmalloc(sizeof(double) * (size_t)(ql * hq * hd + 1));
    double *rl = xmalloc(sizeof(double) * (size_t)(ql * hq + 1));
    for (int64_t a = 0; a < ql; ++a)
      for (int h = 0; h < hq; ++h)
        for (int d = 0; d < hd; ++d)
          dq[(a * hq + h) * hd + d] =
              fi_load_f32(qd, c->q_dtype, (qo_indptr[i] + a) * row_stride + h * hd + d) *
              (c->q_dtype == FI_DTYPE_E4M3 ? (double)p.q_scale : 1.0);
    for (int64_t j = 0; j < kl; ++j)
      for (int h = 0; h < hkv; ++h)
        for (int d = 0; d < hd; ++d) {
          int64_t off_k, off_v;
          const void *kbase, *vbase;
          if (paged) {
            int64_t page = indices[kv_indptr[i] + j / ps], slot = j % ps;
            int64_t within = c->layout == FI_LAYOUT_NHD ? (slot * hkv + h) * hd + d
                                                        : ((int64_t)h * ps + slot) * hd + d;
            if (c->combined) {
              kbase = vbase = kvd;
              off_k = (page * 2 + 0) * slot_elems + within;
              off_v = (page * 2 + 1) * slot_elems + within;
            } else {
              kbase = kd;
              vbase = vd;
              off_k = off_v = page * slot_elems + within;
            }
          } else {
            kbase = kd;
            vbase = vd;
            off_k = off_v = ((kv_indptr[i] + j) * hkv + h) * hd + d;
          }
          dk[(j * hkv + h) * hd + d] = fi_load_f32(kbase, c->kv_dtype, off_k);
          dv[(j * hkv + h) * hd + d] = fi_load_f32(vbase, c->kv_dtype, off_v);
        }
    oracle_attention(&p, ql, kl, dq, dk, dv, bits, mask_indptr[i], ro, rl);
    for (int64_t a = 0; a < ql; ++a)
      for (int h = 0; h < hq; ++h) {
        for (int d = 0; d < hd; ++d) {
          double got = fi_load_f32(od, odt, (qo_indptr[i] + a) * row_stride + h * hd + d);
          double want = ro[(a * hq + h) * hd + d];
          ++checked;
          if (!close_enough(got, want, atol, rtol)) {
            if (bad < 5)
              fprintf(stderr, "  %s: o[req %d row %lld head %d dim %d] = %.6g, want %.6g\n",
                      c->name, i, (long long)a, h, d, got, want);
            ++bad;
          }
          if (!isnan(got) && fabs(got - want) > worst) worst = fabs(got - want);
        }
        if (c->with_lse) {
          double got = lsed[(qo_indptr[i] + a) * hq + h], want = rl[a * hq + h];
          ++checked;
          if (!close_enough(got, want, 2e-4, 2e-4)) {
            if (bad < 5)
              fprintf(stderr, "  %s: lse[req %d row %lld head %d] = %.8g, want %.8g\n",
                      c->name, i, (long long)a, h, got, want);
            ++bad;
          }
        }
      }
    free(dq); free(dk); free(dv); free(ro); free(rl);
  }
  EXPECT(bad == 0, "%s: %lld of %lld elements differ from the float64 oracle", c->name,
         (long long)bad, (long long)checked);
  if (c->empty_requests && c->with_lse && batch >= 2 && qo_len[0] > 0) {
    /* request 0 has no KV: o = 0 and lse = -inf exactly */
    for (int h = 0; h < hq; ++h)
      EXPECT(lsed[(int64_t)qo_indptr[0] * hq + h] == -INFINITY, "%s: lse of an empty row is %g",
             c->name, lsed[(int64_t)qo_indptr[0] * hq + h]);
  }
  printf("%-44s %s  units %4d  partial rows %5d  chunk %4llu  max|err| %.2e  (%lld elems)\n",
         c->name, g_failures == failures_before ? "ok  " : "FAIL",
         st == FI_SUCCESS ? plan.num_work_units : -1, st == FI_SUCCESS ? plan.num_partial_rows : -1,
         st == FI_SUCCESS ? (unsigned long long)plan.private_[5] : 0ULL, worst, (long long)checked);

  free(qo_len); free(kv_len); free(qo_indptr); free(kv_indptr); free(last); free(indices);
  free(qd); free(od); free(lsed); free(kvd); free(kd); free(vd); free(mask_indptr); free(bits);
  free(ws);
}

#define F16 FI_DTYPE_F16
#define BF16 FI_DTYPE_BF16
#define F32 FI_DTYPE_F32
#define E4M3 FI_DTYPE_E4M3
#define E5M2 FI_DTYPE_E5M2
#define NHD FI_LAYOUT_NHD
#define HND FI_LAYOUT_HND
#define DEC FI_OP_DECODE
#define PAGED FI_OP_PAGED_PREFILL
#define RAGGED FI_OP_RAGGED_PREFILL

/* Fields: name, family, batch, qo_min, qo_max, kv_min, kv_max, hq, hkv, hd, page_size,
 * layout, combined, q_dtype, kv_dtype, mask, pos, window_left, cap, fixed_split, with_lse,
 * sm_scale, k_scale, v_scale, full_last_page, empty_requests, padded, seed */
static const acase cases[] = {
    /* decode */
    {"decode gqa1 hd64 ps16 NHD f16", DEC, 7, 0, 0, 1, 300, 4, 4, 64, 16, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1},
    {"decode gqa4 hd128 ps1 HND comb bf16", DEC, 5, 0, 0, 1, 200, 8, 2, 128, 1, HND, 1, BF16, BF16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2},
    {"decode gqa8 hd256 ps16 NHD comb f32 split", DEC, 3, 0, 0, 100, 400, 8, 1, 256, 16, NHD, 1, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 64, 1, 0, 0, 0, 0, 0, 0, 3},
    {"decode auto split-kv f32", DEC, 2, 0, 0, 1500, 2500, 4, 1, 64, 16, HND, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4},
    {"decode kv_len 1 batch 1", DEC, 1, 0, 0, 1, 1, 4, 2, 64, 16, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5},
    {"decode batch 512", DEC, 512, 0, 0, 1, 40, 8, 2, 64, 16, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 6},
    {"decode kv_len 0 rows", DEC, 4, 0, 0, 1, 50, 4, 4, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 7},
    {"decode last_page_len == page_size", DEC, 6, 0, 0, 1, 100, 4, 1, 64, 16, HND, 1, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 8},
    {"decode fp8 e4m3 k/v scales", DEC, 4, 0, 0, 1, 120, 8, 2, 128, 16, NHD, 0, F16, E4M3, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0.5f, 2.0f, 0, 0, 0, 9},
    {"decode fp8 e5m2", DEC, 4, 0, 0, 1, 120, 4, 4, 64, 1, HND, 1, BF16, E5M2, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10},
    {"decode rope llama", DEC, 3, 0, 0, 1, 90, 4, 1, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_ROPE_LLAMA, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 11},
    {"decode alibi (6 heads)", DEC, 3, 0, 0, 1, 90, 6, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_ALIBI, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 12},
    {"decode soft cap + sm_scale", DEC, 3, 0, 0, 1, 90, 4, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 1.5f, 0, 1, 0.5f, 0, 0, 0, 0, 0, 13},
    {"decode window_left 20", DEC, 3, 0, 0, 1, 90, 4, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, 20, 0, 0, 1, 0, 0, 0, 0, 0, 0, 14},
    {"decode hd 72 no lse, padded", DEC, 3, 0, 0, 1, 90, 4, 2, 72, 16, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 15},
    {"decode hd 33 f32", DEC, 3, 0, 0, 1, 90, 2, 1, 33, 16, HND, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 16},
    {"decode all features gqa8 split", DEC, 3, 0, 0, 200, 500, 16, 2, 128, 16, HND, 1, BF16, E4M3, FI_MASK_NONE, FI_POS_ROPE_LLAMA, 150, 2.0f, 96, 1, 0.2f, 0.7f, 1.3f, 0, 1, 1, 17},
    /* paged prefill */
    {"paged prefill gqa1 hd64 ps16 NHD f16", PAGED, 4, 1, 40, 1, 120, 4, 4, 64, 16, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 21},
    {"paged prefill causal gqa4 hd128 ps1 HND", PAGED, 3, 1, 40, 1, 120, 8, 2, 128, 1, HND, 1, BF16, BF16, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 22},
    {"paged prefill causal gqa8 hd256 f32", PAGED, 2, 1, 30, 10, 80, 8, 1, 256, 16, NHD, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 23},
    {"paged prefill custom mask", PAGED, 4, 1, 30, 1, 90, 4, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_CUSTOM, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 24},
    {"paged prefill window + causal", PAGED, 3, 1, 40, 20, 100, 4, 2, 64, 16, HND, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_NONE, 15, 0, 0, 1, 0, 0, 0, 0, 0, 0, 25},
    {"paged prefill rope causal", PAGED, 2, 1, 16, 10, 60, 4, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_ROPE_LLAMA, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 26},
    {"paged prefill alibi", PAGED, 2, 1, 20, 10, 60, 8, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_ALIBI, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 27},
    {"paged prefill soft cap", PAGED, 2, 1, 20, 10, 60, 4, 4, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 1.0f, 0, 1, 0.6f, 0, 0, 0, 0, 0, 28},
    {"paged prefill fp8 e4m3", PAGED, 3, 1, 20, 1, 80, 4, 1, 128, 16, HND, 1, F16, E4M3, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0.8f, 1.5f, 0, 0, 0, 29},
    {"paged prefill qo 0 / kv 0 requests", PAGED, 5, 1, 20, 1, 60, 4, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 30},
    {"paged prefill fixed split 32", PAGED, 2, 1, 40, 100, 300, 4, 2, 64, 16, NHD, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 32, 1, 0, 0, 0, 0, 0, 0, 31},
    {"paged prefill auto split batch 1", PAGED, 1, 8, 8, 3000, 3000, 8, 1, 64, 16, NHD, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 32},
    {"paged prefill full pages padded", PAGED, 3, 1, 20, 1, 64, 4, 2, 64, 16, NHD, 1, F16, F16, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 1, 0, 1, 33},
    {"paged prefill all features", PAGED, 3, 1, 40, 60, 200, 8, 2, 128, 16, HND, 1, BF16, E5M2, FI_MASK_CAUSAL, FI_POS_ROPE_LLAMA, 50, 3.0f, 48, 1, 0, 0.9f, 1.1f, 0, 1, 1, 34},
    {"paged prefill custom+alibi+cap+split", PAGED, 3, 1, 30, 60, 200, 8, 1, 64, 1, NHD, 0, F32, F16, FI_MASK_CUSTOM, FI_POS_ALIBI, 70, 2.0f, 40, 1, 0, 0, 0, 0, 1, 0, 35},
    /* ragged prefill */
    {"ragged prefill gqa1 hd64 f16", RAGGED, 4, 1, 40, 1, 100, 4, 4, 64, 0, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 41},
    {"ragged prefill causal gqa4 hd128 bf16", RAGGED, 3, 1, 40, 1, 100, 8, 2, 128, 0, NHD, 0, BF16, BF16, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 42},
    {"ragged prefill gqa8 hd256 f32", RAGGED, 2, 1, 20, 1, 60, 8, 1, 256, 0, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 43},
    {"ragged prefill custom mask", RAGGED, 3, 1, 30, 1, 80, 4, 2, 64, 0, NHD, 0, F32, F32, FI_MASK_CUSTOM, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 44},
    {"ragged prefill rope + window", RAGGED, 2, 1, 20, 20, 60, 4, 2, 64, 0, NHD, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_ROPE_LLAMA, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 45},
    {"ragged prefill alibi + cap fp8", RAGGED, 2, 1, 20, 10, 60, 4, 4, 64, 0, NHD, 0, F16, E4M3, FI_MASK_NONE, FI_POS_ALIBI, -1, 1.0f, 0, 1, 0.5f, 0.5f, 2.0f, 0, 0, 0, 46},
    {"ragged prefill qo 0 / kv 0 requests", RAGGED, 5, 1, 20, 1, 60, 4, 2, 64, 0, NHD, 0, F32, F32, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 47},
    {"ragged prefill fixed split 16", RAGGED, 2, 1, 24, 50, 150, 4, 2, 64, 0, NHD, 0, F32, F32, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 16, 1, 0, 0, 0, 0, 0, 1, 48},
    /* fp8 attention: e4m3 q, k and v with scales, f16 / bf16 o (the host backend computes in
     * fp32 from the dequantised values, as the oracle does in float64) */
    {"ragged prefill fp8 attention causal", RAGGED, 3, 1, 30, 1, 90, 8, 2, 128, 0, NHD, 0, E4M3, E4M3, FI_MASK_CAUSAL, FI_POS_NONE, -1, 0, 0, 1, 0, 0.5f, 2.0f, 0, 0, 0, 50, 0.25f, F16},
    {"paged prefill fp8 attention window bf16 head scales", PAGED, 3, 1, 20, 10, 70, 4, 4, 64, 16, HND, 0, E4M3, E4M3, FI_MASK_CAUSAL, FI_POS_NONE, 12, 0, 0, 1, 0, 1.5f, 0.5f, 0, 0, 1, 51, 2.0f, BF16, 1},
    {"ragged prefill batch 512", RAGGED, 512, 0, 3, 1, 12, 4, 2, 64, 0, NHD, 0, F16, F16, FI_MASK_NONE, FI_POS_NONE, -1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 49},
};

int main(void) {
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) {
    fprintf(stderr, "cannot create a host context: %s\n", fi_last_error(NULL));
    return 1;
  }
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) run_case(ctx, &cases[i]);
  /* one thread gives the same answer as two (work units write disjoint outputs) */
  fi_context_set_num_threads(ctx, 1);
  run_case(ctx, &cases[16]);
  run_case(ctx, &cases[33]);
  fi_context_destroy(ctx);
  return test_finish("test_attention");
}
