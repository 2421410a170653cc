/* kernels/host/host_parallel.h -- a fork/join parallel loop over the context's threads. */
#ifndef FI_HOST_PARALLEL_H
#define FI_HOST_PARALLEL_H

#include <stdint.h>

/* Calls fn(arg, task, thread) for task = 0 .. num_tasks-1 on up to num_threads threads
 * (thread in 0 .. num_threads-1, the caller being thread 0). Tasks are handed out in
 * index order from a shared counter, so a list sorted longest-first is scheduled LPT.
 * Returns 0, or -1 if no thread could be started (then everything ran on the caller). */
typedef void (*fi_host_task_fn)(void *arg, int64_t task, int32_t thread);
int fi_host_parallel_for(int32_t num_threads, int64_t num_tasks, fi_host_task_fn fn, void *arg);

#endif
