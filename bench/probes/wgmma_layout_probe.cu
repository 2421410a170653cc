// wgmma_layout_probe.cu -- checks the shared-memory layouts and descriptors of wgmma.cuh on
// the device before the prefill kernel relies on them: one warpgroup computes
// S = Q K^T (ss form, both K-major) and O = P V (rs form, V MN-major) for a 64 x 128 x 128
// problem with the 128-byte-swizzled slab layout, and compares every element with a
// float64 host product. Prints the max relative error of each product; exit 1 on failure.
// Built by bench/CMakeLists.txt (target wgmma_layout_probe) when FI_CUDA_ARCHITECTURES has 90a.
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "wgmma.cuh"

constexpr int M = 64, D = 128, KV = 128;

__device__ int slab_off(int row, int col, int rows) {  // element offset, 2-byte elements
  int chunk = col >> 3;
  return (chunk >> 3) * rows * 64 + row * 64 + ((((chunk & 7) ^ (row & 7)) << 3) | (col & 7));
}

__global__ void probe(const __half *q, const __half *k, const __half *v, float *s_out,
                      float *o_out, int lbo_v, int sbo_v) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __half *qs = (__half *)smem, *ks = qs + M * D, *vs = ks + KV * D;
  for (int i = threadIdx.x; i < M * D; i += 128) qs[slab_off(i / D, i % D, M)] = q[i];
  for (int i = threadIdx.x; i < KV * D; i += 128) {
    ks[slab_off(i / D, i % D, KV)] = k[i];
    vs[slab_off(i / D, i % D, KV)] = v[i];
  }
  fi_wgmma::fence_proxy_async();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  float s[KV / 8][4];
  uint32_t qa = (uint32_t)__cvta_generic_to_shared(qs), ka = (uint32_t)__cvta_generic_to_shared(ks),
           va = (uint32_t)__cvta_generic_to_shared(vs);
  fi_wgmma::fence();
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t da =
        fi_wgmma::desc_at(fi_wgmma::desc_lo(qa, 16), (kk >> 2) * M * 128 + (kk & 3) * 32, 1024);
    const uint64_t db =
        fi_wgmma::desc_at(fi_wgmma::desc_lo(ka, 16), (kk >> 2) * KV * 128 + (kk & 3) * 32, 1024);
    if (kk == 0) fi_wgmma::Wgmma<__half, KV>::ss<0>(s, da, db);
    else fi_wgmma::Wgmma<__half, KV>::ss<1>(s, da, db);
  }
  fi_wgmma::commit();
  fi_wgmma::wait<0>();
  fi_wgmma::fence_regs(s);
  for (int j = 0; j < KV / 8; ++j)
    for (int e = 0; e < 4; ++e)
      s_out[(warp * 16 + g + (e >> 1) * 8) * KV + j * 8 + 2 * t + (e & 1)] = s[j][e];
  // P = S * 0.01 in fp16 as the A fragment; O = P V.
  float o[D / 8][4];
  for (int j = 0; j < D / 8; ++j)
    for (int e = 0; e < 4; ++e) o[j][e] = 0.f;
  fi_wgmma::fence_regs(o);
  fi_wgmma::fence();
  for (int kb = 0; kb < KV / 16; ++kb) {
    uint32_t a[4];
    for (int r = 0; r < 4; ++r) {
      const float *x = s[2 * kb + (r >> 1)] + (r & 1) * 2;
      __half2 h = __floats2half2_rn(x[0] * 0.01f, x[1] * 0.01f);
      a[r] = *(uint32_t *)&h;
    }
    fi_wgmma::Wgmma<__half, D>::rs(
        o, a, fi_wgmma::desc_at(fi_wgmma::desc_lo(va, lbo_v), kb * 16 * 128, sbo_v));
  }
  fi_wgmma::commit();
  fi_wgmma::wait<0>();
  fi_wgmma::fence_regs(o);
  for (int j = 0; j < D / 8; ++j)
    for (int e = 0; e < 4; ++e)
      o_out[(warp * 16 + g + (e >> 1) * 8) * D + j * 8 + 2 * t + (e & 1)] = o[j][e];
}

int main() {
  const int nq = M * D, nk = KV * D;
  __half *hq = (__half *)malloc(nq * 2), *hk = (__half *)malloc(nk * 2), *hv = (__half *)malloc(nk * 2);
  srand(7);
  for (int i = 0; i < nq; ++i) hq[i] = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  for (int i = 0; i < nk; ++i) hk[i] = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  for (int i = 0; i < nk; ++i) hv[i] = __float2half((rand() / (float)RAND_MAX) * 2 - 1);
  __half *dq, *dk, *dv;
  float *ds, *dout;
  cudaMalloc(&dq, nq * 2); cudaMalloc(&dk, nk * 2); cudaMalloc(&dv, nk * 2);
  cudaMalloc(&ds, M * KV * 4); cudaMalloc(&dout, M * D * 4);
  cudaMemcpy(dq, hq, nq * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, hk, nk * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, hv, nk * 2, cudaMemcpyHostToDevice);
  const int smem = (M * D + 2 * KV * D) * 2;
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  float *s = (float *)malloc(M * KV * 4), *o = (float *)malloc(M * D * 4);
  int bad = 0;
  const int cfg[2][2] = {{KV * 128, 1024}, {1024, KV * 128}};  // (LBO, SBO) for V
  for (int c = 0; c < 2; ++c) {
    cudaMemset(ds, 0xff, M * KV * 4);
    cudaMemset(dout, 0xff, M * D * 4);
    probe<<<1, 128, smem>>>(dq, dk, dv, ds, dout, cfg[c][0], cfg[c][1]);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("launch: %s\n", cudaGetErrorString(e)); return 1; }
    cudaMemcpy(s, ds, M * KV * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(o, dout, M * D * 4, cudaMemcpyDeviceToHost);
    double es = 0, eo = 0, ms = 0, mo = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < KV; ++j) {
        double r = 0;
        for (int d = 0; d < D; ++d) r += (double)__half2float(hq[i * D + d]) * __half2float(hk[j * D + d]);
        es = fmax(es, fabs(r - s[i * KV + j]) ); ms = fmax(ms, fabs(r));
        if (!(fabs(r - s[i * KV + j]) < 1e30)) es = INFINITY;
      }
    for (int i = 0; i < M; ++i)
      for (int d = 0; d < D; ++d) {
        double r = 0;
        for (int j = 0; j < KV; ++j)
          r += (double)__half2float(__float2half(s[i * KV + j] * 0.01f)) * __half2float(hv[j * D + d]);
        eo = fmax(eo, fabs(r - o[i * D + d])); mo = fmax(mo, fabs(r));
        if (!(fabs(r - o[i * D + d]) < 1e30)) eo = INFINITY;
      }
    printf("V LBO %d SBO %d: S max err %.3g (of %.3g)  O max err %.3g (of %.3g)\n", cfg[c][0],
           cfg[c][1], es, ms, eo, mo);
    if (c == 0 && (es > 1e-3 * ms || eo > 1e-2 * mo)) bad = 1;
  }
  printf(bad ? "PROBE FAILED (layout of wgmma.cuh)\n" : "probe ok (layout of wgmma.cuh)\n");
  return bad;
}
