/* kernels/src/shard.h -- context parallelism inside the runtime (runtime.h, "Context
 * parallelism"): communicators, the workspace regions of a KV-sharded plan, the plan's
 * signature exchange and the exchange + merge of a sharded run. Not installed.
 *
 * A sharded plan (params.kv_shards = R) lays its workspace out as an unsharded one with n
 * work units = n merge units = n partial rows (every (request, query tile) writes partial
 * states, also when it has one chunk), followed by
 *
 *   send header  [1] x 256 bytes       this rank's header (fi_shard_header), written by
 *                                      the plan; a failed run marks its status word
 *   gathered     [R] x 256 bytes       every rank's header
 *   gathered     [R] x merge region    every rank's merge units (n x fi_merge_unit)
 *   gathered     [R] x lse region      every rank's partial lse (n x qo_heads f32)
 *   gathered     [R] x o region        every rank's partial o (n x qo_heads x head_dim f32)
 *
 * (each region 256-byte aligned). The plan's signature exchange agrees on the counts every
 * rank sends: M = the most merge units and P = the most partial rows of any rank's plan
 * (each rank's capacity must hold both, and its own units). A run's exchange is four
 * all-gathers -- the send header, M merge units, P rows of partial lse and P of partial o,
 * from the plan layout's regions -- into the gathered regions, rank r's part at r times its
 * count (NCCL, grouped, on the context's stream; the host backend copies between the ranks'
 * buffers),
 * then a merge of each query row over the ranks in order: rank r's merge unit holding the
 * row (binary search of its table by out_row) lists the row's chunks, which are appended
 * to the row's chunk list; the list is merged as the split-KV merge merges one unit's
 * chunks (the same code: bit-identical). */
#ifndef FI_KERNELS_SHARD_H
#define FI_KERNELS_SHARD_H

#include "backend.h"
#include "context.h"
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FI_SHARD_MAX_RANKS = 1024, FI_SHARD_HEADER_BYTES = 256, FI_SHARD_MAGIC = 0x46495348 };

/* Words of a rank's header (int32), then a message (the plan's error) to its end. */
enum {
  FI_SH_MAGIC = 0,
  FI_SH_RANK,
  FI_SH_NRANKS,
  FI_SH_STATUS,      /* 0: fine; else the fi_status of a failed plan or run (low byte) */
  FI_SH_FAMILY,
  FI_SH_BATCH,
  FI_SH_QO_ROWS,     /* total query rows */
  FI_SH_MERGE_UNITS, /* merge units of the rank's plan */
  FI_SH_QO_HEADS,
  FI_SH_KV_HEADS,
  FI_SH_HEAD_DIM,
  FI_SH_Q_DTYPE,
  FI_SH_KV_DTYPE,
  FI_SH_CAPACITY,    /* n: units = merge units = partial rows of the workspace */
  FI_SH_MASK,
  FI_SH_SPLIT,       /* fixed_split_size */
  FI_SH_UNITS,       /* work units the rank's plan has (or, when it failed for want of
                        workspace, needs); FI_SH_MERGE_UNITS likewise */
  FI_SH_PARTIAL_ROWS, /* partial rows, likewise */
  FI_SH_WORDS = 24,
  FI_SH_MESSAGE_BYTES = FI_SHARD_HEADER_BYTES - FI_SH_WORDS * 4
};

/* What the run-time merge checks of every rank's header against its own (CUDA: the
 * kernel; host: the exchange). The index of the first word that differs, or -1. */
#ifdef __CUDACC__
#define FI_SHARD_HD __host__ __device__
#else
#define FI_SHARD_HD
#endif
static inline FI_SHARD_HD int fi_shard_header_mismatch(const int32_t *mine,
                                                       const int32_t *theirs) {
  for (int w = FI_SH_NRANKS; w < FI_SH_WORDS; ++w) {
    if (w == FI_SH_STATUS || w == FI_SH_MERGE_UNITS || w == FI_SH_CAPACITY || w >= FI_SH_UNITS)
      continue; /* per rank */
    if (mine[w] != theirs[w]) return w;
  }
  return -1;
}

/* The verdict on rank r's header in a run (the status record codes fi_device_plan_error
 * reads): 0 fine; FI_SHARD_PEER_FAILED (value: the peer's fi_status); FI_SHARD_MISMATCH
 * (value: the word that differs, -1 for no header). */
enum { FI_SHARD_PEER_FAILED = 13, FI_SHARD_MISMATCH = 14, FI_SHARD_NO_UNIT = 15 };
static inline FI_SHARD_HD int fi_shard_header_verdict(const int32_t *mine, const int32_t *h,
                                                      int r, int *value) {
  if (h[FI_SH_MAGIC] != FI_SHARD_MAGIC || h[FI_SH_RANK] != r) return *value = -1, FI_SHARD_MISMATCH;
  if (h[FI_SH_STATUS] != 0) return *value = h[FI_SH_STATUS] & 0xff, FI_SHARD_PEER_FAILED;
  const int w = fi_shard_header_mismatch(mine, h);
  if (w >= 0) return *value = w, FI_SHARD_MISMATCH;
  return 0;
}

/* The merge unit of `units` (n, sorted by out_row) that holds query row q, or -1. */
static inline FI_SHARD_HD int fi_shard_unit_of(const fi_merge_unit *units, int n, int64_t q) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if ((int64_t)units[mid].out_row + units[mid].rows <= q) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && units[lo].out_row <= q && q < (int64_t)units[lo].out_row + units[lo].rows
             ? lo : -1;
}
const char *fi_shard_word_name(int word);

/* Regions of a sharded plan's workspace (offsets from the workspace base). */
typedef struct fi_shard_layout {
  int32_t ranks;
  int64_t capacity;                          /* n */
  size_t off_merge, off_lse, off_o;          /* this rank's regions (the plan layout) */
  size_t merge_bytes, lse_bytes, o_bytes;    /* each region's size (256-aligned) */
  size_t off_send_header, off_headers, off_g_merge, off_g_lse, off_g_o;
  size_t total;
} fi_shard_layout;

/* The layout of a sharded workspace of `bytes` for `p` (capacity 0 when it holds none). */
fi_shard_layout fi_shard_layout_for(const fi_attention_params *p, size_t bytes);
/* The exact bytes of a sharded workspace of capacity n. */
size_t fi_shard_workspace_bytes(const fi_attention_params *p, int64_t n);
static inline int fi_plan_is_sharded(const fi_plan *plan) { return plan->params.kv_shards > 0; }
/* The agreed exchange counts of a sharded plan (merge units M, partial rows P). */
static inline int64_t fi_shard_count_merge(const fi_plan *plan) {
  return (int64_t)(plan->private_[FI_PLAN_SHARD_COUNTS] >> 32);
}
static inline int64_t fi_shard_count_partial(const fi_plan *plan) {
  return (int64_t)(plan->private_[FI_PLAN_SHARD_COUNTS] & 0xffffffffu);
}
/* Bytes each rank sends of the four parts (header, merge units, lse, o). */
void fi_shard_part_bytes(const fi_plan *plan, size_t bytes[4]);

/* The communicator behind fi_comm (shard.c). */
struct fi_comm {
  int kind; /* 1: NCCL, 2: local group */
  int32_t rank, size;
  int64_t timeout_ms;
  void *nccl;    /* ncclComm_t */
  int owned;     /* fi_comm_destroy destroys the NCCL communicator */
  int aborted;
  struct fi_local_group *group;
};

/* Local groups (host): all-gather of `parts` buffers, each rank's part p of bytes[p] from
 * send[p] to recv[p] + r * bytes[p]. Blocks until every rank has posted and copied (at most
 * the timeout; FI_ERROR_COMM with a message naming the missing ranks). */
fi_status fi_local_allgather(fi_context *ctx, fi_comm *comm, int parts, const void *const *send,
                             void *const *recv, const size_t *bytes);

/* NCCL through dlopen (shard.c): an all-gather of `parts` byte buffers in one group on
 * `stream`. */
fi_status fi_nccl_allgather(fi_context *ctx, fi_comm *comm, int parts, const void *const *send,
                            void *const *recv, const size_t *bytes, void *stream);
/* Polls `done` (returns 1 when the awaited work finished, 0 while pending, < 0 on error)
 * and the communicator's async error until the timeout; aborts the communicator on
 * timeout. */
fi_status fi_nccl_wait(fi_context *ctx, fi_comm *comm, int (*done)(void *), void *arg,
                       const char *what);

/* The plan's signature exchange (api.c calls it after building a sharded plan, whatever
 * the local result `local` was; blocking): fills this rank's header (its capacity from
 * workspace_bytes), exchanges it, and returns FI_SUCCESS only when every rank planned
 * successfully and alike. On success it writes the header into the workspace's send
 * header. */
fi_status fi_shard_plan_agree(fi_context *ctx, const fi_attention_params *params,
                              fi_op_family family, int32_t batch, fi_status local,
                              size_t workspace_bytes, fi_plan *plan);

/* The local checks of a sharded plan (features refused, communicator present and of the
 * right size); mask: causal prefill on ranks < R - 1 runs unmasked (the plan's params). */
fi_status fi_shard_check_params(fi_context *ctx, const fi_attention_params *params,
                                fi_op_family family);

/* A run that failed its checks on this rank still joins the exchange, with its status in
 * its header, so that no peer waits for it. Returns `status`. */
fi_status fi_shard_run_failed(fi_context *ctx, const fi_plan *plan, fi_status status);
/* The plan a sharded run computes with: causal prefill on a rank below the last runs
 * unmasked (its keys all precede every query). */
fi_plan fi_shard_effective_plan(const fi_context *ctx, const fi_plan *plan);

/* Where a run's exchange put every rank's states (in the plan's workspace): rank r's header
 * at headers + r * FI_SHARD_HEADER_BYTES, its merge units / partial lse / partial o at
 * merge / lse / o + r times that part's bytes (the counts the plan agreed on). */
typedef struct fi_shard_gathered {
  const int32_t *mine;     /* this rank's header */
  const char *headers, *merge, *lse, *o;
  size_t merge_bytes, lse_bytes, o_bytes;
  int32_t ranks;
} fi_shard_gathered;

/* The run's exchange: every rank's header, merge units and partial states into the
 * gathered regions (local groups: a copy between the ranks; NCCL: grouped all-gathers on
 * the context's stream). *g (may be NULL) says where they are. */
fi_status fi_shard_exchange(fi_context *ctx, const fi_plan *plan, fi_shard_gathered *g);

/* The merge in rank order of a run's gathered states into o, lse, after the exchange.
 * Host: checks the headers (FI_ERROR_COMM naming a peer that failed or differs). CUDA:
 * shard.cu's kernel (a peer's failure: NaN outputs and the workspace's status record). */
fi_status fi_host_shard_merge(fi_context *ctx, const fi_plan *plan,
                              const fi_shard_gathered *g, fi_tensor *o, fi_tensor *lse);
fi_status fi_cuda_shard_merge(fi_context *ctx, const fi_plan *plan,
                              const fi_shard_gathered *g, fi_tensor *o, fi_tensor *lse);
/* CUDA: waits for ctx's stream, polling the communicator, at most its timeout (then aborts
 * it). */
fi_status fi_cuda_comm_synchronize(fi_context *ctx);
/* CUDA: copies host -> device on ctx's stream and back, waiting with the comm's timeout
 * (the signature exchange). */
fi_status fi_cuda_shard_agree_exchange(fi_context *ctx, fi_comm *comm, const void *send_host,
                                       void *recv_host, size_t bytes);
/* CUDA: sets the status word of the plan's send header (cudaMemsetAsync of its low byte). */
fi_status fi_cuda_shard_mark(fi_context *ctx, const fi_plan *plan, int32_t status);

#ifdef __cplusplus
}
#endif
#endif
