// prefill_stage.cu -- the stage pass of the warp-specialised prefill kernel: one pass over
// a run's K and V that writes them in the form prefill_ws.cuh takes (16-bit of q's type,
// contiguous token rows), so that RoPE, fp8 KV and pages of any size run on that kernel
// instead of the one-warpgroup kernels. (Q needs no pass: with RoPE the kernel rotates each
// Q tile in shared memory as it lands, since every query row is loaded exactly once.)
//
// Why a pass and not work inside the kernel: the kernel reads each K tile once per query
// chunk (a causal 8k prefill reads it ~32 times per head); rotating or widening it there
// costs that many times over, on the warps that feed the tensor cores. Here every element is
// transformed once: O(tokens) work beside the kernel's O(tokens^2).
//
// Work split. A warp per staged row at a time (a grid-stride loop over the rows at their
// capacity): the row finds its request (a binary search of the indptr) and its source
// once, then its lanes take the row's (head, 8-dim chunk) items -- with RoPE, K's pairs of
// chunks d, d + head_dim / 2 -- one 16-byte store each; rows past the current plan's do
// nothing. (A flat loop over the items, each finding its row with 64-bit divisions and
// its own search, moved a 134 MB copy at 2 TB/s; bench/NOTES.md, session 73.) Nothing
// depends on the batch the host saw: it is read from the plan's workspace header, so a
// CUDA graph replayed after re-planning stages the current requests.
//   - K: rotated at position j (RoPE) and/or widened from fp8, or copied (pages whose size
//     is not a multiple of 16: the kernel's paged boxes need 16-token runs).
//   - V (fp8 or such pages): widened or copied.
// Staged K/V row of request r's token j: ragged kv_indptr[r] + j (the source's own row);
// paged kv_indptr[r] * page_size + j (page-table entry times the page size, so a row is
// found from its entry; the slots of a last page past kv_len are never written nor read:
// the kernel masks K and zeroes V past kv_len).
// Memory traffic: each staged element read once and written once (fp8: 1 byte read, 2
// written); the kernel then reads the staged copies as it would read the cache.
// The math matches prefill_kernel.cuh's in-kernel RoPE (same frequencies, the same
// range-reduced sincos, rounded to q's type) and its fp8 widening (exact).
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common.cuh"
#include "prefill_kernel.cuh"
#include "prefill_stage.h"

namespace {

template <typename DT>
__device__ __forceinline__ void load8(const void *src, int kv_kind, float *out) {
  if (kv_kind == FI_KV_E4M3)
    fi::vec8<fi::e4m3>::load(src, out);
  else if (kv_kind == FI_KV_E5M2)
    fi::vec8<fi::e5m2>::load(src, out);
  else
    fi::vec8<DT>::load(src, out);
}

// LLaMA RoPE of dims d0..d0+7 (a) against d0 + hd/2 .. (b) at position pos.
__device__ __forceinline__ void rotate8(float *a, float *b, int d0, int pos,
                                        const PrefillStageArgs &s) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int d = d0 + i;
    const float freq =
        s.src.rope_rcp_scale * exp2f(-(2.f * d / s.head_dim) * s.src.rope_log2_theta);
    float sn, cs;
    fi::sincos_reduced((float)pos * freq, &sn, &cs);
    const float x0 = a[i], x1 = b[i];
    a[i] = x0 * cs - x1 * sn;
    b[i] = x1 * cs + x0 * sn;
  }
}

// The r in [0, n) with indptr[r] <= x < indptr[r + 1] (x < indptr[n]; empty requests are
// skipped: the last r whose start is <= x).
__device__ __forceinline__ int owner(const int32_t *indptr, int n, int x) {
  int lo = 0, hi = n;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (__ldg(indptr + mid) <= x) lo = mid; else hi = mid;
  }
  return lo;
}

__device__ __forceinline__ int kv_len_of(const PrefillStageArgs &s, int r) {
  const int n = __ldg(s.src.kv_indptr + r + 1) - __ldg(s.src.kv_indptr + r);
  if (!s.src.paged) return n;
  return n > 0 ? (n - 1) * s.src.page_size + __ldg(s.src.kv_last_page_len + r) : 0;
}

// Where staged row `row` comes from: its token j within its request and the element offsets
// of its K and V in the source (KV head 0's; head h's are h head strides on); false when the
// row holds no key (past the page table's last entry or the last request's rows, or a last
// page's slots past kv_len).
// kv_end: kv_indptr[batch] (paged: page-table entries; ragged: rows).
__device__ __forceinline__ bool staged_row_source(const PrefillStageArgs &s, int batch,
                                                  int kv_end, int row, int *j,
                                                  int64_t *k_off, int64_t *v_off) {
  if (s.src.paged) {
    const int e = row / s.src.page_size, slot = row - e * s.src.page_size;
    if (e >= kv_end) return false;
    const int r = owner(s.src.kv_indptr, batch, e);
    *j = (e - __ldg(s.src.kv_indptr + r)) * s.src.page_size + slot;
    if (*j >= kv_len_of(s, r)) return false;
    const int page = __ldg(s.src.kv_indices + e);
    *k_off = (int64_t)page * s.src.k_stride_page + (int64_t)slot * s.src.k_stride_tok;
    *v_off = (int64_t)page * s.src.v_stride_page + (int64_t)slot * s.src.v_stride_tok;
  } else {
    if (row >= kv_end) return false;
    *j = row - __ldg(s.src.kv_indptr + owner(s.src.kv_indptr, batch, row));
    *k_off = (int64_t)row * s.src.k_stride_tok;
    *v_off = (int64_t)row * s.src.v_stride_tok;
  }
  return true;
}

template <typename DT>
__global__ void prefill_stage_kernel(const PrefillStageArgs s) {
  fi::pdl_enter();
  const int batch = s.device_batch ? *s.device_batch : s.batch;
  if (batch <= 0) return;
  const int hd = s.head_dim, half = hd / 2;
  const int chunks = hd / 8, pairs = hd / 16;  // per head row
  const int esz = s.kv_kind == FI_KV_SAME ? 2 : 1;
  const int kv_end = __ldg(s.src.kv_indptr + batch);  // paged: entries; ragged: rows
  const int heads = s.src.num_kv_heads;
  const int k_per_head = s.rope ? pairs : chunks;
  const int k_items = s.sk ? heads * k_per_head : 0, v_items = s.sv ? heads * chunks : 0;
  const int lane = threadIdx.x & 31;
  const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; row < s.kv_rows_cap;
       row += warps) {
    // Its token j, and where its source row is.
    int j;
    int64_t k_off, v_off;
    if (!staged_row_source(s, batch, kv_end, (int)row, &j, &k_off, &v_off)) continue;
    for (int i = lane; i < k_items + v_items; i += 32) {
      const bool is_k = i < k_items;
      const int item = is_k ? i : i - k_items, per_head = is_k ? k_per_head : chunks;
      const int h = item / per_head, c = item - h * per_head;
      const char *src =
          is_k ? (const char *)s.src.k + esz * (k_off + (int64_t)h * s.src.k_stride_head)
               : (const char *)s.src.v + esz * (v_off + (int64_t)h * s.src.v_stride_head);
      char *dst = (char *)(is_k ? s.sk : s.sv) + 2 * ((row * heads + h) * hd);
      if (is_k && s.rope) {
        float a[8], b[8];
        load8<DT>(src + esz * c * 8, s.kv_kind, a);
        load8<DT>(src + esz * (c * 8 + half), s.kv_kind, b);
        rotate8(a, b, c * 8, j, s);
        fi::vec8<DT>::store(dst + 2 * c * 8, a);
        fi::vec8<DT>::store(dst + 2 * (c * 8 + half), b);
      } else {
        float x[8];
        load8<DT>(src + esz * c * 8, s.kv_kind, x);
        fi::vec8<DT>::store(dst + 2 * c * 8, x);
      }
    }
  }
}

// fp8 attention: V^T for the P V wgmma (fp8 takes only K-major operands) and, for a paged
// cache, K as token rows. One CTA of FP8_STAGE_THREADS (8 warps) per (128 staged rows, KV
// head): the rows' V (and K) land in shared memory with 16-byte loads (rows of 128 bytes);
// warp g transposes key group g (16 keys): lane q takes head dims [4 q, 4 q + 4) of its 16
// keys (16 32-bit loads of one key row each, the 32 lanes on 32 banks) as four 4 x 4 byte
// blocks (8 byte permutes each), logical column 4 t + i of the group holding key
// 8 (i / 2) + 2 t + i % 2 (perm32_key, prefill_kernel.cuh); the V^T rows go back into the
// tile and out as whole 128-byte rows (16-byte stores of a lane's own, one per head dim,
// wrote half sectors at 32 places per warp store: L2-bound at ~1.5 TB/s). V transposed
// inside the attention kernel instead, by its idle producer warps, measured 8-15 % slower
// on the GQA rows (its raw V slots cost the ring a stage; bench/NOTES.md, session 73).
// Memory traffic: V read once and V^T written once (a paged cache's K read and written once
// more).
// Staged rows that hold no key (the slots of a last page past kv_len, rows past the last
// request) are written as zeros, up to the last row a tile box can reach (P is 0 there, but
// 0 x NaN would be NaN); CTAs past it return.
constexpr int FP8_STAGE_THREADS = 256;

__global__ void __launch_bounds__(FP8_STAGE_THREADS)
    prefill_stage_fp8_kernel(const PrefillStageArgs s) {
  fi::pdl_enter();
  // (HD: fp8 attention's only head_dim, fi_prefill_stage_layout; a lane per 4 head dims)
  constexpr int ROWS = 128, HD = 128, CHUNKS = HD / 16;
  __shared__ __align__(16) uint8_t tile[ROWS * HD];  // [row][head dim], then [head dim][row]
  __shared__ int64_t k_src[ROWS], v_src[ROWS];             // source offsets; -1: no key
  const int batch = s.device_batch ? *s.device_batch : s.batch;
  const int h = blockIdx.y;
  const int64_t row0 = (int64_t)blockIdx.x * ROWS;
  const int kv_end = batch > 0 ? __ldg(s.src.kv_indptr + batch) : 0;
  const int64_t used = s.src.paged ? (int64_t)kv_end * s.src.page_size : kv_end;
  if (row0 > used + ROWS || row0 >= s.vt_pitch) return;
  for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {  // each row's source, once
    int j;
    int64_t k_off, v_off;
    const int64_t row = row0 + r;
    const bool kept = row < used && row < s.kv_rows_cap &&
                      staged_row_source(s, batch, kv_end, (int)row, &j, &k_off, &v_off);
    k_src[r] = kept ? k_off + (int64_t)h * s.src.k_stride_head : -1;
    v_src[r] = kept ? v_off + (int64_t)h * s.src.v_stride_head : -1;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < ROWS * CHUNKS; i += blockDim.x) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    const int64_t row = row0 + r;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (v_src[r] >= 0) v = __ldg(reinterpret_cast<const uint4 *>((const uint8_t *)s.src.v + v_src[r]) + c);
    *reinterpret_cast<uint4 *>(tile + r * HD + c * 16) = v;
    if (s.sk && k_src[r] >= 0)
      reinterpret_cast<uint4 *>((uint8_t *)s.sk + (row * s.src.num_kv_heads + h) * HD)[c] =
          __ldg(reinterpret_cast<const uint4 *>((const uint8_t *)s.src.k + k_src[r]) + c);
  }
  __syncthreads();
  // V^T rows [0, HD) of this KV head, columns [row0, row0 + 128): key group g by warp g,
  // into registers, then back into the tile as V^T (row d's 16-byte chunk g at chunk
  // g ^ (d / 4 % 8): a quarter-warp's stores on 8 bank groups), then out in whole rows.
  const int q = threadIdx.x & 31;  // (the lane)
  const int g = threadIdx.x >> 5;  // (8 warps, 8 key groups)
  static_assert(FP8_STAGE_THREADS == 32 * (ROWS / 16), "a warp per 16-key group");
  static_assert(HD == 4 * 32, "a lane per 4 head dims");
  uint32_t w[16];  // head dims [4 q, 4 q + 4) of keys 16 g + k
#pragma unroll
  for (int k = 0; k < 16; ++k)
    w[k] = *reinterpret_cast<const uint32_t *>(tile + (16 * g + k) * HD + 4 * q);
  uint32_t o[4][4];  // [head dim 4 q + j][column quad t]: keys 2 t, 2 t + 1, 2 t + 8, 2 t + 9
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const uint32_t a = w[2 * t], b = w[2 * t + 1], c = w[2 * t + 8], d = w[2 * t + 9];
    const uint32_t ab_lo = __byte_perm(a, b, 0x5140), ab_hi = __byte_perm(a, b, 0x7362);
    const uint32_t cd_lo = __byte_perm(c, d, 0x5140), cd_hi = __byte_perm(c, d, 0x7362);
    o[0][t] = __byte_perm(ab_lo, cd_lo, 0x5410), o[1][t] = __byte_perm(ab_lo, cd_lo, 0x7632);
    o[2][t] = __byte_perm(ab_hi, cd_hi, 0x5410), o[3][t] = __byte_perm(ab_hi, cd_hi, 0x7632);
  }
  __syncthreads();  // (every warp's keys read before any V^T row lands on them)
#pragma unroll
  for (int j = 0; j < 4; ++j)
    *reinterpret_cast<uint4 *>(tile + (4 * q + j) * ROWS + 16 * (g ^ (q & 7))) =
        make_uint4(o[j][0], o[j][1], o[j][2], o[j][3]);
  __syncthreads();
  uint8_t *const vt = (uint8_t *)s.svt + (int64_t)h * HD * s.vt_pitch + row0;
  for (int i = threadIdx.x; i < HD * (ROWS / 16); i += blockDim.x) {
    const int d = i / (ROWS / 16), c = i % (ROWS / 16);
    *reinterpret_cast<uint4 *>(vt + (int64_t)d * s.vt_pitch + 16 * c) =
        *reinterpret_cast<const uint4 *>(tile + d * ROWS + 16 * (c ^ (d / 4 % 8)));
  }
}

}  // namespace

cudaError_t fi_prefill_stage_fp8_launch(const PrefillStageArgs &s, bool pdl, cudaStream_t stream) {
  if (s.head_dim != 128) return cudaErrorInvalidValue;  // (fi_prefill_stage_layout's rule)
  const int64_t tiles = (s.vt_pitch + 127) / 128;
  if (tiles == 0 || s.src.num_kv_heads <= 0) return cudaSuccess;
  return fi::launch_on(stream, pdl, dim3((unsigned)tiles, (unsigned)s.src.num_kv_heads),
                       dim3(FP8_STAGE_THREADS), 0, prefill_stage_fp8_kernel, s);
}

cudaError_t fi_prefill_stage_launch(const PrefillStageArgs &s, bool bf16, int sm_count,
                                    bool pdl, cudaStream_t stream) {
  if ((!s.sk && !s.sv) || s.kv_rows_cap <= 0 || s.src.num_kv_heads <= 0) return cudaSuccess;
  // A warp per staged row; at most 8 blocks of 256 threads per SM, the loop strides over
  // the rest.
  const int64_t cap = 8LL * (sm_count > 0 ? sm_count : 1);
  const int64_t blocks = (s.kv_rows_cap + 7) / 8;
  const dim3 grid((unsigned)(blocks < cap ? blocks : cap)), block(256);
  return bf16 ? fi::launch_on(stream, pdl, grid, block, 0, prefill_stage_kernel<__nv_bfloat16>, s)
              : fi::launch_on(stream, pdl, grid, block, 0, prefill_stage_kernel<__half>, s);
}
