// decode_read_probe.cu -- how fast can the paged-decode access pattern be read at all?
// Separates the memory side of decode_tcw_kernel from its math: the same gather (K and V
// caches NHD [pages][16][heads][128] fp16, every request's pages shuffled, 16-token
// sub-tiles = one page per warp step, cp.async rings per warp) with the math replaced by a
// dependent FMA chain of `work` steps per sub-tile. Prints GB/s and the fraction of a
// device-to-device copy measured in the same process.
//   stream   contiguous 16-byte loads of K (1 GiB, 134 MB, 268 MB): the pattern-free ceiling
//   gather   argv[1] = "batch,kv_len,chunks,NW,S,C,work;...": CTA = (request, chunk, kv
//            head) with the head fastest (HEAD_SLOW=1: slowest), NW warps each streaming its
//            own sub-tiles through an S-deep ring, C CTAs per SM forced through shared
//            memory; JITTER=n adds 0..n-1 pseudo-random FMA steps per sub-tile
// Built by bench/CMakeLists.txt (target decode_read_probe), or by hand from the repository:
//   nvcc -O3 -std=c++17 -arch=sm_90a -Ikernels/cuda -Ikernels/src -Ikernels/include
//        -Itest/gpu bench/probes/decode_read_probe.cu
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <vector>
#include <algorithm>
#include <random>

#include "common.cuh"  // fi::cp_async16 / cp_async_commit / cp_async_wait, as the kernels use

#include "probe_common.h"  // CK

constexpr int D = 128, PAGE = 16;

__global__ void stream_kernel(const uint4 *a, long long n, float *sink) {
  float acc = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    uint4 x = __ldcs(a + i);
    acc += __uint_as_float(x.x ^ x.y ^ x.z ^ x.w);
  }
  if (acc == 12345.f) sink[0] = acc;
}

struct GatherArgs {
  const uint8_t *k, *v;
  const int *indices;  // [batch][pages_per_req]
  int batch, heads, kv_len, chunks, pages_per_req, work, stages;
  int jitter;     // extra FMA steps per sub-tile, pseudo-random in [0, jitter): desyncs warps
  int head_slow;  // 1: the kv head varies slowest in launch order (CTAs of one page far apart)
  float *sink;
};

// One warp's sub-tile j of the unit: tokens [lo + 16 (warp + j NW), +16).
__global__ void gather_kernel(GatherArgs a) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int NW = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int S = a.stages;
  const int units = gridDim.x / a.heads;
  const int head = a.head_slow ? blockIdx.x / units : blockIdx.x % a.heads;
  const int unit = a.head_slow ? blockIdx.x % units : blockIdx.x / a.heads;
  const int req = unit / a.chunks, chunk = unit % a.chunks;
  const int per = a.kv_len / a.chunks;
  const int lo = chunk * per;
  const int num_sub = per / 16;
  const int my = num_sub > warp ? (num_sub - warp + NW - 1) / NW : 0;
  uint8_t *ring = smem + warp * S * 8192;
  const long long tok_stride = (long long)a.heads * D * 2, page_stride = PAGE * tok_stride;
  const int *idx = a.indices + (long long)req * a.pages_per_req;
  // Page ids are looked up one sub-tile ahead, as decode_tcw_kernel does.
  auto page_of = [&](int j) { return j < my ? idx[(lo + (warp + j * NW) * 16) / PAGE] : 0; };
  int next_page = page_of(0);
  auto issue = [&](int j) {
    if (j < my) {
      int page = next_page;
      next_page = page_of(j + 1);
      uint8_t *kd = ring + (j % S) * 8192, *vd = kd + 4096;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        int c = lane + 32 * i, tok = c / 16, part = c % 16;
        long long off = page * page_stride + tok * tok_stride + head * D * 2 + part * 16;
        fi::cp_async16(kd + c * 16, a.k + off, true);
        fi::cp_async16(vd + c * 16, a.v + off, true);
      }
    }
    fi::cp_async_commit();
  };
  for (int j = 0; j < S - 1; ++j) issue(j);
  float acc = 0.f;
  for (int it = 0; it < my; ++it) {
    if (S == 2) fi::cp_async_wait<0>();
    else if (S == 3) fi::cp_async_wait<1>();
    else fi::cp_async_wait<2>();
    __syncwarp();
    const float *t = (const float *)(ring + (it % S) * 8192);
    float x = t[lane] + t[lane + 1024];
    int steps = a.work;
    if (a.jitter > 0) steps += (int)(((unsigned)(blockIdx.x * 131 + warp * 31 + it) * 2654435761u) >> 8) % a.jitter;
    for (int w = 0; w < steps; ++w) x = fmaf(x, 1.0001f, 0.5f);
    acc += x;
    __syncwarp();
    issue(it + S - 1);
  }
  if (acc == 12345.f) a.sink[0] = acc;
}

int main(int argc, char **argv) {
  int dev = 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const int sms = prop.multiProcessorCount;
  CK(cudaFuncSetAttribute(gather_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          prop.sharedMemPerBlockOptin));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *sink;
  CK(cudaMalloc(&sink, 4));

  // Copy ceiling: 1 GiB device to device, bytes read + written.
  size_t cbytes = 1ull << 30;
  void *ca, *cb;
  CK(cudaMalloc(&ca, cbytes));
  CK(cudaMalloc(&cb, cbytes));
  CK(cudaMemset(ca, 1, cbytes));
  auto time_it = [&](auto fn, int reps) {
    for (int i = 0; i < 5; ++i) fn();
    std::vector<float> ts;
    for (int i = 0; i < reps; ++i) {
      CK(cudaEventRecord(e0));
      fn();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
  };
  float cms = time_it([&] { CK(cudaMemcpyAsync(cb, ca, cbytes, cudaMemcpyDeviceToDevice)); }, 20);
  double copy_gbs = 2.0 * cbytes / (cms * 1e6);
  printf("copy %.0f GB/s\n", copy_gbs);

  // Caches big enough for the largest case: 256 x 2048 tokens x 8 heads (1 GiB each of K, V).
  const int heads = 8;
  const long long max_tokens = 256LL * 2048;
  const long long cache_bytes = max_tokens * heads * D * 2;
  uint8_t *k, *v;
  CK(cudaMalloc(&k, cache_bytes));
  CK(cudaMalloc(&v, cache_bytes));
  CK(cudaMemset(k, 0x11, cache_bytes));
  CK(cudaMemset(v, 0x22, cache_bytes));
  int *d_idx;
  CK(cudaMalloc(&d_idx, max_tokens / PAGE * sizeof(int)));

  float sms_ = time_it([&] {
    stream_kernel<<<sms * 8, 512>>>((const uint4 *)k, cache_bytes / 16, sink);
  }, 20);
  printf("stream read K: %.0f GB/s = %.1f %% of copy\n", cache_bytes / (sms_ * 1e6),
         100.0 * cache_bytes / (sms_ * 1e6) / copy_gbs);
  // The same read at the sizes of the split rows: fixed costs (launch, ramp, tail) show.
  for (long long mb : {134LL, 268LL}) {
    long long n = mb * 1000000LL / 16;
    float ms = time_it([&] { stream_kernel<<<sms * 8, 512>>>((const uint4 *)k, n, sink); }, 50);
    printf("stream read %lld MB: %.1f us %.0f GB/s = %.1f %% of copy\n", mb, ms * 1e3,
           n * 16.0 / (ms * 1e6), 100.0 * n * 16.0 / (ms * 1e6) / copy_gbs);
  }

  // Cases: batch kv_len chunks NW stages ctas_per_sm work
  const char *spec = argc > 1 ? argv[1] : "";
  std::vector<std::vector<int>> cases;
  if (*spec) {
    const char *p = spec;
    while (*p) {
      std::vector<int> c(7);
      int n = 0;
      if (sscanf(p, "%d,%d,%d,%d,%d,%d,%d%n", &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &n) != 7) break;
      cases.push_back(c);
      p += n;
      while (*p == ' ' || *p == ';') ++p;
    }
  }
  for (auto &c : cases) {
    int batch = c[0], kv_len = c[1], chunks = c[2], nw = c[3], stages = c[4], cps = c[5], work = c[6];
    int pages_per_req = kv_len / PAGE;
    long long pages = (long long)batch * pages_per_req;
    std::vector<int> idx(pages);
    for (long long i = 0; i < pages; ++i) idx[i] = (int)i;
    std::mt19937 rng(7);
    std::shuffle(idx.begin(), idx.end(), rng);
    CK(cudaMemcpy(d_idx, idx.data(), pages * sizeof(int), cudaMemcpyHostToDevice));
    GatherArgs a{k, v, d_idx, batch, heads, kv_len, chunks, pages_per_req, work, stages,
                 getenv("JITTER") ? atoi(getenv("JITTER")) : 0,
                 getenv("HEAD_SLOW") ? atoi(getenv("HEAD_SLOW")) : 0, sink};
    size_t ring = (size_t)nw * stages * 8192;
    size_t smem = std::max(ring, (size_t)(prop.sharedMemPerMultiprocessor / cps) - 1024 - 64);
    if (smem > prop.sharedMemPerBlockOptin) smem = prop.sharedMemPerBlockOptin;
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gather_kernel, 32 * nw, smem));
    int grid = batch * chunks * heads;
    float ms = time_it([&] { gather_kernel<<<grid, 32 * nw, smem>>>(a); }, 50);
    double bytes = 2.0 * batch * kv_len * heads * D * 2;
    printf("gather b%d L%d chunks %d nw %d S %d occ %d/SM grid %d (%.2f waves) work %d jitter %d head_slow %d: %.1f us %.0f GB/s = %.1f %% of copy\n",
           batch, kv_len, chunks, nw, stages, occ, grid, (double)grid / (occ * sms), work, a.jitter, a.head_slow, ms * 1e3,
           bytes / (ms * 1e6), 100.0 * bytes / (ms * 1e6) / copy_gbs);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
