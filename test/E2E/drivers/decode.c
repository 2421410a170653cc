/* Driver of test/E2E/decode.mlir: random batches and page tables, the compiled function
 * against fi_decode_plan/run called directly with the same tiles. */
#include "e2e.h"

typedef struct { memref3 o; memref2 lse; } o_lse;

void _mlir_ciface_decode_gqa_lse(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                 memref1 *, memref1 *);
void _mlir_ciface_decode_combined_hnd(memref3 *, memref3 *, memref5 *, memref1 *, memref1 *,
                                      memref1 *);
void _mlir_ciface_decode_f32_alibi(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *,
                                   memref1 *, memref1 *);
void _mlir_ciface_decode_fp8(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *, memref1 *,
                             memref1 *);
typedef struct { memref3 o1, o2; } two_o;
void _mlir_ciface_decode_layers(two_o *, memref3 *, memref3 *, memref4 *, memref4 *,
                                memref4 *, memref4 *, memref1 *, memref1 *, memref1 *);

typedef struct decode_case {
  const char *name;
  fi_attention_params p;
  fi_kv_layout layout;
  int combined, has_lse, layers;
} decode_case;

static int64_t run_case(const decode_case *c, rng *r, int trial) {
  fi_context *ctx = fi_default_context();
  const fi_attention_params *p = &c->p;
  int32_t batch = (int32_t)rng_int(r, 1, 7);
  pages_t pg;
  make_pages(r, &pg, batch, p->page_size, 1, trial % 2 ? 700 : 90, 1);
  int64_t qshape[3] = {batch, p->num_qo_heads, p->head_dim};
  int64_t lshape[2] = {batch, p->num_qo_heads};
  int64_t nq = numel(3, qshape), nl = numel(2, lshape);
  /* Page tensors in the layout; a combined cache is [P, 2, ...]. */
  int64_t dims4[4] = {pg.num_pages, p->page_size, p->num_kv_heads, p->head_dim};
  if (c->layout == FI_LAYOUT_HND) {
    dims4[1] = p->num_kv_heads;
    dims4[2] = p->page_size;
  }
  int64_t per_cache = numel(4, dims4);
  int layers = c->layers ? 2 : 1;
  void *q[2], *k[2], *v[2], *kv = NULL;
  memref3 mq[2];
  memref4 mk[2], mv[2];
  memref5 mkv;
  for (int l = 0; l < layers; ++l) {
    q[l] = random_tensor(r, p->q_dtype, nq, -2, 2);
    mr_init(&mq[l], 3, q[l], qshape);
    if (c->combined) {
      kv = random_tensor(r, p->kv_dtype, 2 * per_cache, -2, 2);
      int64_t d5[5] = {dims4[0], 2, dims4[1], dims4[2], dims4[3]};
      mr_init(&mkv, 5, kv, d5);
    } else {
      k[l] = random_tensor(r, p->kv_dtype, per_cache, -2, 2);
      v[l] = random_tensor(r, p->kv_dtype, per_cache, -2, 2);
      mr_init(&mk[l], 4, k[l], dims4);
      mr_init(&mv[l], 4, v[l], dims4);
    }
  }
  int64_t nb1 = batch + 1, nused = pg.indptr[batch] ? pg.indptr[batch] : 0;
  memref1 mindptr, mindices, mlast;
  mr_init(&mindptr, 1, pg.indptr, &nb1);
  mr_init(&mindices, 1, pg.indices, &nused);
  int64_t nbatch = batch;
  mr_init(&mlast, 1, pg.last, &nbatch);

  /* The compiled function. */
  fi_rt_plan_log_reset();
  void *got_o[2] = {NULL, NULL}, *got_lse = NULL;
  void *alloc[3] = {NULL, NULL, NULL};
  if (c->layers) {
    two_o res;
    _mlir_ciface_decode_layers(&res, &mq[0], &mq[1], &mk[0], &mv[0], &mk[1], &mv[1],
                               &mindptr, &mindices, &mlast);
    got_o[0] = (char *)res.o1.aligned + res.o1.offset * (int64_t)fi_dtype_size(p->q_dtype);
    got_o[1] = (char *)res.o2.aligned + res.o2.offset * (int64_t)fi_dtype_size(p->q_dtype);
    alloc[0] = res.o1.allocated;
    alloc[1] = res.o2.allocated;
  } else if (c->combined) {
    memref3 res;
    _mlir_ciface_decode_combined_hnd(&res, &mq[0], &mkv, &mindptr, &mindices, &mlast);
    got_o[0] = (char *)res.aligned + res.offset * (int64_t)fi_dtype_size(p->q_dtype);
    alloc[0] = res.allocated;
  } else {
    o_lse res;
    void (*fn)(o_lse *, memref3 *, memref4 *, memref4 *, memref1 *, memref1 *, memref1 *) =
        p->q_dtype == FI_DTYPE_F32 ? _mlir_ciface_decode_f32_alibi
        : p->kv_dtype == FI_DTYPE_E4M3 ? _mlir_ciface_decode_fp8
                                       : _mlir_ciface_decode_gqa_lse;
    fn(&res, &mq[0], &mk[0], &mv[0], &mindptr, &mindices, &mlast);
    got_o[0] = (char *)res.o.aligned + res.o.offset * (int64_t)fi_dtype_size(p->q_dtype);
    got_lse = (char *)res.lse.aligned + res.lse.offset * 4;
    alloc[0] = res.o.allocated;
    alloc[1] = res.lse.allocated;
  }
  fi_rt_synchronize();
  if (e2e_skipped(c->name)) return 0;
  int plans = fi_rt_plan_log(NULL, NULL, 0);
  fi_tiles tiles = logged_tiles(0, FI_OP_DECODE);

  /* The runtime, directly, with the same tiles. */
  size_t ws_bytes = 0;
  CHECK_OK(ctx, fi_decode_workspace_size(ctx, p, batch, &ws_bytes));
  void *ws = e2e_alloc(ws_bytes);
  fi_plan plan;
  fi_page_table table = {pg.indptr, pg.indices, pg.last};
  CHECK_OK(ctx, fi_decode_plan(ctx, p, batch, &table, pg.num_pages, &tiles, ws, ws_bytes, &plan));
  int64_t bad = 0;
  for (int l = 0; l < layers; ++l) {
    fi_tensor tq = fi_tensor_contiguous(q[l], p->q_dtype, 3, qshape);
    void *want_o = poisoned_tensor(p->q_dtype, nq), *want_lse = poisoned_tensor(FI_DTYPE_F32, nl);
    fi_tensor to = fi_tensor_contiguous(want_o, p->q_dtype, 3, qshape);
    fi_tensor tl = fi_tensor_contiguous(want_lse, FI_DTYPE_F32, 2, lshape);
    fi_paged_kv_cache cache;
    if (c->combined) {
      int64_t d5[5] = {dims4[0], 2, dims4[1], dims4[2], dims4[3]};
      fi_tensor tkv = fi_tensor_contiguous(kv, p->kv_dtype, 5, d5);
      CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&tkv, c->layout, &cache));
    } else {
      cache.k = fi_tensor_contiguous(k[l], p->kv_dtype, 4, dims4);
      cache.v = fi_tensor_contiguous(v[l], p->kv_dtype, 4, dims4);
      cache.layout = c->layout;
    }
    CHECK_OK(ctx, fi_decode_run(ctx, &plan, &tq, &cache, &table, &to, c->has_lse ? &tl : NULL));
    fi_rt_synchronize();
    bad += compare(l ? "o (layer 2)" : "o", got_o[l], want_o, p->q_dtype, nq);
    if (c->has_lse) bad += compare("lse", got_lse, want_lse, FI_DTYPE_F32, nl);
    e2e_free(want_o);
    e2e_free(want_lse);
  }
  printf("  %s trial %d: batch %d, %lld KV tokens, variant %s, %d plan(s)\n", c->name, trial,
         (int)batch, (long long)pg.total_kv, tiles_str(tiles, 1), plans);
  if (c->layers && plans != 1) {
    printf("MISMATCH %s: %d plans made for two layers sharing one page table\n", c->name, plans);
    ++bad;
  }
  for (int i = 0; i < 3; ++i) fi_rt_free(alloc[i]);
  for (int l = 0; l < layers; ++l) {
    e2e_free(q[l]);
    if (!c->combined) {
      e2e_free(k[l]);
      e2e_free(v[l]);
    }
  }
  e2e_free(kv);
  e2e_free(ws);
  free_pages(&pg);
  return bad;
}

int main(void) {
  e2e_setup();
  rng r = {0x5eed0001u};
  decode_case cases[5];
  memset(cases, 0, sizeof(cases));

  cases[0].name = "decode_gqa_lse";
  cases[0].p = fi_attention_params_default(8, 2, 64);
  cases[0].p.page_size = 16;
  cases[0].has_lse = 1;

  cases[1].name = "decode_combined_hnd";
  cases[1].p = fi_attention_params_default(4, 4, 32);
  cases[1].p.q_dtype = cases[1].p.kv_dtype = FI_DTYPE_BF16;
  cases[1].p.page_size = 8;
  cases[1].p.logits_soft_cap = 30.0f;
  cases[1].p.window_left = 40;
  cases[1].p.pos_encoding = FI_POS_ROPE_LLAMA;
  cases[1].p.rope_theta = 500.0f;
  cases[1].p.rope_scale = 2.0f;
  cases[1].layout = FI_LAYOUT_HND;
  cases[1].combined = 1;

  cases[2].name = "decode_f32_alibi";
  cases[2].p = fi_attention_params_default(6, 3, 16);
  cases[2].p.q_dtype = cases[2].p.kv_dtype = FI_DTYPE_F32;
  cases[2].p.page_size = 4;
  cases[2].p.pos_encoding = FI_POS_ALIBI;
  cases[2].p.sm_scale = 0.3f;
  cases[2].has_lse = 1;

  cases[3].name = "decode_fp8";
  cases[3].p = fi_attention_params_default(4, 1, 64);
  cases[3].p.kv_dtype = FI_DTYPE_E4M3;
  cases[3].p.page_size = 16;
  cases[3].p.k_scale = 0.5f;
  cases[3].p.v_scale = 2.0f;
  cases[3].has_lse = 1;

  cases[4].name = "decode_layers";
  cases[4].p = fi_attention_params_default(8, 2, 64);
  cases[4].p.page_size = 16;
  cases[4].layers = 1;

  int64_t bad = 0;
  const int trials = 6;
  for (int i = 0; i < 5; ++i) {
    int64_t case_bad = 0;
    for (int t = 0; t < trials; ++t) case_bad += run_case(&cases[i], &r, t);
    printf("%s: %d trials%s, %lld mismatches\n", cases[i].name, trials,
           cases[i].layers ? ", 1 plan per call" : "", (long long)case_bad);
    bad += case_bad;
  }
  printf("E2E decode: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
