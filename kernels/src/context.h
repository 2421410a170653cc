/* kernels/src/context.h -- the fi_context struct and the internal helpers shared by api.c,
 * the planner and both backends. Not installed.
 *
 * A context is not thread-safe: one thread uses it at a time (plan, run, last error and
 * the scratch areas below all live in it). */
#ifndef FI_KERNELS_CONTEXT_H
#define FI_KERNELS_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FI_ERROR_MESSAGE_BYTES 1024

struct fi_context {
  fi_backend backend;
  void *stream;       /* cudaStream_t for the CUDA backend (NULL: the default stream) */
  fi_target target;   /* facts the heuristics and the planner use */
  /* 1 when the heuristics may choose the Hopper prefill tier (cores = wgmma): always on the
   * host backend (it ignores cores); on CUDA, a compute capability 9.0 device and a runtime
   * built with sm_90a code. */
  int32_t wgmma_available;
  int32_t num_threads; /* host backend: worker threads of a run */
  int32_t device;     /* CUDA backend: the device ordinal the context was created on */
  /* CUDA backend: the device's shared memory per SM and the part of it each block reserves
   * (the warp-specialised decode kernel sizes its ring from them) */
  int32_t smem_per_sm, smem_reserved_per_block;
  /* CUDA backend: the device's L2 cache in bytes (0: unknown, the host backend). The prefill
   * plans' deep-ring rule reads it (api.c choose_ws_layout). */
  int64_t l2_bytes;
  /* CUDA backend: blocks per SM of the split-KV merge's 8-chunk instance for o in f16,
   * bf16 and f32 (merge.cu picks it for grids of at most one wave of those). */
  int32_t merge_wave_blocks_per_sm[3];
  char last_error[FI_ERROR_MESSAGE_BYTES];
  /* Stream or device synchronisations the runtime made on this context (CUDA: a plan's
   * upload from pageable host memory waits for the stream; reading a plan's status back),
   * for fi_rt_sync_count. */
  long sync_count;

  /* Set by the compiled code's adapters around a plan made on the device (NULL otherwise):
   * int32[4] of mapped pinned host memory that the planning kernel, and the runs of an
   * append plan made meanwhile, also write their first error {code, index, value} to, so
   * that no copy of the verdict is queued on the stream each step (a copy node costs
   * microseconds of the step and breaks the kernels' programmatic launch chain). */
  int32_t *plan_status_mirror;

  /* CUDA backend: the embedder's device buffer for the prefill stage pass (RoPE, fp8 KV and
   * odd page sizes on the warp-specialised kernel; fi_context_set_prefill_stage), or NULL. */
  void *prefill_stage;
  size_t prefill_stage_bytes;

  /* The communicator of KV-sharded runs (fi_context_set_comm; not owned), or NULL. */
  struct fi_comm *comm;
  /* CUDA: device memory of the sharded plans' signature exchange (freed with the context). */
  void *shard_scratch;
  size_t shard_scratch_bytes;

  /* Host memory the planner builds work / merge units in before they are copied into the
   * workspace (memcpy on the host backend, fi_cuda_upload on CUDA). Grown on demand by
   * fi_context_host_scratch; freed by fi_context_destroy. */
  void *plan_scratch;
  size_t plan_scratch_bytes;

  /* Host backend: per-run working memory of the worker threads (grown on demand, so a
   * steady-state run allocates nothing). */
  void *run_scratch;
  size_t run_scratch_bytes;

  /* Host memory block-sparse attention expands its BSR matrix into (a bit per (query row,
   * key) pair; fi_context_mask_scratch; grown on demand, freed by fi_context_destroy). */
  void *mask_scratch;
  size_t mask_scratch_bytes;

  /* Decode and prefill tuning knobs for benchmark sweeps, read from the environment once when the
   * context is created (never on the run path); -1, or 0 where a knob's own comment says
   * so, means "the measured default" (FI_MERGE_WARPS and FI_PREFILL_BSR_HALF_SKIP: 1).
   * FI_DECODE_CTAS_PER_SM, FI_DECODE_SMEM_KB, FI_DECODE_HEAD_FAST, FI_DECODE_WARP_PIPE,
   * FI_PDL, FI_DECODE_TCW_WARPS, FI_DECODE_HEADS_N, FI_DECODE_SINGLE_SLOTS,
   * FI_DECODE_WARP_SPEC, FI_DECODE_TWS_SLOTS, FI_PREFILL_WARP_SPEC, FI_DECODE_ONE_WAVE,
   * FI_PREFILL_WS_ALL_EXTRAS, FI_PREFILL_WS_ROWS_ACROSS, FI_PREFILL_BSR_STAGE,
   * FI_PREFILL_LEAD_UNITS, FI_PREFILL_WS_CTAS, FI_PREFILL_WS_DEEP, FI_MERGE_WARPS,
   * FI_DECODE_MAX_CTAS, FI_DECODE_SPLIT, FI_PREFILL_BSR_HALF_SKIP, FI_PREFILL_Q_AHEAD,
   * FI_PREFILL_ONE_WAVE_TENTHS, FI_PREFILL_L2_HINTS, FI_PREFILL_V_LAG. */
  struct {
    int32_t ctas_per_sm; /* 1..64, 0: default */
    int32_t smem_kb;     /* > 0 overrides the per-CTA shared-memory budget */
    int32_t head_fast;   /* -1 default, 0/1 */
    int32_t warp_pipe;   /* -1 default, 0/1 */
    int32_t pdl;         /* -1 default (on, sm_90), 0: kernels launched without PDL */
    int32_t tcw_warps;   /* 2..16: warps per CTA of the per-warp tensor-core kernel; 0: auto */
    int32_t heads_n;     /* -1 default (on), 0/1: that kernel's heads on the mma N side */
    int32_t single_slots; /* -1 default (on), 0/1: its single K/V slots per warp */
    int32_t warp_spec;   /* -1 default (on, sm_90), 0: no warp-specialised decode kernel */
    int32_t tws_slots;   /* cap on that kernel's ring slots, rounded down to a multiple of
                            its consumer warps (at least one each); 0: as many as fit; -1
                            (default): the rule (decode.cuh launch_tws: one slot per consumer
                            for MHA over a 16-bit cache where the CTAs with work fill 2.5 per
                            SM at four CTAs per SM or 1.5 at two, else as many as fit) */
    int32_t prefill_warp_spec; /* -1 default (on, sm_90), 0: no warp-specialised prefill */
    int32_t decode_one_wave;   /* -1 default (by the memory bandwidth per SM), 0: split
                                  one-wave per-warp decode plans, 1: keep them unsplit */
    int32_t prefill_ws_all_extras; /* -1 default (the instance with the run's extras only),
                                      1: the warp-specialised prefill instance with every
                                      extra for any run with one (for A / B runs) */
    int32_t prefill_rows_across; /* -1 default (Q tiles of a GQA group of at most 32 that
                                    does not divide 128 pack rows across tokens, internal.h
                                    fi_prefill_rows_across), 0 whole tokens
                                    (FI_PREFILL_WS_ROWS_ACROSS, for A / B; read by the
                                    planner and the run alike) */
    int32_t prefill_bsr_stage; /* -1 default (paged block-sparse runs whose pages load as
                                  boxes of 16 or 32 rows go through the prefill stage when
                                  the context holds one large enough, internal.h
                                  fi_bsr_stage_optional), 0 never (page boxes) */
    int32_t prefill_bsr_half_skip; /* 1 (default): a block-sparse tile's second half that
                                      keeps nothing is neither loaded nor multiplied
                                      (prefill_ws.cuh); 0: as any short half (A / B runs,
                                      the same bits) */
    int32_t prefill_q_ahead; /* 1: the warp-specialised prefill kernel with two Q slots
                                copies the next chunk's Q between the chunk's tiles, once
                                the slot is free, into a slot released at the last S where
                                the epilogue allows (prefill_ws.cuh); 0: after the
                                chunk's last tile, the slot released at the chunk's end;
                                -1 (default): 1 for block-sparse runs, 0 otherwise. The
                                same bits. */
    int32_t prefill_v_lag; /* -1 (default: 1 for ragged runs, 2 for paged and
                              block-sparse ones) or 1: the warp-specialised prefill
                              kernel's producer copies V(tile) after K(tile + 1) (FA3's
                              order) in the instances whose consumers wait for V at the
                              end of a tile's softmax (prefill_ws.cuh V_LAG_RULE); 2: so
                              from each chunk's second tile, its first K then V; 0: K,
                              then V, of each tile. The same bits. */
    int32_t prefill_l2_hints; /* -1 default (FI_PREFILL_L2_DEFAULT_HINTS), else the
                                 warp-specialised prefill kernel's L2 eviction priorities
                                 as PrefillParams.l2_hints bits (prefill_params.h:
                                 1 K / V kept, 2 Q and 4 O evicted first, a cleared bit
                                 the normal priority; A / B runs, the same bits) */
    int32_t prefill_lead_units; /* -1 default (host prefill plans hand out their costliest
                                   units for every head first, planner.c lead_units), 0
                                   head-major order throughout (for A / B runs) */
    int32_t prefill_ws_ctas; /* > 0: at most this many persistent CTAs for the
                                warp-specialised prefill kernel (the rest of the SMs left to
                                kernels on other streams); 0: one per SM */
    int32_t prefill_ws_deep; /* -1 default (host prefill plans whose units stream their K/V
                                from DRAM take the deep ring unless their pages take the
                                176-key tile, api.c choose_ws_layout), 0 never
                                (such plans widened to 176-key tiles as other long ones), 1
                                every host plan left at wgmma 128 x 128 (A / B runs, tests) */
    int32_t merge_warps; /* 1 (default): the split-KV merge of host plans with few chunks
                            per unit runs a warp per row (FI_PLAN_FLAG_FEW_CHUNKS; the same
                            bits); 0: a block per row throughout (A / B runs) */
    int32_t decode_max_ctas; /* > 0: at most this many CTAs for a decode launch (whole unit
                                slots, at least one; its CTAs loop over the rest), the other
                                SMs left to kernels on other streams; 0: the plan's launch
                                size */
    int32_t decode_split; /* -1 default (the heuristics' rule, fi_select_decode_tiles);
                             0 / 1: split_kv off / on in the tiles the runtime chooses for a
                             host decode plan (the planner still splits only below its
                             target; given tiles, device plans and compiled #fi.tiles keep
                             theirs; A / B runs) */
    int32_t prefill_one_wave_tenths; /* > 0: a split prefill plan takes the chunk whose
                                        items fit one wave of CTAs where it is at most this
                                        many tenths of the two-wave chunk (planner.c
                                        fi_plan_one_wave_tenths); <= 0: the measured
                                        default, FI_PLAN_ONE_WAVE_TENTHS (A / B runs) */
  } tuning;

  /* Backend-private state (the CUDA backend may hang what it needs here; it must free it
   * in fi_cuda_context_release). */
  void *backend_state;

  /* 1 only inside fi_paged_prefill_run_unmerged / fi_ragged_prefill_run_unmerged (api.c
   * sets and clears it around the backend run): the CUDA prefill run then leaves its split
   * rows' partials for fi_prefill_merge_run instead of merging them. */
  int32_t defer_merge;
};

/* Returns a host buffer of at least `bytes` owned by ctx (NULL + error set on failure). */
void *fi_context_plan_scratch(fi_context *ctx, size_t bytes);
void *fi_context_run_scratch(fi_context *ctx, size_t bytes);
void *fi_context_mask_scratch(fi_context *ctx, size_t bytes);

/* CUDA backend: frees ctx->backend_state (no-op stub when CUDA is off). */
void fi_cuda_context_release(fi_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
