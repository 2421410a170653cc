/* kernels/src/shard.c -- communicators for context parallelism (runtime.h, "Context
 * parallelism"): NCCL loaded on first use (dlopen, so that the runtime links no NCCL and
 * runs without it until a communicator is made), in-process groups for host contexts, and
 * the signature exchange a sharded plan makes. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "shard.h"

enum { COMM_NCCL = 1, COMM_LOCAL = 2 };
static const int64_t kDefaultTimeoutMs = 60000;

const char *fi_shard_word_name(int word) {
  switch (word) {
  case FI_SH_NRANKS: return "the number of ranks";
  case FI_SH_FAMILY: return "the op family";
  case FI_SH_BATCH: return "batch";
  case FI_SH_QO_ROWS: return "the query rows";
  case FI_SH_QO_HEADS: return "num_qo_heads";
  case FI_SH_KV_HEADS: return "num_kv_heads";
  case FI_SH_HEAD_DIM: return "head_dim";
  case FI_SH_Q_DTYPE: return "q_dtype";
  case FI_SH_KV_DTYPE: return "kv_dtype";
  case FI_SH_CAPACITY: return "the workspace capacity (size the workspace alike on every rank)";
  case FI_SH_MASK: return "mask_mode";
  case FI_SH_SPLIT: return "fixed_split_size";
  }
  return "the header";
}

/* ------------------------------------------------------------------ NCCL ----------- */

/* The few entry points used, declared by their ABI (NCCL 2.x) so that no nccl.h is needed
 * to build: ncclResult_t is an int enum, ncclComm_t a pointer, ncclUniqueId 128 bytes. */
typedef struct { char internal[FI_COMM_ID_BYTES]; } nccl_id;
typedef int (*nccl_get_unique_id_fn)(nccl_id *);
typedef int (*nccl_comm_init_rank_fn)(void **, int, nccl_id, int);
typedef int (*nccl_comm_fn)(void *);
typedef int (*nccl_comm_int_fn)(void *, int *);
typedef int (*nccl_void_fn)(void);
typedef int (*nccl_all_gather_fn)(const void *, void *, size_t, int, void *, void *);
typedef const char *(*nccl_error_string_fn)(int);
enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7, NCCL_UINT8 = 1 };

static struct {
  int tried, ok;
  char error[256];
  nccl_get_unique_id_fn get_unique_id;
  nccl_comm_init_rank_fn init_rank;
  nccl_comm_fn destroy, abort_;
  nccl_comm_int_fn count, user_rank, async_error;
  nccl_void_fn group_start, group_end;
  nccl_all_gather_fn all_gather;
  nccl_error_string_fn error_string;
} nccl;
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

static void nccl_load(void) {
  nccl.tried = 1;
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(nccl.error, sizeof nccl.error, "%s", dlerror());
    return;
  }
#define SYM(field, type, name)                                                            \
  if (!(nccl.field = (type)dlsym(h, name))) {                                             \
    snprintf(nccl.error, sizeof nccl.error, "the NCCL library has no %s", name);           \
    return;                                                                               \
  }
  SYM(get_unique_id, nccl_get_unique_id_fn, "ncclGetUniqueId");
  SYM(init_rank, nccl_comm_init_rank_fn, "ncclCommInitRank");
  SYM(destroy, nccl_comm_fn, "ncclCommDestroy");
  SYM(abort_, nccl_comm_fn, "ncclCommAbort");
  SYM(count, nccl_comm_int_fn, "ncclCommCount");
  SYM(user_rank, nccl_comm_int_fn, "ncclCommUserRank");
  SYM(async_error, nccl_comm_int_fn, "ncclCommGetAsyncError");
  SYM(group_start, nccl_void_fn, "ncclGroupStart");
  SYM(group_end, nccl_void_fn, "ncclGroupEnd");
  SYM(all_gather, nccl_all_gather_fn, "ncclAllGather");
  SYM(error_string, nccl_error_string_fn, "ncclGetErrorString");
#undef SYM
  nccl.ok = 1;
}

static fi_status need_nccl(fi_context *ctx) {
#ifndef FI_HAVE_CUDA
  return fi_set_error(ctx, FI_ERROR_BACKEND_UNAVAILABLE,
                      "NCCL communicators need the CUDA backend, which this runtime was built "
                      "without; use fi_comm_create_local_group with host contexts");
#else
  pthread_once(&nccl_once, nccl_load);
  if (!nccl.ok)
    return fi_set_error(ctx, FI_ERROR_BACKEND_UNAVAILABLE,
                        "NCCL could not be loaded (%s): put libnccl.so.2 on the library path "
                        "(LD_LIBRARY_PATH)", nccl.error);
  return FI_SUCCESS;
#endif
}

static fi_status nccl_error(fi_context *ctx, int r, const char *what) {
  return fi_set_error(ctx, FI_ERROR_COMM, "%s failed: NCCL error %d (%s)", what, r,
                      nccl.error_string ? nccl.error_string(r) : "?");
}

fi_status fi_comm_nccl_unique_id(uint8_t id[FI_COMM_ID_BYTES]) {
  if (!id) return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "id is NULL");
  fi_status s = need_nccl(NULL);
  if (s != FI_SUCCESS) return s;
  nccl_id u;
  int r = nccl.get_unique_id(&u);
  if (r != NCCL_SUCCESS) return nccl_error(NULL, r, "ncclGetUniqueId");
  memcpy(id, u.internal, FI_COMM_ID_BYTES);
  return FI_SUCCESS;
}

static fi_comm *comm_new(int kind, int32_t rank, int32_t size) {
  fi_comm *c = (fi_comm *)calloc(1, sizeof(fi_comm));
  if (!c) return NULL;
  c->kind = kind;
  c->rank = rank;
  c->size = size;
  c->timeout_ms = kDefaultTimeoutMs;
  return c;
}

fi_status fi_comm_init_nccl(const uint8_t id[FI_COMM_ID_BYTES], int32_t nranks, int32_t rank,
                            fi_comm **out) {
  if (!id || !out) return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "id and out must not be NULL");
  *out = NULL;
  if (nranks < 1 || nranks > FI_SHARD_MAX_RANKS || rank < 0 || rank >= nranks)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,
                        "rank %d of %d ranks: need 1 <= nranks <= %d and 0 <= rank < nranks",
                        (int)rank, (int)nranks, FI_SHARD_MAX_RANKS);
  fi_status s = need_nccl(NULL);
  if (s != FI_SUCCESS) return s;
  nccl_id u;
  memcpy(u.internal, id, FI_COMM_ID_BYTES);
  void *comm = NULL;
  int r = nccl.init_rank(&comm, nranks, u, rank);
  if (r != NCCL_SUCCESS) return nccl_error(NULL, r, "ncclCommInitRank");
  fi_comm *c = comm_new(COMM_NCCL, rank, nranks);
  if (!c) {
    nccl.destroy(comm);
    return fi_set_error(NULL, FI_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  c->nccl = comm;
  c->owned = 1;
  *out = c;
  return FI_SUCCESS;
}

fi_status fi_comm_wrap_nccl(void *nccl_comm, fi_comm **out) {
  if (!nccl_comm || !out)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "nccl_comm and out must not be NULL");
  *out = NULL;
  fi_status s = need_nccl(NULL);
  if (s != FI_SUCCESS) return s;
  int n = 0, rank = 0, r;
  if ((r = nccl.count(nccl_comm, &n)) != NCCL_SUCCESS) return nccl_error(NULL, r, "ncclCommCount");
  if ((r = nccl.user_rank(nccl_comm, &rank)) != NCCL_SUCCESS)
    return nccl_error(NULL, r, "ncclCommUserRank");
  fi_comm *c = comm_new(COMM_NCCL, rank, n);
  if (!c) return fi_set_error(NULL, FI_ERROR_OUT_OF_MEMORY, "out of host memory");
  c->nccl = nccl_comm;
  *out = c;
  return FI_SUCCESS;
}

/* --------------------------------------------------------------- local groups ------ */

/* Ranks meet twice per exchange: all posted their buffers (then each copies every rank's
 * parts into its own receive buffers), and all copied (then a rank may reuse its send
 * buffers). `broken` ends every wait of the group: a rank that timed out or aborted. */
typedef struct fi_local_group {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int32_t size, alive;
  int64_t arrived, generation;
  int broken;
  char broken_why[160];
  const void *const **send; /* [size] the posted send pointers of the current exchange */
} fi_local_group;

fi_status fi_comm_create_local_group(int32_t nranks, fi_comm **comms) {
  if (!comms) return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "comms is NULL");
  if (nranks < 1 || nranks > FI_SHARD_MAX_RANKS)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "nranks = %d: need 1..%d",
                        (int)nranks, FI_SHARD_MAX_RANKS);
  fi_local_group *g = (fi_local_group *)calloc(1, sizeof(fi_local_group));
  if (!g || !(g->send = (const void *const **)calloc((size_t)nranks, sizeof(void *)))) {
    free(g);
    return fi_set_error(NULL, FI_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->size = g->alive = nranks;
  for (int32_t r = 0; r < nranks; ++r) {
    comms[r] = comm_new(COMM_LOCAL, r, nranks);
    if (!comms[r]) {
      for (int32_t k = 0; k < r; ++k) fi_comm_destroy(comms[k]);
      for (int32_t k = r; k < nranks; ++k) comms[k] = NULL;
      return fi_set_error(NULL, FI_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    comms[r]->group = g;
  }
  return FI_SUCCESS;
}

static void deadline_of(int64_t ms, struct timespec *ts) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += (time_t)(ms / 1000);
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec += 1;
    ts->tv_nsec -= 1000000000L;
  }
}

/* Waits (mu held) until `size` ranks arrived at this meeting; 0 on success. */
static int meet(fi_local_group *g, const struct timespec *deadline, char *why, size_t why_n) {
  int64_t gen = g->generation;
  if (++g->arrived == g->size) {
    g->arrived = 0;
    ++g->generation;
    pthread_cond_broadcast(&g->cv);
    return 0;
  }
  while (gen == g->generation && !g->broken) {
    if (pthread_cond_timedwait(&g->cv, &g->mu, deadline) == ETIMEDOUT &&
        gen == g->generation && !g->broken) {
      g->broken = 1;
      snprintf(g->broken_why, sizeof g->broken_why,
               "%d of %d ranks did not join the exchange in time",
               (int)(g->size - g->arrived), (int)g->size);
      pthread_cond_broadcast(&g->cv);
    }
  }
  if (gen != g->generation) return 0;
  snprintf(why, why_n, "%s", g->broken_why);
  return -1;
}

fi_status fi_local_allgather(fi_context *ctx, fi_comm *comm, int parts, const void *const *send,
                             void *const *recv, const size_t *bytes) {
  fi_local_group *g = comm->group;
  struct timespec deadline;
  deadline_of(comm->timeout_ms, &deadline);
  char why[160];
  pthread_mutex_lock(&g->mu);
  if (g->broken) {
    snprintf(why, sizeof why, "%s", g->broken_why);
    pthread_mutex_unlock(&g->mu);
    return fi_set_error(ctx, FI_ERROR_COMM, "local group exchange: the group is broken (%s)",
                        why);
  }
  g->send[comm->rank] = send;
  int ok = meet(g, &deadline, why, sizeof why) == 0;
  pthread_mutex_unlock(&g->mu);
  if (!ok)
    return fi_set_error(ctx, FI_ERROR_COMM, "local group exchange (rank %d of %d): %s",
                        (int)comm->rank, (int)comm->size, why);
  for (int32_t r = 0; r < g->size; ++r)
    for (int p = 0; p < parts; ++p)
      if (bytes[p]) memcpy((char *)recv[p] + (size_t)r * bytes[p], g->send[r][p], bytes[p]);
  pthread_mutex_lock(&g->mu);
  ok = meet(g, &deadline, why, sizeof why) == 0;
  pthread_mutex_unlock(&g->mu);
  if (!ok)
    return fi_set_error(ctx, FI_ERROR_COMM, "local group exchange (rank %d of %d): %s",
                        (int)comm->rank, (int)comm->size, why);
  return FI_SUCCESS;
}

/* ---------------------------------------------------------------- common ----------- */

int32_t fi_comm_rank(const fi_comm *comm) { return comm ? comm->rank : -1; }
int32_t fi_comm_size(const fi_comm *comm) { return comm ? comm->size : 0; }

fi_status fi_comm_set_timeout_ms(fi_comm *comm, int64_t timeout_ms) {
  if (!comm || timeout_ms < 1)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,
                        "fi_comm_set_timeout_ms: comm must not be NULL and timeout_ms >= 1");
  comm->timeout_ms = timeout_ms;
  return FI_SUCCESS;
}

fi_status fi_comm_abort(fi_comm *comm) {
  if (!comm) return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "comm is NULL");
  if (comm->aborted) return FI_SUCCESS;
  comm->aborted = 1;
  if (comm->kind == COMM_NCCL) {
    int r = nccl.abort_(comm->nccl);
    if (r != NCCL_SUCCESS) return nccl_error(NULL, r, "ncclCommAbort");
    return FI_SUCCESS;
  }
  fi_local_group *g = comm->group;
  pthread_mutex_lock(&g->mu);
  g->broken = 1;
  snprintf(g->broken_why, sizeof g->broken_why, "rank %d aborted", (int)comm->rank);
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  return FI_SUCCESS;
}

void fi_comm_destroy(fi_comm *comm) {
  if (!comm) return;
  if (comm->kind == COMM_NCCL) {
    if (comm->owned && !comm->aborted) nccl.destroy(comm->nccl);
  } else {
    fi_local_group *g = comm->group;
    pthread_mutex_lock(&g->mu);
    int last = --g->alive == 0;
    pthread_mutex_unlock(&g->mu);
    if (last) {
      pthread_mutex_destroy(&g->mu);
      pthread_cond_destroy(&g->cv);
      free(g->send);
      free(g);
    }
  }
  free(comm);
}

fi_status fi_context_set_comm(fi_context *ctx, fi_comm *comm) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (comm && (comm->kind == COMM_NCCL) != (ctx->backend == FI_BACKEND_CUDA))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_comm: a %s context takes %s communicators",
                        ctx->backend == FI_BACKEND_CUDA ? "CUDA" : "host",
                        ctx->backend == FI_BACKEND_CUDA ? "NCCL (fi_comm_init_nccl / "
                                                          "fi_comm_wrap_nccl)"
                                                        : "local (fi_comm_create_local_group)");
  ctx->comm = comm;
  return FI_SUCCESS;
}

#ifdef FI_HAVE_CUDA
fi_status fi_nccl_allgather(fi_context *ctx, fi_comm *comm, int parts, const void *const *send,
                            void *const *recv, const size_t *bytes, void *stream) {
  if (comm->aborted)
    return fi_set_error(ctx, FI_ERROR_COMM, "the NCCL communicator was aborted");
  int r = nccl.group_start();
  for (int p = 0; r == NCCL_SUCCESS && p < parts; ++p)
    if (bytes[p]) r = nccl.all_gather(send[p], recv[p], bytes[p], NCCL_UINT8, comm->nccl, stream);
  int e = nccl.group_end();
  if (r != NCCL_SUCCESS) return nccl_error(ctx, r, "ncclAllGather");
  if (e != NCCL_SUCCESS && e != NCCL_IN_PROGRESS) return nccl_error(ctx, e, "ncclGroupEnd");
  return FI_SUCCESS;
}

fi_status fi_nccl_wait(fi_context *ctx, fi_comm *comm, int (*done)(void *), void *arg,
                       const char *what) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int d = done(arg);
    if (d > 0) return FI_SUCCESS;
    if (d < 0) return FI_ERROR_CUDA; /* the callback set the message */
    int async = NCCL_SUCCESS;
    nccl.async_error(comm->nccl, &async);
    if (async != NCCL_SUCCESS && async != NCCL_IN_PROGRESS) {
      fi_comm_abort(comm);
      return nccl_error(ctx, async, what);
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)(now.tv_sec - start.tv_sec) * 1000 +
                 (now.tv_nsec - start.tv_nsec) / 1000000;
    if (ms > comm->timeout_ms) {
      fi_comm_abort(comm);
      return fi_set_error(ctx, FI_ERROR_COMM,
                          "%s: the other ranks did not join within %lld ms; the NCCL "
                          "communicator was aborted (make a new one)",
                          what, (long long)comm->timeout_ms);
    }
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
}
#endif

/* ------------------------------------------------------------- sharded plans ------- */

fi_status fi_shard_check_params(fi_context *ctx, const fi_attention_params *p,
                                fi_op_family family) {
  if (p->kv_shards < 0 || p->kv_shards > FI_SHARD_MAX_RANKS)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.kv_shards = %d: 0 (whole KV) or the number of ranks (1..%d)",
                        (int)p->kv_shards, FI_SHARD_MAX_RANKS);
  if (p->kv_shards == 0) return FI_SUCCESS;
  if (family != FI_OP_DECODE && family != FI_OP_PAGED_PREFILL)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "params.kv_shards: only paged decode and paged prefill take a sharded KV");
  if (!ctx->comm)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.kv_shards = %d but the context has no communicator: give it "
                        "one of %d ranks with fi_context_set_comm", (int)p->kv_shards,
                        (int)p->kv_shards);
  if (ctx->comm->size != p->kv_shards)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.kv_shards = %d but the context's communicator has %d ranks: "
                        "the op's rank count and the communicator must agree",
                        (int)p->kv_shards, (int)ctx->comm->size);
  const char *bad = p->pos_encoding == FI_POS_ROPE_LLAMA ? "RoPE (rotate K before appending it)"
                    : p->pos_encoding == FI_POS_ALIBI    ? "ALiBi"
                    : p->window_left >= 0                ? "a sliding window"
                    : p->mask_mode == FI_MASK_CUSTOM     ? "a custom mask"
                    : p->variant                         ? "a score_mod / mask_mod variant"
                                                         : NULL;
  if (bad)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "params.kv_shards with %s: key positions are per shard, so sharded "
                        "runs take no position-dependent feature", bad);
  return FI_SUCCESS;
}

static void fill_header(int32_t *h, const fi_context *ctx, const fi_attention_params *p,
                        fi_op_family family, int32_t batch, fi_status local,
                        const fi_plan *plan, size_t workspace_bytes) {
  memset(h, 0, FI_SHARD_HEADER_BYTES);
  /* counts: the plan's, or what it needed when the workspace was too small */
  const int counted = local == FI_SUCCESS || local == FI_ERROR_WORKSPACE_TOO_SMALL;
  h[FI_SH_MAGIC] = FI_SHARD_MAGIC;
  h[FI_SH_RANK] = ctx->comm->rank;
  h[FI_SH_NRANKS] = p->kv_shards;
  h[FI_SH_STATUS] = (int32_t)local;
  h[FI_SH_FAMILY] = (int32_t)family;
  h[FI_SH_BATCH] = batch;
  h[FI_SH_QO_ROWS] = local == FI_SUCCESS ? (int32_t)plan->total_qo_rows : 0;
  h[FI_SH_MERGE_UNITS] = counted ? (int32_t)plan->private_[FI_PLAN_NUM_MERGE] : 0;
  h[FI_SH_QO_HEADS] = p->num_qo_heads;
  h[FI_SH_KV_HEADS] = p->num_kv_heads;
  h[FI_SH_HEAD_DIM] = p->head_dim;
  h[FI_SH_Q_DTYPE] = (int32_t)p->q_dtype;
  h[FI_SH_KV_DTYPE] = (int32_t)p->kv_dtype;
  h[FI_SH_CAPACITY] = (int32_t)fi_shard_layout_for(p, workspace_bytes).capacity;
  h[FI_SH_MASK] = (int32_t)p->mask_mode;
  h[FI_SH_SPLIT] = p->fixed_split_size;
  h[FI_SH_UNITS] = counted ? plan->num_work_units : 0;
  h[FI_SH_PARTIAL_ROWS] = counted ? plan->num_partial_rows : 0;
  if (local != FI_SUCCESS)
    snprintf((char *)(h + FI_SH_WORDS), FI_SH_MESSAGE_BYTES, "%.*s", FI_SH_MESSAGE_BYTES - 1,
             ctx->last_error);
}

static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

fi_status fi_shard_plan_agree(fi_context *ctx, const fi_attention_params *p,
                              fi_op_family family, int32_t batch, fi_status local,
                              size_t workspace_bytes, fi_plan *plan) {
  fi_comm *comm = ctx->comm;
  if (!comm || comm->size != p->kv_shards) return local; /* nobody to tell (message set) */
  const int32_t R = comm->size;
  const size_t hb = FI_SHARD_HEADER_BYTES;
  int32_t *mine = (int32_t *)calloc((size_t)(R + 1), hb);
  if (!mine) return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "out of host memory");
  int32_t *all = mine + hb / 4;
  /* The plan's capacity comes from the workspace it was given (also when it failed). */
  fill_header(mine, ctx, p, family, batch, local, plan, workspace_bytes);
  char own[FI_ERROR_MESSAGE_BYTES];
  memcpy(own, ctx->last_error, sizeof own);
  fi_status s;
  if (comm->kind == COMM_LOCAL) {
    const void *send[1] = {mine};
    void *recv[1] = {all};
    s = fi_local_allgather(ctx, comm, 1, send, recv, &hb);
  } else {
    s = fi_cuda_shard_agree_exchange(ctx, comm, mine, all, hb);
  }
  if (s != FI_SUCCESS) {
    free(mine);
    if (local == FI_SUCCESS) return s;
    memcpy(ctx->last_error, own, sizeof own);
    return local;
  }
  /* Every rank reaches the same verdict from the same headers: a rank that failed (other
   * than for workspace), then ranks that disagree, then capacity. */
  int32_t need = 0, count_m = 0, count_p = 0, short_rank = -1;
  for (int32_t r = 0; r < R && s == FI_SUCCESS; ++r) {
    const int32_t *h = all + (size_t)r * hb / 4;
    if (h[FI_SH_MAGIC] != FI_SHARD_MAGIC || h[FI_SH_RANK] != r) {
      s = fi_set_error(ctx, FI_ERROR_COMM,
                       "sharded plan: rank %d sent no plan signature (is it running another "
                       "op on this communicator?)", (int)r);
      break;
    }
    if (h[FI_SH_STATUS] != 0 && h[FI_SH_STATUS] != FI_ERROR_WORKSPACE_TOO_SMALL) {
      if (r == comm->rank) {
        memcpy(ctx->last_error, own, sizeof own);
        s = local;
        break;
      }
      char msg[FI_SH_MESSAGE_BYTES + 1];
      memcpy(msg, h + FI_SH_WORDS, FI_SH_MESSAGE_BYTES);
      msg[FI_SH_MESSAGE_BYTES] = 0;
      s = fi_set_error(ctx, FI_ERROR_COMM, "sharded plan: rank %d failed its plan with %s: %s",
                       (int)r, fi_status_string((fi_status)h[FI_SH_STATUS]), msg);
      break;
    }
    /* (a plan that ran out of workspace has no query rows yet: its retry compares them) */
    int w = h[FI_SH_STATUS] || mine[FI_SH_STATUS] ? -1 : fi_shard_header_mismatch(mine, h);
    if (w >= 0) {
      s = fi_set_error(ctx, FI_ERROR_COMM,
                       "sharded plan: rank %d has %s = %d where rank %d has %d: every rank "
                       "must plan the same problem", (int)r, fi_shard_word_name(w), (int)h[w],
                       (int)comm->rank, (int)mine[w]);
      break;
    }
    need = max32(need, max32(h[FI_SH_UNITS], max32(h[FI_SH_MERGE_UNITS], h[FI_SH_PARTIAL_ROWS])));
    count_m = max32(count_m, h[FI_SH_MERGE_UNITS]);
    count_p = max32(count_p, h[FI_SH_PARTIAL_ROWS]);
  }
  if (s == FI_SUCCESS) /* every rank must receive the largest rank's states */
    for (int32_t r = 0; r < R; ++r) {
      const int32_t *h = all + (size_t)r * hb / 4;
      if (h[FI_SH_STATUS] == FI_ERROR_WORKSPACE_TOO_SMALL || h[FI_SH_CAPACITY] < need) {
        short_rank = r;
        break;
      }
    }
  if (s == FI_SUCCESS && short_rank >= 0) {
    const int32_t *h = all + (size_t)short_rank * hb / 4;
    plan->num_partial_rows = need;
    s = fi_set_error(ctx, FI_ERROR_WORKSPACE_TOO_SMALL,
                     "sharded plan: every rank's workspace must hold %d work units, merge "
                     "units and partial rows (the most any rank's plan has) but rank %d's "
                     "holds %d: size each with fi_sharded_workspace_size(ctx, params, %d, "
                     "&bytes) and plan again on every rank (plan->num_partial_rows says %d)",
                     (int)need, (int)short_rank, (int)h[FI_SH_CAPACITY], (int)need, (int)need);
  }
  if (s == FI_SUCCESS) {
    plan->private_[FI_PLAN_SHARD_COUNTS] = ((uint64_t)(uint32_t)count_m << 32) | (uint32_t)count_p;
    fi_shard_layout l = fi_shard_layout_for(p, plan->workspace_bytes);
    char *dst = (char *)plan->workspace + l.off_send_header;
    if (ctx->backend == FI_BACKEND_CUDA)
      s = fi_cuda_upload(ctx, dst, mine, hb);
    else
      memcpy(dst, mine, hb);
  }
  free(mine);
  return s;
}

void fi_shard_part_bytes(const fi_plan *plan, size_t bytes[4]) {
  const fi_attention_params *p = &plan->params;
  const size_t m = (size_t)fi_shard_count_merge(plan), r = (size_t)fi_shard_count_partial(plan);
  bytes[0] = FI_SHARD_HEADER_BYTES;
  bytes[1] = m * sizeof(fi_merge_unit);
  bytes[2] = r * (size_t)p->num_qo_heads * sizeof(float);
  bytes[3] = r * (size_t)p->num_qo_heads * (size_t)p->head_dim * sizeof(float);
}

fi_status fi_shard_exchange(fi_context *ctx, const fi_plan *plan, fi_shard_gathered *g) {
  fi_comm *comm = ctx->comm;
  const int want = ctx->backend == FI_BACKEND_CUDA ? COMM_NCCL : COMM_LOCAL;
  if (!comm || comm->size != plan->params.kv_shards || comm->kind != want)
    return fi_set_error(ctx, FI_ERROR_COMM,
                        "sharded run: the context's communicator is not the %s of the %d ranks "
                        "the plan was made with", want == COMM_NCCL ? "NCCL communicator"
                                                                    : "local group",
                        (int)plan->params.kv_shards);
  const fi_shard_layout l = fi_shard_layout_for(&plan->params, plan->workspace_bytes);
  char *base = (char *)plan->workspace;
  const void *send[4] = {base + l.off_send_header, base + l.off_merge, base + l.off_lse,
                         base + l.off_o};
  void *recv[4] = {base + l.off_headers, base + l.off_g_merge, base + l.off_g_lse,
                   base + l.off_g_o};
  size_t bytes[4];
  fi_shard_part_bytes(plan, bytes);
  if (g) {
    g->mine = (const int32_t *)send[0];
    g->headers = (const char *)recv[0];
    g->merge = (const char *)recv[1];
    g->lse = (const char *)recv[2];
    g->o = (const char *)recv[3];
    g->merge_bytes = bytes[1];
    g->lse_bytes = bytes[2];
    g->o_bytes = bytes[3];
    g->ranks = l.ranks;
  }
#ifdef FI_HAVE_CUDA
  if (comm->kind == COMM_NCCL) return fi_nccl_allgather(ctx, comm, 4, send, recv, bytes, ctx->stream);
#endif
  return fi_local_allgather(ctx, comm, 4, send, recv, bytes);
}

fi_plan fi_shard_effective_plan(const fi_context *ctx, const fi_plan *plan) {
  fi_plan e = *plan;
  if (fi_plan_is_sharded(plan) && plan->family == FI_OP_PAGED_PREFILL &&
      plan->params.mask_mode == FI_MASK_CAUSAL && ctx->comm &&
      ctx->comm->rank < plan->params.kv_shards - 1)
    e.params.mask_mode = FI_MASK_NONE;
  return e;
}

fi_status fi_sharded_workspace_size(fi_context *ctx, const fi_attention_params *params,
                                    int64_t capacity, size_t *bytes) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (!params || !bytes || params->kv_shards < 1 || capacity < 0 || capacity > INT32_MAX)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_sharded_workspace_size: params (with kv_shards >= 1) and bytes must "
                        "not be NULL, capacity in 0..2^31-1 (got %lld)", (long long)capacity);
  fi_status s = fi_validate_params(ctx, params, 1, 0);
  if (s != FI_SUCCESS) return s;
  *bytes = fi_shard_workspace_bytes(params, capacity);
  return FI_SUCCESS;
}

fi_status fi_plan_skip_run(fi_context *ctx, const fi_plan *plan, fi_status status) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (!plan || !fi_plan_is_sharded(plan) || !plan->workspace) return FI_SUCCESS;
  (void)fi_shard_run_failed(ctx, plan, status == FI_SUCCESS ? FI_ERROR_INVALID_ARGUMENT : status);
  return FI_SUCCESS;
}

fi_status fi_comm_synchronize(fi_context *ctx) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (ctx->backend != FI_BACKEND_CUDA) return FI_SUCCESS; /* host runs are synchronous */
  return fi_cuda_comm_synchronize(ctx);
}

fi_status fi_shard_run_failed(fi_context *ctx, const fi_plan *plan, fi_status status) {
  if (!ctx->comm || ctx->comm->size != plan->params.kv_shards || !plan->workspace)
    return status;
  char saved[FI_ERROR_MESSAGE_BYTES];
  memcpy(saved, ctx->last_error, sizeof saved);
  /* this rank's header says so for the one exchange (CUDA: stream-ordered writes) */
  if (ctx->backend == FI_BACKEND_CUDA) {
    if (fi_cuda_shard_mark(ctx, plan, (int32_t)status) == FI_SUCCESS)
      (void)fi_shard_exchange(ctx, plan, NULL);
    (void)fi_cuda_shard_mark(ctx, plan, 0);
  } else {
    fi_shard_layout l = fi_shard_layout_for(&plan->params, plan->workspace_bytes);
    int32_t *h = (int32_t *)((char *)plan->workspace + l.off_send_header);
    h[FI_SH_STATUS] = (int32_t)status;
    (void)fi_shard_exchange(ctx, plan, NULL);
    h[FI_SH_STATUS] = 0;
  }
  memcpy(ctx->last_error, saved, sizeof saved);
  return status;
}
