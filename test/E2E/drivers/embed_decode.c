/* Runs the decode step that examples/embed/decode_step_capi.c built through the C API
 * (2 layers: 32 q heads, 8 KV heads, head_dim 128, page 16) and compares it with the
 * runtime called directly, layer after layer. */
#include "e2e.h"

void _mlir_ciface_decode_step(memref3 *, memref3 *, memref4 *, memref4 *, memref4 *,
                              memref4 *, memref1 *, memref1 *, memref1 *);

int main(void) {
  e2e_setup();
  fi_context *ctx = fi_default_context();
  rng r = {0x5eed0004u};
  fi_attention_params p = fi_attention_params_default(32, 8, 128);
  p.page_size = 16;
  int64_t bad = 0;
  for (int trial = 0; trial < 4; ++trial) {
    int32_t batch = (int32_t)rng_int(&r, 1, 6);
    pages_t pg;
    make_pages(&r, &pg, batch, 16, 1, 600, 1);
    int64_t qshape[3] = {batch, 32, 128}, cshape[4] = {pg.num_pages, 16, 8, 128};
    int64_t nq = numel(3, qshape), nc = numel(4, cshape);
    void *q = random_tensor(&r, FI_DTYPE_F16, nq, -2, 2);
    void *kv[4];
    memref4 mkv[4];
    for (int i = 0; i < 4; ++i) {
      kv[i] = random_tensor(&r, FI_DTYPE_F16, nc, -2, 2);
      mr_init(&mkv[i], 4, kv[i], cshape);
    }
    memref3 mq, res;
    mr_init(&mq, 3, q, qshape);
    int64_t nb1 = batch + 1, nb = batch, used = pg.indptr[batch];
    memref1 mp, mi, ml;
    mr_init(&mp, 1, pg.indptr, &nb1);
    mr_init(&mi, 1, pg.indices, &used);
    mr_init(&ml, 1, pg.last, &nb);
    fi_rt_plan_log_reset();
    _mlir_ciface_decode_step(&res, &mq, &mkv[0], &mkv[1], &mkv[2], &mkv[3], &mp, &mi, &ml);
    fi_rt_synchronize();
    int plans = fi_rt_plan_log(NULL, NULL, 0);
    fi_tiles tiles = logged_tiles(0, FI_OP_DECODE);

    size_t ws_bytes;
    CHECK_OK(ctx, fi_decode_workspace_size(ctx, &p, batch, &ws_bytes));
    void *ws = e2e_alloc(ws_bytes);
    fi_plan plan;
    fi_page_table table = {pg.indptr, pg.indices, pg.last};
    CHECK_OK(ctx, fi_decode_plan(ctx, &p, batch, &table, pg.num_pages, &tiles, ws, ws_bytes, &plan));
    void *h = q, *o[2];
    for (int l = 0; l < 2; ++l) {
      o[l] = poisoned_tensor(FI_DTYPE_F16, nq);
      fi_tensor tq = fi_tensor_contiguous(h, FI_DTYPE_F16, 3, qshape);
      fi_tensor to = fi_tensor_contiguous(o[l], FI_DTYPE_F16, 3, qshape);
      fi_paged_kv_cache cache = {fi_tensor_contiguous(kv[2 * l], FI_DTYPE_F16, 4, cshape),
                                 fi_tensor_contiguous(kv[2 * l + 1], FI_DTYPE_F16, 4, cshape),
                                 FI_LAYOUT_NHD};
      CHECK_OK(ctx, fi_decode_run(ctx, &plan, &tq, &cache, &table, &to, NULL));
      h = o[l];
    }
    fi_rt_synchronize();
    bad += compare("o", (char *)res.aligned + res.offset * 2, o[1], FI_DTYPE_F16, nq);
    printf("  trial %d: batch %d, %lld KV tokens, variant %s, %d plan(s) for 2 layers\n", trial,
           (int)batch, (long long)pg.total_kv, tiles_str(tiles, 1), plans);
    if (plans != 1) {
      printf("MISMATCH: %d plans for two layers over one page table\n", plans);
      ++bad;
    }
    fi_rt_free(res.allocated);
    e2e_free(o[0]);
    e2e_free(o[1]);
    e2e_free(q);
    for (int i = 0; i < 4; ++i) e2e_free(kv[i]);
    e2e_free(ws);
    free_pages(&pg);
  }
  printf("E2E embedded decode step: %s\n", bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}
