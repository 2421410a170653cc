/* kernels/host/host_shard.c -- the host backend's exchange and rank-order merge of a
 * KV-sharded run (shard.h): the ranks are threads of one process sharing a local group;
 * each copies every rank's header, merge units and partial states into its own workspace,
 * then merges each query row's chunks over the ranks in order. */
#include <stdio.h>
#include <string.h>

#include "host_merge.h"
#include "host_parallel.h"
#include "internal.h"
#include "shard.h"

typedef struct shard_merge_job {
  const fi_shard_layout *l;
  const size_t *part; /* each rank's bytes of the four parts (its stride in the gathered) */
  const char *base;
  const fi_attention_params *p;
  fi_tensor *o, *lse;
  int32_t ranks;
  fi_host_chunk_run *runs; /* [threads][ranks] */
  int missing;             /* set when a row has no unit on some rank (a planner bug) */
} shard_merge_job;

/* Rank r's merge unit holding query row q (units sorted by out_row), or NULL. */
static const fi_merge_unit *unit_of(const fi_merge_unit *units, int32_t n, int64_t q) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if ((int64_t)units[mid].out_row + units[mid].rows <= q)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < n && units[lo].out_row <= q && q < (int64_t)units[lo].out_row + units[lo].rows)
    return &units[lo];
  return NULL;
}

static void shard_merge_task(void *arg, int64_t q, int32_t thread) {
  shard_merge_job *j = (shard_merge_job *)arg;
  const fi_shard_layout *l = j->l;
  fi_host_chunk_run *runs = j->runs + (size_t)thread * (size_t)j->ranks;
  for (int32_t r = 0; r < j->ranks; ++r) {
    const int32_t *h = (const int32_t *)(j->base + l->off_headers + (size_t)r * FI_SHARD_HEADER_BYTES);
    const fi_merge_unit *units =
        (const fi_merge_unit *)(j->base + l->off_g_merge + (size_t)r * j->part[1]);
    const fi_merge_unit *u = unit_of(units, h[FI_SH_MERGE_UNITS], q);
    if (!u) {
      j->missing = 1;
      return;
    }
    runs[r].po = (const float *)(j->base + l->off_g_o + (size_t)r * j->part[3]);
    runs[r].plse = (const float *)(j->base + l->off_g_lse + (size_t)r * j->part[2]);
    runs[r].first = (int64_t)u->first_partial_row + (q - u->out_row);
    runs[r].stride = u->rows;
    runs[r].count = u->num_chunks;
  }
  for (int32_t h = 0; h < j->p->num_qo_heads; ++h)
    fi_host_merge_row(runs, j->ranks, j->p->num_qo_heads, j->p->head_dim, h, j->o, j->lse, q);
}

fi_status fi_host_shard_exchange_merge(fi_context *ctx, const fi_plan *plan, fi_tensor *o,
                                       fi_tensor *lse) {
  fi_status s = fi_shard_exchange(ctx, plan);
  if (s != FI_SUCCESS || !o) return s;
  const fi_shard_layout l = fi_shard_layout_for(&plan->params, plan->workspace_bytes);
  char *base = (char *)plan->workspace;
  size_t bytes[4];
  fi_shard_part_bytes(plan, bytes);
  const int32_t *mine = (const int32_t *)(base + l.off_send_header);
  for (int32_t r = 0; r < l.ranks; ++r) {
    const int32_t *h = (const int32_t *)(base + l.off_headers + (size_t)r * FI_SHARD_HEADER_BYTES);
    if (h[FI_SH_MAGIC] != FI_SHARD_MAGIC || h[FI_SH_RANK] != r)
      return fi_set_error(ctx, FI_ERROR_COMM, "sharded run: rank %d sent no plan header",
                          (int)r);
    if (h[FI_SH_STATUS] != 0)
      return fi_set_error(ctx, FI_ERROR_COMM,
                          "sharded run: rank %d failed its run with %s (its own error tells "
                          "why); nothing was merged", (int)r,
                          fi_status_string((fi_status)h[FI_SH_STATUS]));
    int w = fi_shard_header_mismatch(mine, h);
    if (w >= 0)
      return fi_set_error(ctx, FI_ERROR_COMM,
                          "sharded run: rank %d ran a plan with %s = %d where this rank's has "
                          "%d: every rank must run the plan of the same step", (int)r,
                          fi_shard_word_name(w), (int)h[w], (int)mine[w]);
  }
  int32_t threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
  fi_host_chunk_run *runs = (fi_host_chunk_run *)fi_context_run_scratch(
      ctx, sizeof(fi_host_chunk_run) * (size_t)threads * (size_t)l.ranks);
  if (!runs) return FI_ERROR_OUT_OF_MEMORY;
  shard_merge_job j = {&l, bytes, base, &plan->params, o, lse, l.ranks, runs, 0};
  fi_host_parallel_for(threads, plan->total_qo_rows, shard_merge_task, &j);
  if (j.missing)
    return fi_set_error(ctx, FI_ERROR_COMM,
                        "sharded run: a query row has no merge unit on some rank (the ranks' "
                        "plans disagree on the query rows)");
  return FI_SUCCESS;
}
