// kernels/cuda/decode_common.cuh -- what every decode kernel shares: the argument block
// (DecodeParams), the work split over the grid (block_coords, unit ranges), RoPE and logits
// transforms, the cp.async gather pipeline through the page table (Pipe), the online-softmax
// state writes, and the mma.sync building blocks of the tensor-core kernels.
//
// Work split of every decode kernel. The planner's work units (request, KV chunk [kv_start,
// kv_end)) go on grid.x (a grid-stride loop over the unit count read from the workspace, so
// a CUDA graph captured with one plan stays correct after re-planning); grid.y enumerates
// (kv head, head chunk): one CTA computes `hg` query heads that share one KV head, so each
// K/V token of that head is read from device memory once per head chunk (once in all when
// hg == group). A unit with partial_row >= 0 writes an fp32 partial (o, lse) row to the
// workspace; merge.cu combines the chunks in order. Launch order: by default the (kv head,
// head chunk) index varies fastest (1-D grid), so the CTAs of one unit run together on
// neighbouring head rows of the same pages.
//
// Pipeline (the CUDA-core and mma.sync kernels). K and V tiles of `T = kv_tile` tokens are
// gathered through kv_indices with 16-byte cp.async (zero fill past the end), S stages deep.
// The page id of each token of a future tile is looked up one iteration ahead into a small
// shared array, so the copy issue never waits on the index load.
#ifndef FI_CUDA_DECODE_COMMON_CUH
#define FI_CUDA_DECODE_COMMON_CUH

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
  // of decode_tcw_kernel / decode_tws_kernel (0: chosen by tcw_warps_for / launch_tws), a
  // cap on decode_tws_kernel's ring slots (0: as many as fit) and on the CTAs of the launch
  // (0: none; the CTAs then loop over the unit slots, see block_coords).
  int32_t sm_count, tcw_warps, tws_slots, max_ctas;
  int32_t smem_per_sm, smem_reserved;  // the device's shared memory per SM, reserved per block
  int32_t pdl;         // 1: launched with programmatic stream serialization (pdl_enter)
  // Not NULL: heads-on-N plans with page sizes a multiple of 4 run decode_tws_kernel with
  // these tensor maps (the device and the build have sm_90; decode.cu encodes them). A host
  // pointer, read by the launcher only.
  const TwsMaps *tws_maps;
  // Not NULL: a program's variant kernel (variant/variant_kernels.cu, loaded by
  // variant_images.cu) runs in place of decode_tws_kernel, with `variant` as its third
  // parameter. Host pointers, read by the launcher only.
  const void *variant_kernel;
  const struct DecodeVariant *variant;
};

// An attention variant compiled into the warp-specialised decode kernel (runtime.h,
// fi_variant; variant_hooks.cuh): which hooks are on, and the op's captured values by value.
// Its own kernel parameter, so the runtime's kernels keep their argument block.
struct DecodeVariant {
  int32_t score, mask;
  uint64_t captures[FI_VARIANT_MAX_CAPTURE_BYTES / 8];
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

}  // namespace fi

#endif  // FI_CUDA_DECODE_COMMON_CUH
