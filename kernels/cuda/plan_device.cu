// kernels/cuda/plan_device.cu -- the split-KV planner as kernels on the stream: the same
// deterministic, load-balanced partition as planner.c's fi_plan_build, made from index
// arrays in device memory (decode: the page table; paged prefill: qo_indptr and the page
// table; ragged prefill: qo_indptr and kv_indptr), so that a step whose lengths change
// every step is captured once in a CUDA graph and replayed with no host work.
//
// Work split. plan_units_kernel is one CTA of kPlanThreads threads: it validates the
// arrays (indptrs from 0 and non-decreasing, within their buffers, last_page_len in
// 1..page_size, page ids in [0, num_pages)), chooses the split chunk exactly as
// fi_plan_build does (fixed, or the smallest chunk whose unit count stays within the target
// and the workspace: a 32-way search, one candidate per warp per round, where the host
// bisects), and writes the work units -- (request, query tile, KV chunk) -- in request
// order into a scratch area (one thread per unit), the merge units in their final order
// and the unit counts into the workspace header. A plan of at most kFusedSortUnits units
// is then ranked in the same CTA and written to its slots; a larger one is ranked by
// plan_sort_kernel, each unit against all others by planner.c's order (cost descending;
// later query rows, lower request, lower kv_start first) -- the order is total, so ranks
// are a permutation. Its grid is fixed by the workspace's unit capacity
// (graph-capturable); CTAs past the current count, or all of them when the plan kernel
// placed the units, leave at once.
//
// Memory traffic: the index arrays once for validation, the indptrs and last_page_len
// again once per search round (L2-resident: 8-12 bytes per request); the units twice
// (scratch, then their slot).
//
// The scratch area is the workspace's partial-o region: the attention kernels write it
// only after the plan, in stream order.
//
// Errors. Index arrays that fail validation, or a fixed split that does not fit the
// workspace, leave zero work and merge units (the run computes nothing) and an error
// record {code, index, value} at the header's status words, which the caller reads back in
// stream order (fi_plan_device_status), and in the context's mapped host mirror when the
// compiled code's adapters set one (reported at the embedder's next fi_rt_synchronize /
// fi_rt_check, with no copy queued per step). planner.c's fi_device_plan_error words the
// codes.
#include <climits>

#include "common.cuh"
#include "internal.h"
#include "plan_split.h"
#include "cuda_backend.h"

namespace fi {

constexpr int kPlanThreads = 1024;
constexpr int kPlanWarps = kPlanThreads / 32;
constexpr int kSortThreads = 256;
constexpr int kFusedSortUnits = 256;  // at most this many units: the plan kernel ranks them

struct DevicePlanArgs {
  const int32_t *qo_indptr;       // NULL: decode (one query row per request)
  const int32_t *kv_indptr, *kv_indices, *last_page_len;  // last_page_len NULL: ragged KV
  int32_t batch, page_size, num_pages;
  int32_t rows_per_unit;          // query rows per unit (decode 1)
  int32_t granularity;            // chunks are multiples of it (planner.c chunk_granularity)
  int64_t indices_len;            // elements of the kv_indices buffer (paged)
  int64_t max_qo_rows;            // bound of qo_indptr[batch] (rows of q)
  int64_t max_kv_rows;            // ragged: bound of kv_indptr[batch] (rows of k and v)
  int64_t cap_units, cap_merge, cap_partial;
  int64_t target;                 // the work-unit target (planner.c)
  int64_t one_wave;               // > 0: the units of one wave (fi_plan_one_wave_units)
  int64_t one_wave_tenths;        // fi_plan_one_wave_tenths
  int64_t fixed_chunk;            // > 0: fixed_split_size rounded up to the granularity
  int32_t auto_split;             // 1: the search may split (split_kv, no fixed size)
  int32_t *status_mirror;         // mapped host memory an error record is also written to
  int32_t *header;                // [0] units, [1] merge units, [2..3] the prefill
                                  // scheduler's counters (left 0), [4..6] status,
                                  // [7] 1: the plan kernel placed the units, [8] batch,
                                  // [9] lead units (0: head-major order)
  fi_work_unit *scratch;          // units in request order
  fi_work_unit *work;             // units in planner order
  fi_merge_unit *merge;
};

__device__ __forceinline__ int64_t kv_len_of(const DevicePlanArgs &a, int i) {
  const int64_t n = (int64_t)a.kv_indptr[i + 1] - a.kv_indptr[i];
  if (!a.last_page_len) return n;
  return n == 0 ? 0 : (int64_t)a.page_size * (n - 1) + a.last_page_len[i];
}

__device__ __forceinline__ int64_t qo_len_of(const DevicePlanArgs &a, int i) {
  return a.qo_indptr ? (int64_t)a.qo_indptr[i + 1] - a.qo_indptr[i] : 1;
}

__device__ __forceinline__ int64_t chunks_of(int64_t kv, int64_t chunk) {
  return chunk > 0 && kv > chunk ? (kv + chunk - 1) / chunk : 1;
}

// Units, partial rows and merge units of the batch for `chunk` (planner.c's
// count_for_chunk), summed over the threads that call it.
struct Counts { long long units, partial, merge; };

__device__ __forceinline__ Counts count_some(const DevicePlanArgs &a, int64_t chunk, int first,
                                             int stride) {
  Counts c = {0, 0, 0};
  for (int i = first; i < a.batch; i += stride) {
    const int64_t qo = qo_len_of(a, i);
    if (qo == 0) continue;
    const int64_t tiles = (qo + a.rows_per_unit - 1) / a.rows_per_unit;
    const int64_t n = chunks_of(kv_len_of(a, i), chunk);
    c.units += tiles * n;
    if (n > 1) {
      c.partial += n * qo;
      c.merge += tiles;
    }
  }
  return c;
}

__device__ __forceinline__ Counts warp_sum(Counts c) {
  for (int off = 16; off > 0; off >>= 1) {
    c.units += __shfl_xor_sync(0xffffffffu, c.units, off);
    c.partial += __shfl_xor_sync(0xffffffffu, c.partial, off);
    c.merge += __shfl_xor_sync(0xffffffffu, c.merge, off);
  }
  return c;
}

// Block-wide sum (every thread gets it): warps reduce, warp 0 reduces the warps' sums, so
// each thread reads shared memory once (a loop over all warps' sums in every thread cost
// ~2 us per call at 1024 threads).
__device__ Counts block_sum(Counts c, Counts *warp_sums, Counts *total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  c = warp_sum(c);
  __syncthreads();  // the slots may still be read by a previous call
  if (lane == 0) warp_sums[warp] = c;
  __syncthreads();
  if (warp == 0) {
    Counts w = lane < kPlanWarps ? warp_sums[lane] : Counts{0, 0, 0};
    w = warp_sum(w);
    if (lane == 0) *total = w;
  }
  __syncthreads();
  return *total;
}

__device__ __forceinline__ bool fits(const DevicePlanArgs &a, Counts c) {
  return c.units <= a.cap_units && c.partial <= a.cap_partial && c.merge <= a.cap_merge;
}

__device__ __forceinline__ bool chunk_ok(const DevicePlanArgs &a, Counts c, int64_t target) {
  return c.units <= target && fits(a, c);
}

// The smallest k in [lo, hi) whose chunk k * g is chunk_ok for `target`, else hi:
// planner.c's binary search (smallest_chunk_pages) gives the same k (the predicate is
// monotone in k: units, split rows and merge units never grow with the chunk). Each round,
// warp w tests candidate lo + (w+1)*step - 1 over the whole batch, so the range shrinks
// 32-fold per round (3 rounds for 30k tokens at page 16, where the binary search took 11
// block-wide sums).
__device__ int64_t search_chunk_pages(const DevicePlanArgs &a, int64_t lo, int64_t hi,
                                      int64_t target, bool *ok_of_warp) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t g = a.granularity;
  while (lo < hi) {  // lo and hi are uniform across the block
    const int64_t step = (hi - lo + kPlanWarps - 1) / kPlanWarps;
    const int64_t cand = lo + (warp + 1) * step - 1;
    bool ok = true;  // candidates at or past hi stand for hi
    if (cand < hi) ok = chunk_ok(a, warp_sum(count_some(a, cand * g, lane, 32)), target);
    __syncthreads();  // ok_of_warp may still be read by the previous round
    if (lane == 0) ok_of_warp[warp] = ok;
    __syncthreads();
    const unsigned oks = __ballot_sync(0xffffffffu, lane < kPlanWarps && ok_of_warp[lane]);
    if (oks == 0) {
      lo = hi;
    } else {
      const int f = __ffs(oks) - 1;
      const int64_t cand_f = lo + (f + 1) * step - 1;
      const int64_t new_lo = f == 0 ? lo : lo + f * step;  // past the last failing candidate
      hi = cand_f < hi ? cand_f : hi;
      lo = new_lo;
    }
  }
  return lo;
}

enum PlanError {
  kIndptrStart = 1,   // kv_indptr[0] != 0
  kIndptrOrder = 2,   // kv_indptr[i+1] < kv_indptr[i]
  kIndicesLen = 3,    // paged: kv_indptr[batch] > len(kv_indices)
  kLastPageLen = 4,   // last_page_len[i] outside 1..page_size
  kPageId = 5,        // kv_indices[j] outside [0, num_pages)
  kFixedSplit = 6,    // the fixed split needs more units than the workspace holds
  // 7: the device append's code (append.cu)
  kQoIndptrStart = 8, // qo_indptr[0] != 0
  kQoIndptrOrder = 9, // qo_indptr[i+1] < qo_indptr[i]
  kQoRows = 10,       // qo_indptr[batch] > max_qo_rows
  kKvRows = 11,       // ragged: kv_indptr[batch] > max_kv_rows
  kNumErrors = 12,
};

// The order key of the unit at request-order position j: planner.c's compare_units
// (cost descending, later qo_start first, then request and kv_start ascending). The
// request-order position already orders (request, query tile, kv_start), so (request,
// kv_start) reduce to it. Smaller key first.
struct OrderKey {
  unsigned long long cost_desc, start_pos;
};
__device__ __forceinline__ OrderKey order_key(const fi_work_unit &u, int j) {
  const unsigned long long cost =
      (unsigned long long)u.qo_len * ((unsigned long long)(u.kv_end - u.kv_start) + 1);
  return {~cost, ((unsigned long long)(0x7fffffffu - (unsigned)u.qo_start) << 32) | (unsigned)j};
}
__device__ __forceinline__ bool key_less(const OrderKey &x, const OrderKey &y) {
  return x.cost_desc < y.cost_desc || (x.cost_desc == y.cost_desc && x.start_pos < y.start_pos);
}

// The first failing index of an indptr of `batch` + 1 entries (kinds `start`, `order`).
__device__ __forceinline__ void check_indptr(const int32_t *indptr, int batch, int *first_bad,
                                             int start, int order) {
  if (threadIdx.x == 0 && indptr[0] != 0) atomicMin(&first_bad[start], 0);
  for (int i = threadIdx.x; i < batch; i += blockDim.x)
    if (indptr[i + 1] < indptr[i]) atomicMin(&first_bad[order], i);
}

__global__ void __launch_bounds__(kPlanThreads) plan_units_kernel(const DevicePlanArgs a) {
  __shared__ int first_bad[kNumErrors];
  __shared__ Counts warp_sums[kPlanWarps];
  __shared__ Counts total;
  __shared__ bool ok_of_warp[kPlanWarps];
  __shared__ long long carry[3];
  __shared__ long long scan[3][kPlanWarps];
  __shared__ unsigned long long unsplit_rows;  // query rows of requests the plan does not split
  // Per request of the current tile: the end of its units (inclusive scan within the
  // tile), KV and query lengths, first query row, chunk count, first partial row (-1: not
  // split) and first merge unit; then the keys of a small plan's units.
  __shared__ int32_t unit_end[kPlanThreads], kv_of[kPlanThreads], qo_of[kPlanThreads];
  __shared__ int32_t row0_of[kPlanThreads], chunks_of_req[kPlanThreads];
  __shared__ int32_t partial0_of[kPlanThreads], merge0_of[kPlanThreads];
  __shared__ OrderKey keys[kFusedSortUnits];
  pdl_enter();
  const int t = threadIdx.x;
  const int lane = t & 31, warp = t >> 5;
  const bool paged = a.last_page_len != nullptr;
  if (t < kNumErrors) first_bad[t] = INT_MAX;
  __syncthreads();

  // ---- validation (the first failing index per kind: deterministic) ----
  check_indptr(a.kv_indptr, a.batch, first_bad, kIndptrStart, kIndptrOrder);
  if (a.qo_indptr) check_indptr(a.qo_indptr, a.batch, first_bad, kQoIndptrStart, kQoIndptrOrder);
  if (paged)
    for (int i = t; i < a.batch; i += blockDim.x)
      if (a.kv_indptr[i + 1] > a.kv_indptr[i] &&
          (a.last_page_len[i] < 1 || a.last_page_len[i] > a.page_size))
        atomicMin(&first_bad[kLastPageLen], i);
  __syncthreads();
  const int32_t used = a.kv_indptr[a.batch];
  const bool kv_indptr_ok =
      first_bad[kIndptrStart] == INT_MAX && first_bad[kIndptrOrder] == INT_MAX;
  if (t == 0 && kv_indptr_ok) {
    if (paged && (int64_t)used > a.indices_len) atomicMin(&first_bad[kIndicesLen], a.batch);
    if (!paged && (int64_t)used > a.max_kv_rows) atomicMin(&first_bad[kKvRows], a.batch);
  }
  if (t == 0 && a.qo_indptr && first_bad[kQoIndptrStart] == INT_MAX &&
      first_bad[kQoIndptrOrder] == INT_MAX && (int64_t)a.qo_indptr[a.batch] > a.max_qo_rows)
    atomicMin(&first_bad[kQoRows], a.batch);
  __syncthreads();
  if (paged && kv_indptr_ok && first_bad[kIndicesLen] == INT_MAX) {
    // Eight independent loads in flight per thread: the page ids of a large batch are the
    // kernel's largest read (17k ids at batch 128).
    constexpr int kLoads = 8;
    for (int j0 = t; j0 < used; j0 += kLoads * kPlanThreads) {
      int32_t id[kLoads];
#pragma unroll
      for (int k = 0; k < kLoads; ++k) {
        const int j = j0 + k * kPlanThreads;
        id[k] = j < used ? a.kv_indices[j] : 0;
      }
#pragma unroll
      for (int k = 0; k < kLoads; ++k) {
        const int j = j0 + k * kPlanThreads;
        if (j < used && (id[k] < 0 || id[k] >= a.num_pages)) atomicMin(&first_bad[kPageId], j);
      }
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
      if (!fits(a, block_sum(count_some(a, chunk, t, blockDim.x), warp_sums, &total)))
        code = kFixedSplit;
    } else if (a.auto_split) {
      // Split only when the unsplit plan has fewer units than the target.
      const long long unsplit = block_sum(count_some(a, 0, t, blockDim.x), warp_sums, &total).units;
      long long max_kv = 0;
      for (int i = t; i < a.batch; i += blockDim.x) {
        const long long kv = kv_len_of(a, i);
        max_kv = kv > max_kv ? kv : max_kv;
      }
      for (int off = 16; off > 0; off >>= 1) {
        const long long o = __shfl_xor_sync(0xffffffffu, max_kv, off);
        max_kv = o > max_kv ? o : max_kv;
      }
      __syncthreads();  // `total` was just read by every thread
      if (lane == 0) warp_sums[warp].units = max_kv;
      __syncthreads();
      if (warp == 0) {
        long long m = lane < kPlanWarps ? warp_sums[lane].units : 0;
        for (int off = 16; off > 0; off >>= 1) {
          const long long o = __shfl_xor_sync(0xffffffffu, m, off);
          m = o > m ? o : m;
        }
        if (lane == 0) total.units = m;
      }
      __syncthreads();
      max_kv = total.units;
      const int64_t g = a.granularity;
      const int64_t lo = (FI_MIN_CHUNK + g - 1) / g, hi = (max_kv + g - 1) / g;
      if (unsplit < a.target && lo < hi) {
        int64_t kc = search_chunk_pages(a, lo, hi, a.target, ok_of_warp);
        // planner.c's one-wave alternative (the counts are block-wide and uniform)
        if (a.one_wave > 0 && kc < hi &&
            block_sum(count_some(a, kc * g, t, blockDim.x), warp_sums, &total).units >
                a.one_wave) {
          const int64_t k1 = search_chunk_pages(a, kc, hi, a.one_wave, ok_of_warp);
          if (10 * k1 <= a.one_wave_tenths * kc && (k1 < hi || unsplit <= a.one_wave)) kc = k1;
        }
        chunk = kc * g;
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
        case kIndicesLen: case kKvRows: value = used; break;
        case kLastPageLen: value = a.last_page_len[idx]; break;
        case kPageId: value = a.kv_indices[idx]; break;
        case kQoIndptrStart: value = a.qo_indptr[0]; break;
        case kQoIndptrOrder: value = a.qo_indptr[idx + 1]; break;
        case kQoRows: value = a.qo_indptr[a.batch]; break;
        default: value = (int32_t)a.cap_units; break;
      }
      a.header[0] = 0;
      a.header[1] = 0;
      a.header[2] = a.header[3] = 0;
      a.header[4] = code;
      a.header[5] = idx;
      a.header[6] = value;
      a.header[7] = 1;  // nothing to sort
      a.header[8] = 0;  // no request to stage
      a.header[9] = 0;
      a.header[10] = 1;  // (rows "unsplit": a merge after a failed plan still merges in place)
      if (a.status_mirror) {  // code last: the host never reads a partial record
        volatile int32_t *m = a.status_mirror;
        m[1] = idx;
        m[2] = value;
        __threadfence_system();
        m[0] = code;
      }
    }
    return;
  }

  // ---- units in request order; merge units in their final order ----
  // Tiles of blockDim.x requests: an exclusive block scan of (units, partial rows, merge
  // units) per request, plus the running carry of earlier tiles; then the tile's units are
  // written by all threads, one unit each (a split request's chunks in parallel); the
  // first chunk of a split query tile writes its merge unit.
  if (t < 3) carry[t] = 0;
  if (t == 0) unsplit_rows = 0;
  __syncthreads();
  const int64_t rpu = a.rows_per_unit;
  for (int base = 0; base < a.batch; base += blockDim.x) {
    const int i = base + t;
    int64_t kv = 0, qo = 0, n = 0, tiles = 0;
    if (i < a.batch) {
      kv = kv_len_of(a, i);
      qo = qo_len_of(a, i);
      n = chunks_of(kv, chunk);
      tiles = (qo + rpu - 1) / rpu;
    }
    const bool split = n > 1 && tiles > 0;
    if (!split && qo > 0) atomicAdd(&unsplit_rows, (unsigned long long)qo);
    long long v[3] = {tiles * n, split ? n * qo : 0, split ? tiles : 0};
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
      long long before = 0;
      for (int w = 0; w < warp; ++w) before += scan[k][w];
      off3[k] = before + incl[k] - v[k];  // within the tile
    }
    unit_end[t] = (int32_t)(off3[0] + v[0]);
    kv_of[t] = (int32_t)kv;
    qo_of[t] = (int32_t)qo;
    row0_of[t] = i < a.batch ? (a.qo_indptr ? a.qo_indptr[i] : i) : 0;
    chunks_of_req[t] = (int32_t)n;
    partial0_of[t] = (int32_t)(split ? carry[1] + off3[1] : -1);
    merge0_of[t] = (int32_t)(carry[2] + off3[2]);
    __syncthreads();
    const int tile_units = unit_end[kPlanThreads - 1];
    for (int j = t; j < tile_units; j += blockDim.x) {
      int lo = 0, hi = kPlanThreads - 1;  // the request r of unit j: unit_end[r] > j
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (unit_end[mid] > j) hi = mid;
        else lo = mid + 1;
      }
      const int r = lo;
      const int local = j - (r > 0 ? unit_end[r - 1] : 0);
      const int nch = chunks_of_req[r];
      const int qt = local / nch, ch = local - qt * nch;
      const int64_t rkv = kv_of[r], qs = (int64_t)qt * rpu;
      const int64_t rows = qo_of[r] - qs < rpu ? qo_of[r] - qs : rpu;
      const bool rsplit = partial0_of[r] >= 0;
      const int64_t first = rsplit ? partial0_of[r] + (int64_t)qt * nch * rpu : -1;
      fi_work_unit u;
      u.request = base + r;
      u.qo_start = (int32_t)qs;
      u.qo_len = (int32_t)rows;
      u.kv_start = (int32_t)(rsplit ? (int64_t)ch * chunk : 0);
      u.kv_end = (int32_t)(rsplit && (ch + 1) * chunk < rkv ? (ch + 1) * chunk : rkv);
      u.partial_row = (int32_t)(rsplit ? first + (int64_t)ch * rows : -1);
      a.scratch[carry[0] + j] = u;
      if (rsplit && ch == 0) {
        fi_merge_unit m;
        m.out_row = (int32_t)(row0_of[r] + qs);
        m.rows = (int32_t)rows;
        m.first_partial_row = (int32_t)first;
        m.num_chunks = nch;
        a.merge[merge0_of[r] + qt] = m;
      }
    }
    __syncthreads();
    if (t < 3) {
      long long tile_total = 0;
      for (int w = 0; w < kPlanWarps; ++w) tile_total += scan[t][w];
      carry[t] += tile_total;
    }
    __syncthreads();
  }

  // ---- a small plan's units straight to their slots (the sort kernel then leaves) ----
  const long long n_units = carry[0];
  const bool placed = n_units <= kFusedSortUnits;
  if (placed) {
    fi_work_unit mine;
    OrderKey key = {0, 0};
    if (t < n_units) {
      mine = a.scratch[t];  // written by this block before the last __syncthreads
      key = order_key(mine, t);
      keys[t] = key;
    }
    __syncthreads();
    if (t < n_units) {
      int rank = 0;
      for (int j = 0; j < (int)n_units; ++j) rank += key_less(keys[j], key);
      a.work[rank] = mine;
    }
  }
  if (t == 0) {
    a.header[0] = (int32_t)n_units;
    a.header[1] = (int32_t)carry[2];
    a.header[2] = a.header[3] = 0;
    a.header[4] = a.header[5] = a.header[6] = 0;
    a.header[7] = placed ? 1 : 0;
    a.header[8] = a.batch;  // the plan's batch (the prefill stage pass reads it)
    a.header[9] = 0;        // head-major order
    a.header[10] = (int32_t)unsplit_rows;  // (the loop's last __syncthreads ordered the adds)
  }
}

// Ranks each unit against all others by order_key (a total order, so the ranks are a
// permutation) and writes it to its slot.
__global__ void __launch_bounds__(kSortThreads) plan_sort_kernel(const DevicePlanArgs a) {
  __shared__ OrderKey tile[kSortThreads];
  pdl_enter();
  const int n = a.header[0];
  if (a.header[7] || (int64_t)blockIdx.x * kSortThreads >= n) return;  // uniform per CTA
  const int u = blockIdx.x * kSortThreads + threadIdx.x;
  fi_work_unit mine;
  OrderKey key = {0, 0};
  if (u < n) {
    mine = a.scratch[u];
    key = order_key(mine, u);
  }
  int rank = 0;
  for (int base = 0; base < n; base += kSortThreads) {
    __syncthreads();
    const int j = base + (int)threadIdx.x;
    if (j < n) tile[threadIdx.x] = order_key(a.scratch[j], j);
    __syncthreads();
    const int m = n - base < kSortThreads ? n - base : kSortThreads;
    if (u < n)
      for (int k = 0; k < m; ++k) rank += key_less(tile[k], key);
  }
  if (u < n) a.work[rank] = mine;
}

}  // namespace fi

using namespace fi;

extern "C" fi_status fi_cuda_plan_device(fi_context *ctx, const fi_cuda_device_plan_problem *pb,
                                         const fi_cuda_device_plan_caps *caps,
                                         const fi_plan *plan) {
  fi_plan_layout l = fi_plan_get_layout(plan);
  DevicePlanArgs a;
  a.qo_indptr = pb->qo_indptr;
  a.kv_indptr = pb->kv_indptr;
  a.kv_indices = pb->kv_indices;
  a.last_page_len = pb->last_page_len;
  a.batch = pb->batch;
  a.page_size = pb->page_size;
  a.num_pages = pb->num_pages;
  a.rows_per_unit = (int32_t)caps->rows_per_unit;
  a.granularity = (int32_t)caps->granularity;
  a.indices_len = pb->indices_len;
  a.max_qo_rows = pb->max_qo_rows;
  a.max_kv_rows = pb->max_kv_rows;
  a.cap_units = caps->units;
  a.cap_merge = caps->merge;
  a.cap_partial = caps->partial;
  a.target = caps->target;
  a.one_wave = caps->one_wave;
  a.one_wave_tenths = caps->one_wave_tenths;
  a.fixed_chunk = caps->fixed_chunk;
  a.auto_split = caps->auto_split;
  a.header = (int32_t *)plan->workspace;
  a.status_mirror = ctx->plan_status_mirror;
  a.scratch = (fi_work_unit *)l.partial_o;
  a.work = l.work;
  a.merge = l.merge;
  fi_cuda_launch(ctx, dim3(1), dim3(kPlanThreads), 0, plan_units_kernel, a);
  fi_status s = fi_cuda_check_launch(ctx, "plan_units_kernel");
  if (s != FI_SUCCESS) return s;
  const int64_t blocks = (caps->max_units + kSortThreads - 1) / kSortThreads;
  fi_cuda_launch(ctx, dim3((unsigned)(blocks > 0 ? blocks : 1)), dim3(kSortThreads), 0,
                 plan_sort_kernel, a);
  return fi_cuda_check_launch(ctx, "plan_sort_kernel");
}
