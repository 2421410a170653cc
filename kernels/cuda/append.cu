// kernels/cuda/append.cu -- append_paged_kv: scatter a ragged batch of new K/V tokens
// into their pages.
//
// Work split. grid.x strides over groups of `tokens_per_block` (1..8) consecutive new tokens
// (the rows of k; a device plan's append_indptr[batch] of them). One thread per token finds
// its slot: the request b by binary search in append_indptr, position
// kv_len_b - append_len_b + (i - append_indptr[b]), i.e. page
// kv_indices[kv_indptr[b] + pos / page_size], slot pos % page_size, kept in shared memory as
// the byte offsets of the token's K and V rows in the cache. The 128 threads copy the group's
// (token, kv head, copy unit) triples, a copy unit being 16 bytes when every base and stride
// allows it (else 8, 4, 2 or 1), kAppendBatch per thread with every load before the stores;
// the first batch is read while the slots are looked up. Why groups: with one token per
// block (4 KiB at 8 heads x 128 dims of 16 bits) the dependent index loads took most of each
// block's time (H200: 76 % of copy against 83 % now; bench/NOTES.md, append v2).
//
// Memory traffic: the new K and V read once and written once; append_indptr, the page table
// and the last-page lengths read once per token (cached).
#include "common.cuh"
#include "internal.h"

namespace fi {

// Tokens per block at most, and copy units per thread in flight at once.
constexpr int kAppendMaxTokens = 8, kAppendBatch = 4;

struct AppendParams {
  const uint8_t *k_src, *v_src;
  int64_t ks_tok, ks_head, vs_tok, vs_head;  // byte strides of the new K / V
  uint8_t *k_cache, *v_cache;
  int64_t kc_page, kc_pos, kc_head, vc_page, vc_pos, vc_head;  // byte strides of the cache
  const int32_t *append_indptr, *kv_indptr, *kv_indices, *kv_last_page_len;
  int32_t batch, page_size, heads, row_bytes, num_pages;
  int32_t tokens_per_block;  // 1 .. kAppendMaxTokens
  int64_t nnz;
  // Device-planned appends (no host validation): a token whose slot is not in the cache is
  // skipped and the first such token recorded here as {7, token, page id} (NULL: plans
  // made on the host validated the arrays already).
  int32_t *status;
  int32_t *status_mirror;  // mapped host memory the first error is also written to (or NULL)
  int64_t num_indices;
};

// The first error's record (the caller won status[0]): its index and value, and the whole
// record in the mapped host mirror, code last so that the host never sees a partial one.
__device__ __forceinline__ void record_error(const AppendParams &p, int32_t code, int32_t index,
                                             int32_t value) {
  p.status[1] = index;
  p.status[2] = value;
  if (p.status_mirror) {
    volatile int32_t *m = p.status_mirror;
    m[1] = index;
    m[2] = value;
    __threadfence_system();
    m[0] = code;
  }
}

template <typename U>
__global__ void __launch_bounds__(128) append_kernel(const AppendParams p) {
  __shared__ int64_t k_row[kAppendMaxTokens], v_row[kAppendMaxTokens];  // -1: not written
  pdl_enter();
  const int units = p.row_bytes / (int)sizeof(U);
  const int items = p.heads * units;
  const int T = p.tokens_per_block;
  // A device plan's k and v may hold more rows than this step's new tokens (buffers at
  // their capacity, as a CUDA graph replayed with other lengths needs): the tokens are
  // append_indptr[batch], which must not exceed the rows.
  int64_t tokens = p.nnz;
  if (p.status) {
    const int64_t total = p.append_indptr[p.batch];
    if (total > p.nnz && blockIdx.x == 0 && threadIdx.x == 0 &&
        atomicCAS(&p.status[0], 0, 12) == 0)
      record_error(p, 12, (int32_t)total, (int32_t)p.nnz);
    tokens = total > p.nnz ? 0 : total;  // too many: write none (reported above)
  }
  // Copy units of the group, kAppendBatch per thread at a time: (token t, head h, unit u) =
  // flat index t * items + h * units + u.
  U kval[kAppendBatch], vval[kAppendBatch];
  int tok[kAppendBatch], head[kAppendBatch], unit[kAppendBatch];  // tok -1: none
  auto load_batch = [&](int64_t i0, int copies, int f0) {
#pragma unroll
    for (int j = 0; j < kAppendBatch; ++j) {
      const int f = f0 + j * (int)blockDim.x;
      tok[j] = f < copies ? f / items : -1;
      const int it = f - tok[j] * items, h = it / units;
      unit[j] = it - h * units;
      head[j] = h;
      if (tok[j] >= 0) {
        const int64_t i = i0 + tok[j];
        kval[j] = ((const U *)(p.k_src + i * p.ks_tok + h * p.ks_head))[unit[j]];
        vval[j] = ((const U *)(p.v_src + i * p.vs_tok + h * p.vs_head))[unit[j]];
      }
    }
  };
  auto store_batch = [&]() {
#pragma unroll
    for (int j = 0; j < kAppendBatch; ++j)
      if (tok[j] >= 0 && k_row[tok[j]] >= 0) {
        ((U *)(p.k_cache + k_row[tok[j]] + head[j] * p.kc_head))[unit[j]] = kval[j];
        ((U *)(p.v_cache + v_row[tok[j]] + head[j] * p.vc_head))[unit[j]] = vval[j];
      }
  };
  for (int64_t i0 = (int64_t)blockIdx.x * T; i0 < tokens; i0 += (int64_t)gridDim.x * T) {
    const int n = tokens - i0 < T ? (int)(tokens - i0) : T;
    const int copies = n * items, step = kAppendBatch * (int)blockDim.x;
    // The first batch's rows are read while the slots are looked up (they do not depend on
    // them).
    load_batch(i0, copies, threadIdx.x);
    if (threadIdx.x < n) {  // token i's rows in the cache
      const int64_t i = i0 + threadIdx.x;
      int lo = 0, hi = p.batch;  // largest b with append_indptr[b] <= i
      while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (p.append_indptr[mid] <= i) lo = mid;
        else hi = mid;
      }
      const int b = lo;
      const int pages = p.kv_indptr[b + 1] - p.kv_indptr[b];
      const int kv_len = pages == 0 ? 0 : (pages - 1) * p.page_size + p.kv_last_page_len[b];
      const int append_len = p.append_indptr[b + 1] - p.append_indptr[b];
      const int pos = kv_len - append_len + (int)(i - p.append_indptr[b]);
      bool ok = true;
      if (p.status) {  // device plan: the page table was not validated on the host
        const int64_t at = (int64_t)p.kv_indptr[b] + (pos < 0 ? -1 : pos / p.page_size);
        const bool in_table = pos >= 0 && pos < kv_len && at >= 0 &&
                              at < p.kv_indptr[b + 1] && at < p.num_indices;
        ok = in_table && p.kv_indices[at] >= 0 && p.kv_indices[at] < p.num_pages;
        if (!ok && atomicCAS(&p.status[0], 0, 7) == 0)
          record_error(p, 7, (int32_t)i, in_table ? p.kv_indices[at] : -1);
      }
      if (ok) {
        const int64_t page = p.kv_indices[p.kv_indptr[b] + pos / p.page_size];
        const int slot = pos % p.page_size;
        k_row[threadIdx.x] = page * p.kc_page + slot * p.kc_pos;
        v_row[threadIdx.x] = page * p.vc_page + slot * p.vc_pos;
      } else {
        k_row[threadIdx.x] = v_row[threadIdx.x] = -1;
      }
    }
    __syncthreads();
    store_batch();
    for (int f0 = threadIdx.x + step; f0 < copies; f0 += step) {
      load_batch(i0, copies, f0);
      store_batch();
    }
    __syncthreads();  // (the rows' offsets are rewritten for the next group)
  }
}

}  // namespace fi

using namespace fi;

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

extern "C" fi_status fi_cuda_append_paged_kv_run(fi_context *ctx, const fi_plan *plan,
                                                 const fi_tensor *k, const fi_tensor *v,
                                                 const int32_t *append_indptr,
                                                 fi_paged_kv_cache *kv,
                                                 const fi_page_table *pages) {
  const int64_t es = (int64_t)fi_dtype_size(kv->k.dtype);
  AppendParams p;
  p.nnz = k->shape[0];
  if (p.nnz == 0) return FI_SUCCESS;
  p.heads = (int32_t)k->shape[1];
  p.row_bytes = (int32_t)(k->shape[2] * es);
  p.k_src = (const uint8_t *)k->data;
  p.v_src = (const uint8_t *)v->data;
  p.ks_tok = k->strides[0] * es;
  p.ks_head = k->strides[1] * es;
  p.vs_tok = v->strides[0] * es;
  p.vs_head = v->strides[1] * es;
  p.k_cache = (uint8_t *)kv->k.data;
  p.v_cache = (uint8_t *)kv->v.data;
  const int pos_dim = kv->layout == FI_LAYOUT_NHD ? 1 : 2;
  const int head_dim_idx = kv->layout == FI_LAYOUT_NHD ? 2 : 1;
  p.kc_page = kv->k.strides[0] * es;
  p.kc_pos = kv->k.strides[pos_dim] * es;
  p.kc_head = kv->k.strides[head_dim_idx] * es;
  p.vc_page = kv->v.strides[0] * es;
  p.vc_pos = kv->v.strides[pos_dim] * es;
  p.vc_head = kv->v.strides[head_dim_idx] * es;
  p.append_indptr = append_indptr;
  p.kv_indptr = pages->indptr;
  p.kv_indices = pages->indices;
  p.kv_last_page_len = pages->last_page_len;
  p.batch = plan->batch;
  p.page_size = (int32_t)kv->k.shape[pos_dim];
  p.num_pages = (int32_t)kv->k.shape[0];
  p.status = (int32_t *)(uintptr_t)plan->private_[FI_PLAN_STATUS];
  p.status_mirror = (int32_t *)(uintptr_t)plan->private_[FI_PLAN_STATUS_MIRROR];
  p.num_indices = (int64_t)plan->private_[FI_PLAN_NUM_INDICES];

  // The widest copy unit every address allows.
  int64_t g = 16;
  const int64_t vals[] = {(int64_t)(uintptr_t)p.k_src, (int64_t)(uintptr_t)p.v_src,
                          (int64_t)(uintptr_t)p.k_cache, (int64_t)(uintptr_t)p.v_cache,
                          p.ks_tok, p.ks_head, p.vs_tok, p.vs_head, p.kc_page, p.kc_pos,
                          p.kc_head, p.vc_page, p.vc_pos, p.vc_head, p.row_bytes};
  for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); ++i) g = gcd64(g, vals[i]);
  if (g == 0) g = 16;
  // Groups of up to kAppendMaxTokens tokens while the grid still has 4 blocks per SM
  // (a decode step's one token per request keeps one per block: its launch is the cost).
  const int64_t sms = ctx->target.sm_count > 0 ? ctx->target.sm_count : 132;
  int64_t per_block = p.nnz / (4 * sms);
  p.tokens_per_block =
      (int32_t)(per_block < 1 ? 1 : per_block > kAppendMaxTokens ? kAppendMaxTokens : per_block);
  int64_t grid = (p.nnz + p.tokens_per_block - 1) / p.tokens_per_block;
  if (grid > 65535LL * 16) grid = 65535LL * 16;
  void (*kernel)(const AppendParams) = g % 16 == 0 ? append_kernel<uint4>
                                      : g % 8 == 0  ? append_kernel<uint2>
                                      : g % 4 == 0  ? append_kernel<uint32_t>
                                      : g % 2 == 0  ? append_kernel<uint16_t>
                                                    : append_kernel<uint8_t>;
  fi_cuda_launch(ctx, dim3((unsigned)grid), dim3(128), 0, kernel, p);
  return fi_cuda_check_launch(ctx, "append_paged_kv");
}
