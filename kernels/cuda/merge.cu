// kernels/cuda/merge.cu -- merging attention states on the GPU: merge_state (two states,
// also in place), merge_states (n states per row) and the split-KV merge of a plan's merge
// units (partial fp32 rows in the workspace -> o, lse).
//
// Work split. One thread owns 8 consecutive head_dim elements of one (row, head) (one
// element when a tensor's strides or base pointer do not allow 16-byte vectors); a block
// of 128 threads covers 128 such groups; the grid strides over all of them. Each thread
// reads the n lse values of its (row, head) (broadcast loads shared with its D/8 - 1
// neighbours), takes their maximum, then reads its n v vectors and writes one; lse is
// written by the thread of dims [0, 8) (merge_state: in the same launch where one warp holds
// a (row, head)'s threads, else by a second launch). The split-KV merge gives a block to
// each (merge unit, query row, head) (merge_row.cuh).
//
// Memory traffic: each v element and each lse value read once, each output written once
// (merge_states: n*D*b + 4n bytes read, D*b + 4 written per (row, head)). The split-KV
// merge reads num_chunks fp32 partial rows per output row, in chunk order (deterministic:
// the same plan always sums in the same order).
#include "common.cuh"
#include "cuda_backend.h"
#include "merge_row.cuh"
#include "internal.h"

extern "C" {
#include "shard.h"
}

#include <math.h>
#include <stdlib.h>
#include <string.h>

namespace fi {

// VW = 8: vector of 8 (16-bit: 16 bytes, f32: 32 bytes); VW = 1: one element.
template <typename T, int VW> struct vload {
  static __device__ __forceinline__ void load(const T *p, float *out) {
    if (VW == 8) vec8<T>::load(p, out);
    else out[0] = to_float<T>(*p);
  }
  static __device__ __forceinline__ void store(T *p, const float *in) {
    if (VW == 8) vec8<T>::store(p, in);
    else *p = from_float<T>(in[0]);
  }
};

// Element strides of the first three dimensions of a tensor.
struct Strided3 {
  int64_t s0, s1, s2;
};

// Two states' lse -> weights (wa, wb) / their sum, and the merged lse.
struct TwoWeights {
  float wa, wb, inv, lse;
  __device__ __forceinline__ TwoWeights(float la, float lb) {
    const float M = fmaxf(la, lb);
    wa = la == -INFINITY ? 0.f : __expf(la - M);
    wb = lb == -INFINITY ? 0.f : __expf(lb - M);
    const float sum = wa + wb;
    inv = sum > 0.f ? 1.f / sum : 0.f;
    lse = M == -INFINITY ? -INFINITY : M + __logf(sum);
  }
};

// v_out = the weighted mean of v_a and v_b. With VW = 8 and D / 8 dividing 32 (D = 64,
// 128, 256) the threads of one (row, head) are lanes of one warp, and the warp walks the
// elements in step (a uniform trip count), so it also writes s_out (nullable) after all its
// lanes have read s_a and s_b (__syncwarp): in place (s_out = s_a) needs no second launch.
// Otherwise s_out is merge_state_s_kernel's, a later launch. skip_if_zero (nullable): a
// plan's count of unsplit rows (fi_prefill_merge_run's in-place merge of them, which has
// nothing to do when it is 0: read on the device, as a graph replay needs).
template <typename T, int VW>
__global__ void __launch_bounds__(128)
merge_state_kernel(const T *va, Strided3 vas, const float *sa, Strided3 sas, const T *vb,
                   Strided3 vbs, const float *sb, Strided3 sbs, T *vo, Strided3 vos,
                   float *so, Strided3 sos, int64_t rows, int heads, int head_dim,
                   const int32_t *skip_if_zero) {
  pdl_enter();
  if (skip_if_zero && *skip_if_zero == 0) return;
  const int groups = head_dim / VW, lane = threadIdx.x & 31;
  const int64_t total = rows * heads * groups;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;  // a multiple of 32
  for (int64_t base = blockIdx.x * (int64_t)blockDim.x + (threadIdx.x - lane); base < total;
       base += stride) {
    const int64_t i = base + lane;
    const bool active = i < total;
    const int d0 = active ? (int)(i % groups) * VW : 0;
    const int64_t rh = active ? i / groups : 0;
    const int h = (int)(rh % heads);
    const int64_t r = rh / heads;
    TwoWeights w(active ? sa[r * sas.s0 + h * sas.s1] : -INFINITY,
                 active ? sb[r * sbs.s0 + h * sbs.s1] : -INFINITY);
    if (active) {
      float a[8], b[8], out[8];
      vload<T, VW>::load(va + r * vas.s0 + h * vas.s1 + d0, a);
      vload<T, VW>::load(vb + r * vbs.s0 + h * vbs.s1 + d0, b);
#pragma unroll
      for (int e = 0; e < VW; ++e) out[e] = (w.wa * a[e] + w.wb * b[e]) * w.inv;
      // v_out may alias v_a or v_b: this thread read exactly the elements it writes.
      vload<T, VW>::store(vo + r * vos.s0 + h * vos.s1 + d0, out);
    }
    if (so) {  // (only with the warp layout above; see the launcher)
      __syncwarp();
      if (active && d0 == 0) so[r * sos.s0 + h * sos.s1] = w.lse;
    }
  }
}

// s_out = logaddexp(s_a, s_b): a separate launch, so that an in-place merge (s_out == s_a)
// never overwrites an lse another thread of the v kernel still has to read.
__global__ void __launch_bounds__(128)
merge_state_s_kernel(const float *sa, Strided3 sas, const float *sb, Strided3 sbs, float *so,
                     Strided3 sos, int64_t rows, int heads) {
  pdl_enter();
  const int64_t total = rows * heads;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int h = (int)(i % heads);
    int64_t r = i / heads;
    so[r * sos.s0 + h * sos.s1] =
        TwoWeights(sa[r * sas.s0 + h * sas.s1], sb[r * sbs.s0 + h * sbs.s1]).lse;
  }
}

// v [rows, n, heads, D] (strides s0, s1, s2), s [rows, n, heads] -> vo, so (nullable).
template <typename T, int VW>
__global__ void __launch_bounds__(128)
merge_states_kernel(const T *v, Strided3 vs, const float *s, Strided3 ss, T *vo, Strided3 vos,
                    float *so, Strided3 sos, int64_t rows, int n, int heads, int head_dim) {
  pdl_enter();
  const int groups = head_dim / VW;
  const int64_t total = rows * heads * groups;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int d0 = (int)(i % groups) * VW;
    int64_t rh = i / groups;
    int h = (int)(rh % heads);
    int64_t r = rh / heads;
    const float *sr = s + r * ss.s0 + h * ss.s2;
    float M = -INFINITY;
    for (int c = 0; c < n; ++c) M = fmaxf(M, sr[c * ss.s1]);
    float sum = 0.f, acc[8];
#pragma unroll
    for (int e = 0; e < VW; ++e) acc[e] = 0.f;
    {
      // No branch on M before the loads: the v loads of the first 8 states can then issue
      // together with the lse loads (8 x 16 bytes in flight per thread). A row whose states
      // are all empty (M = -inf) is zeroed below, as before.
      const T *vr = v + r * vs.s0 + h * vs.s2 + d0;
      int c = 0;
      for (; c + 8 <= n; c += 8) {  // eight loads in flight before their first use
        float x[8][8], w[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) vload<T, VW>::load(vr + (c + j) * vs.s1, x[j]);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          float l = sr[(c + j) * ss.s1];
          w[j] = l == -INFINITY ? 0.f : __expf(l - M);
          sum += w[j];
#pragma unroll
          for (int e = 0; e < VW; ++e) acc[e] = fmaf(w[j], x[j][e], acc[e]);
        }
      }
      for (; c < n; ++c) {
        float x[8];
        vload<T, VW>::load(vr + c * vs.s1, x);
        float l = sr[c * ss.s1];
        float w = l == -INFINITY ? 0.f : __expf(l - M);
        sum += w;
#pragma unroll
        for (int e = 0; e < VW; ++e) acc[e] = fmaf(w, x[e], acc[e]);
      }
    }
    if (M == -INFINITY) {
      sum = 0.f;
#pragma unroll
      for (int e = 0; e < VW; ++e) acc[e] = 0.f;
    }
    float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
    for (int e = 0; e < VW; ++e) acc[e] *= inv;
    vload<T, VW>::store(vo + r * vos.s0 + h * vos.s1 + d0, acc);
    if (so && d0 == 0) so[r * sos.s0 + h * sos.s1] = sum > 0.f ? M + __logf(sum) : -INFINITY;
  }
}

// Split-KV merge of plan merge units: partial rows first + c * rows + r (c in chunk
// order) -> output row out_row + r, each (unit, row, head) by a block of 128 threads
// (merge_row.cuh). grid.x strides over (unit, row slot) pairs -- slot s of a unit merges
// its rows s, s + R, ... (R = the plan's rows per unit, so one row each) -- with the unit
// count read from the device when given (graph replays); grid.y = heads. (One block per
// unit walking its rows in turn took 64 us for 2 units of 32 rows x 16 chunks: each row's
// loads wait for the last row's reduction.)
struct UnitChunks {
  const float *po, *plse;
  int64_t first, stride;
  int heads, h, head_dim;
  __device__ __forceinline__ const float *row(int c) const {
    return po + ((first + (int64_t)c * stride) * heads + h) * head_dim;
  }
  __device__ __forceinline__ float lse(int c) const {
    return plse[(first + (int64_t)c * stride) * heads + h];
  }
  template <int NV>
  __device__ __forceinline__ void load(int c, int d0, float (&x)[NV]) const {
    load_f32<NV>(row(c) + d0, x);
  }
};

// A cascade's other state of the output rows (fi_prefill_merge_run): v [rows, heads, D] of
// o's dtype, 16-byte aligned with 16-byte multiple strides, s [rows, heads] f32; merged as
// one more chunk after a unit's own (v == nullptr: none).
template <typename T> struct OtherState {
  const T *v;
  int64_t v_sr, v_sh;
  const float *s;
  int64_t s_sr, s_sh;
};

// Calls merge(list, n) with `loc`'s chunk list of one (row, head), and with output row
// `row`'s other state appended as its last chunk where OTHER.
template <typename T, bool OTHER, typename F>
__device__ __forceinline__ void with_chunk_list(const UnitChunks &loc, int num_chunks,
                                                const OtherState<T> &other, int64_t row, int h,
                                                F &&merge) {
  if constexpr (OTHER) {
    const WithOther<T, UnitChunks> wl = {loc, num_chunks, other.v + row * other.v_sr + h * other.v_sh,
                                         other.s + row * other.s_sr + h * other.s_sh};
    merge(wl, num_chunks + 1);
  } else {
    merge(loc, num_chunks);
  }
}

// BATCH 8 (merge_chunk_list): 116 registers, 4 blocks per SM, for grids that fit in one
// wave of those; BATCH 2 with 16 blocks per SM for larger ones (measured: bench/NOTES.md).
template <typename T, int BATCH, bool OTHER = false>
__global__ void __launch_bounds__(128, BATCH == 8 ? 1 : 16)
merge_partials_kernel(const fi_merge_unit *units, const int32_t *device_num_units,
                      int num_units, int row_slots, const float *po, const float *plse,
                      int heads, int head_dim, T *o, int64_t o_sb, int64_t o_sh, float *lse,
                      int64_t lse_sb, int64_t lse_sh, int host_plan, OtherState<T> other) {
  __shared__ float red_o[128 * 8];
  __shared__ float2 red_md[128];
  const int h = blockIdx.y;
  // The count and this block's first merge unit. A host plan's were uploaded before any
  // kernel of the run and no kernel writes them, so the block reads them while the kernel
  // ahead (the one writing the partials) finishes: two dependent loads off the path after
  // it. A device plan's are the device planner's: read after the wait.
  int n_units = 0;
  fi_merge_unit first = {};
  auto read_plan = [&] {
    n_units = device_num_units ? *device_num_units : num_units;
    if (blockIdx.x < (int64_t)n_units * row_slots) first = units[blockIdx.x / row_slots];
  };
  if (host_plan) read_plan();
  pdl_enter();  // the partials are the kernel before this one's writes
  if (!host_plan) read_plan();
  const int64_t items = (int64_t)n_units * row_slots;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    const int u = (int)(w / row_slots), slot = (int)(w - (int64_t)u * row_slots);
    const fi_merge_unit mu = w == blockIdx.x ? first : units[u];
    for (int r = slot; r < mu.rows; r += row_slots) {
      const UnitChunks loc = {po, plse, (int64_t)mu.first_partial_row + r, mu.rows, heads, h,
                              head_dim};
      const int64_t row = (int64_t)mu.out_row + r;
      with_chunk_list<T, OTHER>(loc, mu.num_chunks, other, row, h, [&](const auto &l, int n) {
        merge_chunk_list<T, BATCH>(l, n, head_dim, red_o, red_md, o + row * o_sb + h * o_sh,
                                   lse ? lse + row * lse_sb + h * lse_sh : nullptr);
      });
    }
  }
}

// The same merge with a warp per (unit, row, head) (merge_chunk_list_warp: the same bits):
// warp w of the grid takes items w, w + warps, ... of (unit, row slot, head), heads
// innermost, so a block's warps read adjacent partial rows. For plans whose units have
// few chunks each (FI_PLAN_FLAG_FEW_CHUNKS), where one block per (row, head) spends more on
// its barriers and CTA launches than on its loads (tuning merge_warps, on by default).
// Five blocks per SM (four at head_dim 64, whose 16 chunk lanes need more registers): at the
// 167 registers ptxas took unbounded, three fit, and a prefill step's 2,048-row merge (512
// blocks) ran in two waves, 11.4 us under ncu (bench/NOTES.md, session 71).
template <typename T, int D, bool OTHER = false>
__global__ void __launch_bounds__(128, D == 64 ? 4 : 5)
merge_partials_warps_kernel(const fi_merge_unit *units, const int32_t *device_num_units,
                            int num_units, int row_slots, const float *po, const float *plse,
                            int heads, T *o, int64_t o_sb, int64_t o_sh, float *lse,
                            int64_t lse_sb, int64_t lse_sh, int host_plan, OtherState<T> other) {
  const int lane = threadIdx.x & 31;
  const int64_t warp0 = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  // (as merge_partials_kernel: a host plan's count and first unit are read before the wait)
  int n_units = 0;
  fi_merge_unit first = {};
  auto read_plan = [&] {
    n_units = device_num_units ? *device_num_units : num_units;
    if (warp0 < (int64_t)n_units * row_slots * heads) first = units[warp0 / heads / row_slots];
  };
  if (host_plan) read_plan();
  pdl_enter();  // the partials are the kernel before this one's writes
  if (!host_plan) read_plan();
  const int64_t items = (int64_t)n_units * row_slots * heads;
  for (int64_t w = warp0; w < items; w += warps) {
    const int64_t pair = w / heads;
    const int h = (int)(w - pair * heads);
    const int u = (int)(pair / row_slots), slot = (int)(pair - (int64_t)u * row_slots);
    const fi_merge_unit mu = w == warp0 ? first : units[u];
    for (int r = slot; r < mu.rows; r += row_slots) {
      const UnitChunks loc = {po, plse, (int64_t)mu.first_partial_row + r, mu.rows, heads, h, D};
      const int64_t row = (int64_t)mu.out_row + r;
      with_chunk_list<T, OTHER>(loc, mu.num_chunks, other, row, h, [&](const auto &l, int n) {
        merge_chunk_list_warp<T, D>(l, n, lane, o + row * o_sb + h * o_sh,
                                    lse ? lse + row * lse_sb + h * lse_sh : nullptr);
      });
    }
  }
}

}  // namespace fi

using namespace fi;

static int grid_for(int64_t items) {
  int64_t blocks = (items + 127) / 128;
  if (blocks > 65535LL * 8) blocks = 65535LL * 8;  // grid-stride loops cover the rest
  return blocks < 1 ? 1 : (int)blocks;
}

// 1 when the tensor's base and the listed strides allow 8-element vectors.
static int vec8_ok(const fi_tensor *t, int nstrides) {
  size_t es = fi_dtype_size(t->dtype);
  if (!fi_is_aligned(t->data, 16)) return 0;
  if (t->shape[t->rank - 1] % 8 != 0) return 0;
  for (int i = 0; i < nstrides; ++i)
    if ((t->strides[i] * (int64_t)es) % 16 != 0) return 0;
  return 1;
}

static Strided3 strides3(const fi_tensor *t) {
  Strided3 s;
  s.s0 = t->rank > 0 ? t->strides[0] : 0;
  s.s1 = t->rank > 1 ? t->strides[1] : 0;
  s.s2 = t->rank > 2 ? t->strides[2] : 0;
  return s;
}

// The v kernel, writing s_out too when `so` is given (vec with D / 8 dividing 32 only).
template <typename T>
static void launch_merge_state(const fi_tensor *va, const fi_tensor *sa, const fi_tensor *vb,
                               const fi_tensor *sb, fi_tensor *vo, float *so, Strided3 sos,
                               int vec, const fi_context *ctx, const int32_t *skip_if_zero) {
  int64_t rows = va->shape[0];
  int heads = (int)va->shape[1], D = (int)va->shape[2];
  int vw = vec ? 8 : 1;
  int grid = grid_for(rows * heads * (D / vw));
  if (vec)
    fi_cuda_launch(ctx, dim3(grid), dim3(128), 0, merge_state_kernel<T, 8>,
        (const T *)va->data, strides3(va), (const float *)sa->data, strides3(sa),
        (const T *)vb->data, strides3(vb), (const float *)sb->data, strides3(sb),
        (T *)vo->data, strides3(vo), so, sos, rows, heads, D, skip_if_zero);
  else
    fi_cuda_launch(ctx, dim3(grid), dim3(128), 0, merge_state_kernel<T, 1>,
        (const T *)va->data, strides3(va), (const float *)sa->data, strides3(sa),
        (const T *)vb->data, strides3(vb), (const float *)sb->data, strides3(sb),
        (T *)vo->data, strides3(vo), so, sos, rows, heads, D, skip_if_zero);
}

// fi_merge_state, and (skip_if_zero given) fi_prefill_merge_run's in-place merge of a plan's
// unsplit rows, skipped on the device where their count is 0. That caller passes 16-byte
// vectors and head_dim 64 / 128 / 256, so s_out is written by the v kernel: the lse kernel
// below, which has no skip, never runs for it.
static fi_status merge_state(fi_context *ctx, const fi_tensor *v_a, const fi_tensor *s_a,
                             const fi_tensor *v_b, const fi_tensor *s_b, fi_tensor *v_out,
                             fi_tensor *s_out, const int32_t *skip_if_zero) {
  int64_t rows = v_a->shape[0];
  int heads = (int)v_a->shape[1];
  if (rows == 0 || heads == 0) return FI_SUCCESS;
  int vec = vec8_ok(v_a, 2) && vec8_ok(v_b, 2) && vec8_ok(v_out, 2);
  const int D = (int)v_a->shape[2];
  // s_out in the v kernel where one warp holds each (row, head)'s lanes; else a second
  // launch (the v kernel reads every s first, then the s kernel writes s_out, which may
  // alias s_a or s_b).
  const bool fused = s_out && vec && 32 % (D / 8) == 0;
  float *so = fused ? (float *)s_out->data : NULL;
  const Strided3 sos = fused ? strides3(s_out) : Strided3{0, 0, 0};
  switch (v_a->dtype) {
    case FI_DTYPE_F16:
      launch_merge_state<f16>(v_a, s_a, v_b, s_b, v_out, so, sos, vec, ctx, skip_if_zero);
      break;
    case FI_DTYPE_BF16:
      launch_merge_state<bf16>(v_a, s_a, v_b, s_b, v_out, so, sos, vec, ctx, skip_if_zero);
      break;
    case FI_DTYPE_F32:
      launch_merge_state<float>(v_a, s_a, v_b, s_b, v_out, so, sos, vec, ctx, skip_if_zero);
      break;
    default:
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "merge_state: v dtype %s has no CUDA kernel; use f16, bf16 or f32",
                          fi_dtype_name(v_a->dtype));
  }
  fi_status s = fi_cuda_check_launch(ctx, "merge_state");
  if (s != FI_SUCCESS || !s_out || fused) return s;
  fi_cuda_launch(ctx, dim3(grid_for(rows * heads)), dim3(128), 0, merge_state_s_kernel,
      (const float *)s_a->data, strides3(s_a), (const float *)s_b->data, strides3(s_b),
      (float *)s_out->data, strides3(s_out), rows, heads);
  return fi_cuda_check_launch(ctx, "merge_state (lse)");
}

extern "C" fi_status fi_cuda_merge_state(fi_context *ctx, const fi_tensor *v_a,
                                         const fi_tensor *s_a, const fi_tensor *v_b,
                                         const fi_tensor *s_b, fi_tensor *v_out,
                                         fi_tensor *s_out) {
  return merge_state(ctx, v_a, s_a, v_b, s_b, v_out, s_out, nullptr);
}

template <typename T>
static void launch_merge_states(const fi_tensor *v, const fi_tensor *s, fi_tensor *vo,
                                fi_tensor *so, int vec, const fi_context *ctx) {
  int64_t rows = v->shape[0];
  int n = (int)v->shape[1], heads = (int)v->shape[2], D = (int)v->shape[3];
  int vw = vec ? 8 : 1;
  int grid = grid_for(rows * heads * (D / vw));
  Strided3 vs = strides3(v), ss = strides3(s), vos = strides3(vo);
  Strided3 sos = so ? strides3(so) : vos;
  float *sop = so ? (float *)so->data : NULL;
  if (vec)
    fi_cuda_launch(ctx, dim3(grid), dim3(128), 0, merge_states_kernel<T, 8>, (const T *)v->data, vs,
                                                    (const float *)s->data, ss, (T *)vo->data,
                                                    vos, sop, sos, rows, n, heads, D);
  else
    fi_cuda_launch(ctx, dim3(grid), dim3(128), 0, merge_states_kernel<T, 1>, (const T *)v->data, vs,
                                                    (const float *)s->data, ss, (T *)vo->data,
                                                    vos, sop, sos, rows, n, heads, D);
}

extern "C" fi_status fi_cuda_merge_states(fi_context *ctx, const fi_tensor *v,
                                          const fi_tensor *s, fi_tensor *v_out,
                                          fi_tensor *s_out) {
  int64_t rows = v->shape[0];
  int heads = (int)v->shape[2];
  if (rows == 0 || heads == 0) return FI_SUCCESS;
  int vec = vec8_ok(v, 3) && vec8_ok(v_out, 2);
  switch (v->dtype) {
    case FI_DTYPE_F16: launch_merge_states<f16>(v, s, v_out, s_out, vec, ctx); break;
    case FI_DTYPE_BF16: launch_merge_states<bf16>(v, s, v_out, s_out, vec, ctx); break;
    case FI_DTYPE_F32: launch_merge_states<float>(v, s, v_out, s_out, vec, ctx); break;
    default:
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "merge_states: v dtype %s has no CUDA kernel; use f16, bf16 or f32",
                          fi_dtype_name(v->dtype));
  }
  return fi_cuda_check_launch(ctx, "merge_states");
}

// One launch of the split-KV merge for output element type T.
// one_wave_blocks: the blocks of one wave of the BATCH 8 instance
// (ctx->merge_wave_blocks_per_sm x SMs). warps_grid > 0: the warp-per-row kernel on that
// many blocks instead (head_dim 64, 128 or 256). other.v != nullptr: each row's other state
// merged last (the OTHER instances).
template <typename T, bool OTHER>
static cudaError_t launch_merge_partials_as(const fi_context *ctx, dim3 grid,
                                            long long one_wave_blocks, int warps_grid,
                                            int row_slots, bool host_plan,
                                            const fi_plan_layout &l,
                                            const int32_t *device_num_merge_units,
                                            const fi_tensor *o, int heads, int D, float *lse,
                                            int64_t lse_stride_row, int64_t lse_stride_head,
                                            const OtherState<T> &other) {
  const fi_merge_unit *units = (const fi_merge_unit *)l.merge;
  const float *po = (const float *)l.partial_o, *plse = (const float *)l.partial_lse;
  const int nu = (int)l.num_merge_units;
  T *out = (T *)o->data;
  const int64_t osb = o->strides[0], osh = o->strides[1];
  if (warps_grid > 0) {
    auto kernel = D == 64    ? merge_partials_warps_kernel<T, 64, OTHER>
                  : D == 128 ? merge_partials_warps_kernel<T, 128, OTHER>
                             : merge_partials_warps_kernel<T, 256, OTHER>;
    return fi_cuda_launch(ctx, dim3(warps_grid), dim3(128), 0, kernel, units,
                          device_num_merge_units, nu, row_slots, po, plse, heads, out, osb, osh,
                          lse, lse_stride_row, lse_stride_head, host_plan ? 1 : 0, other);
  }
  // The BATCH 8 instance where the grid fits in one wave of its blocks, else BATCH 2 (more
  // blocks per SM: a wave of latency saved outweighs the fewer loads in flight per thread).
  const bool one_wave = (long long)grid.x * grid.y <= one_wave_blocks;
  return fi_cuda_launch(ctx, grid, dim3(128), 0,
                        one_wave ? merge_partials_kernel<T, 8, OTHER>
                                 : merge_partials_kernel<T, 2, OTHER>,
                        units, device_num_merge_units, nu, row_slots, po, plse, heads, D, out,
                        osb, osh, lse, lse_stride_row, lse_stride_head, host_plan ? 1 : 0,
                        other);
}

template <typename T>
static cudaError_t launch_merge_partials(const fi_context *ctx, dim3 grid, long long one_wave_blocks,
                                         int warps_grid, int row_slots, bool host_plan,
                                         const fi_plan_layout &l,
                                         const int32_t *device_num_merge_units,
                                         const fi_tensor *o, int heads, int D, float *lse,
                                         int64_t lse_stride_row, int64_t lse_stride_head,
                                         const fi_tensor *v_other, const fi_tensor *s_other) {
  if (!v_other)
    return launch_merge_partials_as<T, false>(ctx, grid, one_wave_blocks, warps_grid, row_slots,
                                              host_plan, l, device_num_merge_units, o, heads, D,
                                              lse, lse_stride_row, lse_stride_head, {});
  const OtherState<T> other = {(const T *)v_other->data, v_other->strides[0],
                               v_other->strides[1], (const float *)s_other->data,
                               s_other->strides[0], s_other->strides[1]};
  return launch_merge_partials_as<T, true>(ctx, grid, one_wave_blocks, warps_grid, row_slots,
                                           host_plan, l, device_num_merge_units, o, heads, D,
                                           lse, lse_stride_row, lse_stride_head, other);
}

extern "C" void fi_cuda_merge_prepare(fi_context *ctx) {
  const void *const batch8[3] = {(const void *)merge_partials_kernel<f16, 8>,
                                 (const void *)merge_partials_kernel<bf16, 8>,
                                 (const void *)merge_partials_kernel<float, 8>};
  for (int i = 0; i < 3; ++i) {
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, batch8[i], 128, 0) != cudaSuccess ||
        per_sm < 1) {
      cudaGetLastError();
      per_sm = 1;
    }
    ctx->merge_wave_blocks_per_sm[i] = per_sm;
  }
}

// The split-KV merge of `plan` into o [rows, heads, D] and lse [rows, heads] (nullable),
// with a cascade's other state merged into every split row where v_other is given (s_other
// then too; vec8_ok(v_other, 2); not for sharded plans). Called by the decode and prefill
// runs after the partial-writing kernel, and by fi_cuda_prefill_merge_run.
static fi_status merge_partials(fi_context *ctx, const fi_plan *plan,
                                const int32_t *device_num_merge_units, const fi_tensor *v_other,
                                const fi_tensor *s_other, fi_tensor *o, fi_tensor *lse) {
  if (fi_plan_is_sharded(plan)) {  // every rank's partials, merged in rank order
    fi_shard_gathered g;
    fi_status s = fi_shard_exchange(ctx, plan, &g);
    return s != FI_SUCCESS ? s : fi_cuda_shard_merge(ctx, plan, &g, o, lse);
  }
  fi_plan_layout l = fi_plan_get_layout(plan);
  if (l.num_merge_units == 0 && !device_num_merge_units) return FI_SUCCESS;
  // A host plan that splits nothing merges nothing. Its launch is still needed inside a
  // graph capture: the graph reads the count from the workspace, and a replay after
  // re-planning merges what the new plan splits. Outside one it is an empty kernel (2.5 us
  // under ncu; mostly hidden behind the decode by PDL in a stream of runs).
  const bool host_plan = !(plan->private_[FI_PLAN_FLAGS] & FI_PLAN_FLAG_DEVICE);
  if (l.num_merge_units == 0 && host_plan) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(fi_cuda_stream(ctx), &cs) == cudaSuccess &&
        cs == cudaStreamCaptureStatusNone)
      return FI_SUCCESS;
  }
  int heads = plan->params.num_qo_heads, D = plan->params.head_dim;
  if ((D != 64 && D != 128 && D != 256) || !vec8_ok(o, 2))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "split-KV merge: o needs a 16-byte aligned base and strides that are "
                        "multiples of 16 bytes");
  // One CTA per (unit, row, head) up to what fills the GPU (16 CTAs of 128 threads per SM);
  // the CTAs stride over the rest. A device plan's count is its capacity (the units are
  // known on the device only): a grid of that size was mostly CTAs that leave at once
  // (33,792 of them, 43 us, in a prefill step that merges 32 units).
  const uint64_t rpu = plan->private_[FI_PLAN_ROWS_PER_UNIT];
  const int row_slots = rpu >= 1 && rpu <= 4096 ? (int)rpu : 1;
  const long long sms = ctx->target.sm_count > 0 ? ctx->target.sm_count : 132;
  const long long fill = (sms * 16 + heads - 1) / heads;
  long long grid_x = (l.num_merge_units > 0 ? (long long)l.num_merge_units : 1) * row_slots;
  if (grid_x > fill) grid_x = fill;
  dim3 grid((unsigned)grid_x, heads);
  // A host plan whose units have few chunks each, unless the merge_warps knob is 0
  // (FI_MERGE_WARPS=0): a warp per (unit, row, head) (the same bits as the block form), up to
  // 16 blocks of 4 warps per SM.
  int warps_grid = 0;
  if (host_plan && (plan->private_[FI_PLAN_FLAGS] & FI_PLAN_FLAG_FEW_CHUNKS) &&
      ctx->tuning.merge_warps != 0) {
    const long long warps = (long long)l.num_merge_units * row_slots * heads;
    long long blocks = (warps + 3) / 4;
    if (blocks > sms * 16) blocks = sms * 16;
    warps_grid = (int)(blocks > 0 ? blocks : 1);
  }
  float *lp = lse ? (float *)lse->data : NULL;
  int64_t lsb = lse ? lse->strides[0] : 0, lsh = lse ? lse->strides[1] : 0;
  // one wave of the 8-chunk instance for o type t (fi_cuda_merge_prepare: >= 1 per SM)
  auto wave = [&](int t) { return ctx->merge_wave_blocks_per_sm[t] * sms; };
  cudaError_t err;
  switch (o->dtype) {
    case FI_DTYPE_F16:
      err = launch_merge_partials<f16>(ctx, grid, wave(0), warps_grid, row_slots, host_plan, l,
                                       device_num_merge_units, o, heads, D, lp, lsb, lsh,
                                       v_other, s_other);
      break;
    case FI_DTYPE_BF16:
      err = launch_merge_partials<bf16>(ctx, grid, wave(1), warps_grid, row_slots, host_plan, l,
                                        device_num_merge_units, o, heads, D, lp, lsb, lsh,
                                        v_other, s_other);
      break;
    case FI_DTYPE_F32:
      err = launch_merge_partials<float>(ctx, grid, wave(2), warps_grid, row_slots, host_plan, l,
                                         device_num_merge_units, o, heads, D, lp, lsb, lsh,
                                         v_other, s_other);
      break;
    default:
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "split-KV merge: o dtype %s unsupported",
                          fi_dtype_name(o->dtype));
  }
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "split-KV merge: kernel launch failed: %s (%s)",
                        cudaGetErrorName(err), cudaGetErrorString(err));
  return fi_cuda_check_launch(ctx, "split-KV merge");
}

extern "C" fi_status fi_cuda_merge_partials(fi_context *ctx, const fi_plan *plan,
                                            const int32_t *device_num_merge_units,
                                            fi_tensor *o, fi_tensor *lse) {
  return merge_partials(ctx, plan, device_num_merge_units, nullptr, nullptr, o, lse);
}

// The merge an unmerged prefill run left (fi_prefill_merge_run; api.c validated every
// tensor). With another state: the rows the plan does not split (all of a device plan's,
// whose units only the device knows, and all rows inside a graph capture, whose replays
// may follow a re-plan) are the kernel's finished rows, merged with it in place by
// merge_state first; then the split rows' partials and the other state in one merge, which
// overwrites whatever the first merge wrote there. A v_other the vector loads cannot read
// (alignment, strides) merges after the plan's merge instead.
extern "C" fi_status fi_cuda_prefill_merge_run(fi_context *ctx, const fi_plan *plan,
                                               const fi_tensor *v_other,
                                               const fi_tensor *s_other, fi_tensor *o,
                                               fi_tensor *lse) {
  const int32_t *counts = fi_cuda_plan_device_counts(plan);
  const int32_t *device_units = counts ? counts + 1 : nullptr;
  if (!v_other) return merge_partials(ctx, plan, device_units, nullptr, nullptr, o, lse);
  const uint64_t flags = plan->private_[FI_PLAN_FLAGS];
  const bool host_plan = !(flags & FI_PLAN_FLAG_DEVICE);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  const bool capturing = cudaStreamIsCapturing(fi_cuda_stream(ctx), &cs) == cudaSuccess &&
                         cs != cudaStreamCaptureStatusNone;
  const bool splits_all = host_plan && !capturing && (flags & FI_PLAN_FLAG_SPLITS_ALL);
  const int64_t D = o->shape[2];
  if (!vec8_ok(v_other, 2) || !vec8_ok(o, 2) || (D != 64 && D != 128 && D != 256)) {
    fi_status s = merge_partials(ctx, plan, device_units, nullptr, nullptr, o, lse);
    return s != FI_SUCCESS ? s : fi_cuda_merge_state(ctx, o, lse, v_other, s_other, o, lse);
  }
  if (!splits_all) {  // (counts[10]: the plan's unsplit rows, planner.c's layout note)
    fi_status s =
        merge_state(ctx, o, lse, v_other, s_other, o, lse, counts ? counts + 10 : nullptr);
    if (s != FI_SUCCESS) return s;
  }
  // (a host plan that splits nothing launches nothing here outside a capture)
  return merge_partials(ctx, plan, device_units, v_other, s_other, o, lse);
}
