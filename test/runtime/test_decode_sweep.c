/* test/runtime/test_decode_sweep.c -- the decode heuristics replayed against a measured
 * sweep (no GPU needed): `test_decode_sweep <csv>`, one ctest per bench/sweeps/decode_*.csv.
 * Each file holds the median time of every decode variant on a grid of shapes, measured by
 * `FI_BENCH_GRID_OUT=<csv> fi_bench decode` (bench/bench_decode.c: batch 1-128, KV 2k / 16k
 * tokens, groups 1-8; the grid twice, each variant's time the mean of its lines). Its first
 * line names what the grid held fixed -- "head_dim D, page P, fp16" (or "bf16", or "f16 q,
 * e4m3 KV": FI_BENCH_DECODE_HEAD_DIM, FI_BENCH_DECODE_PAGE, FI_BENCH_GRID_KV) -- and the
 * test builds the problem from it as api.c's select_decode_tiles does. For every shape it
 * asks fi_select_decode_tiles for the variant the runtime would plan on an sm_90 target of
 * 132 SMs (the H100's and the H200's facts alike) and requires its recorded time to be
 * within 3 % of the shape's fastest variant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/heuristics.h"

enum { MAX_ROWS = 8192, TOLERANCE_PERMILLE = 1030 };

typedef struct sweep_row {
  int batch, kv_len, qo_heads, kv_heads;
  char variant[48];
  double us;
} sweep_row;

/* What the grid held fixed, from the file's first line. */
typedef struct sweep_setup {
  int head_dim, page_size, kv_fp8, kv_matches_q; /* (q: 16-bit in every grid) */
} sweep_setup;

/* The integer after `key ` in `line`, or -1. */
static int header_int(const char *line, const char *key) {
  const char *at = strstr(line, key);
  int v = -1;
  if (!at || sscanf(at + strlen(key), " %d", &v) != 1) return -1;
  return v;
}

static int parse_setup(const char *line, sweep_setup *s) {
  s->head_dim = header_int(line, "head_dim");
  s->page_size = header_int(line, ", page");
  s->kv_fp8 = strstr(line, "e4m3 KV") != NULL;
  s->kv_matches_q = !s->kv_fp8 && (strstr(line, "fp16") || strstr(line, "bf16"));
  return s->head_dim > 0 && s->page_size > 0 && (s->kv_fp8 || s->kv_matches_q);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_decode_sweep <sweep.csv> (bench/sweeps/)\n");
    return 2;
  }
  const char *path = argv[1];
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "test_decode_sweep: cannot read %s\n", path);
    return 1;
  }
  static sweep_row rows[MAX_ROWS];
  int n = 0, have_setup = 0;
  sweep_setup setup = {0, 0, 0, 0};
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (n == MAX_ROWS) {
      fprintf(stderr, "test_decode_sweep: %s: more than %d rows\n", path, MAX_ROWS);
      fclose(f);
      return 1;
    }
    sweep_row *r = &rows[n];
    if (line[0] == '#') {
      if (!have_setup && !parse_setup(line, &setup)) {
        fprintf(stderr, "test_decode_sweep: %s: the first line must name the grid's "
                "\"head_dim D, page P\" and its dtypes (fp16, bf16 or \"e4m3 KV\"), as "
                "fi_bench decode writes it: %s", path, line);
        fclose(f);
        return 1;
      }
      have_setup = 1;
      continue;
    }
    if (!strncmp(line, "batch", 5)) continue;
    if (sscanf(line, "%d,%d,%d,%d,%47[^,],%lf", &r->batch, &r->kv_len, &r->qo_heads,
               &r->kv_heads, r->variant, &r->us) == 6)
      ++n;
  }
  fclose(f);
  if (!have_setup || n < 100) {
    fprintf(stderr, "test_decode_sweep: %s: %s\n", path,
            have_setup ? "fewer than 100 rows" : "no header line");
    return 1;
  }
  printf("test_decode_sweep: %s: head_dim %d, page %d, %s KV\n", path, setup.head_dim,
         setup.page_size, setup.kv_fp8 ? "e4m3" : "16-bit");
  const fi_target sm90 = fi_target_default(); /* sm_90, 132 SMs */
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
    p.head_dim = setup.head_dim;
    p.q_dtype_bytes = 2;
    p.kv_dtype_bytes = setup.kv_fp8 ? 1 : 2;
    p.avg_qo_len = 1;
    p.avg_kv_len = rows[i].kv_len;
    p.page_size = setup.page_size;
    /* (api.c select_decode_tiles: 16-bit q; KV of q's dtype or fp8; pages in boxes) */
    p.fast_path = fi_decode_page_box_rows(setup.page_size) != 0 &&
                  (setup.kv_fp8 || setup.kv_matches_q);
    char chosen[64];
    fi_tiles_name(fi_select_decode_tiles(&sm90, &p), 1, chosen, sizeof chosen);
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
