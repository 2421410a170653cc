// kernels/cuda/decode.cu -- the CUDA backend's batch paged decode run: checks what the
// kernels need beyond api.c's validation (dtypes, head_dim, 16-byte alignment), fills the
// kernel parameters from the plan and launches decode.cuh's CUDA-core or tensor-core
// kernel (the plan's tiles decide), then the split-KV merge when the plan split any
// request. Work split and memory traffic: see the kernel files decode.cuh lists. Nothing is
// allocated here.
#include "common.cuh"
#include "decode.cuh"
#include "cuda_backend.h"
#include "internal.h"
#include "fi/cuda_variants.h"

#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

cudaError_t fi_decode_launch_f16(const fi::DecodeParams &p, fi_dtype kv_dtype, int head_dim,
                                 bool tc, int grid_x, size_t budget, size_t limit,
                                 cudaStream_t s);
cudaError_t fi_decode_launch_bf16(const fi::DecodeParams &p, fi_dtype kv_dtype, int head_dim,
                                  bool tc, int grid_x, size_t budget, size_t limit,
                                  cudaStream_t s);

// Launch order default (bench/NOTES.md, v6).
static const int kDecodeHeadFastDefault = 1;
static const int kDecodeWarpPipeDefault = 1;

// Heads of one KV head's group that one CTA computes.
static int heads_per_cta(int group, int head_dim, int tensor_cores) {
  if (tensor_cores) return fi_decode_tc_heads_per_cta(group);
  int h = 1;
  while (group % (2 * h) == 0 && 2 * h * (head_dim / 8) <= 128) h *= 2;
  return h;
}

static int aligned16(const void *p, const int64_t *strides, int n, size_t es) {
  if (!fi_is_aligned(p, 16)) return 0;
  for (int i = 0; i < n; ++i)
    if ((strides[i] * (int64_t)es) % 16 != 0) return 0;
  return 1;
}

static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  return (PFN_cuTensorMapEncodeTiled_v12000)fi_cuda_tensor_map_encoder();
}

// One cache tensor ([pages, page_size, heads, D] NHD or [pages, heads, page_size, D] HND,
// 16-bit or fp8 (es bytes), D contiguous) as decode_tws_kernel's 4-D map (see TwsMaps):
// boxes of 128-byte rows, 16 of them (pages not a multiple of 16: 8 or 4, the rows
// fi_decode_page_box_rows gives, so that a box never crosses a page). No L2 promotion: a box
// row is 128 bytes and a 16-bit row's other half comes in its own box right after, so
// promoting misses to 256 bytes only added L2 traffic (ncu on an H200: +25 % L2 read
// sectors) and cost the batch rows 6-10 % of their bandwidth (bench/NOTES.md, decode v18).
// False when the driver refuses it (the plan then runs the other kernels).
static bool encode_kv_map(CUtensorMap *map, const fi_tensor &t, fi_kv_layout layout, int D,
                          int es, int page_size) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (!encode || t.strides[3] != 1) return false;
  const int pos = layout == FI_LAYOUT_NHD ? 1 : 2, head = layout == FI_LAYOUT_NHD ? 2 : 1;
  const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)t.shape[head], (cuuint64_t)t.shape[pos],
                              (cuuint64_t)t.shape[0]};
  const cuuint64_t strides[3] = {(cuuint64_t)t.strides[head] * es,
                                 (cuuint64_t)t.strides[pos] * es, (cuuint64_t)t.strides[0] * es};
  const cuuint32_t rows = (cuuint32_t)fi_decode_page_box_rows(page_size);
  if (rows == 0) return false;
  const cuuint32_t box[4] = {(cuuint32_t)(128 / es), 1, rows, 1}, unit[4] = {1, 1, 1, 1};
  return encode(map, es == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16,
                4, t.data, dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
         CUDA_SUCCESS;
}

extern "C" fi_status fi_cuda_decode_supported(fi_context *ctx, const fi_attention_params *p,
                                              const fi_tiles *tiles) {
  char why[256];
  if (!fi_cuda_variant_supported(FI_OP_DECODE, p, tiles, why, sizeof why))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "%s", why);
  if (tiles) {
    // The smallest pipeline (2 stages) of this variant must fit the device.
    const int tc = tiles->cores == FI_CORES_TENSOR;
    const int kvb = (int)fi_dtype_size(p->kv_dtype);
    const int group = p->num_qo_heads / p->num_kv_heads;
    const bool transform = kvb == 1 || p->pos_encoding == FI_POS_ROPE_LLAMA;
    const bool split = p->pos_encoding == FI_POS_ROPE_LLAMA && p->q_dtype == FI_DTYPE_BF16;
    size_t need = tc ? fi::decode_tc_smem(p->head_dim, kvb, tiles->kv_tile, 2,
                                          fi::decode_tc_warps(tiles->kv_tile), transform, split)
                     : fi::decode_cc_smem(p->head_dim, kvb, tiles->kv_tile, 2,
                                          heads_per_cta(group, p->head_dim, tc));
    if (need > (size_t)ctx->target.smem_per_block)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "decode: the %s variant with kv_tile %d and head_dim %d needs %zu "
                          "bytes of shared memory; the device allows %d per block: force a "
                          "smaller kv_tile", tc ? "tensor-core" : "CUDA-core",
                          (int)tiles->kv_tile, (int)p->head_dim, need,
                          (int)ctx->target.smem_per_block);
  }
  return FI_SUCCESS;
}

extern "C" fi_status fi_cuda_decode_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                        const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                        fi_tensor *o, fi_tensor *lse) {
  const fi_attention_params *ap = &plan->params;
  fi_status st = fi_cuda_decode_supported(ctx, ap, &plan->tiles);
  if (st != FI_SUCCESS) return st;
  const int D = ap->head_dim;
  const size_t qes = fi_dtype_size(ap->q_dtype), kes = fi_dtype_size(ap->kv_dtype);
  if (!aligned16(q->data, q->strides, 2, qes) || !aligned16(o->data, o->strides, 2, qes))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "decode: q and o need 16-byte aligned data and batch/head strides that "
                        "are multiples of 16 bytes (the kernels use 16-byte vectors)");
  if (!aligned16(kv->k.data, kv->k.strides, 3, kes) ||
      !aligned16(kv->v.data, kv->v.strides, 3, kes))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "decode: the K/V cache needs 16-byte aligned data and page/position/"
                        "head strides that are multiples of 16 bytes (16-byte cp.async)");

  fi_plan_layout l = fi_plan_get_layout(plan);
  const int32_t *device_counts = fi_cuda_plan_device_counts(plan);
  if (l.num_work_units == 0 && !device_counts) return FI_SUCCESS;

  fi::DecodeParams p;
  memset(&p, 0, sizeof(p));
  p.q = q->data;
  p.q_sb = q->strides[0];
  p.q_sh = q->strides[1];
  p.o = o->data;
  p.o_sb = o->strides[0];
  p.o_sh = o->strides[1];
  p.lse = lse ? (float *)lse->data : NULL;
  p.lse_sb = lse ? lse->strides[0] : 0;
  p.lse_sh = lse ? lse->strides[1] : 0;
  p.k = (const uint8_t *)kv->k.data;
  p.v = (const uint8_t *)kv->v.data;
  const int pos_dim = kv->layout == FI_LAYOUT_NHD ? 1 : 2;
  const int head_dim_idx = kv->layout == FI_LAYOUT_NHD ? 2 : 1;
  p.k_sp = kv->k.strides[0];
  p.k_sn = kv->k.strides[pos_dim];
  p.k_sh = kv->k.strides[head_dim_idx];
  p.v_sp = kv->v.strides[0];
  p.v_sn = kv->v.strides[pos_dim];
  p.v_sh = kv->v.strides[head_dim_idx];
  p.kv_indptr = pages->indptr;
  p.kv_indices = pages->indices;
  p.kv_last_page_len = pages->last_page_len;
  p.work = l.work;
  p.device_num_units = device_counts;  // [0]: work units of the current plan
  p.num_units = l.num_work_units;
  p.partial_o = l.partial_o;
  p.partial_lse = l.partial_lse;
  p.num_qo_heads = ap->num_qo_heads;
  p.num_kv_heads = ap->num_kv_heads;
  p.group = ap->num_qo_heads / ap->num_kv_heads;
  p.page_size = ap->page_size;
  const int tc = plan->tiles.cores == FI_CORES_TENSOR;
  p.heads_per_cta = heads_per_cta(p.group, D, tc);
  p.kv_tile = plan->tiles.kv_tile;
  p.scale = ap->sm_scale * ap->k_scale;
  p.v_scale = ap->v_scale;
  p.soft_cap = ap->logits_soft_cap;
  p.window_left = ap->window_left;
  p.pos_encoding = ap->pos_encoding;
  p.rope_rcp_scale = 1.0f / ap->rope_scale;
  p.rope_log2_theta = log2f(ap->rope_theta);

  // Blocks: one per unit slot of the plan's launch size (planner.c,
  // fi_plan_decode_launch_units: the same for a host and a device plan of one problem, so
  // both launch the same kernel shape; slots past the device's unit count leave at once,
  // and graph replays with more units loop).
  const int64_t launch = (int64_t)plan->private_[FI_PLAN_LAUNCH_UNITS];
  int grid_x = launch > 0 ? (int)launch : (l.num_work_units > 0 ? l.num_work_units : 1);
  if (grid_x > 65535 * 4) grid_x = 65535 * 4;
  const size_t limit = (size_t)ctx->target.smem_per_block;
  // Shared-memory budget per CTA (the deepest pipeline that fits), measured on an H200
  // (bench/NOTES.md, v6): two stages everywhere. Resident CTAs per SM decide the rate, not
  // pipeline depth: the CUDA-core kernel went from 75% of copy (4 stages, 3 CTAs/SM) to
  // 98% (2 stages, 6 CTAs/SM); the 2-warp tensor-core kernels fell from 80% to 45% with 3
  // stages (4 CTAs/SM instead of 5-6). At an equal CTA count a third stage changes nothing
  // (v8): the per-warp kernel gains from more warps per CTA instead (tcw_warps_for, v9).
  size_t budget = tc ? (p.kv_tile >= 64 ? 76 * 1024 : 40 * 1024) : 40 * 1024;
  // The context's sweep knobs (read once at its creation, context.h) may override the
  // budget (FI_DECODE_SMEM_KB), the CTA order (FI_DECODE_HEAD_FAST=0: the 2-D grid with the
  // units fastest) and the tensor-core variant (FI_DECODE_WARP_PIPE).
  if (ctx->tuning.smem_kb > 0) budget = (size_t)ctx->tuning.smem_kb * 1024;
  if (budget > limit) budget = limit;
  p.head_fast = ctx->tuning.head_fast >= 0 ? ctx->tuning.head_fast != 0 : kDecodeHeadFastDefault;
  p.warp_pipe = ctx->tuning.warp_pipe >= 0 ? ctx->tuning.warp_pipe != 0 : kDecodeWarpPipeDefault;
  p.heads_n = ctx->tuning.heads_n >= 0 ? ctx->tuning.heads_n != 0 : 1;
  p.single_slots = ctx->tuning.single_slots >= 0 ? ctx->tuning.single_slots != 0 : 1;
#ifdef FI_CUDA_HAS_SM90A
  const bool sm90 = ctx->target.sm_version == 90;
#else
  const bool sm90 = false;  // no sm_90 code in this build: the bulk-copy kernel cannot run
#endif
  // The warp-specialised kernel (decode_tws.cuh, decode_tws_kernel): tensor-core plans with
  // page sizes that are a multiple of 4 (fi_decode_page_box_rows), <= 8 heads per CTA, and
  // either 16-bit KV of q's type at head_dim 64 or 128 or fp8 KV at head_dim 128 (the
  // consumers widen the bytes); RoPE included (its consumers rotate K in registers).
  const bool fp8_kv = ap->kv_dtype == FI_DTYPE_E4M3 || ap->kv_dtype == FI_DTYPE_E5M2;
  const int kv_es = fp8_kv ? 1 : 2;
  fi::TwsMaps tws_maps;
  const bool tws = sm90 && ctx->tuning.warp_spec != 0 && tc && p.warp_pipe && p.heads_n &&
                   fi_decode_tws_shape_ok(ap->q_dtype, ap->kv_dtype, D, p.group, p.page_size,
                                          ap->fixed_split_size) &&
                   encode_kv_map(&tws_maps.k, kv->k, kv->layout, D, kv_es, p.page_size) &&
                   encode_kv_map(&tws_maps.v, kv->v, kv->layout, D, kv_es, p.page_size);
  p.tws_maps = tws ? &tws_maps : NULL;
  p.tws_slots = ctx->tuning.tws_slots;
  p.max_ctas = ctx->tuning.decode_max_ctas;
  // An attention variant (runtime.h, fi_variant): the warp-specialised kernel of the
  // program's device image, with the program's hooks compiled in and the op's captured
  // values as its third parameter.
  const fi_variant *var = ap->variant && (ap->variant->score_mod || ap->variant->mask_mod)
                              ? ap->variant : NULL;
  fi::DecodeVariant dv;
  if (var) {
    if (!tws)
      return fi_set_error(
          ctx, FI_ERROR_UNSUPPORTED,
          "decode with a score_mod/mask_mod: the variant is compiled into the "
          "warp-specialised decode kernel, which cannot take this run (it needs an sm_90 "
          "device and build, tensor-core tiles (cores = tensor), page sizes that are a "
          "multiple of 4 (below 16 or not a multiple of 16: a fixed_split_size whose "
          "chunks of whole pages are a multiple of 16 tokens, or none), a KV cache of q's "
          "dtype at head_dim 64 or 128 and at most 8 query heads per CTA; this run: "
          "page_size %d, fixed_split_size %d, head_dim %d, tiles %s); run it on the host "
          "backend or change the shape",
          (int)ap->page_size, (int)ap->fixed_split_size, D, tc ? "tensor" : "cuda cores");
    if (ap->logits_soft_cap > 0.f || ap->window_left >= 0 || ap->pos_encoding == FI_POS_ALIBI)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "decode with a score_mod/mask_mod and a built-in soft cap, ALiBi or "
                          "sliding window: the variant kernel takes the variant in their "
                          "place; express them in the variant (RoPE stays built in)");
    const void *kernel = NULL;
    fi_status vs = fi_cuda_variant_decode_kernel(ctx, var->device_image, D,
                                                 ap->q_dtype == FI_DTYPE_BF16,
                                                 ap->pos_encoding == FI_POS_ROPE_LLAMA, &kernel);
    if (vs != FI_SUCCESS) return vs;
    memset(&dv, 0, sizeof dv);
    dv.score = var->score_mod != NULL;
    dv.mask = var->mask_mod != NULL;
    if (var->captures_bytes) memcpy(dv.captures, var->captures, var->captures_bytes);
    p.variant_kernel = kernel;
    p.variant = &dv;
  }
  p.sm_count = ctx->target.sm_count;
  p.smem_per_sm = ctx->smem_per_sm;
  p.smem_reserved = ctx->smem_reserved_per_block;
  p.pdl = fi_cuda_pdl(ctx);
  const int tcw_warps = ctx->tuning.tcw_warps;
  p.tcw_warps = tcw_warps >= 2 && tcw_warps <= fi::kTcw1MaxWarps ? tcw_warps : 0;
  cudaStream_t s = fi_cuda_stream(ctx);
  cudaError_t err = ap->q_dtype == FI_DTYPE_F16
                        ? fi_decode_launch_f16(p, ap->kv_dtype, D, tc, grid_x, budget, limit, s)
                        : fi_decode_launch_bf16(p, ap->kv_dtype, D, tc, grid_x, budget, limit, s);
  if (err == cudaErrorInvalidConfiguration)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "decode: kv_tile %d with head_dim %d needs more shared memory than the "
                        "device's %zu bytes per block; force a smaller kv_tile",
                        (int)p.kv_tile, D, limit);
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "decode: kernel launch failed: %s (%s)",
                        cudaGetErrorName(err), cudaGetErrorString(err));
  return fi_cuda_merge_partials(ctx, plan, device_counts ? device_counts + 1 : NULL, o, lse);
}
