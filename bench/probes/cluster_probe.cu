// cluster_probe.cu -- could a split decode merge its chunks inside a thread-block cluster
// (distributed shared memory) instead of a merge kernel after it? Two hardware facts decide:
//   1. how many clusters of 2..16 CTAs are resident at once (cudaOccupancyMaxActiveClusters)
//      at one CTA per SM (200 KB of shared memory) and at two (100 KB, 64 KB);
//   2. how fast G CTAs read 128 MiB (16-byte streaming loads, 8 in flight per thread, 512
//      threads; the two halves of a 256 MiB buffer alternate so L2 holds none of it) when
//      launched plainly or in clusters of C, and with a merge of each CTA's 512-float
//      partial over the cluster's shared memory after the read (CTA r sums its 512 / C
//      elements over the C CTAs, one dependent remote load after another).
// Timed with events around each launch (launch overhead included), medians of 36 runs.
// bench/NOTES.md session 70 has the H100's answer (cluster launches read 20-25 % slower:
// the clusters one CTA per SM needs do not all fit at once). Built by bench/CMakeLists.txt
// (target cluster_probe), or by hand from the repository: nvcc -O3 -std=c++17 -arch=sm_90a
//   -Itest/gpu bench/probes/cluster_probe.cu
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
namespace cg = cooperative_groups;

#include "probe_common.h"  // CK

template <int MODE>  // 0: write partial to global; 1: cluster merge via DSMEM
__global__ void __launch_bounds__(512, 1) reader(const uint4 *src, size_t per_cta_vec, float *out) {
  extern __shared__ float sm[];
  const uint4 *p = src + blockIdx.x * per_cta_vec;
  uint32_t acc = 0;
  for (size_t i = threadIdx.x; i < per_cta_vec; i += blockDim.x * 8) {
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      size_t k = i + (size_t)j * blockDim.x;
      v[j] = k < per_cta_vec ? __ldcs(p + k) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) acc ^= v[j].x + v[j].y * 3 + v[j].z * 5 + v[j].w * 7;
  }
  sm[threadIdx.x] = (float)(acc & 0xffff);
  if constexpr (MODE == 0) {
    out[blockIdx.x * 512 + threadIdx.x] = sm[threadIdx.x];
  } else {
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    const int C = cl.num_blocks(), r = cl.block_rank();
    const int per = 512 / C;
    if (threadIdx.x < per) {
      const int e = r * per + threadIdx.x;
      float s = 0.f;
      for (int q = 0; q < C; ++q) s += cl.map_shared_rank(sm, q)[e];
      out[(blockIdx.x / C) * 512 + e] = s;
    }
    cl.sync();
  }
}

int main() {
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, 0));
  printf("GPU %s, %d SMs, smem/SM %zu\n", pr.name, pr.multiProcessorCount, pr.sharedMemPerMultiprocessor);
  CK(cudaFuncSetAttribute(reader<1>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(reader<0>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (int smem_kb : {200, 100, 64}) {
    CK(cudaFuncSetAttribute(reader<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_kb * 1024));
    printf("smem %d KB:", smem_kb);
    for (int c : {1, 2, 4, 8, 16}) {
      cudaLaunchConfig_t cfg = {};
      cudaLaunchAttribute at[1];
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = c; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
      cfg.gridDim = dim3(c * 64); cfg.blockDim = dim3(512); cfg.dynamicSmemBytes = smem_kb * 1024;
      cfg.attrs = at; cfg.numAttrs = 1;
      int n = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&n, (void *)reader<1>, &cfg);
      printf("  c%d: %d clusters (%d CTAs)%s", c, n, n * c, e ? cudaGetErrorString(e) : "");
    }
    printf("\n");
  }
  const size_t bytes = 128ull << 20;
  uint4 *src; float *out;
  CK(cudaMalloc(&src, bytes * 2));
  CK(cudaMalloc(&out, 1 << 22));
  CK(cudaMemset(src, 1, bytes * 2));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  CK(cudaFuncSetAttribute(reader<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  struct Row { int G, C, smem_kb, merge; };
  std::vector<Row> rows = {{128, 0, 200, 0}, {132, 0, 200, 0}, {264, 0, 100, 0}, {396, 0, 64, 0},
                           {128, 16, 200, 0}, {128, 16, 200, 1}, {128, 8, 200, 0}, {128, 8, 200, 1},
                           {128, 16, 100, 1}, {64, 8, 200, 1}, {128, 4, 200, 1},
                           {256, 16, 100, 1}, {256, 8, 100, 1}, {264, 0, 100, 0}};
  for (int round = 0; round < 2; ++round)
  for (auto &rw : rows) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = rw.C > 0 ? rw.C : 1; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(rw.G); cfg.blockDim = dim3(512); cfg.dynamicSmemBytes = rw.smem_kb * 1024;
    cfg.attrs = at; cfg.numAttrs = rw.C > 0 ? 1 : 0;
    CK(cudaFuncSetAttribute(reader<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, rw.smem_kb * 1024));
    CK(cudaFuncSetAttribute(reader<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, rw.smem_kb * 1024));
    const size_t per = bytes / 16 / rw.G;
    std::vector<float> ts;
    for (int it = 0; it < 40; ++it) {
      const uint4 *s = src + (it & 1) * (bytes / 16);  // alternate halves: no L2 reuse
      CK(cudaEventRecord(a));
      if (rw.merge) CK(cudaLaunchKernelEx(&cfg, reader<1>, s, per, out));
      else CK(cudaLaunchKernelEx(&cfg, reader<0>, s, per, out));
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b));
      if (it >= 4) ts.push_back(ms * 1000.f);
    }
    std::sort(ts.begin(), ts.end());
    const float med = ts[ts.size() / 2];
    printf("G %4d cluster %2d merge %d smem %3d KB: median %.1f us (min %.1f), %.0f GB/s\n", rw.G, rw.C, rw.merge,
           rw.smem_kb, med, ts[0], bytes / (med * 1e3));
  }
  return 0;
}
