/* Runs examples/cascade.mlir compiled by fi-to-llvm: 8 requests that share a long prefix
 * decode one token each (32 q heads, 8 KV heads, head_dim 128, page 16, fp16, 2 layers);
 * the prefix is attended once for all 8 queries (paged prefill with one 8-row request),
 * the unique suffixes by batch decode, the two states merged with fi.merge_state.
 * Checked bit-for-bit against the same three runtime calls made directly, and against a
 * plain (non-cascade) decode over prefix + suffix pages (a different summation order, so
 * to fp16 rounding), then timed.  Options: --prefix-pages=64 --max-suffix=200 --steps=5 */
#include "example.h"

enum { REQ = 8, LAYERS = 2, QH = 32, KVH = 8, HD = 128, PS = 16 };

typedef struct { memref3 o0, o1; } cascade_out;
void _mlir_ciface_cascade_decode_step(cascade_out *, memref3 *, memref5 *, memref3 *,
                                      memref5 *, memref1 *, memref1 *, memref1 *, memref1 *,
                                      memref1 *, memref1 *, memref1 *, int64_t);

int main(int argc, char **argv) {
  int32_t prefix_pages = (int32_t)arg_long(argc, argv, "prefix-pages", 64);
  int64_t max_suffix = arg_long(argc, argv, "max-suffix", 200);
  int steps = (int)arg_long(argc, argv, "steps", 5);
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
  printf("cascade: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
