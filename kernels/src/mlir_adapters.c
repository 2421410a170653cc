/* kernels/src/mlir_adapters.c -- the entry points that code lowered by fi-lower-to-runtime
 * calls (see fi/mlir_adapters.h for errors, plan slots, workspaces and the CUDA rules).
 *
 * ABI: every adapter is declared in MLIR with llvm.emit_c_interface, so the lowered code
 * calls `_mlir_ciface_<name>` with pointers to memref descriptors
 *   { void *allocated; void *aligned; int64_t offset; int64_t sizes[r]; int64_t strides[r]; }
 * (fully dynamic strided memrefs) and scalars by value. The element types are part of the
 * name (fi_rt_decode_run_<q>_<kv>), stamped out below for every supported combination.
 * The argument order of each adapter is the one LowerToRuntime.cpp builds.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/lanes.h"
#include "fi/mlir_adapters.h"
#include "internal.h"

#ifdef FI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* ---------------------------------------------------------------- errors ---------- */

static void default_handler(const char *op, fi_status status, const char *message) {
  fprintf(stderr, "fi: %s: %s: %s\n", op, fi_status_string(status), message);
  fflush(stderr);
  abort();
}

static fi_rt_error_handler error_handler = default_handler;

fi_rt_error_handler fi_rt_set_error_handler(fi_rt_error_handler handler) {
  fi_rt_error_handler old = error_handler;
  error_handler = handler ? handler : default_handler;
  return old;
}

/* Reentrancy: compiled functions may run on several threads at once, each thread on its
 * own context (fi_rt_set_thread_context). What belongs to one caller is thread-local (the
 * thread's context, the capture in progress, the last op launched, the plan log); what is
 * shared -- the plan slots' records (one per (slot, context)), the live graphs, the
 * per-context scratch buffers, the result pool, the counters -- is guarded by rt_lock,
 * held only to find or update those tables, never across a runtime call. */
static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;

/* The name of the last op whose kernels compiled code launched on this thread: an
 * asynchronous CUDA error found at the next synchronisation point is reported with it. */
static _Thread_local const char *last_launched_op = "(none)";

static void report(const char *op, fi_status status, const char *message);

/* ---------------------------------------------------------------- context --------- */

static fi_context *embedder_ctx = NULL;
static _Thread_local fi_context *thread_ctx = NULL;

fi_status fi_rt_set_context(fi_context *ctx) {
  __atomic_store_n(&embedder_ctx, ctx, __ATOMIC_RELEASE);
  return FI_SUCCESS;
}

fi_status fi_rt_set_thread_context(fi_context *ctx) {
  thread_ctx = ctx;
  return FI_SUCCESS;
}

fi_context *fi_rt_context(void) {
  if (thread_ctx) return thread_ctx;
  fi_context *ctx = __atomic_load_n(&embedder_ctx, __ATOMIC_ACQUIRE);
  return ctx ? ctx : fi_default_context();
}

static void lanes_join_outside(const char *op, fi_context *ctx);

/* The context of an adapter that enqueues work on the context's stream: outside a lane,
 * after the lanes' pending work (fi_rt_set_lanes). */
static fi_context *context_or_report(const char *op) {
  fi_context *ctx = fi_rt_context();
  if (!ctx) report(op, FI_ERROR_BACKEND_UNAVAILABLE, fi_last_error(NULL));
  else lanes_join_outside(op, ctx);
  return ctx;
}

static int is_cuda(const fi_context *ctx) { return fi_context_backend(ctx) == FI_BACKEND_CUDA; }

#ifdef FI_HAVE_CUDA
/* What CUDA knows of `p` (cudaMemoryTypeUnregistered: plain host memory, or unknown). */
static enum cudaMemoryType memory_type_of(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) == cudaSuccess) return a.type;
  cudaGetLastError();
  return cudaMemoryTypeUnregistered;
}
#endif

/* Reports a failed runtime call; returns 1 if `status` is a failure. */
static int failed(const char *op, fi_context *ctx, fi_status status) {
  if (status == FI_SUCCESS) return 0;
  report(op, status, fi_last_error(ctx));
  return 1;
}

struct plan_record;
static int plan_failed(const char *op, fi_context *ctx, struct plan_record *r, fi_status status);

/* ---------------------------------------------------------------- graphs ---------- */

/* A captured step: the CUDA graph and the buffers compiled code allocated while it was
 * captured (owned by the graph, at fixed addresses for every replay). */
struct fi_rt_graph {
#ifdef FI_HAVE_CUDA
  cudaGraph_t graph;
  cudaGraphExec_t exec;
#endif
  void **buffers;
  int num_buffers, cap_buffers;
  struct plan_record **records; /* plans whose workspaces the graph uses (kept in place) */
  int num_records;
  int failed; /* an error was reported while capturing */
};

static _Thread_local fi_rt_graph *capturing = NULL; /* this thread's capture, if any */

static void report(const char *op, fi_status status, const char *message) {
  if (capturing) capturing->failed = 1;
  error_handler(op, status, message);
}
static fi_rt_graph *graphs[64];       /* live graphs (for fi_rt_free of their buffers) */
static int num_graphs = 0;            /* (rt_lock) */

static int graph_owns(const void *p) {
  int owned = 0;
  pthread_mutex_lock(&rt_lock);
  for (int g = 0; g < num_graphs && !owned; ++g)
    for (int i = 0; i < graphs[g]->num_buffers; ++i)
      if (graphs[g]->buffers[i] == p) owned = 1;
  pthread_mutex_unlock(&rt_lock);
  return owned;
}

/* ---------------------------------------------------------------- memory ---------- */

static fi_rt_alloc_hook alloc_hook = NULL;
static fi_rt_free_hook free_hook = NULL;
static void *hook_user = NULL;

void fi_rt_set_allocator(fi_rt_alloc_hook alloc, fi_rt_free_hook release, void *user_data) {
  alloc_hook = alloc && release ? alloc : NULL;
  free_hook = alloc && release ? release : NULL;
  hook_user = alloc && release ? user_data : NULL;
}

#ifdef FI_HAVE_CUDA
/* The stream-ordered pool of compiled code's results and temporaries (its own pool, so the
 * device's default pool keeps its settings); memory freed back to it stays reserved
 * (release threshold: unlimited), so steady-state steps map no memory. */
static cudaMemPool_t result_pool = NULL;
static int result_pool_device = -1;

static cudaMemPool_t pool_for_locked(fi_context *ctx);
static cudaMemPool_t pool_for(fi_context *ctx) {
  pthread_mutex_lock(&rt_lock);
  cudaMemPool_t pool = pool_for_locked(ctx);
  pthread_mutex_unlock(&rt_lock);
  return pool;
}
static cudaMemPool_t pool_for_locked(fi_context *ctx) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return NULL;
  if (result_pool && result_pool_device == dev) return result_pool;
  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t pool;
  if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) return NULL;
  uint64_t keep = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  result_pool = pool;
  result_pool_device = dev;
  (void)ctx;
  return pool;
}
#endif

/* Memory of the plan records (workspaces): persistent, outside stream order. */
static void *backend_alloc(fi_context *ctx, size_t bytes) {
  if (bytes == 0) bytes = 1;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
  }
#else
  (void)ctx;
#endif
  size_t rounded = (bytes + 255) / 256 * 256;
  return aligned_alloc(256, rounded);
}

static void backend_free(fi_context *ctx, void *p) {
  if (!p) return;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    cudaFree(p);
    return;
  }
#else
  (void)ctx;
#endif
  free(p);
}

static int poison = -1; /* -1: read FI_RT_POISON at the first allocation */

void fi_rt_set_poison(int on) {
  pthread_mutex_lock(&rt_lock);
  poison = on != 0;
  pthread_mutex_unlock(&rt_lock);
}

static int poison_enabled(void) {
  pthread_mutex_lock(&rt_lock);
  if (poison < 0) {
    const char *env = getenv("FI_RT_POISON");
    poison = env && env[0] == '1';
  }
  const int on = poison;
  pthread_mutex_unlock(&rt_lock);
  return on;
}

static void lanes_after_alloc(fi_context *ctx);

void *fi_rt_alloc(size_t bytes) {
  /* (not context_or_report: an allocation between two lanes' runs does not join them; the
   * lanes wait for it instead, lanes_after_alloc) */
  fi_context *ctx = fi_rt_context();
  if (!ctx) {
    report("fi_rt_alloc", FI_ERROR_BACKEND_UNAVAILABLE, fi_last_error(NULL));
    return NULL;
  }
  if (bytes == 0) bytes = 1;
  void *p = NULL;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    if (capturing) {
      /* Owned by the graph: the same address in every replay, freed with the graph. */
      if (alloc_hook) p = alloc_hook(hook_user, bytes, stream);
      else if (cudaMalloc(&p, bytes) != cudaSuccess) p = NULL;
      if (p) {
        fi_rt_graph *g = capturing;
        if (g->num_buffers == g->cap_buffers) {
          int cap = g->cap_buffers ? 2 * g->cap_buffers : 16;
          void **b = (void **)realloc(g->buffers, (size_t)cap * sizeof(void *));
          if (!b) {
            report("fi_rt_alloc", FI_ERROR_OUT_OF_MEMORY, "could not grow the graph's buffer list");
            return NULL;
          }
          g->buffers = b;
          g->cap_buffers = cap;
        }
        g->buffers[g->num_buffers++] = p;
      }
    } else if (alloc_hook) {
      p = alloc_hook(hook_user, bytes, stream);
    } else {
      cudaMemPool_t pool = pool_for(ctx);
      if (!pool || cudaMallocFromPoolAsync(&p, bytes, pool, stream) != cudaSuccess) p = NULL;
    }
    if (p && poison_enabled()) cudaMemsetAsync(p, 0xff, bytes, stream);
  } else
#endif
  {
    p = aligned_alloc(256, (bytes + 255) / 256 * 256);
    /* Tests poison what compiled code allocates, so that an output the code fails to write
     * shows up as NaN. */
    if (p && poison_enabled()) memset(p, 0xff, bytes);
  }
  if (!p) {
    char msg[160];
    snprintf(msg, sizeof(msg), "could not allocate %zu bytes%s", bytes,
             alloc_hook ? " (the embedder's allocation hook returned NULL)" : "");
    report("fi_rt_alloc", FI_ERROR_OUT_OF_MEMORY, msg);
  } else {
    lanes_after_alloc(ctx);
  }
  return p;
}

void fi_rt_free(void *ptr) {
  fi_context *ctx = fi_rt_context();
  if (!ctx || !ptr) return;
  lanes_join_outside("fi_rt_free", ctx); /* (a lane may still use it) */
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    if (capturing || graph_owns(ptr)) return; /* the graph frees its buffers */
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    if (free_hook) free_hook(hook_user, ptr, stream);
    else cudaFreeAsync(ptr, stream);
    return;
  }
#endif
  free(ptr);
}

void *fi_rt_alloc_managed(size_t bytes) {
  fi_context *ctx = context_or_report("fi_rt_alloc_managed");
  if (!ctx) return NULL;
  if (bytes == 0) bytes = 1;
  void *p = NULL;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    if (cudaMallocManaged(&p, bytes, cudaMemAttachGlobal) != cudaSuccess) p = NULL;
  } else
#endif
    p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) {
    char msg[128];
    snprintf(msg, sizeof(msg), "could not allocate %zu bytes of managed memory", bytes);
    report("fi_rt_alloc_managed", FI_ERROR_OUT_OF_MEMORY, msg);
  }
  return p;
}

void fi_rt_free_managed(void *ptr) {
  fi_context *ctx = fi_rt_context();
  if (!ctx || !ptr) return;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    cudaFree(ptr);
    return;
  }
#endif
  free(ptr);
}

fi_status fi_rt_copy(void *dst, const void *src, size_t bytes) {
  fi_context *ctx = context_or_report("fi_rt_copy");
  if (!ctx) return FI_ERROR_BACKEND_UNAVAILABLE;
  if (bytes == 0 || dst == src) return FI_SUCCESS;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                    (cudaStream_t)ctx->stream);
    if (e != cudaSuccess) {
      char msg[256];
      snprintf(msg, sizeof(msg), "cudaMemcpyAsync of %zu bytes failed: %s", bytes,
               cudaGetErrorString(e));
      report("fi_rt_copy", FI_ERROR_CUDA, msg);
      return FI_ERROR_CUDA;
    }
    return FI_SUCCESS;
  }
#endif
  memmove(dst, src, bytes);
  return FI_SUCCESS;
}

/* The allocation functions of code lowered with finalize-memref-to-llvm
 * {use-generic-functions}: buffers a compiled function allocates (its results,
 * temporaries) are backend memory, so the CUDA kernels can write them. */
void *_mlir_memref_to_llvm_alloc(size_t bytes) { return fi_rt_alloc(bytes); }
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  (void)alignment; /* fi_rt_alloc aligns to 256 bytes, more than MLIR ever asks */
  return fi_rt_alloc(bytes);
}
void _mlir_memref_to_llvm_free(void *ptr) { fi_rt_free(ptr); }

/* Stream order: run adapters return as soon as their kernels are launched; the embedder
 * synchronises (fi_rt_synchronize, or its own stream sync then fi_rt_check). */
static void after_run(const char *op, fi_context *ctx) {
  (void)ctx;
  last_launched_op = op;
}

static long workspace_allocations = 0; /* (rt_lock) */
long fi_rt_workspace_allocations(void) {
  pthread_mutex_lock(&rt_lock);
  long n = workspace_allocations;
  pthread_mutex_unlock(&rt_lock);
  return n;
}

long fi_rt_sync_count(void) {
  fi_context *ctx = fi_rt_context();
  return ctx ? ctx->sync_count : 0;
}

/* ---------------------------------------------------------------- plan log -------- */

enum { PLAN_LOG_MAX = 64 };
static _Thread_local fi_op_family plan_log_families[PLAN_LOG_MAX];
static _Thread_local fi_tiles plan_log_tiles[PLAN_LOG_MAX];
static _Thread_local int plan_log_count = 0;

static void log_plan(const fi_plan *plan) {
  if (plan_log_count < PLAN_LOG_MAX) {
    plan_log_families[plan_log_count] = plan->family;
    plan_log_tiles[plan_log_count] = plan->tiles;
  }
  ++plan_log_count;
}

int fi_rt_plan_log(fi_op_family *families, fi_tiles *tiles, int max) {
  int n = plan_log_count < max ? plan_log_count : max;
  if (n > PLAN_LOG_MAX) n = PLAN_LOG_MAX;
  for (int i = 0; i < n; ++i) {
    if (families) families[i] = plan_log_families[i];
    if (tiles) tiles[i] = plan_log_tiles[i];
  }
  return plan_log_count;
}

void fi_rt_plan_log_reset(void) { plan_log_count = 0; }

/* -------------------------------------------------------------- descriptors ------- */

/* A memref descriptor of any rank: sizes are dims[0..r), strides dims[r..2r). */
typedef struct fi_memref {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t dims[];
} fi_memref;

static fi_tensor tensor_of(const fi_memref *m, int32_t rank, fi_dtype dtype) {
  fi_tensor t;
  memset(&t, 0, sizeof(t));
  t.data = (char *)m->aligned + m->offset * (int64_t)fi_dtype_size(dtype);
  t.dtype = dtype;
  t.rank = rank;
  for (int32_t i = 0; i < rank; ++i) {
    t.shape[i] = m->dims[i];
    t.strides[i] = m->dims[rank + i];
  }
  return t;
}

/* A rank-1 i32 (or i8) array; NULL, after reporting, unless it is contiguous. */
static const void *array_of(const char *op, const char *name, const fi_memref *m,
                            size_t elem_bytes) {
  if (m->dims[0] > 1 && m->dims[1] != 1) {
    char msg[192];
    snprintf(msg, sizeof(msg), "%s has stride %lld: index arrays and masks must be "
             "contiguous (stride 1)", name, (long long)m->dims[1]);
    report(op, FI_ERROR_INVALID_ARGUMENT, msg);
    return NULL;
  }
  return (const char *)m->aligned + m->offset * (int64_t)elem_bytes;
}

static int64_t length_of(const fi_memref *m) { return m->dims[0]; }

/* batch = len(indptr) - 1 after checking the length. */
static int batch_of(const char *op, const char *name, const fi_memref *indptr, int32_t *batch) {
  int64_t n = length_of(indptr);
  if (n < 1 || n - 1 > INT32_MAX) {
    char msg[160];
    snprintf(msg, sizeof(msg), "%s has %lld elements: it must hold batch + 1 >= 1 offsets",
             name, (long long)n);
    report(op, FI_ERROR_INVALID_ARGUMENT, msg);
    return 0;
  }
  *batch = (int32_t)(n - 1);
  return 1;
}

/* ---------------------------------------------------------------- plan slots ------ */

typedef struct plan_record {
  fi_plan plan;
  void *workspace;
  size_t workspace_bytes;
  int32_t cap_batch;
  int64_t cap_rows;
  fi_kv_layout layout;
  int32_t valid;
  fi_status failure;       /* why the last plan failed (reported again by its runs) */
  char failure_message[256];
  /* Plans made on the device: the planning kernel, and the runs of an append plan, write
   * their first error {code, index, value} into host_status (mapped pinned memory, the
   * device's view of it: status_mirror) as they find it, no copy queued per step;
   * fi_rt_check reads it once the stream is past them and clears it. The append kernel
   * claims the error in device_status first (an atomic in device memory), which stays set
   * until that report. */
  int32_t on_device;
  const char *op;
  int32_t *host_status;
  int32_t *status_mirror;
  int32_t *device_status;
  int32_t graph_uses; /* captured graphs that use the workspace at its current address */
  int32_t runs_checked; /* runs whose buffers were checked to be device memory */
  fi_context *ctx;                  /* the context this record's plan and workspace are for */
  struct plan_record *next;         /* all records (rt_lock) */
  struct plan_record *next_in_slot; /* the slot's records of other contexts */
} plan_record;

static plan_record *all_records = NULL; /* (rt_lock) */

static int refuse_host_plan_in_capture(const char *op, fi_context *ctx);
static int host_readable(const char *op, fi_context *ctx, const char *name, const void *p);
static int require_device_memory(const char *op, fi_context *ctx, const char *name,
                                 const void *p);

/* The record of `slot` for the calling thread's context: a slot holds the chain of its
 * records, one per context that ran the plan op, so that threads running the same compiled
 * function on distinct contexts never share a plan or a workspace. */
static plan_record *find_in_slot(int64_t *cell, const fi_context *ctx) {
  /* A slot's chain only grows at its head and a record's ctx and next_in_slot never change
   * once published: readers walk it without the lock. */
  plan_record *r = (plan_record *)(intptr_t)__atomic_load_n(cell, __ATOMIC_ACQUIRE);
  while (r && r->ctx != ctx) r = r->next_in_slot;
  return r;
}

static plan_record *record_of(const char *op, const fi_memref *slot, int create) {
  int64_t *cell = (int64_t *)slot->aligned + slot->offset;
  fi_context *ctx = fi_rt_context();
  plan_record *r = find_in_slot(cell, ctx);
  if (!r && create) {
    pthread_mutex_lock(&rt_lock);
    r = find_in_slot(cell, ctx); /* (another thread on this context cannot have made it) */
    if (!r && (r = (plan_record *)calloc(1, sizeof(plan_record))) != NULL) {
      r->op = op;
      r->ctx = ctx;
      r->next_in_slot = (plan_record *)(intptr_t)*cell;
      r->next = all_records;
      all_records = r;
      __atomic_store_n(cell, (int64_t)(intptr_t)r, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&rt_lock);
  }
  if (!r && create) {
    report(op, FI_ERROR_OUT_OF_MEMORY, "could not allocate a plan record");
    return NULL;
  }
  if (!r && !create)
    report(op, FI_ERROR_PLAN_MISMATCH,
           "the op ran before its plan was made on this context (the plan op did not "
           "execute first, or ran on another thread's context)");
  return r;
}

static int plan_failed(const char *op, fi_context *ctx, plan_record *r, fi_status status) {
  if (status == FI_SUCCESS) return 0;
  r->failure = status;
  snprintf(r->failure_message, sizeof(r->failure_message), "%s", fi_last_error(ctx));
  report(op, status, fi_last_error(ctx));
  return 1;
}

static int32_t round_up_pow2(int64_t v, int32_t floor) {
  int64_t p = floor;
  while (p < v) p *= 2;
  return p > INT32_MAX ? INT32_MAX : (int32_t)p;
}

/* Makes the record's workspace hold `bytes`; replaces it only when it is too small. */
static int ensure_workspace(const char *op, fi_context *ctx, plan_record *r, size_t bytes) {
  if (r->workspace && r->workspace_bytes >= bytes) return 1;
  if (r->graph_uses) {
    char msg[256];
    snprintf(msg, sizeof(msg), "the step needs a workspace of %zu bytes but a captured CUDA "
             "graph uses this plan's workspace of %zu bytes: destroy the graph "
             "(fi_rt_graph_destroy) and capture the larger step again", bytes,
             r->workspace_bytes);
    report(op, FI_ERROR_WORKSPACE_TOO_SMALL, msg);
    return 0;
  }
  backend_free(ctx, r->workspace);
  r->workspace = backend_alloc(ctx, bytes);
  r->workspace_bytes = r->workspace ? bytes : 0;
  pthread_mutex_lock(&rt_lock);
  ++workspace_allocations;
  pthread_mutex_unlock(&rt_lock);
  if (!r->workspace) {
    char msg[128];
    snprintf(msg, sizeof(msg), "could not allocate a workspace of %zu bytes", bytes);
    report(op, FI_ERROR_OUT_OF_MEMORY, msg);
    return 0;
  }
  return 1;
}

static fi_attention_params shape_params(int32_t qo_heads, int32_t kv_heads, int32_t head_dim,
                                        int32_t page_size, int32_t q_dtype, int32_t kv_dtype,
                                        int32_t mask_mode) {
  fi_attention_params p = fi_attention_params_default(qo_heads, kv_heads, head_dim);
  p.page_size = page_size;
  /* q's dtype code; fp8 attention's plans carry o's in bits 8.. (fi-lower-to-runtime) */
  p.q_dtype = (fi_dtype)(q_dtype & 0xff);
  if (p.q_dtype == FI_DTYPE_E4M3) p.o_dtype = (fi_dtype)((q_dtype >> 8) & 0xff);
  p.kv_dtype = (fi_dtype)kv_dtype;
  p.mask_mode = (fi_mask_mode)mask_mode;
  return p;
}

/* The compile-time tiles, or NULL when q_tile == 0 (chosen at plan time). */
static const fi_tiles *tiles_or_null(fi_tiles *t, int32_t q_tile, int32_t kv_tile,
                                     int32_t split_kv, int32_t cores) {
  if (q_tile == 0) return NULL;
  t->q_tile = q_tile;
  t->kv_tile = kv_tile;
  t->split_kv = split_kv;
  t->cores = (fi_core_kind)cores; /* the C enum values: 0 cuda, 1 tensor, 2 wgmma */
  return t;
}

/* Capacities grow in powers of two so that steps of fluctuating size reuse one buffer. */
static int prepare_workspace(const char *op, fi_context *ctx, plan_record *r,
                             const fi_attention_params *p, int decode, int32_t batch,
                             int64_t rows) {
  int32_t cap_batch = r->cap_batch >= batch && r->workspace ? r->cap_batch
                                                            : round_up_pow2(batch, 16);
  int64_t cap_rows = r->cap_rows >= rows && r->workspace ? r->cap_rows : round_up_pow2(rows, 64);
  size_t bytes = 0;
  fi_status st = decode ? fi_decode_workspace_size(ctx, p, cap_batch, &bytes)
                        : fi_prefill_workspace_size(ctx, p, cap_batch, cap_rows, &bytes);
  if (failed(op, ctx, st)) return 0;
  if (!ensure_workspace(op, ctx, r, bytes)) return 0;
  r->cap_batch = cap_batch;
  r->cap_rows = cap_rows;
  return 1;
}

/* ------------------------------------------------------------------- plans -------- */

/* The page table's host arrays for `batch` requests (batch = len(batch_from) - 1):
 * kv_indptr of batch + 1 elements and kv_last_page_len of at least batch. Returns 0
 * after reporting an error. */
static int page_table_of(const char *op, fi_memref *indptr, fi_memref *indices,
                         fi_memref *last, int32_t batch, const char *batch_from,
                         fi_page_table *pages) {
  pages->indptr = array_of(op, "kv_indptr", indptr, 4);
  pages->indices = array_of(op, "kv_indices", indices, 4);
  pages->last_page_len = array_of(op, "kv_last_page_len", last, 4);
  if (!pages->indptr || !pages->indices || !pages->last_page_len) return 0;
  if (length_of(indptr) != batch + 1 || length_of(last) < batch) {
    char message[192];
    snprintf(message, sizeof message,
             "kv_indptr must have batch + 1 and kv_last_page_len batch elements, with batch = "
             "len(%s) - 1 = %d", batch_from, (int)batch);
    report(op, FI_ERROR_INVALID_ARGUMENT, message);
    return 0;
  }
  return 1;
}

static int host_page_table(const char *op, fi_context *ctx, const fi_page_table *pages) {
  return host_readable(op, ctx, "kv_indptr", pages->indptr) &&
         host_readable(op, ctx, "kv_indices", pages->indices) &&
         host_readable(op, ctx, "kv_last_page_len", pages->last_page_len);
}

/* A decode plan made on the host; kv_shards / fixed_split_size as in fi_attention_params
 * (0 / 0: the whole KV, the planner's split), set before the workspace is sized (the
 * workspace of a sharded plan holds the gathered states of all ranks). */
/* A KV-sharded plan's workspace (params.kv_shards > 0): sized for this rank's own problem
 * (decode with a fixed split: by its own KV tokens, rounded up to a power of two), grown
 * only. A sizing or allocation failure is not reported here: the plan is still called
 * (with the workspace it has), so that this rank joins the ranks' signature exchange and
 * they all fail together instead of waiting for it. */
static void prepare_sharded_workspace(const char *op, fi_context *ctx, plan_record *r,
                                      const fi_attention_params *p, int decode, int32_t batch,
                                      int64_t rows, int64_t kv_tokens) {
  int32_t cap_batch = round_up_pow2(batch, 16);
  size_t bytes = 0;
  fi_status st;
  if (!decode)
    st = fi_prefill_workspace_size(ctx, p, cap_batch, round_up_pow2(rows, 64), &bytes);
  else if (p->fixed_split_size > 0) {
    int64_t cap_kv = 4096;
    while (cap_kv < kv_tokens) cap_kv *= 2;
    st = fi_decode_workspace_size_kv(ctx, p, cap_batch, cap_kv, &bytes);
  }
  else
    st = fi_decode_workspace_size(ctx, p, cap_batch, &bytes);
  if (st == FI_SUCCESS && (!r->workspace || r->workspace_bytes < bytes))
    (void)ensure_workspace(op, ctx, r, bytes);
}

/* The ranks agreed that every workspace must hold plan->num_partial_rows (their plans all
 * failed with FI_ERROR_WORKSPACE_TOO_SMALL alike): grows this rank's to that (a power of
 * two) and returns 1 to plan again, 0 when it cannot. */
static int grow_sharded_workspace(const char *op, fi_context *ctx, plan_record *r,
                                  const fi_attention_params *p, fi_status st) {
  if (st != FI_ERROR_WORKSPACE_TOO_SMALL || r->plan.num_partial_rows <= 0) return 0;
  size_t bytes = 0;
  if (fi_sharded_workspace_size(ctx, p, round_up_pow2(r->plan.num_partial_rows, 64), &bytes) !=
      FI_SUCCESS)
    return 0;
  return ensure_workspace(op, ctx, r, bytes);
}

static void decode_plan_host(fi_memref *slot, fi_memref *indptr, fi_memref *indices,
                             fi_memref *last, int64_t num_pages, int32_t layout,
                             int32_t qo_heads, int32_t kv_heads, int32_t head_dim,
                             int32_t page_size, int32_t q_dtype, int32_t kv_dtype,
                             int32_t mask_mode, int32_t q_tile, int32_t kv_tile,
                             int32_t split_kv, int32_t cores, int32_t kv_shards,
                             int32_t fixed_split_size) {
  const char *op = "fi.decode_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || refuse_host_plan_in_capture(op, ctx) || !batch_of(op, "kv_indptr", indptr, &batch))
    return;
  fi_page_table pages;
  if (!page_table_of(op, indptr, indices, last, batch, "kv_indptr", &pages) ||
      !host_page_table(op, ctx, &pages))
    return;
  r->on_device = 0;
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  p.kv_shards = kv_shards;
  p.fixed_split_size = fixed_split_size;
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  r->valid = 0;
  fi_status st;
  if (kv_shards > 0) {
    const int64_t kv_tokens = (int64_t)pages.indptr[batch] * page_size;
    prepare_sharded_workspace(op, ctx, r, &p, 1, batch, batch, kv_tokens);
    st = fi_decode_plan(ctx, &p, batch, &pages, (int32_t)num_pages, tiles, r->workspace,
                        r->workspace_bytes, &r->plan);
    if (grow_sharded_workspace(op, ctx, r, &p, st))
      st = fi_decode_plan(ctx, &p, batch, &pages, (int32_t)num_pages, tiles, r->workspace,
                          r->workspace_bytes, &r->plan);
  } else {
    if (!prepare_workspace(op, ctx, r, &p, 1, batch, batch)) return;
    st = fi_decode_plan(ctx, &p, batch, &pages, (int32_t)num_pages, tiles, r->workspace,
                        r->workspace_bytes, &r->plan);
  }
  if (plan_failed(op, ctx, r, st)) return;
  r->layout = (fi_kv_layout)layout;
  r->valid = 1;
  log_plan(&r->plan);
}

void _mlir_ciface_fi_rt_decode_plan(fi_memref *slot, fi_memref *indptr, fi_memref *indices,
                                    fi_memref *last, int64_t num_pages, int32_t layout,
                                    int32_t qo_heads, int32_t kv_heads, int32_t head_dim,
                                    int32_t page_size, int32_t q_dtype, int32_t kv_dtype,
                                    int32_t mask_mode, int32_t q_tile, int32_t kv_tile,
                                    int32_t split_kv, int32_t cores) {
  decode_plan_host(slot, indptr, indices, last, num_pages, layout, qo_heads, kv_heads, head_dim,
                   page_size, q_dtype, kv_dtype, mask_mode, q_tile, kv_tile, split_kv, cores, 0,
                   0);
}

void _mlir_ciface_fi_rt_decode_plan_sharded(
    fi_memref *slot, fi_memref *indptr, fi_memref *indices, fi_memref *last, int64_t num_pages,
    int32_t layout, int32_t qo_heads, int32_t kv_heads, int32_t head_dim, int32_t page_size,
    int32_t q_dtype, int32_t kv_dtype, int32_t mask_mode, int32_t q_tile, int32_t kv_tile,
    int32_t split_kv, int32_t cores, int32_t ranks, int32_t split_size) {
  decode_plan_host(slot, indptr, indices, last, num_pages, layout, qo_heads, kv_heads, head_dim,
                   page_size, q_dtype, kv_dtype, mask_mode, q_tile, kv_tile, split_kv, cores,
                   ranks, split_size);
}

/* The mask a plan step validates: its indptr (segment sizes). The plan op has no bits
 * (NULL: the plan records no per-row extents; a CUDA run computes them on the device from
 * the run's bits); they are checked at run. *out is NULL unless the mask mode is custom.
 * Returns 0 after reporting an error. */
static int plan_mask(const char *op, int32_t mask_mode, fi_memref *mask_indptr,
                     fi_custom_mask *mask, const fi_custom_mask **out) {
  mask->bits = NULL;
  mask->indptr = NULL;
  *out = NULL;
  if (mask_mode != FI_MASK_CUSTOM) return 1;
  mask->indptr = array_of(op, "mask_indptr", mask_indptr, 4);
  if (!mask->indptr) return 0;
  *out = mask;
  return 1;
}

/* A paged prefill plan made on the host; kv_shards / fixed_split_size as in
 * decode_plan_host. */
static void paged_prefill_plan_host(
    fi_memref *slot, fi_memref *qo_indptr, fi_memref *indptr, fi_memref *indices,
    fi_memref *last, fi_memref *mask_indptr, int64_t num_pages, int32_t layout,
    int32_t qo_heads, int32_t kv_heads, int32_t head_dim, int32_t page_size, int32_t q_dtype,
    int32_t kv_dtype, int32_t mask_mode, int32_t q_tile, int32_t kv_tile, int32_t split_kv,
    int32_t cores, int32_t kv_shards, int32_t fixed_split_size) {
  const char *op = "fi.paged_prefill_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || refuse_host_plan_in_capture(op, ctx) || !batch_of(op, "qo_indptr", qo_indptr, &batch))
    return;
  const int32_t *qo = array_of(op, "qo_indptr", qo_indptr, 4);
  fi_page_table pages;
  if (!qo || !page_table_of(op, indptr, indices, last, batch, "qo_indptr", &pages) ||
      !host_readable(op, ctx, "qo_indptr", qo) || !host_page_table(op, ctx, &pages))
    return;
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  p.kv_shards = kv_shards;
  p.fixed_split_size = fixed_split_size;
  fi_custom_mask mask;
  const fi_custom_mask *maskp;
  if (!plan_mask(op, mask_mode, mask_indptr, &mask, &maskp)) return;
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  r->valid = 0;
  int64_t rows = qo[batch];
  fi_status st;
  if (kv_shards > 0) {
    prepare_sharded_workspace(op, ctx, r, &p, 0, batch, rows, 0);
    st = fi_paged_prefill_plan(ctx, &p, batch, qo, &pages, (int32_t)num_pages, maskp, tiles,
                               r->workspace, r->workspace_bytes, &r->plan);
    if (grow_sharded_workspace(op, ctx, r, &p, st))
      st = fi_paged_prefill_plan(ctx, &p, batch, qo, &pages, (int32_t)num_pages, maskp, tiles,
                                 r->workspace, r->workspace_bytes, &r->plan);
  } else {
    if (!prepare_workspace(op, ctx, r, &p, 0, batch, rows)) return;
    st = fi_paged_prefill_plan(ctx, &p, batch, qo, &pages, (int32_t)num_pages, maskp, tiles,
                               r->workspace, r->workspace_bytes, &r->plan);
  }
  if (plan_failed(op, ctx, r, st)) return;
  r->layout = (fi_kv_layout)layout;
  r->valid = 1;
  log_plan(&r->plan);
}

void _mlir_ciface_fi_rt_paged_prefill_plan(
    fi_memref *slot, fi_memref *qo_indptr, fi_memref *indptr, fi_memref *indices,
    fi_memref *last, fi_memref *mask_indptr, int64_t num_pages, int32_t layout,
    int32_t qo_heads, int32_t kv_heads, int32_t head_dim, int32_t page_size, int32_t q_dtype,
    int32_t kv_dtype, int32_t mask_mode, int32_t q_tile, int32_t kv_tile, int32_t split_kv,
    int32_t cores) {
  paged_prefill_plan_host(slot, qo_indptr, indptr, indices, last, mask_indptr, num_pages, layout,
                          qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode,
                          q_tile, kv_tile, split_kv, cores, 0, 0);
}

void _mlir_ciface_fi_rt_paged_prefill_plan_sharded(
    fi_memref *slot, fi_memref *qo_indptr, fi_memref *indptr, fi_memref *indices,
    fi_memref *last, fi_memref *mask_indptr, int64_t num_pages, int32_t layout,
    int32_t qo_heads, int32_t kv_heads, int32_t head_dim, int32_t page_size, int32_t q_dtype,
    int32_t kv_dtype, int32_t mask_mode, int32_t q_tile, int32_t kv_tile, int32_t split_kv,
    int32_t cores, int32_t ranks, int32_t split_size) {
  paged_prefill_plan_host(slot, qo_indptr, indptr, indices, last, mask_indptr, num_pages, layout,
                          qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode,
                          q_tile, kv_tile, split_kv, cores, ranks, split_size);
}

void _mlir_ciface_fi_rt_ragged_prefill_plan(fi_memref *slot, fi_memref *qo_indptr,
                                            fi_memref *kv_indptr, fi_memref *mask_indptr,
                                            int32_t qo_heads, int32_t kv_heads,
                                            int32_t head_dim, int32_t page_size,
                                            int32_t q_dtype, int32_t kv_dtype,
                                            int32_t mask_mode, int32_t q_tile,
                                            int32_t kv_tile, int32_t split_kv, int32_t cores) {
  const char *op = "fi.ragged_prefill_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || refuse_host_plan_in_capture(op, ctx) || !batch_of(op, "qo_indptr", qo_indptr, &batch))
    return;
  const int32_t *qo = array_of(op, "qo_indptr", qo_indptr, 4);
  const int32_t *kv = array_of(op, "kv_indptr", kv_indptr, 4);
  if (!qo || !kv || !host_readable(op, ctx, "qo_indptr", qo) ||
      !host_readable(op, ctx, "kv_indptr", kv))
    return;
  if (length_of(kv_indptr) != batch + 1) {
    report(op, FI_ERROR_INVALID_ARGUMENT,
           "kv_indptr and qo_indptr must have the same length (batch + 1)");
    return;
  }
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  fi_custom_mask mask;
  const fi_custom_mask *maskp;
  if (!plan_mask(op, mask_mode, mask_indptr, &mask, &maskp)) return;
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  r->valid = 0;
  if (!prepare_workspace(op, ctx, r, &p, 0, batch, qo[batch])) return;
  if (plan_failed(op, ctx, r, fi_ragged_prefill_plan(ctx, &p, batch, qo, kv, maskp, tiles,
                                             r->workspace, r->workspace_bytes, &r->plan)))
    return;
  r->valid = 1;
  log_plan(&r->plan);
}

/* page_table_of's batch for block-sparse attention over a paged cache: one sequence. */
static const char kBsrOneSequence[] = "kv_indptr: block-sparse attention pages one sequence";

/* A BSR matrix from its memrefs, with the lengths the runtime cannot see checked here:
 * indptr holds one element per block row plus one (ceil(m / block_rows) + 1, or with
 * variable blocks row_offsets' length) and indices at least indptr's last. Empty offset
 * memrefs: uniform blocks (the lowering passes empty ones when the op has none). With
 * `read` 0 (a CUDA run) the arrays are only recorded, not read. */
static int bsr_of(const char *op, fi_context *ctx, fi_memref *indptr, fi_memref *indices,
                  fi_memref *row_off, fi_memref *col_off, int64_t m, int32_t block_rows,
                  int32_t block_cols, int read, fi_bsr_matrix *bsr) {
  memset(bsr, 0, sizeof *bsr);
  bsr->block_rows = block_rows;
  bsr->block_cols = block_cols;
  bsr->indptr = array_of(op, "bsr_indptr", indptr, 4);
  bsr->indices = array_of(op, "bsr_indices", indices, 4);
  if (length_of(row_off) > 0 || length_of(col_off) > 0) {
    bsr->row_offsets = array_of(op, "row_offsets", row_off, 4);
    bsr->col_offsets = array_of(op, "col_offsets", col_off, 4);
    if (!bsr->row_offsets || !bsr->col_offsets) return 0;
    bsr->num_block_rows = (int32_t)(length_of(row_off) - 1);
    bsr->num_block_cols = (int32_t)(length_of(col_off) - 1);
  }
  if (!bsr->indptr || !bsr->indices) return 0;
  if (!read) return 1;
  if (!host_readable(op, ctx, "bsr_indptr", bsr->indptr) ||
      !host_readable(op, ctx, "bsr_indices", bsr->indices) ||
      (bsr->row_offsets && (!host_readable(op, ctx, "row_offsets", bsr->row_offsets) ||
                            !host_readable(op, ctx, "col_offsets", bsr->col_offsets))))
    return 0;
  char msg[240];
  if (bsr->row_offsets && (length_of(row_off) < 1 || length_of(col_off) < 1 ||
                           length_of(row_off) - 1 > INT32_MAX ||
                           length_of(col_off) - 1 > INT32_MAX)) {
    snprintf(msg, sizeof msg, "row_offsets has %lld and col_offsets %lld elements: each needs "
             "one per block plus one (at least 1, below 2^31)", (long long)length_of(row_off),
             (long long)length_of(col_off));
    report(op, FI_ERROR_INVALID_ARGUMENT, msg);
    return 0;
  }
  const int64_t rows = bsr->row_offsets ? bsr->num_block_rows
                       : block_rows > 0     ? (m + block_rows - 1) / block_rows
                                            : 0;
  if (length_of(indptr) != rows + 1) {
    if (bsr->row_offsets)
      snprintf(msg, sizeof msg, "bsr_indptr has %lld elements but row_offsets has %lld: both "
               "are [block rows + 1]", (long long)length_of(indptr), (long long)(rows + 1));
    else
      snprintf(msg, sizeof msg, "bsr_indptr has %lld elements but ceil(M / block_rows) + 1 = "
               "%lld (M = %lld query rows, block_rows = %d)", (long long)length_of(indptr),
               (long long)(rows + 1), (long long)m, (int)block_rows);
    report(op, FI_ERROR_INVALID_ARGUMENT, msg);
    return 0;
  }
  if (bsr->indptr[rows] < 0 || length_of(indices) < bsr->indptr[rows]) {
    snprintf(msg, sizeof msg, "bsr_indptr[%lld] = %d blocks but bsr_indices has %lld elements",
             (long long)rows, (int)bsr->indptr[rows], (long long)length_of(indices));
    report(op, FI_ERROR_INVALID_ARGUMENT, msg);
    return 0;
  }
  return 1;
}

/* Both block-sparse plan forms; pages NULL for contiguous K/V (n keys). */
static void block_sparse_plan(fi_memref *slot, fi_memref *indptr, fi_memref *indices,
                              fi_memref *row_offsets, fi_memref *col_offsets,
                              fi_memref *const *pages, int64_t num_pages, int64_t m, int64_t n,
                              int32_t block_rows, int32_t block_cols, int32_t qo_heads,
                              int32_t kv_heads, int32_t head_dim, int32_t page_size,
                              int32_t q_dtype, int32_t kv_dtype, int32_t mask_mode,
                              int32_t q_tile, int32_t kv_tile, int32_t split_kv, int32_t cores) {
  const char *op = "fi.block_sparse_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  fi_bsr_matrix bsr;
  if (!r || refuse_host_plan_in_capture(op, ctx) ||
      !bsr_of(op, ctx, indptr, indices, row_offsets, col_offsets, m, block_rows, block_cols,
              1, &bsr))
    return;
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  fi_page_table pt = {NULL, NULL, NULL};
  if (pages) {
    if (!page_table_of(op, pages[0], pages[1], pages[2], 1, kBsrOneSequence, &pt) ||
        !host_page_table(op, ctx, &pt))
      return;
    if (num_pages > INT32_MAX) {
      report(op, FI_ERROR_INVALID_ARGUMENT, "num_pages is 2^31 or more: at most 2^31 - 1");
      return;
    }
    /* N: the page table's keys (fi_block_sparse_paged_plan checks the table) */
    const int32_t used = pt.indptr[1] - pt.indptr[0];
    n = used > 0 ? (int64_t)(used - 1) * page_size + pt.last_page_len[0] : 0;
    if (n < 0) n = 0;
  }
  r->valid = 0;
  /* Sized for the shapes rounded up (the bound grows with M and N), kept while it fits. */
  size_t bytes = 0;
  if (failed(op, ctx, fi_block_sparse_workspace_size(ctx, &p, round_up_pow2(m, 64),
                                                     round_up_pow2(n, 64), block_rows,
                                                     block_cols, &bytes)) ||
      !ensure_workspace(op, ctx, r, bytes))
    return;
  const fi_status st =
      pages ? fi_block_sparse_paged_plan(ctx, &p, m, &pt, (int32_t)num_pages, &bsr, tiles,
                                         r->workspace, r->workspace_bytes, &r->plan)
            : fi_block_sparse_plan(ctx, &p, m, n, &bsr, tiles, r->workspace,
                                   r->workspace_bytes, &r->plan);
  if (plan_failed(op, ctx, r, st)) return;
  r->valid = 1;
  log_plan(&r->plan);
}

void _mlir_ciface_fi_rt_block_sparse_plan(fi_memref *slot, fi_memref *indptr,
                                          fi_memref *indices, fi_memref *row_offsets,
                                          fi_memref *col_offsets, int64_t m, int64_t n,
                                          int32_t block_rows, int32_t block_cols,
                                          int32_t qo_heads, int32_t kv_heads, int32_t head_dim,
                                          int32_t page_size, int32_t q_dtype, int32_t kv_dtype,
                                          int32_t mask_mode, int32_t q_tile, int32_t kv_tile,
                                          int32_t split_kv, int32_t cores) {
  block_sparse_plan(slot, indptr, indices, row_offsets, col_offsets, NULL, 0, m, n, block_rows,
                    block_cols, qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype,
                    mask_mode, q_tile, kv_tile, split_kv, cores);
}

void _mlir_ciface_fi_rt_block_sparse_paged_plan(
    fi_memref *slot, fi_memref *indptr, fi_memref *indices, fi_memref *row_offsets,
    fi_memref *col_offsets, fi_memref *kv_indptr, fi_memref *kv_indices, fi_memref *kv_last,
    int64_t num_pages, int64_t m, int32_t block_rows, int32_t block_cols, int32_t qo_heads,
    int32_t kv_heads, int32_t head_dim, int32_t page_size, int32_t q_dtype, int32_t kv_dtype,
    int32_t mask_mode, int32_t q_tile, int32_t kv_tile, int32_t split_kv, int32_t cores) {
  fi_memref *const pages[3] = {kv_indptr, kv_indices, kv_last};
  block_sparse_plan(slot, indptr, indices, row_offsets, col_offsets, pages, num_pages, m, 0,
                    block_rows, block_cols, qo_heads, kv_heads, head_dim, page_size, q_dtype,
                    kv_dtype, mask_mode, q_tile, kv_tile, split_kv, cores);
}

void _mlir_ciface_fi_rt_append_plan(fi_memref *slot, fi_memref *append_indptr,
                                    fi_memref *indptr, fi_memref *indices, fi_memref *last,
                                    int64_t num_pages, int32_t page_size) {
  const char *op = "fi.append_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || refuse_host_plan_in_capture(op, ctx) ||
      !batch_of(op, "append_indptr", append_indptr, &batch))
    return;
  const int32_t *ap = array_of(op, "append_indptr", append_indptr, 4);
  fi_page_table pages;
  if (!ap || !page_table_of(op, indptr, indices, last, batch, "append_indptr", &pages)) return;
  if (!host_readable(op, ctx, "append_indptr", ap) || !host_page_table(op, ctx, &pages)) return;
  r->valid = 0;
  r->on_device = 0;
  if (plan_failed(op, ctx, r, fi_append_paged_kv_plan(ctx, batch, page_size, ap, &pages,
                                              (int32_t)num_pages, &r->plan)))
    return;
  r->valid = 1;
  log_plan(&r->plan);
}

/* ------------------------------------------------------- plans made on the device -- */

/* 1 after reporting if the context's stream is being captured into a CUDA graph: a plan
 * made on the host reads the page table once, at capture time, so every replay would run
 * the partition of the captured step. */
static int refuse_host_plan_in_capture(const char *op, fi_context *ctx) {
#ifdef FI_HAVE_CUDA
  if (!is_cuda(ctx)) return 0;
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (capturing || (cudaStreamIsCapturing((cudaStream_t)ctx->stream, &cs) == cudaSuccess &&
                    cs != cudaStreamCaptureStatusNone)) {
    report(op, FI_ERROR_INVALID_ARGUMENT,
           "a plan made on the host cannot be captured in a CUDA graph (it reads the index "
           "arrays once, at capture, so replays would use stale lengths): give the plan op "
           "the `on_device` attribute (any plan op but a custom-mask prefill), or make the plan "
           "outside the captured function");
    return 1;
  }
#else
  (void)op, (void)ctx;
#endif
  return 0;
}

/* 1 if `p` can be read by the CUDA kernels, else 0 after reporting: plain (pageable) host
 * memory is the mistake this catches. Host backend: always 1. */
static int require_device_memory(const char *op, fi_context *ctx, const char *name,
                                 const void *p) {
#ifdef FI_HAVE_CUDA
  if (!is_cuda(ctx) || !p || memory_type_of(p) != cudaMemoryTypeUnregistered) return 1;
  char msg[320];
  snprintf(msg, sizeof(msg), "%s is host memory that the GPU cannot read (%p): pass device "
           "memory (cudaMalloc, the embedder's allocator, fi_rt_alloc) on the CUDA backend",
           name, p);
  report(op, FI_ERROR_INVALID_ARGUMENT, msg);
  return 0;
#else
  (void)op, (void)ctx, (void)name, (void)p;
  return 1;
#endif
}

/* 1 if the host can read `p`, else 0 after reporting: a plan made on the host reads its
 * arrays on the CPU, and device memory there would fault. Host backend: always 1. */
static int host_readable(const char *op, fi_context *ctx, const char *name, const void *p) {
#ifdef FI_HAVE_CUDA
  if (!is_cuda(ctx) || !p || memory_type_of(p) != cudaMemoryTypeDevice) return 1;
  char msg[320];
  snprintf(msg, sizeof(msg), "%s is device memory, but a plan made on the host reads it on "
           "the CPU: give the plan op `on_device` (any plan op but a custom-mask prefill) or pass "
           "the index arrays in host (or managed) memory", name);
  report(op, FI_ERROR_INVALID_ARGUMENT, msg);
  return 0;
#else
  (void)op, (void)ctx, (void)name, (void)p;
  return 1;
#endif
}

/* The graph being captured keeps the record's workspace at its address (see
 * ensure_workspace). */
static void note_capture_use(plan_record *r);

/* Pinned host memory the device planner's verdict is copied into (CUDA). */
static int ensure_status(const char *op, fi_context *ctx, plan_record *r, int device_too) {
#ifdef FI_HAVE_CUDA
  if (!is_cuda(ctx)) return 1;
  if (!r->host_status) {
    if (cudaHostAlloc((void **)&r->host_status, 4 * sizeof(int32_t), cudaHostAllocMapped) !=
            cudaSuccess ||
        cudaHostGetDevicePointer((void **)&r->status_mirror, r->host_status, 0) != cudaSuccess) {
      r->host_status = r->status_mirror = NULL;
      report(op, FI_ERROR_OUT_OF_MEMORY, "could not allocate the plan's mapped status word");
      return 0;
    }
    /* Zeroed once: the kernels write it only on error, fi_rt_check clears what it reported. */
    memset(r->host_status, 0, 4 * sizeof(int32_t));
  }
  if (device_too && !r->device_status) {
    if (cudaMalloc((void **)&r->device_status, 4 * sizeof(int32_t)) != cudaSuccess ||
        cudaMemset(r->device_status, 0, 4 * sizeof(int32_t)) != cudaSuccess) {
      r->device_status = NULL;
      report(op, FI_ERROR_OUT_OF_MEMORY, "could not allocate the plan's device status word");
      return 0;
    }
  }
#else
  (void)op, (void)ctx, (void)r, (void)device_too;
#endif
  return 1;
}

/* What every plan made on the device checks first: tiles chosen at compile time, and
 * index arrays (arrays[i], named names[i]) the GPU can read. 0 after reporting. */
static int device_plan_begin(const char *op, fi_context *ctx, plan_record *r, int32_t q_tile,
                             const void *const *arrays, const char *const *names, int n) {
  r->valid = 0;
  if (q_tile == 0) {
    report(op, FI_ERROR_INVALID_ARGUMENT,
           "a plan made on the device needs its tiles at compile time (it never sees the "
           "lengths on the host): run --fi-select-tiles before lowering (fi-to-llvm does)");
    return 0;
  }
  for (int i = 0; i < n; ++i)
    if (!require_device_memory(op, ctx, names[i], arrays[i])) return 0;
  return 1;
}

/* ... and last, given the plan call's status (made with the record's status mirror armed:
 * the planning kernel writes an error verdict there for fi_rt_check): the record valid. */
static void device_plan_finish(const char *op, fi_context *ctx, plan_record *r, fi_status s,
                               int32_t layout) {
  ctx->plan_status_mirror = NULL;
  if (plan_failed(op, ctx, r, s)) return;
  r->on_device = is_cuda(ctx);
  r->layout = (fi_kv_layout)layout;
  r->valid = 1;
  note_capture_use(r);
  log_plan(&r->plan);
}

void _mlir_ciface_fi_rt_decode_plan_device(
    fi_memref *slot, fi_memref *indptr, fi_memref *indices, fi_memref *last, int64_t num_pages,
    int32_t layout, int32_t qo_heads, int32_t kv_heads, int32_t head_dim, int32_t page_size,
    int32_t q_dtype, int32_t kv_dtype, int32_t mask_mode, int32_t q_tile, int32_t kv_tile,
    int32_t split_kv, int32_t cores) {
  const char *op = "fi.decode_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || !batch_of(op, "kv_indptr", indptr, &batch)) return;
  fi_page_table pages;
  if (!page_table_of(op, indptr, indices, last, batch, "kv_indptr", &pages)) return;
  if (!device_plan_begin(op, ctx, r, q_tile,
                         (const void *const[]){pages.indptr, pages.indices, pages.last_page_len},
                         (const char *const[]){"kv_indptr", "kv_indices", "kv_last_page_len"},
                         3))
    return;
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  if (!prepare_workspace(op, ctx, r, &p, 1, batch, batch) || !ensure_status(op, ctx, r, 0))
    return;
  ctx->plan_status_mirror = r->status_mirror;
  device_plan_finish(op, ctx, r,
                     fi_decode_plan_device(ctx, &p, batch, &pages, length_of(indices),
                                           (int32_t)num_pages, tiles, r->workspace,
                                           r->workspace_bytes, &r->plan),
                     layout);
}

void _mlir_ciface_fi_rt_paged_prefill_plan_device(
    fi_memref *slot, fi_memref *qo_indptr, fi_memref *indptr, fi_memref *indices,
    fi_memref *last, int64_t max_qo_rows, int64_t num_pages, int32_t layout,
    int32_t qo_heads, int32_t kv_heads, int32_t head_dim, int32_t page_size, int32_t q_dtype,
    int32_t kv_dtype, int32_t mask_mode, int32_t q_tile, int32_t kv_tile, int32_t split_kv,
    int32_t cores) {
  const char *op = "fi.paged_prefill_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || !batch_of(op, "qo_indptr", qo_indptr, &batch)) return;
  const int32_t *qo = array_of(op, "qo_indptr", qo_indptr, 4);
  fi_page_table pages;
  if (!qo || !page_table_of(op, indptr, indices, last, batch, "qo_indptr", &pages)) return;
  if (!device_plan_begin(op, ctx, r, q_tile,
                         (const void *const[]){qo, pages.indptr, pages.indices,
                                               pages.last_page_len},
                         (const char *const[]){"qo_indptr", "kv_indptr", "kv_indices",
                                               "kv_last_page_len"},
                         4))
    return;
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  if (!prepare_workspace(op, ctx, r, &p, 0, batch, max_qo_rows) || !ensure_status(op, ctx, r, 0))
    return;
  ctx->plan_status_mirror = r->status_mirror;
  device_plan_finish(op, ctx, r,
                     fi_paged_prefill_plan_device(ctx, &p, batch, qo, max_qo_rows, &pages,
                                                  length_of(indices), (int32_t)num_pages, tiles,
                                                  r->workspace, r->workspace_bytes, &r->plan),
                     layout);
}

void _mlir_ciface_fi_rt_ragged_prefill_plan_device(
    fi_memref *slot, fi_memref *qo_indptr, fi_memref *kv_indptr, int64_t max_qo_rows,
    int64_t max_kv_rows, int32_t qo_heads, int32_t kv_heads, int32_t head_dim,
    int32_t page_size, int32_t q_dtype, int32_t kv_dtype, int32_t mask_mode, int32_t q_tile,
    int32_t kv_tile, int32_t split_kv, int32_t cores) {
  const char *op = "fi.ragged_prefill_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || !batch_of(op, "qo_indptr", qo_indptr, &batch)) return;
  const int32_t *qo = array_of(op, "qo_indptr", qo_indptr, 4);
  const int32_t *kv = array_of(op, "kv_indptr", kv_indptr, 4);
  if (!qo || !kv) return;
  if (length_of(kv_indptr) != batch + 1) {
    report(op, FI_ERROR_INVALID_ARGUMENT,
           "kv_indptr and qo_indptr must have the same length (batch + 1)");
    return;
  }
  if (!device_plan_begin(op, ctx, r, q_tile, (const void *const[]){qo, kv},
                         (const char *const[]){"qo_indptr", "kv_indptr"}, 2))
    return;
  fi_attention_params p =
      shape_params(qo_heads, kv_heads, head_dim, page_size, q_dtype, kv_dtype, mask_mode);
  fi_tiles t;
  const fi_tiles *tiles = tiles_or_null(&t, q_tile, kv_tile, split_kv, cores);
  if (!prepare_workspace(op, ctx, r, &p, 0, batch, max_qo_rows) || !ensure_status(op, ctx, r, 0))
    return;
  ctx->plan_status_mirror = r->status_mirror;
  device_plan_finish(op, ctx, r,
                     fi_ragged_prefill_plan_device(ctx, &p, batch, qo, max_qo_rows, kv,
                                                   max_kv_rows, tiles, r->workspace,
                                                   r->workspace_bytes, &r->plan),
                     0);
}

void _mlir_ciface_fi_rt_append_plan_device(fi_memref *slot, fi_memref *append_indptr,
                                           fi_memref *indptr, fi_memref *indices,
                                           fi_memref *last, int64_t num_pages,
                                           int32_t page_size) {
  const char *op = "fi.append_plan";
  fi_context *ctx = context_or_report(op);
  plan_record *r = ctx ? record_of(op, slot, 1) : NULL;
  int32_t batch;
  if (!r || !batch_of(op, "append_indptr", append_indptr, &batch)) return;
  const int32_t *ap = array_of(op, "append_indptr", append_indptr, 4);
  fi_page_table pages;
  if (!ap || !page_table_of(op, indptr, indices, last, batch, "append_indptr", &pages)) return;
  r->valid = 0;
  if (!is_cuda(ctx)) { /* the host backend plans (and validates) on the host as always */
    if (plan_failed(op, ctx, r, fi_append_paged_kv_plan(ctx, batch, page_size, ap, &pages,
                                                        (int32_t)num_pages, &r->plan)))
      return;
  } else {
    if (!ensure_status(op, ctx, r, 1)) return;
    if (!require_device_memory(op, ctx, "append_indptr", ap) ||
        !require_device_memory(op, ctx, "kv_indptr", pages.indptr) ||
        !require_device_memory(op, ctx, "kv_indices", pages.indices) ||
        !require_device_memory(op, ctx, "kv_last_page_len", pages.last_page_len))
      return;
    ctx->plan_status_mirror = r->status_mirror;
    fi_status st = fi_append_paged_kv_plan_device(ctx, batch, page_size, (int32_t)num_pages,
                                                  length_of(indices), r->device_status,
                                                  &r->plan);
    ctx->plan_status_mirror = NULL;
    if (plan_failed(op, ctx, r, st)) return;
    r->on_device = 1;
  }
  r->valid = 1;
  log_plan(&r->plan);
}

/* -------------------------------------------------------------------- runs -------- */

/* The per-op attention attributes, applied to the run's copy of the plan. `variant` is
 * the op's score_mod / mask_mod (functions of the compiled module, each possibly NULL)
 * and its captured values; the run's plan points at it, so the attrs live in the adapter's
 * frame for the whole run. */
typedef struct attention_attrs {
  int32_t pos_encoding;
  float sm_scale, logits_soft_cap;
  int32_t window_left;
  float rope_scale, rope_theta, k_scale, v_scale, q_scale;
  fi_variant variant;
} attention_attrs;

/* The scalar tail of every attention run adapter, in the order LowerToRuntime.cpp passes
 * it: the attributes, then the variant's three function pointers (score_mod, mask_mod and
 * the mask's tile classifier; NULL: none), the pointer to the op's captured values (NULL
 * when it captures nothing) and their bytes, and the variant's device image
 * (backend=cuda: the cubin fi-to-llvm made; NULL otherwise). */
#define ATTN_PARAMS                                                                        \
  int32_t pos_encoding, float sm_scale, float logits_soft_cap, int32_t window_left,        \
      float rope_scale, float rope_theta, float k_scale, float v_scale, float q_scale,     \
      void *score_mod,                                                                     \
      void *mask_mod, void *mask_tile, const void *captures, int64_t captures_bytes,       \
      const void *device_image
/* The function pointers arrive as void * (an LLVM ptr); the round trip through uintptr_t
 * back to the function types is the implementation-defined conversion every platform fi
 * runs on supports (ISO C has no direct object-to-function pointer cast). */
#define ATTN_ARGS                                                                          \
  (attention_attrs) {                                                                      \
    pos_encoding, sm_scale, logits_soft_cap, window_left, rope_scale, rope_theta, k_scale, \
        v_scale, q_scale,                                                                  \
        {(fi_score_mod_fn)(uintptr_t)score_mod, (fi_mask_mod_fn)(uintptr_t)mask_mod,       \
         captures, (size_t)captures_bytes, device_image,                                   \
         (fi_mask_tile_fn)(uintptr_t)mask_tile}                                            \
  }

/* The run's copy of the slot's plan with the op's attributes; 0 after reporting if the
 * plan is missing or was made for another problem. */
static int run_plan(const char *op, fi_context *ctx, const fi_memref *slot,
                    fi_op_family family, fi_dtype q_dtype, fi_dtype kv_dtype,
                    const attention_attrs *a, fi_plan *out) {
  plan_record *r = record_of(op, slot, 0);
  if (!r) return 0;
  if (!r->valid) {
    char msg[320];
    snprintf(msg, sizeof(msg), "its plan failed: %s", r->failure_message);
    report(op, r->failure != FI_SUCCESS ? r->failure : FI_ERROR_PLAN_MISMATCH, msg);
    return 0;
  }
  if (r->plan.family != family) {
    report(op, FI_ERROR_PLAN_MISMATCH, "the plan was made for another op family");
    return 0;
  }
  *out = r->plan;
  if (a) {
    if (out->params.q_dtype != q_dtype || out->params.kv_dtype != kv_dtype) {
      char msg[160];
      snprintf(msg, sizeof(msg), "the plan was made for q %s / kv %s but the op has %s / %s",
               fi_dtype_name(out->params.q_dtype), fi_dtype_name(out->params.kv_dtype),
               fi_dtype_name(q_dtype), fi_dtype_name(kv_dtype));
      report(op, FI_ERROR_PLAN_MISMATCH, msg);
      return 0;
    }
    out->params.pos_encoding = (fi_pos_encoding)a->pos_encoding;
    out->params.sm_scale = a->sm_scale;
    out->params.logits_soft_cap = a->logits_soft_cap;
    out->params.window_left = a->window_left;
    out->params.rope_scale = a->rope_scale;
    out->params.rope_theta = a->rope_theta;
    out->params.k_scale = a->k_scale;
    out->params.q_scale = a->q_scale;
    out->params.v_scale = a->v_scale;
    /* A variant with neither function is none (a plain op); else the run's plan points at
     * the caller's attrs, which outlive the run. On CUDA the device image runs it (paged
     * and ragged prefill; other runs are refused). In a captured graph the scalar captures
     * are frozen in the kernel's parameters, captured tensors are read at replay. */
    out->params.variant = a->variant.score_mod || a->variant.mask_mod ? &a->variant : NULL;
  }
  (void)ctx;
  return 1;
}

/* The CUDA kernels read every buffer of a run: the first runs of each plan and every run
 * in a graph capture check that none is plain host memory (a later run with other
 * pointers is not checked, to keep steady-state steps free of driver queries). */
enum { RUNS_CHECKED = 4 };
static int run_buffers_on_device(const char *op, fi_context *ctx, const fi_memref *slot,
                                 const void *const *ptrs, const char *const *names, int n) {
  if (!is_cuda(ctx)) return 1;
  plan_record *r = record_of(op, slot, 0);
  if (!r) return 0;
  if (!capturing && r->runs_checked >= RUNS_CHECKED) return 1;
  for (int i = 0; i < n; ++i)
    if (!require_device_memory(op, ctx, names[i], ptrs[i])) return 0;
  ++r->runs_checked;
  return 1;
}

static void decode_run(fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v,
                       fi_memref *indptr, fi_memref *indices, fi_memref *last, fi_memref *o,
                       fi_memref *lse, int32_t has_lse, int32_t layout, attention_attrs a,
                       fi_dtype qd, fi_dtype kd) {
  const char *op = "fi.paged_decode";
  fi_context *ctx = context_or_report(op);
  fi_plan plan;
  if (!ctx || !run_plan(op, ctx, slot, FI_OP_DECODE, qd, kd, &a, &plan)) return;
  fi_tensor tq = tensor_of(q, 3, qd), to = tensor_of(o, 3, qd);
  fi_tensor tl = tensor_of(lse, 2, FI_DTYPE_F32);
  fi_paged_kv_cache kv = {tensor_of(k, 4, kd), tensor_of(v, 4, kd), (fi_kv_layout)layout};
  fi_page_table pages = {array_of(op, "kv_indptr", indptr, 4),
                         array_of(op, "kv_indices", indices, 4),
                         array_of(op, "kv_last_page_len", last, 4)};
  if (!pages.indptr || !pages.indices || !pages.last_page_len ||
      !run_buffers_on_device(op, ctx, slot, (const void *const[]){tq.data, kv.k.data,
                             kv.v.data, pages.indptr, pages.indices, pages.last_page_len,
                             to.data, has_lse ? tl.data : NULL},
                             (const char *const[]){"q", "k_cache", "v_cache", "kv_indptr",
                             "kv_indices", "kv_last_page_len", "o", "lse"}, 8)) {
    fi_plan_skip_run(ctx, &plan, FI_ERROR_INVALID_ARGUMENT); /* (sharded: tell the ranks) */
    return;
  }
  if (!failed(op, ctx, fi_decode_run(ctx, &plan, &tq, &kv, &pages, &to, has_lse ? &tl : NULL)))
    after_run(op, ctx);
}

/* The prefill stage of compiled prefill runs on CUDA (fi_context_set_prefill_stage: RoPE,
 * fp8 KV and odd page sizes on the warp-specialised kernel). Uncaptured runs share one
 * buffer, grown to the largest run's need (powers of two) and never shrunk; the runs of a
 * capture share a buffer of the graph's own (fi_rt_alloc), so that a later step's growth
 * never moves memory a graph replays. The context holds the stage only during the run. */
/* Scratch buffers of one context (found under rt_lock, then used by the one thread that
 * runs on the context): the prefill stage and merge_state's absent s_out. */
typedef struct ctx_scratch {
  fi_context *ctx;
  /* the prefill stage of runs outside a lane ([0]) and in each lane ([1], [2]: two lanes'
   * prefills may run at once) */
  void *stage[3], *merge;
  size_t stage_bytes[3], merge_bytes;
  fi_lanes *lanes; /* fi_rt_set_lanes (not owned), or NULL */
  int32_t in_lane; /* the lane compiled code entered (fi_rt_lane_enter), or 0 */
  struct ctx_scratch *next;
} ctx_scratch;
static ctx_scratch *scratches = NULL; /* (written under rt_lock) */

static ctx_scratch *scratch_of(const char *op, fi_context *ctx) {
  /* As the plan slots' chains: the list only grows at its head, readers need no lock. */
  ctx_scratch *s = __atomic_load_n(&scratches, __ATOMIC_ACQUIRE);
  while (s && s->ctx != ctx) s = s->next;
  if (!s) {
    pthread_mutex_lock(&rt_lock);
    if ((s = (ctx_scratch *)calloc(1, sizeof(ctx_scratch))) != NULL) {
      s->ctx = ctx; /* (only this context's thread could have made it) */
      s->next = scratches;
      __atomic_store_n(&scratches, s, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&rt_lock);
  }
  if (!s) report(op, FI_ERROR_OUT_OF_MEMORY, "could not allocate a scratch record");
  return s;
}

/* The record of `ctx` if it has one (never creates it). */
static ctx_scratch *existing_scratch(const fi_context *ctx) {
  ctx_scratch *s = __atomic_load_n(&scratches, __ATOMIC_ACQUIRE);
  while (s && s->ctx != ctx) s = s->next;
  return s;
}

/* ---------------------------------------------------------------- lanes ---------- */

fi_status fi_rt_set_lanes(fi_context *ctx, fi_lanes *lanes) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  ctx_scratch *s = scratch_of("fi_rt_set_lanes", ctx);
  if (!s) return FI_ERROR_OUT_OF_MEMORY;
  if (s->in_lane)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_rt_set_lanes: compiled code is inside lane %d of this context; set "
                        "the lanes between steps", s->in_lane);
  if (lanes && fi_lanes_context(lanes) != ctx)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_rt_set_lanes: the lanes were made on another context; make them "
                        "on this one (fi_lanes_create(ctx, ...))");
  if (s->lanes) {
    const fi_status st = fi_lanes_join(s->lanes);
    if (st != FI_SUCCESS) return st;
  }
  s->lanes = lanes;
  return FI_SUCCESS;
}

/* The lanes installed on `ctx` when the caller is outside them (NULL otherwise). */
static fi_lanes *lanes_outside(const fi_context *ctx) {
  const ctx_scratch *s = existing_scratch(ctx);
  return s && !s->in_lane ? s->lanes : NULL;
}

/* Work on the context's stream outside a lane comes after the lanes' pending work. */
static void lanes_join_outside(const char *op, fi_context *ctx) {
  fi_lanes *lanes = lanes_outside(ctx);
  if (lanes) failed(op, ctx, fi_lanes_join(lanes));
}

/* An allocation (and its poison) on the context's stream while lanes run: the lanes'
 * streams wait for it before their next work. */
static void lanes_after_alloc(fi_context *ctx) {
  fi_lanes *lanes = lanes_outside(ctx);
  if (lanes) failed("fi_rt_alloc", ctx, fi_lanes_fork(lanes));
}

void _mlir_ciface_fi_rt_lane_enter(int32_t lane) {
  fi_context *ctx = fi_rt_context();
  if (!ctx) {
    report("fi.lane", FI_ERROR_BACKEND_UNAVAILABLE, fi_last_error(NULL));
    return;
  }
  ctx_scratch *s = scratch_of("fi.lane", ctx);
  if (!s) return;
  if (s->lanes) {
    const fi_status st = fi_lanes_enter(s->lanes, lane);
    if (st != FI_SUCCESS) {
      report("fi.lane", st, fi_last_error(ctx));
      return;
    }
  }
  s->in_lane = lane;
}

void _mlir_ciface_fi_rt_lane_leave(void) {
  fi_context *ctx = fi_rt_context();
  ctx_scratch *s = ctx ? existing_scratch(ctx) : NULL;
  if (!s || !s->in_lane) return;
  s->in_lane = 0;
  if (s->lanes) {
    const fi_status st = fi_lanes_leave(s->lanes);
    if (st != FI_SUCCESS) report("fi.lane", st, fi_last_error(ctx));
  }
}

void _mlir_ciface_fi_rt_lanes_join(void) {
  fi_context *ctx = fi_rt_context();
  if (ctx) lanes_join_outside("fi.lane", ctx);
}

static _Thread_local void *capture_stage = NULL;
static _Thread_local size_t capture_stage_bytes = 0;
static _Thread_local long capture_seq = 0, capture_stage_seq = -1;

/* (kind: 0 ragged, 1 paged prefill, 2 paged block-sparse attention) */
static int set_prefill_stage(const char *op, fi_context *ctx, const fi_attention_params *p,
                             int kind, int64_t q_rows, int64_t kv_rows) {
  if (!is_cuda(ctx)) return 1;
  size_t need = 0;
  if (failed(op, ctx,
             kind == 2 ? fi_block_sparse_stage_size(ctx, p, kv_rows, &need)
                       : fi_prefill_stage_size(ctx, p, kind, q_rows, kv_rows, &need)))
    return 0;
  if (need == 0) return 1;
  void *buf;
  size_t bytes;
  if (capturing) {
    if (capture_stage_seq != capture_seq || capture_stage_bytes < need) {
      capture_stage = fi_rt_alloc(need);  /* reports its own failure */
      if (!capture_stage) return 0;
      capture_stage_bytes = need;
      capture_stage_seq = capture_seq;
    }
    buf = capture_stage;
    bytes = capture_stage_bytes;
  } else {
    ctx_scratch *sc = scratch_of(op, ctx);
    if (!sc) return 0;
    const int lane = sc->in_lane >= 1 && sc->in_lane <= 2 ? sc->in_lane : 0;
    if (sc->stage_bytes[lane] < need) {
      backend_free(ctx, sc->stage[lane]);
      size_t grown = 1 << 20;
      while (grown < need) grown *= 2;
      sc->stage[lane] = backend_alloc(ctx, grown);
      sc->stage_bytes[lane] = sc->stage[lane] ? grown : 0;
      if (!sc->stage[lane]) {
        char msg[160];
        snprintf(msg, sizeof(msg), "could not allocate a prefill stage of %zu bytes", grown);
        report(op, FI_ERROR_OUT_OF_MEMORY, msg);
        return 0;
      }
    }
    buf = sc->stage[lane];
    bytes = sc->stage_bytes[lane];
  }
  return !failed(op, ctx, fi_context_set_prefill_stage(ctx, buf, bytes));
}

static void clear_prefill_stage(fi_context *ctx) {
  if (is_cuda(ctx)) fi_context_set_prefill_stage(ctx, NULL, 0);
}

/* fp8 attention's per-head scale operands (q, k, v; hs NULL for other entry points, empty
 * memrefs when the op has none) onto the run's copy of its plan: the runtime reads them at
 * run (fi_attention_params.*_scale_heads). 0 (reported) on bad input. */
static int head_scales_of(const char *op, fi_context *ctx, const fi_memref *slot,
                          fi_memref *const *hs, fi_plan *plan) {
  if (!hs || length_of(hs[0]) == 0) return 1;
  static const char *const names[3] = {"q_scale_heads", "k_scale_heads", "v_scale_heads"};
  const float *ptr[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t want = i == 0 ? plan->params.num_qo_heads : plan->params.num_kv_heads;
    if (length_of(hs[i]) != want) {
      char msg[160];
      snprintf(msg, sizeof(msg), "%s has %lld entries: it needs one per %s head (%lld)",
               names[i], (long long)length_of(hs[i]), i == 0 ? "query" : "KV",
               (long long)want);
      report(op, FI_ERROR_INVALID_ARGUMENT, msg);
      return 0;
    }
    if (!(ptr[i] = array_of(op, names[i], hs[i], 4))) return 0;
  }
  if (!run_buffers_on_device(op, ctx, slot, (const void *const[]){ptr[0], ptr[1], ptr[2]},
                             names, 3))
    return 0;
  plan->params.q_scale_heads = ptr[0];
  plan->params.k_scale_heads = ptr[1];
  plan->params.v_scale_heads = ptr[2];
  return 1;
}

static void paged_prefill_run(fi_memref *slot, fi_memref *q, fi_memref *qo_indptr,
                              fi_memref *k, fi_memref *v, fi_memref *indptr,
                              fi_memref *indices, fi_memref *last, fi_memref *mask,
                              fi_memref *mask_indptr, fi_memref *o, fi_memref *lse,
                              int32_t has_lse, int32_t layout, int32_t mask_mode,
                              attention_attrs a, fi_dtype qd, fi_dtype kd,
                              fi_memref *const *hs, fi_memref *merge_v, fi_memref *merge_s) {
  const char *op = "fi.paged_prefill";
  fi_context *ctx = context_or_report(op);
  fi_plan plan;
  if (!ctx || !run_plan(op, ctx, slot, FI_OP_PAGED_PREFILL, qd, kd, &a, &plan)) return;
  if ((int32_t)plan.params.mask_mode != mask_mode) {
    fi_plan_skip_run(ctx, &plan, FI_ERROR_PLAN_MISMATCH); /* (sharded: tell the ranks) */
    report(op, FI_ERROR_PLAN_MISMATCH, "the plan was made for another mask_mode");
    return;
  }
  fi_tensor tq = tensor_of(q, 3, qd), to = tensor_of(o, 3, fi_output_dtype(&plan.params));
  fi_tensor tl = tensor_of(lse, 2, FI_DTYPE_F32);
  fi_paged_kv_cache kv = {tensor_of(k, 4, kd), tensor_of(v, 4, kd), (fi_kv_layout)layout};
  fi_page_table pages = {array_of(op, "kv_indptr", indptr, 4),
                         array_of(op, "kv_indices", indices, 4),
                         array_of(op, "kv_last_page_len", last, 4)};
  const int32_t *qo = array_of(op, "qo_indptr", qo_indptr, 4);
  fi_custom_mask cm = {NULL, NULL};
  if (mask_mode == FI_MASK_CUSTOM) {
    cm.bits = array_of(op, "mask", mask, 1);
    cm.indptr = array_of(op, "mask_indptr", mask_indptr, 4);
  }
  if (!qo || !pages.indptr || !pages.indices || !pages.last_page_len ||
      (mask_mode == FI_MASK_CUSTOM && (!cm.bits || !cm.indptr)) ||
      !head_scales_of(op, ctx, slot, hs, &plan) ||
      !set_prefill_stage(op, ctx, &plan.params, 1, tq.shape[0],
                         length_of(indices) * plan.params.page_size)) {
    fi_plan_skip_run(ctx, &plan, FI_ERROR_INVALID_ARGUMENT); /* (sharded: tell the ranks) */
    return;
  }
  const fi_custom_mask *run_mask = mask_mode == FI_MASK_CUSTOM ? &cm : NULL;
  fi_status st;
  if (merge_v) { /* (the verifier requires lse with `merge`) */
    fi_tensor tmv = tensor_of(merge_v, 3, fi_output_dtype(&plan.params));
    fi_tensor tms = tensor_of(merge_s, 2, FI_DTYPE_F32);
    st = fi_paged_prefill_run_unmerged(ctx, &plan, &tq, qo, &kv, &pages, run_mask, &to, &tl);
    if (st == FI_SUCCESS) st = fi_prefill_merge_run(ctx, &plan, &tmv, &tms, &to, &tl);
  } else {
    st = fi_paged_prefill_run(ctx, &plan, &tq, qo, &kv, &pages, run_mask, &to,
                              has_lse ? &tl : NULL);
  }
  clear_prefill_stage(ctx);
  if (!failed(op, ctx, st)) after_run(op, ctx);
}

static void ragged_prefill_run(fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v,
                               fi_memref *qo_indptr, fi_memref *kv_indptr, fi_memref *mask,
                               fi_memref *mask_indptr, fi_memref *o, fi_memref *lse,
                               int32_t has_lse, int32_t mask_mode, attention_attrs a,
                               fi_dtype qd, fi_dtype kd, fi_memref *const *hs) {
  const char *op = "fi.ragged_prefill";
  fi_context *ctx = context_or_report(op);
  fi_plan plan;
  if (!ctx || !run_plan(op, ctx, slot, FI_OP_RAGGED_PREFILL, qd, kd, &a, &plan)) return;
  if ((int32_t)plan.params.mask_mode != mask_mode) {
    report(op, FI_ERROR_PLAN_MISMATCH, "the plan was made for another mask_mode");
    return;
  }
  fi_tensor tq = tensor_of(q, 3, qd), to = tensor_of(o, 3, fi_output_dtype(&plan.params));
  fi_tensor tk = tensor_of(k, 3, kd), tv = tensor_of(v, 3, kd);
  fi_tensor tl = tensor_of(lse, 2, FI_DTYPE_F32);
  const int32_t *qo = array_of(op, "qo_indptr", qo_indptr, 4);
  const int32_t *kv = array_of(op, "kv_indptr", kv_indptr, 4);
  if (!qo || !kv) return;
  fi_custom_mask cm = {NULL, NULL};
  if (mask_mode == FI_MASK_CUSTOM) {
    cm.bits = array_of(op, "mask", mask, 1);
    cm.indptr = array_of(op, "mask_indptr", mask_indptr, 4);
    if (!cm.bits || !cm.indptr) return;
  }
  if (!head_scales_of(op, ctx, slot, hs, &plan)) return;
  if (!set_prefill_stage(op, ctx, &plan.params, 0, tq.shape[0],
                         tk.shape[0] < tv.shape[0] ? tk.shape[0] : tv.shape[0]))
    return;
  const fi_status st = fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tv, qo, kv,
                                             mask_mode == FI_MASK_CUSTOM ? &cm : NULL, &to,
                                             has_lse ? &tl : NULL);
  clear_prefill_stage(ctx);
  if (!failed(op, ctx, st)) after_run(op, ctx);
}

/* Both block-sparse run forms; pages NULL for contiguous K/V (k, v rank 3), else the
 * cache (rank 4, in `layout`) and its page table. */
static void block_sparse_run(fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v,
                             fi_memref *indptr, fi_memref *indices, fi_memref *row_offsets,
                             fi_memref *col_offsets, fi_memref *const *pages, fi_memref *o,
                             fi_memref *lse, int32_t has_lse, int32_t layout,
                             attention_attrs a, fi_dtype qd, fi_dtype kd) {
  const char *op = "fi.block_sparse_attention";
  fi_context *ctx = context_or_report(op);
  fi_plan plan;
  if (!ctx || !run_plan(op, ctx, slot, FI_OP_BLOCK_SPARSE, qd, kd, &a, &plan)) return;
  fi_tensor tq = tensor_of(q, 3, qd), to = tensor_of(o, 3, qd);
  fi_tensor tk = tensor_of(k, pages ? 4 : 3, kd), tv = tensor_of(v, pages ? 4 : 3, kd);
  fi_tensor tl = tensor_of(lse, 2, FI_DTYPE_F32);
  const uint64_t shape = plan.private_[FI_PLAN_BSR_SHAPE];
  fi_bsr_matrix bsr;
  /* (the CUDA kernel walks the plan's tiles: the run's arrays, device memory, are not read) */
  if (!bsr_of(op, ctx, indptr, indices, row_offsets, col_offsets, tq.shape[0],
              (int32_t)(shape >> 32 & 0x7fffffffu), (int32_t)(shape & 0x7fffffffu),
              !is_cuda(ctx), &bsr))
    return;
  fi_page_table pt = {NULL, NULL, NULL};
  if (pages && !page_table_of(op, pages[0], pages[1], pages[2], 1, kBsrOneSequence, &pt))
    return;
  if (!run_buffers_on_device(op, ctx, slot, (const void *const[]){tq.data, tk.data, tv.data,
                             to.data, has_lse ? tl.data : NULL},
                             (const char *const[]){"q", "k", "v", "o", "lse"}, 5))
    return;
  /* RoPE, fp8 KV and pages the kernel would load in boxes of fewer than 64 rows reach (or
   * reach faster) the CUDA kernel through the context's prefill stage. */
  const int64_t kv_rows = pages ? length_of(pages[1]) * plan.params.page_size
                                : (tk.shape[0] < tv.shape[0] ? tk.shape[0] : tv.shape[0]);
  if (!set_prefill_stage(op, ctx, &plan.params, pages != NULL ? 2 : 0, tq.shape[0], kv_rows))
    return;
  fi_status st;
  if (pages) {
    const fi_paged_kv_cache kv = {tk, tv, (fi_kv_layout)layout};
    st = fi_block_sparse_paged_run(ctx, &plan, &tq, &kv, &pt, &bsr, &to, has_lse ? &tl : NULL);
  } else {
    st = fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &bsr, &to, has_lse ? &tl : NULL);
  }
  clear_prefill_stage(ctx);
  if (!failed(op, ctx, st)) after_run(op, ctx);
}

/* s_out of fi.merge_state is optional in the dialect but required by the runtime: an
 * absent one goes to this scratch buffer (backend memory, grown, never shrunk). */

static void merge_state(fi_memref *va, fi_memref *sa, fi_memref *vb, fi_memref *sb,
                        fi_memref *vo, fi_memref *so, int32_t has_so, fi_dtype d) {
  const char *op = "fi.merge_state";
  fi_context *ctx = context_or_report(op);
  if (!ctx) return;
  fi_tensor tva = tensor_of(va, 3, d), tvb = tensor_of(vb, 3, d), tvo = tensor_of(vo, 3, d);
  fi_tensor tsa = tensor_of(sa, 2, FI_DTYPE_F32), tsb = tensor_of(sb, 2, FI_DTYPE_F32);
  fi_tensor tso = tensor_of(so, 2, FI_DTYPE_F32);
  if (!has_so && capturing) {
    /* The graph owns its own scratch: the shared one may be replaced after the capture. */
    int64_t shape[2] = {tva.shape[0], tva.shape[1]};
    void *scratch = fi_rt_alloc((size_t)(shape[0] * shape[1]) * sizeof(float));
    if (!scratch) return;
    tso = fi_tensor_contiguous(scratch, FI_DTYPE_F32, 2, shape);
  } else if (!has_so) {
    int64_t shape[2] = {tva.shape[0], tva.shape[1]};
    size_t bytes = (size_t)(shape[0] * shape[1]) * sizeof(float);
    ctx_scratch *sc = scratch_of(op, ctx);
    if (!sc) return;
    if (bytes > sc->merge_bytes || !sc->merge) {
      backend_free(ctx, sc->merge);
      sc->merge = backend_alloc(ctx, bytes);
      sc->merge_bytes = sc->merge ? bytes : 0;
      if (!sc->merge) {
        report(op, FI_ERROR_OUT_OF_MEMORY, "could not allocate the s_out scratch");
        return;
      }
    }
    tso = fi_tensor_contiguous(sc->merge, FI_DTYPE_F32, 2, shape);
  }
  if (!failed(op, ctx, fi_merge_state(ctx, &tva, &tsa, &tvb, &tsb, &tvo, &tso)))
    after_run(op, ctx);
}

/* fi.split_shared_prefix: the page table's lengths checked against the outputs here (the
 * runtime sees pointers only), then fi_split_shared_prefix on the run's context. */
void _mlir_ciface_fi_rt_split_shared_prefix(fi_memref *indptr, fi_memref *indices,
                                            fi_memref *last, int64_t num_pages, fi_memref *qo,
                                            fi_memref *pi, fi_memref *px, fi_memref *pl,
                                            fi_memref *si, fi_memref *sx, fi_memref *sl,
                                            int32_t page_size) {
  const char *op = "fi.split_shared_prefix";
  fi_context *ctx = context_or_report(op);
  int32_t batch;
  if (!ctx || !batch_of(op, "kv_indptr", indptr, &batch)) return;
  const int64_t n_idx = length_of(indices);
  char msg[256];
  if (num_pages > INT32_MAX) {
    report(op, FI_ERROR_INVALID_ARGUMENT, "num_pages is above 2^31 - 1");
    return;
  }
  /* The page table, then the seven outputs; each as long as the runtime writes or reads. */
  enum { N_ARRAYS = 10 };
  const struct { const fi_memref *m; const char *name; int64_t need; } arr[N_ARRAYS] = {
      {indptr, "kv_indptr", batch + 1},   {indices, "kv_indices", 0},
      {last, "kv_last_page_len", batch},  {qo, "prefix_qo_indptr", 2},
      {pi, "prefix_indptr", 2},           {px, "prefix_indices", n_idx},
      {pl, "prefix_last_page_len", 1},    {si, "suffix_indptr", batch + 1},
      {sx, "suffix_indices", n_idx},      {sl, "suffix_last_page_len", batch}};
  int32_t *a[N_ARRAYS];
  for (int i = 0; i < N_ARRAYS; ++i) {
    if (length_of(arr[i].m) < arr[i].need) {
      snprintf(msg, sizeof msg, "%s has %lld elements but needs %lld (batch = %d, kv_indices "
               "has %lld)", arr[i].name, (long long)length_of(arr[i].m),
               (long long)arr[i].need, (int)batch, (long long)n_idx);
      report(op, FI_ERROR_INVALID_ARGUMENT, msg);
      return;
    }
    a[i] = (int32_t *)(uintptr_t)array_of(op, arr[i].name, arr[i].m, 4);
    /* the CUDA kernels read and write every array */
    if (!a[i] || (is_cuda(ctx) && !require_device_memory(op, ctx, arr[i].name, a[i]))) return;
  }
  const fi_page_table pages = {a[0], a[1], a[2]};
  if (!is_cuda(ctx) && (pages.indptr[batch] < 0 || pages.indptr[batch] > n_idx)) {
    /* the outputs are sized by kv_indices: the table may not reach past it */
    snprintf(msg, sizeof msg, "kv_indptr[%d] = %d but kv_indices has %lld elements",
             (int)batch, (int)pages.indptr[batch], (long long)n_idx);
    report(op, FI_ERROR_INVALID_ARGUMENT, msg);
    return;
  }
  if (!failed(op, ctx, fi_split_shared_prefix(ctx, batch, page_size, &pages, (int32_t)num_pages,
                                              a[3], a[4], a[5], a[6], a[7], a[8], a[9])))
    after_run(op, ctx);
}

static void merge_states(fi_memref *v, fi_memref *s, fi_memref *vo, fi_memref *so,
                         int32_t has_so, fi_dtype d) {
  const char *op = "fi.merge_states";
  fi_context *ctx = context_or_report(op);
  if (!ctx) return;
  fi_tensor tv = tensor_of(v, 4, d), ts = tensor_of(s, 3, FI_DTYPE_F32);
  fi_tensor tvo = tensor_of(vo, 3, d), tso = tensor_of(so, 2, FI_DTYPE_F32);
  if (!failed(op, ctx, fi_merge_states(ctx, &tv, &ts, &tvo, has_so ? &tso : NULL)))
    after_run(op, ctx);
}

static void append_run(fi_memref *slot, fi_memref *k_new, fi_memref *v_new,
                       fi_memref *append_indptr, fi_memref *k_cache, fi_memref *v_cache,
                       fi_memref *indptr, fi_memref *indices, fi_memref *last, int32_t layout,
                       fi_dtype d) {
  const char *op = "fi.append_paged_kv";
  fi_context *ctx = context_or_report(op);
  fi_plan plan;
  if (!ctx || !run_plan(op, ctx, slot, FI_OP_APPEND_PAGED_KV, d, d, NULL, &plan)) return;
  fi_tensor tk = tensor_of(k_new, 3, d), tv = tensor_of(v_new, 3, d);
  fi_paged_kv_cache kv = {tensor_of(k_cache, 4, d), tensor_of(v_cache, 4, d),
                          (fi_kv_layout)layout};
  fi_page_table pages = {array_of(op, "kv_indptr", indptr, 4),
                         array_of(op, "kv_indices", indices, 4),
                         array_of(op, "kv_last_page_len", last, 4)};
  const int32_t *ap = array_of(op, "append_indptr", append_indptr, 4);
  if (!ap || !pages.indptr || !pages.indices || !pages.last_page_len) return;
  if (!run_buffers_on_device(op, ctx, slot, (const void *const[]){tk.data, tv.data, ap,
                             kv.k.data, kv.v.data, pages.indptr, pages.indices,
                             pages.last_page_len},
                             (const char *const[]){"k_new", "v_new", "append_indptr",
                             "k_cache", "v_cache", "kv_indptr", "kv_indices",
                             "kv_last_page_len"}, 8))
    return;
  if (failed(op, ctx, fi_append_paged_kv_run(ctx, &plan, &tk, &tv, ap, &kv, &pages))) return;
  after_run(op, ctx);
}

/* ------------------------------------------- one entry point per element type ----- */

#define FI_KV_TYPES(X, qn, qd)                                                             \
  X(qn, qd, f16, FI_DTYPE_F16)                                                             \
  X(qn, qd, bf16, FI_DTYPE_BF16)                                                           \
  X(qn, qd, f32, FI_DTYPE_F32)                                                             \
  X(qn, qd, e4m3, FI_DTYPE_E4M3)                                                           \
  X(qn, qd, e5m2, FI_DTYPE_E5M2)
#define FI_Q_KV_TYPES(X)                                                                   \
  FI_KV_TYPES(X, f16, FI_DTYPE_F16)                                                        \
  FI_KV_TYPES(X, bf16, FI_DTYPE_BF16)                                                      \
  FI_KV_TYPES(X, f32, FI_DTYPE_F32)
#define FI_FLOAT_TYPES(X) X(f16, FI_DTYPE_F16) X(bf16, FI_DTYPE_BF16) X(f32, FI_DTYPE_F32)
#define FI_CACHE_TYPES(X)                                                                  \
  FI_FLOAT_TYPES(X) X(e4m3, FI_DTYPE_E4M3) X(e5m2, FI_DTYPE_E5M2)

#define DEF_DECODE(qn, qd, kn, kd)                                                         \
  void _mlir_ciface_fi_rt_decode_run_##qn##_##kn(                                          \
      fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v, fi_memref *indptr,        \
      fi_memref *indices, fi_memref *last, fi_memref *o, fi_memref *lse, int32_t has_lse,  \
      int32_t layout, ATTN_PARAMS) {                                                       \
    decode_run(slot, q, k, v, indptr, indices, last, o, lse, has_lse, layout, ATTN_ARGS,   \
               qd, kd);                                                                    \
  }
FI_Q_KV_TYPES(DEF_DECODE)

#define DEF_BLOCK_SPARSE(qn, qd, kn, kd)                                                   \
  void _mlir_ciface_fi_rt_block_sparse_run_##qn##_##kn(                                    \
      fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v, fi_memref *indptr,        \
      fi_memref *indices, fi_memref *row_offsets, fi_memref *col_offsets, fi_memref *o,    \
      fi_memref *lse, int32_t has_lse, ATTN_PARAMS) {                                      \
    block_sparse_run(slot, q, k, v, indptr, indices, row_offsets, col_offsets, NULL, o,    \
                     lse, has_lse, 0, ATTN_ARGS, qd, kd);                                  \
  }                                                                                        \
  void _mlir_ciface_fi_rt_block_sparse_paged_run_##qn##_##kn(                              \
      fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v, fi_memref *indptr,        \
      fi_memref *indices, fi_memref *row_offsets, fi_memref *col_offsets,                  \
      fi_memref *kv_indptr, fi_memref *kv_indices, fi_memref *kv_last, fi_memref *o,       \
      fi_memref *lse, int32_t has_lse, int32_t layout, ATTN_PARAMS) {                      \
    fi_memref *const pages[3] = {kv_indptr, kv_indices, kv_last};                         \
    block_sparse_run(slot, q, k, v, indptr, indices, row_offsets, col_offsets, pages, o,   \
                     lse, has_lse, layout, ATTN_ARGS, qd, kd);                             \
  }
FI_Q_KV_TYPES(DEF_BLOCK_SPARSE)

#define DEF_PAGED_PREFILL_NAMED(name, qd, kd)                                              \
  void name(fi_memref *slot, fi_memref *q, fi_memref *qo_indptr, fi_memref *k,             \
            fi_memref *v, fi_memref *indptr, fi_memref *indices, fi_memref *last,          \
            fi_memref *mask, fi_memref *mask_indptr, fi_memref *o, fi_memref *lse,         \
            int32_t has_lse, int32_t layout, int32_t mask_mode, ATTN_PARAMS) {             \
    paged_prefill_run(slot, q, qo_indptr, k, v, indptr, indices, last, mask, mask_indptr,  \
                      o, lse, has_lse, layout, mask_mode, ATTN_ARGS, qd, kd, NULL, NULL,   \
                      NULL);                                                               \
  }
/* `merge` operands: the other state (merge_v, merge_s) after lse */
#define DEF_PAGED_PREFILL_MERGE_NAMED(name, qd, kd)                                        \
  void name(fi_memref *slot, fi_memref *q, fi_memref *qo_indptr, fi_memref *k,             \
            fi_memref *v, fi_memref *indptr, fi_memref *indices, fi_memref *last,          \
            fi_memref *mask, fi_memref *mask_indptr, fi_memref *o, fi_memref *lse,         \
            int32_t has_lse, fi_memref *merge_v, fi_memref *merge_s, int32_t layout,       \
            int32_t mask_mode, ATTN_PARAMS) {                                              \
    paged_prefill_run(slot, q, qo_indptr, k, v, indptr, indices, last, mask, mask_indptr,  \
                      o, lse, has_lse, layout, mask_mode, ATTN_ARGS, qd, kd, NULL,         \
                      merge_v, merge_s);                                                   \
  }
#define DEF_PAGED_PREFILL(qn, qd, kn, kd)                                                  \
  DEF_PAGED_PREFILL_NAMED(_mlir_ciface_fi_rt_paged_prefill_run_##qn##_##kn, qd, kd)       \
  DEF_PAGED_PREFILL_NAMED(_mlir_ciface_fi_rt_paged_prefill_run_##qn##_##kn##_mask_ui8, qd, kd) \
  DEF_PAGED_PREFILL_MERGE_NAMED(_mlir_ciface_fi_rt_paged_prefill_run_##qn##_##kn##_merge, qd, kd) \
  DEF_PAGED_PREFILL_MERGE_NAMED(                                                           \
      _mlir_ciface_fi_rt_paged_prefill_run_##qn##_##kn##_mask_ui8_merge, qd, kd)
FI_Q_KV_TYPES(DEF_PAGED_PREFILL)
/* fp8 attention: the per-head scales (q, k, v) after lse */
#define DEF_PAGED_PREFILL_FP8(name)                                                        \
  void name(fi_memref *slot, fi_memref *q, fi_memref *qo_indptr, fi_memref *k,             \
            fi_memref *v, fi_memref *indptr, fi_memref *indices, fi_memref *last,          \
            fi_memref *mask, fi_memref *mask_indptr, fi_memref *o, fi_memref *lse,         \
            int32_t has_lse, fi_memref *qs, fi_memref *ks, fi_memref *vs, int32_t layout,  \
            int32_t mask_mode, ATTN_PARAMS) {                                              \
    fi_memref *const hs[3] = {qs, ks, vs};                                                 \
    paged_prefill_run(slot, q, qo_indptr, k, v, indptr, indices, last, mask, mask_indptr,  \
                      o, lse, has_lse, layout, mask_mode, ATTN_ARGS, FI_DTYPE_E4M3,        \
                      FI_DTYPE_E4M3, hs, NULL, NULL);                                      \
  }
DEF_PAGED_PREFILL_FP8(_mlir_ciface_fi_rt_paged_prefill_run_e4m3_e4m3)
DEF_PAGED_PREFILL_FP8(_mlir_ciface_fi_rt_paged_prefill_run_e4m3_e4m3_mask_ui8)
#define DEF_PAGED_PREFILL_FP8_MERGE(name)                                                  \
  void name(fi_memref *slot, fi_memref *q, fi_memref *qo_indptr, fi_memref *k,             \
            fi_memref *v, fi_memref *indptr, fi_memref *indices, fi_memref *last,          \
            fi_memref *mask, fi_memref *mask_indptr, fi_memref *o, fi_memref *lse,         \
            int32_t has_lse, fi_memref *merge_v, fi_memref *merge_s, fi_memref *qs,        \
            fi_memref *ks, fi_memref *vs, int32_t layout, int32_t mask_mode, ATTN_PARAMS) { \
    fi_memref *const hs[3] = {qs, ks, vs};                                                 \
    paged_prefill_run(slot, q, qo_indptr, k, v, indptr, indices, last, mask, mask_indptr,  \
                      o, lse, has_lse, layout, mask_mode, ATTN_ARGS, FI_DTYPE_E4M3,        \
                      FI_DTYPE_E4M3, hs, merge_v, merge_s);                                \
  }
DEF_PAGED_PREFILL_FP8_MERGE(_mlir_ciface_fi_rt_paged_prefill_run_e4m3_e4m3_merge)
DEF_PAGED_PREFILL_FP8_MERGE(_mlir_ciface_fi_rt_paged_prefill_run_e4m3_e4m3_mask_ui8_merge)

#define DEF_RAGGED_PREFILL_NAMED(name, qd, kd)                                             \
  void name(fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v,                     \
            fi_memref *qo_indptr, fi_memref *kv_indptr, fi_memref *mask,                   \
            fi_memref *mask_indptr, fi_memref *o, fi_memref *lse, int32_t has_lse,         \
            int32_t mask_mode, ATTN_PARAMS) {                                              \
    ragged_prefill_run(slot, q, k, v, qo_indptr, kv_indptr, mask, mask_indptr, o, lse,     \
                       has_lse, mask_mode, ATTN_ARGS, qd, kd, NULL);                       \
  }
#define DEF_RAGGED_PREFILL(qn, qd, kn, kd)                                                 \
  DEF_RAGGED_PREFILL_NAMED(_mlir_ciface_fi_rt_ragged_prefill_run_##qn##_##kn, qd, kd)     \
  DEF_RAGGED_PREFILL_NAMED(_mlir_ciface_fi_rt_ragged_prefill_run_##qn##_##kn##_mask_ui8, qd, kd)
FI_Q_KV_TYPES(DEF_RAGGED_PREFILL)
#define DEF_RAGGED_PREFILL_FP8(name)                                                       \
  void name(fi_memref *slot, fi_memref *q, fi_memref *k, fi_memref *v,                     \
            fi_memref *qo_indptr, fi_memref *kv_indptr, fi_memref *mask,                   \
            fi_memref *mask_indptr, fi_memref *o, fi_memref *lse, int32_t has_lse,         \
            fi_memref *qs, fi_memref *ks, fi_memref *vs, int32_t mask_mode,                \
            ATTN_PARAMS) {                                                                 \
    fi_memref *const hs[3] = {qs, ks, vs};                                                 \
    ragged_prefill_run(slot, q, k, v, qo_indptr, kv_indptr, mask, mask_indptr, o, lse,     \
                       has_lse, mask_mode, ATTN_ARGS, FI_DTYPE_E4M3, FI_DTYPE_E4M3, hs);   \
  }
DEF_RAGGED_PREFILL_FP8(_mlir_ciface_fi_rt_ragged_prefill_run_e4m3_e4m3)
DEF_RAGGED_PREFILL_FP8(_mlir_ciface_fi_rt_ragged_prefill_run_e4m3_e4m3_mask_ui8)

#define DEF_MERGE(n, d)                                                                    \
  void _mlir_ciface_fi_rt_merge_state_##n(fi_memref *va, fi_memref *sa, fi_memref *vb,     \
                                          fi_memref *sb, fi_memref *vo, fi_memref *so,     \
                                          int32_t has_so) {                                \
    merge_state(va, sa, vb, sb, vo, so, has_so, d);                                        \
  }                                                                                        \
  void _mlir_ciface_fi_rt_merge_states_##n(fi_memref *v, fi_memref *s, fi_memref *vo,      \
                                           fi_memref *so, int32_t has_so) {                \
    merge_states(v, s, vo, so, has_so, d);                                                 \
  }
FI_FLOAT_TYPES(DEF_MERGE)

#define DEF_APPEND(n, d)                                                                   \
  void _mlir_ciface_fi_rt_append_run_##n(fi_memref *slot, fi_memref *k_new,                \
                                         fi_memref *v_new, fi_memref *append_indptr,       \
                                         fi_memref *k_cache, fi_memref *v_cache,           \
                                         fi_memref *indptr, fi_memref *indices,            \
                                         fi_memref *last, int32_t layout) {                \
    append_run(slot, k_new, v_new, append_indptr, k_cache, v_cache, indptr, indices, last, \
               layout, d);                                                                 \
  }
FI_CACHE_TYPES(DEF_APPEND)

/* -------------------------------------------------------- synchronisation --------- */

fi_status fi_rt_check(void) {
  fi_context *ctx = fi_rt_context();
  if (!ctx) return FI_ERROR_BACKEND_UNAVAILABLE;
  lanes_join_outside("fi_rt_check", ctx);
  fi_status worst = FI_SUCCESS;
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx)) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      char msg[256];
      snprintf(msg, sizeof(msg), "asynchronous CUDA error after the kernels of the last op "
               "compiled code launched: %s", cudaGetErrorString(e));
      report(last_launched_op, FI_ERROR_CUDA, msg);
      worst = FI_ERROR_CUDA;
    }
  }
#endif
  pthread_mutex_lock(&rt_lock);
  plan_record *first = all_records; /* records are only ever prepended */
  pthread_mutex_unlock(&rt_lock);
  for (plan_record *r = first; r; r = r->next) {
#ifdef FI_HAVE_CUDA
    /* A KV-sharded plan's runs record a peer's failure in its workspace (shard.cu): read
     * it back (after the embedder's synchronisation, so this waits for nothing new). */
    if (r->ctx == ctx && r->valid && r->plan.params.kv_shards > 0 && is_cuda(ctx)) {
      fi_status st = fi_plan_device_status(ctx, &r->plan);
      if (st != FI_SUCCESS) {
        char msg[FI_ERROR_MESSAGE_BYTES + 32];
        snprintf(msg, sizeof(msg), "%s (found on the device)", fi_last_error(ctx));
        report(r->op, st, msg);
        if (worst == FI_SUCCESS) worst = st;
        cudaMemsetAsync((int32_t *)r->plan.workspace + 4, 0, 4 * sizeof(int32_t),
                        (cudaStream_t)ctx->stream); /* reported once */
      }
    }
#endif
    volatile int32_t *hs = r->host_status; /* written by kernels through the mapping */
    if (r->ctx != ctx || !r->on_device || !hs || hs[0] == 0) continue;
    int32_t verdict[4] = {hs[0], hs[1], hs[2], 0};
    hs[0] = hs[1] = hs[2] = hs[3] = 0; /* reported once */
#ifdef FI_HAVE_CUDA
    /* The append kernel's claim on the error, so that a later error is recorded again
     * (stream-ordered: after the work this check follows). */
    if (r->device_status)
      cudaMemsetAsync(r->device_status, 0, 4 * sizeof(int32_t), (cudaStream_t)ctx->stream);
#endif
    fi_status st = fi_device_plan_error(ctx, verdict);
    if (st == FI_SUCCESS) continue;
    char msg[FI_ERROR_MESSAGE_BYTES + 96];
    snprintf(msg, sizeof(msg), "%s (found on the device; the step's runs of this plan "
             "computed nothing)", fi_last_error(ctx));
    report(r->op, st, msg);
    if (worst == FI_SUCCESS) worst = st;
  }
  return worst;
}

fi_status fi_rt_synchronize(void) {
  fi_context *ctx = fi_rt_context();
  if (!ctx) return FI_ERROR_BACKEND_UNAVAILABLE;
  lanes_join_outside("fi_rt_synchronize", ctx);
#ifdef FI_HAVE_CUDA
  if (is_cuda(ctx) && ctx->comm) { /* sharded steps: never wait forever for a dead rank */
    fi_status st = fi_comm_synchronize(ctx);
    if (st != FI_SUCCESS) {
      report(last_launched_op, st, fi_last_error(ctx));
      return st;
    }
  }
  if (is_cuda(ctx)) {
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)ctx->stream);
    if (e != cudaSuccess) {
      char msg[256];
      snprintf(msg, sizeof(msg), "the stream failed after the kernels of the last op "
               "compiled code launched: %s", cudaGetErrorString(e));
      report(last_launched_op, FI_ERROR_CUDA, msg);
      return FI_ERROR_CUDA;
    }
  }
#endif
  return fi_rt_check();
}

/* ------------------------------------------------------------------ copies -------- */

/* An unranked memref descriptor: the rank and a pointer to the ranked one. */
typedef struct fi_unranked_memref {
  int64_t rank;
  fi_memref *desc;
} fi_unranked_memref;

/* memref.copy of compiled code (fi-lower-to-runtime rewrites it to this call): a stream-
 * ordered device copy on CUDA (one per contiguous run of elements), memmove on the host. */
static void memref_copy(int64_t elem_bytes, const fi_unranked_memref *src,
                        const fi_unranked_memref *dst) {
  const char *op = "memref.copy";
  fi_context *ctx = context_or_report(op);
  if (!ctx) return;
  int64_t rank = src->rank;
  if (rank != dst->rank || rank > 8 || elem_bytes <= 0) {
    report(op, FI_ERROR_INVALID_ARGUMENT, "source and target of a copy must have one rank "
           "(at most 8) and a positive element size");
    return;
  }
  const fi_memref *s = src->desc, *d = dst->desc;
  int64_t total = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (s->dims[i] != d->dims[i]) {
      report(op, FI_ERROR_INVALID_ARGUMENT, "source and target of a copy differ in shape");
      return;
    }
    total *= s->dims[i];
  }
  if (total == 0) return;
  char *sb = (char *)s->aligned + s->offset * elem_bytes;
  char *db = (char *)d->aligned + d->offset * elem_bytes;
  /* The innermost dimensions that are contiguous in both form one block. */
  int64_t block = 1, expect = 1;
  int64_t outer = rank;
  while (outer > 0 && s->dims[rank + outer - 1] == expect && d->dims[rank + outer - 1] == expect) {
    block *= s->dims[outer - 1];
    expect *= s->dims[outer - 1];
    --outer;
  }
  int64_t index[8] = {0};
  for (int64_t done = 0; done < total; done += block) {
    int64_t so = 0, dof = 0;
    for (int64_t i = 0; i < outer; ++i) {
      so += index[i] * s->dims[rank + i];
      dof += index[i] * d->dims[rank + i];
    }
    if (fi_rt_copy(db + dof * elem_bytes, sb + so * elem_bytes, (size_t)(block * elem_bytes)) !=
        FI_SUCCESS)
      return;
    for (int64_t i = outer - 1; i >= 0; --i) { /* next outer index */
      if (++index[i] < s->dims[i]) break;
      index[i] = 0;
    }
  }
}

/* One entry per element type (the lowering names the type; the bytes come as elem_bytes). */
#define DEF_COPY(n)                                                                        \
  void _mlir_ciface_fi_rt_memref_copy_##n(int64_t elem_bytes, fi_unranked_memref *src,     \
                                          fi_unranked_memref *dst) {                       \
    memref_copy(elem_bytes, src, dst);                                                     \
  }
DEF_COPY(f16) DEF_COPY(bf16) DEF_COPY(f32) DEF_COPY(f64) DEF_COPY(f8E4M3FN) DEF_COPY(f8E5M2)
DEF_COPY(i1) DEF_COPY(i8) DEF_COPY(i16) DEF_COPY(i32) DEF_COPY(i64) DEF_COPY(index)

/* ------------------------------------------------------------------ graphs -------- */

/* records this thread's capture planned, to pin */
static _Thread_local plan_record **capture_records = NULL;
static _Thread_local int num_capture_records = 0, cap_capture_records = 0;

static void note_capture_use(plan_record *r) {
  if (!capturing) return;
  for (int i = 0; i < num_capture_records; ++i)
    if (capture_records[i] == r) return;
  if (num_capture_records == cap_capture_records) {
    int cap = cap_capture_records ? 2 * cap_capture_records : 16;
    plan_record **b = (plan_record **)realloc(capture_records, (size_t)cap * sizeof(*b));
    if (!b) {
      report(r->op, FI_ERROR_OUT_OF_MEMORY, "could not grow the capture's plan list");
      return;
    }
    capture_records = b;
    cap_capture_records = cap;
  }
  capture_records[num_capture_records++] = r;
}

static void free_graph(fi_context *ctx, fi_rt_graph *g) {
  if (!g) return;
#ifdef FI_HAVE_CUDA
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  cudaStream_t stream = ctx ? (cudaStream_t)ctx->stream : 0;
  if (g->num_buffers) cudaStreamSynchronize(stream); /* a replay may still use them */
  for (int i = 0; i < g->num_buffers; ++i) {
    if (free_hook) free_hook(hook_user, g->buffers[i], stream);
    else cudaFree(g->buffers[i]);
  }
#else
  (void)ctx;
#endif
  for (int i = 0; i < g->num_records; ++i) --g->records[i]->graph_uses;
  free(g->records);
  free(g->buffers);
  free(g);
}

fi_status fi_rt_graph_capture(fi_rt_step_fn step, void *user_data, fi_rt_graph **out) {
  const char *op = "fi_rt_graph_capture";
  if (out) *out = NULL;
  fi_context *ctx = context_or_report(op);
  if (!ctx) return FI_ERROR_BACKEND_UNAVAILABLE;
  if (!step || !out) {
    report(op, FI_ERROR_INVALID_ARGUMENT, "step and out must not be NULL");
    return FI_ERROR_INVALID_ARGUMENT;
  }
#ifdef FI_HAVE_CUDA
  if (!is_cuda(ctx)) {
    report(op, FI_ERROR_UNSUPPORTED, "CUDA graphs need the CUDA backend (the context is a host "
           "context): call the step function directly");
    return FI_ERROR_UNSUPPORTED;
  }
  if (!ctx->stream) {
    report(op, FI_ERROR_INVALID_ARGUMENT, "the legacy default stream cannot be captured: give "
           "the context a stream of yours (fi_context_set_stream) before capturing");
    return FI_ERROR_INVALID_ARGUMENT;
  }
  if (capturing) {
    report(op, FI_ERROR_INVALID_ARGUMENT, "a capture is already in progress (captures do not nest)");
    return FI_ERROR_INVALID_ARGUMENT;
  }
  pthread_mutex_lock(&rt_lock);
  const int full = num_graphs == (int)(sizeof(graphs) / sizeof(graphs[0]));
  pthread_mutex_unlock(&rt_lock);
  if (full) {
    report(op, FI_ERROR_OUT_OF_MEMORY, "64 graphs are alive: destroy one (fi_rt_graph_destroy)");
    return FI_ERROR_OUT_OF_MEMORY;
  }
  fi_rt_graph *g = (fi_rt_graph *)calloc(1, sizeof(fi_rt_graph));
  if (!g) {
    report(op, FI_ERROR_OUT_OF_MEMORY, "could not allocate the graph");
    return FI_ERROR_OUT_OF_MEMORY;
  }
  cudaStream_t stream = (cudaStream_t)ctx->stream;
  /* Relaxed: the first step of a capture may allocate a workspace (cudaMalloc). */
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    free(g);
    char msg[192];
    snprintf(msg, sizeof(msg), "cudaStreamBeginCapture failed: %s", cudaGetErrorString(e));
    report(op, FI_ERROR_CUDA, msg);
    return FI_ERROR_CUDA;
  }
  capturing = g;
  ++capture_seq; /* the capture's runs get a prefill stage of the graph's own */
  num_capture_records = 0;
  step(user_data);
  capturing = NULL;
  e = cudaStreamEndCapture(stream, &g->graph);
  g->records = (plan_record **)malloc((size_t)(num_capture_records + 1) * sizeof(plan_record *));
  if (g->records) {
    for (int i = 0; i < num_capture_records; ++i) {
      g->records[i] = capture_records[i];
      ++capture_records[i]->graph_uses;
    }
    g->num_records = num_capture_records;
  }
  num_capture_records = 0;
  if (e == cudaSuccess && !g->failed && g->records)
    e = cudaGraphInstantiate(&g->exec, g->graph, 0);
  if (e != cudaSuccess || g->failed || !g->records) {
    char msg[256];
    snprintf(msg, sizeof(msg), "%s", g->failed ? "the step reported an error while it was "
             "captured (see the error above); nothing was captured"
             : cudaGetErrorString(e));
    fi_status st = g->failed ? FI_ERROR_INVALID_ARGUMENT : FI_ERROR_CUDA;
    cudaGetLastError();
    free_graph(ctx, g);
    if (st == FI_ERROR_CUDA) report(op, st, msg);
    return st;
  }
  pthread_mutex_lock(&rt_lock);
  const int room = num_graphs < (int)(sizeof(graphs) / sizeof(graphs[0]));
  if (room) graphs[num_graphs++] = g;
  pthread_mutex_unlock(&rt_lock);
  if (!room) { /* another thread's capture took the last place meanwhile */
    free_graph(ctx, g);
    report(op, FI_ERROR_OUT_OF_MEMORY, "64 graphs are alive: destroy one (fi_rt_graph_destroy)");
    return FI_ERROR_OUT_OF_MEMORY;
  }
  *out = g;
  return FI_SUCCESS;
#else
  report(op, FI_ERROR_UNSUPPORTED, "this runtime was built without CUDA: CUDA graphs are not "
         "available; call the step function directly");
  return FI_ERROR_UNSUPPORTED;
#endif
}

fi_status fi_rt_graph_replay(fi_rt_graph *g) {
  const char *op = "fi_rt_graph_replay";
  fi_context *ctx = context_or_report(op);
  if (!ctx) return FI_ERROR_BACKEND_UNAVAILABLE;
  if (!g) {
    report(op, FI_ERROR_INVALID_ARGUMENT, "graph is NULL");
    return FI_ERROR_INVALID_ARGUMENT;
  }
#ifdef FI_HAVE_CUDA
  cudaError_t e = cudaGraphLaunch(g->exec, (cudaStream_t)ctx->stream);
  if (e != cudaSuccess) {
    char msg[192];
    snprintf(msg, sizeof(msg), "cudaGraphLaunch failed: %s", cudaGetErrorString(e));
    report(op, FI_ERROR_CUDA, msg);
    return FI_ERROR_CUDA;
  }
  last_launched_op = "a replayed graph";
  return FI_SUCCESS;
#else
  report(op, FI_ERROR_UNSUPPORTED, "this runtime was built without CUDA");
  return FI_ERROR_UNSUPPORTED;
#endif
}

void fi_rt_graph_destroy(fi_rt_graph *g) {
  if (!g) return;
  pthread_mutex_lock(&rt_lock);
  for (int i = 0; i < num_graphs; ++i)
    if (graphs[i] == g) {
      graphs[i] = graphs[--num_graphs];
      break;
    }
  pthread_mutex_unlock(&rt_lock);
  free_graph(fi_rt_context(), g);
}
