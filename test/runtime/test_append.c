/* test/runtime/test_append.c -- append of ragged K/V into the paged cache: the new tokens
 * land at the last append_len positions of each request (both layouts, both K/V forms,
 * page sizes 1 and 16, fp8 and f16), and nothing else in the cache changes. */
#include "test_util.h"

static void run(fi_context *ctx, int ps, fi_kv_layout layout, int combined, fi_dtype dt, uint64_t seed) {
  rng r = {seed};
  const int batch = 5, hkv = 2, hd = 64;
  int32_t kv_len[5], app_len[5];
  int32_t indptr[6] = {0}, app_indptr[6] = {0}, last[5];
  for (int i = 0; i < batch; ++i) {
    kv_len[i] = (int32_t)rng_int(&r, 1, 70);
    app_len[i] = i == 2 ? 0 : (int32_t)rng_int(&r, 1, kv_len[i]);
    int32_t n = (kv_len[i] + ps - 1) / ps;
    indptr[i + 1] = indptr[i] + n;
    last[i] = kv_len[i] - ps * (n - 1);
    app_indptr[i + 1] = app_indptr[i] + app_len[i];
  }
  const int32_t num_pages = indptr[batch] + 2;
  int32_t *indices = xmalloc(sizeof(int32_t) * num_pages);
  for (int32_t j = 0; j < indptr[batch]; ++j) indices[j] = num_pages - 1 - j; /* reversed */
  const size_t es = fi_dtype_size(dt);
  const int64_t page_elems = (int64_t)ps * hkv * hd, total = (int64_t)num_pages * page_elems * 2;
  uint8_t *cache = xmalloc(es * (size_t)total), *before = xmalloc(es * (size_t)total);
  fill_random(cache, dt, total, &r, -1, 1);
  memcpy(before, cache, es * (size_t)total);
  fi_paged_kv_cache kv;
  int64_t dims[4] = {num_pages, ps, hkv, hd};
  if (layout == FI_LAYOUT_HND) dims[1] = hkv, dims[2] = ps;
  if (combined) {
    int64_t c5[5] = {num_pages, 2, dims[1], dims[2], dims[3]};
    fi_tensor t = fi_tensor_contiguous(cache, dt, 5, c5);
    EXPECT_OK(fi_paged_kv_cache_from_combined(&t, layout, &kv), NULL);
  } else {
    kv.k = fi_tensor_contiguous(cache, dt, 4, dims);
    kv.v = fi_tensor_contiguous(cache + es * (size_t)(num_pages * page_elems), dt, 4, dims);
    kv.layout = layout;
  }
  const int64_t nnz = app_indptr[batch];
  uint8_t *k = xmalloc(es * (size_t)(nnz * hkv * hd + 1)), *v = xmalloc(es * (size_t)(nnz * hkv * hd + 1));
  fill_random(k, dt, nnz * hkv * hd, &r, -3, 3);
  fill_random(v, dt, nnz * hkv * hd, &r, -3, 3);
  int64_t ks[3] = {nnz, hkv, hd};
  fi_tensor K = fi_tensor_contiguous(k, dt, 3, ks), V = fi_tensor_contiguous(v, dt, 3, ks);
  fi_page_table pt = {indptr, indices, last};
  fi_plan plan;
  EXPECT_OK(fi_append_paged_kv_plan(ctx, batch, ps, app_indptr, &pt, num_pages, &plan), ctx);
  EXPECT_OK(fi_append_paged_kv_run(ctx, &plan, &K, &V, app_indptr, &kv, &pt), ctx);
  /* expected cache: before + the new tokens, computed here by plain index arithmetic */
  for (int i = 0; i < batch; ++i)
    for (int32_t t = 0; t < app_len[i]; ++t) {
      int32_t pos = kv_len[i] - app_len[i] + t, page = indices[indptr[i] + pos / ps], slot = pos % ps;
      for (int h = 0; h < hkv; ++h)
        for (int w = 0; w < 2; ++w) {
          int64_t within = layout == FI_LAYOUT_NHD ? ((int64_t)slot * hkv + h) * hd : ((int64_t)h * ps + slot) * hd;
          int64_t off = combined ? ((int64_t)page * 2 + w) * page_elems + within
                                 : (int64_t)w * num_pages * page_elems + (int64_t)page * page_elems + within;
          memcpy(before + es * (size_t)off, (w ? v : k) + es * (size_t)(((int64_t)app_indptr[i] + t) * hkv * hd + h * hd),
                 es * (size_t)hd);
        }
    }
  EXPECT(memcmp(before, cache, es * (size_t)total) == 0,
         "append ps %d layout %d combined %d dtype %s: cache differs from the expected cache", ps,
         (int)layout, combined, fi_dtype_name(dt));
  free(indices); free(cache); free(before); free(k); free(v);
}

int main(void) {
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) return 1;
  uint64_t seed = 1;
  for (int ps = 1; ps <= 16; ps += 15)
    for (int layout = 0; layout < 2; ++layout)
      for (int combined = 0; combined < 2; ++combined) {
        run(ctx, ps, (fi_kv_layout)layout, combined, FI_DTYPE_F16, seed++);
        run(ctx, ps, (fi_kv_layout)layout, combined, FI_DTYPE_E4M3, seed++);
      }
  run(ctx, 16, FI_LAYOUT_NHD, 0, FI_DTYPE_F32, seed++);
  run(ctx, 16, FI_LAYOUT_HND, 1, FI_DTYPE_BF16, seed++);
  fi_context_destroy(ctx);
  return test_finish("test_append");
}
