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
 * Plans and workspaces: every plan op of a compiled module owns a module-level slot
 * (memref.global @__fi_plan_slot_N, one pointer). The plan adapter keeps there a record
 * with the fi_plan and the workspace; the workspace is allocated (host memory, or CUDA
 * device memory) with fi_*_workspace_size for a capacity rounded up to a power of two
 * (batch >= 16, query rows >= 64) at the first call and replaced only when a later step
 * is larger than that capacity, so steady-state steps allocate nothing. Slots live for
 * the whole process. A compiled function is therefore
 * not reentrant: do not run the same compiled function from two threads at once.
 *
 * Layers sharing a plan: a plan op carries the shape attributes only; the per-op
 * attention attributes (sm_scale, soft cap, window, RoPE/ALiBi, fp8 scales), which do
 * not affect the runtime's work partition, are applied by each run adapter to its own
 * copy of the plan, so that layers with different attributes can share one plan.
 *
 * CUDA backend: plans read the index arrays on the host and runs read every buffer on the
 * device, so the memrefs passed to a compiled function must be visible to both: allocate
 * them with fi_rt_alloc (cudaMallocManaged; plain aligned host memory on the host
 * backend). Each run adapter waits for its kernels (compiled host code may read a buffer
 * next) unless the environment variable FI_RT_ASYNC is 1; then call fi_rt_synchronize
 * before reading results on the host. Buffers that compiled code allocates itself
 * (memref.alloc: results, temporaries) come from fi_rt_alloc too: the fi-to-llvm
 * pipeline lowers allocations to _mlir_memref_to_llvm_alloc/free, which the runtime
 * defines. Free a result buffer a compiled function returns with fi_rt_free(allocated).
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

/* Memory for the buffers of compiled functions that the default context's backend can
 * read: 256-byte aligned host memory on the host backend, managed memory on CUDA.
 * Returns NULL (and reports through the handler) on failure. With the environment
 * variable FI_RT_POISON=1 (tests), host allocations are filled with 0xff bytes (NaN in
 * every float type), so an output compiled code fails to write is caught. */
void *fi_rt_alloc(size_t bytes);
void fi_rt_free(void *ptr);
/* Waits for the work launched by compiled code (CUDA); nothing on the host backend. */
void fi_rt_synchronize(void);

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
