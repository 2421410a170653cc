/* fi/runtime.h -- the contract of the fi runtime.
 *
 * Every backend (the host reference in C, the CUDA microkernels) and the code that the
 * fi MLIR dialect lowers to call exactly these functions. C11, no allocation on the
 * run path, no hidden global state except the documented default context.
 *
 * Conventions
 *  - Every function returns an fi_status; on failure `fi_last_error(ctx)` holds a message
 *    that names the argument, the index and the offending value, and what to do.
 *  - Index arrays are int32 (FlashInfer documents that int64 indptr silently breaks its
 *    kernels; here int32 is the only type the API can express).
 *  - Ragged tensors: data packed without padding plus `indptr` (length batch+1,
 *    indptr[0] == 0, non-decreasing).
 *  - Paged KV cache = block-sparse-row matrix whose column blocks are pages of
 *    `page_size` tokens. Request i owns pages kv_indices[kv_indptr[i] .. kv_indptr[i+1])
 *    and its KV length is page_size * (pages_i - 1) + kv_last_page_len[i] (0 when it owns
 *    no page).
 *  - The attention state of a query row is (o, lse): o the softmax-weighted sum of V,
 *    lse = log(sum_j exp(s_j)) with NATURAL log, s_j the scaled (and soft-capped) logits.
 *    A row that attends to nothing has o = 0 and lse = -inf (never NaN).
 *  - Plan / run: plan reads host copies of the index arrays, validates them, chooses tiles
 *    and a load-balanced partition and writes it into the caller's workspace. Run reads
 *    the device copies (the same pointers on the host backend) and launches. A plan is
 *    reused by every layer of a step. Run allocates nothing, uses no atomics in
 *    reductions (deterministic), and is CUDA-graph capturable: re-planning into the same
 *    workspace changes what a captured run computes, never where it reads. A workspace
 *    serves one run at a time (runs on one stream, or ordered between streams): split-KV
 *    partial rows and the CUDA prefill kernel's work counter and chunk descriptors live in
 *    it.
 */
#ifndef FI_RUNTIME_H
#define FI_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "fi/heuristics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status ---------- */

typedef enum fi_status {
  FI_SUCCESS = 0,
  FI_ERROR_INVALID_ARGUMENT = 1,    /* malformed input: shape, dtype, index array, attribute */
  FI_ERROR_UNSUPPORTED = 2,         /* valid, but this backend has no kernel for it */
  FI_ERROR_WORKSPACE_TOO_SMALL = 3, /* ask fi_*_workspace_size for the exact size */
  FI_ERROR_PLAN_MISMATCH = 4,       /* plan made for another op family or problem */
  FI_ERROR_BACKEND_UNAVAILABLE = 5, /* CUDA backend not built, or no device */
  FI_ERROR_CUDA = 6,                /* a CUDA call failed; the message names it */
  FI_ERROR_OUT_OF_MEMORY = 7,
  FI_ERROR_COMM = 8,                /* a KV-sharded step's ranks disagree, a peer failed or
                                       timed out, or a collective failed (the message names
                                       the rank and what it reported) */
} fi_status;

/* A static string naming the status ("FI_ERROR_INVALID_ARGUMENT", ...). */
const char *fi_status_string(fi_status status);

/* --------------------------------------------------------------- context ---------- */

typedef enum fi_backend { FI_BACKEND_HOST = 0, FI_BACKEND_CUDA = 1 } fi_backend;

typedef struct fi_context fi_context;

/* Creates a context for `backend` (CUDA: the current device). Fails with
 * FI_ERROR_BACKEND_UNAVAILABLE when CUDA was not built or no device is present. */
fi_status fi_context_create(fi_backend backend, fi_context **out);
void fi_context_destroy(fi_context *ctx);
fi_backend fi_context_backend(const fi_context *ctx);
/* CUDA backend: the cudaStream_t that run functions launch on (default: stream 0). */
fi_status fi_context_set_stream(fi_context *ctx, void *cuda_stream);
/* CUDA backend: a device buffer (256-byte aligned) for the prefill stage pass, or NULL, 0
 * (the default). Prefills with RoPE, fp8 KV or (paged) a page size that is not a multiple
 * of 16 run on the warp-specialised Hopper kernel after a pass that writes their rotated /
 * widened Q, K and V here as 16-bit token rows (O(tokens) beside the kernel's O(tokens^2));
 * size it with fi_prefill_stage_size. Without a stage large enough for a run, that run
 * takes the one-warpgroup kernels (same results, slower). Runs use it in stream order: one
 * buffer serves every run on the context's stream; the caller keeps it alive and at the
 * same address while runs (and graphs captured with it) may use it. Host contexts take
 * only NULL, 0 (they need no stage). */
fi_status fi_context_set_prefill_stage(fi_context *ctx, void *device_buffer, size_t bytes);
/* Host backend: number of threads (default: the number of online cores). */
fi_status fi_context_set_num_threads(fi_context *ctx, int32_t num_threads);
/* The target facts the heuristics use: read off the device for CUDA; the H100 defaults
 * (fi_target_default) for the host backend. */
fi_target fi_context_target(const fi_context *ctx);

/* The message of the last failed call on `ctx` ("" if none). With ctx == NULL: the message
 * of the last failed fi_context_create on this thread. */
const char *fi_last_error(const fi_context *ctx);

/* The documented default context, used by the lowered code's `_mlir_ciface_*` adapters:
 * created on first use, CUDA when the environment variable FI_BACKEND is "cuda", host when
 * it is "host", empty or unset; never destroyed. Returns NULL if creation failed or
 * FI_BACKEND names no backend (the message: fi_last_error(NULL) on the thread that first
 * asked). */
fi_context *fi_default_context(void);

/* 1 when the CUDA backend was built and a device is present. */
int fi_cuda_available(void);

/* ---------------------------------------------------------------- tensors --------- */

typedef enum fi_dtype {
  FI_DTYPE_F16 = 0,
  FI_DTYPE_BF16 = 1,
  FI_DTYPE_F32 = 2,
  FI_DTYPE_E4M3 = 3, /* fp8: KV caches, and q with fp8 attention (see q_dtype) */
  FI_DTYPE_E5M2 = 4, /* fp8, KV cache only */
} fi_dtype;

size_t fi_dtype_size(fi_dtype dtype);
const char *fi_dtype_name(fi_dtype dtype);

#define FI_MAX_RANK 5

/* A strided view: element (i0, i1, ...) lives at data + sum_k i_k * strides[k] elements.
 * The innermost dimension (head_dim) must have stride 1. */
typedef struct fi_tensor {
  void *data;
  fi_dtype dtype;
  int32_t rank;
  int64_t shape[FI_MAX_RANK];
  int64_t strides[FI_MAX_RANK]; /* in elements */
} fi_tensor;

/* A row-major contiguous view of `rank` <= FI_MAX_RANK dimensions. */
fi_tensor fi_tensor_contiguous(void *data, fi_dtype dtype, int32_t rank, const int64_t *shape);

/* ----------------------------------------------------------- paged KV cache -------- */

typedef enum fi_kv_layout {
  FI_LAYOUT_NHD = 0, /* [pages, page_size, kv_heads, head_dim] */
  FI_LAYOUT_HND = 1, /* [pages, kv_heads, page_size, head_dim] */
} fi_kv_layout;

/* K and V as two rank-4 tensors in `layout`. Both have the same shape and dtype. */
typedef struct fi_paged_kv_cache {
  fi_tensor k;
  fi_tensor v;
  fi_kv_layout layout;
} fi_paged_kv_cache;

/* Views a combined cache [pages, 2, ...layout dims...] (K at index 0, V at 1 of the K/V
 * dimension) as two strided rank-4 tensors. */
fi_status fi_paged_kv_cache_from_combined(const fi_tensor *kv, fi_kv_layout layout,
                                          fi_paged_kv_cache *out);

/* The CSR arrays of the page table (int32). */
typedef struct fi_page_table {
  const int32_t *indptr;        /* [batch + 1] prefix sum of pages per request */
  const int32_t *indices;       /* [indptr[batch]] page ids in [0, num_pages) */
  const int32_t *last_page_len; /* [batch] in 1..page_size for requests with >= 1 page */
} fi_page_table;

/* ------------------------------------------------------- attention parameters ------ */

typedef enum fi_mask_mode {
  FI_MASK_NONE = 0,
  FI_MASK_CAUSAL = 1, /* aligned to the bottom right: query i of a request with qo_len
                         queries and kv_len keys sees key j iff j <= kv_len - qo_len + i */
  FI_MASK_CUSTOM = 2, /* bit-packed mask, see fi_custom_mask */
} fi_mask_mode;

typedef enum fi_pos_encoding {
  FI_POS_NONE = 0,
  FI_POS_ROPE_LLAMA = 1, /* LLaMA rotary (rotate halves) applied to q and k inside
                            attention; q row i of a request sits at position
                            kv_len - qo_len + i, key j at position j;
                            freq_d = rope_scale^-1 * rope_theta^(-2d/head_dim) */
  FI_POS_ALIBI = 2,      /* bias slope_h * (j - q_pos) added to the scaled logit
                            (before the soft cap), slopes as in Press et al.:
                            2^(-8(h+1)/n) for n = 2^floor(log2(heads)), the odd-step
                            interpolation for the remaining heads */
} fi_pos_encoding;

/* Attention variants written by the user (in IR: a `score_mod` / `mask_mod` function on
 * an attention op, compiled with the program). Positions are those of the built-in masks:
 * query row i of a request with qo_len rows and kv_len keys sits at q_pos =
 * kv_len - qo_len + i, key j at kv_pos = j; `batch` is the request (0 for block-sparse
 * attention), qo_head the query head, kv_head = qo_head / group.
 *  - score_mod receives the logit after the built-in transforms (sm_scale * q.k, ALiBi,
 *    soft cap) and returns the logit to use; -inf drops the pair (NaN is garbage in,
 *    garbage out, as with NaN inputs).
 *  - mask_mod returns nonzero to keep the pair; it is applied together with the built-in
 *    masks (causal, custom, window): a pair is kept only when every mask keeps it.
 * `captures` is passed through unchanged (compiled code points it at the op's captured
 * values). Both functions must be pure: the kernels call them in any order, any number
 * of times, from several threads.
 * Backends. The host backend calls score_mod / mask_mod. The CUDA backend runs a variant
 * in paged and ragged prefill and block-sparse attention, on the warp-specialised Hopper
 * prefill kernel (wgmma 128 x 128 tiles; block-sparse: the mask per pair on every block
 * the BSR lists), and in decode, on the warp-specialised decode kernel (tensor-core tiles; pages
 * of a multiple of 4 tokens; the mask's classifier skips the 16-key sub-tiles
 * it proves EMPTY): head_dim 64 / 128, 16-bit q and KV of q's type; causal and RoPE built
 * in, but no built-in soft cap, ALiBi, custom mask or window beside the variant. It runs
 * from `device_image`: a cubin in which a compiler linked the variant's device functions
 * (fi_variant_score_mod / fi_variant_mask_mod / fi_variant_mask_tile and the facts the
 * kernels take from the program: kernels/cuda/variant_hooks.cuh) with the runtime's
 * variant kernels (fi-to-llvm=backend=cuda makes it: a uint64 byte count, then the cubin),
 * loaded once per context; the non-NULL host pointers say which of the two hooks are on,
 * and the first captures_bytes (<= FI_VARIANT_MAX_CAPTURE_BYTES) bytes at `captures` are
 * copied into the kernel's parameters (device pointers among them stay pointers). Other
 * CUDA runs with a variant, or one without a device image, are refused
 * (FI_ERROR_UNSUPPORTED). */
#define FI_VARIANT_MAX_CAPTURE_BYTES 256
/* The generation of the variant kernels' parameter blocks, shared-memory layouts and hook
 * contract (v8: paged K/V tiles of consecutive pages in one box, WsMaps.k_run; v7: the
 * output rows stored through a tensor map, WsMaps.o; v6: the score_mod's
 * factors and key slope, variant_hooks.cuh), part of their names
 * ("fi_variant_v8_prefill_hd128_f16", "fi_variant_v8_decode_hd64_bf16_rope"): an image
 * compiled against another runtime's kernels is refused when loaded, and a compiler with
 * another runtime's kernel bitcode fails to link them, instead of running a misread block. */
#define FI_VARIANT_KERNEL_PREFIX "fi_variant_v8_prefill_hd"
#define FI_VARIANT_DECODE_KERNEL_PREFIX "fi_variant_v8_decode_hd"
#define FI_VARIANT_BLOCK_SPARSE_KERNEL_PREFIX "fi_variant_v8_block_sparse_hd"
typedef float (*fi_score_mod_fn)(float score, int32_t batch, int32_t qo_head, int32_t kv_head,
                                 int32_t q_pos, int32_t kv_pos, const void *captures);
typedef int32_t (*fi_mask_mod_fn)(int32_t batch, int32_t qo_head, int32_t q_pos,
                                  int32_t kv_pos, const void *captures);
/* What a mask_mod does on a tile: a rectangle of pairs of one request (batch), query heads
 * [qo_head_first, qo_head_last], query positions [q_pos_first, q_pos_last] and key
 * positions [kv_pos_first, kv_pos_last]. EMPTY: the mask drops every pair of it; FULL:
 * it keeps every pair; PARTIAL: anything else, or not known. Kernels skip EMPTY tiles
 * (neither loaded nor computed) and call mask_mod per pair only on PARTIAL ones, so
 * EMPTY and FULL must be true of every pair (compiled code proves them from the mask's
 * body by interval arithmetic: fi-lower-to-runtime's tile classifier). */
typedef enum fi_mask_tile {
  FI_MASK_TILE_EMPTY = 0,
  FI_MASK_TILE_FULL = 1,
  FI_MASK_TILE_PARTIAL = 2,
} fi_mask_tile;
typedef int32_t (*fi_mask_tile_fn)(int32_t batch, int32_t qo_head_first,
                                   int32_t qo_head_last, int32_t q_pos_first,
                                   int32_t q_pos_last, int32_t kv_pos_first,
                                   int32_t kv_pos_last, const void *captures);
typedef struct fi_variant {
  fi_score_mod_fn score_mod; /* NULL: none */
  fi_mask_mod_fn mask_mod;   /* NULL: none */
  const void *captures;
  size_t captures_bytes;     /* CUDA: bytes of captures the kernel gets */
  const void *device_image;  /* CUDA: see above (NULL: host only) */
  fi_mask_tile_fn mask_tile; /* mask_mod's tile classifier (NULL: every tile PARTIAL;
                                last, so that initialisers of the fields above stand) */
} fi_variant;

typedef struct fi_attention_params {
  int32_t num_qo_heads;  /* a multiple of num_kv_heads (GQA/MQA) */
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t page_size;     /* paged forms only */
  fi_dtype q_dtype;      /* f16, bf16, f32; o has the same dtype. e4m3 (prefill only):
                            fp8 attention, with e4m3 K/V and o of o_dtype; q is
                            dequantised by q_scale */
  fi_dtype kv_dtype;     /* f16, bf16, f32, e4m3, e5m2 */
  fi_mask_mode mask_mode;
  fi_pos_encoding pos_encoding;
  int32_t window_left;   /* -1: no sliding window; else query at position p sees keys
                            at positions >= p - window_left */
  float logits_soft_cap; /* 0: off; else s = cap * tanh(s / cap) */
  float sm_scale;        /* scale of q.k, > 0 (1/sqrt(head_dim) by default) */
  float rope_scale;      /* 1 by default */
  float rope_theta;      /* 1e4 by default */
  float k_scale;         /* fp8 KV: dequantisation scales (1 by default; k_scale > 0) */
  float v_scale;
  int32_t fixed_split_size; /* split-KV chunk in tokens: 0 lets the planner choose; > 0
                               fixes it (batch-invariant results); -1 disables split-KV */
  const fi_variant *variant; /* NULL (default): none. The plan keeps the pointer with its
                                copy of the params and run calls it: it must outlive
                                every run of the plan */
  int32_t kv_shards;         /* 0 (default): the KV is whole. N >= 1: the paged KV is this
                                rank's shard of a sequence split over the N ranks of the
                                context's communicator (see "Context parallelism") */
  /* fp8 attention (q_dtype e4m3; ragged and paged prefill): Q, K and V in e4m3 with
   * dequantisation scales q_scale, k_scale, v_scale (logits = sm_scale * q_scale * k_scale *
   * q.k; o = v_scale * P V), o of o_dtype (f16 or bf16). CUDA: the warp-specialised Hopper
   * kernel on fp8 tensor cores, head_dim 128, after the stage pass writes V transposed (a
   * prefill stage, fi_prefill_stage_size); P is rounded to e4m3 for P V as in FA3's fp8
   * path. No RoPE (rotate before quantising), variants or sharded KV. */
  fi_dtype o_dtype;          /* f16 by default; used only when q_dtype is e4m3 */
  float q_scale;             /* 1 by default; used only when q_dtype is e4m3 */
  /* fp8 attention's per-head scales (NULL, the default: none), multiplying q_scale per query
   * head ([num_qo_heads]) and k_scale / v_scale per KV head ([num_kv_heads]). Read by every
   * run of the plan (CUDA: device memory, host backend: host memory); the plan keeps the
   * pointers, so the arrays outlive its runs (their values may change between runs, graph
   * replays included), q's and k's > 0 as q_scale and k_scale (not checked: device data).
   * Only with q_dtype e4m3. */
  const float *q_scale_heads, *k_scale_heads, *v_scale_heads;
} fi_attention_params;

/* The dtype of o (and of merge states' v) for these params: q's, or o_dtype for fp8 q. */
fi_dtype fi_output_dtype(const fi_attention_params *params);

/* Sensible defaults for everything but the three sizes and the dtypes (fp16). */
fi_attention_params fi_attention_params_default(int32_t num_qo_heads, int32_t num_kv_heads,
                                                int32_t head_dim);

/* A custom mask: one bit per (query row, key) pair of every request, packed without
 * padding between requests, little bit order (bit b of byte k is element 8k + b), row
 * major within a request. indptr is in bits: indptr[0] = 0,
 * indptr[i+1] = indptr[i] + qo_len_i * kv_len_i. Bit 1 = attend. The plan reads the host
 * copy: on CUDA it records each query row's span of kept keys in the workspace (the
 * Hopper kernel loads no KV tile outside a chunk's spans, and masks rows that keep one
 * run of keys by range), so the run's device copy must hold the same bits. A plan may be
 * given bits = NULL (indptr still required; e.g. the bits are made after planning): the
 * CUDA run then finds the spans on the device, one pass over the run's bits. */
typedef struct fi_custom_mask {
  const uint8_t *bits;
  const int32_t *indptr; /* [batch + 1], host copy at plan, device copy at run */
} fi_custom_mask;

/* ------------------------------------------------------------------ plans --------- */

typedef enum fi_op_family {
  FI_OP_DECODE = 1,
  FI_OP_PAGED_PREFILL = 2,
  FI_OP_RAGGED_PREFILL = 3,
  FI_OP_APPEND_PAGED_KV = 4,
  FI_OP_BLOCK_SPARSE = 5,
} fi_op_family;

/* The result of a plan function: a small value the caller keeps and passes to run. The
 * partition itself lives in the workspace. Fields below `tiles` are private. */
typedef struct fi_plan {
  fi_op_family family;
  fi_tiles tiles;               /* the microkernel variant run will launch */
  int32_t batch;
  int32_t num_work_units;       /* CTAs' worth of work (request, query tile, KV chunk) */
  int32_t num_partial_rows;     /* split-KV partial states written to the workspace */
  fi_attention_params params;   /* what the plan was made for (run checks it) */
  int64_t total_qo_rows;        /* nnz of q (decode: batch) */
  int64_t total_kv;             /* sum of KV lengths */
  int32_t num_pages;
  void *workspace;              /* as passed to plan */
  size_t workspace_bytes;
  uint64_t private_[17];
} fi_plan;

/* Workspace sizes are exact upper bounds for every problem up to `max_batch` requests
 * (and `max_qo_rows` query rows for prefill), so one allocation serves every step and
 * graph capture sees stable pointers. CUDA backend: device memory; host: host memory. */
fi_status fi_decode_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                   int32_t max_batch, size_t *bytes);
/* Decode workspaces for problems of <= max_batch requests and <= max_kv_tokens KV tokens
 * in all: the query a fixed split size needs (it makes a work unit per fixed_split_size
 * tokens, which max_batch alone does not bound: fi_decode_workspace_size refuses it). */
fi_status fi_decode_workspace_size_kv(fi_context *ctx, const fi_attention_params *params,
                                      int32_t max_batch, int64_t max_kv_tokens, size_t *bytes);
fi_status fi_prefill_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                    int32_t max_batch, int64_t max_qo_rows, size_t *bytes);

/* The bytes of the prefill stage (fi_context_set_prefill_stage) that runs with these params
 * need, up to max_qo_rows rows of q and max_kv_rows KV rows (ragged: rows of k; paged: the
 * page-table entries (kv_indptr[batch]) times the page size); 0 when they need none (no
 * RoPE, fp8 KV, fp8 attention or odd page size; the host backend; a device without the
 * Hopper kernel). fp8 attention (q e4m3) always needs one: V transposed, and a paged K as
 * token rows.
 * The stage holds K and V rows only (the kernel rotates Q as it lands), so today the size
 * does not grow with max_qo_rows, which is still validated. */
fi_status fi_prefill_stage_size(fi_context *ctx, const fi_attention_params *params,
                                int32_t paged, int64_t max_qo_rows, int64_t max_kv_rows,
                                size_t *bytes);

/* `tiles` (may be NULL) forces the variant chosen at compile time; plan fails with
 * FI_ERROR_UNSUPPORTED if the backend has no such variant. */
/* Row-indexed tensors of a run (q, o, lse; ragged k, v) hold at least the plan's rows; more
 * are allowed (buffers at capacity, e.g. captured once in a CUDA graph and replayed after
 * re-planning with other lengths): rows past the plan's are neither read nor written. */

/* Batch paged decode: one query row per request. */
fi_status fi_decode_plan(fi_context *ctx, const fi_attention_params *params, int32_t batch,
                         const fi_page_table *host_pages, int32_t num_pages,
                         const fi_tiles *tiles, void *workspace, size_t workspace_bytes,
                         fi_plan *plan);
/* q [batch, qo_heads, head_dim]; o like q; lse [batch, qo_heads] f32 or NULL. */
fi_status fi_decode_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                        const fi_paged_kv_cache *kv, const fi_page_table *pages,
                        fi_tensor *o, fi_tensor *lse);

/* Batch paged decode planned ON THE DEVICE: a planning kernel on the context's stream
 * reads the page table from `device_pages` (device memory; kv_indices holds
 * `num_indices` elements) and writes into the workspace the same partition
 * fi_decode_plan makes from host copies, so the runs of both are bit-identical. Nothing
 * is read on the host, so a step that re-plans every time is captured in a CUDA graph once
 * and replayed with new lengths and page tables. `tiles` is required (the variant cannot
 * depend on lengths the host never sees). The page table is validated on the device: a
 * bad one leaves the plan with no work (the run computes nothing) and an error record
 * that fi_plan_device_status reports. Host backend: the same as fi_decode_plan. The
 * returned plan's num_work_units is the launch size (>= the device's unit count) and
 * num_partial_rows / total_kv are unknown (-1). */
fi_status fi_decode_plan_device(fi_context *ctx, const fi_attention_params *params,
                                int32_t batch, const fi_page_table *device_pages,
                                int64_t num_indices, int32_t num_pages, const fi_tiles *tiles,
                                void *workspace, size_t workspace_bytes, fi_plan *plan);
/* The device planner's verdict on `plan` (waits for the context's stream): FI_SUCCESS, or
 * FI_ERROR_INVALID_ARGUMENT with a message naming the array, index and value it rejected
 * (or FI_ERROR_WORKSPACE_TOO_SMALL for a fixed split that does not fit). Plans made on the
 * host: FI_SUCCESS. */
fi_status fi_plan_device_status(fi_context *ctx, const fi_plan *plan);

/* Batch paged prefill (append attention): ragged q against the paged cache.
 * qo_indptr [batch+1]; mask may be NULL unless params->mask_mode == FI_MASK_CUSTOM.
 * Prefill plans with tiles NULL take the heuristics' tiles (fi_select_prefill_tiles); on a
 * Hopper CUDA context with the warp-specialised kernel on, an op at head_dim 128 with 16-bit
 * q, a GQA group of at most 128, no window or variant and at most one of a soft cap, ALiBi
 * or a custom mask whose every row keeps one run of keys (the plan finds this from the
 * mask's bits; the kernel then applies the rows' kept-key extents), not sharded, over token
 * rows or pages of 16, whose work units hold at least 4096 keys (causal or a custom mask:
 * 8192; the split chunk, or with a fixed split that alone) gets the warp-specialised
 * kernel's wgmma 128 x 176 tiles, and plan->tiles says so: a device plan made with them runs
 * the same kernel (bit-identical), and runs that must match another plan bit for bit (a
 * sharded cache against one GPU) pass the same tiles to both. A run that brings any other
 * extra or combination, a variant, or a custom mask with a hole in a row (or planned
 * without its bits) runs 128 x 128. */
fi_status fi_paged_prefill_plan(fi_context *ctx, const fi_attention_params *params,
                                int32_t batch, const int32_t *host_qo_indptr,
                                const fi_page_table *host_pages, int32_t num_pages,
                                const fi_custom_mask *host_mask, const fi_tiles *tiles,
                                void *workspace, size_t workspace_bytes, fi_plan *plan);
/* q [nnz_qo, qo_heads, head_dim]; o like q; lse [nnz_qo, qo_heads] f32 or NULL. */
fi_status fi_paged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                               const int32_t *qo_indptr, const fi_paged_kv_cache *kv,
                               const fi_page_table *pages, const fi_custom_mask *mask,
                               fi_tensor *o, fi_tensor *lse);

/* Batch ragged prefill: ragged q, k, v. */
fi_status fi_ragged_prefill_plan(fi_context *ctx, const fi_attention_params *params,
                                 int32_t batch, const int32_t *host_qo_indptr,
                                 const int32_t *host_kv_indptr,
                                 const fi_custom_mask *host_mask, const fi_tiles *tiles,
                                 void *workspace, size_t workspace_bytes, fi_plan *plan);
/* q [nnz_qo, qo_heads, head_dim]; k, v [nnz_kv, kv_heads, head_dim]. */
fi_status fi_ragged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                const fi_tensor *k, const fi_tensor *v,
                                const int32_t *qo_indptr, const int32_t *kv_indptr,
                                const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse);

/* Prefill plans made on the GPU, as fi_decode_plan_device: the same partition as the host
 * planner, made on the context's stream from index arrays in device memory (qo_indptr and
 * the page table, or qo_indptr and kv_indptr), so that a step is captured once in a CUDA
 * graph and replayed with new lengths. `tiles` is required. max_qo_rows: the rows of q (o,
 * lse), the bound of qo_indptr[batch]; max_kv_rows (ragged): the rows of k and v; runs
 * need tensors of at least those rows. The arrays are validated on the device (a bad one
 * leaves no work and an error record for fi_plan_device_status). Custom masks need a host
 * plan. Host backend: the same as the host plans. num_work_units is the launch size;
 * num_partial_rows is unknown (-1). */
fi_status fi_paged_prefill_plan_device(fi_context *ctx, const fi_attention_params *params,
                                       int32_t batch, const int32_t *device_qo_indptr,
                                       int64_t max_qo_rows, const fi_page_table *device_pages,
                                       int64_t num_indices, int32_t num_pages,
                                       const fi_tiles *tiles, void *workspace,
                                       size_t workspace_bytes, fi_plan *plan);
fi_status fi_ragged_prefill_plan_device(fi_context *ctx, const fi_attention_params *params,
                                        int32_t batch, const int32_t *device_qo_indptr,
                                        int64_t max_qo_rows, const int32_t *device_kv_indptr,
                                        int64_t max_kv_rows, const fi_tiles *tiles,
                                        void *workspace, size_t workspace_bytes,
                                        fi_plan *plan);

/* -------------------------------------------------------- block-sparse attention ---- */

/* A block-sparse-row (BSR) matrix over the (query row, key) score matrix of one sequence
 * of M query rows and N keys, in blocks of block_rows x block_cols (R x C), as in the
 * FlashInfer paper and FlashInfer's BlockSparseAttentionWrapper: block row i (query rows
 * i R .. min((i + 1) R, M) - 1) attends to the key blocks indices[indptr[i]] ..
 * indices[indptr[i + 1] - 1] (keys j C .. min((j + 1) C, N) - 1). indptr has ceil(M / R) + 1
 * elements from 0, never decreasing; within a block row the column indices strictly
 * increase and lie in [0, ceil(N / C)).
 *
 * Variable block sizes (FlashInfer's VariableBlockSparseAttentionWrapper, one layout for
 * every head): with row_offsets, block row i is query rows row_offsets[i] ..
 * row_offsets[i + 1] - 1 over num_block_rows block rows (row_offsets has num_block_rows + 1
 * elements, from 0, strictly increasing, ending at M) and indptr has num_block_rows + 1
 * elements; with col_offsets, column block j is keys col_offsets[j] .. col_offsets[j + 1] - 1
 * over num_block_cols blocks (from 0, strictly increasing, ending at N). Either may be given
 * alone. block_rows / block_cols then name the smallest block row / column block (every one
 * must be at least that big): the bound fi_block_sparse_workspace_size sizes for. Zero
 * initialised (row_offsets, col_offsets NULL), the matrix has uniform blocks. */
typedef struct fi_bsr_matrix {
  int32_t block_rows, block_cols;
  const int32_t *indptr;
  const int32_t *indices;
  int32_t num_block_rows, num_block_cols; /* with row_offsets / col_offsets only */
  const int32_t *row_offsets;             /* NULL: uniform block rows of block_rows */
  const int32_t *col_offsets;             /* NULL: uniform column blocks of block_cols */
} fi_bsr_matrix;

/* Block-sparse attention of q [M, qo_heads, head_dim] against k, v [N, kv_heads, head_dim]:
 * each query row attends to the keys of its block row's listed blocks. params.mask_mode
 * NONE, or CAUSAL (query row r also drops keys past r + N - M, bottom-right aligned as
 * everywhere) -- not CUSTOM; soft cap, window, ALiBi, RoPE, fp8 KV and LSE as for prefill
 * (RoPE and fp8 KV on CUDA: a prefill stage, fi_prefill_stage_size(ctx, params, 0, M, N)).
 * The workspace: fi_block_sparse_workspace_size, an upper bound for every BSR matrix of
 * those shapes whose blocks are at least block_rows x block_cols (variable blocks: pass the
 * smallest).
 *   Host backend: the pairs of the listed blocks, exactly; the run reads bsr (host arrays),
 *   which must hold what the plan's did.
 *   CUDA backend: the plan turns host_bsr into work units (at most 128 / group query rows
 *   of one block row) and each unit's KV tiles of two 64-key halves (runs of adjacent
 *   listed blocks cut into 128 keys, the 64-key halves and the short pieces left over each
 *   paired with their kind; causal and window applied), most tiles first, in the
 *   workspace; a kernel loads and computes only those tiles. The tiles pick it: wgmma 128
 *   x 128 (the default on a Hopper device with an sm_90a build, head_dim 64 or 128, a
 *   group up to 128) the warp-specialised prefill kernel; cores = tensor (the default
 *   elsewhere: any device, head_dim 64, 128 or 256) the mma.sync prefill kernel, kv_tile
 *   32, 64 or 128 keys of the halves at a time, RoPE and fp8 KV in the kernel (no stage).
 *   The run reads the plan's tiles, not bsr's arrays (they may be device pointers); bsr's
 *   block shape (uniform or variable) must be the plan's. */
fi_status fi_block_sparse_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                        int64_t max_qo_rows, int64_t max_kv_rows,
                                        int32_t block_rows, int32_t block_cols,
                                        size_t *bytes);
fi_status fi_block_sparse_plan(fi_context *ctx, const fi_attention_params *params,
                               int64_t num_qo_rows, int64_t num_kv_rows,
                               const fi_bsr_matrix *host_bsr, const fi_tiles *tiles,
                               void *workspace, size_t workspace_bytes, fi_plan *plan);
fi_status fi_block_sparse_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                              const fi_tensor *k, const fi_tensor *v, const fi_bsr_matrix *bsr,
                              fi_tensor *o, fi_tensor *lse);

/* Block-sparse attention over a paged KV cache (the paper's view: column blocks are runs of
 * the cache's pages). The N keys of the one sequence are the tokens of its page table
 * `pages` (batch 1: indptr {0, P}, P page ids in [0, num_pages), last_page_len[0] tokens in
 * the last page of params.page_size: N = (P - 1) page_size + last_page_len[0]); bsr is over
 * those N keys in order, as for fi_block_sparse_plan, whose workspace size serves (M, N).
 *   CUDA, the warp-specialised kernel: with page_size a multiple of 16, every column block
 *   starts on a multiple of min(64, the largest power of two dividing page_size) (the
 *   kernel loads a block's keys in TMA boxes of one page; a plan without tiles whose blocks
 *   do not takes the mma.sync kernel, which reads any key of any page size without a
 *   stage); other page sizes (any blocks), RoPE and fp8 KV go through
 *   the stage pass, which gathers the pages into token rows: a prefill stage,
 *   fi_block_sparse_stage_size(ctx, params, P * page_size). Pages of a multiple of 16 but
 *   not of 64 (boxes of 16 or 32 rows) take the stage pass too when the context holds that
 *   stage (faster than the boxes; the same bits either way). The plan reads host_pages and host_bsr, the run the page table on the
 *   device (it must hold the plan's).
 *   Host: the run reads the page table (host arrays) and gathers the pages. */
fi_status fi_block_sparse_paged_plan(fi_context *ctx, const fi_attention_params *params,
                                     int64_t num_qo_rows, const fi_page_table *host_pages,
                                     int32_t num_pages, const fi_bsr_matrix *host_bsr,
                                     const fi_tiles *tiles, void *workspace,
                                     size_t workspace_bytes, fi_plan *plan);
fi_status fi_block_sparse_paged_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                    const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                    const fi_bsr_matrix *bsr, fi_tensor *o, fi_tensor *lse);
/* The prefill stage (fi_context_set_prefill_stage) paged block-sparse runs over up to
 * max_kv_rows keys (P * page_size) take: what they need (page sizes that are not a multiple
 * of 16, RoPE, fp8 KV), or what makes pages of a multiple of 16 but not of 64 faster; 0
 * bytes when the run uses none (pages of a multiple of 64, the host backend, a device
 * without the Hopper kernel). */
fi_status fi_block_sparse_stage_size(fi_context *ctx, const fi_attention_params *params,
                                     int64_t max_kv_rows, size_t *bytes);

/* ----------------------------------------------------- context parallelism -------- */

/* A KV cache sharded along the sequence over N ranks (one GPU each, or N threads of a host
 * process): each request's keys are cut into N contiguous segments in rank order, rank r
 * holding segment r in its own paged cache (a segment may be empty). A decode or paged
 * prefill with params.kv_shards = N then runs, on every rank, (1) the local attention over
 * the rank's pages, every (request, query tile) writing fp32 partial states (o, lse) to the
 * workspace, (2) an all-gather of every rank's partial states over the context's
 * communicator (NCCL on CUDA, stream-ordered; an in-process exchange on the host backend),
 * (3) a merge of each query row's partial states in rank order, then chunk order: every
 * rank gets the full result. The merge is the split-KV merge over the concatenated chunk
 * list, so with a fixed split size that divides every rank's segment (all but the last
 * rank's), the same tiles and the same dtypes, results are bit-identical to the
 * single-GPU run of the whole cache with that split, and always identical between runs.
 *  - Plan on every rank with the same batch, heads, dtypes, mask and split, each with its
 *    own workspace (fi_decode_workspace_size[_kv] / fi_prefill_workspace_size with
 *    kv_shards set size one for this rank's own problem; it also holds the gathered states
 *    of all ranks). The plan exchanges a signature (blocking, at most the communicator's
 *    timeout) and agrees on what each run exchanges: the most merge units and partial rows
 *    any rank's plan has. Ranks that disagree, a rank whose plan failed (its message is
 *    passed on) or one that does not join make every rank's plan fail with FI_ERROR_COMM
 *    naming the rank. When a rank's workspace cannot hold the largest rank's states, every
 *    rank's plan fails with FI_ERROR_WORKSPACE_TOO_SMALL and plan->num_partial_rows = the
 *    capacity each workspace needs (fi_sharded_workspace_size): resize and plan again.
 *  - A run that fails its checks on one rank still joins the exchange and tells the others
 *    (a caller whose own checks fail before the run calls fi_plan_skip_run): on CUDA their
 *    merge then writes NaN to o and lse and records the failure, which
 *    fi_plan_device_status reports (FI_ERROR_COMM); on the host their run returns it. A
 *    rank that dies leaves NCCL waiting: fi_comm_synchronize waits for a context's stream
 *    at most the communicator's timeout, then aborts the communicator.
 *  - Positions are per shard, so RoPE, ALiBi, sliding windows, custom masks and variants
 *    are refused with kv_shards. Causal paged prefill: a request's new tokens (its qo_len
 *    newest keys) must lie on the last rank (ranks < N - 1 hold only older keys, which
 *    every query sees); the plan checks it.
 *  - Plans are made on the host (fi_*_plan_device refuses kv_shards). */
typedef struct fi_comm fi_comm;

/* The bytes of an NCCL unique id (ncclUniqueId). */
#define FI_COMM_ID_BYTES 128
/* NCCL is loaded when first needed (dlopen of libnccl.so.2 from the library path);
 * FI_ERROR_BACKEND_UNAVAILABLE without it. */
/* Rank 0 makes an id; the embedder hands it to every rank (e.g. over its own launcher). */
fi_status fi_comm_nccl_unique_id(uint8_t id[FI_COMM_ID_BYTES]);
/* Creates and owns an NCCL communicator of `nranks` on the current CUDA device (each rank
 * calls it, with the same id; blocking, like ncclCommInitRank). */
fi_status fi_comm_init_nccl(const uint8_t id[FI_COMM_ID_BYTES], int32_t nranks, int32_t rank,
                            fi_comm **out);
/* Wraps the embedder's communicator (an ncclComm_t); fi_comm_destroy leaves it alone. */
fi_status fi_comm_wrap_nccl(void *nccl_comm, fi_comm **out);
/* An in-process group of `nranks` communicators for host contexts, comms[r] for rank r,
 * each used by one thread: the exchange is a copy between the ranks' buffers. For tests
 * and for running a sharded program on one machine without GPUs. */
fi_status fi_comm_create_local_group(int32_t nranks, fi_comm **comms);
int32_t fi_comm_rank(const fi_comm *comm);
int32_t fi_comm_size(const fi_comm *comm);
/* How long a blocking exchange (a sharded plan's signature) waits for the other ranks
 * before it gives up (FI_ERROR_COMM; an NCCL communicator is then aborted, so that no
 * kernel waits forever). Default 60000 ms. */
fi_status fi_comm_set_timeout_ms(fi_comm *comm, int64_t timeout_ms);
/* Aborts an NCCL communicator (ncclCommAbort: work waiting on peers returns); later
 * exchanges fail. Local groups: marks this rank failed, so peers stop waiting. */
fi_status fi_comm_abort(fi_comm *comm);
/* Destroys the handle (an owned NCCL communicator too). A local group is freed with its
 * last rank. */
void fi_comm_destroy(fi_comm *comm);
/* The bytes of a sharded workspace (params.kv_shards >= 1) whose capacity is `capacity`
 * work units, merge units and partial rows each (what a failed plan's num_partial_rows
 * asks for). */
fi_status fi_sharded_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                    int64_t capacity, size_t *bytes);
/* This rank will not run the step of a sharded plan (its caller's checks failed with
 * `status`): joins the step's exchange with that status, so that the other ranks' runs
 * report it instead of waiting. No-op for unsharded plans. */
fi_status fi_plan_skip_run(fi_context *ctx, const fi_plan *plan, fi_status status);
/* Waits for the context's stream (CUDA) polling its communicator: at most the
 * communicator's timeout, then aborts it (FI_ERROR_COMM); NCCL's asynchronous errors are
 * returned as FI_ERROR_COMM. Host contexts: returns at once. */
fi_status fi_comm_synchronize(fi_context *ctx);
/* The communicator sharded runs on this context exchange over (NULL: none). CUDA contexts
 * take NCCL communicators of the context's device, host contexts local ones; the context
 * does not own it. */
fi_status fi_context_set_comm(fi_context *ctx, fi_comm *comm);

/* ------------------------------------------------------------ shared prefix -------- */

/* A page table whose requests share their leading pages (a system prompt, parallel
 * samples of one prompt) as the paper's composable formats: the shared prefix -- P pages,
 * P the longest run of leading page ids that every request lists, never a request's last
 * page -- and each request's own suffix, the pages after it. Outputs (the backend's memory:
 * device memory on CUDA, where the split is two kernels on the context's stream and nothing
 * waits):
 *   prefix_qo_indptr [2] = {0, batch} (the batch's queries as one request),
 *   prefix_indptr [2] = {0, P}, prefix_indices [>= P] (the shared page ids),
 *   prefix_last_page_len [1] = {page_size};
 *   suffix_indptr [batch + 1], suffix_indices [>= kv_indptr[batch] - batch * P],
 *   suffix_last_page_len [batch] (kv_last_page_len's values).
 * A decode over `pages` equals fi_merge_state of a paged prefill over the prefix with the
 * batch's queries as ONE request (qo_indptr {0, batch}, no mask: every KV tile read once for
 * all of them) and a decode over the suffixes (fi-decompose-shared-prefix emits this). The
 * host backend validates the page table (indices < num_pages); the CUDA split reads it as
 * given, like a device plan. */
fi_status fi_split_shared_prefix(fi_context *ctx, int32_t batch, int32_t page_size,
                                 const fi_page_table *pages, int32_t num_pages,
                                 int32_t *prefix_qo_indptr, int32_t *prefix_indptr,
                                 int32_t *prefix_indices,
                                 int32_t *prefix_last_page_len, int32_t *suffix_indptr,
                                 int32_t *suffix_indices, int32_t *suffix_last_page_len);

/* ------------------------------------------------------------ cascades ------------ */

/* A prefill run whose split-KV merge waits for fi_prefill_merge_run, so that another state
 * of the same rows joins that merge: a cascade -- a shared prefix's prefill (the batch's
 * queries as one request, fi_split_shared_prefix) and the suffixes' decode -- then merges
 * once, where fi_paged_prefill_run followed by fi_merge_state merges twice, and the other
 * state may be computed on another stream meanwhile (join the streams before
 * fi_prefill_merge_run). Arguments as fi_paged_prefill_run / fi_ragged_prefill_run; lse is
 * required (the merge needs it); KV-sharded plans are refused. Until fi_prefill_merge_run
 * (CUDA) o and lse hold only the rows the plan does not split, the split rows' partial
 * states wait in the plan's workspace: run nothing else with that plan or workspace in
 * between. The host backend's unmerged run is already complete. */
fi_status fi_paged_prefill_run_unmerged(fi_context *ctx, const fi_plan *plan,
                                        const fi_tensor *q, const int32_t *qo_indptr,
                                        const fi_paged_kv_cache *kv, const fi_page_table *pages,
                                        const fi_custom_mask *mask, fi_tensor *o,
                                        fi_tensor *lse);
fi_status fi_ragged_prefill_run_unmerged(fi_context *ctx, const fi_plan *plan,
                                         const fi_tensor *q, const fi_tensor *k,
                                         const fi_tensor *v, const int32_t *qo_indptr,
                                         const int32_t *kv_indptr, const fi_custom_mask *mask,
                                         fi_tensor *o, fi_tensor *lse);
/* Finishes the unmerged run of `plan` that wrote o and lse: afterwards o, lse =
 * fi_merge_state of the attention with the other state (v_other [rows, qo_heads, head_dim]
 * with o's shape and dtype, s_other [rows, qo_heads] f32 natural-log lse, both disjoint
 * from o and lse), or the attention alone when both are NULL (then the same bits as
 * fi_*_prefill_run). The rows the plan splits take the other state as one more chunk of
 * their split merge; the others merge with it in place. Rows past the plan's (buffers at
 * capacity) are left alone. */
fi_status fi_prefill_merge_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *v_other,
                               const fi_tensor *s_other, fi_tensor *o, fi_tensor *lse);

/* ------------------------------------------------------------ merge, append -------- */

/* Merges two states of the same rows: v [rows, heads, head_dim] (f16/bf16/f32),
 * s [rows, heads] f32. v_out/s_out may be the very views of a's or b's tensors (in place);
 * outputs that overlap an input otherwise, or themselves, are refused. Commutative and
 * associative up to rounding; -inf states are identities. */
fi_status fi_merge_state(fi_context *ctx, const fi_tensor *v_a, const fi_tensor *s_a,
                         const fi_tensor *v_b, const fi_tensor *s_b, fi_tensor *v_out,
                         fi_tensor *s_out);
/* Merges n states per row in index order: v [rows, n, heads, head_dim], s [rows, n, heads]
 * -> v_out [rows, heads, head_dim], s_out [rows, heads] (s_out may be NULL). */
fi_status fi_merge_states(fi_context *ctx, const fi_tensor *v, const fi_tensor *s,
                          fi_tensor *v_out, fi_tensor *s_out);

/* Appends ragged new K/V (append_indptr [batch+1]) into the paged cache: the page table
 * already includes the new tokens, which occupy the last append_len_i positions of
 * request i's KV. */
fi_status fi_append_paged_kv_plan(fi_context *ctx, int32_t batch, int32_t page_size,
                                  const int32_t *host_append_indptr,
                                  const fi_page_table *host_pages, int32_t num_pages,
                                  fi_plan *plan);
/* The append plan without host arrays (for steps planned on the device and CUDA graphs):
 * the run's kernel bounds-checks every token's slot instead (position inside its request's
 * pages, page-table entry inside kv_indices' `num_indices` elements, page id in
 * [0, num_pages)), skips a token that has none and records the first such token as
 * {7, token, page id or -1} in `device_status` (int32[4] of device memory, zeroed by the
 * caller; may be NULL). Host backend: the run validates as always. */
fi_status fi_append_paged_kv_plan_device(fi_context *ctx, int32_t batch, int32_t page_size,
                                         int32_t num_pages, int64_t num_indices,
                                         int32_t *device_status, fi_plan *plan);
/* k, v [nnz_append, kv_heads, head_dim] with the cache's dtype. */
fi_status fi_append_paged_kv_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *k,
                                 const fi_tensor *v, const int32_t *append_indptr,
                                 fi_paged_kv_cache *kv, const fi_page_table *pages);

#ifdef __cplusplus
}
#endif
#endif /* FI_RUNTIME_H */
