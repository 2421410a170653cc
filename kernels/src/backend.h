/* kernels/src/backend.h -- private interface between the public API (api.c: argument and
 * plan checks, dispatch), the planner and the two backends. Not installed.
 *
 * Workspace layout written by the planner (offsets in the plan's private_ words, all
 * 256-byte aligned, in the memory of the context's backend):
 *
 *   work units   fi_work_unit  [num_work_units]      what one CTA (or host task) computes
 *   merge units  fi_merge_unit [num_merge_units]     how split partial states combine
 *   partial o    float [num_partial_rows, num_qo_heads, head_dim]
 *   partial lse  float [num_partial_rows, num_qo_heads]
 *
 * A work unit covers query rows [qo_start, qo_start + qo_len) of `request` (relative to
 * the request) against KV positions [kv_start, kv_end), for ALL query heads (kernels put
 * heads on a grid dimension). With partial_row < 0 it writes o/lse directly; otherwise
 * its qo_len rows go to partial rows partial_row .. partial_row + qo_len - 1.
 * A merge unit combines, for each of its `rows` output rows r, the partial rows
 * first_partial_row + c * rows + r for c = 0 .. num_chunks-1, in that order
 * (deterministic), into global output row out_row + r.
 * The CUDA backend's planner copies work and merge units to device memory with one
 * cudaMemcpyAsync on the context's stream; the host planner writes them in place.
 */
#ifndef FI_KERNELS_BACKEND_H
#define FI_KERNELS_BACKEND_H

#include "fi/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fi_work_unit {
  int32_t request;
  int32_t qo_start, qo_len;
  int32_t kv_start, kv_end;
  int32_t partial_row; /* -1: direct output */
} fi_work_unit;

/* The workspace's header (planner.c's layout note): the plan's counts in its first
 * FI_PLAN_COUNTS_BYTES, then the chunk ring of the warp-specialised prefill kernel: two
 * descriptor slots of FI_WS_CHUNK_SLOT_BYTES for each of its persistent CTAs (at most
 * FI_WS_RING_CTAS; prefill_ws.cuh, WsChunk), written by each CTA's producer warp and read
 * by its consumers. Every layout's arrays start after FI_PLAN_HEADER_BYTES. */
enum {
  FI_PLAN_COUNTS_BYTES = 256,
  FI_WS_CHUNK_SLOT_BYTES = 128,
  FI_WS_RING_CTAS = 256,
  FI_PLAN_HEADER_BYTES = FI_PLAN_COUNTS_BYTES + 2 * FI_WS_CHUNK_SLOT_BYTES * FI_WS_RING_CTAS
};

typedef struct fi_merge_unit {
  int32_t out_row;          /* global query row (decode: the request) */
  int32_t rows;
  int32_t first_partial_row;
  int32_t num_chunks;
} fi_merge_unit;

/* Decoded view of a plan's private fields. */
typedef struct fi_plan_layout {
  fi_work_unit *work;       /* in workspace */
  fi_merge_unit *merge;     /* in workspace */
  float *partial_o;
  float *partial_lse;
  int32_t num_work_units;
  int32_t num_merge_units;
  int32_t num_partial_rows;
} fi_plan_layout;

fi_plan_layout fi_plan_get_layout(const fi_plan *plan);

/* Sets ctx's last error (printf-style) and returns `status`. */
fi_status fi_set_error(fi_context *ctx, fi_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Backend entry points: called by api.c after every argument has been validated against
 * the plan, so they trust their inputs. Same arguments as the public run functions. */
#define FI_BACKEND_DECLS(prefix)                                                           \
  fi_status prefix##_decode_run(fi_context *, const fi_plan *, const fi_tensor *,          \
                                const fi_paged_kv_cache *, const fi_page_table *,          \
                                fi_tensor *, fi_tensor *);                                 \
  fi_status prefix##_paged_prefill_run(fi_context *, const fi_plan *, const fi_tensor *,   \
                                       const int32_t *, const fi_paged_kv_cache *,         \
                                       const fi_page_table *, const fi_custom_mask *,      \
                                       fi_tensor *, fi_tensor *);                          \
  fi_status prefix##_ragged_prefill_run(fi_context *, const fi_plan *, const fi_tensor *,  \
                                        const fi_tensor *, const fi_tensor *,              \
                                        const int32_t *, const int32_t *,                  \
                                        const fi_custom_mask *, fi_tensor *, fi_tensor *); \
  fi_status prefix##_merge_state(fi_context *, const fi_tensor *, const fi_tensor *,       \
                                 const fi_tensor *, const fi_tensor *, fi_tensor *,        \
                                 fi_tensor *);                                             \
  fi_status prefix##_merge_states(fi_context *, const fi_tensor *, const fi_tensor *,      \
                                  fi_tensor *, fi_tensor *);                               \
  /* fi_prefill_merge_run: (plan, v_other, s_other (both NULL: none), o, lse), o and lse   \
   * (and the other state) cut to the plan's rows */                                       \
  fi_status prefix##_prefill_merge_run(fi_context *, const fi_plan *, const fi_tensor *,   \
                                       const fi_tensor *, fi_tensor *, fi_tensor *);       \
  fi_status prefix##_append_paged_kv_run(fi_context *, const fi_plan *, const fi_tensor *, \
                                         const fi_tensor *, const int32_t *,               \
                                         fi_paged_kv_cache *, const fi_page_table *);      \
  /* fi_split_shared_prefix without num_pages (checked by api.c on the host) */            \
  fi_status prefix##_split_shared_prefix(fi_context *, int32_t, int32_t,                   \
                                         const fi_page_table *, int32_t *, int32_t *,      \
                                         int32_t *, int32_t *, int32_t *, int32_t *,       \
                                         int32_t *);

FI_BACKEND_DECLS(fi_host)
FI_BACKEND_DECLS(fi_cuda)

/* CUDA backend context hooks (stubs returning FI_ERROR_BACKEND_UNAVAILABLE when CUDA is
 * not built). */
fi_status fi_cuda_context_init(fi_context *ctx, fi_target *target);
/* FI_SUCCESS if `stream` (a cudaStream_t) belongs to the context's device. */
fi_status fi_cuda_check_stream(fi_context *ctx, void *stream);
/* Copies `bytes` host -> device on the context's stream (planner output). */
fi_status fi_cuda_upload(fi_context *ctx, void *device_dst, const void *host_src,
                         size_t bytes);
/* The device planner's index arrays (device memory). */
typedef struct fi_cuda_device_plan_problem {
  const int32_t *qo_indptr;     /* [batch+1]; NULL: decode (one query row per request) */
  const int32_t *kv_indptr;     /* [batch+1]: pages (paged) or KV rows (ragged) */
  const int32_t *kv_indices;    /* paged: page ids; NULL: ragged */
  const int32_t *last_page_len; /* paged: [batch]; NULL: ragged */
  int32_t batch, page_size, num_pages;
  int64_t indices_len;          /* paged: elements of the kv_indices buffer */
  int64_t max_qo_rows;          /* rows of q: the bound of qo_indptr[batch] */
  int64_t max_kv_rows;          /* ragged: rows of k and v, the bound of kv_indptr[batch] */
} fi_cuda_device_plan_problem;
/* The device planner's inputs beyond the arrays (planner.c computes them on the host
 * from facts the host knows: batch, workspace size, tiles). */
typedef struct fi_cuda_device_plan_caps {
  int64_t units, merge, partial; /* the workspace's capacities */
  int64_t target;                /* work-unit target of the automatic split */
  int64_t one_wave;              /* > 0: the units of one wave, the split's alternative
                                    (fi_plan_one_wave_units) */
  int64_t one_wave_tenths;       /* the one-wave chunk at most this many tenths of the
                                    two-wave one (fi_plan_one_wave_tenths) */
  int64_t fixed_chunk;           /* > 0: fixed split chunk in tokens */
  int64_t rows_per_unit;         /* query rows per unit (decode: 1) */
  int64_t granularity;           /* chunks are multiples of it: page size (ragged 16; decode
                                    pages in boxes of 4 or 8 rows lcm(page size, 16)) */
  int64_t max_units;             /* a bound of the unit count (the sort kernel's grid) */
  int32_t auto_split;            /* 1: the automatic split may split (when the unsplit
                                    plan has fewer units than the target) */
} fi_cuda_device_plan_caps;
/* Launches the planning kernels (kernels/cuda/plan_device.cu) on ctx's stream; `plan`
 * holds the workspace offsets (fi_plan_prepare_device). */
fi_status fi_cuda_plan_device(fi_context *ctx, const fi_cuda_device_plan_problem *pb,
                              const fi_cuda_device_plan_caps *caps, const fi_plan *plan);
/* Copies `bytes` device -> host on ctx's stream and waits for it (fi_plan_device_status). */
fi_status fi_cuda_download_sync(fi_context *ctx, void *host_dst, const void *device_src,
                                size_t bytes);
/* Block-sparse attention on the warp-specialised Hopper prefill kernel, with the KV tiles
 * of the plan (fi_plan_build_block_sparse); validated like the other runs. */
fi_status fi_cuda_block_sparse_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                   const fi_tensor *k, const fi_tensor *v, fi_tensor *o,
                                   fi_tensor *lse);
/* The same over a paged cache: the page table of the plan's one sequence (device). */
fi_status fi_cuda_block_sparse_paged_run(fi_context *ctx, const fi_plan *plan,
                                         const fi_tensor *q, const fi_paged_kv_cache *kv,
                                         const fi_page_table *pages, fi_tensor *o,
                                         fi_tensor *lse);
/* The backend's tile support: FI_SUCCESS or FI_ERROR_UNSUPPORTED with a message. */
fi_status fi_cuda_check_supported(fi_context *ctx, fi_op_family family,
                                  const fi_attention_params *params, const fi_tiles *tiles);

#ifdef __cplusplus
}
#endif
#endif
