/* test_append_gpu.c -- CUDA append_paged_kv against the host backend.
 *
 * FI_TEST_CONFIGS random configurations (default 80; seed FI_TEST_SEED): cache dtype f16 /
 * bf16 / f32 / e4m3 / e5m2, head_dim 64/128/256 or any 1..256 (copy units of 16 down to 1
 * bytes), kv heads 1..8, page sizes 1..1024, NHD / HND, separate or combined K/V, batch
 * 1..256 with KV lengths 0..4096 and append lengths 0..kv_len, shuffled page tables. Both
 * caches start from the same random contents; after the append the whole GPU cache must
 * equal the host cache byte for byte (appended tokens written, nothing else touched).
 * Half the configurations plan on the device (fi_append_paged_kv_plan_device: the kernel
 * bounds-checks every slot); a third of those point one page-table entry of an appended token
 * out of the cache on the device: its tokens must be skipped (their host-written rows keep
 * the initial bytes) and the status must read {7, one of them, the bad page id}.
 * Exit 77 without a GPU. */
#include "gpu_common.h"

static const fi_dtype dtypes[] = {FI_DTYPE_F16, FI_DTYPE_BF16, FI_DTYPE_F32, FI_DTYPE_E4M3, FI_DTYPE_E5M2};

static fi_paged_kv_cache view(void *base, fi_dtype dt, fi_kv_layout layout, int combined,
                              int64_t pages, int64_t ps, int64_t heads, int64_t D) {
  int64_t d1 = layout == FI_LAYOUT_NHD ? ps : heads, d2 = layout == FI_LAYOUT_NHD ? heads : ps;
  fi_paged_kv_cache kv;
  if (combined) {
    int64_t shape[5] = {pages, 2, d1, d2, D};
    fi_tensor t = fi_tensor_contiguous(base, dt, 5, shape);
    fi_paged_kv_cache_from_combined(&t, layout, &kv);
  } else {
    int64_t shape[4] = {pages, d1, d2, D};
    kv.k = fi_tensor_contiguous(base, dt, 4, shape);
    kv.v = fi_tensor_contiguous((char *)base + (size_t)(pages * d1 * d2 * D) * fi_dtype_size(dt), dt, 4, shape);
    kv.layout = layout;
  }
  return kv;
}

/* The byte offset from `base` of row (page, slot, head) of kv's K (which 0) or V (1), from
 * the view's own strides. */
static size_t row_offset(const void *base, const fi_paged_kv_cache *kv, int which, int64_t page,
                         int64_t slot, int64_t h) {
  const fi_tensor *t = which ? &kv->v : &kv->k;
  const int pos = kv->layout == FI_LAYOUT_NHD ? 1 : 2, head = 3 - pos;
  const int64_t el = page * t->strides[0] + slot * t->strides[pos] + h * t->strides[head];
  return (size_t)((const char *)t->data - (const char *)base) + (size_t)el * fi_dtype_size(t->dtype);
}

/* The cache position of request b's appended token t (0-based within its append). */
static int append_pos(const int32_t *kv_len, const int32_t *aindptr, int b, int64_t t) {
  return kv_len[b] - (aindptr[b + 1] - aindptr[b]) + (int)t;
}

static int append_case(fi_context *h, fi_context *g, int idx, long long *bytes_checked) {
  fi_dtype dt = dtypes[gpu_rand_int(0, 4)];
  static const int dims[] = {64, 128, 256};
  int D = gpu_rand_int(0, 3) == 0 ? gpu_rand_int(1, 256) : dims[gpu_rand_int(0, 2)];
  int heads = gpu_rand_int(1, 8);
  int ps = gpu_rand_int(0, 3) == 0 ? gpu_rand_int(1, 1024) : (1 << gpu_rand_int(0, 6));
  fi_kv_layout layout = gpu_rand_int(0, 1) ? FI_LAYOUT_HND : FI_LAYOUT_NHD;
  int combined = gpu_rand_int(0, 1);
  int batch = gpu_rand_log(1, 256);
  int32_t *kv_len = (int32_t *)malloc(sizeof(int32_t) * (size_t)batch);
  int32_t *aindptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(batch + 1));
  aindptr[0] = 0;
  int max_kv = (int)(3e7 / ((double)batch * heads * D * 2)) + 1;
  if (max_kv > 4096) max_kv = 4096;
  for (int i = 0; i < batch; ++i) {
    kv_len[i] = gpu_rand_int(0, 10) == 0 ? 0 : gpu_rand_log(1, max_kv);
    int a = kv_len[i] == 0 ? 0 : (gpu_rand_int(0, 2) == 0 ? 1 : gpu_rand_int(0, kv_len[i]));
    aindptr[i + 1] = aindptr[i] + a;
  }
  int64_t nnz = aindptr[batch];
  gpu_pages pg = gpu_make_pages(batch, kv_len, ps, gpu_rand_int(0, 4));
  int64_t pages = pg.num_pages > 0 ? pg.num_pages : 1;
  size_t es = fi_dtype_size(dt);
  size_t cache_bytes = (size_t)(2 * pages * ps * heads * D) * es;
  size_t new_elems = (size_t)nnz * heads * D;
  void *cache_h = malloc(cache_bytes), *cache_g = malloc(cache_bytes);
  void *kn = malloc(new_elems * es + 1), *vn = malloc(new_elems * es + 1);
  gpu_fill_random(cache_h, dt, cache_bytes / es);
  gpu_fill_random(kn, dt, new_elems);
  gpu_fill_random(vn, dt, new_elems);
  void *cache_d = gpu_upload(cache_h, cache_bytes);
  void *kn_d = gpu_upload(kn, new_elems * es), *vn_d = gpu_upload(vn, new_elems * es);
  int32_t *ai_d = (int32_t *)gpu_upload(aindptr, sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *ip_d = (int32_t *)gpu_upload(pg.indptr, sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *ix_d = (int32_t *)gpu_upload(pg.indices, sizeof(int32_t) * (size_t)pages);
  int32_t *lp_d = (int32_t *)gpu_upload(pg.last_page_len, sizeof(int32_t) * (size_t)batch);

  /* device plan; and one appended token's page-table entry pointed out of the cache */
  const int device_plan = gpu_rand_int(0, 1), corrupt = device_plan && nnz > 0 && gpu_rand_int(0, 2) == 0;
  int bad_req = -1, bad_entry = -1;
  if (corrupt) {
    int64_t tok = gpu_rand_int(0, (int)nnz - 1);
    bad_req = 0;
    while (aindptr[bad_req + 1] <= tok) ++bad_req;
    int pos = append_pos(kv_len, aindptr, bad_req, tok - aindptr[bad_req]);
    bad_entry = pg.indptr[bad_req] + pos / ps;
    int32_t out = (int32_t)pages;
    GPU_CK(cudaMemcpy(ix_d + bad_entry, &out, sizeof out, cudaMemcpyHostToDevice));
  }
  void *cache0 = malloc(cache_bytes);
  memcpy(cache0, cache_h, cache_bytes);
  int32_t *status_d = NULL;
  if (device_plan) {
    GPU_CK(cudaMalloc((void **)&status_d, 4 * sizeof(int32_t)));
    GPU_CK(cudaMemset(status_d, 0, 4 * sizeof(int32_t)));
  }
  fi_page_table pt_h = {pg.indptr, pg.indices, pg.last_page_len}, pt_d = {ip_d, ix_d, lp_d};
  int64_t nshape[3] = {nnz, heads, D};
  fi_plan ph, pgp;
  FI_CK(h, fi_append_paged_kv_plan(h, batch, ps, aindptr, &pt_h, (int32_t)pages, &ph));
  fi_tensor kt = fi_tensor_contiguous(kn, dt, 3, nshape), vt = fi_tensor_contiguous(vn, dt, 3, nshape);
  fi_paged_kv_cache ch = view(cache_h, dt, layout, combined, pages, ps, heads, D);
  FI_CK(h, fi_append_paged_kv_run(h, &ph, &kt, &vt, aindptr, &ch, &pt_h));
  if (device_plan)
    FI_CK(g, fi_append_paged_kv_plan_device(g, batch, ps, (int32_t)pages, pg.indptr[batch],
                                            status_d, &pgp));
  else
    FI_CK(g, fi_append_paged_kv_plan(g, batch, ps, aindptr, &pt_h, (int32_t)pages, &pgp));
  fi_tensor kd = fi_tensor_contiguous(kn_d, dt, 3, nshape), vd = fi_tensor_contiguous(vn_d, dt, 3, nshape);
  fi_paged_kv_cache cd = view(cache_d, dt, layout, combined, pages, ps, heads, D);
  FI_CK(g, fi_append_paged_kv_run(g, &pgp, &kd, &vd, ai_d, &cd, &pt_d));
  GPU_CK(cudaDeviceSynchronize());
  gpu_download(cache_g, cache_d, cache_bytes);
  long long bad = 0;
  int32_t status[4] = {0, 0, 0, 0};
  if (device_plan) gpu_download(status, status_d, sizeof status);
  if (corrupt) { /* the skipped tokens' rows: the initial bytes, as the host had them */
    int64_t first = aindptr[bad_req], count = aindptr[bad_req + 1] - first;
    int64_t lo = -1, hi = -1; /* the skipped tokens [lo, hi] */
    for (int64_t t = 0; t < count; ++t) {
      int pos = append_pos(kv_len, aindptr, bad_req, t);
      if (pg.indptr[bad_req] + pos / ps != bad_entry) continue;
      if (lo < 0) lo = first + t;
      hi = first + t;
      for (int which = 0; which < 2; ++which)
        for (int hd = 0; hd < heads; ++hd) {
          size_t o = row_offset(cache_h, &ch, which, pg.indices[bad_entry], pos % ps, hd);
          memcpy((uint8_t *)cache_h + o, (uint8_t *)cache0 + o, (size_t)D * es);
        }
    }
    if (status[0] != 7 || status[1] < lo || status[1] > hi || status[2] != (int32_t)pages) {
      fprintf(stderr, "FAIL append case %d: status {%d, %d, %d}, want {7, %lld..%lld, %lld}\n",
              idx, status[0], status[1], status[2], (long long)lo, (long long)hi, (long long)pages);
      ++bad;
    }
  } else if (device_plan && status[0] != 0) {
    fprintf(stderr, "FAIL append case %d: status {%d, %d, %d} on a valid table\n", idx,
            status[0], status[1], status[2]);
    ++bad;
  }
  for (size_t i = 0; i < cache_bytes; ++i) bad += ((uint8_t *)cache_g)[i] != ((uint8_t *)cache_h)[i];
  *bytes_checked += (long long)cache_bytes;
  if (bad || getenv("FI_TEST_VERBOSE"))
    fprintf(stderr, "%s append case %d: %s D %d heads %d page %d %s %s batch %d nnz %lld%s: %lld bytes differ\n",
            bad ? "FAIL" : "ok", idx, fi_dtype_name(dt), D, heads, ps,
            layout == FI_LAYOUT_NHD ? "NHD" : "HND", combined ? "combined" : "separate", batch,
            (long long)nnz, corrupt ? " device plan, bad entry" : device_plan ? " device plan" : "",
            bad);
  free(kv_len); free(aindptr); free(cache_h); free(cache_g); free(cache0); free(kn); free(vn);
  if (status_d) cudaFree(status_d);
  gpu_free_pages(&pg);
  cudaFree(cache_d); cudaFree(kn_d); cudaFree(vn_d); cudaFree(ai_d); cudaFree(ip_d); cudaFree(ix_d); cudaFree(lp_d);
  return bad > 0;
}

int main(void) {
  gpu_require_device("test_append_gpu");
  uint64_t seed = gpu_env_u64("FI_TEST_SEED", 4242);
  int n = (int)gpu_env_u64("FI_TEST_CONFIGS", 80);
  gpu_seed(seed);
  fi_context *h = NULL, *g = NULL;
  FI_CK(NULL, fi_context_create(FI_BACKEND_HOST, &h));
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &g));
  int failed = 0;
  long long bytes = 0;
  for (int i = 0; i < n; ++i) failed += append_case(h, g, i, &bytes);
  printf("append_paged_kv: %d configs, %d failed, %lld cache bytes compared\n", n, failed, bytes);
  fi_context_destroy(g);
  fi_context_destroy(h);
  printf("test_append_gpu: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
