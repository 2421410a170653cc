// kernels/cuda/decode.cuh -- batch paged decode kernels (one query row per request).
//
// Work split. The planner's work units (request, KV chunk [kv_start, kv_end)) go on grid.x
// (a grid-stride loop over the unit count read from the workspace, so a CUDA graph
// captured with one plan stays correct after re-planning); grid.y enumerates (kv head,
// head chunk): one CTA computes `hg` query heads that share one KV head, so each K/V
// token of that head is read from device memory once per head chunk (once in all when
// hg == group). A unit with partial_row >= 0 writes an fp32 partial (o, lse) row to the
// workspace; merge.cu combines the chunks in order.
//
// Pipeline. K and V tiles of `T = kv_tile` tokens are gathered through kv_indices with
// 16-byte cp.async (zero fill past the end), S stages deep. The page id of each token of
// a future tile is looked up one iteration ahead into a small shared array, so the copy
// issue never waits on the index load. One __syncthreads per tile (two when a transform
// pass converts fp8 or applies RoPE to K for the tensor-core kernel).
//
// Two compute paths:
//  - CUDA cores (small groups): thread (x, y, z) = (8 dims of head_dim, head, token
//    slice); q.k partial dots are reduced over the D/8 lanes of x with xor shuffles; each
//    (y, z) keeps an online-softmax state (m, d, o[8]) in registers; the z slices merge
//    through shared memory at the end.
//  - Tensor cores (group >= 4): the CTA's heads are the 16 rows of mma.sync m16n8k16
//    (zero rows past hg); each warp takes 16-token sub-tiles: S = Q K^T from ldmatrix'd
//    K, online softmax on the accumulator fragments, P (16-bit) times V through
//    ldmatrix.trans; the warps merge in shared memory at the end.
//  - Tensor cores with per-warp pipelines (decode_tcw_kernel, the default for 16-bit KV
//    without RoPE, head_dim <= 128): each warp streams its own 16-token sub-tiles through
//    its own cp.async ring with __syncwarp only, no block barrier per tile. With <= 8
//    heads per CTA the heads go on the mma N side instead (S^T = K Q^T, O^T = V^T P^T:
//    the tokens are the 16 rows, none of them padding); page-aligned units copy each
//    sub-tile from one page id with a fixed stride per lane.
//  - Tensor cores, warp-specialised (decode_tws_kernel, sm_90, the default for page-aligned
//    plans of that kind): the same heads-on-N math in consumer warps, fed by a producer
//    warp through a ring of TMA tensor copies and mbarriers, so the bytes in flight no
//    longer follow each warp's instruction chain.
//
// Launch order: by default the (kv head, head chunk) index varies fastest (1-D grid), so
// the CTAs of one unit run together on neighbouring head rows of the same pages.
// Measured on an H200 (bench/NOTES.md, v6): two pipeline stages and as many resident CTAs
// per SM as fit beat deeper pipelines on every row.
//
// Memory traffic per unit: q (hg x D, 16-bit) once, K and V of the chunk once (the
// bytes of one KV head), o (hg x D) once or an fp32 partial row; page ids once per tile.
#ifndef FI_CUDA_DECODE_CUH
#define FI_CUDA_DECODE_CUH

#include <atomic>

#include <cuda.h>

#include "common.cuh"

namespace fi {

struct TwsMaps;

struct DecodeParams {
  const void *q;
  int64_t q_sb, q_sh;  // element strides of q [batch, heads, D]
  void *o;
  int64_t o_sb, o_sh;
  float *lse;          // may be NULL
  int64_t lse_sb, lse_sh;
  const uint8_t *k, *v;
  int64_t k_sp, k_sn, k_sh;  // element strides: page, position in page, head
  int64_t v_sp, v_sn, v_sh;
  const int32_t *kv_indptr, *kv_indices, *kv_last_page_len;
  const fi_work_unit *work;
  const int32_t *device_num_units;  // NULL: use num_units
  int32_t num_units;
  float *partial_o, *partial_lse;
  int32_t num_qo_heads, num_kv_heads, group, heads_per_cta, page_size;
  int32_t kv_tile, stages;
  float scale;    // sm_scale * k_scale
  float v_scale;
  float soft_cap; // 0: off
  int32_t window_left;
  int32_t pos_encoding;  // FI_POS_*
  float rope_rcp_scale, rope_log2_theta;
  int32_t head_fast;  // 1: the launch is 1-D, (kv head, head chunk) fastest (see block_coords)
  int32_t grid_heads; // kv heads x head chunks (the grid.y extent of the 2-D launch)
  int32_t warp_pipe;  // 1: tensor cores with per-warp pipelines (decode_tcw_kernel) where
                      // it applies (16-bit KV, no RoPE, head_dim <= 128)
  int32_t single_slots;  // 1: with heads_n, page-aligned plans run decode_tcw_kernel with
                         // one K and one V slot per warp (ONE)
  int32_t heads_n;    // 1: decode_tcw_kernel puts the heads on the mma N side where
                      // heads_per_cta <= 8 (tcn_scores, tcn_pv)
  // Launch-side only (the kernels ignore them): the device's SM count, the warps per CTA
  // of decode_tcw_kernel / decode_tws_kernel (0: chosen by tcw_warps_for / launch_tws) and
  // a cap on decode_tws_kernel's ring slots (0: as many as fit).
  int32_t sm_count, tcw_warps, tws_slots;
  int32_t smem_per_sm, smem_reserved;  // the device's shared memory per SM, reserved per block
  int32_t pdl;         // 1: launched with programmatic stream serialization (pdl_enter)
  // Not NULL: heads-on-N plans with page sizes a multiple of 16 run decode_tws_kernel with
  // these tensor maps (the device and the build have sm_90; decode.cu encodes them). A host
  // pointer, read by the launcher only.
  const TwsMaps *tws_maps;
};

// This CTA's (unit slot, head chunk index) and the unit stride. head_fast: the CTAs of one
// unit's kv heads are adjacent in launch order, so they run together and read neighbouring
// 256-byte head rows of the same pages (DRAM row locality in NHD caches).
struct BlockCoords {
  int unit0, unit_stride, hy;
};
__device__ __forceinline__ BlockCoords block_coords(const DecodeParams &p) {
  BlockCoords c;
  if (p.head_fast) {
    c.hy = (int)blockIdx.x % p.grid_heads;
    c.unit0 = (int)blockIdx.x / p.grid_heads;
    c.unit_stride = (int)gridDim.x / p.grid_heads;
  } else {
    c.hy = (int)blockIdx.y;
    c.unit0 = (int)blockIdx.x;
    c.unit_stride = (int)gridDim.x;
  }
  return c;
}

// --------------------------------------------------------------- shared helpers -------

template <typename T> struct is_bf16 { static constexpr bool value = false; };
template <> struct is_bf16<bf16> { static constexpr bool value = true; };

// The rounding residue x - T(x) of 8 floats, stored as T (the "lo" half of a hi + lo split).
template <typename T>
__device__ __forceinline__ void store_lo8(void *p, const float *x) {
  float r[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) r[e] = x[e] - to_float<T>(from_float<T>(x[e]));
  vec8<T>::store(p, r);
}

__device__ __forceinline__ int request_kv_len(const DecodeParams &p, int b) {
  int pages = p.kv_indptr[b + 1] - p.kv_indptr[b];
  return pages == 0 ? 0 : (pages - 1) * p.page_size + p.kv_last_page_len[b];
}

// The transform of a scaled logit, in the host backend's order: ALiBi bias, then soft cap.
__device__ __forceinline__ float logits_transform(const DecodeParams &p, float s, int pos,
                                                  int q_pos, float slope) {
  if (p.pos_encoding == FI_POS_ALIBI) s += slope * (float)(pos - q_pos);
  if (p.soft_cap > 0.f) s = p.soft_cap * tanhf(s / p.soft_cap);
  return s;
}

// RoPE frequencies of dims [d0, d0+8): rope_rcp_scale * theta^(-2 i / D), i = dim % (D/2).
// A thread's dims stay fixed across tokens: computed once per thread, not per row.
template <int D>
__device__ __forceinline__ void rope_freq8(const DecodeParams &p, int d0, float *freq) {
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    int i = (d0 + e) % (D / 2);
    freq[e] = p.rope_rcp_scale * exp2f(-(2.0f * (float)i / (float)D) * p.rope_log2_theta);
  }
}

// Rotate-halves of 8 dims [d0, d0+8) by the angles whose cosines and sines are given
// (partner: dims [(d0 + D/2) % D, ...)).
template <int D>
__device__ __forceinline__ void rotate8(float *v, const float *partner, int d0, const float *cs,
                                        const float *sn) {
#pragma unroll
  for (int e = 0; e < 8; ++e)
    v[e] = d0 < D / 2 ? v[e] * cs[e] - partner[e] * sn[e] : v[e] * cs[e] + partner[e] * sn[e];
}

// RoPE (rotate halves) of 8 consecutive dims [d0, d0+8) at position pos, frequencies given.
template <int D>
__device__ __forceinline__ void rope8(float *v, const float *partner, int d0, int pos,
                                      const float *freq) {
  float sn[8], cs[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) sincos_reduced((float)pos * freq[e], &sn[e], &cs[e]);
  rotate8<D>(v, partner, d0, cs, sn);
}

// q[b, head, d0 .. d0+8) as float, RoPE'd at q_pos and multiplied by qscale.
template <typename T, int D>
__device__ __forceinline__ void load_q8(const DecodeParams &p, int b, int head, int d0,
                                        int q_pos, float qscale, float *out) {
  const T *q = (const T *)p.q + b * p.q_sb + head * p.q_sh;
  vec8<T>::load(q + d0, out);
  if (p.pos_encoding == FI_POS_ROPE_LLAMA) {
    float partner[8], freq[8];
    vec8<T>::load(q + (d0 + D / 2) % D, partner);
    rope_freq8<D>(p, d0, freq);
    rope8<D>(out, partner, d0, q_pos, freq);
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] *= qscale;
}

// Element offset of token `pos` of request b in K (and V) for head h; -1 when pos >= hi.
struct TokenOffsets {
  long long k, v;
};
__device__ __forceinline__ TokenOffsets no_token() {
  TokenOffsets t;
  t.k = -1;
  t.v = -1;
  return t;
}
__device__ __forceinline__ TokenOffsets token_offsets(const DecodeParams &p, int page_begin,
                                                      int pos, int hi, int kv_head) {
  if (pos >= hi) return no_token();
  TokenOffsets t;
  int page = p.kv_indices[page_begin + pos / p.page_size];
  int in_page = pos % p.page_size;
  t.k = (long long)page * p.k_sp + (long long)in_page * p.k_sn + (long long)kv_head * p.k_sh;
  t.v = (long long)page * p.v_sp + (long long)in_page * p.v_sn + (long long)kv_head * p.v_sh;
  return t;
}

__device__ __forceinline__ void cp_async_wait_dyn(int pending) {
  switch (pending) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    case 3: cp_async_wait<3>(); break;
    case 4: cp_async_wait<4>(); break;
    case 5: cp_async_wait<5>(); break;
    default: cp_async_wait<6>(); break;
  }
}

// Tiles prefetched into L2 beyond the cp.async frontier (prefetch.global.L2). Measured
// on an H200 (bench/NOTES.md, v4): 64 KiB per CTA made every decode row 5-20% slower, so
// it is off (0); the mechanism stays for other GPUs / tile shapes.
static inline __host__ __device__ int decode_l2_tiles(int D, int kv_bytes, int kv_tile) {
  (void)D, (void)kv_bytes, (void)kv_tile;
  return 0;
}

// The block-wide tile pipeline of the CUDA-core and tensor-core kernels. Shared memory: `stages` raw K buffers and
// `stages` raw V buffers of T rows of `row_bytes`, then nslot = stages + l2 + 1 offset
// slots of T (tile j's token offsets live in slot j % nslot).
struct Pipe {
  uint8_t *k_raw, *v_raw;
  TokenOffsets *slots;
  int row_bytes, tile_bytes, T, stages, l2, nslot;
  int page_begin, lo, hi, kv_head, num_tiles;
};

// Copies the 16-byte chunk `part` of token `tok`'s K and V rows (offsets o) into the K and
// V tiles kd, vd of `row_bytes` rows; zero fill when the token is past the end (o.k < 0).
template <typename KVT>
__device__ __forceinline__ void cp_async_kv_chunk(const DecodeParams &p, uint8_t *kd, uint8_t *vd,
                                                  int row_bytes, TokenOffsets o, int tok,
                                                  int part) {
  bool ok = o.k >= 0;
  const uint8_t *ks = p.k + (ok ? o.k : 0) * (long long)sizeof(KVT) + part * 16;
  const uint8_t *vs = p.v + (ok ? o.v : 0) * (long long)sizeof(KVT) + part * 16;
  cp_async16(kd + tok * row_bytes + part * 16, ks, ok);
  cp_async16(vd + tok * row_bytes + part * 16, vs, ok);
}

template <typename KVT, int D>
__device__ __forceinline__ void pipe_issue(const DecodeParams &p, const Pipe &pp, int tile) {
  constexpr int CPT = D * (int)sizeof(KVT) / 16;  // 16-byte chunks per token row
  if (tile < pp.num_tiles) {
    const TokenOffsets *offs = pp.slots + (tile % pp.nslot) * pp.T;
    uint8_t *kd = pp.k_raw + (tile % pp.stages) * pp.tile_bytes;
    uint8_t *vd = pp.v_raw + (tile % pp.stages) * pp.tile_bytes;
    for (int c = threadIdx.x; c < pp.T * CPT; c += blockDim.x) {
      int tok = c / CPT, part = c % CPT;
      cp_async_kv_chunk<KVT>(p, kd, vd, pp.row_bytes, offs[tok], tok, part);
    }
  }
  cp_async_commit();
}

// L2 prefetch of a tile's K and V rows (128-byte lines).
template <typename KVT, int D>
__device__ __forceinline__ void pipe_prefetch_l2(const DecodeParams &p, const Pipe &pp, int tile) {
  constexpr int LPT = (D * (int)sizeof(KVT) + 127) / 128;  // lines per token row
  if (tile >= pp.num_tiles) return;
  const TokenOffsets *offs = pp.slots + (tile % pp.nslot) * pp.T;
  for (int c = threadIdx.x; c < pp.T * LPT; c += blockDim.x) {
    int tok = c / LPT, line = c % LPT;
    TokenOffsets o = offs[tok];
    if (o.k < 0) continue;
    const uint8_t *ks = p.k + o.k * (long long)sizeof(KVT) + line * 128;
    const uint8_t *vs = p.v + o.v * (long long)sizeof(KVT) + line * 128;
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(ks));
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(vs));
  }
}

__device__ __forceinline__ TokenOffsets pipe_lookup(const DecodeParams &p, const Pipe &pp,
                                                    int tile) {
  int pos = pp.lo + tile * pp.T + (int)threadIdx.x;
  if (tile >= pp.num_tiles || (int)threadIdx.x >= pp.T) return no_token();
  return token_offsets(p, pp.page_begin, pos, pp.hi, pp.kv_head);
}

// Prologue: offsets of tiles 0 .. S+L-1 into their slots, tiles 0..S-2 issued, tiles
// S-1 .. S+L-2 prefetched into L2. Returns the looked-up offsets of tile S+L (stored into
// its slot at the top of iteration 0).
template <typename KVT, int D>
__device__ __forceinline__ TokenOffsets pipe_start(const DecodeParams &p, const Pipe &pp) {
  for (int j = 0; j < pp.stages + pp.l2; ++j)
    if ((int)threadIdx.x < pp.T) pp.slots[j * pp.T + threadIdx.x] = pipe_lookup(p, pp, j);
  __syncthreads();
  for (int j = 0; j < pp.stages - 1; ++j) pipe_issue<KVT, D>(p, pp, j);
  for (int j = pp.stages - 1; j < pp.stages - 1 + pp.l2; ++j) pipe_prefetch_l2<KVT, D>(p, pp, j);
  return pipe_lookup(p, pp, pp.stages + pp.l2);
}

// Top of iteration `it`: park the looked-up offsets (tile it+S+L), wait for tile `it`,
// issue tile it+S-1, prefetch tile it+S-1+L into L2, look up tile it+S+L+1. After it
// returns, tile `it` is in buffer it % S. Slot races: a thread parks slot (it+S+L) % nslot
// while a slower one may still read the slots of tiles it+S-2 and it+S+L-2 (distinct as
// nslot = S+L+1 > L+2).
template <typename KVT, int D>
__device__ __forceinline__ void pipe_step(const DecodeParams &p, const Pipe &pp, int it,
                                          TokenOffsets &prefetched) {
  if ((int)threadIdx.x < pp.T)
    pp.slots[((it + pp.stages + pp.l2) % pp.nslot) * pp.T + threadIdx.x] = prefetched;
  cp_async_wait_dyn(pp.stages - 2);
  __syncthreads();
  pipe_issue<KVT, D>(p, pp, it + pp.stages - 1);
  if (pp.l2 > 0) pipe_prefetch_l2<KVT, D>(p, pp, it + pp.stages - 1 + pp.l2);
  prefetched = pipe_lookup(p, pp, it + pp.stages + pp.l2 + 1);
}

// The first position a query at q_pos sees, and the unit's clipped range.
__device__ __forceinline__ void unit_range(const DecodeParams &p, const fi_work_unit &u,
                                           int kv_len, int *lo, int *hi) {
  int q_pos = kv_len - 1;
  int ws = p.window_left >= 0 ? max(0, q_pos - p.window_left) : 0;
  *lo = max(u.kv_start, ws);
  *hi = min(u.kv_end, kv_len);
  if (*hi < *lo) *hi = *lo;
}

__device__ __forceinline__ int unit_count(const DecodeParams &p) {
  return p.device_num_units ? *p.device_num_units : p.num_units;
}

// What a kernel needs of work unit u: the query position, the clipped key range and the
// request's first page.
struct UnitSpan {
  int q_pos, lo, hi, page_begin;
};
__device__ __forceinline__ UnitSpan unit_span(const DecodeParams &p, const fi_work_unit &u) {
  UnitSpan s;
  const int kv_len = request_kv_len(p, u.request);
  s.q_pos = kv_len - 1;
  unit_range(p, u, kv_len, &s.lo, &s.hi);
  s.page_begin = p.kv_indptr[u.request];
  return s;
}

// The block-wide pipeline's geometry: raw K and V stage buffers of T rows of `row_bytes`
// from smem (the offset slots are placed by the caller).
template <typename KVT, int D>
__device__ __forceinline__ Pipe pipe_init(const DecodeParams &p, uint8_t *smem, int row_bytes,
                                          int kv_head) {
  Pipe pp;
  pp.row_bytes = row_bytes;
  pp.tile_bytes = p.kv_tile * pp.row_bytes;
  pp.T = p.kv_tile;
  pp.stages = p.stages;
  pp.l2 = decode_l2_tiles(D, (int)sizeof(KVT), p.kv_tile);
  pp.nslot = pp.stages + pp.l2 + 1;
  pp.k_raw = smem;
  pp.v_raw = smem + p.stages * pp.tile_bytes;
  pp.kv_head = kv_head;
  return pp;
}
__device__ __forceinline__ void pipe_begin_unit(Pipe &pp, const UnitSpan &us) {
  pp.page_begin = us.page_begin;
  pp.lo = us.lo;
  pp.hi = us.hi;
  pp.num_tiles = (us.hi - us.lo + pp.T - 1) / pp.T;
}
// Raw buffers of tile `it` (ready after pipe_step(it)).
__device__ __forceinline__ const uint8_t *pipe_k(const Pipe &pp, int it) {
  return pp.k_raw + (it % pp.stages) * pp.tile_bytes;
}
__device__ __forceinline__ const uint8_t *pipe_v(const Pipe &pp, int it) {
  return pp.v_raw + (it % pp.stages) * pp.tile_bytes;
}

// Final state of one (request, head), dims [d0, d0+8): writes o (type T) and lse, or the
// fp32 partial row. m is in log2 units, d the sum of exp2(s - m) (0: nothing attended).
template <typename T, int D>
__device__ __forceinline__ void write_state8(const DecodeParams &p, const fi_work_unit &u,
                                             int head, int d0, const float *o8, float m,
                                             float d) {
  float inv = d > 0.f ? p.v_scale / d : 0.f;
  float out[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = o8[e] * inv;
  float lse = d > 0.f ? (m + log2f(d)) * kLn2 : -INFINITY;
  if (u.partial_row >= 0) {
    long long row = (long long)u.partial_row * p.num_qo_heads + head;
    vec8<float>::store(p.partial_o + row * D + d0, out);
    if (d0 == 0) p.partial_lse[row] = lse;
  } else {
    T *o = (T *)p.o + (long long)u.request * p.o_sb + (long long)head * p.o_sh;
    vec8<T>::store(o + d0, out);
    if (d0 == 0 && p.lse) p.lse[(long long)u.request * p.lse_sb + (long long)head * p.lse_sh] = lse;
  }
}

// ------------------------------------------------------ kernel building blocks -------


// The KV head of this CTA and the first of its heads_per_cta query heads.
struct CtaHeads {
  int kv_head, head0;
};
__device__ __forceinline__ CtaHeads cta_heads(const DecodeParams &p, const BlockCoords &bc) {
  const int hg = p.heads_per_cta;
  const int chunks = p.group / hg;
  CtaHeads c;
  c.kv_head = bc.hy / chunks;
  c.head0 = c.kv_head * p.group + (bc.hy % chunks) * hg;
  return c;
}

// K row elements [d0, d0+8) as float, RoPE'd at pos with frequencies `freq` when `rope`
// (row: the token's K row).
template <typename KVT, int D>
__device__ __forceinline__ void load_k8(const uint8_t *row, int d0, bool rope, int pos,
                                        const float *freq, float *out) {
  vec8<KVT>::load(row + d0 * (int)sizeof(KVT), out);
  if (rope) {
    float partner[8];
    vec8<KVT>::load(row + ((d0 + D / 2) % D) * (int)sizeof(KVT), partner);
    rope8<D>(out, partner, d0, pos, freq);
  }
}

// Combines n online-softmax states of one (request, head), dims [d0, d0+8), in order k =
// 0 .. n-1: state k has (m, d) at md[k * stride + row] and its o at
// o_rows + (k * stride + row) * D + d0. Writes the result with write_state8.
template <typename T, int D>
__device__ __forceinline__ void merge_states8(const DecodeParams &p, const fi_work_unit &u,
                                              int head, int d0, const float *o_rows,
                                              const float2 *md_rows, int n, int stride,
                                              int row) {
  float M = -INFINITY;
  for (int k = 0; k < n; ++k) M = fmaxf(M, md_rows[k * stride + row].x);
  float D_ = 0.f, acc[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] = 0.f;
  for (int k = 0; k < n; ++k) {
    float2 md = md_rows[k * stride + row];
    float wgt = md.x == -INFINITY ? 0.f : exp2f(md.x - M);
    D_ += md.y * wgt;
    float part[8];
    vec8<float>::load(o_rows + (k * stride + row) * D + d0, part);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = fmaf(wgt, part[e], acc[e]);
  }
  write_state8<T, D>(p, u, head, d0, acc, M, D_);
}

// ------------------------------------------- tensor-core building blocks (mma.sync) --
// Tiles are 16-bit [rows][RC] in shared memory (RC = 2 D + 16 bytes: padded rows, so the
// ldmatrix rows hit distinct banks). In a warp, lane = 4 g + t4: accumulator elements
// c0, c1 belong to row g, c2, c3 to row g + 8.

// A fragment (k-slice kk) of the 16-row Q tile qs.
template <int RC>
__device__ __forceinline__ void ldsm_q(uint32_t *r, const uint8_t *qs, int kk, int lane) {
  ldmatrix_x4(r, qs + (lane % 16) * RC + (kk * 16 + (lane / 16) * 8) * 2);
}
// B fragments (k-slice kk, two n8 halves) of the 16 K rows from tok0 of tile kt.
template <int RC>
__device__ __forceinline__ void ldsm_k(uint32_t *r, const uint8_t *kt, int tok0, int kk,
                                       int lane) {
  ldmatrix_x4(r, kt + (tok0 + (lane / 16) * 8 + lane % 8) * RC +
                     (kk * 16 + ((lane / 8) % 2) * 8) * 2);
}
// B fragments (dims [16 j, 16 j + 16), two n8 halves) of the 16 V rows from tok0 of vt.
template <int RC>
__device__ __forceinline__ void ldsm_v(uint32_t *r, const uint8_t *vt, int tok0, int j,
                                       int lane) {
  ldmatrix_x4_trans(r, vt + (tok0 + lane % 8 + ((lane / 8) % 2) * 8) * RC +
                           (16 * j + (lane / 16) * 8) * 2);
}
// d0 += A B[:, 0:8], d1 += A B[:, 8:16] (b: the two halves' fragments, as ldsm_k gives).
template <typename T>
__device__ __forceinline__ void mma_n16(float *d0, float *d1, const uint32_t *a,
                                        const uint32_t *b) {
  mma_16816<T>(d0, a, b[0], b[1]);
  mma_16816<T>(d1, a, b[2], b[3]);
}

// ALiBi slopes of the CTA's heads r0 and r1 (0 past heads_per_cta, or no ALiBi): the mma
// rows g, g + 8 of a lane, or its columns 2 t4, 2 t4 + 1 with the heads on the N side.
__device__ __forceinline__ void cta_head_slopes(const DecodeParams &p, int head0, int r0, int r1,
                                                float *slope0, float *slope1) {
  const int hg = p.heads_per_cta;
  const bool alibi = p.pos_encoding == FI_POS_ALIBI;
  *slope0 = alibi && r0 < hg ? alibi_slope(head0 + r0, p.num_qo_heads) : 0.f;
  *slope1 = alibi && r1 < hg ? alibi_slope(head0 + r1, p.num_qo_heads) : 0.f;
}

// Stages the 16-row Q tile of heads head0 .. head0 + hg - 1 into qs (RoPE'd; not scaled,
// so that q stays exact in 16 bits: the scale multiplies the fp32 logits), zero rows
// after; with `split` also the bf16 rounding residues into qs_lo. Block-wide (or by the
// `nthreads` threads from `thread`), no barrier.
template <typename T, int D, int RC>
__device__ __forceinline__ void stage_q_tile(const DecodeParams &p, int request, int head0,
                                             int q_pos, uint8_t *qs, uint8_t *qs_lo,
                                             bool split, int thread = -1, int nthreads = 0) {
  const int hg = p.heads_per_cta;
  if (thread < 0) {
    thread = threadIdx.x;
    nthreads = blockDim.x;
  }
  for (int item = thread; item < 16 * (D / 8); item += nthreads) {
    int r = item / (D / 8), d0 = (item % (D / 8)) * 8;
    float q8[8];
    if (r < hg) {
      load_q8<T, D>(p, request, head0 + r, d0, q_pos, 1.f, q8);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q8[e] = 0.f;
    }
    vec8<T>::store(qs + r * RC + d0 * 2, q8);
    if (split) store_lo8<T>(qs_lo + r * RC + d0 * 2, q8);
  }
}

// One warp's online-softmax state: o fragments [D/8][4] plus (m, d) of rows g and g + 8
// (m in log2 units; d is this lane's part of the row sum until tc_merge_warps).
template <int D> struct TcState {
  float o[D / 8][4];
  float m0, m1, d0, d1;
};
template <int D> __device__ __forceinline__ void tc_state_init(TcState<D> &st) {
#pragma unroll
  for (int n = 0; n < D / 8; ++n) st.o[n][0] = st.o[n][1] = st.o[n][2] = st.o[n][3] = 0.f;
  st.m0 = -INFINITY;
  st.m1 = -INFINITY;
  st.d0 = 0.f;
  st.d1 = 0.f;
}

// Folds the 16 raw logits s (tokens pos0 .. pos0 + 15, column n * 8 + 2 t4 + (j & 1)) into
// the state: scale, logits transform, mask past hi, online softmax, then o += P V with V
// rows tok0 .. tok0 + 15 of vt.
template <typename T, int D, int RC>
__device__ __forceinline__ void tc_softmax_pv(const DecodeParams &p, TcState<D> &st,
                                              float (&s)[2][4], int pos0, int hi, int q_pos,
                                              float slope0, float slope1, const uint8_t *vt,
                                              int tok0, int lane) {
  const int t4 = lane % 4;
  float mx0 = st.m0, mx1 = st.m1;
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int pos = pos0 + n * 8 + 2 * t4 + (j & 1);
      float sl = j < 2 ? slope0 : slope1;
      float v = pos < hi ? logits_transform(p, s[n][j] * p.scale, pos, q_pos, sl) * kLog2e
                         : -INFINITY;
      s[n][j] = v;
      if (j < 2) mx0 = fmaxf(mx0, v);
      else mx1 = fmaxf(mx1, v);
    }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  float base0 = mx0 == -INFINITY ? 0.f : mx0, base1 = mx1 == -INFINITY ? 0.f : mx1;
  float sc0 = exp2f(st.m0 - base0), sc1 = exp2f(st.m1 - base1);
  st.m0 = mx0;
  st.m1 = mx1;
  st.d0 *= sc0;
  st.d1 *= sc1;
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    s[n][0] = exp2f(s[n][0] - base0);
    s[n][1] = exp2f(s[n][1] - base0);
    s[n][2] = exp2f(s[n][2] - base1);
    s[n][3] = exp2f(s[n][3] - base1);
    st.d0 += s[n][0] + s[n][1];
    st.d1 += s[n][2] + s[n][3];
  }
  if (__any_sync(0xffffffffu, sc0 != 1.f || sc1 != 1.f)) {  // a row max moved
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      st.o[n][0] *= sc0;
      st.o[n][1] *= sc0;
      st.o[n][2] *= sc1;
      st.o[n][3] *= sc1;
    }
  }
  uint32_t pa[4];
  pa[0] = pack2<T>(s[0][0], s[0][1]);
  pa[1] = pack2<T>(s[0][2], s[0][3]);
  pa[2] = pack2<T>(s[1][0], s[1][1]);
  pa[3] = pack2<T>(s[1][2], s[1][3]);
#pragma unroll
  for (int j = 0; j < D / 16; ++j) {
    uint32_t b[4];
    ldsm_v<RC>(b, vt, tok0, j, lane);
    mma_n16<T>(st.o[2 * j], st.o[2 * j + 1], pa, b);
  }
}

// Shared-memory bytes of a merge of nw warps' states: [nw][16][D] fp32 o rows, then
// [nw][16] (m, d) pairs.
constexpr __host__ __device__ int decode_merge_bytes(int D, int nw) {
  return nw * 16 * D * 4 + nw * 16 * 8;
}

// The last step of a warp merge: every warp has written its o rows ([NW][16][D] floats at
// eo, row r = head head0 + r) and their (m, d) ([NW][16] at emd); rows 0 .. hg - 1 are
// combined in warp order and written for unit u. Block-wide; starts and ends with a barrier.
template <typename T, int D>
__device__ __forceinline__ void merge_warp_rows(const DecodeParams &p, const fi_work_unit &u,
                                                const float *eo, const float2 *emd, int head0) {
  const int NW = blockDim.x / 32;
  __syncthreads();
  for (int item = threadIdx.x; item < p.heads_per_cta * (D / 8); item += blockDim.x) {
    int r = item / (D / 8), d0 = (item % (D / 8)) * 8;
    merge_states8<T, D>(p, u, head0 + r, d0, eo, emd, NW, 16, r);
  }
  __syncthreads();
}

// After the last tile (cp.async drained, block barrier passed): the warps merge their
// states through shared memory ([NW][16][D] o, then [NW][16] (m, d)) and write rows
// 0 .. hg - 1 (heads head0 + r) of unit u. Ends with a block barrier.
template <typename T, int D>
__device__ __forceinline__ void tc_merge_warps(const DecodeParams &p, const fi_work_unit &u,
                                               uint8_t *smem, TcState<D> &st, int head0) {
  const int NW = blockDim.x / 32;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t4 = lane % 4;
  st.d0 += __shfl_xor_sync(0xffffffffu, st.d0, 1);
  st.d0 += __shfl_xor_sync(0xffffffffu, st.d0, 2);
  st.d1 += __shfl_xor_sync(0xffffffffu, st.d1, 1);
  st.d1 += __shfl_xor_sync(0xffffffffu, st.d1, 2);
  float *eo = (float *)smem;
  float2 *emd = (float2 *)(eo + NW * 16 * D);
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    *(float2 *)(eo + (warp * 16 + g) * D + n * 8 + 2 * t4) = make_float2(st.o[n][0], st.o[n][1]);
    *(float2 *)(eo + (warp * 16 + g + 8) * D + n * 8 + 2 * t4) =
        make_float2(st.o[n][2], st.o[n][3]);
  }
  if (t4 == 0) {
    emd[warp * 16 + g] = make_float2(st.m0, st.d0);
    emd[warp * 16 + g + 8] = make_float2(st.m1, st.d1);
  }
  merge_warp_rows<T, D>(p, u, eo, emd, head0);
}

// ---------------------------------------------------------------- CUDA cores ---------

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

// ---------------------------------------------------------------- tensor cores -------

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

// ----------------------------------- tensor cores, heads on the mma N side (hg <= 8) --
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

// First half of a 16-token sub-tile (K rows kb, positions pos0 .. pos0 + 15): S^T = K Q^T
// (qb: the Q^T fragments), scale, logits transform, mask past hi (SW: and before lo, the
// sub-tiles of decode_tws_kernel start on a multiple of 16 below a window's start), online
// softmax per head (o rescaled where a head's max moved); returns P^T as the B fragments pb
// of tcn_pv. slope0/1: ALiBi slopes of heads 2 t4, 2 t4 + 1. K is no longer read when it
// returns. ROPE: K is rotated in registers (tcn_rope_freqs; one range-reduced sincos per
// pair) before its mma; for bf16 the rotated K and the staged Q are split into hi + lo parts
// (qb_lo: Q's residues) and q.k = qh.kh + qh.kl + ql.kh, as in decode_tc_kernel.
template <typename T, int D, int RC, bool SW = false, bool ROPE = false>
__device__ __forceinline__ void tcn_scores(const DecodeParams &p, TcnState<D> &st,
                                           const uint32_t (&qb)[D / 16][2], const uint8_t *kb,
                                           int pos0, int hi, int q_pos, float slope0,
                                           float slope1, int lane, uint32_t (&pb)[2],
                                           int lo = 0, const float *kfreq = nullptr,
                                           const uint32_t (*qb_lo)[2] = nullptr) {
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
  if constexpr (ROPE) {
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
  } else {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      load_a(a, kk);
      mma_16816<T>(kk % 2 ? s2 : s, a, qb[kk][0], qb[kk][1]);
    }
  }
  float mx[2] = {st.m[0], st.m[1]};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int pos = pos0 + g + 8 * (j >> 1);
    const bool keep = pos < hi && (!SW || pos >= lo);
    const float v = keep ? logits_transform(p, (s[j] + s2[j]) * p.scale, pos, q_pos,
                                            (j & 1) ? slope1 : slope0) * kLog2e
                         : -INFINITY;
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
  pb[0] = movmatrix_trans(pack2<T>(s[0], s[1]));  // tokens 0..7
  pb[1] = movmatrix_trans(pack2<T>(s[2], s[3]));  // tokens 8..15
}
// Second half: O^T += V^T P^T with the V rows vb of the sub-tile.
template <typename T, int D, int RC, bool SW = false>
__device__ __forceinline__ void tcn_pv(TcnState<D> &st, const uint8_t *vb,
                                       const uint32_t (&pb)[2], int lane) {
  // SW: transposed loads of rows lane % 8 + 8 (lane / 16), chunks 2 n + (lane / 8) % 2.
  const uint32_t v_lane = SW ? sw_tile_lane(vb, lane % 8 + 8 * (lane / 16), (lane / 8) % 2) : 0;
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

// As tc_merge_warps, for the heads-on-N state.
template <typename T, int D>
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
      eo[(warp * 16 + 2 * t4 + (c & 1)) * D + 16 * n + g + 8 * (c >> 1)] = st.o[n][c];
  if (g == 0) {
    emd[warp * 16 + 2 * t4] = make_float2(st.m[0], st.d[0]);
    emd[warp * 16 + 2 * t4 + 1] = make_float2(st.m[1], st.d[1]);
  }
  merge_warp_rows<T, D>(p, u, eo, emd, head0);
}

// ------------------------------------------------- tensor cores, warp pipelines -------

// Variant of the tensor-core kernel for 16-bit KV without RoPE (no transform pass), with
// NW = blockDim.x / 32 warps (2..12, tcw_warps_for picks them per grid): every
// warp runs its own cp.async pipeline over its own 16-token sub-tiles (w, w + NW, ... of
// the unit's range), `stages` deep, synchronised with __syncwarp only. No block barrier
// per tile: a warp that waits for memory never holds the others back, and each warp keeps
// stages - 1 sub-tiles (8.5 KiB each at D = 128) in flight. The warps merge their
// online-softmax states through shared memory at the end, as in decode_tc_kernel.
// Shared memory: [NW][stages][K | V][16][RC] stage ring (the Q tile [16][RC] is staged at
// its start before each unit's pipeline), then [NW][stages + 1][16] token offset slots.
__device__ __forceinline__ TokenOffsets warp_lookup(const DecodeParams &p, int page_begin,
                                                    int lo, int hi, int kv_head, int sub,
                                                    int num_sub, int lane) {
  if (sub >= num_sub || lane >= 16) return no_token();
  return token_offsets(p, page_begin, lo + sub * 16 + lane, hi, kv_head);
}

// Up to 12 warps per CTA: 168 registers x 384 threads fit one SM's register file, so a
// decode whose (request, kv head) CTAs about fill the SMs runs unsplit at 12 warps per SM
// (planner.c, decode_target_units).
constexpr int kTcwMaxWarps = 12;
// ONE (single K and V slots per warp) halves the shared memory per warp, and caps the
// registers at 128 (16 warps x 32 threads x 128 = the register file): up to 16 warps per SM.
constexpr int kTcw1MaxWarps = 16;
// Ring slots of decode_tws_kernel at most (27 of 8 KiB fit one CTA per SM at head_dim 128).
constexpr int kTwsMaxSlots = 32;

// tcw_warps_for's occupancy answers for one decode_tcw_kernel variant, per device (ordinals
// below kTcwKnownDevices; others ask every time).
constexpr int kTcwKnownDevices = 16;
struct TcwOccupancy {
  std::atomic<int> per_sm[kTcwKnownDevices][kTcw1MaxWarps + 1];
};

// HN: the heads on the mma N side (tcn_scores / tcn_pv; CTAs of hg <= 8 heads), else as
// mma rows. ONE (with HN, page-aligned units only; the launcher guarantees it): one K and
// one V slot per warp instead of a ring of (K, V) stages; K(i + 1) is copied into the K slot
// as soon as S(i) has read it, V(i + 1) once P V(i) has read V(i), so each copy still has
// about one sub-tile's math to land.
template <typename T, typename KVT, int D, bool HN, bool ONE>
__global__ void __launch_bounds__(ONE ? kTcw1MaxWarps * 32 : kTcwMaxWarps * 32, 1)
    decode_tcw_kernel(const DecodeParams p) {
  static_assert(!ONE || HN, "single slots need the heads-on-N form");
  extern __shared__ __align__(16) uint8_t smem[];
  pdl_enter();
  constexpr int RC = 2 * D + 16;
  constexpr int CPT = D * 2 / 16;  // 16-byte chunks per token row
  const int NW = blockDim.x / 32;
  const int S = p.stages, nslot = S + 1;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4;
  const BlockCoords bc = block_coords(p);
  const CtaHeads ch = cta_heads(p, bc);
  const int kv_head = ch.kv_head, head0 = ch.head0;
  // ALiBi slopes of the lane's mma rows g, g + 8 (HN: of its columns 2 t4, 2 t4 + 1).
  const int r0 = HN ? 2 * (lane % 4) : g, r1 = HN ? r0 + 1 : g + 8;
  float slope0, slope1;
  cta_head_slopes(p, head0, r0, r1, &slope0, &slope1);

  const int stage_bytes = 2 * 16 * RC;  // K then V of 16 tokens
  const int warp_bytes = ONE ? stage_bytes : S * stage_bytes;
  const int raw_bytes = NW * warp_bytes;
  const int epi_bytes = decode_merge_bytes(D, NW);
  uint8_t *ring = smem + warp * warp_bytes;
  uint8_t *after = smem + (raw_bytes > epi_bytes ? raw_bytes : epi_bytes);
  TokenOffsets *slots = (TokenOffsets *)after + warp * nslot * 16;
  // The Q tile is staged in the (still idle) ring before each unit's pipeline starts: its
  // own 4.3 KiB would cost the sixth CTA per SM (bench/NOTES.md, v6).
  uint8_t *qs = smem;

  const int n_units = unit_count(p);
  for (int w = bc.unit0; w < n_units; w += bc.unit_stride) {
    const fi_work_unit u = p.work[w];
    if (u.request < 0) continue;
    const UnitSpan us = unit_span(p, u);
    const int q_pos = us.q_pos, lo = us.lo, hi = us.hi, page_begin = us.page_begin;
    const int num_sub = (hi - lo + 15) / 16;
    const int my_tiles = num_sub > warp ? (num_sub - warp + NW - 1) / NW : 0;

    // Page-aligned units (page size a multiple of 16, range start a multiple of 16): each
    // sub-tile lies in one page, so a warp step needs one page id (a broadcast load, one
    // step ahead) and each lane's 8 K and 8 V chunks are a fixed stride apart from one base:
    // no per-token offset slots, divisions or shared-memory reads on the copy path.
    const bool aligned = p.page_size % 16 == 0 && lo % 16 == 0;
    stage_q_tile<T, D, RC>(p, u.request, head0, q_pos, qs, nullptr, false);
    // Local tile j of this warp = global sub-tile warp + j * NW.
    if (!aligned)
      for (int j = 0; j < S; ++j)
        if (lane < 16)
          slots[j * 16 + lane] =
              warp_lookup(p, page_begin, lo, hi, kv_head, warp + j * NW, num_sub, lane);
    __syncthreads();  // Q tile and slots
    // Q as the A operand (heads as rows) or as Q^T B fragments (HN).
    uint32_t qf[HN ? 1 : D / 16][4], qb[HN ? D / 16 : 1][2];
    if constexpr (HN) {
      ldsm_qt<RC, D>(qb, qs, lane);
    } else {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldsm_q<RC>(qf[kk], qs, kk, lane);
    }
    __syncthreads();  // every warp holds Q before the ring is overwritten

    auto issue = [&](int j) {
      if (j < my_tiles) {
        const TokenOffsets *offs = slots + (j % nslot) * 16;
        uint8_t *kd = ring + (j % S) * stage_bytes;
        uint8_t *vd = kd + 16 * RC;
#pragma unroll
        for (int i = 0; i < 16 * CPT / 32; ++i) {
          int c = lane + 32 * i;
          int tok = c / CPT, part = c % CPT;
          cp_async_kv_chunk<KVT>(p, kd, vd, RC, offs[tok], tok, part);
        }
      }
      cp_async_commit();
    };
    auto page_of = [&](int j) {  // page id of local tile j (aligned units; 0 past the end)
      return j < my_tiles ? p.kv_indices[page_begin + (lo + (warp + j * NW) * 16) / p.page_size]
                          : 0;
    };
    // Lane chunks: tokens TPI i + lane / CPT (i < 16 / TPI) of the sub-tile, bytes
    // [16 (lane % CPT), +16) of each row (TPI = 32 / CPT tokens per warp instruction).
    constexpr int TPI = 32 / CPT;
    const long long k_step = TPI * p.k_sn * (long long)sizeof(KVT);
    const long long v_step = TPI * p.v_sn * (long long)sizeof(KVT);
    // The 16 K (or V) rows of local tile j, page `page`, into the 16-row tile at dst.
    auto copy_rows = [&](int j, int page, const uint8_t *base, int64_t sp, int64_t sn,
                         int64_t sh, long long step, uint8_t *dst) {
      if (j < my_tiles) {
        const int pos0 = lo + (warp + j * NW) * 16;
        const long long in_page = pos0 % p.page_size + lane / CPT;
        const long long row = (long long)page * sp + in_page * sn + (long long)kv_head * sh;
        const uint8_t *src = base + row * (long long)sizeof(KVT) + (lane % CPT) * 16;
        uint8_t *d = dst + (lane / CPT) * RC + (lane % CPT) * 16;
        const int valid = hi - pos0 - lane / CPT;  // this lane's tokens TPI i < valid are real
#pragma unroll
        for (int i = 0; i < 16 / TPI; ++i)
          cp_async16(d + TPI * i * RC, src + i * step, TPI * i < valid);
      }
    };
    auto issue_aligned = [&](int j, int page) {  // ring stage j % S
      uint8_t *kd = ring + (j % S) * stage_bytes;
      copy_rows(j, page, p.k, p.k_sp, p.k_sn, p.k_sh, k_step, kd);
      copy_rows(j, page, p.v, p.v_sp, p.v_sn, p.v_sh, v_step, kd + 16 * RC);
      cp_async_commit();
    };
    TokenOffsets pref = no_token();
    int next_page = 0;
    if constexpr (ONE) {
      if (!aligned) __trap();  // unreachable: the launcher runs ONE on page-aligned plans only
      const int page0 = page_of(0);
      copy_rows(0, page0, p.k, p.k_sp, p.k_sn, p.k_sh, k_step, ring);
      cp_async_commit();
      copy_rows(0, page0, p.v, p.v_sp, p.v_sn, p.v_sh, v_step, ring + 16 * RC);
      cp_async_commit();
      next_page = page_of(1);
    } else if (aligned) {
      for (int j = 0; j < S - 1; ++j) issue_aligned(j, page_of(j));
      next_page = page_of(S - 1);
    } else {
      for (int j = 0; j < S - 1; ++j) issue(j);
      pref = warp_lookup(p, page_begin, lo, hi, kv_head, warp + S * NW, num_sub, lane);
    }

    TcState<D> st;    // heads as rows
    TcnState<D> stn;  // HN
    if constexpr (HN) tcn_state_init(stn);
    else tc_state_init(st);

    if constexpr (ONE) {
      for (int it = 0; it < my_tiles; ++it) {
        // Pending copy groups at the top: K(it), V(it).
        cp_async_wait<1>();  // K(it)
        __syncwarp();
        uint32_t pb[2];
        const int tile_pos = lo + (warp + it * NW) * 16;
        tcn_scores<T, D, RC>(p, stn, qb, ring, tile_pos, hi, q_pos, slope0, slope1, lane, pb);
        __syncwarp();  // every lane has read K(it)
        copy_rows(it + 1, next_page, p.k, p.k_sp, p.k_sn, p.k_sh, k_step, ring);
        cp_async_commit();
        cp_async_wait<1>();  // V(it)
        __syncwarp();
        tcn_pv<T, D, RC>(stn, ring + 16 * RC, pb, lane);
        __syncwarp();  // every lane has read V(it)
        copy_rows(it + 1, next_page, p.v, p.v_sp, p.v_sn, p.v_sh, v_step, ring + 16 * RC);
        cp_async_commit();
        next_page = page_of(it + 2);
      }
    } else {
      for (int it = 0; it < my_tiles; ++it) {
        if (aligned) {
          cp_async_wait_dyn(S - 2);
          __syncwarp();
          issue_aligned(it + S - 1, next_page);
          next_page = page_of(it + S);
        } else {
          if (lane < 16) slots[((it + S) % nslot) * 16 + lane] = pref;
          cp_async_wait_dyn(S - 2);
          __syncwarp();
          issue(it + S - 1);
          pref = warp_lookup(p, page_begin, lo, hi, kv_head, warp + (it + S + 1) * NW, num_sub,
                             lane);
        }
        const uint8_t *kb = ring + (it % S) * stage_bytes;
        const uint8_t *vb = kb + 16 * RC;
        const int tile_pos = lo + (warp + it * NW) * 16;
        if constexpr (HN) {
          uint32_t pb[2];
          tcn_scores<T, D, RC>(p, stn, qb, kb, tile_pos, hi, q_pos, slope0, slope1, lane, pb);
          tcn_pv<T, D, RC>(stn, vb, pb, lane);
        } else {
          float s[2][4];
#pragma unroll
          for (int n = 0; n < 2; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t b[4];
            ldsm_k<RC>(b, kb, 0, kk, lane);
            mma_n16<T>(s[0], s[1], qf[kk], b);
          }
          tc_softmax_pv<T, D, RC>(p, st, s, tile_pos, hi, q_pos, slope0, slope1, vb, 0, lane);
        }
      }
    }
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (HN) tcn_merge_warps<T, D>(p, u, smem, stn, head0);
    else tc_merge_warps<T, D>(p, u, smem, st, head0);
  }
}

// decode_tws_kernel's ring: R slots of one 16-token sub-tile (K then V, each in the copy
// engine's 128-byte-swizzled layout, 4 KiB at head_dim 128), at least the bytes of the
// warps' final merge (which reuses it); then the padded Q tile (with `split`, bf16 RoPE, also
// its residues) and 2 R mbarriers.
constexpr __host__ __device__ int decode_tws_slot_bytes(int D) { return 2 * 16 * 2 * D; }
static inline __host__ __device__ int decode_tws_ring_bytes(int D, int nw, int slots) {
  const int ring = slots * decode_tws_slot_bytes(D);
  const int epi = decode_merge_bytes(D, nw);
  return ring > epi ? ring : epi;
}
static inline size_t decode_tws_smem(int D, int nw, int slots, bool split) {
  return (size_t)decode_tws_ring_bytes(D, nw, slots) +
         (split ? 2 : 1) * 16 * (2 * (size_t)D + 16) + 2 * (size_t)slots * sizeof(uint64_t);
}

// The K and V caches as 4-D tensor maps for the copy engine (decode.cu encodes them per
// run): dims (innermost first) head_dim, kv head, position in page, page, with the cache's
// strides (NHD and HND alike); box 64 x 1 x 16 x 1 (16 rows of one head's 64-dim half),
// 128-byte swizzle. Pages outside [0, num_pages) read as zeros instead of faulting.
struct TwsMaps {
  CUtensorMap k, v;
};

// ----------------------------------- tensor cores, warp-specialised (sm_90 TMA) -------
// decode_tws_kernel: the heads-on-N math of decode_tcw_kernel (tcn_scores / tcn_pv), fed
// by a producer warp instead of each warp's own copies. Work split: a CTA of NW warps
// takes a unit (request, KV chunk) of one (kv head, head chunk) like the other kernels;
// warps 0 .. NW - 2 are consumers (sub-tile j of the unit goes to consumer j % (NW - 1)),
// the last warp is the producer. The producer walks the unit's 16-token sub-tiles in order
// into a ring of R slots: per sub-tile one lane issues 2 x D / 64 tensor copies (K and V,
// 2 KiB boxes) counted on the slot's `full` mbarrier; a consumer waits on `full`,
// computes, and arrives on `empty`, which the producer waits on before refilling the slot.
// Why: with per-warp copies (decode_tcw_kernel) a warp requests sub-tile i + 1 only when its
// own math reaches that point, so its bytes in flight follow its instruction chain and the
// full-batch rows read at 94-95 % of copy where the bare gather reads at 100 %
// (bench/NOTES.md, v10-v13); here the ring (all of a CTA's share of shared memory) is
// refilled as soon as any slot frees, whatever each consumer's chain, the consumers issue
// no copies and the producer 4 instructions per 8 KiB (16-byte cp.async from one producer
// warp, 16 per lane per sub-tile, could not keep up: bench/NOTES.md v14).
// Page sizes a multiple of 16 only (each sub-tile is one box of one page; the planner's
// chunks start on page boundaries; a sliding window's start is masked inside its first
// sub-tile); the producer's lanes load 32 sub-tiles' page ids at once, one batch ahead.
// The rows of a box outside the unit's range (past its end, before a window's start) hold
// whatever the page holds: K rows are masked, and the consumer zeroes those V rows before
// P V (0 x NaN would be NaN).
// ROPE: the consumers rotate K in registers between ldmatrix and mma (tcn_scores), so RoPE
// costs instructions under the copies, not a staging pass with a block barrier (as in
// decode_tc_kernel); Q is RoPE'd when staged.
// Memory traffic: as decode_tcw_kernel (q once per unit, K/V rows of the chunk once, o or
// a partial row once). At the end of a unit every warp (the producer with an empty state)
// merges through shared memory over the ring, then the next unit starts.
template <typename T, int D, bool ROPE>
__global__ void __launch_bounds__(kTcw1MaxWarps * 32, 1)
    decode_tws_kernel(const __grid_constant__ DecodeParams p,
                      const __grid_constant__ TwsMaps maps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Its own name: the 1024-byte alignment the swizzle needs would be dropped in favour of
  // the 16 bytes the other kernels declare for `smem` (one PTX symbol).
  extern __shared__ __align__(1024) uint8_t tws_smem[];
  uint8_t *const smem = tws_smem;
  pdl_enter();
  constexpr int RC = 2 * D + 16;                     // padded row of the Q tile
  constexpr int SLOT = decode_tws_slot_bytes(D);     // K then V of one sub-tile
  constexpr int V_OFF = SLOT / 2;
  const int NW = blockDim.x / 32, NC = NW - 1, R = p.stages;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const bool producer = warp == NC;
  const BlockCoords bc = block_coords(p);
  const CtaHeads ch = cta_heads(p, bc);
  const int kv_head = ch.kv_head, head0 = ch.head0;
  float slope0, slope1;
  cta_head_slopes(p, head0, 2 * (lane % 4), 2 * (lane % 4) + 1, &slope0, &slope1);

  uint8_t *ring = smem;  // 1024-byte aligned (tws_smem): the swizzle's pattern is absolute
  constexpr bool SPLIT = ROPE && is_bf16<T>::value;
  uint8_t *qs = smem + decode_tws_ring_bytes(D, NW, R);
  uint8_t *qs_lo = qs + 16 * RC;  // SPLIT only
  uint64_t *full = reinterpret_cast<uint64_t *>(qs + (SPLIT ? 2 : 1) * 16 * RC);
  uint64_t *empty = full + R;
  if (tid == 0) {
    for (int i = 0; i < R; ++i) {
      mbar_init(&full[i], 1);   // the producer's arrive.expect_tx
      mbar_init(&empty[i], 1);  // one lane of the consuming warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  float kfreq[ROPE ? D / 8 : 1];
  if constexpr (ROPE) tcn_rope_freqs<D>(p, lane, kfreq);

  uint32_t seq = 0;  // sub-tiles of earlier units: slot and phase run on across units
  const int n_units = unit_count(p);
  for (int w = bc.unit0; w < n_units; w += bc.unit_stride) {
    const fi_work_unit u = p.work[w];
    if (u.request < 0) continue;
    const UnitSpan us = unit_span(p, u);
    // Sub-tiles from the multiple of 16 at or below the range's start (a window's start is
    // anywhere; the unit's chunk start is a page boundary, so base >= it): positions below
    // us.lo are masked.
    const int lo = us.lo / 16 * 16, hi = us.hi;
    const int num_sub = hi > us.lo ? (hi - lo + 15) / 16 : 0;
    if (p.page_size % 16 != 0 || u.kv_start % 16 != 0) __trap();  // the launcher's conditions
    TcnState<D> st;
    tcn_state_init(st);

    // Producer: sub-tile s into the next slot (one lane issues; every lane takes part in
    // the page-id batches).
    const int32_t *pages = p.kv_indices + us.page_begin;
    auto page_batch = [&](int s0) {  // lane i: page id of sub-tile s0 + i (0 past the end)
      const int sub = s0 + lane;
      return sub < num_sub ? pages[(lo + 16 * sub) / p.page_size] : 0;
    };
    int cur = 0, next = 0;
    uint32_t pslot = seq % R, pphase = (seq / R) & 1;
    auto issue = [&](int s) {
      if (s % 32 == 0) {
        cur = s == 0 ? page_batch(0) : next;
        next = page_batch(s + 32);
      }
      const int page = __shfl_sync(0xffffffffu, cur, s % 32);
      if (lane == 0) {
        const int in_page = (lo + 16 * s) % p.page_size;
        uint8_t *dst = ring + pslot * SLOT;
        mbar_wait(&empty[pslot], pphase ^ 1);  // consumed (a fresh slot passes at once)
        mbar_arrive_expect_tx(&full[pslot], SLOT);
#pragma unroll
        for (int h = 0; h < D / 64; ++h) {
          tma_load_4d(dst + h * 2048, &maps.k, 64 * h, kv_head, in_page, page, &full[pslot]);
          tma_load_4d(dst + V_OFF + h * 2048, &maps.v, 64 * h, kv_head, in_page, page,
                      &full[pslot]);
        }
      }
      if (++pslot == (uint32_t)R) {
        pslot = 0;
        pphase ^= 1;
      }
    };
    // The first ring's worth of copies goes out while the consumers stage Q (every slot
    // was released in the previous unit: no wait), then one block barrier for both.
    const int first = num_sub < R ? num_sub : R;
    if (producer) {
      for (int s = 0; s < first; ++s) issue(s);
    } else {
      stage_q_tile<T, D, RC>(p, u.request, head0, us.q_pos, qs, qs_lo, SPLIT, tid, NC * 32);
    }
    __syncthreads();
    if (producer) {
      for (int s = first; s < num_sub; ++s) issue(s);
    } else {
      uint32_t qb[D / 16][2], qb_lo[SPLIT ? D / 16 : 1][2];
      ldsm_qt<RC, D>(qb, qs, lane);
      if constexpr (SPLIT) ldsm_qt<RC, D>(qb_lo, qs_lo, lane);
      uint32_t slot = (seq + warp) % R, phase = ((seq + warp) / R) & 1;
      for (int j = warp; j < num_sub; j += NC) {
        mbar_wait(&full[slot], phase);
        uint8_t *kb = ring + slot * SLOT, *vb = kb + V_OFF;
        const int pos0 = lo + 16 * j;
        // Rows of the box outside [us.lo, hi) (a window's start, the unit's end) hold
        // whatever the page holds there: their K is masked, their V zeroed (P = 0 times a
        // NaN would be NaN).
        const int r_lo = us.lo - pos0 > 0 ? us.lo - pos0 : 0;
        const int r_hi = hi - pos0 < 16 ? hi - pos0 : 16;
        uint32_t pb[2];
        tcn_scores<T, D, RC, true, ROPE>(p, st, qb, kb, pos0, hi, us.q_pos, slope0, slope1,
                                         lane, pb, us.lo, kfreq, qb_lo);
        if (r_lo > 0 || r_hi < 16) {
          for (int c = lane; c < 16 * (D / 8); c += 32) {  // whole 128-byte rows of each half
            const int r = c / (D / 8), cc = c % (D / 8);
            if (r < r_lo || r >= r_hi)
              *reinterpret_cast<uint4 *>(vb + (cc / 8) * 2048 + r * 128 + (cc % 8) * 16) =
                  make_uint4(0u, 0u, 0u, 0u);
          }
          fence_proxy_async_smem();  // before the copy engine refills the slot
          __syncwarp();
        }
        tcn_pv<T, D, RC, true>(st, vb, pb, lane);
        __syncwarp();  // every lane has read the slot
        if (lane == 0) mbar_arrive(&empty[slot]);
        slot += NC;
        while (slot >= (uint32_t)R) {
          slot -= R;
          phase ^= 1;
        }
      }
    }
    seq += num_sub;
    __syncthreads();  // every slot of the unit consumed (so every copy landed)
    tcn_merge_warps<T, D>(p, u, smem, st, head0);
    fence_proxy_async_smem();  // the merge's stores precede the next unit's tensor copies
    __syncthreads();
  }
#else
  __trap();  // launched only on sm_90 devices with sm_90 code (decode.cu)
#endif
}

// Shared-memory bytes of each kernel (kv_bytes: bytes of one KV element; nw: warps of the
// tensor-core kernel; transform: fp8 or RoPE staging buffers).
static inline size_t decode_cc_smem(int D, int kv_bytes, int kv_tile, int stages, int hg) {
  size_t raw = 2 * (size_t)stages * kv_tile * D * kv_bytes;
  size_t slots = (size_t)(stages + 1 + decode_l2_tiles(D, kv_bytes, kv_tile)) * kv_tile *
                 sizeof(TokenOffsets);
  int bdz = 128 / ((D / 8) * hg);
  size_t red = (size_t)bdz * hg * D * 4 + (size_t)bdz * hg * 8;
  return (raw + slots > red ? raw + slots : red);
}
static inline size_t decode_tc_smem(int D, int kv_bytes, int kv_tile, int stages, int nw,
                                    bool transform, bool split) {
  const size_t RC = 2 * (size_t)D + 16;
  size_t row = transform ? (size_t)D * kv_bytes : RC;
  size_t raw = 2 * (size_t)stages * kv_tile * row;
  size_t epi = (size_t)decode_merge_bytes(D, nw);
  size_t s = raw > epi ? raw : epi;
  s += (size_t)(stages + 1 + decode_l2_tiles(D, kv_bytes, kv_tile)) * kv_tile *
       sizeof(TokenOffsets);
  s += 16 * RC;
  if (transform) s += 2 * (size_t)kv_tile * RC;
  if (split) s += 16 * RC + (size_t)kv_tile * RC;
  return s;
}
static inline size_t decode_tcw_smem(int D, int stages, int nw) {
  const size_t RC = 2 * (size_t)D + 16;
  size_t raw = (size_t)nw * stages * 2 * 16 * RC;
  size_t epi = (size_t)decode_merge_bytes(D, nw);
  size_t q = 16 * RC;  // staged in the ring
  size_t ring = raw > epi ? raw : epi;
  if (ring < q) ring = q;
  return ring + (size_t)nw * (stages + 1) * 16 * sizeof(TokenOffsets);
}
// Single K and V slots per warp (decode_tcw_kernel with ONE): no stages, no offset slots.
static inline size_t decode_tcw1_smem(int D, int nw) {
  const size_t RC = 2 * (size_t)D + 16;
  size_t raw = (size_t)nw * 2 * 16 * RC;
  size_t epi = (size_t)decode_merge_bytes(D, nw);
  size_t s = raw > epi ? raw : epi;
  return s > 16 * RC ? s : 16 * RC;
}
static inline int decode_tc_warps(int kv_tile) {
  int nw = kv_tile / 16;
  return nw > 4 ? 4 : (nw < 1 ? 1 : nw);
}

// Warps per CTA of decode_tcw_kernel for a grid of `ctas` CTAs. Each warp streams its own
// sub-tiles and its rate is bounded by its own instruction chain, not by the bytes it has
// in flight (bench/NOTES.md, v8: three stages instead of two changed nothing; more resident
// warps per SM did), so the kernel takes time ~ waves(nw) / nw for a fixed amount of work:
// pick nw in 2..12 minimising ceil(ctas / (resident CTAs per SM(nw) x SMs)) / nw, fewer
// warps on ties. E.g. 512 CTAs on 132 SMs: 2 warps (6 per SM, 1 wave) 0.5, 3 warps (4 per
// SM, 1 wave) 0.33, 4 warps (3 per SM, 2 waves) 0.5, 12 warps (1 per SM, 4 waves) 0.33
// -> 3; 128 CTAs -> 12 warps, one CTA per SM.
//
// The occupancy answers depend only on the kernel, nw and the device, and this runs on every
// launch (up to 15 warp counts), so they are kept in `known` when given: known[nw] = resident
// CTAs per SM, -1 none, 0 not asked yet.
template <typename Kernel, typename SmemOf>
static int tcw_warps_for(Kernel kernel, SmemOf smem_of, long long ctas, int sm_count,
                         int max_warps, std::atomic<int> *known) {
  int best = 2;
  double best_cost = 0.0;
  for (int nw = 2; nw <= max_warps; ++nw) {
    int per_sm = known ? known[nw].load(std::memory_order_relaxed) : 0;
    if (per_sm == 0) {
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * nw,
                                                        smem_of(nw)) != cudaSuccess)
        continue;  // not kept: ask again next time
      if (per_sm < 1) per_sm = -1;
      if (known) known[nw].store(per_sm, std::memory_order_relaxed);
    }
    if (per_sm < 1) continue;
    long long slots = (long long)per_sm * (sm_count > 0 ? sm_count : 1);
    double cost = (double)((ctas + slots - 1) / slots) / nw;
    if (nw == 2 || cost < best_cost - 1e-9) {
      best = nw;
      best_cost = cost;
    }
  }
  return best;
}

// The deepest pipeline, 8 stages down to 2, whose shared memory smem_of(stages) fits
// `budget` (2 when none does: the caller checks the hard limit).
template <typename SmemOf>
static int deepest_stages(SmemOf smem_of, size_t budget) {
  int stages = 8;
  while (stages > 2 && smem_of(stages) > budget) --stages;
  return stages;
}

// Launches decode_tws_kernel for `grid`. CTAs per SM k from the grid: 1 for grids of at
// most one CTA per SM, 2 up to two per SM, else 4 (four CTAs per SM: one CTA's unit
// boundary, when its ring drains for the merge, is covered by the other three). Each CTA
// takes 1/k of the SM's shared memory for its ring and NW warps with NW - 1 consumers: 14
// at k = 1 (a single CTA must consume at the SM's share of the bandwidth), 7 at k = 2, 4 at
// k = 4 (16 warps of <= 128 registers fill the register file). The ring's slot count R is a
// multiple of the consumers: within a unit a consumer then waits on a slot whose previous
// phase it consumed itself, so the phase it waits for is never two ahead of the barrier's
// (parity waits would alias); across units the block barrier at each unit's end orders
// every earlier fill. FI_DECODE_TCW_WARPS (2..16) and FI_DECODE_TWS_SLOTS (p.tws_slots)
// override NW and cap R for sweeps and tests.
template <typename T, int D>
static cudaError_t launch_tws(DecodeParams p, dim3 grid, size_t smem_limit,
                              cudaStream_t stream) {
  const long long ctas = (long long)grid.x * grid.y;
  const long long sms = p.sm_count > 0 ? p.sm_count : 1;
  int per_sm = ctas <= sms ? 1 : (ctas <= 2 * sms ? 2 : 4);
  int nw = per_sm == 1 ? 14 : (per_sm == 2 ? 7 : 4);
  if (p.tcw_warps >= 2 && p.tcw_warps <= kTcw1MaxWarps) nw = p.tcw_warps;
  if (per_sm > kTcw1MaxWarps / nw) per_sm = kTcw1MaxWarps / nw;  // registers
  const int consumers = nw - 1;
  long long per_cta = (long long)p.smem_per_sm / per_sm - p.smem_reserved;
  if (per_cta > (long long)smem_limit) per_cta = (long long)smem_limit;
  int slots = kTwsMaxSlots / consumers * consumers;
  const bool rope = p.pos_encoding == FI_POS_ROPE_LLAMA, split = rope && is_bf16<T>::value;
  while (slots > consumers && (long long)decode_tws_smem(D, nw, slots, split) > per_cta)
    slots -= consumers;
  if (p.tws_slots >= consumers && p.tws_slots < slots)
    slots = p.tws_slots / consumers * consumers;
  const size_t smem = decode_tws_smem(D, nw, slots, split);
  if (smem > smem_limit) return cudaErrorInvalidConfiguration;
  p.stages = slots;
  if (rope)
    return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem,
                             decode_tws_kernel<T, D, true>, p, *p.tws_maps);
  return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem,
                           decode_tws_kernel<T, D, false>, p, *p.tws_maps);
}

// Launches the CUDA-core (tc == false) or tensor-core kernel for `p` (p.stages is chosen
// here: the deepest pipeline within `smem_budget` bytes, at least 2 stages).
template <typename T, typename KVT, int D>
static cudaError_t decode_launch(DecodeParams p, bool tc, int grid_x, size_t smem_budget,
                                 size_t smem_limit, cudaStream_t stream) {
  int grid_y = p.num_kv_heads * (p.group / p.heads_per_cta);
  p.grid_heads = grid_y;
  dim3 grid(grid_x, grid_y);
  if (p.head_fast) {
    long long n = (long long)grid_x * grid_y;
    if (n > 0x7fffffffLL) n = 0x7fffffffLL / grid_y * grid_y;  // whole unit slots
    grid = dim3((unsigned)n, 1);
  }
  if (tc) {
    int nw = decode_tc_warps(p.kv_tile);
    bool transform = sizeof(KVT) == 1 || p.pos_encoding == FI_POS_ROPE_LLAMA;
    // The per-warp kernel exists for 16-bit KV and head_dim <= 128 only (not instantiated
    // for the others: at head_dim 256 its 12-warp register budget would spill).
    // Warp-specialised (sm_90; RoPE too, rotated in registers): decode.cu gives it tensor
    // maps where it applies; a configuration it cannot take falls through.
    if constexpr (D <= 128 && sizeof(KVT) == 2) if (p.warp_pipe && p.tws_maps) {
      const cudaError_t e = launch_tws<T, D>(p, grid, smem_limit, stream);
      if (e != cudaErrorInvalidConfiguration) return e;  // else: the kernels below
    }
    if constexpr (D <= 128 && sizeof(KVT) == 2) if (p.warp_pipe && !transform) {
      // Per variant (0 rows form, 1 heads on N with the ring, 2 with single slots) and per
      // (T, KVT, D), this function's instantiation.
      static TcwOccupancy occupancy[3];
      // smem_of(nw, stages): the kernel's shared memory; staged: the ring's depth is chosen
      // (the deepest within the budget), else the kernel has single slots (stages unused).
      auto launch_tcw = [&](auto kernel, int variant, int max_warps, auto smem_of, bool staged) {
        int nw = p.tcw_warps < max_warps ? p.tcw_warps : max_warps;
        if (nw <= 0) {
          int dev = -1;
          std::atomic<int> *known =
              cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < kTcwKnownDevices
                  ? occupancy[variant].per_sm[dev]
                  : nullptr;
          // Two stages per warp, the per-warp ring measured best (v6).
          auto two_stage = [&](int w) { return smem_of(w, 2); };
          nw = tcw_warps_for(kernel, two_stage, (long long)grid.x * grid.y, p.sm_count,
                             max_warps, known);
        }
        auto of_stages = [&](int stages) { return smem_of(nw, stages); };
        int stages = staged ? deepest_stages(of_stages, smem_budget) : 1;
        size_t smem = of_stages(stages);
        if (smem > smem_limit) return cudaErrorInvalidConfiguration;
        p.stages = stages;
        return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem, kernel, p);
      };
      auto ring_smem = [&](int w, int stages) { return decode_tcw_smem(D, stages, w); };
      auto single_smem = [&](int w, int) { return decode_tcw1_smem(D, w); };
      const bool heads_n = p.heads_n && p.heads_per_cta <= 8;
      // Single slots need every unit page-aligned: page size a multiple of 16 and no window
      // (the planner's chunks start on page boundaries).
      if (heads_n && p.single_slots && p.page_size % 16 == 0 && p.window_left < 0)
        return launch_tcw(decode_tcw_kernel<T, KVT, D, true, true>, 2, kTcw1MaxWarps,
                          single_smem, false);
      if (heads_n)
        return launch_tcw(decode_tcw_kernel<T, KVT, D, true, false>, 1, kTcwMaxWarps, ring_smem,
                          true);
      return launch_tcw(decode_tcw_kernel<T, KVT, D, false, false>, 0, kTcwMaxWarps, ring_smem,
                        true);
    }
    bool split = p.pos_encoding == FI_POS_ROPE_LLAMA && is_bf16<T>::value;
    auto smem_of = [&](int stages) {
      return decode_tc_smem(D, (int)sizeof(KVT), p.kv_tile, stages, nw, transform, split);
    };
    int stages = deepest_stages(smem_of, smem_budget);
    size_t smem = smem_of(stages);
    if (smem > smem_limit) return cudaErrorInvalidConfiguration;
    p.stages = stages;
    return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem,
                             decode_tc_kernel<T, KVT, D>, p);
  } else {
    auto smem_of = [&](int stages) {
      return decode_cc_smem(D, (int)sizeof(KVT), p.kv_tile, stages, p.heads_per_cta);
    };
    int stages = deepest_stages(smem_of, smem_budget);
    size_t smem = smem_of(stages);
    if (smem > smem_limit) return cudaErrorInvalidConfiguration;
    p.stages = stages;
    return launch_on(stream, p.pdl != 0, grid, dim3(128), smem, decode_cc_kernel<T, KVT, D>,
                             p);
  }
}

// Raises every decode kernel's dynamic shared-memory limit to the device's opt-in maximum,
// once per context creation (not on the run path: a run may be inside a graph capture).
template <typename T, typename KVT>
static cudaError_t decode_prepare_kv(int limit) {
  cudaError_t e = cudaSuccess;
#define FI_PREP(K)                                                                         \
  if (e == cudaSuccess)                                                                    \
    e = cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, limit);
  FI_PREP((decode_cc_kernel<T, KVT, 64>)) FI_PREP((decode_cc_kernel<T, KVT, 128>))
  FI_PREP((decode_cc_kernel<T, KVT, 256>)) FI_PREP((decode_tc_kernel<T, KVT, 64>))
  FI_PREP((decode_tc_kernel<T, KVT, 128>)) FI_PREP((decode_tc_kernel<T, KVT, 256>))
  if constexpr (sizeof(KVT) == 2) {
    FI_PREP((decode_tcw_kernel<T, KVT, 64, false, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 128, false, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 64, true, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 128, true, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 64, true, true>))
    FI_PREP((decode_tcw_kernel<T, KVT, 128, true, true>))
    FI_PREP((decode_tws_kernel<T, 64, false>))
    FI_PREP((decode_tws_kernel<T, 128, false>))
    FI_PREP((decode_tws_kernel<T, 64, true>))
    FI_PREP((decode_tws_kernel<T, 128, true>))
  }
#undef FI_PREP
  return e;
}
template <typename T>
static cudaError_t decode_prepare(int limit) {
  cudaError_t e = decode_prepare_kv<T, T>(limit);
  if (e == cudaSuccess) e = decode_prepare_kv<T, e4m3>(limit);
  if (e == cudaSuccess) e = decode_prepare_kv<T, e5m2>(limit);
  return e;
}

template <typename T>
static cudaError_t decode_dispatch(const DecodeParams &p, fi_dtype kv_dtype, int head_dim,
                                   bool tc, int grid_x, size_t budget, size_t limit,
                                   cudaStream_t s) {
#define FI_DECODE_D(KVT)                                                              \
  switch (head_dim) {                                                                 \
    case 64: return decode_launch<T, KVT, 64>(p, tc, grid_x, budget, limit, s);       \
    case 128: return decode_launch<T, KVT, 128>(p, tc, grid_x, budget, limit, s);     \
    case 256: return decode_launch<T, KVT, 256>(p, tc, grid_x, budget, limit, s);     \
    default: return cudaErrorInvalidValue;                                            \
  }
  if (kv_dtype == FI_DTYPE_E4M3) { FI_DECODE_D(e4m3) }
  if (kv_dtype == FI_DTYPE_E5M2) { FI_DECODE_D(e5m2) }
  FI_DECODE_D(T)
#undef FI_DECODE_D
}

}  // namespace fi

#endif
