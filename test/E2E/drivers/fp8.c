/* Driver of test/E2E/fp8.mlir: fp8 attention (e4m3 q, k, v; per-tensor and per-head scales;
 * bf16 o, LSE) compiled, against fi_ragged_prefill_plan/run called directly with the same
 * params and the tiles the compiled code used (ragged_prefill_direct). */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;

void _mlir_ciface_ragged_fp8_head_scales(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *,
                                         memref1 *, memref1 *, memref1 *, memref1 *);

static int64_t run_trial(rng *r, int trial) {
  fi_context *ctx = fi_default_context();
  const int32_t hq = 8, hk = 2, hd = 128, batch = (int32_t)rng_int(r, 1, 5);
  fi_attention_params p = fi_attention_params_default(hq, hk, hd);
  p.q_dtype = p.kv_dtype = FI_DTYPE_E4M3;
  p.o_dtype = FI_DTYPE_BF16;
  p.mask_mode = FI_MASK_CAUSAL;
  p.q_scale = 0.5f;
  p.k_scale = 0.25f;
  p.v_scale = 2.0f;
  int64_t total_kv = 0;
  int32_t *kv_indptr = random_indptr(r, batch, 1, trial % 2 ? 300 : 70, &total_kv);
  int32_t *qo_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)(batch + 1));
  qo_indptr[0] = 0;
  for (int32_t i = 0; i < batch; ++i) {
    const int64_t kl = kv_indptr[i + 1] - kv_indptr[i];
    qo_indptr[i + 1] = qo_indptr[i] + (int32_t)rng_int(r, 0, kl < 40 ? kl : 40);
  }
  const int64_t nnz = qo_indptr[batch], nb1 = batch + 1;
  const int64_t qshape[3] = {nnz, hq, hd}, kshape[3] = {total_kv, hk, hd}, lshape[2] = {nnz, hq};
  void *q = random_tensor(r, FI_DTYPE_E4M3, numel(3, qshape), -2, 2);
  void *k = random_tensor(r, FI_DTYPE_E4M3, numel(3, kshape), -2, 2);
  void *v = random_tensor(r, FI_DTYPE_E4M3, numel(3, kshape), -2, 2);
  float *qs = (float *)e2e_alloc(sizeof(float) * hq), *ks = (float *)e2e_alloc(sizeof(float) * hk);
  float *vs = (float *)e2e_alloc(sizeof(float) * hk);
  for (int h = 0; h < hq; ++h) qs[h] = 0.5f + 0.25f * (float)rng_int(r, 0, 4);
  for (int h = 0; h < hk; ++h) ks[h] = 0.5f + 0.25f * (float)rng_int(r, 0, 4);
  for (int h = 0; h < hk; ++h) vs[h] = 0.5f + 0.25f * (float)rng_int(r, 0, 4);
  memref3 mq, mk, mv;
  memref1 mqo, mkv, mqs, mks, mvs;
  const int64_t nhq = hq, nhk = hk;
  mr_init(&mq, 3, q, qshape);
  mr_init(&mk, 3, k, kshape);
  mr_init(&mv, 3, v, kshape);
  mr_init(&mqo, 1, qo_indptr, &nb1);
  mr_init(&mkv, 1, kv_indptr, &nb1);
  mr_init(&mqs, 1, qs, &nhq);
  mr_init(&mks, 1, ks, &nhk);
  mr_init(&mvs, 1, vs, &nhk);
  fi_rt_plan_log_reset();
  o_lse res;
  memset(&res, 0, sizeof res);
  _mlir_ciface_ragged_fp8_head_scales(&res, &mq, &mk, &mv, &mqo, &mkv, &mqs, &mks, &mvs);
  fi_rt_synchronize();
  if (e2e_skipped("ragged_fp8_head_scales")) return 0;
  fi_tiles tiles = logged_tiles(0, FI_OP_RAGGED_PREFILL);

  /* The runtime, directly. */
  p.q_scale_heads = qs;
  p.k_scale_heads = ks;
  p.v_scale_heads = vs;
  void *want_o;
  float *want_l;
  ragged_prefill_direct(ctx, &p, batch, qo_indptr, kv_indptr, NULL, &tiles, q, k, v, &want_o,
                        &want_l);
  fi_rt_synchronize();
  int64_t bad = compare("o", (char *)res.o.aligned + res.o.offset * 2, want_o, FI_DTYPE_BF16,
                        numel(3, qshape));
  bad += compare("lse", (char *)res.lse.aligned + res.lse.offset * 4, want_l, FI_DTYPE_F32,
                 numel(2, lshape));
  printf("  trial %d: batch %d, %lld query rows, variant %s\n", trial, (int)batch,
         (long long)nnz, tiles_str(tiles, 0));
  fi_rt_free(res.o.allocated);
  fi_rt_free(res.lse.allocated);
  e2e_free(want_o), e2e_free(want_l);
  e2e_free(q), e2e_free(k), e2e_free(v), e2e_free(qs), e2e_free(ks), e2e_free(vs);
  e2e_free(qo_indptr), e2e_free(kv_indptr);
  return bad;
}

int main(void) {
  e2e_setup();
  rng r = {0x5eed0f08u};
  int64_t bad = 0;
  for (int t = 0; t < 6; ++t) bad += run_trial(&r, t);
  printf("ragged_fp8_head_scales: 6 trials, %lld mismatches\n", (long long)bad);
  printf("E2E fp8: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
