// kernels/cuda/decode_heads_n.cuh -- the heads-on-N tensor-core math shared by the per-warp
// (decode_tcw.cuh) and the warp-specialised (decode_tws.cuh) decode kernels: S^T = K Q^T
// and O^T = V^T P^T with the 16 tokens of a sub-tile as the mma rows and the CTA's (up to 8)
// heads as its columns, RoPE of K in registers, and the warps' final merge.
#ifndef FI_CUDA_DECODE_HEADS_N_CUH
#define FI_CUDA_DECODE_HEADS_N_CUH

#include <type_traits>

#include "decode_common.cuh"
#include "variant_hooks.cuh"

namespace fi {

// S^T = K Q^T and O^T = V^T P^T: the 16 tokens of a sub-tile are the mma rows and the CTA's
// (up to 8) heads its 8 columns, so no mma row is padding (with the heads as rows, hg <= 8
// leaves rows 8..15 empty). Per 16-token sub-tile and warp at D = 128: 8 + 8 mma instead of
// 16 + 16, a 32-float o accumulator instead of 64, 4 logits per lane instead of 8. P^T, the
// B operand of the second product, comes from the S^T accumulators by an 8 x 8 transpose in
// registers (movmatrix): accumulator (token g, heads 2 t4, 2 t4 + 1) -> fragment (tokens
// 2 t4, 2 t4 + 1, head g). The online-softmax state is per column (head): lanes with the
// same t4 share it, and the max over tokens reduces over g (xor 4, 8, 16).

__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
// The B fragments (Q^T) of every k-slice from the Q rows 0..7 of qs: one ldmatrix per two
// slices (matrices 0, 1 for slice 2 kk2, 2, 3 for slice 2 kk2 + 1).
template <int RC, int D>
__device__ __forceinline__ void ldsm_qt(uint32_t (&qb)[D / 16][2], const uint8_t *qs, int lane) {
#pragma unroll
  for (int kk2 = 0; kk2 < D / 32; ++kk2) {
    uint32_t r[4];
    ldmatrix_x4(r, qs + (lane % 8) * RC + (32 * kk2 + 8 * (lane / 8)) * 2);
    qb[2 * kk2][0] = r[0];
    qb[2 * kk2][1] = r[1];
    qb[2 * kk2 + 1][0] = r[2];
    qb[2 * kk2 + 1][1] = r[3];
  }
}
// fp8 K and V (KV8, decode_tws_kernel at head_dim 128): the tiles hold one byte per element
// (a row of 128 dims is one 128-byte swizzled row) and the consumers widen them to f16 in
// registers after the same ldmatrix loads as for 16 bits, with the mma's k and m indices
// permuted so that no byte moves between lanes:
// - S^T = K Q^T: a lane's 4 bytes of K row r in 16-dim chunk s (non-transposed ldmatrix:
//   dims 16 s + 4 t4 .. + 3) are k 2 t4, 2 t4 + 1, 2 t4 + 8, 2 t4 + 9 of k-slice s, so the
//   Q^T fragment of the slice is Q's dims 16 s + 4 t4 .. + 3 (ldq_kv8);
// - O^T = V^T P^T: a transposed ldmatrix gives a lane tokens 2 t4, 2 t4 + 1 of dims 2 g,
//   2 g + 1 of a chunk, so m-rows g and g + 8 of m-block n are dims 16 n + 2 g and
//   16 n + 2 g + 1 (tcn_merge_warps stores them there).
// The bytes are widened by fp8x2_to_h2 (common.cuh).
// The Q tile of the fp8 instance: rows 0 .. hg - 1 (heads) in f16 whatever q's type, so
// that the mma runs in f16 with the widened K and V. A bf16 q is scaled by a power of two
// when its largest magnitude in the tile would come near f16's range (the CTA's consumer
// threads reduce it through rows 8 .. 15 of the tile, which this instance does not read,
// behind named barrier 1); returns the factor the logits are multiplied by to undo it.
template <typename T, int D, int RC>
__device__ __forceinline__ float stage_q_tile_kv8(const DecodeParams &p, int request, int head0,
                                                  int q_pos, uint8_t *qs, int thread,
                                                  int nthreads) {
  const int hg = p.heads_per_cta;
  float scale = 1.f, unscale = 1.f;
  if constexpr (is_bf16<T>::value) {
    float mx = 0.f;
    for (int item = thread; item < hg * (D / 8); item += nthreads) {
      float q8[8];
      load_q8<T, D>(p, request, head0 + item / (D / 8), (item % (D / 8)) * 8, q_pos, 1.f, q8);
#pragma unroll
      for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(q8[e]));
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float *red = reinterpret_cast<float *>(qs + 8 * RC);
    if (thread % 32 == 0) red[thread / 32] = mx;
    asm volatile("bar.sync 1, %0;\n" ::"r"(nthreads) : "memory");
    for (int w = 0; w < nthreads / 32; ++w) mx = fmaxf(mx, red[w]);
    if (mx > 16384.f) {  // (f16's largest finite value is 65504)
      int e;
      frexpf(mx / 16384.f, &e);
      scale = ldexpf(1.f, -e);
      unscale = ldexpf(1.f, e);
    }
    asm volatile("bar.sync 1, %0;\n" ::"r"(nthreads) : "memory");  // red read before reuse
  }
  for (int item = thread; item < 8 * (D / 8); item += nthreads) {
    const int r = item / (D / 8), d0 = (item % (D / 8)) * 8;
    float q8[8];
    if (r < hg) {
      load_q8<T, D>(p, request, head0 + r, d0, q_pos, scale, q8);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q8[e] = 0.f;
    }
    vec8<f16>::store(qs + r * RC + d0 * 2, q8);
  }
  return unscale;
}
template <int RC, int D>
__device__ __forceinline__ void ldq_kv8(uint32_t (&qb)[D / 16][2], const uint8_t *qs, int lane) {
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    const uint2 w =
        *reinterpret_cast<const uint2 *>(qs + (lane / 4) * RC + (16 * s + 4 * (lane % 4)) * 2);
    qb[s][0] = w.x;
    qb[s][1] = w.y;
  }
}

// A fragment of V^T block m (dims 16 m .. 16 m + 15 x the 16 tokens of vt), by transposed
// 8 x 8 loads of the V rows.
template <int RC>
__device__ __forceinline__ void ldsm_vt(uint32_t *r, const uint8_t *vt, int m, int lane) {
  ldmatrix_x4_trans(r, vt + (lane % 8 + 8 * (lane / 16)) * RC +
                           (16 * m + 8 * ((lane / 8) % 2)) * 2);
}

// 16-row tiles as the copy engine writes them with the 128-byte swizzle (decode_tws_kernel):
// the dims in halves of 64 (16 rows x 128 bytes = 2 KiB each, the first at a 1024-byte
// aligned address), 16-byte chunk c of row r at chunk (c % 8) ^ (r % 8) of its half, so the
// 8 row addresses of an ldmatrix phase hit 8 different bank groups. A lane's address for
// chunk c0 + 2 j (c0 in {0, 1}: its part of the chunk index) is its base for chunk c0 with
// bits 4..6 XORed by (2 j) % 8, plus the half: sw_tile_lane once, sw_tile_addr per j.
__device__ __forceinline__ uint32_t sw_tile_lane(const uint8_t *tile, int row, int c0) {
  return smem_addr(tile) + row * 128 + ((c0 ^ (row % 8)) << 4);
}
__device__ __forceinline__ uint32_t sw_tile_addr(uint32_t lane_base, int even_chunk) {
  return (lane_base ^ ((even_chunk % 8) << 4)) + (even_chunk / 8) * 2048;
}

// One warp's state: o^T fragments [D/16][4] (c0: dim 16 m + g, head 2 t4; c1: head 2 t4 + 1;
// c2, c3: dim + 8), and (m, d) of heads 2 t4 and 2 t4 + 1 (m in log2 units; d this lane's
// part of the sum over its tokens until tcn_merge_warps).
template <int D> struct TcnState {
  float o[D / 16][4];
  float m[2], d[2];
};
template <int D> __device__ __forceinline__ void tcn_state_init(TcnState<D> &st) {
#pragma unroll
  for (int n = 0; n < D / 16; ++n) st.o[n][0] = st.o[n][1] = st.o[n][2] = st.o[n][3] = 0.f;
  st.m[0] = st.m[1] = -INFINITY;
  st.d[0] = st.d[1] = 0.f;
}

// RoPE of K in registers (tcn_scores with ROPE): lane (g, t4) holds in the A fragment of
// k-slice kk the dims 16 kk + 8 h + 2 t4 + e (h, e in {0, 1}) of rows g and g + 8, and in
// slice kk + D / 32 their rotate-halves partners at the same positions, so each lane rotates
// its own pairs. kfreq[4 kk + 2 h + e]: the frequency of that dim (kk < D / 32).
template <int D>
__device__ __forceinline__ void tcn_rope_freqs(const DecodeParams &p, int lane,
                                               float (&kfreq)[D / 8]) {
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    const int dim = 16 * (i / 4) + 8 * ((i / 2) % 2) + 2 * (lane % 4) + i % 2;
    kfreq[i] = p.rope_rcp_scale * exp2f(-(2.0f * (float)dim / (float)D) * p.rope_log2_theta);
  }
}

// The same for the fp8 instance's k order (ldq_kv8): kfreq[4 c + e] is the frequency of dim
// 16 c + 4 t4 + e (c < D / 32: the first half; its partner chunk c + D / 32 holds dim + D / 2
// at the same place of the same lane).
template <int D>
__device__ __forceinline__ void tcn_rope_freqs_kv8(const DecodeParams &p, int lane,
                                                   float (&kfreq)[D / 8]) {
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    const int dim = 16 * (i / 4) + 4 * (lane % 4) + i % 4;
    kfreq[i] = p.rope_rcp_scale * exp2f(-(2.0f * (float)dim / (float)D) * p.rope_log2_theta);
  }
}

// First half of a 16-token sub-tile (K rows kb, positions pos0 .. pos0 + 15): S^T = K Q^T
// (qb: the Q^T fragments), scale, logits transform, mask past hi (SW: and before lo, the
// sub-tiles of decode_tws_kernel start on a multiple of 16 below a window's start), online
// softmax per head (o rescaled where a head's max moved); returns P^T as the B fragments pb
// of tcn_pv. slope0/1: ALiBi slopes of heads 2 t4, 2 t4 + 1. K is no longer read when it
// returns. ROPE: K is rotated in registers (tcn_rope_freqs; one range-reduced sincos per
// pair) before its mma; for bf16 the rotated K and the staged Q are split into hi + lo parts
// (qb_lo: Q's residues) and q.k = qh.kh + qh.kl + ql.kh, as in decode_tc_kernel.
// VARIANT (decode_tws_kernel's variant instance): the program's score_mod on each logit
// after the built-in transforms, and its mask_mod on each pair where `mask_pairs` (the
// sub-tile's class is PARTIAL); `batch`, `head0` (the lane's heads are head0 + 2 t4 + {0,
// 1}) and `kv_head` are the hooks' arguments.
template <typename T, int D, int RC, bool SW = false, bool ROPE = false, typename KV8 = void,
          bool VARIANT = false>
__device__ __forceinline__ void tcn_scores(const DecodeParams &p, TcnState<D> &st,
                                           const uint32_t (&qb)[D / 16][2], const uint8_t *kb,
                                           int pos0, int hi, int q_pos, float slope0,
                                           float slope1, int lane, uint32_t (&pb)[2],
                                           int lo = 0, const float *kfreq = nullptr,
                                           const uint32_t (*qb_lo)[2] = nullptr,
                                           float q_unscale = 1.f,
                                           const DecodeVariant *var = nullptr, int batch = 0,
                                           int head0 = 0, int kv_head = 0,
                                           bool mask_pairs = false) {
  // (fp8 KV: the mma and P in f16 whatever q's type; stage_q_tile_kv8)
  using MT = typename std::conditional<std::is_void<KV8>::value, T, f16>::type;
  const int g = lane / 4;
  float s[4] = {0.f, 0.f, 0.f, 0.f}, s2[4] = {0.f, 0.f, 0.f, 0.f};  // two mma chains
  // SW: A fragment rows lane % 16, chunks 2 kk + lane / 16.
  const uint32_t k_lane = SW ? sw_tile_lane(kb, lane % 16, lane / 16) : 0;
  auto load_a = [&](uint32_t *a, int kk) {
    if constexpr (SW)  // the 16 K rows as the A operand
      ldmatrix_x4_at(a, sw_tile_addr(k_lane, 2 * kk));
    else
      ldsm_q<RC>(a, kb, kk, lane);
  };
  if constexpr (ROPE && !std::is_void<KV8>::value) {  // fp8 K, rotated after widening
    static_assert(SW, "fp8 K tiles come from the copy engine");
    constexpr int H = D / 32;  // chunks per half: chunk c's partner is chunk c + H
#pragma unroll
    for (int kk2 = 0; kk2 < H / 2; ++kk2) {
      uint32_t r[4], rp[4];  // chunks 2 kk2, 2 kk2 + 1 and their partners
      ldmatrix_x4_at(r, sw_tile_addr(k_lane, 2 * kk2));
      ldmatrix_x4_at(rp, sw_tile_addr(k_lane, 2 * kk2 + H));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 2 * kk2 + h;
        // fragment j: row g + 8 (j % 2), dims 16 c + 4 t4 + 2 (j / 2) + {0, 1}
        uint32_t a[4], b[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const uint32_t w = r[2 * h + j % 2] >> (16 * (j / 2));
          const uint32_t wp = rp[2 * h + j % 2] >> (16 * (j / 2));
          const float pos = (float)(pos0 + g + 8 * (j % 2));
          const float2 x = fp8x2_to_float2<KV8>((uint16_t)w);
          const float2 y = fp8x2_to_float2<KV8>((uint16_t)wp);
          float s0, c0, s1, c1;
          sincos_reduced(pos * kfreq[4 * c + 2 * (j / 2)], &s0, &c0);
          sincos_reduced(pos * kfreq[4 * c + 2 * (j / 2) + 1], &s1, &c1);
          a[j] = pack2<f16>(x.x * c0 - y.x * s0, x.y * c1 - y.y * s1);
          b[j] = pack2<f16>(y.x * c0 + x.x * s0, y.y * c1 + x.y * s1);
        }
        mma_16816<MT>(s, a, qb[c][0], qb[c][1]);
        mma_16816<MT>(s2, b, qb[c + H][0], qb[c + H][1]);
      }
    }
  } else if constexpr (ROPE) {
    constexpr bool SPLIT = is_bf16<T>::value;
    constexpr int H = D / 32;  // k-slices per half
#pragma unroll
    for (int kk = 0; kk < H; ++kk) {
      uint32_t a[4], b[4], al[4], bl[4];  // dims of slice kk, their partners (slice kk + H)
      load_a(a, kk);
      load_a(b, kk + H);
#pragma unroll
      for (int r = 0; r < 4; ++r) {  // fragment r: row g + 8 (r % 2), dims + 8 (r / 2)
        const float pos = (float)(pos0 + g + 8 * (r % 2));
        const float2 x = unpack2<T>(a[r]), y = unpack2<T>(b[r]);
        float s0, c0, s1, c1;
        sincos_reduced(pos * kfreq[4 * kk + 2 * (r / 2)], &s0, &c0);
        sincos_reduced(pos * kfreq[4 * kk + 2 * (r / 2) + 1], &s1, &c1);
        const float x0 = x.x * c0 - y.x * s0, y0 = y.x * c0 + x.x * s0;
        const float x1 = x.y * c1 - y.y * s1, y1 = y.y * c1 + x.y * s1;
        a[r] = pack2<T>(x0, x1);
        b[r] = pack2<T>(y0, y1);
        if constexpr (SPLIT) {
          const float2 xh = unpack2<T>(a[r]), yh = unpack2<T>(b[r]);
          al[r] = pack2<T>(x0 - xh.x, x1 - xh.y);
          bl[r] = pack2<T>(y0 - yh.x, y1 - yh.y);
        }
      }
      mma_16816<T>(s, a, qb[kk][0], qb[kk][1]);
      mma_16816<T>(s2, b, qb[kk + H][0], qb[kk + H][1]);
      if constexpr (SPLIT) {
        mma_16816<T>(s, al, qb[kk][0], qb[kk][1]);
        mma_16816<T>(s2, bl, qb[kk + H][0], qb[kk + H][1]);
        mma_16816<T>(s, a, qb_lo[kk][0], qb_lo[kk][1]);
        mma_16816<T>(s2, b, qb_lo[kk + H][0], qb_lo[kk + H][1]);
      }
    }
  } else if constexpr (!std::is_void<KV8>::value) {  // fp8 K (SW): two k-slices per load
    static_assert(SW, "fp8 K tiles come from the copy engine");
#pragma unroll
    for (int kk2 = 0; kk2 < D / 32; ++kk2) {
      uint32_t r[4];  // rows 0-7 / 8-15 of chunk 2 kk2, then of chunk 2 kk2 + 1
      ldmatrix_x4_at(r, sw_tile_addr(k_lane, 2 * kk2));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t a[4] = {fp8x2_to_h2<KV8>(r[2 * h]), fp8x2_to_h2<KV8>(r[2 * h + 1]),
                               fp8x2_to_h2<KV8>(r[2 * h] >> 16),
                               fp8x2_to_h2<KV8>(r[2 * h + 1] >> 16)};
        mma_16816<MT>(h ? s2 : s, a, qb[2 * kk2 + h][0], qb[2 * kk2 + h][1]);
      }
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      load_a(a, kk);
      mma_16816<T>(kk % 2 ? s2 : s, a, qb[kk][0], qb[kk][1]);
    }
  }
  float mx[2] = {st.m[0], st.m[1]};
  // (a score_mod's factors: variant_hooks.cuh; hoisted out of the kernel's loops)
  ScoreModScales score_scales = {1.f, kLog2e, 1.f};
  if constexpr (VARIANT) {
    if (var->score) score_scales = score_mod_scales(var->captures);
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int pos = pos0 + g + 8 * (j >> 1);
    bool keep = pos < hi && (!SW || pos >= lo);
    float x = logits_transform(p, (s[j] + s2[j]) * (p.scale * q_unscale), pos, q_pos,
                               (j & 1) ? slope1 : slope0);
    if constexpr (VARIANT) {
      const int h = head0 + 2 * (lane % 4) + (j & 1);
      if (mask_pairs)
        keep = keep && fi_variant_mask_mod(batch, h, q_pos, pos, var->captures) != 0;
      if (var->score)
        x = fi_variant_score_mod(x * score_scales.in, batch, h, kv_head, q_pos, pos,
                                 var->captures) *
            score_scales.fix;
    }
    const float v = keep ? x * score_scales.log2 : -INFINITY;
    s[j] = v;
    mx[j & 1] = fmaxf(mx[j & 1], v);
  }
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    mx[c] = fmaxf(mx[c], __shfl_xor_sync(0xffffffffu, mx[c], 4));
    mx[c] = fmaxf(mx[c], __shfl_xor_sync(0xffffffffu, mx[c], 8));
    mx[c] = fmaxf(mx[c], __shfl_xor_sync(0xffffffffu, mx[c], 16));
  }
  float sc[2];
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const float base = mx[c] == -INFINITY ? 0.f : mx[c];
    sc[c] = exp2f(st.m[c] - base);
    st.m[c] = mx[c];
    st.d[c] *= sc[c];
    s[c] = exp2f(s[c] - base);
    s[c + 2] = exp2f(s[c + 2] - base);
    st.d[c] += s[c] + s[c + 2];
  }
  if (__any_sync(0xffffffffu, sc[0] != 1.f || sc[1] != 1.f)) {  // a head's max moved
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      st.o[n][0] *= sc[0];
      st.o[n][1] *= sc[1];
      st.o[n][2] *= sc[0];
      st.o[n][3] *= sc[1];
    }
  }
  pb[0] = movmatrix_trans(pack2<MT>(s[0], s[1]));  // tokens 0..7
  pb[1] = movmatrix_trans(pack2<MT>(s[2], s[3]));  // tokens 8..15
}
// Second half: O^T += V^T P^T with the V rows vb of the sub-tile.
template <typename T, int D, int RC, bool SW = false, typename KV8 = void>
__device__ __forceinline__ void tcn_pv(TcnState<D> &st, const uint8_t *vb,
                                       const uint32_t (&pb)[2], int lane) {
  // SW: transposed loads of rows lane % 8 + 8 (lane / 16), chunks 2 n + (lane / 8) % 2.
  const uint32_t v_lane = SW ? sw_tile_lane(vb, lane % 8 + 8 * (lane / 16), (lane / 8) % 2) : 0;
  if constexpr (!std::is_void<KV8>::value) {  // fp8 V: m-blocks 2 n2, 2 n2 + 1 per load
    static_assert(SW, "fp8 V tiles come from the copy engine");
#pragma unroll
    for (int n2 = 0; n2 < D / 32; ++n2) {
      uint32_t r[4];  // tokens 0-7 of chunks 2 n2, 2 n2 + 1, then tokens 8-15 of both
      ldmatrix_x4_trans_at(r, sw_tile_addr(v_lane, 2 * n2));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // bytes (token 2 t4, dim 2 g), (2 t4, 2 g + 1), (2 t4 + 1, 2 g), (2 t4 + 1, 2 g + 1)
        // -> dim 2 g's two tokens, then dim 2 g + 1's
        const uint32_t w0 = __byte_perm(r[h], 0, 0x3120), w1 = __byte_perm(r[2 + h], 0, 0x3120);
        const uint32_t a[4] = {fp8x2_to_h2<KV8>(w0), fp8x2_to_h2<KV8>(w0 >> 16),
                               fp8x2_to_h2<KV8>(w1), fp8x2_to_h2<KV8>(w1 >> 16)};
        mma_16816<f16>(st.o[2 * n2 + h], a, pb[0], pb[1]);
      }
    }
  } else {
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      uint32_t a[4];
      if constexpr (SW)
        ldmatrix_x4_trans_at(a, sw_tile_addr(v_lane, 2 * n));
      else
        ldsm_vt<RC>(a, vb, n, lane);
      mma_16816<T>(st.o[n], a, pb[0], pb[1]);
    }
  }
}

// As tc_merge_warps, for the heads-on-N state (KV8: the fp8 V's dims order, above).
template <typename T, int D, bool KV8 = false>
__device__ __forceinline__ void tcn_merge_warps(const DecodeParams &p, const fi_work_unit &u,
                                                uint8_t *smem, TcnState<D> &st, int head0) {
  const int NW = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    st.d[c] += __shfl_xor_sync(0xffffffffu, st.d[c], 4);
    st.d[c] += __shfl_xor_sync(0xffffffffu, st.d[c], 8);
    st.d[c] += __shfl_xor_sync(0xffffffffu, st.d[c], 16);
  }
  float *eo = (float *)smem;
  float2 *emd = (float2 *)(eo + NW * 16 * D);
#pragma unroll
  for (int n = 0; n < D / 16; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      eo[(warp * 16 + 2 * t4 + (c & 1)) * D + 16 * n +
         (KV8 ? 2 * g + (c >> 1) : g + 8 * (c >> 1))] = st.o[n][c];
  if (g == 0) {
    emd[warp * 16 + 2 * t4] = make_float2(st.m[0], st.d[0]);
    emd[warp * 16 + 2 * t4 + 1] = make_float2(st.m[1], st.d[1]);
  }
  merge_warp_rows<T, D>(p, u, eo, emd, head0);
}

}  // namespace fi

#endif  // FI_CUDA_DECODE_HEADS_N_CUH
