// kernels/cuda/plan_device.cu -- the decode planner as kernels on the stream: the same
// deterministic, load-balanced partition as planner.c's fi_plan_build, made from the page
// table in device memory, so that a decode step whose lengths and page tables change every
// step is captured once in a CUDA graph and replayed with no host work.
//
// Work split. decode_plan_kernel is one CTA of kPlanThreads threads: it validates the page
// table (indptr from 0 and non-decreasing, within kv_indices, last_page_len in
// 1..page_size, page ids in [0, num_pages)), chooses the split chunk exactly as
// fi_plan_build does (fixed, or the binary search for the smallest chunk whose unit count
// stays within the target and the workspace), and writes the work units in request order
// into a scratch area, the merge units in their final (request) order and the unit counts
// into the workspace header. plan_sort_kernel then ranks each unit against all others by
// planner.c's order (cost descending; later query rows, lower request, lower kv_start
// first) -- the order is total, so ranks are a permutation -- and writes it to its slot.
// Its grid is fixed by the workspace's unit capacity (graph-capturable); CTAs past the
// current count leave at once.
//
// Memory traffic: the page table once for validation (indptr, last_page_len, kv_indices),
// indptr and last_page_len again once per binary-search step (L2-resident: 8 bytes per
// request); the units twice (scratch, then their slot). For batch 128, under 10 us.
//
// The scratch area is the workspace's partial-o region: the decode kernels write it only
// after the plan, in stream order.
//
// Errors. A page table that fails validation, or a fixed split that does not fit the
// workspace, leaves zero work and merge units (the run computes nothing) and an error
// record {code, index, value} at the header's status words, which the caller reads back in
// stream order (fi_plan_device_status; the compiled code's adapters at the embedder's next
// fi_rt_synchronize).
#include <climits>

#include "common.cuh"
#include "internal.h"
#include "cuda_backend.h"

namespace fi {

constexpr int kPlanThreads = 1024;
constexpr int kSortThreads = 256;
constexpr int kMinChunk = 128;  // planner.c's FI_MIN_CHUNK

struct DevicePlanArgs {
  const int32_t *kv_indptr, *kv_indices, *last_page_len;
  int32_t batch, page_size, num_pages;
  int64_t indices_len;            // elements of the kv_indices buffer
  int64_t cap_units, cap_merge, cap_partial;
  int64_t target;                 // the work-unit target (planner.c, decode_target_units)
  int64_t fixed_chunk;            // > 0: fixed_split_size rounded up to the page size
  int32_t auto_split;             // 1: the binary search may split (split_kv, no fixed size)
  int32_t *header;                // [0] units, [1] merge units, [2..3] 0, [4..6] status
  fi_work_unit *scratch;          // units in request order
  fi_work_unit *work;             // units in planner order
  fi_merge_unit *merge;
};

__device__ __forceinline__ int64_t kv_len_of(const DevicePlanArgs &a, int i) {
  const int64_t pages = (int64_t)a.kv_indptr[i + 1] - a.kv_indptr[i];
  return pages == 0 ? 0 : (int64_t)a.page_size * (pages - 1) + a.last_page_len[i];
}

__device__ __forceinline__ int64_t chunks_of(int64_t kv, int64_t chunk) {
  return chunk > 0 && kv > chunk ? (kv + chunk - 1) / chunk : 1;
}

// Block-wide sum of three int64 values (every thread gets the totals).
struct Sums3 { long long a, b, c; };
__device__ Sums3 block_sum3(long long a, long long b, long long c, Sums3 *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int off = 16; off > 0; off >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, off);
    b += __shfl_xor_sync(0xffffffffu, b, off);
    c += __shfl_xor_sync(0xffffffffu, c, off);
  }
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = {a, b, c};
  __syncthreads();
  Sums3 s = {0, 0, 0};
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
    s.a += smem[w].a;
    s.b += smem[w].b;
    s.c += smem[w].c;
  }
  return s;
}

// Units, partial rows and merge units of the whole batch for `chunk` (planner.c's
// count_for_chunk with one query row per request).
__device__ Sums3 count_for_chunk(const DevicePlanArgs &a, int64_t chunk, Sums3 *smem) {
  long long units = 0, partial = 0, merge = 0;
  for (int i = threadIdx.x; i < a.batch; i += blockDim.x) {
    const int64_t n = chunks_of(kv_len_of(a, i), chunk);
    units += n;
    if (n > 1) {
      partial += n;
      merge += 1;
    }
  }
  return block_sum3(units, partial, merge, smem);
}

__device__ __forceinline__ bool fits(const DevicePlanArgs &a, Sums3 c) {
  return c.a <= a.cap_units && c.b <= a.cap_partial && c.c <= a.cap_merge;
}

enum PlanError {
  kIndptrStart = 1,   // kv_indptr[0] != 0
  kIndptrOrder = 2,   // kv_indptr[i+1] < kv_indptr[i]
  kIndicesLen = 3,    // kv_indptr[batch] > len(kv_indices)
  kLastPageLen = 4,   // last_page_len[i] outside 1..page_size
  kPageId = 5,        // kv_indices[j] outside [0, num_pages)
  kFixedSplit = 6,    // the fixed split needs more units than the workspace holds
  kNumErrors = 7,
};

__global__ void __launch_bounds__(kPlanThreads) decode_plan_kernel(const DevicePlanArgs a) {
  __shared__ int first_bad[kNumErrors];
  __shared__ Sums3 sums[kPlanThreads / 32];
  __shared__ long long carry[3];
  __shared__ long long scan[3][kPlanThreads / 32];
  const int t = threadIdx.x;
  if (t < kNumErrors) first_bad[t] = INT_MAX;
  __syncthreads();

  // ---- validation (the first failing index per kind: deterministic) ----
  if (t == 0 && a.kv_indptr[0] != 0) atomicMin(&first_bad[kIndptrStart], 0);
  for (int i = t; i < a.batch; i += blockDim.x) {
    const int32_t p0 = a.kv_indptr[i], p1 = a.kv_indptr[i + 1];
    if (p1 < p0) atomicMin(&first_bad[kIndptrOrder], i);
    else if (p1 > p0 && (a.last_page_len[i] < 1 || a.last_page_len[i] > a.page_size))
      atomicMin(&first_bad[kLastPageLen], i);
  }
  __syncthreads();
  const int32_t used = a.kv_indptr[a.batch];
  if (t == 0 && first_bad[kIndptrStart] == INT_MAX && first_bad[kIndptrOrder] == INT_MAX &&
      (int64_t)used > a.indices_len)
    atomicMin(&first_bad[kIndicesLen], a.batch);
  __syncthreads();
  if (first_bad[kIndptrStart] == INT_MAX && first_bad[kIndptrOrder] == INT_MAX &&
      first_bad[kIndicesLen] == INT_MAX) {
    for (int j = t; j < used; j += blockDim.x) {
      const int32_t id = a.kv_indices[j];
      if (id < 0 || id >= a.num_pages) atomicMin(&first_bad[kPageId], j);
    }
  }
  __syncthreads();
  int code = 0;
  for (int e = 1; e < kNumErrors && !code; ++e)
    if (first_bad[e] != INT_MAX) code = e;

  // ---- chunk choice (planner.c, fi_plan_build) ----
  int64_t chunk = 0;
  if (!code) {
    if (a.fixed_chunk > 0) {
      chunk = a.fixed_chunk;
      if (!fits(a, count_for_chunk(a, chunk, sums))) code = kFixedSplit;
    } else if (a.auto_split) {
      long long max_kv = 0;
      for (int i = t; i < a.batch; i += blockDim.x) {
        const long long kv = kv_len_of(a, i);
        max_kv = kv > max_kv ? kv : max_kv;
      }
      for (int off = 16; off > 0; off >>= 1) {
        const long long o = __shfl_xor_sync(0xffffffffu, max_kv, off);
        max_kv = o > max_kv ? o : max_kv;
      }
      __syncthreads();
      if ((t & 31) == 0) sums[t >> 5].a = max_kv;
      __syncthreads();
      max_kv = 0;
      for (int w = 0; w < (int)(blockDim.x >> 5); ++w) max_kv = sums[w].a > max_kv ? sums[w].a : max_kv;
      const int64_t g = a.page_size;
      int64_t lo = (kMinChunk + g - 1) / g, hi = (max_kv + g - 1) / g;
      if (lo < hi) {
        while (lo < hi) {  // uniform across the block: every thread sees the same sums
          const int64_t mid = lo + (hi - lo) / 2;
          const Sums3 c = count_for_chunk(a, mid * g, sums);
          if (c.a <= a.target && fits(a, c)) hi = mid;
          else lo = mid + 1;
        }
        chunk = lo * g;
        if (chunk >= max_kv) chunk = 0;
      }
    }
  }
  if (code) {
    if (t == 0) {
      const int idx = code == kFixedSplit ? 0 : first_bad[code];
      int32_t value = 0;
      switch (code) {
        case kIndptrStart: value = a.kv_indptr[0]; break;
        case kIndptrOrder: value = a.kv_indptr[idx + 1]; break;
        case kIndicesLen: value = used; break;
        case kLastPageLen: value = a.last_page_len[idx]; break;
        case kPageId: value = a.kv_indices[idx]; break;
        default: value = (int32_t)a.cap_units; break;
      }
      a.header[0] = 0;
      a.header[1] = 0;
      a.header[2] = a.header[3] = 0;
      a.header[4] = code;
      a.header[5] = idx;
      a.header[6] = value;
    }
    return;
  }

  // ---- units in request order; merge units in their final order ----
  // Tiles of blockDim.x requests: an exclusive block scan of (units, partial rows, merge
  // units) per request, plus the running carry of earlier tiles.
  if (t < 3) carry[t] = 0;
  __syncthreads();
  const int lane = t & 31, warp = t >> 5, nwarps = (int)(blockDim.x >> 5);
  for (int base = 0; base < a.batch; base += blockDim.x) {
    const int i = base + t;
    int64_t kv = 0, n = 0;
    if (i < a.batch) {
      kv = kv_len_of(a, i);
      n = chunks_of(kv, chunk);
    }
    long long v[3] = {n, n > 1 ? n : 0, n > 1 ? 1 : 0};
    long long incl[3];
    for (int k = 0; k < 3; ++k) {
      long long x = v[k];
      for (int off = 1; off < 32; off <<= 1) {
        const long long y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off) x += y;
      }
      incl[k] = x;
      if (lane == 31) scan[k][warp] = x;
    }
    __syncthreads();
    long long off3[3];
    for (int k = 0; k < 3; ++k) {
      long long before = carry[k];
      for (int w = 0; w < warp; ++w) before += scan[k][w];
      off3[k] = before + incl[k] - v[k];
    }
    if (i < a.batch) {
      const int64_t first = n > 1 ? off3[1] : -1;
      if (n > 1) {
        fi_merge_unit m;
        m.out_row = i;
        m.rows = 1;
        m.first_partial_row = (int32_t)first;
        m.num_chunks = (int32_t)n;
        a.merge[off3[2]] = m;
      }
      for (int64_t ch = 0; ch < n; ++ch) {
        fi_work_unit u;
        u.request = i;
        u.qo_start = 0;
        u.qo_len = 1;
        u.kv_start = (int32_t)(n > 1 ? ch * chunk : 0);
        u.kv_end = (int32_t)(n > 1 && (ch + 1) * chunk < kv ? (ch + 1) * chunk : kv);
        u.partial_row = (int32_t)(n > 1 ? first + ch : -1);
        a.scratch[off3[0] + ch] = u;
      }
    }
    __syncthreads();
    if (t < 3) {
      long long total = 0;
      for (int w = 0; w < nwarps; ++w) total += scan[t][w];
      carry[t] += total;
    }
    __syncthreads();
  }
  if (t == 0) {
    a.header[0] = (int32_t)carry[0];
    a.header[1] = (int32_t)carry[2];
    a.header[2] = a.header[3] = 0;
    a.header[4] = a.header[5] = a.header[6] = 0;
  }
}

// planner.c's compare_units: true when x comes before y.
__device__ __forceinline__ bool unit_before(const fi_work_unit &x, const fi_work_unit &y) {
  const long long cx = (long long)x.qo_len * ((long long)(x.kv_end - x.kv_start) + 1);
  const long long cy = (long long)y.qo_len * ((long long)(y.kv_end - y.kv_start) + 1);
  if (cx != cy) return cx > cy;
  if (x.qo_start != y.qo_start) return x.qo_start > y.qo_start;
  if (x.request != y.request) return x.request < y.request;
  return x.kv_start < y.kv_start;
}

__global__ void __launch_bounds__(kSortThreads) plan_sort_kernel(const DevicePlanArgs a) {
  __shared__ fi_work_unit tile[kSortThreads];
  const int n = a.header[0];
  if ((int64_t)blockIdx.x * kSortThreads >= n) return;  // uniform per CTA
  const int u = blockIdx.x * kSortThreads + threadIdx.x;
  fi_work_unit mine;
  if (u < n) mine = a.scratch[u];
  int rank = 0;
  for (int base = 0; base < n; base += kSortThreads) {
    __syncthreads();
    if (base + (int)threadIdx.x < n) tile[threadIdx.x] = a.scratch[base + threadIdx.x];
    __syncthreads();
    const int m = n - base < kSortThreads ? n - base : kSortThreads;
    if (u < n)
      for (int j = 0; j < m; ++j) rank += unit_before(tile[j], mine);
  }
  if (u < n) a.work[rank] = mine;
}

}  // namespace fi

using namespace fi;

extern "C" fi_status fi_cuda_decode_plan_device(fi_context *ctx, const fi_page_table *pages,
                                                int32_t batch, int32_t page_size,
                                                int32_t num_pages, int64_t indices_len,
                                                const fi_cuda_device_plan_caps *caps,
                                                const fi_plan *plan) {
  fi_plan_layout l = fi_plan_get_layout(plan);
  DevicePlanArgs a;
  a.kv_indptr = pages->indptr;
  a.kv_indices = pages->indices;
  a.last_page_len = pages->last_page_len;
  a.batch = batch;
  a.page_size = page_size;
  a.num_pages = num_pages;
  a.indices_len = indices_len;
  a.cap_units = caps->units;
  a.cap_merge = caps->merge;
  a.cap_partial = caps->partial;
  a.target = caps->target;
  a.fixed_chunk = caps->fixed_chunk;
  a.auto_split = caps->auto_split;
  a.header = (int32_t *)plan->workspace;
  a.scratch = (fi_work_unit *)l.partial_o;
  a.work = l.work;
  a.merge = l.merge;
  cudaStream_t st = fi_cuda_stream(ctx);
  decode_plan_kernel<<<1, kPlanThreads, 0, st>>>(a);
  fi_status s = fi_cuda_check_launch(ctx, "decode_plan_kernel");
  if (s != FI_SUCCESS) return s;
  const int64_t blocks = (caps->units + kSortThreads - 1) / kSortThreads;
  plan_sort_kernel<<<(unsigned)(blocks > 0 ? blocks : 1), kSortThreads, 0, st>>>(a);
  return fi_cuda_check_launch(ctx, "plan_sort_kernel");
}
