// prefill_kernel.cuh -- FlashAttention-2-style tensor-core prefill (ragged and paged).
//
// Work split. Grid = (plan work units, kv heads); blocks stride over the unit count the
// planner keeps in the workspace (graph replays after re-planning). A CTA takes one work unit (a request, a
// range of its query tokens, a range of its KV positions) for one KV head and packs the
// GQA group of query heads into its query tile: packed row p = token * group + head_in_group,
// so a short query still fills the tile and K/V are read once per group. The CTA walks its
// packed rows in chunks of CTA_Q; NUM_WARPS warps each own 16 * MMA_Q rows of a chunk (Q
// fragments stay per warp, no cross-warp reduction). Per chunk the KV range is walked in
// tiles of CTA_KV tokens: S = Q K^T with mma.sync m16n8k16 (fp32 accumulate), the logits
// transform and masks applied in registers, online softmax in registers (log2 domain),
// O += P V with P re-packed from the S accumulators as the A operand.
//
// Memory traffic. Q: read once per CTA (cp.async -> swizzled smem, ldmatrix per tile).
// K/V: each KV tile is gathered once per CTA with 16-byte cp.async (paged form: the page of
// every row looked up through kv_indices) into XOR-swizzled smem (chunk ^ (row & 7): the
// 8 row addresses of every ldmatrix phase hit 8 different bank groups), so HBM reads of
// K/V are (query chunks of the request) x (kv tokens) x group-shared, i.e. once per
// 16*MMA_Q*NUM_WARPS/group query tokens. Causal: tiles wholly above the bottom-right
// diagonal are never loaded; sliding window: tiles wholly left of the window neither.
// K and V are double buffered against each other (two barriers per tile): the load of V(i)
// overlaps Q K(i)^T and the softmax, the load of K(i+1) overlaps P V(i). fp8 KV is
// gathered raw (half the bytes) and widened to the query dtype in smem.
// O: written once, staged through the Q tile's smem for 16-byte coalesced stores; split-KV
// work units instead write fp32 partial rows + LSE to the workspace for the merge kernel.
//
// Block-sparse attention (mma.sync engine, p.bsr_tiles): a unit walks the plan's list of KV
// tiles (pairs of 64-key halves from their own first keys) instead of a key range, each
// row of a tile gathered from its own key (cp.async, zero-filled past a half's kept keys);
// traffic as above over the listed keys only.
//
// Hopper tier (template flag WG, tiles with cores = wgmma, sm_90a only): the same tile walk,
// loads, masks and softmax, but each warpgroup (4 warps) owns 64 query rows and issues
// wgmma.mma_async (wgmma.cuh): S = Q K^T with Q and K read by the tensor cores straight
// from shared memory (no ldmatrix, no per-warp K fragments), O += P V with P from
// registers and V from shared memory; the tiles are kept in wgmma's 128-byte-swizzled slab
// layout (tile_off). Per warp the accumulators keep the mma.sync layout (16 rows), so
// q_tile 128 x kv_tile 128 costs 64 + 64 fp32 registers per thread where the mma.sync
// kernel's 4 warps would need 128 + 128. Traffic is the same as above. Pipeline of the
// fast path (f16/bf16 KV): a two-slot ring of K and V tiles (one barrier per KV tile, each
// load has a whole tile to land), and P(i-1) V(i-1) runs on the tensor cores while the
// warpgroup computes the softmax of tile i (see OVERLAP below).
//
// The kernel is plain CUDA C++ (templates only for the tile parameters, inline PTX for
// cp.async / ldmatrix / mma / wgmma) so that clang -x cuda builds it as well as nvcc.
#ifndef FI_CUDA_PREFILL_KERNEL_CUH
#define FI_CUDA_PREFILL_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "pdl.cuh"
#include "prefill_params.h"
#include "wgmma.cuh"

namespace fi_prefill {

// ------------------------------------------------------------------ PTX wrappers ------

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// 16-byte async copy; src_bytes == 0 zero-fills the destination (rows past the end).
__device__ __forceinline__ void cp_async_16(void *smem_dst, const void *gmem_src, bool valid) {
  int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)),
               "l"(gmem_src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_addr(uint32_t r[4], uint32_t a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans_addr(uint32_t r[4], uint32_t a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

template <typename T>
struct MmaOp;
template <>
struct MmaOp<__half> {
  static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float x, float y) {
    __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<uint32_t *>(&h);
  }
};
template <>
struct MmaOp<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float x, float y) {
    __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<uint32_t *>(&h);
  }
};

template <typename T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Two fp8 values (low byte first) -> two values of T packed in 32 bits. Exact: e4m3 and
// e5m2 are subsets of both fp16 and bf16.
template <typename T, int KVK>
__device__ __forceinline__ uint32_t fp8x2_widen(uint16_t two) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)two,
                                              KVK == FI_KV_E4M3 ? __NV_E4M3 : __NV_E5M2);
  __half2 hh = *reinterpret_cast<__half2 *>(&h);
  return MmaOp<T>::pack(__low2float(hh), __high2float(hh));
}

// sin/cos of a possibly large angle: explicit reduction to [-pi, pi] so that the fast
// intrinsics (--use_fast_math) stay accurate.
__device__ __forceinline__ void sincos_reduced(float x, float *s, float *c) {
  float k = rintf(x * 0.15915494309189535f);
  float r = fmaf(-k, 6.28318548202514648f, x);
  r = fmaf(k, 1.7484555e-7f, r);
  __sincosf(r, s, c);
}

// Pairwise reduction of N <= 16 values in registers (depth log2 N instead of a chain of N;
// constant indices only, so the array stays in registers).
template <int N, typename Op>
__device__ __forceinline__ float tree_reduce(float (&v)[N], Op op) {
  static_assert(N >= 1 && N <= 32, "1 .. 32 values");
#pragma unroll
  for (int i = 0; i < 16; ++i)  // (N not a power of two: the top ones fold in first)
    if (i + 16 < N) v[i] = op(v[i], v[i + 16]);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    if (i + 8 < N) v[i] = op(v[i], v[i + 8]);
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (i + 4 < N) v[i] = op(v[i], v[i + 4]);
#pragma unroll
  for (int i = 0; i < 2; ++i)
    if (i + 2 < N) v[i] = op(v[i], v[i + 2]);
  if (N > 1) v[0] = op(v[0], v[N > 1 ? 1 : 0]);
  return v[0];
}

// ------------------------------------------------------------------ smem layout -------

// Element offset of 16-byte chunk `chunk` of row `row` in a tile of ROWS rows of HD 2-byte
// elements, XOR-swizzled on the low 3 bits of the chunk index (ldmatrix: 8 row addresses of
// a phase hit 8 bank groups). mma.sync tiles are row-major (row stride HD); wgmma tiles are
// slabs of 64 columns (row stride 128 bytes, the 128-byte-swizzle layout of wgmma.cuh).
// The two coincide for HD = 64.
template <int HD, int ROWS, bool WG>
__device__ __forceinline__ int tile_off(int row, int chunk) {
  if (WG) return (chunk >> 3) * (ROWS * 64) + row * 64 + (((chunk & 7) ^ (row & 7)) << 3);
  return row * HD + ((chunk ^ (row & 7)) << 3);
}

// ------------------------------------------ per-tile steps shared with prefill_ws.cuh ---

// wgmma S = Q K^T of one warpgroup: one m64 x CTA_KV x 16 wgmma per 16 head dims, Q (64 rows
// of a CTA_Q-row tile) and K both K-major from the swizzled slabs whose descriptor low words
// are q_lo and k_lo; 32 bytes along a 128-byte row per step. Issue only (the caller fences,
// commits and waits).
// (DT: the operand type, fi_wgmma::e4m3 for fp8: 32 head dims per step, the same 32 bytes.)
template <typename DT>
struct WgOperand {
  static constexpr int BYTES = 2;
};
template <>
struct WgOperand<fi_wgmma::e4m3> {
  static constexpr int BYTES = 1;
};
template <typename DT, int HD, int CTA_Q, int CTA_KV>
__device__ __forceinline__ void wg_qk_issue(float (&s)[CTA_KV / 8][4], uint32_t q_lo,
                                            uint32_t k_lo) {
#pragma unroll
  for (int kk = 0; kk < HD * WgOperand<DT>::BYTES / 32; ++kk) {
    const uint32_t step = (kk & 3) * 32;
    const uint64_t da = fi_wgmma::desc_at(q_lo, (kk >> 2) * (CTA_Q * 128) + step, 1024);
    const uint64_t db = fi_wgmma::desc_at(k_lo, (kk >> 2) * (CTA_KV * 128) + step, 1024);
    if (kk == 0)
      fi_wgmma::Wgmma<DT, CTA_KV>::template ss<0>(s, da, db);
    else
      fi_wgmma::Wgmma<DT, CTA_KV>::template ss<1>(s, da, db);
  }
}

// Online softmax of accumulator rows hh (0: row g, 1: row g + 8) of one 16-row m-tile in
// the log2 domain (x * c_log2 is the scaled logit / ln 2): updates the running max and sum,
// turns s into P, and returns the factor O must be scaled by. Tree reductions (max, then
// sum): a chain of NB dependent ops would stall the few warps per scheduler these kernels
// run with.
// p_log2_offset scales P by 2^offset (the fp8 kernel's 256: P in e4m3 keeps its small
// values; l is scaled alike, so O / l is not, and the LSE subtracts it).
// OFFSET: this lane's logits are s + offset (raw units, the same for the row's pairs that
// the lane holds; ALiBi's per-tile part): the max and P take it in once per row.
// slack (log2 units, FlashAttention-4's lazy rescaling): the running max stays while the
// tile's max exceeds it by at most slack, so P may reach 2^slack (times 2^p_log2_offset)
// and O needs no rescale on such tiles; l and the LSE use the same reference, so O / l
// and the LSE are exact either way.
// The slack for P in 16 bits (f16 / bf16 hold P <= 2^8 with O and l in fp32).
constexpr float SOFTMAX_SLACK_16BIT = 8.f;
// The two halves of online_softmax_row, for callers that put work between them (the
// warp-specialised kernel waits for its previous P V there): softmax_row_max updates the
// running max and returns O's factor and the exponent's offset; softmax_row_exp turns s
// into P and updates the running sum. online_softmax_row is the one after the other (the
// same operations in the same order: the same bits either way).
struct SoftmaxRowMax {
  float scale, sub;
};
template <bool OFFSET = false, int NB>
__device__ __forceinline__ SoftmaxRowMax softmax_row_max(const float (&s)[NB][4], int hh,
                                                         float &m_run, float c_log2,
                                                         float p_log2_offset = 0.f,
                                                         float offset = 0.f, float slack = 0.f) {
  float part[NB];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) part[nb] = fmaxf(s[nb][2 * hh], s[nb][2 * hh + 1]);
  float mx = tree_reduce(part, [](float a, float b) { return fmaxf(a, b); });
  if (OFFSET) mx += offset;
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  mx *= c_log2;  // log2 domain
  mx = mx > m_run + slack ? mx : m_run;  // (a NaN max keeps m_run, as fmaxf would)
  const float m_use = (mx == -INFINITY) ? 0.f : mx;
  const float scale = exp2f(m_run - m_use);
  m_run = mx;
  const float sub = OFFSET ? fmaf(offset, c_log2, p_log2_offset - m_use) : p_log2_offset - m_use;
  return {scale, sub};
}
template <int NB>
__device__ __forceinline__ void softmax_row_exp(float (&s)[NB][4], int hh, float &l_run,
                                                float c_log2, SoftmaxRowMax r) {
  float part[NB];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) {
    const float x0 = fmaf(s[nb][2 * hh], c_log2, r.sub),
                x1 = fmaf(s[nb][2 * hh + 1], c_log2, r.sub);
    const float p0 = exp2f(x0), p1 = exp2f(x1);
    s[nb][2 * hh] = p0;
    s[nb][2 * hh + 1] = p1;
    part[nb] = p0 + p1;
  }
  l_run = l_run * r.scale + tree_reduce(part, [](float a, float b) { return a + b; });
}
template <bool OFFSET = false, int NB>
__device__ __forceinline__ float online_softmax_row(float (&s)[NB][4], int hh, float &m_run,
                                                    float &l_run, float c_log2,
                                                    float p_log2_offset = 0.f,
                                                    float offset = 0.f, float slack = 0.f) {
  const SoftmaxRowMax r =
      softmax_row_max<OFFSET>(s, hh, m_run, c_log2, p_log2_offset, offset, slack);
  softmax_row_exp(s, hh, l_run, c_log2, r);
  return r.scale;
}

// P (fp32 accumulators of one m-tile) as the A operand of the P V MMA, 16 keys per step.
template <typename DT, int NB>
__device__ __forceinline__ void pack_p(const float (&s)[NB][4], uint32_t (&pa)[NB / 2][4]) {
#pragma unroll
  for (int kb = 0; kb < NB / 2; ++kb) {
    pa[kb][0] = MmaOp<DT>::pack(s[2 * kb][0], s[2 * kb][1]);
    pa[kb][1] = MmaOp<DT>::pack(s[2 * kb][2], s[2 * kb][3]);
    pa[kb][2] = MmaOp<DT>::pack(s[2 * kb + 1][0], s[2 * kb + 1][1]);
    pa[kb][3] = MmaOp<DT>::pack(s[2 * kb + 1][2], s[2 * kb + 1][3]);
  }
}

// Four fp32 values as e4m3 bytes of one register, the first in the low byte (satfinite).
__device__ __forceinline__ uint32_t pack4_e4m3(float x0, float x1, float x2, float x3) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
  return (uint32_t)lo | ((uint32_t)hi << 16);
}

// P as the e4m3 A operand of the fp8 P V wgmma, 32 keys per step, without moving a value
// between threads: the fragment wants keys 4t..4t+3 (and + 16) of each row where the
// accumulators hold keys 2t, 2t+1, 8+2t, 9+2t (and + 16), so logical key k of a 32-key step
// is physical key perm32_key(k) -- and V^T is staged with its keys in that order
// (prefill_stage.cu), which makes P V the product it should be.
template <int NB>
__device__ __forceinline__ void pack_p_e4m3(const float (&s)[NB][4], uint32_t (&pa)[NB / 4][4]) {
#pragma unroll
  for (int kb = 0; kb < NB / 4; ++kb) {
    pa[kb][0] = pack4_e4m3(s[4 * kb][0], s[4 * kb][1], s[4 * kb + 1][0], s[4 * kb + 1][1]);
    pa[kb][1] = pack4_e4m3(s[4 * kb][2], s[4 * kb][3], s[4 * kb + 1][2], s[4 * kb + 1][3]);
    pa[kb][2] = pack4_e4m3(s[4 * kb + 2][0], s[4 * kb + 2][1], s[4 * kb + 3][0], s[4 * kb + 3][1]);
    pa[kb][3] = pack4_e4m3(s[4 * kb + 2][2], s[4 * kb + 2][3], s[4 * kb + 3][2], s[4 * kb + 3][3]);
  }
}

// The key (0..31 within its 32-key step) that logical column k of pack_p_e4m3's fragment
// holds: k = 16 h + 4 t + i -> 16 h + 8 (i / 2) + 2 t + i % 2.
__host__ __device__ __forceinline__ int perm32_key(int k) {
  const int h = k >> 4, t = (k >> 2) & 3, i = k & 3;
  return 16 * h + 8 * (i >> 1) + 2 * t + (i & 1);
}

// O rows g and g + 8 of one m-tile times their softmax rescale factors.
template <int NB>
__device__ __forceinline__ void rescale_o(float (&o)[NB][4], const float (&row_scale)[2]) {
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) {
    o[nb][0] *= row_scale[0];
    o[nb][1] *= row_scale[0];
    o[nb][2] *= row_scale[1];
    o[nb][3] *= row_scale[1];
  }
}

// --------------------------------------------------------------- the kernel -----------

// WG: the Hopper tier. Each warpgroup (4 warps) issues wgmma for 64 query rows, so every
// warp still owns 16 rows of the accumulators (MMA_Q = 1) in the mma.sync layout.
template <int HD, int CTA_Q, int CTA_KV, bool WG>
struct Shape {
  static constexpr int MMA_Q = (!WG && CTA_Q == 128 && HD <= 128) ? 2 : 1;
  static constexpr int NUM_WARPS = CTA_Q / (16 * MMA_Q);
  static constexpr int THREADS = NUM_WARPS * 32;
  static constexpr int CH = HD / 8;  // 16-byte chunks per 2-byte row
  static constexpr int NB_KV = CTA_KV / 8;
  static constexpr int NB_D = HD / 8;
  // wgmma 64 x 64: three CTAs (12 warps) per SM, so that short units' first loads hide
  // behind other CTAs' tiles (register cap 170 per thread).
  static constexpr int MIN_CTAS = (WG && CTA_Q == 64 && CTA_KV == 64) ? 3 : 1;
};

// KV stages. The mma.sync kernel and the fp8 paths keep one K and one V tile (two barriers
// per KV tile: V(i) loads under Q K(i)^T, K(i+1) under P V(i)). The wgmma fast path of
// q128 (one CTA of 8 warps per SM anyway) keeps a ring of two (K, V) pairs, so tile i+1
// loads for a whole tile under tile i and one barrier per tile suffices; the q64 wgmma
// variants keep single tiles so that two (kv128) or three (kv64) CTAs fit an SM, which
// measured faster (bench/NOTES.md, prefill v7-v11).
template <int HD, int CTA_Q, int CTA_KV, int KVK, bool WG>
struct SmemLayout {
  static constexpr int STAGES =
      (WG && KVK == FI_KV_SAME && CTA_Q == 128) ? 2 : 1;
  static constexpr int Q_BYTES = CTA_Q * HD * 2;
  static constexpr int KV_BYTES = CTA_KV * HD * 2;
  static constexpr int RAW_BYTES = (KVK == FI_KV_SAME) ? 0 : CTA_KV * HD;  // fp8 staging
  // Paged page table of the wgmma kernels without the ring: byte offsets of the K and V rows
  // of two KV tiles (the current one and the next), resolved once per row.
  static constexpr bool PAGE_TABLE = WG && STAGES == 1;
  static constexpr int TABLE_BYTES = PAGE_TABLE ? 2 * 2 * CTA_KV * 8 : 0;
  static constexpr int TOTAL = Q_BYTES + STAGES * 2 * KV_BYTES + 2 * RAW_BYTES + TABLE_BYTES;
};

// BSR: the instance for block-sparse tiles without the extras (the instances with the
// extras take block-sparse tiles at run time, p.bsr_tiles; the plain one never does).
template <int HD, int CTA_Q, int CTA_KV, typename DT, int KVK, bool EXTRAS, bool WG,
          bool BSR = false>
__global__ void __launch_bounds__(Shape<HD, CTA_Q, CTA_KV, WG>::THREADS,
                                  Shape<HD, CTA_Q, CTA_KV, WG>::MIN_CTAS)
    prefill_kernel(const PrefillParams p) {
  fi::pdl_enter();
  using S = Shape<HD, CTA_Q, CTA_KV, WG>;
  using L = SmemLayout<HD, CTA_Q, CTA_KV, KVK, WG>;
  constexpr int MMA_Q = S::MMA_Q, THREADS = S::THREADS, CH = S::CH;
  constexpr int NB_KV = S::NB_KV, NB_D = S::NB_D;
  constexpr int KV_ELEM = (KVK == FI_KV_SAME) ? 2 : 1;
  constexpr int CH_RAW = HD * KV_ELEM / 16;  // 16-byte chunks per stored KV row
  static_assert((CTA_Q * CH) % THREADS == 0, "Q tile load must divide among threads");
  static_assert((CTA_KV * CH_RAW) % THREADS == 0, "KV tile load must divide among threads");
  static_assert(CH >= 8, "swizzle needs >= 8 chunks per row");
  static_assert(!WG || (CTA_Q % 64 == 0 && (CTA_KV == 64 || CTA_KV == 128) &&
                        (HD == 64 || HD == 128)),
                "wgmma tier: warpgroups of 64 rows, N of 64 or 128");
  auto q_off = [](int row, int c) { return tile_off<HD, CTA_Q, WG>(row, c); };
  auto kv_off = [](int row, int c) { return tile_off<HD, CTA_KV, WG>(row, c); };
  // Block barrier. The wgmma tier first orders this thread's shared-memory writes (stores,
  // landed cp.async) before the tensor cores' async-proxy reads.
  auto sync_block = [] {
    if (WG) fi_wgmma::fence_proxy_async();
    __syncthreads();
  };

  extern __shared__ __align__(1024) unsigned char smem[];
  DT *q_smem = reinterpret_cast<DT *>(smem);
  DT *k_smem = reinterpret_cast<DT *>(smem + L::Q_BYTES);
  DT *v_smem = reinterpret_cast<DT *>(smem + L::Q_BYTES + L::KV_BYTES);
  unsigned char *k_raw = smem + L::Q_BYTES + L::STAGES * 2 * L::KV_BYTES;
  constexpr bool RING = L::STAGES == 2;
  // OVERLAP (the wgmma ring): P(i-1) V(i-1) is issued once Q K(i)^T has landed and runs on
  // the tensor cores while this warpgroup computes the softmax of tile i (FA3's intra-
  // warpgroup overlap). V then lags K by one tile in the ring: the top of tile i loads K(i+1)
  // and V(i). Waits stay unconditional: ptxas serialises every wgmma when it cannot match a
  // wait to an issue.
  constexpr bool OVERLAP = RING;
  constexpr int SLOT_ELEMS = 2 * CTA_KV * HD;  // K then V of one ring slot
  // Block-sparse attention (p.bsr_tiles; the mma.sync engine's BSR instance and those with
  // the extras): a unit's kv_start .. kv_end index the plan's KV tiles, each two halves of
  // 64 keys {first key, keys kept} (planner.c, bsr_units), instead of a key range. A KV tile
  // of this kernel is BSR_SEGS segments of BSR_SEG keys (both halves at CTA_KV 128, one
  // half or part of one below), each from its own first key; rows past a segment's kept
  // keys load as zeros and are masked. The other tiles are segments too (of one key range),
  // so the extras' masks and RoPE read keys one way.
  static_assert(CTA_KV >= 32 && CTA_KV <= 128, "block-sparse segments: KV tiles of 32..128");
  constexpr int BSR_SEG = CTA_KV < 64 ? CTA_KV : 64, BSR_SEGS = CTA_KV / BSR_SEG;
  constexpr int BSR_PER = 128 / CTA_KV;  // kernel tiles per plan tile
  static_assert(!BSR || (!WG && !EXTRAS && KVK == FI_KV_SAME), "BSR: the mma.sync plain form");
  const bool bsr = BSR || (!WG && EXTRAS && p.bsr_tiles != nullptr);
  unsigned char *v_raw = k_raw + L::RAW_BYTES;
  // PAGE_TABLE: [buffer][K, V][row] byte offsets of the paged rows (see load_kv_tile).
  int64_t *const page_table = reinterpret_cast<int64_t *>(v_raw + L::RAW_BYTES);
  constexpr bool PAGE_TABLE = L::PAGE_TABLE;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int kv_head = blockIdx.y;
  // The current plan's unit count lives in the workspace (a graph captured with one plan
  // stays correct after re-planning): blocks stride over the units.
  const int num_units = p.device_num_units ? *p.device_num_units : p.num_units;
  for (int unit = blockIdx.x; unit < num_units; unit += gridDim.x) {
  const fi_work_unit wu = p.work[unit];
  const int group = p.group;
  const int req = wu.request;

  const int q_tok_begin = p.qo_indptr[req];
  const int qo_len = p.qo_indptr[req + 1] - q_tok_begin;
  int kv_len, kv_page_begin = 0;
  int64_t kv_tok_begin = 0;
  if (p.paged) {
    kv_page_begin = p.kv_indptr[req];
    int pages = p.kv_indptr[req + 1] - kv_page_begin;
    kv_len = pages > 0 ? (pages - 1) * p.page_size + p.kv_last_page_len[req] : 0;
  } else {
    kv_tok_begin = p.kv_indptr[req];
    kv_len = p.kv_indptr[req + 1] - p.kv_indptr[req];
  }
  const int q_pos_shift = kv_len - qo_len;  // bottom-right alignment
  const char *k_base = reinterpret_cast<const char *>(p.k);
  const char *v_base = reinterpret_cast<const char *>(p.v);
  const int64_t k_head_off = (int64_t)kv_head * p.k_stride_head * KV_ELEM;
  const int64_t v_head_off = (int64_t)kv_head * p.v_stride_head * KV_ELEM;
  const int64_t k_s_page = p.k_stride_page * KV_ELEM, k_s_tok = p.k_stride_tok * KV_ELEM;
  const int64_t v_s_page = p.v_stride_page * KV_ELEM, v_s_tok = p.v_stride_tok * KV_ELEM;

  // ldmatrix lane addresses (see the S and PV loops).
  const int lane_r8 = lane & 7;
  const uint32_t q_lane_addr =
      smem_addr(q_smem) +
      (uint32_t)(warp * 16 * MMA_Q + lane_r8 + ((lane >> 3) & 1) * 8) * HD * 2 +
      ((uint32_t)((lane >> 4) ^ lane_r8) << 4);
  const uint32_t k_lane_addr = smem_addr(k_smem) +
                               (uint32_t)(lane_r8 + (lane >> 4) * 8) * HD * 2 +
                               ((uint32_t)(((lane >> 3) & 1) ^ lane_r8) << 4);
  // wgmma descriptor bases (low words): this warpgroup's 64 Q rows, slot 0 of K and of V.
  const uint32_t wg_q_desc_lo =
      fi_wgmma::desc_lo(smem_addr(q_smem) + (uint32_t)(warp >> 2) * 64 * 128, 16);
  const uint32_t wg_kv_desc_lo = fi_wgmma::desc_lo(smem_addr(k_smem), 16);
  const uint32_t wg_v_desc_lo = fi_wgmma::desc_lo(smem_addr(v_smem), CTA_KV * 128);
  // ... of ring slot `slot` (K then V of a slot are SLOT_ELEMS apart; 16-byte units).
  auto slot_desc_lo = [](uint32_t base_lo, int slot) {
    return base_lo + (uint32_t)slot * (SLOT_ELEMS * 2 / 16);
  };
  const uint32_t v_lane_addr = smem_addr(v_smem) +
                               (uint32_t)(lane_r8 + ((lane >> 3) & 1) * 8) * HD * 2 +
                               ((uint32_t)((lane >> 4) ^ lane_r8) << 4);

  const int packed_begin = wu.qo_start * group;
  const int packed_end = (wu.qo_start + wu.qo_len) * group;

  for (int chunk = packed_begin; chunk < packed_end; chunk += CTA_Q) {
    // ---- Q chunk -> smem
#pragma unroll
    for (int it = 0; it < CTA_Q * CH / THREADS; ++it) {
      int idx = tid + it * THREADS;
      int row = idx / CH, c = idx % CH;
      int pr = chunk + row;
      bool valid = pr < packed_end;
      const int tq = (int)p.group_div.div((uint32_t)(valid ? pr : 0));
      int tok = tq, h = kv_head * group + (valid ? pr : 0) - tq * group;
      const DT *src = reinterpret_cast<const DT *>(p.q) +
                      (int64_t)(q_tok_begin + tok) * p.q_stride_n + (int64_t)h * p.q_stride_h +
                      c * 8;
      cp_async_16(q_smem + q_off(row, c), valid ? (const void *)src : p.q, valid);
    }
    cp_async_commit();

    // Token range of this chunk and the KV range it needs.
    const int last_pr = min(chunk + CTA_Q, packed_end) - 1;
    const int t_lo = (int)p.group_div.div((uint32_t)chunk);
    const int t_hi = (int)p.group_div.div((uint32_t)last_pr);
    int kv_lo = wu.kv_start, kv_hi = wu.kv_end;
    if (p.causal) kv_hi = min(kv_hi, q_pos_shift + t_hi + 1);
    if (EXTRAS && p.window_left >= 0) kv_lo = max(kv_lo, q_pos_shift + t_lo - p.window_left);
    const int num_tiles = bsr ? (wu.kv_end - wu.kv_start) * BSR_PER
                          : kv_hi > kv_lo ? (kv_hi - kv_lo + CTA_KV - 1) / CTA_KV : 0;
    // The plan's tile holding KV tile `tile` (block-sparse; loaded a tile ahead of its use).
    auto plan_tile = [&](int tile) {
      return bsr ? reinterpret_cast<const int4 *>(p.bsr_tiles)[wu.kv_start + tile / BSR_PER]
                 : make_int4(0, 0, 0, 0);
    };
    // Segment s of KV tile `tile` (block-sparse: of plan tile t): its first key key[s] and
    // keys kept len[s] (<= 0: none).
    auto tile_segments = [&](int tile, const int4 &t, int (&key)[BSR_SEGS],
                             int (&len)[BSR_SEGS]) {
      if (bsr) {
        if constexpr (BSR_SEGS == 2) {
          key[0] = t.x, len[0] = t.y, key[BSR_SEGS - 1] = t.z, len[BSR_SEGS - 1] = t.w;
        } else {
          const int part = (tile % BSR_PER) * CTA_KV, off = part & 63;
          key[0] = (part >= 64 ? t.z : t.x) + off;
          len[0] = (part >= 64 ? t.w : t.y) - off;
        }
      } else {
#pragma unroll
        for (int s = 0; s < BSR_SEGS; ++s) {
          key[s] = kv_lo + tile * CTA_KV + s * BSR_SEG;
          len[s] = kv_hi - key[s];
        }
      }
    };

    // Per-row facts of the rows this thread holds in the accumulators (rows g and g+8 of
    // each of its MMA_Q m-tiles).
    int row_tok[MMA_Q][2];
    float row_slope[MMA_Q][2];
#pragma unroll
    for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        int row = warp * 16 * MMA_Q + mq * 16 + g + hh * 8;
        int pr = chunk + row;
        row_tok[mq][hh] = (int)p.group_div.div((uint32_t)(pr < packed_end ? pr : packed_end - 1));
        row_slope[mq][hh] = 0.f;
        if (EXTRAS && p.pos_encoding == FI_POS_ALIBI) {
          int h = kv_head * group + pr - (int)p.group_div.div((uint32_t)pr) * group;
          int n = 1 << (31 - __clz(p.num_qo_heads));  // 2^floor(log2(heads))
          float e = h < n ? -8.f * (h + 1) / n : -4.f * (2 * (h - n) + 1) / n;
          row_slope[mq][hh] = exp2f(e);
        }
      }

    // Thread t copies 16-byte chunk (t % CH_RAW) of rows t / CH_RAW + it * ROW_STEP.
    auto load_kv_tile = [&](int tile, bool is_v, int slot, const int4 &pt) {
      constexpr int ROW_STEP = THREADS / CH_RAW;
      const int kv0 = kv_lo + tile * CTA_KV;
      const int row0 = tid / CH_RAW, c = tid % CH_RAW;
      const char *base = is_v ? v_base : k_base;
      const int64_t s_tok = is_v ? v_s_tok : k_s_tok;
      const int64_t hoff = (is_v ? v_head_off : k_head_off) + c * 16;
      unsigned char *dst_tile = KVK == FI_KV_SAME
                                    ? reinterpret_cast<unsigned char *>(
                                          (is_v ? v_smem : k_smem) + slot * SLOT_ELEMS)
                                    : (is_v ? v_raw : k_raw);
      auto dst_of = [&](int row) -> unsigned char * {
        if (KVK == FI_KV_SAME) return dst_tile + 2 * kv_off(row, c);
        return dst_tile + row * HD + c * 16;
      };
      // This thread's rows are row0 + it * ROW_STEP. With ROW_STEP a multiple of 8 the
      // swizzle term (row & 7) is the same for all of them: one destination plus constant
      // offsets (the cp.async immediates), instead of the swizzle arithmetic per row.
      constexpr int ROW_BYTES = KVK == FI_KV_SAME ? (WG ? 128 : HD * 2) : HD;
      unsigned char *const dst0 = dst_of(row0);
      auto dst_at = [&](int it) -> void * {
        if constexpr (ROW_STEP % 8 == 0) return dst0 + it * (ROW_STEP * ROW_BYTES);
        return dst_of(row0 + it * ROW_STEP);
      };
      if constexpr (!WG && (EXTRAS || BSR)) {
        if (bsr) {  // each row from its segment's first key; rows past the kept ones zero
          static_assert(BSR_SEG % ROW_STEP == 0, "a thread's rows: one segment per step");
          int sk[BSR_SEGS], sl[BSR_SEGS];
          tile_segments(tile, pt, sk, sl);
          const int64_t s_page = is_v ? v_s_page : k_s_page;
          // (ragged: one pointer per segment, a fixed step per row)
          const int64_t step = (int64_t)ROW_STEP * s_tok;
          const char *seg_src[BSR_SEGS];
#pragma unroll
          for (int sg = 0; sg < BSR_SEGS; ++sg)
            seg_src[sg] = base + (kv_tok_begin + sk[sg] + row0) * s_tok + hoff;
#pragma unroll
          for (int it = 0; it < CTA_KV / ROW_STEP; ++it) {
            const int sg = it * ROW_STEP / BSR_SEG;  // (constants: it is unrolled)
            const int k = it - sg * (BSR_SEG / ROW_STEP);
            const int off = row0 + k * ROW_STEP;
            const bool valid = off < sl[sg];
            const char *src = seg_src[sg] + k * step;
            if (p.paged && valid) {
              const int j = sk[sg] + off;
              const int pg = (int)p.page_div.div((uint32_t)j);
              src = base + hoff + (int64_t)p.kv_indices[kv_page_begin + pg] * s_page +
                    (int64_t)(j - pg * p.page_size) * s_tok;
            }
            cp_async_16(dst_at(it), valid ? src : base, valid);
          }
          return;
        }
      }
      const bool full = kv0 + CTA_KV <= kv_hi;  // no row past the end: no checks
      const int rows_left = kv_hi - kv0 - row0;  // rows it * ROW_STEP < rows_left exist
      if (!p.paged) {
        // Ragged: rows are contiguous tokens; one pointer per tile, a fixed step per row.
        const char *src = base + (kv_tok_begin + kv0 + row0) * s_tok + hoff;
        const int64_t step = (int64_t)ROW_STEP * s_tok;
        if (full) {
#pragma unroll
          for (int it = 0; it < CTA_KV / ROW_STEP; ++it, src += step)
            cp_async_16(dst_at(it), src, true);
        } else {
#pragma unroll
          for (int it = 0; it < CTA_KV / ROW_STEP; ++it, src += step) {
            const bool valid = it * ROW_STEP < rows_left;
            cp_async_16(dst_at(it), valid ? src : base, valid);
          }
        }
      } else {
        const int64_t s_page = is_v ? v_s_page : k_s_page;
        const int32_t *pages_of_req = p.kv_indices + kv_page_begin;
        const char *base_h = base + hoff;
        if (PAGE_TABLE) {
          // Rows resolved by resolve_rows/publish_rows: one shared-memory read per row.
          // Rows past the end hold the last row's offset (a valid address; copied as zero
          // bytes), so no row needs a branch or a select.
          const int64_t *tab = page_table + ((tile & 1) * 2 + (is_v ? 1 : 0)) * CTA_KV + row0;
          if (full) {
#pragma unroll
            for (int it = 0; it < CTA_KV / ROW_STEP; ++it)
              cp_async_16(dst_at(it), base_h + tab[it * ROW_STEP], true);
          } else {
#pragma unroll
            for (int it = 0; it < CTA_KV / ROW_STEP; ++it)
              cp_async_16(dst_at(it), base_h + tab[it * ROW_STEP], it * ROW_STEP < rows_left);
          }
          return;
        }
        int page[CTA_KV / ROW_STEP], off[CTA_KV / ROW_STEP];
        if (full && p.page_size >= ROW_STEP) {
          // The rows are ROW_STEP apart: one division, then each step crosses at most one
          // page boundary (page ids all in flight before the copies).
          const int j0 = kv0 + row0;
          const int pg0 = (int)p.page_div.div((uint32_t)j0);
          const int32_t *pt = pages_of_req + pg0;
          int o = j0 - pg0 * p.page_size;
#pragma unroll
          for (int it = 0; it < CTA_KV / ROW_STEP; ++it) {
            off[it] = o;
            page[it] = *pt;
            o += ROW_STEP;
            const bool cross = o >= p.page_size;
            o -= cross ? p.page_size : 0;
            pt += cross ? 1 : 0;
          }
        } else {
#pragma unroll
          for (int it = 0; it < CTA_KV / ROW_STEP; ++it) {  // page lookups first (in flight)
            const int j = min(kv0 + row0 + it * ROW_STEP, kv_hi - 1);
            const int pg = (int)p.page_div.div((uint32_t)j);
            off[it] = j - pg * p.page_size;
            page[it] = pages_of_req[pg];
          }
        }
#pragma unroll
        for (int it = 0; it < CTA_KV / ROW_STEP; ++it) {
          const bool valid = full || it * ROW_STEP < rows_left;
          const char *src = base_h + (int64_t)page[it] * s_page + (int64_t)off[it] * s_tok;
          cp_async_16(dst_at(it), valid ? src : base, valid);
        }
      }
    };
    // PAGE_TABLE (paged form): each thread looks up the pages of rows tid, tid + THREADS, ...
    // of a KV tile early (resolve_rows: the loads stay in flight) and stores their K and V
    // byte offsets in the table late (publish_rows, before the barrier that precedes the
    // tile's first copy), so the copies of both K and V read one offset per row.
    constexpr int TABLE_ROWS = (CTA_KV + THREADS - 1) / THREADS;
    int res_page[TABLE_ROWS], res_off[TABLE_ROWS];
    auto resolve_rows = [&](int tile) {
      if (PAGE_TABLE && p.paged) {
#pragma unroll
        for (int i = 0; i < TABLE_ROWS; ++i) {
          const int j = min(kv_lo + tile * CTA_KV + tid + i * THREADS, kv_hi - 1);
          const int pg = (int)p.page_div.div((uint32_t)j);
          res_off[i] = j - pg * p.page_size;
          res_page[i] = p.kv_indices[kv_page_begin + pg];
        }
      }
    };
    auto publish_rows = [&](int tile) {
      if (PAGE_TABLE && p.paged) {
        int64_t *tab = page_table + (tile & 1) * 2 * CTA_KV;
#pragma unroll
        for (int i = 0; i < TABLE_ROWS; ++i) {
          const int r = tid + i * THREADS;
          if (r < CTA_KV) {
            tab[r] = (int64_t)res_page[i] * k_s_page + (int64_t)res_off[i] * k_s_tok;
            tab[CTA_KV + r] = (int64_t)res_page[i] * v_s_page + (int64_t)res_off[i] * v_s_tok;
          }
        }
      }
    };
    // fp8: widen the raw tile into the 2-byte swizzled tile.
    auto widen_tile = [&](bool is_v) {
      if (KVK != FI_KV_SAME) {
        const unsigned char *raw = is_v ? v_raw : k_raw;
        DT *dst = is_v ? v_smem : k_smem;
#pragma unroll
        for (int it = 0; it < (CTA_KV * HD / 16 + THREADS - 1) / THREADS; ++it) {
          int idx = tid + it * THREADS;
          if (idx < CTA_KV * HD / 16) {
            int row = idx / (HD / 16), c = idx % (HD / 16);
            uint4 in = *reinterpret_cast<const uint4 *>(raw + row * HD + c * 16);
            uint32_t w[4] = {in.x, in.y, in.z, in.w};
            uint32_t out[8];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              out[2 * k] = fp8x2_widen<DT, KVK>((uint16_t)(w[k] & 0xffff));
              out[2 * k + 1] = fp8x2_widen<DT, KVK>((uint16_t)(w[k] >> 16));
            }
            *reinterpret_cast<uint4 *>(dst + kv_off(row, 2 * c)) =
                make_uint4(out[0], out[1], out[2], out[3]);
            *reinterpret_cast<uint4 *>(dst + kv_off(row, 2 * c + 1)) =
                make_uint4(out[4], out[5], out[6], out[7]);
          }
        }
      }
    };
    // RoPE (LLaMA, rotate halves) in place on a smem tile: row r has its key's position
    // (K: segment r / BSR_SEG's first key + r % BSR_SEG) or its token's position (Q).
    auto rope_tile = [&](DT *tile, int rows, bool is_q, const int (&seg_key)[BSR_SEGS]) {
      for (int idx = tid; idx < rows * (HD / 2); idx += THREADS) {
        int row = idx / (HD / 2), d = idx % (HD / 2);
        int pos;
        if (is_q) {
          int pr = min(chunk + row, packed_end - 1);
          pos = q_pos_shift + (int)p.group_div.div((uint32_t)pr);
        } else {
          const bool second = BSR_SEGS == 2 && row >= BSR_SEG;
          pos = (second ? seg_key[BSR_SEGS - 1] : seg_key[0]) + row - (second ? BSR_SEG : 0);
        }
        float freq = p.rope_rcp_scale * exp2f(-(2.f * d / HD) * p.rope_log2_theta);
        float sn, cs;
        sincos_reduced((float)pos * freq, &sn, &cs);
        DT *x0 = tile + (is_q ? q_off(row, d >> 3) : kv_off(row, d >> 3)) + (d & 7);
        DT *x1 = tile + (is_q ? q_off(row, (d + HD / 2) >> 3) : kv_off(row, (d + HD / 2) >> 3)) +
                 (d & 7);
        float a = to_float(*x0), b = to_float(*x1);
        *x0 = from_float<DT>(a * cs - b * sn);
        *x1 = from_float<DT>(b * cs + a * sn);
      }
    };

    // ---- accumulators
    float o[MMA_Q][NB_D][4];
    float m_run[MMA_Q][2], l_run[MMA_Q][2];
#pragma unroll
    for (int mq = 0; mq < MMA_Q; ++mq) {
#pragma unroll
      for (int nb = 0; nb < NB_D; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mq][nb][e] = 0.f;
      m_run[mq][0] = m_run[mq][1] = -INFINITY;
      l_run[mq][0] = l_run[mq][1] = 0.f;
    }

    // Block-sparse: the plan tiles of KV tiles `tile` and tile + 1 in registers; the one of
    // tile + 2 is loaded at the top of tile's step, so no copy waits for its descriptor.
    int4 pt_cur = num_tiles > 0 ? plan_tile(0) : make_int4(0, 0, 0, 0);
    int4 pt_nxt = num_tiles > 1 ? plan_tile(1) : pt_cur;
    // Pipeline (two barriers per KV tile): V(tile) loads while S = Q K(tile)^T and the
    // softmax run; K(tile+1) loads while O += P V(tile) runs. RING: K and V of tile+1 load
    // into the other slot while all of tile runs (one barrier per tile).
    if (num_tiles > 0) {
      if (PAGE_TABLE && p.paged) {
        resolve_rows(0);
        publish_rows(0);
        sync_block();  // (also: every thread is past the previous chunk's table reads)
      }
      load_kv_tile(0, false, 0, pt_cur);
      if (RING && !OVERLAP) load_kv_tile(0, true, 0, pt_cur);
    }
    uint32_t pa_prev[CTA_KV / 16][4];  // OVERLAP: P of the previous tile (wgmma A operand)
    // wgmma: O += P V for one KV tile and wait for it. One m64 x HD x 16 wgmma per 16 KV
    // rows: P from registers, V MN-major (rows are the reduction dimension, head dims
    // contiguous in 64-column slabs) from the V tile whose descriptor base is v_lo.
    auto pv_wgmma = [&](const uint32_t (&pm)[CTA_KV / 16][4], uint32_t v_lo) {
      if constexpr (WG) {  // (HD 256 has no wgmma form: no reference outside the tier)
        fi_wgmma::fence_regs(o[0]);
        fi_wgmma::fence();
#pragma unroll
        for (int kb = 0; kb < CTA_KV / 16; ++kb)
          fi_wgmma::Wgmma<DT, HD>::rs(o[0], pm[kb],
                                      fi_wgmma::desc_at(v_lo, kb * 16 * 128, 1024));
        fi_wgmma::commit();
        fi_wgmma::wait<0>();
        fi_wgmma::fence_regs(o[0]);
      }
    };
    cp_async_commit();
    if (p.pos_encoding == FI_POS_ROPE_LLAMA) {
      cp_async_wait<1>();
      sync_block();
      const int none[BSR_SEGS] = {};
      rope_tile(q_smem, CTA_Q, true, none);
      sync_block();
    }

    for (int tile = 0; tile < num_tiles; ++tile) {
      const int kv0 = kv_lo + tile * CTA_KV;
      const int slot = RING ? (tile & 1) : 0;
      int seg_key[BSR_SEGS], seg_len[BSR_SEGS];
      tile_segments(tile, pt_cur, seg_key, seg_len);
      // The key of this thread's accumulator column nb * 8 + 2 * t4 + (e & 1): offset `off`
      // into segment `sg` (kept when off < seg_len[sg]); constants once nb and e unroll.
      auto column_key = [&](int nb, int e, int &sg, int &off) {
        sg = nb * 8 / BSR_SEG;
        off = nb * 8 - sg * BSR_SEG + 2 * t4 + (e & 1);
        return seg_key[sg] + off;
      };
      const int4 pt_aft = tile + 2 < num_tiles ? plan_tile(tile + 2) : pt_nxt;
      DT *k_cur = k_smem + slot * SLOT_ELEMS, *v_cur = v_smem + slot * SLOT_ELEMS;
      cp_async_wait<0>();  // Q and K(tile) (RING: and V(tile)) have landed
      sync_block();     // ... for every thread; every warp is done with V(tile-1)
      if (OVERLAP) {
        if (tile + 1 < num_tiles) load_kv_tile(tile + 1, false, slot ^ 1, pt_nxt);
        load_kv_tile(tile, true, slot, pt_cur);
      } else if (RING) {
        if (tile + 1 < num_tiles) {
          load_kv_tile(tile + 1, false, slot ^ 1, pt_nxt);
          load_kv_tile(tile + 1, true, slot ^ 1, pt_nxt);
        }
      } else {
        load_kv_tile(tile, true, 0, pt_cur);
        if (tile + 1 < num_tiles) resolve_rows(tile + 1);  // page ids in flight under S
      }
      cp_async_commit();
      if (KVK != FI_KV_SAME) {
        widen_tile(false);
        sync_block();
      }
      if (p.pos_encoding == FI_POS_ROPE_LLAMA) {
        rope_tile(k_cur, CTA_KV, false, seg_key);
        sync_block();
      }

      // ---- S = Q K^T
      float s[MMA_Q][NB_KV][4];
      if (!WG)  // (wgmma overwrites S in its first step)
#pragma unroll
      for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
        for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mq][nb][e] = 0.f;
      if constexpr (WG) {
        // One m64 x CTA_KV x 16 wgmma per 16 head dims: Q (this warpgroup's 64 rows) and K
        // both K-major from the swizzled slabs; 32 bytes along a 128-byte row per step.
        // Descriptors: the chunk's Q base and the slot's K base plus constant offsets.
        const uint32_t q_lo = wg_q_desc_lo, k_lo = slot_desc_lo(wg_kv_desc_lo, slot);
        // OVERLAP: the descriptors of P(tile-1) V(tile-1), computed before the warpgroup's
        // fence (ptxas serialises wgmmas whose inputs are defined inside the stage).
        uint64_t v_prev_desc[OVERLAP ? CTA_KV / 16 : 1];
        if (OVERLAP) {
          const uint32_t v_lo = slot_desc_lo(wg_v_desc_lo, slot ^ 1);
#pragma unroll
          for (int kb = 0; kb < (OVERLAP ? CTA_KV / 16 : 1); ++kb)
            v_prev_desc[kb] = fi_wgmma::desc_at(v_lo, kb * 16 * 128, 1024);
#pragma unroll
          for (int kb = 0; kb < (OVERLAP ? CTA_KV / 16 : 1); ++kb)  // (kept above the fence)
            asm volatile("" : "+l"(v_prev_desc[kb])::"memory");
        }
        fi_wgmma::fence();
        wg_qk_issue<DT, HD, CTA_Q, CTA_KV>(s[0], q_lo, k_lo);
        fi_wgmma::commit();
        fi_wgmma::wait<0>();
        fi_wgmma::fence_regs(s[0]);
        if (OVERLAP && tile > 0) {
          // O += P(tile-1) V(tile-1) runs while this warpgroup computes the softmax of S.
          fi_wgmma::fence();
#pragma unroll
          for (int kb = 0; kb < CTA_KV / 16; ++kb)
            fi_wgmma::Wgmma<DT, HD>::rs(o[0], pa_prev[kb], v_prev_desc[kb]);
          fi_wgmma::commit();
        }
      } else {
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        // Swizzled addresses: the lane part of each base carries (chunk ^ row) in bits 4..6,
        // so chunk 2*kk is one XOR with a constant plus an immediate offset.
        const uint32_t x_c = ((2 * kk) & 7) << 4, add_c = ((2 * kk) >> 3) << 7;
        uint32_t a[MMA_Q][4];
#pragma unroll
        for (int mq = 0; mq < MMA_Q; ++mq)
          ldmatrix_x4_addr(a[mq], ((q_lane_addr ^ x_c) + add_c) + mq * 16 * HD * 2);
#pragma unroll
        for (int nb2 = 0; nb2 < NB_KV / 2; ++nb2) {
          uint32_t b[4];
          ldmatrix_x4_addr(b, ((k_lane_addr ^ x_c) + add_c) + nb2 * 16 * HD * 2);
#pragma unroll
          for (int mq = 0; mq < MMA_Q; ++mq) {
            MmaOp<DT>::run(s[mq][2 * nb2], a[mq], b[0], b[1]);
            MmaOp<DT>::run(s[mq][2 * nb2 + 1], a[mq], b[2], b[3]);
          }
        }
      }
      }

      // ---- logits transform and masks. Tiles whose segments keep every key and that no
      // causal diagonal (nor window edge) crosses take raw logits, the scale folded into
      // the softmax's FFMA; of the others, the plain and BSR instances mask the cut keys
      // (tile_partial / tile_diag, tile_cut) and the one with the extras (EXTRAS) takes each
      // pair to the log2 domain here, as it does every tile where a soft cap, ALiBi or
      // custom mask is in use (pair_work).
      const bool tile_partial = kv0 + CTA_KV > kv_hi;
      const bool tile_diag = p.causal && (kv0 + CTA_KV - 1 > q_pos_shift + t_lo);
      int seg_lo = seg_key[0], seg_hi = seg_key[0] + BSR_SEG - 1;
      bool whole = seg_len[0] >= BSR_SEG;
#pragma unroll
      for (int sg = 1; sg < BSR_SEGS; ++sg) {
        seg_lo = min(seg_lo, seg_key[sg]);
        seg_hi = max(seg_hi, seg_key[sg] + BSR_SEG - 1);
        whole = whole && seg_len[sg] >= BSR_SEG;
      }
      const bool tile_cut = !whole || (p.causal && seg_hi > q_pos_shift + t_lo);
      const bool pair_work =
          EXTRAS && (p.logits_soft_cap > 0.f || p.pos_encoding == FI_POS_ALIBI ||
                     p.custom_mask || tile_cut ||
                     (p.window_left >= 0 && seg_lo < q_pos_shift + t_hi - p.window_left));
      if (pair_work) {
#pragma unroll
        for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
          for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int hh = e >> 1;
              int sg, off;
              const int j = column_key(nb, e, sg, off);
              const int qpos = q_pos_shift + row_tok[mq][hh];
              float x = s[mq][nb][e] * p.sm_scale;
              if (p.pos_encoding == FI_POS_ALIBI) x += row_slope[mq][hh] * (float)(j - qpos);
              if (p.logits_soft_cap > 0.f) x = p.logits_soft_cap * tanhf(x * p.soft_cap_rcp);
              x *= 1.4426950408889634f;
              bool keep = off < seg_len[sg];
              if (p.causal) keep = keep && j <= qpos;
              if (p.window_left >= 0) keep = keep && j >= qpos - p.window_left;
              if (p.custom_mask && keep) {
                int64_t bit = (int64_t)p.mask_indptr[req] + (int64_t)row_tok[mq][hh] * kv_len + j;
                keep = (p.mask_bits[bit >> 3] >> (bit & 7)) & 1;
              }
              s[mq][nb][e] = keep ? x : -INFINITY;
            }
      } else if (!EXTRAS && !BSR && (tile_partial || tile_diag)) {  // (raw logits)
#pragma unroll
        for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
          for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int j = kv0 + nb * 8 + 2 * t4 + (e & 1);
              const int lim = p.causal ? min(kv_hi - 1, q_pos_shift + row_tok[mq][e >> 1])
                                       : kv_hi - 1;
              s[mq][nb][e] = j <= lim ? s[mq][nb][e] : -INFINITY;
            }
      } else if (BSR && tile_cut) {  // (raw logits)
#pragma unroll
        for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
          for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              int sg, off;
              const int j = column_key(nb, e, sg, off);
              const bool keep = off < seg_len[sg] &&
                                (!p.causal || j <= q_pos_shift + row_tok[mq][e >> 1]);
              s[mq][nb][e] = keep ? s[mq][nb][e] : -INFINITY;
            }
      }

      // ---- online softmax (log2 domain: x * c_log2 is the scaled logit / ln 2)
      const float c_log2 = pair_work ? 1.f : p.sm_scale_log2;
      float row_scale[MMA_Q][2];
      bool any_rescale = false;
#pragma unroll
      for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          row_scale[mq][hh] = online_softmax_row(s[mq], hh, m_run[mq][hh], l_run[mq][hh],
                                                 c_log2, 0.f, 0.f, SOFTMAX_SLACK_16BIT);
          any_rescale |= row_scale[mq][hh] != 1.f;
        }
      // P as the A operand of the PV mma (half the registers of the fp32 S, before the
      // K(tile+1) gather below needs its address registers).
      uint32_t pa[MMA_Q][CTA_KV / 16][4];
#pragma unroll
      for (int mq = 0; mq < MMA_Q; ++mq) pack_p<DT>(s[mq], pa[mq]);
      if (OVERLAP) {
        // P(tile-1) V(tile-1) has landed in O (and no longer reads pa_prev). Unconditional:
        // ptxas cannot correlate a conditional wait with the conditional issue.
        fi_wgmma::wait<0>();
        fi_wgmma::fence_regs(o[0]);
#pragma unroll
        for (int kb = 0; kb < CTA_KV / 16; ++kb)
#pragma unroll
          for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(pa_prev[kb][e])::"memory");
      }
      // Rescale O only where some row's maximum grew past the slack.
      if (__any_sync(0xffffffffu, any_rescale)) {
#pragma unroll
        for (int mq = 0; mq < MMA_Q; ++mq) rescale_o(o[mq], row_scale[mq]);
      }

      if (!RING) {
      if (tile + 1 < num_tiles) publish_rows(tile + 1);  // read after the barrier below
      cp_async_wait<0>();  // V(tile) has landed
      sync_block();     // ... for every thread; every warp is done with K(tile)
      if (tile + 1 < num_tiles) {
        load_kv_tile(tile + 1, false, 0, pt_nxt);
        cp_async_commit();
      }
      }
      if (KVK != FI_KV_SAME) {
        widen_tile(true);
        sync_block();
      }

      // ---- O += P V
      if constexpr (OVERLAP) {
#pragma unroll
        for (int kb = 0; kb < CTA_KV / 16; ++kb)
#pragma unroll
          for (int e = 0; e < 4; ++e) pa_prev[kb][e] = pa[0][kb][e];  // issued next tile
      } else if constexpr (WG) {
        pv_wgmma(pa[0], slot_desc_lo(wg_v_desc_lo, slot));
      } else {
#pragma unroll
      for (int kb = 0; kb < CTA_KV / 16; ++kb) {
#pragma unroll
        for (int db2 = 0; db2 < NB_D / 2; ++db2) {
          uint32_t b[4];
          const uint32_t x_c = ((2 * db2) & 7) << 4, add_c = ((2 * db2) >> 3) << 7;
          ldmatrix_x4_trans_addr(b, ((v_lane_addr ^ x_c) + add_c) + kb * 16 * HD * 2);
#pragma unroll
          for (int mq = 0; mq < MMA_Q; ++mq) {
            MmaOp<DT>::run(o[mq][2 * db2], pa[mq][kb], b[0], b[1]);
            MmaOp<DT>::run(o[mq][2 * db2 + 1], pa[mq][kb], b[2], b[3]);
          }
        }
      }
      }
      pt_cur = pt_nxt;
      pt_nxt = pt_aft;
    }
    cp_async_wait<0>();
    sync_block();
    if constexpr (OVERLAP) {
      if (num_tiles > 0)  // the last tile's P V (V landed: waited above)
        pv_wgmma(pa_prev, slot_desc_lo(wg_v_desc_lo, (num_tiles - 1) & 1));
    }

    // ---- finalize: full row sums, normalise, write
#pragma unroll
    for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float l = l_run[mq][hh];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        l_run[mq][hh] = l;
      }

    if (wu.partial_row < 0) {
      // Stage O through the Q tile (each warp touches only its own rows) for 16-byte stores.
#pragma unroll
      for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const float l = l_run[mq][hh];
          const float inv = l > 0.f ? p.v_scale / l : 0.f;
          const int row = warp * 16 * MMA_Q + mq * 16 + g + hh * 8;
#pragma unroll
          for (int nb = 0; nb < NB_D; ++nb) {
            uint32_t v2 = MmaOp<DT>::pack(o[mq][nb][2 * hh] * inv, o[mq][nb][2 * hh + 1] * inv);
            *reinterpret_cast<uint32_t *>(q_smem + q_off(row, nb) + 2 * t4) = v2;
          }
          if (p.lse != nullptr && t4 == 0 && chunk + row < packed_end) {
            int pr = chunk + row;
            const int tok = (int)p.group_div.div((uint32_t)pr);
            int h = kv_head * group + pr - tok * group;
            float lse = l > 0.f ? (m_run[mq][hh] + __log2f(l)) * 0.6931471805599453f : -INFINITY;
            p.lse[(int64_t)(q_tok_begin + tok) * p.lse_stride_n +
                  (int64_t)h * p.lse_stride_h] = lse;
          }
        }
      sync_block();
#pragma unroll
      for (int it = 0; it < CTA_Q * CH / THREADS; ++it) {
        int idx = tid + it * THREADS;
        int row = idx / CH, c = idx % CH;
        int pr = chunk + row;
        if (pr < packed_end) {
          // (a multiply-high division: a plain / and % cost ~40 instructions per row here)
          const int tok = (int)p.group_div.div((uint32_t)pr), h = kv_head * group + pr - tok * group;
          DT *dst = reinterpret_cast<DT *>(p.o) + (int64_t)(q_tok_begin + tok) * p.o_stride_n +
                    (int64_t)h * p.o_stride_h + c * 8;
          *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(q_smem + q_off(row, c));
        }
      }
      sync_block();  // the next chunk overwrites the Q tile
    } else {
      // Split-KV: fp32 partial rows + natural-log LSE for the merge.
#pragma unroll
      for (int mq = 0; mq < MMA_Q; ++mq)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int row = warp * 16 * MMA_Q + mq * 16 + g + hh * 8;
          if (chunk + row >= packed_end) continue;
          const int pr = chunk + row;
          const int tok = (int)p.group_div.div((uint32_t)pr);
          const int h = kv_head * group + pr - tok * group;
          const int64_t prow = (int64_t)wu.partial_row + (tok - wu.qo_start);
          const float l = l_run[mq][hh];
          const float inv = l > 0.f ? p.v_scale / l : 0.f;
          float *dst = p.partial_o + (prow * p.num_qo_heads + h) * HD;
#pragma unroll
          for (int nb = 0; nb < NB_D; ++nb)
            *reinterpret_cast<float2 *>(dst + nb * 8 + 2 * t4) =
                make_float2(o[mq][nb][2 * hh] * inv, o[mq][nb][2 * hh + 1] * inv);
          if (t4 == 0)
            p.partial_lse[prow * p.num_qo_heads + h] =
                l > 0.f ? (m_run[mq][hh] + __log2f(l)) * 0.6931471805599453f : -INFINITY;
        }
      sync_block();  // the next chunk overwrites the Q tile
    }
  }
  }  // units
}

// Host-side launcher of one variant.
template <int HD, int CTA_Q, int CTA_KV, typename DT, int KVK, bool EXTRAS, bool WG = false,
          bool BSR = false>
cudaError_t launch_prefill(const PrefillParams &p, int num_work_units, cudaStream_t stream) {
  using S = Shape<HD, CTA_Q, CTA_KV, WG>;
  using L = SmemLayout<HD, CTA_Q, CTA_KV, KVK, WG>;
  auto kernel = prefill_kernel<HD, CTA_Q, CTA_KV, DT, KVK, EXTRAS, WG, BSR>;
  static bool configured = false;  // benign race: every caller sets the same value
  if (!configured) {
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::TOTAL);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  int grid_x = num_work_units > 0 ? num_work_units : 1;
  if (grid_x > 65535 * 16) grid_x = 65535 * 16;
  dim3 grid(grid_x, p.num_kv_heads);
  return fi::launch_on(stream, p.pdl != 0, grid, dim3(S::THREADS), L::TOTAL, kernel, p);
}

}  // namespace fi_prefill

#endif
