/* fi/cuda_variants.h -- what the CUDA microkernels are compiled for: the one list that the
 * CUDA backend's plan check, the kernels' template instantiations and the compiler's
 * fi-lower-to-runtime{backend=cuda} all read, so the compile-time check cannot drift from
 * the kernels. Pure C (part of the fi_heuristics library); device limits such as shared
 * memory are checked by the backend at plan time, not here. */
#ifndef FI_CUDA_VARIANTS_H
#define FI_CUDA_VARIANTS_H

#include <stddef.h>

#include "fi/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Head dims with a CUDA kernel (decode and prefill). */
#define FI_CUDA_HEAD_DIM_LIST(X) X(64) X(128) X(256)
/* KV tiles of the decode kernels (both core kinds). */
#define FI_CUDA_DECODE_KV_TILE_LIST(X) X(16) X(32) X(64) X(128)
/* (q_tile, kv_tile) pairs of the tensor-core prefill kernels. (128, 128) is left out: its
 * fp32 accumulators do not fit the register file of 4 warps. */
#define FI_CUDA_PREFILL_TILE_LIST(X) \
  X(16, 32) X(16, 64) X(16, 128) X(32, 32) X(32, 64) X(32, 128) X(64, 32) X(64, 64) \
  X(64, 128) X(128, 32) X(128, 64)
/* The Hopper tier (cores = wgmma: warpgroup MMA, sm_90a builds on compute capability 9.0
 * devices): (q_tile, kv_tile) pairs and head dims. Each warpgroup of 4 warps owns 64 query
 * rows, so (128, 128) fits where the mma.sync kernel's 4 warps did not; q_tile 64 is one
 * warpgroup per CTA (two CTAs per SM run out of phase). */
#define FI_CUDA_PREFILL_WGMMA_TILE_LIST(X) X(64, 64) X(64, 128) X(128, 64) X(128, 128)
#define FI_CUDA_PREFILL_WGMMA_HEAD_DIM_LIST(X) X(64) X(128)
/* head_dim 256 on wgmma: the warp-specialised kernel alone, tiles (128, 64) (ragged and
 * paged prefill; not block-sparse). */
#define FI_CUDA_PREFILL_WS_HD256 256

/* 1 when the run has a built-in extra beyond causal masking: a logits soft cap, ALiBi, a
 * custom mask or a sliding window (the prefill kernels' EXTRAS instances run them). */
static inline int fi_params_have_builtin_extras(const fi_attention_params *p) {
  return p->logits_soft_cap > 0.f || p->pos_encoding == FI_POS_ALIBI ||
         p->mask_mode == FI_MASK_CUSTOM || p->window_left >= 0;
}
/* 1 when the warp-specialised kernel's 176-key KV tile runs these scores whatever the plan:
 * nothing changes them beyond causal but, at most, a logits soft cap or ALiBi, not both (no
 * window or variant; a custom mask only where the plan's rows each keep one run of keys,
 * fi_params_fit_wide_tile_mask_runs below). */
static inline int fi_params_fit_wide_tile(const fi_attention_params *p) {
  return !(p->pos_encoding == FI_POS_ALIBI && p->logits_soft_cap > 0.f) &&
         p->mask_mode != FI_MASK_CUSTOM && p->window_left < 0 &&
         !(p->variant && (p->variant->score_mod || p->variant->mask_mod));
}
/* 1 when a plan whose custom mask keeps one run of keys in every query row (its extents say
 * so: the kernel then reads no bits) fits the 176-key tile: the custom mask is the only
 * extra (no soft cap, ALiBi, window or variant). */
static inline int fi_params_fit_wide_tile_mask_runs(const fi_attention_params *p) {
  return p->mask_mode == FI_MASK_CUSTOM && p->logits_soft_cap <= 0.f &&
         p->pos_encoding != FI_POS_ALIBI && p->window_left < 0 &&
         !(p->variant && (p->variant->score_mod || p->variant->mask_mod));
}
/* 1 when anything changes the scores or the mask per element beyond causal: a built-in
 * extra or a variant's score_mod / mask_mod. */
static inline int fi_params_modify_scores(const fi_attention_params *p) {
  return fi_params_have_builtin_extras(p) ||
         (p->variant && (p->variant->score_mod || p->variant->mask_mod));
}

/* 1 when the CUDA backend has a kernel for `family` with these parameters and, when
 * `tiles` is not NULL, that variant. Otherwise 0, with a sentence in `why` (naming the
 * value and what is supported) when why_len > 0. */
int fi_cuda_variant_supported(fi_op_family family, const fi_attention_params *params,
                              const fi_tiles *tiles, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* FI_CUDA_VARIANTS_H */
