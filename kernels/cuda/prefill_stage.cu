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
// Work split. A flat grid-stride loop over the staged K/V rows at their capacity
// (rows x heads x 8-dim chunks, or with RoPE pairs of chunks d, d + head_dim / 2), one
// 16-byte store per chunk; each item finds its request by a binary search of the indptr,
// and items past the current plan's rows do nothing. Nothing depends on the batch the host
// saw: it is read from the plan's workspace header, so a CUDA graph replayed after
// re-planning stages the current requests.
//   - K: rotated at position j (RoPE) and/or widened from fp8, or copied (pages whose size
//     is not a multiple of 16: the kernel's paged boxes need 16-token runs).
//   - V (fp8 or such pages): widened or copied.
// Staged K/V row of request r's token j: ragged kv_indptr[r] + j (the source's own row);
// paged kv_indptr[r] * page_size + j (page-table entry times the page size, so a row is
// found from its entry; the slots of a last page past kv_len are never written nor read:
// the kernel masks K and zeroes V past kv_len).
// Memory traffic: each staged element read once and written once (fp8: 1 byte read, 2
// written); the kernel then reads the staged copies as it would read the cache.
// Why K is staged and Q is not: the kernel reads each K tile once per query chunk (a causal
// 8k prefill ~32 times per head), so rotating or widening it there would repeat the work
// that many times on the warps that feed the tensor cores.
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

// Where staged row `row` of KV head h comes from: its token j within its request and the
// element offsets of its K and V in the source; false when the row holds no key (past the
// page table's last entry or the last request's rows, or a last page's slots past kv_len).
// kv_end: kv_indptr[batch] (paged: page-table entries; ragged: rows).
__device__ __forceinline__ bool staged_row_source(const PrefillStageArgs &s, int batch,
                                                  int kv_end, int row, int h, int *j,
                                                  int64_t *k_off, int64_t *v_off) {
  int64_t k_base, v_base;
  if (s.src.paged) {
    const int e = row / s.src.page_size, slot = row - e * s.src.page_size;
    if (e >= kv_end) return false;
    const int r = owner(s.src.kv_indptr, batch, e);
    *j = (e - __ldg(s.src.kv_indptr + r)) * s.src.page_size + slot;
    if (*j >= kv_len_of(s, r)) return false;
    const int page = __ldg(s.src.kv_indices + e);
    k_base = (int64_t)page * s.src.k_stride_page + (int64_t)slot * s.src.k_stride_tok;
    v_base = (int64_t)page * s.src.v_stride_page + (int64_t)slot * s.src.v_stride_tok;
  } else {
    if (row >= kv_end) return false;
    *j = row - __ldg(s.src.kv_indptr + owner(s.src.kv_indptr, batch, row));
    k_base = (int64_t)row * s.src.k_stride_tok;
    v_base = (int64_t)row * s.src.v_stride_tok;
  }
  *k_off = k_base + (int64_t)h * s.src.k_stride_head;
  *v_off = v_base + (int64_t)h * s.src.v_stride_head;
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
  const int k_per_row = s.rope ? pairs : chunks;
  const int64_t per_k = s.sk ? s.kv_rows_cap * s.src.num_kv_heads * k_per_row : 0;
  const int64_t per_v = s.sv ? s.kv_rows_cap * s.src.num_kv_heads * chunks : 0;
  const int64_t total = per_k + per_v;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t item = i;
    const bool is_k = item < per_k;
    if (!is_k) item -= per_k;
    const int per_row = is_k ? k_per_row : chunks;
    const int c = (int)(item % per_row), h = (int)(item / per_row % s.src.num_kv_heads);
    const int row = (int)(item / per_row / s.src.num_kv_heads);  // staged row
    // Its token j, and where the source row is.
    int j;
    int64_t k_off, v_off;
    if (!staged_row_source(s, batch, kv_end, row, h, &j, &k_off, &v_off)) continue;
    const char *src = (const char *)(is_k ? s.src.k : s.src.v) + esz * (is_k ? k_off : v_off);
    char *dst =
        (char *)(is_k ? s.sk : s.sv) + 2 * (((int64_t)row * s.src.num_kv_heads + h) * hd);
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

// fp8 attention: V^T for the P V wgmma (fp8 takes only K-major operands) and, for a paged
// cache, K as token rows. One CTA per (128 staged rows, KV head): the rows' V (and K) land
// in shared memory with 16-byte loads, then each thread writes 16-byte runs of V^T rows,
// logical column k of a 32-key group holding key perm32_key(k) (prefill_kernel.cuh).
// Staged rows that hold no key (the slots of a last page past kv_len, rows past the last
// request) are written as zeros, up to the last row a tile box can reach (P is 0 there, but
// 0 x NaN would be NaN); CTAs past it return.
__global__ void __launch_bounds__(256) prefill_stage_fp8_kernel(const PrefillStageArgs s) {
  fi::pdl_enter();
  constexpr int ROWS = 128, PITCH = 144;  // (144: the transpose's column reads spread over banks)
  __shared__ __align__(16) uint8_t tile[ROWS * PITCH];  // [row][head_dim <= 128]
  __shared__ int64_t k_src[ROWS], v_src[ROWS];          // source offsets; -1: no key
  const int batch = s.device_batch ? *s.device_batch : s.batch;
  const int hd = s.head_dim, chunks = hd / 16, h = blockIdx.y;
  const int64_t row0 = (int64_t)blockIdx.x * ROWS;
  const int kv_end = batch > 0 ? __ldg(s.src.kv_indptr + batch) : 0;
  const int64_t used = s.src.paged ? (int64_t)kv_end * s.src.page_size : kv_end;
  if (row0 > used + ROWS || row0 >= s.vt_pitch) return;
  for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {  // each row's source, once
    int j;
    const int64_t row = row0 + r;
    if (!(row < used && row < s.kv_rows_cap &&
          staged_row_source(s, batch, kv_end, (int)row, h, &j, &k_src[r], &v_src[r])))
      k_src[r] = v_src[r] = -1;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < ROWS * chunks; i += blockDim.x) {
    const int r = i / chunks, c = i % chunks;
    const int64_t row = row0 + r;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (v_src[r] >= 0) v = __ldg(reinterpret_cast<const uint4 *>((const uint8_t *)s.src.v + v_src[r]) + c);
    *reinterpret_cast<uint4 *>(tile + r * PITCH + c * 16) = v;
    if (s.sk && k_src[r] >= 0)
      reinterpret_cast<uint4 *>((uint8_t *)s.sk + (row * s.src.num_kv_heads + h) * hd)[c] =
          __ldg(reinterpret_cast<const uint4 *>((const uint8_t *)s.src.k + k_src[r]) + c);
  }
  __syncthreads();
  // V^T row d, columns [row0, row0 + 128): 8 runs of 16 logical columns per row.
  uint8_t *const vt = (uint8_t *)s.svt + (int64_t)h * hd * s.vt_pitch + row0;
  for (int i = threadIdx.x; i < hd * (ROWS / 16); i += blockDim.x) {
    const int d = i / (ROWS / 16), run = i % (ROWS / 16);
    uint32_t w[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t x = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int col = run * 16 + q * 4 + b;
        const int key = (col & ~31) + fi_prefill::perm32_key(col & 31);
        x |= (uint32_t)tile[key * PITCH + d] << (8 * b);
      }
      w[q] = x;
    }
    *reinterpret_cast<uint4 *>(vt + (int64_t)d * s.vt_pitch + run * 16) =
        make_uint4(w[0], w[1], w[2], w[3]);
  }
}

}  // namespace

cudaError_t fi_prefill_stage_fp8_launch(const PrefillStageArgs &s, bool pdl, cudaStream_t stream) {
  const int64_t tiles = (s.vt_pitch + 127) / 128;
  if (tiles == 0 || s.src.num_kv_heads <= 0) return cudaSuccess;
  return fi::launch_on(stream, pdl, dim3((unsigned)tiles, (unsigned)s.src.num_kv_heads),
                       dim3(256), 0, prefill_stage_fp8_kernel, s);
}

cudaError_t fi_prefill_stage_launch(const PrefillStageArgs &s, bool bf16, int sm_count,
                                    bool pdl, cudaStream_t stream) {
  const int hd = s.head_dim;
  const int64_t rows = s.kv_rows_cap * s.src.num_kv_heads;
  const int64_t items =
      (s.sk ? rows * (s.rope ? hd / 16 : hd / 8) : 0) + (s.sv ? rows * (hd / 8) : 0);
  if (items == 0) return cudaSuccess;
  // At most 8 blocks of 256 threads per SM; the loop strides over the rest.
  const int64_t cap = 8LL * (sm_count > 0 ? sm_count : 1);
  const int64_t blocks = (items + 255) / 256;
  const dim3 grid((unsigned)(blocks < cap ? blocks : cap)), block(256);
  return bf16 ? fi::launch_on(stream, pdl, grid, block, 0, prefill_stage_kernel<__nv_bfloat16>, s)
              : fi::launch_on(stream, pdl, grid, block, 0, prefill_stage_kernel<__half>, s);
}
