// kernels/cuda/merge_row.cuh -- the merge of one query row's chunk list (split-KV partial
// states, fp32 o rows and natural-log lse) for one head, by a block of 128 threads: thread
// (lane, dg) takes dims [8 dg, 8 dg + 8) of chunks lane, lane + L, ... (L = 128 / (D/8)
// chunk lanes) with an online state; the L states then combine in shared memory in lane
// order. The split-KV merge of a plan (merge.cu) and the rank-order merge of a KV-sharded
// run (shard.cu) both call it, so the same chunk list always gives the same bits.
#pragma once

#include "common.cuh"

namespace fi {

// Loc: `const float *row(int c)` (the fp32 o row of chunk c for this head, dims from 0) and
// `float lse(int c)`. BATCH: the chunks a thread loads before it combines them (8 hides the
// most latency in one block; fewer registers let more blocks share an SM). The sum runs
// over the same chunk sequence per lane whatever BATCH is: the same bits.
template <typename T, int BATCH = 8, typename Loc>
__device__ __forceinline__ void merge_chunk_list(const Loc &loc, int num_chunks, int head_dim,
                                                 float *red_o, float2 *red_md, T *o_row,
                                                 float *lse_out) {
  const int groups = head_dim / 8;
  const int lanes = blockDim.x / groups;
  const int dg = threadIdx.x % groups, lane = threadIdx.x / groups;
  const int d0 = dg * 8;
  float m = -INFINITY, d = 0.f, acc[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] = 0.f;
  for (int c0 = lane; c0 < num_chunks; c0 += BATCH * lanes) {
    // up to BATCH chunks per step (the same chunk sequence per lane as one at a time),
    // their loads issued before use
    float l[BATCH], x[BATCH][8];
#pragma unroll
    for (int j = 0; j < BATCH; ++j) {
      int c = c0 + j * lanes;
      l[j] = c < num_chunks ? loc.lse(c) : -INFINITY;
      if (c < num_chunks) vec8<float>::load(loc.row(c) + d0, x[j]);
      else {
#pragma unroll
        for (int e = 0; e < 8; ++e) x[j][e] = 0.f;
      }
    }
#pragma unroll
    for (int j = 0; j < BATCH; ++j) {
      if (l[j] == -INFINITY) continue;
      float mn = fmaxf(m, l[j]);
      float a = m == -INFINITY ? 0.f : __expf(m - mn), b = __expf(l[j] - mn);
      d = d * a + b;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = acc[e] * a + b * x[j][e];
      m = mn;
    }
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) red_o[threadIdx.x * 8 + e] = acc[e];
  red_md[threadIdx.x] = make_float2(m, d);
  __syncthreads();
  if (lane == 0) {
    float M = -INFINITY;
    for (int k = 0; k < lanes; ++k) M = fmaxf(M, red_md[k * groups + dg].x);
    float sum = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.f;
    if (M != -INFINITY) {
      for (int k = 0; k < lanes; ++k) {
        float2 md = red_md[k * groups + dg];
        float wgt = md.x == -INFINITY ? 0.f : __expf(md.x - M);
        sum += md.y * wgt;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = fmaf(wgt, red_o[(k * groups + dg) * 8 + e], acc[e]);
      }
    }
    float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] *= inv;
    vec8<T>::store(o_row + d0, acc);
    if (lse_out && d0 == 0) *lse_out = sum > 0.f ? M + __logf(sum) : -INFINITY;
  }
  __syncthreads();
}

}  // namespace fi
