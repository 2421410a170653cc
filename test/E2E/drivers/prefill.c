/* Driver of test/E2E/prefill.mlir: random ragged queries, paged or ragged KV, causal and
 * custom masks; the compiled function against fi_*_prefill_plan/run called directly with
 * the tiles the compiled code used. */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;

void _mlir_ciface_paged_causal_lse(o_lse *, memref3 *, memref1 *, memref5 *, memref1 *,
                                   memref1 *, memref1 *);
void _mlir_ciface_paged_custom_hnd(memref3 *, memref3 *, memref1 *, memref4 *, memref4 *,
                                   memref1 *, memref1 *, memref1 *, memref1 *, memref1 *);
void _mlir_ciface_ragged_causal_rope(o_lse *, memref3 *, memref3 *, memref3 *, memref1 *,
                                     memref1 *);
void _mlir_ciface_ragged_static(memref3 *, memref3 *, memref3 *, memref3 *, memref1 *,
                                memref1 *);
void _mlir_ciface_ragged_custom_hint(memref3 *, memref3 *, memref4 *, memref1 *, memref1 *,
                                     memref1 *, memref1 *);

enum { PAGED_CAUSAL_LSE, PAGED_CUSTOM_HND, RAGGED_CAUSAL_ROPE, RAGGED_STATIC, RAGGED_CUSTOM_HINT };

typedef struct prefill_case {
  const char *name;
  int which, paged, combined, has_lse;
  fi_kv_layout layout;
  fi_attention_params p;
} prefill_case;

static int64_t run_case(const prefill_case *c, rng *r, int trial) {
  fi_context *ctx = fi_default_context();
  const fi_attention_params *p = &c->p;
  int32_t batch = c->which == RAGGED_STATIC ? 4 : (int32_t)rng_int(r, 1, 6);
  int64_t nb1 = batch + 1, nbatch = batch;

  /* KV lengths: a page table (paged) or a ragged indptr; then query lengths <= KV. */
  pages_t pg;
  memset(&pg, 0, sizeof(pg));
  int64_t *kv_len = (int64_t *)xmalloc(sizeof(int64_t) * (size_t)batch);
  int32_t *kv_indptr = NULL;
  int64_t total_kv = 0;
  if (c->paged) {
    make_pages(r, &pg, batch, p->page_size, 1, trial % 2 ? 300 : 60, 0);
    for (int32_t i = 0; i < batch; ++i) kv_len[i] = pg.kv_len[i];
  } else {
    kv_indptr = random_indptr(r, batch, c->which == RAGGED_STATIC ? 10 : 0, 90, &total_kv);
    for (int32_t i = 0; i < batch; ++i) kv_len[i] = kv_indptr[i + 1] - kv_indptr[i];
  }
  int32_t *qo_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)nb1);
  qo_indptr[0] = 0;
  for (int32_t i = 0; i < batch; ++i) {
    int64_t cap = kv_len[i] < 24 ? kv_len[i] : 24;
    int64_t len = c->which == RAGGED_STATIC ? 10 : rng_int(r, 0, cap);
    qo_indptr[i + 1] = qo_indptr[i] + (int32_t)len;
  }
  int64_t nnz = qo_indptr[batch];
  int custom = p->mask_mode == FI_MASK_CUSTOM;
  int32_t *mask_indptr = NULL;
  uint8_t *mask_bits = NULL;
  int64_t mask_bytes = 1;
  if (custom) {
    mask_indptr = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)nb1);
    mask_indptr[0] = 0;
    for (int32_t i = 0; i < batch; ++i)
      mask_indptr[i + 1] =
          mask_indptr[i] + (qo_indptr[i + 1] - qo_indptr[i]) * (int32_t)kv_len[i];
    mask_bytes = (mask_indptr[batch] + 7) / 8;
    if (mask_bytes < 1) mask_bytes = 1;
    mask_bits = (uint8_t *)e2e_alloc((size_t)mask_bytes);
    for (int64_t i = 0; i < mask_bytes; ++i) mask_bits[i] = (uint8_t)rng_int(r, 0, 255);
  }

  int64_t qshape[3] = {nnz, p->num_qo_heads, p->head_dim}, lshape[2] = {nnz, p->num_qo_heads};
  int64_t nq = numel(3, qshape), nl = numel(2, lshape);
  void *q = random_tensor(r, p->q_dtype, nq, -2, 2);
  memref3 mq, mk3, mv3;
  mr_init(&mq, 3, q, qshape);
  memref1 mqo, mkvp, mindptr, mindices, mlast, mmask, mmask_indptr;
  mr_init(&mqo, 1, qo_indptr, &nb1);
  if (custom) {
    mr_init(&mmask, 1, mask_bits, &mask_bytes);
    mr_init(&mmask_indptr, 1, mask_indptr, &nb1);
  }
  /* KV storage. */
  void *k = NULL, *v = NULL, *kv = NULL;
  int64_t dims4[4] = {0, 0, 0, 0}, d5[5] = {0, 0, 0, 0, 0}, kshape[3] = {0, 0, 0};
  memref4 mk4, mv4, mkv4;
  memref5 mkv5;
  if (c->paged) {
    int64_t used = pg.indptr[batch];
    mr_init(&mindptr, 1, pg.indptr, &nb1);
    mr_init(&mindices, 1, pg.indices, &used);
    mr_init(&mlast, 1, pg.last, &nbatch);
    dims4[0] = pg.num_pages;
    dims4[1] = c->layout == FI_LAYOUT_NHD ? p->page_size : p->num_kv_heads;
    dims4[2] = c->layout == FI_LAYOUT_NHD ? p->num_kv_heads : p->page_size;
    dims4[3] = p->head_dim;
    if (c->combined) {
      int64_t t5[5] = {dims4[0], 2, dims4[1], dims4[2], dims4[3]};
      memcpy(d5, t5, sizeof(t5));
      kv = random_tensor(r, p->kv_dtype, numel(5, d5), -2, 2);
      mr_init(&mkv5, 5, kv, d5);
    } else {
      k = random_tensor(r, p->kv_dtype, numel(4, dims4), -2, 2);
      v = random_tensor(r, p->kv_dtype, numel(4, dims4), -2, 2);
      mr_init(&mk4, 4, k, dims4);
      mr_init(&mv4, 4, v, dims4);
    }
  } else {
    mr_init(&mkvp, 1, kv_indptr, &nb1);
    kshape[0] = total_kv;
    kshape[1] = p->num_kv_heads;
    kshape[2] = p->head_dim;
    if (c->combined) {
      int64_t t4[4] = {total_kv, 2, p->num_kv_heads, p->head_dim};
      memcpy(dims4, t4, sizeof(t4));
      kv = random_tensor(r, p->kv_dtype, numel(4, dims4), -2, 2);
      mr_init(&mkv4, 4, kv, dims4);
    } else {
      k = random_tensor(r, p->kv_dtype, numel(3, kshape), -2, 2);
      v = random_tensor(r, p->kv_dtype, numel(3, kshape), -2, 2);
      mr_init(&mk3, 3, k, kshape);
      mr_init(&mv3, 3, v, kshape);
    }
  }

  /* The compiled function. */
  fi_rt_plan_log_reset();
  memref3 res_o;
  memref2 res_l;
  memset(&res_l, 0, sizeof(res_l));
  switch (c->which) {
  case PAGED_CAUSAL_LSE: {
    o_lse res;
    _mlir_ciface_paged_causal_lse(&res, &mq, &mqo, &mkv5, &mindptr, &mindices, &mlast);
    res_o = res.o;
    res_l = res.lse;
    break;
  }
  case PAGED_CUSTOM_HND:
    _mlir_ciface_paged_custom_hnd(&res_o, &mq, &mqo, &mk4, &mv4, &mindptr, &mindices, &mlast,
                                  &mmask, &mmask_indptr);
    break;
  case RAGGED_CAUSAL_ROPE: {
    o_lse res;
    _mlir_ciface_ragged_causal_rope(&res, &mq, &mk3, &mv3, &mqo, &mkvp);
    res_o = res.o;
    res_l = res.lse;
    break;
  }
  case RAGGED_STATIC:
    _mlir_ciface_ragged_static(&res_o, &mq, &mk3, &mv3, &mqo, &mkvp);
    break;
  default:
    _mlir_ciface_ragged_custom_hint(&res_o, &mq, &mkv4, &mqo, &mkvp, &mmask, &mmask_indptr);
    break;
  }
  fi_rt_synchronize();
  if (e2e_skipped(c->name)) return 0;
  fi_op_family fam = c->paged ? FI_OP_PAGED_PREFILL : FI_OP_RAGGED_PREFILL;
  fi_tiles tiles = logged_tiles(0, fam);
  void *got_o = (char *)res_o.aligned + res_o.offset * (int64_t)fi_dtype_size(p->q_dtype);
  void *got_l = res_l.aligned ? (char *)res_l.aligned + res_l.offset * 4 : NULL;

  /* The runtime, directly, with the same tiles. */
  size_t ws_bytes = 0;
  CHECK_OK(ctx, fi_prefill_workspace_size(ctx, p, batch, nnz, &ws_bytes));
  void *ws = e2e_alloc(ws_bytes);
  fi_plan plan;
  fi_custom_mask cm = {mask_bits, mask_indptr};
  fi_tensor tq = fi_tensor_contiguous(q, p->q_dtype, 3, qshape);
  void *want_o = poisoned_tensor(p->q_dtype, nq), *want_l = poisoned_tensor(FI_DTYPE_F32, nl);
  fi_tensor to = fi_tensor_contiguous(want_o, p->q_dtype, 3, qshape);
  fi_tensor tl = fi_tensor_contiguous(want_l, FI_DTYPE_F32, 2, lshape);
  if (c->paged) {
    fi_page_table table = {pg.indptr, pg.indices, pg.last};
    fi_paged_kv_cache cache;
    if (c->combined) {
      fi_tensor tkv = fi_tensor_contiguous(kv, p->kv_dtype, 5, d5);
      CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&tkv, c->layout, &cache));
    } else {
      cache.k = fi_tensor_contiguous(k, p->kv_dtype, 4, dims4);
      cache.v = fi_tensor_contiguous(v, p->kv_dtype, 4, dims4);
      cache.layout = c->layout;
    }
    CHECK_OK(ctx, fi_paged_prefill_plan(ctx, p, batch, qo_indptr, &table, pg.num_pages,
                                        custom ? &cm : NULL, &tiles, ws, ws_bytes, &plan));
    CHECK_OK(ctx, fi_paged_prefill_run(ctx, &plan, &tq, qo_indptr, &cache, &table,
                                       custom ? &cm : NULL, &to, c->has_lse ? &tl : NULL));
  } else {
    fi_tensor tk, tv;
    if (c->combined) {
      /* [nnz, 2, H, D] viewed as two strided [nnz, H, D] tensors. */
      tk = fi_tensor_contiguous(kv, p->kv_dtype, 3, kshape);
      tk.strides[0] = 2 * p->num_kv_heads * p->head_dim;
      tv = tk;
      tv.data = (char *)kv + (size_t)(p->num_kv_heads * p->head_dim) * fi_dtype_size(p->kv_dtype);
    } else {
      tk = fi_tensor_contiguous(k, p->kv_dtype, 3, kshape);
      tv = fi_tensor_contiguous(v, p->kv_dtype, 3, kshape);
    }
    CHECK_OK(ctx, fi_ragged_prefill_plan(ctx, p, batch, qo_indptr, kv_indptr,
                                         custom ? &cm : NULL, &tiles, ws, ws_bytes, &plan));
    CHECK_OK(ctx, fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tv, qo_indptr, kv_indptr,
                                        custom ? &cm : NULL, &to, c->has_lse ? &tl : NULL));
  }
  fi_rt_synchronize();
  int64_t bad = compare("o", got_o, want_o, p->q_dtype, nq);
  if (c->has_lse) bad += compare("lse", got_l, want_l, FI_DTYPE_F32, nl);
  printf("  %s trial %d: batch %d, %lld query rows, variant %s\n", c->name, trial, (int)batch,
         (long long)nnz, tiles_str(tiles, 0));

  fi_rt_free(res_o.allocated);
  fi_rt_free(res_l.allocated);
  e2e_free(want_o);
  e2e_free(want_l);
  e2e_free(ws);
  e2e_free(q);
  e2e_free(k);
  e2e_free(v);
  e2e_free(kv);
  e2e_free(qo_indptr);
  e2e_free(kv_indptr);
  e2e_free(mask_indptr);
  e2e_free(mask_bits);
  if (c->paged) free_pages(&pg);
  free(kv_len);
  return bad;
}

int main(void) {
  e2e_setup();
  rng r = {0x5eed0002u};
  prefill_case cases[5];
  memset(cases, 0, sizeof(cases));

  cases[0] = (prefill_case){"paged_causal_lse", PAGED_CAUSAL_LSE, 1, 1, 1, FI_LAYOUT_NHD,
                            fi_attention_params_default(8, 2, 64)};
  cases[0].p.page_size = 16;
  cases[0].p.mask_mode = FI_MASK_CAUSAL;

  cases[1] = (prefill_case){"paged_custom_hnd", PAGED_CUSTOM_HND, 1, 0, 0, FI_LAYOUT_HND,
                            fi_attention_params_default(4, 4, 32)};
  cases[1].p.page_size = 8;
  cases[1].p.q_dtype = cases[1].p.kv_dtype = FI_DTYPE_BF16;
  cases[1].p.mask_mode = FI_MASK_CUSTOM;

  cases[2] = (prefill_case){"ragged_causal_rope", RAGGED_CAUSAL_ROPE, 0, 0, 1, FI_LAYOUT_NHD,
                            fi_attention_params_default(4, 2, 64)};
  cases[2].p.mask_mode = FI_MASK_CAUSAL;
  cases[2].p.pos_encoding = FI_POS_ROPE_LLAMA;

  cases[3] = (prefill_case){"ragged_static", RAGGED_STATIC, 0, 0, 0, FI_LAYOUT_NHD,
                            fi_attention_params_default(4, 2, 16)};
  cases[3].p.q_dtype = cases[3].p.kv_dtype = FI_DTYPE_F32;
  cases[3].p.logits_soft_cap = 20.0f;
  cases[3].p.window_left = 10;

  cases[4] = (prefill_case){"ragged_custom_hint", RAGGED_CUSTOM_HINT, 0, 1, 0, FI_LAYOUT_NHD,
                            fi_attention_params_default(2, 2, 32)};
  cases[4].p.mask_mode = FI_MASK_CUSTOM;

  int64_t bad = 0;
  for (int i = 0; i < 5; ++i) {
    int64_t case_bad = 0;
    for (int t = 0; t < 6; ++t) case_bad += run_case(&cases[i], &r, t);
    printf("%s: 6 trials, %lld mismatches\n", cases[i].name, (long long)case_bad);
    bad += case_bad;
  }
  printf("E2E prefill: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
