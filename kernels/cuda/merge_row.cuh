// kernels/cuda/merge_row.cuh -- the merge of one query row's chunk list (split-KV partial
// states, fp32 o rows and natural-log lse) for one head, in two forms that give the same
// bits for the same chunk list:
//   - merge_chunk_list, by a block of 128 threads: thread (lane, dg) takes dims
//     [8 dg, 8 dg + 8) of chunks lane, lane + L, ... (L = 128 / (D/8) chunk lanes) with an
//     online state; the L states then combine in shared memory in lane order;
//   - merge_chunk_list_warp, by one warp: each thread takes D / 32 dims of every chunk and
//     runs the L chunk lanes' states itself (registers), then the same combine. No shared
//     memory and no block barrier: for lists of a few chunks over many (row, head) pairs
//     (a prefill's split), where the block form's barriers and CTAs per pair cost more than
//     its loads (merge.cu; bench/NOTES.md, sessions 46 and 47).
// Both round through merge_lane_add and merge_lanes_combine (explicit fmaf), so a plan's
// merge may take either; the split-KV merge of a plan (merge.cu) and the rank-order merge of
// a KV-sharded run (shard.cu) call them, so the same chunk list always gives the same bits.
// A chunk list (Loc) gives `float lse(int c)` and `load<NV>(c, d0, x)` (dims [d0, d0 + NV)
// of chunk c's normalised o row as fp32); WithOther appends another state of the same row
// (a cascade's other half, in o's dtype) as its last chunk.
#pragma once

#include "common.cuh"

namespace fi {

// NV consecutive fp32 values (8: two 16-byte loads, 4: one, 2: one 8-byte load).
template <int NV>
__device__ __forceinline__ void load_f32(const float *src, float (&x)[NV]) {
  static_assert(NV == 2 || NV == 4 || NV == 8, "2, 4 or 8 values");
  if constexpr (NV == 2) {
    const float2 f = *reinterpret_cast<const float2 *>(src);
    x[0] = f.x, x[1] = f.y;
  } else {
#pragma unroll
    for (int v = 0; v < NV; v += 4) {
      const float4 f = *reinterpret_cast<const float4 *>(src + v);
      x[v] = f.x, x[v + 1] = f.y, x[v + 2] = f.z, x[v + 3] = f.w;
    }
  }
}

// NV consecutive values of T (f16, bf16 or f32) as fp32, one vector load (NV * sizeof(T)
// bytes, aligned to that).
template <typename T, int NV>
__device__ __forceinline__ void load_as_f32(const T *src, float (&x)[NV]) {
  if constexpr (sizeof(T) == 4) {
    load_f32<NV>(reinterpret_cast<const float *>(src), x);
  } else if constexpr (NV == 8) {
    vec8<T>::load(src, x);
  } else {
    static_assert(NV == 2 || NV == 4, "2, 4 or 8 values");
    uint32_t u[NV / 2];
    if constexpr (NV == 2) {
      u[0] = *reinterpret_cast<const uint32_t *>(src);
    } else {
      const uint2 w = *reinterpret_cast<const uint2 *>(src);
      u[0] = w.x, u[1] = w.y;
    }
#pragma unroll
    for (int v = 0; v < NV / 2; ++v) {
      const float2 f = unpack2<T>(u[v]);
      x[2 * v] = f.x, x[2 * v + 1] = f.y;
    }
  }
}

// A chunk list with one more state of the same (row, head) after its n chunks: chunk n is
// `other_row` (normalised, T) with natural-log lse `*other_lse`.
template <typename T, typename Base> struct WithOther {
  Base base;
  int n;
  const T *other_row;
  const float *other_lse;
  __device__ __forceinline__ float lse(int c) const { return c < n ? base.lse(c) : *other_lse; }
  template <int NV>
  __device__ __forceinline__ void load(int c, int d0, float (&x)[NV]) const {
    if (c < n) base.template load<NV>(c, d0, x);
    else load_as_f32<T, NV>(other_row + d0, x);
  }
};

// One chunk lane's online state (m, d, acc) taking the chunk (l, x): a chunk with no keys
// (l = -inf) leaves it as it is.
template <int NV>
__device__ __forceinline__ void merge_lane_add(float &m, float &d, float (&acc)[NV], float l,
                                               const float (&x)[NV]) {
  if (l == -INFINITY) return;
  const float mn = fmaxf(m, l);
  const float a = m == -INFINITY ? 0.f : __expf(m - mn), b = __expf(l - mn);
  d = fmaf(d, a, b);
#pragma unroll
  for (int e = 0; e < NV; ++e) acc[e] = fmaf(b, x[e], acc[e] * a);
  m = mn;
}

// The chunk lanes' states combined in lane order (State k: m(k), d(k), acc(k, e)) into the
// normalised row `out` and its lse.
template <int NV, typename States>
__device__ __forceinline__ void merge_lanes_combine(int lanes, const States &st, float (&out)[NV],
                                                    float &lse) {
  float M = -INFINITY;
#pragma unroll
  for (int k = 0; k < lanes; ++k) M = fmaxf(M, st.m(k));
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < NV; ++e) out[e] = 0.f;
  if (M != -INFINITY) {
#pragma unroll
    for (int k = 0; k < lanes; ++k) {
      const float mk = st.m(k);
      const float wgt = mk == -INFINITY ? 0.f : __expf(mk - M);
      sum = fmaf(st.d(k), wgt, sum);
#pragma unroll
      for (int e = 0; e < NV; ++e) out[e] = fmaf(wgt, st.acc(k, e), out[e]);
    }
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
  for (int e = 0; e < NV; ++e) out[e] *= inv;
  lse = sum > 0.f ? M + __logf(sum) : -INFINITY;
}

// Loc: a chunk list (above). BATCH: the chunks a thread loads before it combines them (8 hides the
// most latency in one block; fewer registers let more blocks share an SM). The sum runs
// over the same chunk sequence per lane whatever BATCH is: the same bits. The lanes' combine
// takes its lane count as a constant where it is 4, 8 or 16 (128 threads at head_dim 256,
// 128, 64), so that its shared-memory loads and exponentials issue together rather than one
// lane after another: the same operations in the same order, so the same bits, and the
// split decode 0.1-0.4 % faster ((1, 32768, 32, 8), H100; bench/NOTES.md session 70).
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
      if (c < num_chunks) loc.template load<8>(c, d0, x[j]);
      else {
#pragma unroll
        for (int e = 0; e < 8; ++e) x[j][e] = 0.f;
      }
    }
#pragma unroll
    for (int j = 0; j < BATCH; ++j) merge_lane_add<8>(m, d, acc, l[j], x[j]);
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) red_o[threadIdx.x * 8 + e] = acc[e];
  red_md[threadIdx.x] = make_float2(m, d);
  __syncthreads();
  if (lane == 0) {
    struct {  // the chunk lanes' states in shared memory
      const float *o;
      const float2 *md;
      int dg, groups;
      __device__ float m(int k) const { return md[k * groups + dg].x; }
      __device__ float d(int k) const { return md[k * groups + dg].y; }
      __device__ float acc(int k, int e) const { return o[(k * groups + dg) * 8 + e]; }
    } st = {red_o, red_md, dg, groups};
    float out[8], l_out;
    if (lanes == 8)
      merge_lanes_combine<8>(8, st, out, l_out);
    else if (lanes == 16)
      merge_lanes_combine<8>(16, st, out, l_out);
    else if (lanes == 4)
      merge_lanes_combine<8>(4, st, out, l_out);
    else
      merge_lanes_combine<8>(lanes, st, out, l_out);
    vec8<T>::store(o_row + d0, out);
    if (lse_out && d0 == 0) *lse_out = l_out;
  }
  __syncthreads();
}

// The same merge by one warp (lane 0 .. 31): this thread's dims [NV lane, NV lane + NV) of
// every chunk, NV = D / 32, the L = 1024 / D chunk lanes of merge_chunk_list as register
// sets. The first round (chunks 0 .. L - 1) is loaded whole; later rounds (plans of up to
// FI_MERGE_FEW_CHUNKS chunks run this form) half a round at a time. So the registers live at
// once are the states and half a round of loads: under merge.cu's launch bounds (five blocks
// per SM, 96 registers at head_dim 128 and 256) the warp kernel spills nothing where loading
// every round whole spilled 196 bytes. The same operations per lane in the same chunk order:
// the same bits.
template <typename T, int D, typename Loc>
__device__ __forceinline__ void merge_chunk_list_warp(const Loc &loc, int num_chunks, int lane,
                                                      T *o_row, float *lse_out) {
  constexpr int L = 1024 / D, NV = D / 32, HALF = L / 2;
  static_assert(NV == 2 || NV == 4 || NV == 8, "head_dim 64, 128 or 256");
  struct States {
    float m_[L], d_[L], acc_[L][NV];
    __device__ float m(int k) const { return m_[k]; }
    __device__ float d(int k) const { return d_[k]; }
    __device__ float acc(int k, int e) const { return acc_[k][e]; }
  } st;
  // chunk c's lse and dims into (l, x); past the list: no keys
  auto take = [&](int c, float &l, float (&x)[NV]) {
    l = c < num_chunks ? loc.lse(c) : -INFINITY;
    if (c < num_chunks) {
      loc.template load<NV>(c, lane * NV, x);
    } else {
#pragma unroll
      for (int e = 0; e < NV; ++e) x[e] = 0.f;
    }
  };
  // The first round: every load issued before any is used, each then taken by its lane's
  // fresh state (constants the compiler folds, so a load's registers become the state's).
  float l0[L], x0[L][NV];
#pragma unroll
  for (int k = 0; k < L; ++k) take(k, l0[k], x0[k]);
#pragma unroll
  for (int k = 0; k < L; ++k) {
    st.m_[k] = -INFINITY, st.d_[k] = 0.f;
#pragma unroll
    for (int e = 0; e < NV; ++e) st.acc_[k][e] = 0.f;
    merge_lane_add<NV>(st.m_[k], st.d_[k], st.acc_[k], l0[k], x0[k]);
  }
  for (int c0 = L; c0 < num_chunks; c0 += L) {
#pragma unroll
    for (int h = 0; h < L; h += HALF) {
      float l[HALF], x[HALF][NV];
#pragma unroll
      for (int j = 0; j < HALF; ++j) take(c0 + h + j, l[j], x[j]);
#pragma unroll
      for (int j = 0; j < HALF; ++j)
        merge_lane_add<NV>(st.m_[h + j], st.d_[h + j], st.acc_[h + j], l[j], x[j]);
    }
  }
  float out[NV], l_out;
  merge_lanes_combine<NV>(L, st, out, l_out);
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int v = 0; v < NV; v += 2)
      *reinterpret_cast<float2 *>(o_row + lane * NV + v) = make_float2(out[v], out[v + 1]);
  } else {
    uint32_t packed[NV / 2];
#pragma unroll
    for (int v = 0; v < NV; v += 2) packed[v / 2] = pack2<T>(out[v], out[v + 1]);
    if constexpr (NV == 2)
      *reinterpret_cast<uint32_t *>(o_row + lane * NV) = packed[0];
    else if constexpr (NV == 4)
      *reinterpret_cast<uint2 *>(o_row + lane * NV) = make_uint2(packed[0], packed[1]);
    else
      *reinterpret_cast<uint4 *>(o_row + lane * NV) =
          make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
  if (lse_out && lane == 0) *lse_out = l_out;
}

}  // namespace fi
