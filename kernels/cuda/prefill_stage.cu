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
    // Its request and token j, and where the source row is.
    int r, j;
    int64_t off;
    const int64_t st_tok = is_k ? s.src.k_stride_tok : s.src.v_stride_tok;
    if (s.src.paged) {
      const int e = row / s.src.page_size, slot = row - e * s.src.page_size;
      if (e >= kv_end) continue;
      r = owner(s.src.kv_indptr, batch, e);
      j = (e - __ldg(s.src.kv_indptr + r)) * s.src.page_size + slot;
      if (j >= kv_len_of(s, r)) continue;
      const int page = __ldg(s.src.kv_indices + e);
      off = (int64_t)page * (is_k ? s.src.k_stride_page : s.src.v_stride_page) +
            (int64_t)slot * st_tok;
    } else {
      if (row >= kv_end) continue;
      r = owner(s.src.kv_indptr, batch, row);
      j = row - __ldg(s.src.kv_indptr + r);
      off = (int64_t)row * st_tok;
    }
    off += (int64_t)h * (is_k ? s.src.k_stride_head : s.src.v_stride_head);
    const char *src = (const char *)(is_k ? s.src.k : s.src.v) + esz * off;
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

}  // namespace

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
