// prefill_params.h -- the argument block of the CUDA prefill kernels (ragged and paged),
// filled by prefill.cu from the validated run arguments and the plan.
#ifndef FI_CUDA_PREFILL_PARAMS_H
#define FI_CUDA_PREFILL_PARAMS_H

#include <stdint.h>

#include "backend.h"

// Division by a run-time constant d >= 1 for n < 2^31: q = (umulhi(n, m) + n) >> s.
struct FastDiv {
  uint32_t m, s;
#ifdef __CUDACC__
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
#endif
};
static inline FastDiv fi_make_fastdiv(uint32_t d) {
  FastDiv f;
  uint32_t s = 0;
  while ((1ull << s) < d) ++s;
  f.s = s;
  f.m = (uint32_t)(((1ull << 32) * ((1ull << s) - d)) / d + 1);
  return f;
}

// PrefillParams.l2_hints: K / V tiles kept in L2 over other lines (a KV head's tiles are
// read again by its other query tiles), Q tiles (read once per chunk) and O boxes the first
// lines evicted; a cleared bit puts those copies at the normal priority.
enum { FI_PREFILL_L2_KV_LAST = 1, FI_PREFILL_L2_Q_FIRST = 2, FI_PREFILL_L2_O_FIRST = 4 };
// The default (measured: bench/NOTES.md, session 64).
#define FI_PREFILL_L2_DEFAULT_HINTS \
  (FI_PREFILL_L2_KV_LAST | FI_PREFILL_L2_Q_FIRST | FI_PREFILL_L2_O_FIRST)

// PrefillParams.v_lag's orders of the producer's copies: V with K, V a tile behind K, or a
// chunk's first tile K then V and the lag from its second (the default by kind of run:
// prefill.cu).
enum { FI_PREFILL_V_LAG_OFF = 0, FI_PREFILL_V_LAG_ON = 1, FI_PREFILL_V_LAG_AFTER_FIRST = 2 };

// How the KV cache is stored relative to the query dtype.
enum { FI_KV_SAME = 0, FI_KV_E4M3 = 1, FI_KV_E5M2 = 2 };

struct PrefillParams {
  const void *q;
  int64_t q_stride_n, q_stride_h;  // elements
  const void *k, *v;
  // Ragged: row j of request r at (kv_indptr[r] + j) * stride_tok. Paged: page * stride_page
  // + (j % page_size) * stride_tok. Elements of the KV dtype.
  int64_t k_stride_page, k_stride_tok, k_stride_head;
  int64_t v_stride_page, v_stride_tok, v_stride_head;
  void *o;
  int64_t o_stride_n, o_stride_h;
  float *lse;  // may be null
  int64_t lse_stride_n, lse_stride_h;
  const int32_t *qo_indptr;
  const int32_t *kv_indptr;  // ragged: tokens; paged: pages
  const int32_t *kv_indices;
  const int32_t *kv_last_page_len;
  int32_t paged, page_size;
  // The warp-specialised kernel's K / V from the stage pass (prefill_stage.cu): 16-bit token
  // rows, request r's token j at row kv_indptr[r] * page_size + j (paged) or kv_indptr[r] + j
  // (ragged), mapped as a ragged tensor.
  int32_t k_staged, v_staged;
  // The warp-specialised kernel's KV tiles of 176 keys (prefill_ws_wide_kernel): a plan with
  // wgmma 128 x 176 tiles (head_dim 128 without extras or with a soft cap, ALiBi or a custom
  // mask of one run of keys per row alone; the tensor maps' boxes follow).
  int32_t ws_wide;
  // Its deep ring (prefill_ws_deep_kernel: one Q slot, three stages) for the 128 x 128 runs
  // without extras, variant or block-sparse tiles of a plan flagged FI_PLAN_FLAG_WS_DEEP (its
  // units stream K/V from DRAM).
  int32_t ws_deep;
  // The warp-specialised kernel rotates Q (LLaMA RoPE) in shared memory as it lands: each
  // query row once, with no copy of Q (K comes rotated from the stage pass).
  int32_t rope_q;
  FastDiv page_div;   // / page_size
  FastDiv group_div;  // / group
  const uint8_t *mask_bits;
  const int32_t *mask_indptr;
  // A custom mask's kept-key extent {first, last + 1} per query row, the end negated when
  // the row drops keys inside it (the plan's, in the workspace; null: none). The
  // warp-specialised kernel narrows each chunk's KV range to the union of its rows'
  // extents, and masks a chunk whose rows keep one run each by range, not by bits.
  const int32_t *mask_extent;
  // Block-sparse attention (prefill_ws.cuh's kernel with the extras only): the plan's KV
  // tiles, each two halves of 64 keys {first key, keys kept} x 2 (int4); a work unit's
  // kv_start .. kv_end index this list instead of a key range. Null for prefill.
  const int32_t *bsr_tiles;
  const fi_work_unit *work;
  const int32_t *device_num_units;  // the plan's unit count in the workspace (may be null)
  int32_t num_units;                // host count, used when device_num_units is null
  // Block-sparse: a tile's second half that keeps nothing is not loaded and P V skips it
  // (1, the default; 0: loaded, zeroed and multiplied as any short half -- the tuning
  // knob FI_PREFILL_BSR_HALF_SKIP, for A / B runs, which must give the same bits).
  int32_t bsr_half_skip;
  // The warp-specialised kernel with two Q slots: 1, the next chunk's Q copied between
  // the chunk's tiles once its slot is free, into a slot released at the last S where the
  // epilogue allows; 0, after the chunk's last tile, the slot released at the chunk's end
  // (the tuning knob FI_PREFILL_Q_AHEAD; the same bits either way).
  int32_t q_ahead;
  // The warp-specialised kernel's producer: FI_PREFILL_V_LAG_ON, V(tile) copied after
  // K(tile + 1) (FA3's order) in the instances whose rule allows it (prefill_ws.cuh,
  // V_LAG_RULE), the chunk's last V before the next chunk's first K; _AFTER_FIRST, so from
  // each chunk's second tile (its first K then V); _OFF, K then V of each tile. The tuning
  // knob FI_PREFILL_V_LAG (values above 2 read as 2); the same bits either way.
  int32_t v_lag;
  // L2 eviction priorities of the warp-specialised kernel's copy-engine transfers
  // (FI_PREFILL_L2_* bits; the tuning knob FI_PREFILL_L2_HINTS; the same bits either way).
  int32_t l2_hints;
  // The persistent kernel's scheduler (prefill_ws.cuh): [0] items handed out past the first
  // wave, [1] CTAs done; zero between runs (set by the planner, reset by the last CTA).
  int32_t *sched;
  float *partial_o, *partial_lse;
  int32_t num_qo_heads, num_kv_heads, group;
  // The warp-specialised kernel's work items per (unit, KV head): 1, or the chunks of a unit
  // whose rows pack across tokens (prefill_ws.cuh, rows_across), one item each.
  int32_t unit_chunks;
  int32_t rows_across;  // 1: Q tiles pack rows across tokens (internal.h, fi_prefill_rows_across)
  int32_t causal, custom_mask, pos_encoding, window_left;
  float sm_scale;       // sm_scale * k_scale (fp8 attention: * q_scale)
  float sm_scale_log2;  // that * log2(e)
  float logits_soft_cap, soft_cap_rcp;
  float v_scale;
  // fp8 attention's per-head scales (null: none): q per query head, k and v per KV head,
  // multiplying the per-tensor ones folded into sm_scale / v_scale.
  const float *q_scale_heads, *k_scale_heads, *v_scale_heads;
  float rope_rcp_scale, rope_log2_theta;
  int32_t pdl;  // launch-side: 1 launches with programmatic stream serialization (pdl.cuh)
  // An attention variant compiled into the kernel (a program's device image, see
  // variant_hooks.cuh): which hooks are on, and the op's captured values by value (the
  // hooks read them from the kernel's parameters; memrefs among them point to device
  // memory). Zero for the runtime's own kernels.
  int32_t variant_score, variant_mask;
  uint64_t variant_captures[FI_VARIANT_MAX_CAPTURE_BYTES / 8];
};

#endif
