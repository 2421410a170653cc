/* fi/mlir_adapters.h -- what programs compiled from fi MLIR (fi-opt --fi-to-llvm) call,
 * and the few functions a host program that runs them may need.
 *
 * The lowered code (fi-lower-to-runtime) calls `_mlir_ciface_fi_rt_*` adapters in
 * kernels/src/mlir_adapters.c, which turn MLIR memref descriptors into fi_tensor views
 * and call the runtime.h functions on fi_default_context() (host backend, or CUDA when
 * the environment variable FI_BACKEND is "cuda").
 *
 * Errors: an adapter whose runtime call fails reports it through the error handler, with
 * the op, the status and the runtime's message (fi_last_error). The default handler
 * prints "fi: <op>: <STATUS>: <message>" to stderr and calls abort(): a compiled
 * program never continues with a half-computed result. Install another handler (which
 * may longjmp or exit) with fi_rt_set_error_handler.
 *
 * Context: the adapters run on fi_rt_context(): the calling thread's
 * (fi_rt_set_thread_context), else the process's (fi_rt_set_context), else
 * fi_default_context() (host backend, or CUDA when the environment variable FI_BACKEND is
 * "cuda"). Give a CUDA context your stream with fi_context_set_stream.
 *
 * Plans and workspaces: every plan op of a compiled module owns a module-level slot
 * (memref.global @__fi_plan_slot_N, one pointer). The plan adapter keeps there a record
 * with the fi_plan and the workspace; the workspace is allocated (host memory, or CUDA
 * device memory, outside stream order) with fi_*_workspace_size for a capacity rounded up
 * to a power of two (batch >= 16, query rows >= 64) at the first call and replaced only
 * when a later step is larger than that capacity, so steady-state steps allocate nothing.
 * Slots live for the whole process and hold one record per context that ran the plan op.
 * Threads: compiled functions may run on several threads at once when each thread runs on
 * its own context (fi_rt_set_thread_context; a context is used by one thread at a time, as
 * runtime.h says): each (plan op, context) has its own plan and workspace, and the capture,
 * plan log and last-op state are the thread's own. Two threads on one context race.
 *
 * Layers sharing a plan: a plan op carries the shape attributes only; the per-op
 * attention attributes (sm_scale, soft cap, window, RoPE/ALiBi, fp8 scales) and the op's
 * variant (its score_mod / mask_mod functions, compiled with the module, a pointer to its
 * captured values and their bytes, and with backend=cuda the device image: the arguments
 * that end every attention run adapter's, NULL / 0 when absent), which do not affect the
 * runtime's work partition, are applied by each run adapter to its own copy of the plan
 * (params.variant points at the adapter's copy for the duration of the run), so that
 * layers with different attributes or variants can share one plan. On CUDA a variant runs
 * in paged and ragged prefill from its device image (runtime.h, fi_variant).
 *
 * Context parallelism (`kv_shard = #fi.kv_shard<ranks = N, split_size = S>` on fi.decode_plan /
 * fi.paged_prefill_plan): the plan op lowers to
 *   _mlir_ciface_fi_rt_decode_plan_sharded(<the arguments of fi_rt_decode_plan>,
 *                                          int32_t ranks, int32_t split_size)
 *   _mlir_ciface_fi_rt_paged_prefill_plan_sharded(<the arguments of
 *                                          fi_rt_paged_prefill_plan>, int32_t ranks,
 *                                          int32_t split_size)
 * which plan as the unsharded adapters do (same code) with params.kv_shards = ranks and
 * params.fixed_split_size = split_size (0: the planner's split). Each rank sizes its
 * workspace for its own problem (decode with a split: its own KV tokens); when the ranks'
 * plans agree that a workspace is too small for the largest rank's states, every rank
 * resizes to the agreed capacity and plans again, so all ranks fail or succeed together.
 * The runs keep both from the plan; a run whose adapter checks fail still joins the
 * exchange (fi_plan_skip_run), and a peer's failed run is reported at fi_rt_check /
 * fi_rt_synchronize (CUDA: which waits at most the communicator's timeout,
 * fi_comm_synchronize). The plan is made on the host (runtime.h, "Context parallelism");
 * the context compiled code runs on (one per rank: fi_rt_set_thread_context or
 * fi_rt_set_context) needs a communicator of `ranks` ranks (fi_context_set_comm).
 *
 * CUDA backend -- the execution model of compiled code:
 *  - Memory. Buffers passed to a compiled function are device memory (the first runs of
 *    each plan and every captured run check that none is plain host memory). Buffers the
 *    compiled code allocates itself (memref.alloc: results, temporaries; fi-to-llvm
 *    lowers them to _mlir_memref_to_llvm_alloc/free, defined here) come from the
 *    embedder's hooks (fi_rt_set_allocator) or, by default, from a stream-ordered pool
 *    of the runtime's (cudaMallocFromPoolAsync on the context's stream; freed memory stays
 *    reserved, so steady-state steps map nothing). memref.copy becomes fi_rt_copy: a
 *    stream-ordered device copy. Host code never reads device memory.
 *  - Stream order. Every adapter only enqueues work on the context's stream and returns;
 *    nothing waits for the device. fi_rt_sync_count counts the waits the runtime made
 *    itself (a plan made on the host uploads from pageable memory, which waits for the
 *    stream; plans made on the device never wait). On sm_90 and later every kernel is
 *    launched with programmatic dependent launch: the next kernel of a step is launched
 *    while the one before it finishes, and waits for it before it touches memory
 *    (kernels/cuda/pdl.cuh). The embedder's own kernels on the stream are ordered as
 *    usual. FI_PDL=0 in the environment (read when a context is created) turns it off.
 *  - Where metadata lives. A host plan (fi.decode_plan etc. without `on_device`) reads
 *    its index arrays on the host: they must be host memory, and such a plan cannot be
 *    captured in a graph. A plan op with `on_device` (decode, prefill, append) reads them
 *    on the device: a planning kernel writes the partition into the workspace, and bad
 *    index arrays are found there and reported at the next fi_rt_synchronize / fi_rt_check.
 *  - Errors of asynchronous work reach the error handler at fi_rt_synchronize (which
 *    waits for the stream) or at fi_rt_check (after the embedder's own synchronisation),
 *    with the name of the last op that launched kernels, or of the plan the device
 *    rejected.
 *  - Graphs. fi_rt_graph_capture runs a step function once under stream capture; buffers
 *    the step allocates while captured belong to the graph (fixed addresses for every
 *    replay, freed with it). Replays read whatever the step's input buffers hold at replay
 *    time: update page tables and lengths in place, then replay.
 */
#ifndef FI_MLIR_ADAPTERS_H
#define FI_MLIR_ADAPTERS_H

#include <stddef.h>

#include "fi/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called when a runtime call of compiled code fails. `op` names the fi op ("fi.paged_decode",
 * "fi.decode_plan", ...). The default prints and aborts. A handler that returns makes the
 * adapter return without computing (outputs are left as they were). */
typedef void (*fi_rt_error_handler)(const char *op, fi_status status, const char *message);
/* Installs `handler` (NULL restores the default); returns the previous one. */
fi_rt_error_handler fi_rt_set_error_handler(fi_rt_error_handler handler);

/* The context compiled code runs on: `ctx` (owned by the caller, who keeps it alive),
 * or NULL for fi_default_context(). fi_rt_set_context sets the process's;
 * fi_rt_set_thread_context the calling thread's, which takes precedence on that thread
 * (NULL: back to the process's). fi_rt_context returns the one in force on the caller. */
fi_status fi_rt_set_context(fi_context *ctx);
fi_status fi_rt_set_thread_context(fi_context *ctx);
fi_context *fi_rt_context(void);

/* The embedder's allocator for buffers compiled code allocates on the CUDA backend: alloc
 * returns device memory usable in stream order on `stream` (NULL: out of memory), release
 * takes it back. Both NULL restores the runtime's pool. */
typedef void *(*fi_rt_alloc_hook)(void *user_data, size_t bytes, void *cuda_stream);
typedef void (*fi_rt_free_hook)(void *user_data, void *ptr, void *cuda_stream);
void fi_rt_set_allocator(fi_rt_alloc_hook alloc, fi_rt_free_hook release, void *user_data);

/* Memory of compiled code's buffers (what memref.alloc lowers to): the backend's memory
 * (see the CUDA notes above; 256-byte aligned host memory on the host backend). Returns
 * NULL (and reports through the handler) on failure. With the environment variable
 * FI_RT_POISON=1 (tests), allocations are filled with 0xff bytes (NaN in every float
 * type), so an output compiled code fails to write is caught (on CUDA: a memset queued
 * with each allocation, also inside a captured graph). fi_rt_set_poison overrides the
 * environment (a driver turns it off before it times a step). */
void *fi_rt_alloc(size_t bytes);
void fi_rt_set_poison(int on);
/* Frees memory of fi_rt_alloc (stream-ordered on CUDA). */
void fi_rt_free(void *ptr);
/* Memory both the host and the device can read (cudaMallocManaged; host memory on the host
 * backend), for test drivers that fill inputs on the host. Not for serving: plans made on
 * the host and kernels then migrate pages back and forth. */
void *fi_rt_alloc_managed(size_t bytes);
/* Frees memory of fi_rt_alloc_managed (not stream-ordered: cudaFree waits for the device). */
void fi_rt_free_managed(void *ptr);
/* Copies `bytes` between any two buffers in stream order (cudaMemcpyAsync on the
 * context's stream; memmove on the host backend). A copy to pageable host memory is
 * complete after fi_rt_synchronize. */
fi_status fi_rt_copy(void *dst, const void *src, size_t bytes);

/* Waits for the context's stream, then fi_rt_check. Nothing to wait for on the host
 * backend. Returns the first error reported (also passed to the handler). */
fi_status fi_rt_synchronize(void);
/* Reports, through the handler, a CUDA error of asynchronous work and every page table a
 * device plan rejected since the last check. Call it after the stream has been
 * synchronised by you (fi_rt_synchronize calls it). */
fi_status fi_rt_check(void);
/* Stream or device waits the runtime made on its own on the current context (not those
 * of fi_rt_synchronize): a serving loop asserts it stays flat across steady-state steps. */
long fi_rt_sync_count(void);

/* Whole-step CUDA graphs. fi_rt_graph_capture calls step(user_data) once, capturing
 * everything it enqueues on the context's stream (which must be the embedder's, not the
 * legacy default stream); every plan the step makes must be made on the device
 * (`on_device`). fi_rt_graph_replay launches the graph on the context's stream. A graph
 * keeps the workspaces of its plans at their addresses: a later direct call that needs a
 * larger workspace fails with a message to recapture. CUDA backend only
 * (FI_ERROR_UNSUPPORTED on the host backend). */
typedef struct fi_rt_graph fi_rt_graph;
typedef void (*fi_rt_step_fn)(void *user_data);
fi_status fi_rt_graph_capture(fi_rt_step_fn step, void *user_data, fi_rt_graph **graph);
fi_status fi_rt_graph_replay(fi_rt_graph *graph);
/* Waits for the stream when the graph owns buffers, then frees the graph and them. */
void fi_rt_graph_destroy(fi_rt_graph *graph);

/* Lanes for compiled code (fi/lanes.h): ops marked `fi.lane = "main"` / `"side"` (the parts
 * of a shared-prefix decode, fi-decompose-shared-prefix) run in the lanes `lanes` made on
 * `ctx` (kept alive by the caller until it sets NULL or another; NULL: none, the marked ops
 * run in order on the context's stream). The lowered code enters the op's lane around its
 * plan and run calls (_mlir_ciface_fi_rt_lane_enter / _leave); every other adapter call on
 * the context first joins the lanes' pending work (an allocation instead makes the lanes
 * wait for it, fi_lanes_fork), and so does a function that ran lane ops before it
 * returns (_mlir_ciface_fi_rt_lanes_join). Host backend: the lanes change nothing. Set
 * between steps, not from inside one. */
struct fi_lanes;
fi_status fi_rt_set_lanes(fi_context *ctx, struct fi_lanes *lanes);

/* Number of workspace (re)allocations the plan adapters have made so far; a program
 * can check that its steady-state steps make none. */
long fi_rt_workspace_allocations(void);

/* The plans compiled code made since the last reset, in order (at most 64 are kept):
 * their op family and the tiles the runtime used (the compile-time choice, or the plan
 * step's where the op left it to plan time). For tests that call the runtime directly
 * with the same variant, and for reports of what ran. Returns the number of plans made
 * (which may exceed `max`); fills min(count, max) entries. */
int fi_rt_plan_log(fi_op_family *families, fi_tiles *tiles, int max);
void fi_rt_plan_log_reset(void);

#ifdef __cplusplus
}
#endif
#endif /* FI_MLIR_ADAPTERS_H */
