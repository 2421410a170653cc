/* test/runtime/test_decode_sweep.c -- the decode heuristics replayed against a measured
 * sweep (no GPU needed). bench/sweeps/decode_h100.csv holds the median time of every decode
 * variant on a grid of shapes, measured on an H100 by `FI_BENCH_GRID_OUT=<csv> fi_bench
 * decode` (bench/bench_decode.c: batch 1-128, KV 2k / 16k tokens, groups 1-8, head_dim 128,
 * page 16, fp16, or with FI_BENCH_GRID_KV=e4m3 an e4m3 cache (FI_SWEEP_KV_BYTES 1), or
 * with FI_BENCH_GRID_BATCHES other batches (decode_h200_band.csv: 5, 20, 28, 40); the
 * grid twice, each variant's time the mean of its lines). For every
 * shape the test asks fi_select_decode_tiles for the variant the
 * runtime would plan (the problem as api.c builds it for such a decode on an H100) and
 * requires its recorded time to be within 3 % of the shape's fastest variant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/heuristics.h"

#ifndef FI_SWEEP_CSV
#error "FI_SWEEP_CSV (the recorded sweep) must be defined by the build"
#endif
#ifndef FI_SWEEP_KV_BYTES
#define FI_SWEEP_KV_BYTES 2 /* 1: a sweep over an e4m3 KV cache (FI_BENCH_GRID_KV=e4m3) */
#endif

enum { MAX_ROWS = 4096, TOLERANCE_PERMILLE = 1030 };

typedef struct sweep_row {
  int batch, kv_len, qo_heads, kv_heads;
  char variant[48];
  double us;
} sweep_row;

int main(void) {
  FILE *f = fopen(FI_SWEEP_CSV, "r");
  if (!f) {
    fprintf(stderr, "test_decode_sweep: cannot read %s\n", FI_SWEEP_CSV);
    return 1;
  }
  static sweep_row rows[MAX_ROWS];
  int n = 0;
  char line[256];
  while (fgets(line, sizeof line, f) && n < MAX_ROWS) {
    sweep_row *r = &rows[n];
    if (line[0] == '#' || !strncmp(line, "batch", 5)) continue;
    if (sscanf(line, "%d,%d,%d,%d,%47[^,],%lf", &r->batch, &r->kv_len, &r->qo_heads,
               &r->kv_heads, r->variant, &r->us) == 6)
      ++n;
  }
  fclose(f);
  if (n < 100) {
    fprintf(stderr, "test_decode_sweep: only %d rows in %s\n", n, FI_SWEEP_CSV);
    return 1;
  }
  const fi_target h100 = fi_target_default(); /* sm_90, 132 SMs: the sweep's H100 */
  int shapes = 0, bad = 0, missing = 0;
  double worst = 1.0;
  for (int i = 0; i < n; ++i) {
    /* the first row of each shape */
    int seen = 0;
    for (int j = 0; j < i && !seen; ++j)
      seen = rows[j].batch == rows[i].batch && rows[j].kv_len == rows[i].kv_len &&
             rows[j].qo_heads == rows[i].qo_heads && rows[j].kv_heads == rows[i].kv_heads;
    if (seen) continue;
    ++shapes;
    fi_tile_problem p;
    memset(&p, 0, sizeof p);
    p.batch = rows[i].batch;
    p.num_qo_heads = rows[i].qo_heads;
    p.num_kv_heads = rows[i].kv_heads;
    p.head_dim = 128;
    p.q_dtype_bytes = 2;
    p.kv_dtype_bytes = FI_SWEEP_KV_BYTES;
    p.avg_qo_len = 1;
    p.avg_kv_len = rows[i].kv_len;
    p.fast_path = 1; /* fp16 KV of q's dtype or e4m3 KV, page 16 */
    char chosen[64];
    fi_tiles_name(fi_select_decode_tiles(&h100, &p), 1, chosen, sizeof chosen);
    double best = 0, mine = 0;
    const char *best_name = "";
    for (int j = i; j < n; ++j) {
      const sweep_row *r = &rows[j];
      if (r->batch != rows[i].batch || r->kv_len != rows[i].kv_len ||
          r->qo_heads != rows[i].qo_heads || r->kv_heads != rows[i].kv_heads)
        continue;
      /* the variant's mean over its lines (each first line of a variant only) */
      int first = 1;
      double sum = 0;
      int count = 0;
      for (int k = i; k < n && first; ++k) {
        const sweep_row *x = &rows[k];
        if (x->batch != r->batch || x->kv_len != r->kv_len || x->qo_heads != r->qo_heads ||
            x->kv_heads != r->kv_heads || strcmp(x->variant, r->variant))
          continue;
        if (k < j) first = 0;
        sum += x->us;
        ++count;
      }
      if (!first) continue;
      const double us = sum / count;
      if (best == 0 || us < best) best = us, best_name = r->variant;
      if (!strcmp(r->variant, chosen)) mine = us;
    }
    if (mine == 0) {
      printf("MISSING (%d, %d, %d, %d): the chosen %s was not measured\n", rows[i].batch,
             rows[i].kv_len, rows[i].qo_heads, rows[i].kv_heads, chosen);
      ++missing;
      continue;
    }
    const double ratio = mine / best;
    if (ratio > worst) worst = ratio;
    const int ok = ratio * 1000 <= TOLERANCE_PERMILLE;
    bad += !ok;
    printf("%s (%d, %d, %d, %d): chosen %s %.1f us, fastest %s %.1f us (%.3fx)\n",
           ok ? "ok  " : "SLOW", rows[i].batch, rows[i].kv_len, rows[i].qo_heads,
           rows[i].kv_heads, chosen, mine, best_name, best, ratio);
  }
  printf("test_decode_sweep: %d shapes, %d more than 3 %% slower than the fastest, %d not "
         "measured; worst %.3fx\n", shapes, bad, missing, worst);
  return bad || missing ? 1 : 0;
}
