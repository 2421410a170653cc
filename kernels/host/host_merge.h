/* kernels/host/host_merge.h -- the host backend's merge of a query row's split-KV partial
 * states, shared by the split-KV merge of a plan and the rank-order merge of a KV-sharded
 * run (the same arithmetic in the same order, so both give the same bits). */
#ifndef FI_HOST_MERGE_H
#define FI_HOST_MERGE_H

#include <stdint.h>

#include "fi/runtime.h"

/* `count` partial rows first, first + stride, ... of the fp32 partial arrays po
 * [rows, qo_heads, head_dim] and plse [rows, qo_heads]. */
typedef struct fi_host_chunk_run {
  const float *po, *plse;
  int64_t first, stride, count;
} fi_host_chunk_run;

/* Merges head h of one query row from its chunks (the runs in order, each in its order)
 * into o [out_row, h] and lse [out_row, h] (lse may be NULL): o = sum_c w_c o_c / sum_c w_c
 * with w_c = exp(lse_c - max lse), lse = max + log(sum w); no chunk attended: 0, -inf. */
void fi_host_merge_row(const fi_host_chunk_run *runs, int32_t num_runs, int32_t qo_heads,
                       int32_t head_dim, int32_t h, fi_tensor *o, fi_tensor *lse,
                       int64_t out_row);

#endif
