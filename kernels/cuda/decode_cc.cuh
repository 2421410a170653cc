// kernels/cuda/decode_cc.cuh -- the CUDA-core decode kernel (small GQA groups).
//
// Work split: as every decode kernel (decode_common.cuh). Thread (x, y, z) = (8 dims of
// head_dim, head, token slice); q.k partial dots are reduced over the D/8 lanes of x with
// xor shuffles; each (y, z) keeps an online-softmax state (m, d, o[8]) in registers; the z
// slices merge through shared memory at the end. One __syncthreads per tile of the gather
// pipeline.
// Memory traffic per unit: q (hg x D, 16-bit) once, K and V of the chunk once (the bytes of
// one KV head), o (hg x D) once or an fp32 partial row; page ids once per tile.
#ifndef FI_CUDA_DECODE_CC_CUH
#define FI_CUDA_DECODE_CC_CUH

#include "decode_common.cuh"

namespace fi {

// 128 threads: x = tid % (D/8) (8 dims), y = head within the CTA's hg heads, z = token
// slice. Tile tokens [z*tpz, (z+1)*tpz) belong to slice z.
template <typename T, typename KVT, int D>
__global__ void __launch_bounds__(128) decode_cc_kernel(const DecodeParams p) {
  extern __shared__ __align__(16) uint8_t smem[];
  pdl_enter();
  constexpr int BDX = D / 8;
  const int hg = p.heads_per_cta;
  const int bdz = 128 / (BDX * hg);
  const int tid = threadIdx.x;
  const int x = tid % BDX, y = (tid / BDX) % hg, z = tid / (BDX * hg);
  const BlockCoords bc = block_coords(p);
  const CtaHeads ch = cta_heads(p, bc);
  const int head = ch.head0 + y;
  const int T_ = p.kv_tile;
  const int tpz = (T_ + bdz - 1) / bdz;
  const bool rope = p.pos_encoding == FI_POS_ROPE_LLAMA;
  const float slope = p.pos_encoding == FI_POS_ALIBI ? alibi_slope(head, p.num_qo_heads) : 0.f;

  Pipe pp = pipe_init<KVT, D>(p, smem, D * (int)sizeof(KVT), ch.kv_head);
  pp.slots = (TokenOffsets *)(smem + 2 * p.stages * pp.tile_bytes);

  const int n_units = unit_count(p);
  for (int w = bc.unit0; w < n_units; w += bc.unit_stride) {
    const fi_work_unit u = p.work[w];
    if (u.request < 0) continue;
    const UnitSpan us = unit_span(p, u);
    const int q_pos = us.q_pos, lo = us.lo, hi = us.hi;
    pipe_begin_unit(pp, us);

    float q8[8], o8[8], kfreq[8];
    load_q8<T, D>(p, u.request, head, 8 * x, q_pos, p.scale, q8);
    if (rope) rope_freq8<D>(p, 8 * x, kfreq);
#pragma unroll
    for (int e = 0; e < 8; ++e) o8[e] = 0.f;
    float m = -INFINITY, d = 0.f;

    TokenOffsets pref = pipe_start<KVT, D>(p, pp);
    for (int it = 0; it < pp.num_tiles; ++it) {
      pipe_step<KVT, D>(p, pp, it, pref);
      const uint8_t *kb = pipe_k(pp, it);
      const uint8_t *vb = pipe_v(pp, it);
      const int tile_pos = lo + it * T_;
      for (int i0 = 0; i0 < tpz; i0 += 4) {
        float s[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          int t = z * tpz + i0 + j;
          int tt = (i0 + j < tpz && t < T_) ? t : 0;
          float k8[8];
          load_k8<KVT, D>(kb + tt * pp.row_bytes, 8 * x, rope, tile_pos + tt, kfreq, k8);
          float acc = 0.f;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc = fmaf(q8[e], k8[e], acc);
          s[j] = acc;
        }
#pragma unroll
        for (int off = BDX / 2; off > 0; off >>= 1)
#pragma unroll
          for (int j = 0; j < 4; ++j) s[j] += __shfl_xor_sync(0xffffffffu, s[j], off);
        float mx = m;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          int t = z * tpz + i0 + j;
          int pos = tile_pos + t;
          bool valid = i0 + j < tpz && t < T_ && pos < hi;
          s[j] = valid ? logits_transform(p, s[j], pos, q_pos, slope) * kLog2e : -INFINITY;
          mx = fmaxf(mx, s[j]);
        }
        float base = mx == -INFINITY ? 0.f : mx;
        float sc = exp2f(m - base);
        d *= sc;
#pragma unroll
        for (int e = 0; e < 8; ++e) o8[e] *= sc;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          int t = z * tpz + i0 + j;
          int tt = (i0 + j < tpz && t < T_) ? t : 0;
          float pr = exp2f(s[j] - base);
          d += pr;
          float v8[8];
          vec8<KVT>::load(vb + tt * pp.row_bytes + x * 8 * (int)sizeof(KVT), v8);
#pragma unroll
          for (int e = 0; e < 8; ++e) o8[e] = fmaf(pr, v8[e], o8[e]);
        }
        m = mx;
      }
    }
    cp_async_wait<0>();
    __syncthreads();

    // Merge the bdz token slices: [bdz][hg][D] partial o, then [bdz][hg] (m, d).
    float *red_o = (float *)smem;
    float2 *red_md = (float2 *)(red_o + bdz * hg * D);
    vec8<float>::store(red_o + (z * hg + y) * D + 8 * x, o8);
    if (x == 0) red_md[z * hg + y] = make_float2(m, d);
    __syncthreads();
    if (z == 0) merge_states8<T, D>(p, u, head, 8 * x, red_o, red_md, bdz, hg, y);
    __syncthreads();
  }
}

}  // namespace fi

#endif  // FI_CUDA_DECODE_CC_CUH
