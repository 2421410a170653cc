/* test/gpu/test_shared_prefix_gpu.c -- fi_split_shared_prefix on the CUDA backend (two
 * kernels) against the host backend: 300 random page tables with a shared prefix of 0-200
 * pages, each request's own 1-6 pages after it, and in half the tables one request that
 * diverges inside the prefix; every output array compared exactly (outputs poisoned). */
#include "gpu_common.h"

int main(void) {
  gpu_require_device("test_shared_prefix_gpu");
  fi_context *host, *cuda;
  FI_CK(NULL, fi_context_create(FI_BACKEND_HOST, &host));
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &cuda));
  gpu_seed(gpu_env_u64("FI_TEST_SEED", 20261125));
  const int configs = (int)gpu_env_u64("FI_TEST_CONFIGS", 300);
  int failed = 0;
  long long shared_total = 0;
  for (int c = 0; c < configs; ++c) {
    const int batch = c == 0 ? 0 : gpu_rand_int(1, 64);
    const int shared = c == 1 ? 0 : gpu_rand_int(0, 200);
    int total = 0, own[64];
    for (int i = 0; i < batch; ++i) total += own[i] = gpu_rand_int(1, 6);
    const int n = batch * shared + total;
    int32_t *indptr = malloc(sizeof(int32_t) * (batch + 1));
    int32_t *last = calloc((size_t)batch + 1, sizeof(int32_t));
    int32_t *indices = malloc(sizeof(int32_t) * (n + 1));
    int num_pages = shared + total, k = 0, next = shared;
    indptr[0] = 0;
    for (int i = 0; i < batch; ++i) {
      for (int j = 0; j < shared; ++j) indices[k++] = j;
      for (int j = 0; j < own[i]; ++j) indices[k++] = next++;
      indptr[i + 1] = k;
      last[i] = gpu_rand_int(1, 16);
    }
    if (batch > 1 && shared > 0 && (gpu_rand() & 1))
      indices[indptr[gpu_rand_int(0, batch - 1)] + gpu_rand_int(0, shared - 1)] = num_pages++;
    /* outputs: 2 + 2 + (n + 1) + 1 + (batch + 1) + (n + 1) + (batch + 1) ints */
    const size_t words = (size_t)(2 * n + 2 * batch + 10);
    int32_t *h = malloc(words * 4), *g = malloc(words * 4);
    memset(h, 0xff, words * 4);
    const fi_page_table hp = {indptr, indices, last};
    int32_t *o[7], *d[7];
    const size_t len[7] = {2, 2, (size_t)n + 1, 1, (size_t)batch + 1, (size_t)n + 1,
                           (size_t)batch + 1};
    size_t off = 0;
    int32_t *dev = gpu_alloc_poisoned(words * 4);
    for (int i = 0; i < 7; ++i) o[i] = h + off, d[i] = dev + off, off += len[i];
    FI_CK(host, fi_split_shared_prefix(host, batch, 16, &hp, num_pages, o[0], o[1], o[2],
                                       o[3], o[4], o[5], o[6]));
    int32_t *di = gpu_upload(indptr, sizeof(int32_t) * (batch + 1));
    int32_t *dx = gpu_upload(indices, sizeof(int32_t) * (n + 1));
    int32_t *dl = gpu_upload(last, sizeof(int32_t) * (batch + 1));
    const fi_page_table dp = {di, dx, dl};
    FI_CK(cuda, fi_split_shared_prefix(cuda, batch, 16, &dp, num_pages, d[0], d[1], d[2],
                                       d[3], d[4], d[5], d[6]));
    GPU_CK(cudaDeviceSynchronize());
    gpu_download(g, dev, words * 4);
    /* the written parts: qo, prefix indptr, P prefix ids, last, suffix indptr, ids, lasts */
    const int P = o[1][1], suffix = batch ? o[4][batch] : 0;
    const size_t used[7] = {2, 2, (size_t)P, 1, (size_t)batch + 1, (size_t)suffix,
                            (size_t)batch};
    int bad = 0;
    for (int i = 0; i < 7 && !bad; ++i)
      bad = memcmp(h + (o[i] - h), g + (d[i] - dev), used[i] * 4) != 0 ? i + 1 : 0;
    if (bad) {
      fprintf(stderr, "FAIL config %d (batch %d, shared %d): output %d differs (host P %d, "
              "cuda P %d)\n", c, batch, shared, bad - 1, P, g[3]);
      ++failed;
    }
    shared_total += P;
    cudaFree(dev), cudaFree(di), cudaFree(dx), cudaFree(dl);
    free(indptr), free(last), free(indices), free(h), free(g);
  }
  printf("shared_prefix split: %d tables, %d failed, %lld shared pages found in all\n", configs,
         failed, shared_total);
  fi_context_destroy(cuda);
  fi_context_destroy(host);
  printf("test_shared_prefix_gpu: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
