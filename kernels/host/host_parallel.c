/* kernels/host/host_parallel.c -- fork/join over pthreads with a shared task counter. */
#include "host_parallel.h"

#include <pthread.h>
#include <stdatomic.h>

enum { FI_HOST_MAX_THREADS = 256 };

typedef struct shared_loop {
  atomic_llong next;
  int64_t num_tasks;
  fi_host_task_fn fn;
  void *arg;
} shared_loop;

typedef struct worker {
  shared_loop *loop;
  int32_t thread;
} worker;

static void drain(shared_loop *loop, int32_t thread) {
  for (;;) {
    long long t = atomic_fetch_add(&loop->next, 1);
    if (t >= loop->num_tasks) return;
    loop->fn(loop->arg, (int64_t)t, thread);
  }
}

static void *worker_main(void *p) {
  worker *w = (worker *)p;
  drain(w->loop, w->thread);
  return NULL;
}

int fi_host_parallel_for(int32_t num_threads, int64_t num_tasks, fi_host_task_fn fn, void *arg) {
  shared_loop loop;
  atomic_init(&loop.next, 0);
  loop.num_tasks = num_tasks;
  loop.fn = fn;
  loop.arg = arg;
  if (num_threads > FI_HOST_MAX_THREADS) num_threads = FI_HOST_MAX_THREADS;
  if (num_threads > num_tasks) num_threads = (int32_t)num_tasks;
  pthread_t threads[FI_HOST_MAX_THREADS];
  worker workers[FI_HOST_MAX_THREADS];
  int32_t started = 0;
  for (int32_t t = 1; t < num_threads; ++t) {
    workers[t].loop = &loop;
    workers[t].thread = t;
    if (pthread_create(&threads[t], NULL, worker_main, &workers[t]) != 0) break;
    started = t;
  }
  drain(&loop, 0);
  for (int32_t t = 1; t <= started; ++t) pthread_join(threads[t], NULL);
  return (num_threads > 1 && started == 0) ? -1 : 0;
}
