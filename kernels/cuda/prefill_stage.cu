// prefill_stage.cu -- the stage pass of the warp-specialised prefill kernel: one pass over
// a run's Q, K and V that writes them in the form prefill_ws.cuh takes (16-bit of q's
// type, contiguous token rows), so that RoPE, fp8 KV and pages of any size run on that
// kernel instead of the one-warpgroup kernels.
//
// Why a pass and not work inside the kernel: the kernel reads each K tile once per query
// chunk (a causal 8k prefill reads it ~32 times per head); rotating or widening it there
// costs that many times over, on the warps that feed the tensor cores. Here every element is
// transformed once: O(tokens) work beside the kernel's O(tokens^2).
//
// Work split. Grid (x, min(batch, 65535)); blockIdx.y strides over requests, the x threads
// of a request over its items: (token, head, 8-dim chunk) of V, or with RoPE (token, head,
// pair of 8-dim chunks d, d + head_dim / 2) of Q and K, each written with 16-byte stores.
//   - Q (RoPE only): staged row qo_indptr[r] + t, rotated at position kv_len - qo_len + t.
//   - K: rotated at position j (RoPE) and/or widened from fp8, or copied (pages whose size
//     is not a multiple of 16: the kernel's paged boxes need 16-token runs).
//   - V (fp8 or such pages): widened or copied.
// Staged K/V row of request r's token j: ragged kv_indptr[r] + j (the source's own row);
// paged kv_indptr[r] * page_size + j (page-table entries times the page size, so no prefix
// sum over the lengths is needed; rows of a request's unused last-page slots stay unwritten
// and are never read: the kernel masks K and zeroes V past kv_len).
// Memory traffic: each staged element read once and written once (fp8: 1 byte read, 2
// written); the kernel then reads the staged copies as it would read the cache.
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
    const float freq = s.rope_rcp_scale * exp2f(-(2.f * d / s.head_dim) * s.rope_log2_theta);
    float sn, cs;
    fi::sincos_reduced((float)pos * freq, &sn, &cs);
    const float x0 = a[i], x1 = b[i];
    a[i] = x0 * cs - x1 * sn;
    b[i] = x1 * cs + x0 * sn;
  }
}

template <typename DT>
__global__ void prefill_stage_kernel(const PrefillStageArgs s) {
  fi::pdl_enter();
  const int hd = s.head_dim, half = hd / 2;
  const int chunks = hd / 8, pairs = hd / 16;  // per head row
  const int esz = s.kv_kind == FI_KV_SAME ? 2 : 1;
  for (int r = blockIdx.y; r < s.batch; r += gridDim.y) {
    const int qo_begin = s.qo_indptr[r], qo_len = s.qo_indptr[r + 1] - qo_begin;
    int kv_len, row0, page_begin = 0;
    if (s.paged) {
      page_begin = s.kv_indptr[r];
      const int pages = s.kv_indptr[r + 1] - page_begin;
      kv_len = pages > 0 ? (pages - 1) * s.page_size + s.kv_last_page_len[r] : 0;
      row0 = page_begin * s.page_size;
    } else {
      row0 = s.kv_indptr[r];
      kv_len = s.kv_indptr[r + 1] - row0;
    }
    // Requests the plan never covers have no rows here either (a bad page table is
    // reported by the plan; nothing is written outside the stage).
    if (qo_len < 0 || kv_len < 0 || row0 < 0 || (int64_t)row0 + kv_len > s.kv_rows_cap ||
        (int64_t)qo_begin + qo_len > s.q_rows_cap)
      continue;
    const int per_q = s.rope ? qo_len * s.num_qo_heads * pairs : 0;
    const int per_k = s.sk ? kv_len * s.num_kv_heads * (s.rope ? pairs : chunks) : 0;
    const int per_v = s.sv ? kv_len * s.num_kv_heads * chunks : 0;
    const int64_t total = (int64_t)per_q + per_k + per_v;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
      int item = (int)i;
      if (item < per_q) {  // Q: (token, head, chunk pair)
        const int cp = item % pairs, h = (item / pairs) % s.num_qo_heads;
        const int t = item / pairs / s.num_qo_heads;
        const char *src = (const char *)s.q +
                          2 * ((int64_t)(qo_begin + t) * s.q_stride_n + (int64_t)h * s.q_stride_h);
        char *dst = (char *)s.sq + 2 * (((int64_t)(qo_begin + t) * s.num_qo_heads + h) * hd);
        float a[8], b[8];
        fi::vec8<DT>::load(src + 2 * cp * 8, a);
        fi::vec8<DT>::load(src + 2 * (cp * 8 + half), b);
        rotate8(a, b, cp * 8, kv_len - qo_len + t, s);
        fi::vec8<DT>::store(dst + 2 * cp * 8, a);
        fi::vec8<DT>::store(dst + 2 * (cp * 8 + half), b);
        continue;
      }
      item -= per_q;
      const bool is_k = item < per_k;
      if (!is_k) item -= per_k;
      const int per_row = is_k && s.rope ? pairs : chunks;
      const int c = item % per_row, h = (item / per_row) % s.num_kv_heads;
      const int j = item / per_row / s.num_kv_heads;
      const void *base = is_k ? s.k : s.v;
      const int64_t st_page = is_k ? s.k_stride_page : s.v_stride_page;
      const int64_t st_tok = is_k ? s.k_stride_tok : s.v_stride_tok;
      const int64_t st_head = is_k ? s.k_stride_head : s.v_stride_head;
      int64_t off;
      if (s.paged) {
        const int page = s.kv_indices[page_begin + j / s.page_size];
        off = (int64_t)page * st_page + (int64_t)(j % s.page_size) * st_tok;
      } else {
        off = (int64_t)(row0 + j) * st_tok;
      }
      off += (int64_t)h * st_head;
      const char *src = (const char *)base + esz * off;
      char *dst = (char *)(is_k ? s.sk : s.sv) +
                  2 * (((int64_t)(row0 + j) * s.num_kv_heads + h) * hd);
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

}  // namespace

cudaError_t fi_prefill_stage_launch(const PrefillStageArgs &s, bool bf16, int sm_count,
                                    bool pdl, cudaStream_t stream) {
  if (s.batch <= 0) return cudaSuccess;
  const int ys = s.batch < 65535 ? s.batch : 65535;
  // About 8 blocks of 256 threads per SM in all, at least one per request.
  int xs = (8 * (sm_count > 0 ? sm_count : 1) + ys - 1) / ys;
  if (xs < 1) xs = 1;
  const dim3 grid(xs, ys), block(256);
  return bf16 ? fi::launch_on(stream, pdl, grid, block, 0, prefill_stage_kernel<__nv_bfloat16>, s)
              : fi::launch_on(stream, pdl, grid, block, 0, prefill_stage_kernel<__half>, s);
}
