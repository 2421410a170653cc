// kernels/cuda/decode_tc.cuh -- the tensor-core decode kernel with a block-wide gather
// pipeline (group >= 4; the path of fp8 KV and of RoPE on GPUs without the warp-specialised
// kernel).
//
// Work split: as every decode kernel (decode_common.cuh). The CTA's heads are the 16 rows
// of mma.sync m16n8k16 (zero rows past hg); each warp takes 16-token sub-tiles: S = Q K^T
// from ldmatrix'd K, online softmax on the accumulator fragments, P (16-bit) times V through
// ldmatrix.trans; the warps merge in shared memory at the end. One __syncthreads per tile
// (two when a transform pass converts fp8 or applies RoPE to K).
// Memory traffic per unit: q once, K and V of the chunk once, o or a partial row once; page
// ids once per tile.
#ifndef FI_CUDA_DECODE_TC_CUH
#define FI_CUDA_DECODE_TC_CUH

#include "decode_common.cuh"

namespace fi {

// blockDim.x = 32 * NW (NW = min(4, kv_tile / 16)). Rows of the mma = the CTA's hg <= 16
// heads (zero rows after). Warp w takes the 16-token sub-tiles w, w + NW, ... of a tile.
template <typename T, typename KVT, int D>
__global__ void __launch_bounds__(128) decode_tc_kernel(const DecodeParams p) {
  extern __shared__ __align__(16) uint8_t smem[];
  pdl_enter();
  constexpr bool Q_IN_REGS = D <= 128;
  constexpr int RC = 2 * D + 16;  // padded 16-bit row: ldmatrix rows hit distinct banks
  const int NW = blockDim.x / 32;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4;
  const BlockCoords bc = block_coords(p);
  const CtaHeads ch = cta_heads(p, bc);
  const int head0 = ch.head0;
  const int T_ = p.kv_tile;
  const bool rope = p.pos_encoding == FI_POS_ROPE_LLAMA;
  const bool transform = sizeof(KVT) == 1 || rope;
  // bf16 keeps 8 mantissa bits: RoPE'd q and k rounded to bf16 would move logits by ~1e-3.
  // Then each is split into hi + lo bf16 parts and q.k = qh.kh + qh.kl + ql.kh (3 mmas).
  const bool split = rope && is_bf16<T>::value;
  float slope0, slope1;
  cta_head_slopes(p, head0, g, g + 8, &slope0, &slope1);

  Pipe pp = pipe_init<KVT, D>(p, smem, transform ? D * (int)sizeof(KVT) : RC, ch.kv_head);
  int raw_bytes = 2 * p.stages * pp.tile_bytes;
  int epi_bytes = decode_merge_bytes(D, NW);
  uint8_t *after = smem + (raw_bytes > epi_bytes ? raw_bytes : epi_bytes);
  pp.slots = (TokenOffsets *)after;
  uint8_t *qs = after + pp.nslot * T_ * (int)sizeof(TokenOffsets);
  uint8_t *kc = qs + 16 * RC;
  uint8_t *vc = kc + T_ * RC;
  uint8_t *qs_lo = vc + T_ * RC;     // split only
  uint8_t *kc_lo = qs_lo + 16 * RC;  // split only

  // RoPE of K in the transform pass: this thread's frequencies and the rotation by one
  // stride of tokens.
  float kfreq[8], step_c[8], step_s[8];
  if (rope) {
    rope_freq8<D>(p, (tid % (D / 8)) * 8, kfreq);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      sincos_reduced((float)(blockDim.x / (D / 8)) * kfreq[e], &step_s[e], &step_c[e]);
  }

  const int n_units = unit_count(p);
  for (int w = bc.unit0; w < n_units; w += bc.unit_stride) {
    const fi_work_unit u = p.work[w];
    if (u.request < 0) continue;
    const UnitSpan us = unit_span(p, u);
    const int q_pos = us.q_pos, lo = us.lo, hi = us.hi;
    pipe_begin_unit(pp, us);

    stage_q_tile<T, D, RC>(p, u.request, head0, q_pos, qs, qs_lo, split);
    TokenOffsets pref = pipe_start<KVT, D>(p, pp);  // its barrier also publishes the Q tile

    uint32_t qf[Q_IN_REGS ? D / 16 : 1][4];
    if (Q_IN_REGS) {
#pragma unroll
      for (int kk = 0; kk < (Q_IN_REGS ? D / 16 : 1); ++kk) ldsm_q<RC>(qf[kk], qs, kk, lane);
    }

    TcState<D> st;
    tc_state_init(st);

    for (int it = 0; it < pp.num_tiles; ++it) {
      pipe_step<KVT, D>(p, pp, it, pref);
      const int tile_pos = lo + it * T_;
      const uint8_t *kb, *vb;
      if (transform) {
        const uint8_t *kr = pipe_k(pp, it);
        const uint8_t *vr = pipe_v(pp, it);
        // A thread keeps its 8 dims (blockDim is a multiple of D / 8) and visits tokens
        // tid / (D/8) + k * stride: RoPE's angles start exact at the first and advance by
        // the rotation of `stride` tokens (cos/sin of stride * freq), a few FMAs per element
        // instead of a range-reduced sincos each.
        const int d0 = (tid % (D / 8)) * 8;
        float rc[8], rs[8];
        if (rope)
#pragma unroll
          for (int e = 0; e < 8; ++e)
            sincos_reduced((float)(tile_pos + tid / (D / 8)) * kfreq[e], &rs[e], &rc[e]);
        for (int item = tid; item < T_ * (D / 8); item += blockDim.x) {
          int tok = item / (D / 8);
          float a[8];
          vec8<KVT>::load(kr + tok * pp.row_bytes + d0 * (int)sizeof(KVT), a);
          if (rope) {
            float partner[8];
            vec8<KVT>::load(kr + tok * pp.row_bytes + ((d0 + D / 2) % D) * (int)sizeof(KVT),
                            partner);
            rotate8<D>(a, partner, d0, rc, rs);
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              const float c = rc[e] * step_c[e] - rs[e] * step_s[e];
              rs[e] = rs[e] * step_c[e] + rc[e] * step_s[e];
              rc[e] = c;
            }
          }
          vec8<T>::store(kc + tok * RC + d0 * 2, a);
          if (split) store_lo8<T>(kc_lo + tok * RC + d0 * 2, a);
          vec8<KVT>::load(vr + tok * pp.row_bytes + d0 * (int)sizeof(KVT), a);
          vec8<T>::store(vc + tok * RC + d0 * 2, a);
        }
        __syncthreads();
        kb = kc;
        vb = vc;
      } else {
        kb = pipe_k(pp, it);
        vb = pipe_v(pp, it);
      }

      for (int sub = warp; sub < T_ / 16; sub += NW) {
        const int tok0 = sub * 16;
        if (tile_pos + tok0 >= hi) break;
        float s[2][4];
#pragma unroll
        for (int n = 0; n < 2; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          uint32_t b[4];
          ldsm_k<RC>(b, kb, tok0, kk, lane);
          uint32_t qa[4];
          if (Q_IN_REGS) {
            qa[0] = qf[Q_IN_REGS ? kk : 0][0];
            qa[1] = qf[Q_IN_REGS ? kk : 0][1];
            qa[2] = qf[Q_IN_REGS ? kk : 0][2];
            qa[3] = qf[Q_IN_REGS ? kk : 0][3];
          } else {
            ldsm_q<RC>(qa, qs, kk, lane);
          }
          mma_n16<T>(s[0], s[1], qa, b);
          if (split) {
            uint32_t bl[4], ql[4];
            ldsm_k<RC>(bl, kc_lo, tok0, kk, lane);
            ldsm_q<RC>(ql, qs_lo, kk, lane);
            mma_n16<T>(s[0], s[1], qa, bl);
            mma_n16<T>(s[0], s[1], ql, b);
          }
        }
        tc_softmax_pv<T, D, RC>(p, st, s, tile_pos + tok0, hi, q_pos, slope0, slope1, vb, tok0,
                                lane);
      }
    }
    cp_async_wait<0>();
    __syncthreads();
    tc_merge_warps<T, D>(p, u, smem, st, head0);
  }
}

}  // namespace fi

#endif  // FI_CUDA_DECODE_TC_CUH
