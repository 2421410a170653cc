/* kernels/host/host_shard.c -- the host backend's rank-order merge of a KV-sharded run
 * (shard.h): the ranks are threads of one process sharing a local group; after the
 * exchange (fi_shard_exchange) each holds every rank's header, merge units and partial
 * states in its own workspace and merges each query row's chunks over the ranks in order. */
#include <stdio.h>
#include <string.h>

#include "host_merge.h"
#include "host_parallel.h"
#include "internal.h"
#include "shard.h"

typedef struct shard_merge_job {
  const fi_shard_gathered *g;
  const fi_attention_params *p;
  fi_tensor *o, *lse;
  fi_host_chunk_run *runs; /* [threads][ranks] */
  int missing;             /* set when a row has no unit on some rank (a planner bug) */
} shard_merge_job;

static void shard_merge_task(void *arg, int64_t q, int32_t thread) {
  shard_merge_job *j = (shard_merge_job *)arg;
  const fi_shard_gathered *g = j->g;
  fi_host_chunk_run *runs = j->runs + (size_t)thread * (size_t)g->ranks;
  for (int32_t r = 0; r < g->ranks; ++r) {
    const int32_t *h = (const int32_t *)(g->headers + (size_t)r * FI_SHARD_HEADER_BYTES);
    const fi_merge_unit *units = (const fi_merge_unit *)(g->merge + (size_t)r * g->merge_bytes);
    const int u = fi_shard_unit_of(units, h[FI_SH_MERGE_UNITS], q);
    if (u < 0) {
      j->missing = 1;
      return;
    }
    runs[r].po = (const float *)(g->o + (size_t)r * g->o_bytes);
    runs[r].plse = (const float *)(g->lse + (size_t)r * g->lse_bytes);
    runs[r].first = (int64_t)units[u].first_partial_row + (q - units[u].out_row);
    runs[r].stride = units[u].rows;
    runs[r].count = units[u].num_chunks;
  }
  for (int32_t h = 0; h < j->p->num_qo_heads; ++h)
    fi_host_merge_row(runs, g->ranks, j->p->num_qo_heads, j->p->head_dim, h, j->o, j->lse, q);
}

fi_status fi_host_shard_merge(fi_context *ctx, const fi_plan *plan,
                              const fi_shard_gathered *g, fi_tensor *o, fi_tensor *lse) {
  for (int32_t r = 0; r < g->ranks; ++r) {
    const int32_t *h = (const int32_t *)(g->headers + (size_t)r * FI_SHARD_HEADER_BYTES);
    int value = 0;
    const int verdict = fi_shard_header_verdict(g->mine, h, r, &value);
    if (verdict == FI_SHARD_PEER_FAILED)
      return fi_set_error(ctx, FI_ERROR_COMM,
                          "sharded run: rank %d failed its run with %s (its own error tells "
                          "why); nothing was merged", (int)r, fi_status_string((fi_status)value));
    if (verdict == FI_SHARD_MISMATCH && value < 0)
      return fi_set_error(ctx, FI_ERROR_COMM, "sharded run: rank %d sent no plan header",
                          (int)r);
    if (verdict == FI_SHARD_MISMATCH)
      return fi_set_error(ctx, FI_ERROR_COMM,
                          "sharded run: rank %d ran a plan with %s = %d where this rank's has "
                          "%d: every rank must run the plan of the same step", (int)r,
                          fi_shard_word_name(value), (int)h[value], (int)g->mine[value]);
  }
  int32_t threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
  fi_host_chunk_run *runs = (fi_host_chunk_run *)fi_context_run_scratch(
      ctx, sizeof(fi_host_chunk_run) * (size_t)threads * (size_t)g->ranks);
  if (!runs) return FI_ERROR_OUT_OF_MEMORY;
  shard_merge_job j = {g, &plan->params, o, lse, runs, 0};
  fi_host_parallel_for(threads, plan->total_qo_rows, shard_merge_task, &j);
  if (j.missing)
    return fi_set_error(ctx, FI_ERROR_COMM,
                        "sharded run: a query row has no merge unit on some rank (the ranks' "
                        "plans disagree on the query rows)");
  return FI_SUCCESS;
}
