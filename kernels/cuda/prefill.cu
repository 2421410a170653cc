// prefill.cu -- CUDA backend entry points of batch ragged and paged prefill: support check,
// argument block, variant dispatch, and the split-KV merge.
//
// Work split: one CTA per (plan work unit, KV head) runs the tensor-core kernel of
// prefill_kernel.cuh (see there for the tile walk and memory traffic; tiles.cores picks its
// mma.sync or its Hopper wgmma engine, the latter checked against the device and the build
// here at plan time), or, for wgmma 128 x 128 plans on the fast path, persistent CTAs run the
// warp-specialised kernel of prefill_ws.cuh (tensor maps encoded here per run); work units that
// the planner split along KV write fp32 partial rows + LSE into the workspace, and the
// shared split-KV merge (merge.cu, fi_cuda_merge_partials) combines each merge unit's
// chunks in chunk order (deterministic, no atomics), reading every partial row once and
// writing each output row once.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.cuh"
#include "fi/cuda_variants.h"
#include "context.h"
#include "cuda_backend.h"
#include "internal.h"
#include "prefill_stage.h"
#include "prefill_variants.cuh"
#include "prefill_ws.cuh"
#include <cudaTypedefs.h>

namespace {

int kv_kind_of(const fi_attention_params *p) {
  if (p->kv_dtype == FI_DTYPE_E4M3) return FI_KV_E4M3;
  if (p->kv_dtype == FI_DTYPE_E5M2) return FI_KV_E5M2;
  return FI_KV_SAME;
}

fi_prefill_launch_fn launcher_for(const fi_attention_params *p) {
  const bool bf = p->q_dtype == FI_DTYPE_BF16;
  switch (p->head_dim) {
    case 64: return bf ? fi_prefill_launch_hd64_bf16 : fi_prefill_launch_hd64_f16;
    case 128: return bf ? fi_prefill_launch_hd128_bf16 : fi_prefill_launch_hd128_f16;
    case 256: return bf ? fi_prefill_launch_hd256_bf16 : fi_prefill_launch_hd256_f16;
    default: return nullptr;
  }
}

bool aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

// Every row the kernel touches with a 16-byte access must start on 16 bytes.
fi_status check_vector_tensor(fi_context *ctx, const char *name, const fi_tensor *t, int outer) {
  const int64_t per16 = 16 / (int64_t)fi_dtype_size(t->dtype);
  bool ok = aligned16(t->data);
  for (int d = 0; d < outer; ++d) ok = ok && (t->strides[d] % per16 == 0);
  if (!ok)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "%s: the CUDA prefill kernels need a 16-byte aligned base and strides "
                        "that are multiples of %lld elements (16 bytes); make the tensor "
                        "contiguous or use the host backend",
                        name, (long long)per16);
  return FI_SUCCESS;
}

// The CUDA backend's own check: the shared list, and for the wgmma tier what the context
// found at creation (fi_context.wgmma_available: a compute capability 9.0 device and a build
// with sm_90a code).
fi_status check_variant(fi_context *ctx, fi_op_family family, const fi_attention_params *a,
                        const fi_tiles *tiles) {
  char why[320];
  if (!fi_cuda_variant_supported(family, a, tiles, why, sizeof why))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "%s", why);
  if (tiles && tiles->cores == FI_CORES_WGMMA && !ctx->wgmma_available) {
#ifdef FI_CUDA_HAS_SM90A
    const bool built = true;
#else
    const bool built = false;
#endif
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "prefill tiles with cores = wgmma need a compute capability 9.0 "
                        "(Hopper) device and a runtime built for sm_90a; this device is sm %d "
                        "and the build %s sm_90a; use cores = tensor (or let the plan choose)",
                        (int)ctx->target.sm_version, built ? "has" : "lacks");
  }
  return FI_SUCCESS;
}

// The K/V operands of a run as the warp-specialised kernel maps them: each paged (4-d map
// of the cache) or as token rows (ragged, or staged by prefill_stage.cu).
struct KvTensors {
  const fi_tensor *k, *v;
  bool k_paged, v_paged;
  fi_kv_layout layout;  // paged only
};

// A tensor of esz-byte elements (2; fp8 1) as a tensor map with the 128-byte swizzle: dims
// innermost first, strides (bytes) of dims 1.. and the box. False when the driver refuses it
// (then the other kernel runs). Misses are promoted to 256 bytes in L2, unlike decode's maps:
// prefill re-reads each K/V tile from L2 for many query tiles, and no promotion measured
// the same or 2 % slower (paged append; bench/NOTES.md, decode v18).
bool encode_map(CUtensorMap *map, void *data, int rank, const cuuint64_t *dims,
                const cuuint64_t *strides, const cuuint32_t *box, int esz = 2) {
  // The driver's rules (cuTensorMapEncodeTiled), checked here so that it is never called
  // with arguments it refuses (an empty tensor has a zero extent): a 16-byte aligned base,
  // extents in 1 .. 2^32, strides of dims 1.. multiples of 16 below 2^40, boxes of 1 .. 256
  // elements whose innermost extent is 16 .. 128 bytes (the 128-byte swizzle).
  if (((uintptr_t)data & 15u) != 0 || rank < 1 || rank > 5) return false;
  for (int d = 0; d < rank; ++d) {
    if (dims[d] == 0 || dims[d] > (1ull << 32) || box[d] == 0 || box[d] > 256) return false;
    if (d > 0 && (strides[d - 1] % 16 != 0 || strides[d - 1] >= (1ull << 40))) return false;
  }
  if (box[0] * esz % 16 != 0 || box[0] * esz > 128) return false;
  auto encode = (PFN_cuTensorMapEncodeTiled_v12000)fi_cuda_tensor_map_encoder();
  const cuuint32_t unit[5] = {1, 1, 1, 1, 1};
  return encode &&
         encode(map, esz == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16,
                rank, data, dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// A tensor t (D, heads, tokens) of esz-byte elements as a tensor map with boxes of (one
// 128-byte row of head dims, box_heads heads, box_tokens tokens): q, o, and token rows of
// k / v (one head per box).
bool encode_rows_map(CUtensorMap *map, const fi_tensor *t, int D, int box_heads, int box_tokens,
                     int esz) {
  const cuuint64_t d[3] = {(cuuint64_t)D, (cuuint64_t)t->shape[1], (cuuint64_t)t->shape[0]};
  const cuuint64_t st[2] = {(cuuint64_t)(t->strides[1] * esz), (cuuint64_t)(t->strides[0] * esz)};
  const cuuint32_t b[3] = {(cuuint32_t)(128 / esz), (cuuint32_t)box_heads,
                           (cuuint32_t)box_tokens};
  return encode_map(map, t->data, 3, d, st, b, esz);
}

// q with boxes of (group heads, 128 / group tokens): the Q tiles of prefill_ws.cuh; for a
// group whose tiles pack rows across tokens (rows_across), boxes of one token, in q_run of 8
// tokens and in q_row of one row.
bool encode_q_maps(fi_prefill::WsMaps *m, const fi_tensor *q, int D, int group, int esz,
                   bool across) {
  memset(&m->q_run, 0, sizeof m->q_run);
  memset(&m->q_row, 0, sizeof m->q_row);
  return encode_rows_map(&m->q, q, D, group, across ? 1 : 128 / group, esz) &&
         (!across || (encode_rows_map(&m->q_run, q, D, group, 8, esz) &&
                      encode_rows_map(&m->q_row, q, D, 1, 1, esz)));
}

// o of the output's 16-bit elements with boxes of (group heads, 64 / group tokens): one
// consumer warpgroup's rows, which the kernel stores through the copy engine
// (WsMaps.o_store). Off (the consumers store the rows themselves) for a group that does not
// divide 64, rows packed across tokens, or rows the driver cannot map.
void encode_o_map(fi_prefill::WsMaps *m, const fi_tensor *o, int D, int group, bool across) {
  memset(&m->o, 0, sizeof m->o);
  const bool boxes = !across && group >= 1 && 64 % group == 0 && o->strides[2] == 1 &&
                     (o->dtype == FI_DTYPE_F16 || o->dtype == FI_DTYPE_BF16);
  m->o_store = boxes && encode_rows_map(&m->o, o, D, group, 64 / group, 2);
}

// The tensor maps of prefill_ws_kernel (prefill_ws.cuh): q (D, qo heads, tokens) with boxes
// of (64, group, 128 / group) (encode_q_maps); ragged k/v (D, kv heads, tokens) with (64, 1, ragged_box):
// the KV tile (128, 176 for PrefillParams.ws_wide), or 64 for block-sparse tiles (two halves
// of 64 keys from their own first keys); paged k/v (D, kv heads, position, page) with (64, 1,
// box, 1), box the largest power of two that divides both the tile and the page size (at least
// 16), and, where the page size divides the KV tile (not for
// block-sparse halves), k_run / v_run with (64, 1, page size, tile / page size): a tile of
// consecutive pages in one box. False when a tensor cannot be mapped.
bool encode_ws_maps(fi_prefill::WsMaps *m, const fi_tensor *q, const KvTensors &kv, int D,
                    int group, bool across, int page_size, int ragged_box, bool bsr) {
  if (q->strides[2] != 1 || kv.k->strides[kv.k_paged ? 3 : 2] != 1 ||
      kv.v->strides[kv.v_paged ? 3 : 2] != 1)
    return false;
  if (!encode_q_maps(m, q, D, group, 2, across)) return false;
  memset(&m->k_run, 0, sizeof m->k_run);
  memset(&m->v_run, 0, sizeof m->v_run);
  // (both tensors paged: a staged one is read as token rows)
  int run_pages = !bsr && kv.k_paged && kv.v_paged && page_size < ragged_box &&
                          ragged_box % page_size == 0
                      ? ragged_box / page_size
                      : 0;
  m->kv_box_rows = 128;
  for (int i = 0; i < 2; ++i) {
    const fi_tensor *t = i == 0 ? kv.k : kv.v;
    CUtensorMap *map = i == 0 ? &m->k : &m->v;
    if (!(i == 0 ? kv.k_paged : kv.v_paged)) {
      if (!encode_rows_map(map, t, D, 1, ragged_box, 2)) return false;
    } else {
      // (block-sparse halves: boxes of at most 64 keys; a tile of 176 keys: 16)
      int box = ragged_box & -ragged_box;
      while (page_size % box != 0) box /= 2;
      if (box < 16) return false;
      m->kv_box_rows = box;
      const int pos = kv.layout == FI_LAYOUT_NHD ? 1 : 2, head = kv.layout == FI_LAYOUT_NHD ? 2 : 1;
      const cuuint64_t d[4] = {(cuuint64_t)D, (cuuint64_t)t->shape[head],
                               (cuuint64_t)t->shape[pos], (cuuint64_t)t->shape[0]};
      const cuuint64_t st[3] = {(cuuint64_t)t->strides[head] * 2,
                                (cuuint64_t)t->strides[pos] * 2, (cuuint64_t)t->strides[0] * 2};
      const cuuint32_t b[4] = {64, 1, (cuuint32_t)box, 1};
      if (!encode_map(map, t->data, 4, d, st, b)) return false;
      const cuuint32_t run_box[4] = {64, 1, (cuuint32_t)page_size, (cuuint32_t)run_pages};
      if (run_pages && !encode_map(i == 0 ? &m->k_run : &m->v_run, t->data, 4, d, st, run_box))
        run_pages = 0;
    }
  }
  m->kv_run_pages = run_pages;
  return true;
}

// The tensor maps of fp8 attention (1-byte elements): q and k (token rows: ragged, the run's
// k; paged, staged) as for 16-bit with 128-dim boxes; V^T (staged, [kv heads][D][pitch]) as
// (pitch, D, kv heads) with boxes of (128 keys, D, 1).
bool encode_fp8_maps(fi_prefill::WsMaps *m, const fi_tensor *q, const fi_tensor *k,
                     const void *vt, int64_t vt_pitch, int D, int kv_heads, int group,
                     bool across) {
  if (q->strides[2] != 1 || k->strides[2] != 1) return false;
  const cuuint64_t vd[3] = {(cuuint64_t)vt_pitch, (cuuint64_t)D, (cuuint64_t)kv_heads};
  const cuuint64_t vs[2] = {(cuuint64_t)vt_pitch, (cuuint64_t)vt_pitch * D};
  const cuuint32_t vb[3] = {128, (cuuint32_t)D, 1};
  m->kv_box_rows = 128;
  m->kv_run_pages = 0;
  return encode_q_maps(m, q, D, group, 1, across) && encode_rows_map(&m->k, k, D, 1, 128, 1) &&
         encode_map(&m->v, const_cast<void *>(vt), 3, vd, vs, vb, 1);
}

fi_prefill_ws_launch_fn ws_launcher_for(const fi_attention_params *a) {
  const bool bf = a->q_dtype == FI_DTYPE_BF16;
  if (a->head_dim == 64) return bf ? fi_prefill_ws_launch_hd64_bf16 : fi_prefill_ws_launch_hd64_f16;
  if (a->head_dim == 128)
    return bf ? fi_prefill_ws_launch_hd128_bf16 : fi_prefill_ws_launch_hd128_f16;
  if (a->head_dim == 256)
    return bf ? fi_prefill_ws_launch_hd256_bf16 : fi_prefill_ws_launch_hd256_f16;
  return nullptr;
}

}  // namespace

// The warp-specialised kernels' shared-memory attribute (context.cu, Hopper contexts).
cudaError_t fi_prefill_ws_prepare() {
  cudaError_t e = fi_prefill_ws_prepare_hd64_f16();
  if (e == cudaSuccess) e = fi_prefill_ws_prepare_hd64_bf16();
  if (e == cudaSuccess) e = fi_prefill_ws_prepare_hd128_f16();
  if (e == cudaSuccess) e = fi_prefill_ws_prepare_hd128_bf16();
  if (e == cudaSuccess) e = fi_prefill_ws_prepare_hd256_f16();
  if (e == cudaSuccess) e = fi_prefill_ws_prepare_hd256_bf16();
  if (e == cudaSuccess) e = fi_prefill_ws_fp8_prepare_f16();
  if (e == cudaSuccess) e = fi_prefill_ws_fp8_prepare_bf16();
  return e;
}

namespace {

fi_status cuda_error(fi_context *ctx, const char *what, cudaError_t e) {
  return fi_set_error(ctx, FI_ERROR_CUDA, "%s: %s (%s)", what, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

// A custom mask whose plan has no per-row extents (planned without its bits, as the
// compiled plan steps are): each query row's {first kept key, last + 1} (relative to its
// request's KV; {kv_len, 0} when it keeps none; the end negated when it drops a key between
// them), as fi_plan_store_mask_extents finds them on the host, from the run's bits. One
// warp per row (lanes on consecutive bytes of the row's bits), rows from the workspace's
// batch (graph replays), at most `capacity` of them (the region's pairs).
__global__ void __launch_bounds__(128)
    mask_extents_kernel(const PrefillParams p, const int32_t *device_batch, int batch,
                        int64_t capacity, int2 *out) {
  fi::pdl_enter();
  const int b = device_batch ? *device_batch : batch;
  const int64_t rows = b > 0 ? min((int64_t)p.qo_indptr[b], capacity) : 0;
  const int lane = threadIdx.x & 31, warps_per_block = blockDim.x / 32;
  for (int64_t row = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / 32; row < rows;
       row += (int64_t)gridDim.x * warps_per_block) {
    int lo = 0, hi = b - 1;  // the request: the last r with qo_indptr[r] <= row
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (p.qo_indptr[mid] <= row) lo = mid; else hi = mid - 1;
    }
    const int r = lo;
    int64_t kv;
    if (p.paged) {
      const int pages = p.kv_indptr[r + 1] - p.kv_indptr[r];
      kv = pages > 0 ? (int64_t)(pages - 1) * p.page_size + p.kv_last_page_len[r] : 0;
    } else {
      kv = p.kv_indptr[r + 1] - p.kv_indptr[r];
    }
    const int64_t base = p.mask_indptr[r] + (row - p.qo_indptr[r]) * kv;
    long long first = LLONG_MAX, last = -1;
    int count = 0;
    if (kv > 0)
      for (int64_t by = (base >> 3) + lane; by <= (base + kv - 1) >> 3; by += 32) {
        const int64_t bit0 = by * 8;
        uint32_t v = p.mask_bits[by];
        if (bit0 < base) v &= 0xffu << (base - bit0);                 // the row's first byte
        if (bit0 + 8 > base + kv) v &= 0xffu >> (bit0 + 8 - (base + kv));  // and its last
        if (v) {
          first = min(first, (long long)(bit0 + __ffs(v) - 1));
          last = max(last, (long long)(bit0 + 31 - __clz(v)));
          count += __popc(v);
        }
      }
    for (int off = 16; off > 0; off >>= 1) {
      first = min(first, __shfl_xor_sync(0xffffffffu, first, off));
      last = max(last, __shfl_xor_sync(0xffffffffu, last, off));
      count += __shfl_xor_sync(0xffffffffu, count, off);
    }
    if (lane == 0) {
      if (count == 0) {
        out[row] = make_int2((int)kv, 0);
      } else {
        const int f = (int)(first - base), l = (int)(last - base);
        out[row] = make_int2(f, count != l - f + 1 ? -(l + 1) : l + 1);
      }
    }
  }
}

// A custom mask whose plan has no extents: computed on the device into the workspace's
// extent region (when it holds the plan's rows), and p.mask_extent set. Nothing otherwise.
cudaError_t device_mask_extents(const fi_context *ctx, const fi_plan *plan, PrefillParams &p,
                                const int32_t *counts) {
  if (!p.custom_mask || p.mask_extent) return cudaSuccess;
  int64_t capacity = 0;
  const size_t off = fi_plan_mask_extent_room(ctx, plan, &capacity);
  if (!off) return cudaSuccess;  // no room: every tile of the range, as before
  int2 *out = reinterpret_cast<int2 *>((char *)plan->workspace + off);
  const int64_t rows = plan->total_qo_rows < capacity ? plan->total_qo_rows : capacity;
  const int64_t fill = (int64_t)(ctx->target.sm_count > 0 ? ctx->target.sm_count : 132) * 16;
  const int grid = (int)((rows + 3) / 4 < fill ? (rows + 3) / 4 : fill);  // a warp per row
  cudaError_t e = fi_cuda_launch(ctx, dim3(grid > 0 ? grid : 1), dim3(128), 0,
                                 mask_extents_kernel, p, counts ? counts + 8 : nullptr,
                                 plan->batch, capacity, out);
  if (e == cudaSuccess) p.mask_extent = reinterpret_cast<const int32_t *>(out);
  return e;
}

// The stage pass's arguments both of its kernels take: the run's K/V and page table as the
// prefill kernel gets them, and the plan's batch (read on the device from the workspace
// header's batch word when the plan has counters, so graph replays see the current one).
PrefillStageArgs stage_args_for(const PrefillParams &p, const fi_plan *plan,
                                const int32_t *counts, int64_t kv_rows) {
  PrefillStageArgs sa = {};
  sa.src = p;
  sa.batch = plan->batch;
  sa.device_batch = counts ? counts + 8 : nullptr;
  sa.head_dim = plan->params.head_dim;
  sa.kv_kind = kv_kind_of(&plan->params);
  sa.kv_rows_cap = kv_rows;
  return sa;
}

// The persistent CTAs of the warp-specialised kernels: one per SM, or the context's cap
// (tuning prefill_ws_ctas) so that kernels on other streams find SMs free.
static int ws_ctas(const fi_context *ctx) {
  const int sms = ctx->target.sm_count, cap = ctx->tuning.prefill_ws_ctas;
  return cap > 0 && cap < sms ? cap : sms;
}

// fp8 attention (q_dtype e4m3): the stage pass writes V^T (and a paged cache's K as token
// rows), then the warp-specialised kernel runs on fp8 wgmma. No other kernel takes fp8
// queries: a run it cannot take fails, naming why.
fi_status run_fp8(fi_context *ctx, const fi_plan *plan, PrefillParams &p, const fi_tensor *q,
                  const KvTensors &kv, const fi_stage_layout &stage, int64_t stage_kv_rows,
                  const int32_t *counts, int num_work_units, bool extras, cudaStream_t stream,
                  fi_tensor *o, fi_tensor *lse, const char *what) {
  const fi_attention_params *a = &plan->params;
  char why[224];
  why[0] = 0;
  if (plan->tiles.cores != FI_CORES_WGMMA || plan->tiles.q_tile != 128 ||
      plan->tiles.kv_tile != 128)
    snprintf(why, sizeof why, "the plan's tiles are not the wgmma 128 x 128 tiles");
  else if (!ctx->wgmma_available || !counts)
    snprintf(why, sizeof why, "no sm_90a device or no plan counters in the workspace");
  else if (ctx->tuning.prefill_warp_spec == 0)
    snprintf(why, sizeof why, "the kernel is turned off (FI_PREFILL_WARP_SPEC=0)");
  else if (stage.total == 0)
    snprintf(why, sizeof why, "head_dim %d (the kernel has 128) or a GQA group above 128",
             (int)a->head_dim);
  else if (stage.total > ctx->prefill_stage_bytes)
    snprintf(why, sizeof why,
             "it needs a prefill stage of %zu bytes for V^T (fi_context_set_prefill_stage, "
             "sized by fi_prefill_stage_size; the context has %zu)",
             stage.total, ctx->prefill_stage_bytes);
  char *base = (char *)ctx->prefill_stage;
  PrefillStageArgs sa = {};
  fi_tensor sk = *kv.k;
  fi_prefill::WsMaps maps;
  if (!why[0]) {
    sa = stage_args_for(p, plan, counts, stage_kv_rows);
    sa.svt = base + stage.v;
    sa.vt_pitch = fi_fp8_vt_pitch(stage_kv_rows);
    if (p.paged) {
      const int64_t kshape[3] = {stage_kv_rows > 0 ? stage_kv_rows : 1, a->num_kv_heads,
                                 a->head_dim};
      sa.sk = base + stage.k;
      sk = fi_tensor_contiguous(sa.sk, FI_DTYPE_E4M3, 3, kshape);
    }
    if (!encode_fp8_maps(&maps, q, &sk, sa.svt, sa.vt_pitch, a->head_dim, a->num_kv_heads,
                         p.group, p.rows_across != 0))
      snprintf(why, sizeof why, "tensors the driver cannot map (strides or alignment)");
    else
      encode_o_map(&maps, o, a->head_dim, p.group, p.rows_across != 0);
  }
  if (why[0])
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "%s with fp8 (e4m3) queries runs only on the warp-specialised Hopper "
                        "kernel, which cannot take this run: %s", what, why);
  p.k_staged = p.paged;
  p.v_staged = 1;
  p.q_scale_heads = a->q_scale_heads;
  p.k_scale_heads = a->k_scale_heads;
  p.v_scale_heads = a->v_scale_heads;
  cudaError_t e = fi_prefill_stage_fp8_launch(sa, p.pdl != 0, stream);
  if (e == cudaSuccess) e = device_mask_extents(ctx, plan, p, counts);
  if (e == cudaSuccess)
    e = (a->o_dtype == FI_DTYPE_BF16 ? fi_prefill_ws_fp8_launch_bf16
                                     : fi_prefill_ws_fp8_launch_f16)(
        p, maps, extras, num_work_units, ws_ctas(ctx), stream);
  if (e != cudaSuccess) return cuda_error(ctx, what, e);
  if (ctx->defer_merge) return FI_SUCCESS;  // (fi_prefill_merge_run merges)
  return fi_cuda_merge_partials(ctx, plan, counts + 1, o, lse);
}

// Fills the parts of the argument block shared by both forms and launches.
fi_status run_prefill(fi_context *ctx, const fi_plan *plan, PrefillParams &p, const fi_tensor *q,
                      const KvTensors &kv, const int32_t *qo_indptr, const fi_custom_mask *mask,
                      fi_tensor *o, fi_tensor *lse, const char *what) {
  const fi_attention_params *a = &plan->params;
  fi_status s;
  if ((s = check_vector_tensor(ctx, "q", q, 2)) != FI_SUCCESS) return s;
  if ((s = check_vector_tensor(ctx, "o", o, 2)) != FI_SUCCESS) return s;
  // The plan's layout for plain runs (api.c choose_ws_layout): a plan widened to 128 x 176
  // whose run brings an extra other than a soft cap or ALiBi (not both), a variant or
  // block-sparse tiles (compiled code plans from shapes and passes the op's soft cap, ALiBi,
  // window or variant with the run, mlir_adapters.c) runs 128 x 128 (the units do not depend
  // on the KV tile). The exception: a custom mask alone whose every row keeps one run of keys
  // by the plan's extents (FI_PLAN_FLAG_MASK_RUNS: those extents are then the mask the kernel
  // applies) keeps 128 x 176. A run with any extra under the tuning knob
  // prefill_ws_all_extras runs 128 x 128 as well (the instance with every extra has 128-key
  // tiles), and a run with any extra of a plan flagged for the deep ring takes the two-slot
  // one (the same numbers).
  const bool plain_run = !fi_params_modify_scores(a) && !p.bsr_tiles;
  const bool all_extras_instance =
      ctx->tuning.prefill_ws_all_extras == 1 && fi_params_have_builtin_extras(a);
  fi_tiles run_tiles = plan->tiles;
  if (run_tiles.kv_tile == FI_WS_WIDE_KV_TILE &&
      (!fi_plan_fits_wide_tile(plan, a) || p.bsr_tiles || all_extras_instance))
    run_tiles.kv_tile = 128;
  p.ws_deep = plain_run && (plan->private_[FI_PLAN_FLAGS] & FI_PLAN_FLAG_WS_DEEP) != 0;
  if ((s = check_variant(ctx, plan->family, a, &run_tiles)) != FI_SUCCESS) return s;
  fi_prefill_launch_fn launch = launcher_for(a);

  const fi_plan_layout lay = fi_plan_get_layout(plan);
  const int32_t *counts = fi_cuda_plan_device_counts(plan);
  if (lay.num_work_units == 0 && !counts) return FI_SUCCESS;
  if (q->shape[0] == 0) return FI_SUCCESS;  // no query row to compute (an empty batch)
  p.q = q->data;
  p.q_stride_n = q->strides[0];
  p.q_stride_h = q->strides[1];
  p.o = o->data;
  p.o_stride_n = o->strides[0];
  p.o_stride_h = o->strides[1];
  p.lse = lse ? (float *)lse->data : nullptr;
  p.lse_stride_n = lse ? lse->strides[0] : 0;
  p.lse_stride_h = lse ? lse->strides[1] : 0;
  p.qo_indptr = qo_indptr;
  p.mask_bits = (a->mask_mode == FI_MASK_CUSTOM) ? mask->bits : nullptr;
  p.mask_indptr = (a->mask_mode == FI_MASK_CUSTOM) ? mask->indptr : nullptr;
  const uint64_t ext_off = plan->private_[FI_PLAN_OFF_MASK_EXTENT];
  p.mask_extent = a->mask_mode == FI_MASK_CUSTOM && ext_off
                      ? reinterpret_cast<const int32_t *>((const char *)plan->workspace + ext_off)
                      : nullptr;
  p.work = lay.work;
  p.device_num_units = counts;
  p.sched = counts ? const_cast<int32_t *>(counts) + 2 : nullptr;
  p.num_units = lay.num_work_units;
  p.partial_o = lay.partial_o;
  p.partial_lse = lay.partial_lse;
  p.num_qo_heads = a->num_qo_heads;
  p.num_kv_heads = a->num_kv_heads;
  p.group = a->num_qo_heads / a->num_kv_heads;
  p.group_div = fi_make_fastdiv((uint32_t)p.group);
  // Q tiles whose rows pack across tokens: one work item per chunk of the plan's units.
  const int64_t unit_rows = fi_prefill_rows_per_unit(ctx, plan->family, a, run_tiles);
  p.rows_across = fi_prefill_rows_across(ctx, p.group);
  p.unit_chunks = p.rows_across ? (int32_t)((unit_rows * p.group + 127) / 128) : 1;
  p.page_div = fi_make_fastdiv((uint32_t)(p.page_size > 0 ? p.page_size : 1));
  p.causal = a->mask_mode == FI_MASK_CAUSAL;
  p.custom_mask = a->mask_mode == FI_MASK_CUSTOM;
  p.pos_encoding = a->pos_encoding;
  p.window_left = a->window_left;
  p.pdl = fi_cuda_pdl(ctx);
  p.bsr_half_skip = ctx->tuning.prefill_bsr_half_skip != 0;
  // (by default for block-sparse runs only: +1.5-2.5 % on the 98 % sparse rows, -1-3 % on
  // short dense ones; H200, bench/NOTES.md session 52)
  p.q_ahead = ctx->tuning.prefill_q_ahead < 0 ? p.bsr_tiles != nullptr
                                              : ctx->tuning.prefill_q_ahead != 0;
  // (by default from each chunk's second tile for paged and block-sparse runs: from the
  // first it cost block-sparse chunks of 1-3 tiles 3-8 %; from the second they run about as
  // fast as without it (variable and paged-64 rows +2-2.5 %, page boxes -1.5 %, the 98 %
  // rows within their spread) and paged appends 1.5-2.5 % faster than without it; from the
  // first tile for ragged runs, 2 % faster there on (32, 512); H100, bench/NOTES.md
  // sessions 69 and 70)
  p.v_lag = ctx->tuning.prefill_v_lag >= 0
                ? min(ctx->tuning.prefill_v_lag, (int)FI_PREFILL_V_LAG_AFTER_FIRST)
                : (p.bsr_tiles || p.paged ? FI_PREFILL_V_LAG_AFTER_FIRST : FI_PREFILL_V_LAG_ON);
  p.l2_hints = ctx->tuning.prefill_l2_hints < 0 ? FI_PREFILL_L2_DEFAULT_HINTS
                                                 : ctx->tuning.prefill_l2_hints;
  const int kvk = kv_kind_of(a);
  // k_scale / v_scale apply to every KV dtype (1 by default), as on the host backend; an fp8
  // q's q_scale scales the logits too.
  p.sm_scale = a->sm_scale * a->k_scale;
  if (a->q_dtype == FI_DTYPE_E4M3) p.sm_scale *= a->q_scale;
  p.sm_scale_log2 = p.sm_scale * 1.4426950408889634f;
  p.logits_soft_cap = a->logits_soft_cap;
  p.soft_cap_rcp = a->logits_soft_cap > 0.f ? 1.f / a->logits_soft_cap : 0.f;
  p.v_scale = a->v_scale;
  p.rope_rcp_scale = 1.f / a->rope_scale;
  p.rope_log2_theta = log2f(a->rope_theta);
  // (block-sparse tiles: every instance of the mma.sync kernel walks them; the
  // warp-specialised kernel has its own instance, launch_prefill_ws)
  const bool extras = fi_params_have_builtin_extras(a);
  // RoPE, fp8 KV and (paged) page sizes that are not a multiple of 16 reach the
  // warp-specialised kernel through the stage pass (prefill_stage.cu), in the context's
  // prefill stage: the layout is 0 bytes when the run needs none.
  // (paged block-sparse: the one sequence's pages; its plan's KV-entries slot holds the
  // window its tiles were clipped to)
  const int64_t stage_kv_rows =
      p.paged && p.bsr_tiles
          ? (plan->total_kv + p.page_size - 1) / p.page_size * p.page_size
      : p.paged ? (int64_t)plan->private_[FI_PLAN_KV_ENTRIES] * p.page_size
                : (kv.k->shape[0] < kv.v->shape[0] ? kv.k->shape[0] : kv.v->shape[0]);
  const fi_stage_layout stage =
      p.bsr_tiles ? fi_bsr_stage_layout(ctx, a, p.paged, stage_kv_rows)
                  : fi_prefill_stage_layout(ctx, a, p.paged, stage_kv_rows);

  cudaStream_t stream = fi_cuda_stream(ctx);
  if (a->q_dtype == FI_DTYPE_E4M3)
    return run_fp8(ctx, plan, p, q, kv, stage, stage_kv_rows, counts, lay.num_work_units, extras,
                   stream, o, lse, what);
  // The warp-specialised kernel (prefill_ws.cuh) runs the plans of its tiles (wgmma 128 x
  // 128; head_dim 256: 128 x 64, fi_prefill_ws_tiles),
  // with or without the extras, in and out of CUDA-graph captures (its tensor maps span the
  // tensors as declared at capture, as every kernel's bounds do; rows and pages come from
  // the plan in the workspace at replay). fp8 KV, RoPE and paged page sizes that are not a
  // multiple of 16 first go through the stage pass, when the context has a stage large
  // enough. Not for a GQA group above 128 or tensors the driver cannot map.
  // Tuning prefill_warp_spec (FI_PREFILL_WARP_SPEC): 0 never, 2 required (a run it cannot
  // take fails, naming why; for tests).
  // An attention variant (runtime.h, fi_variant): the kernel of the program's device image,
  // the warp-specialised kernel with the program's hooks compiled in, with the op's
  // captured values in its parameters.
  const fi_variant *var = a->variant && (a->variant->score_mod || a->variant->mask_mod)
                              ? a->variant : nullptr;
  const char *ws_refusal = nullptr;
  if (ctx->tuning.prefill_warp_spec == 0)
    ws_refusal = "turned off";  // (before the tensor maps are encoded for nothing)
  else if (!fi_prefill_ws_tiles(a, run_tiles))
    ws_refusal = "the plan's tiles are not the kernel's (wgmma 128 x 128; head_dim 256: 128 x 64)";
  else if (!ctx->wgmma_available || !counts)
    ws_refusal = "no sm_90a device or no plan counters in the workspace";
  else if (p.group > 128)
    ws_refusal = "a GQA group above 128";
  else if (a->head_dim > 128 && (p.bsr_tiles || var))
    ws_refusal = "head_dim 256 with block-sparse tiles or a score_mod/mask_mod (its instances "
                 "run the built-in extras; those have head_dim 64 and 128)";
  const bool needs_stage = fi_prefill_needs_stage(a, p.paged);
  // Paged block-sparse runs whose pages load as boxes of 16 or 32 rows take the stage when
  // the context holds it (token rows load faster; its layout is then not empty:
  // internal.h fi_bsr_stage_optional).
  const bool use_stage =
      needs_stage || (p.bsr_tiles && ctx->tuning.prefill_bsr_stage != 0 && stage.total > 0 &&
                      stage.total <= ctx->prefill_stage_bytes);
  char stage_why[200];
  if (!ws_refusal && needs_stage && stage.total == 0)
    ws_refusal = "RoPE, fp8 KV or a page size that is not a multiple of 16 with a KV dtype, "
                 "q dtype or head_dim the stage pass does not take";
  if (!ws_refusal && needs_stage && stage.total > ctx->prefill_stage_bytes) {
    snprintf(stage_why, sizeof stage_why,
             "RoPE, fp8 KV or a page size that is not a multiple of 16 needs a prefill stage "
             "of %zu bytes (fi_context_set_prefill_stage; the context has %zu)",
             stage.total, ctx->prefill_stage_bytes);
    ws_refusal = stage_why;
  }
  // The staged tensors: 16-bit token rows of q's type in the stage.
  const fi_dtype q_dt = a->q_dtype;
  fi_tensor sk = *kv.k, sv = *kv.v;
  KvTensors ws_kv = kv;
  PrefillStageArgs sa = {};
  if (!ws_refusal && use_stage) {
    char *base = (char *)ctx->prefill_stage;
    const int64_t kvshape[3] = {stage_kv_rows, a->num_kv_heads, a->head_dim};
    sa = stage_args_for(p, plan, counts, stage_kv_rows);
    sa.rope = a->pos_encoding == FI_POS_ROPE_LLAMA;
    sa.sk = base + stage.k;
    sk = fi_tensor_contiguous(sa.sk, q_dt, 3, kvshape);
    ws_kv.k = &sk;
    ws_kv.k_paged = false;
    p.k_staged = 1;
    p.rope_q = a->pos_encoding == FI_POS_ROPE_LLAMA;
    if (stage.v != SIZE_MAX) {
      sa.sv = base + stage.v;
      sv = fi_tensor_contiguous(sa.sv, q_dt, 3, kvshape);
      ws_kv.v = &sv;
      ws_kv.v_paged = false;
      p.v_staged = 1;
    }
  }
  fi_prefill::WsMaps ws_maps;
  const fi_prefill_ws_launch_fn ws_launch = ws_launcher_for(a);
  if (!ws_refusal && !ws_launch) ws_refusal = "a head_dim other than 64, 128 or 256";
  // (K/V boxes of the kernel's KV tile, the plan's (fi_prefill_ws_tiles); block-sparse
  // halves of 64 keys)
  // The plan's KV tile of 176 keys (api.c choose_ws_layout; checked by
  // fi_cuda_check_supported): the kernel's WIDE instance, the maps' boxes of 176 keys.
  p.ws_wide = run_tiles.kv_tile == FI_WS_WIDE_KV_TILE;
  if (!ws_refusal &&
      !encode_ws_maps(&ws_maps, q, ws_kv, a->head_dim, p.group, p.rows_across != 0,
                      p.page_size, p.bsr_tiles ? 64 : run_tiles.kv_tile, p.bsr_tiles != nullptr))
    ws_refusal = "tensors the driver cannot map (strides or alignment)";
  if (!ws_refusal) encode_o_map(&ws_maps, o, a->head_dim, p.group, p.rows_across != 0);
  // Block-sparse: a plan of mma.sync tiles runs the mma.sync kernel; one of wgmma tiles
  // that the warp-specialised kernel cannot take (no prefill stage, tensors the driver
  // cannot map) runs it too, with q 128 x kv 64 tiles (the tile list is the same; the
  // mma.sync kernel loads any key).
  // head_dim 256 has no other wgmma kernel: its plan runs the mma.sync kernel's 128 x 64
  // tiles (the plan's units are the same).
  // The same for the warp-specialised kernel's tiles of 176 keys (no other kernel has them).
  fi_tiles tiles = run_tiles;
  if (ws_refusal && (p.bsr_tiles || a->head_dim > 128 || p.ws_wide) &&
      tiles.cores == FI_CORES_WGMMA)
    tiles = {128, 64, tiles.split_kv, FI_CORES_TENSOR};
  // (A unit may hold more rows than the other kernels' query tile: a GQA group above
  // q_tile, or a plan whose units pack rows across tokens for the warp-specialised kernel;
  // prefill_kernel.cuh walks a unit's rows in chunks of its tile.)
  if (ws_refusal && ctx->tuning.prefill_warp_spec == 2)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "%s: the warp-specialised prefill kernel is required "
                        "(FI_PREFILL_WARP_SPEC=2) but cannot run: %s",
                        what, ws_refusal);
  const void *variant_kernel = nullptr;
  if (var) {
    if (ws_refusal)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "%s with a score_mod/mask_mod: the variant is compiled into the "
                          "warp-specialised prefill kernel, which cannot take this run: %s",
                          what, ws_refusal);
    if (extras)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "%s with a score_mod/mask_mod and a built-in soft cap, ALiBi, custom "
                          "mask or sliding window: the variant kernel has none of those built "
                          "in; express them in the variant (causal and RoPE stay built in)",
                          what);
    if ((s = fi_cuda_variant_kernel(ctx, var->device_image, a->head_dim,
                                    q_dt == FI_DTYPE_BF16, p.bsr_tiles != nullptr,
                                    &variant_kernel)) != FI_SUCCESS)
      return s;
    p.variant_score = var->score_mod != nullptr;
    p.variant_mask = var->mask_mod != nullptr;
    if (var->captures_bytes) memcpy(p.variant_captures, var->captures, var->captures_bytes);
  }
  cudaError_t e = cudaSuccess;
  if (!ws_refusal) {
    if (use_stage)
      e = fi_prefill_stage_launch(sa, q_dt == FI_DTYPE_BF16, ctx->target.sm_count, p.pdl != 0,
                                  stream);
    if (e == cudaSuccess) e = device_mask_extents(ctx, plan, p, counts);
    if (e == cudaSuccess)
      e = ws_launch(p, ws_maps, !extras ? 0 : ctx->tuning.prefill_ws_all_extras == 1 ? 2 : 1,
                    lay.num_work_units, ws_ctas(ctx), stream, variant_kernel);
  } else {
    p.k_staged = p.v_staged = p.rope_q = 0;
    e = launch(p, tiles.q_tile, tiles.kv_tile, kvk, extras, tiles.cores == FI_CORES_WGMMA,
               lay.num_work_units, stream);
  }
  if (e != cudaSuccess) return cuda_error(ctx, what, e);
  if (ctx->defer_merge) return FI_SUCCESS;  // (fi_prefill_merge_run merges)
  return fi_cuda_merge_partials(ctx, plan, counts ? counts + 1 : nullptr, o, lse);
}

}  // namespace

extern "C" fi_status fi_cuda_prefill_check_supported(fi_context *ctx, fi_op_family family,
                                                     const fi_attention_params *params,
                                                     const fi_tiles *tiles) {
  return check_variant(ctx, family, params, tiles);
}

namespace {

// Paged K/V (a page table) into the argument block, then run_prefill; bsr_tiles: the plan's
// block-sparse tile list (null for prefill).
fi_status run_paged(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                    const int32_t *qo_indptr, const fi_paged_kv_cache *kv,
                    const fi_page_table *pages, const int32_t *bsr_tiles,
                    const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse, const char *what) {
  fi_status s;
  if ((s = check_vector_tensor(ctx, "kv.k", &kv->k, 3)) != FI_SUCCESS) return s;
  if ((s = check_vector_tensor(ctx, "kv.v", &kv->v, 3)) != FI_SUCCESS) return s;
  PrefillParams p = {};
  p.k = kv->k.data;
  p.v = kv->v.data;
  const bool nhd = kv->layout == FI_LAYOUT_NHD;
  p.k_stride_page = kv->k.strides[0];
  p.k_stride_tok = nhd ? kv->k.strides[1] : kv->k.strides[2];
  p.k_stride_head = nhd ? kv->k.strides[2] : kv->k.strides[1];
  p.v_stride_page = kv->v.strides[0];
  p.v_stride_tok = nhd ? kv->v.strides[1] : kv->v.strides[2];
  p.v_stride_head = nhd ? kv->v.strides[2] : kv->v.strides[1];
  p.kv_indptr = pages->indptr;
  p.kv_indices = pages->indices;
  p.kv_last_page_len = pages->last_page_len;
  p.paged = 1;
  p.page_size = plan->params.page_size;
  p.bsr_tiles = bsr_tiles;
  const KvTensors kvt = {&kv->k, &kv->v, true, true, kv->layout};
  return run_prefill(ctx, plan, p, q, kvt, qo_indptr, mask, o, lse, what);
}

}  // namespace

extern "C" fi_status fi_cuda_paged_prefill_run(fi_context *ctx, const fi_plan *plan,
                                               const fi_tensor *q, const int32_t *qo_indptr,
                                               const fi_paged_kv_cache *kv,
                                               const fi_page_table *pages,
                                               const fi_custom_mask *mask, fi_tensor *o,
                                               fi_tensor *lse) {
  return run_paged(ctx, plan, q, qo_indptr, kv, pages, nullptr, mask, o, lse, "paged prefill");
}

namespace {

// Ragged K/V (token rows) into the argument block, then run_prefill; bsr_tiles: the plan's
// block-sparse tile list (null for prefill).
fi_status run_ragged(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                     const fi_tensor *k, const fi_tensor *v, const int32_t *qo_indptr,
                     const int32_t *kv_indptr, const int32_t *bsr_tiles,
                     const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse, const char *what) {
  fi_status s;
  if ((s = check_vector_tensor(ctx, "k", k, 2)) != FI_SUCCESS) return s;
  if ((s = check_vector_tensor(ctx, "v", v, 2)) != FI_SUCCESS) return s;
  PrefillParams p = {};
  p.k = k->data;
  p.v = v->data;
  p.k_stride_tok = k->strides[0];
  p.k_stride_head = k->strides[1];
  p.v_stride_tok = v->strides[0];
  p.v_stride_head = v->strides[1];
  p.kv_indptr = kv_indptr;
  p.bsr_tiles = bsr_tiles;
  p.paged = 0;
  p.page_size = 1;
  const KvTensors kvt = {k, v, false, false, FI_LAYOUT_NHD};
  return run_prefill(ctx, plan, p, q, kvt, qo_indptr, mask, o, lse, what);
}

}  // namespace

// Block-sparse attention over a paged cache: the page table of its one sequence (device),
// the query indptr and the KV tiles from the plan's region.
extern "C" fi_status fi_cuda_block_sparse_paged_run(fi_context *ctx, const fi_plan *plan,
                                                    const fi_tensor *q,
                                                    const fi_paged_kv_cache *kv,
                                                    const fi_page_table *pages, fi_tensor *o,
                                                    fi_tensor *lse) {
  const int32_t *region =
      reinterpret_cast<const int32_t *>((const char *)plan->workspace +
                                        plan->private_[FI_PLAN_OFF_BSR]);
  return run_paged(ctx, plan, q, region, kv, pages, region + 4, nullptr, o, lse,
                   "paged block-sparse attention");
}

// Block-sparse attention: the one request's indptrs and the KV tiles come from the plan's
// region of the workspace (fi_plan_build_block_sparse); the plan's tiles pick the kernel that
// walks them (wgmma: the warp-specialised one; tensor: the mma.sync one).
extern "C" fi_status fi_cuda_block_sparse_run(fi_context *ctx, const fi_plan *plan,
                                              const fi_tensor *q, const fi_tensor *k,
                                              const fi_tensor *v, fi_tensor *o, fi_tensor *lse) {
  const int32_t *region =
      reinterpret_cast<const int32_t *>((const char *)plan->workspace +
                                        plan->private_[FI_PLAN_OFF_BSR]);
  return run_ragged(ctx, plan, q, k, v, region, region + 2, region + 4, nullptr, o, lse,
                    "block-sparse attention");
}

extern "C" fi_status fi_cuda_ragged_prefill_run(fi_context *ctx, const fi_plan *plan,
                                                const fi_tensor *q, const fi_tensor *k,
                                                const fi_tensor *v, const int32_t *qo_indptr,
                                                const int32_t *kv_indptr,
                                                const fi_custom_mask *mask, fi_tensor *o,
                                                fi_tensor *lse) {
  return run_ragged(ctx, plan, q, k, v, qo_indptr, kv_indptr, nullptr, mask, o, lse,
                    "ragged prefill");
}
