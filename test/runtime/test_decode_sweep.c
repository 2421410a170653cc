/* test/runtime/test_decode_sweep.c -- the decode heuristics replayed against a measured
 * sweep (no GPU needed): `test_decode_sweep <csv>`, one ctest per bench/sweeps/decode_*.csv.
 * Each file holds the median time of every decode variant on a grid of shapes, measured by
 * `FI_BENCH_GRID_OUT=<csv> fi_bench decode` (bench/bench_decode.c: batch 1-128, KV 2k / 16k
 * tokens, groups 1-8; the grid twice, each variant's time the mean of its lines). Its first
 * line names what the grid held fixed -- "head_dim D, page P, fp16" (or "bf16", or "f16 q,
 * e4m3 KV": FI_BENCH_DECODE_HEAD_DIM, FI_BENCH_DECODE_PAGE, FI_BENCH_GRID_KV) -- and the
 * test builds the problem from it as api.c's select_decode_tiles does. For every shape it
 * asks fi_select_decode_tiles for the variant the runtime would plan on the grid's device
 * -- an sm_90 target of 132 SMs (the H100's and the H200's facts alike) with the memory
 * bandwidth per SM the runtime computed there: the header's "dram N GB/s per SM", or for
 * grids recorded before it was written, 25 on an H100 and 36 on an H200 (what context.cu
 * computes on those devices) -- and requires its recorded time to be within 3 % of the
 * shape's fastest variant.
 *
 * Variants that run the same kernel with the same plan count as one: on the shapes that the
 * warp-specialised decode kernel runs (tensor cores on the fast path, internal.h
 * fi_decode_tws_shape_ok), its launch ignores kv_tile, so the tensor-core variants that
 * differ only in kv_tile are one measurement repeated (left apart, the order in which the
 * grid ran them moved them by up to 6 %). A kernel's time is the median of its lines (the
 * mean of the middle two for an even count: a variant's two passes, their mean), so that
 * one disturbed line among a pooled kernel's six does not decide (page12's (1, 2048, 32, 8):
 * 84.2 us once against 17.7-17.9 five times). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/heuristics.h"
#include "internal.h"

enum { MAX_ROWS = 8192, TOLERANCE_PERMILLE = 1030 };

typedef struct sweep_row {
  int batch, kv_len, qo_heads, kv_heads;
  char variant[48];
  char kernel[48]; /* the name it is compared under (kernel_key) */
  double us;
} sweep_row;

static int same_shape(const sweep_row *a, const sweep_row *b) {
  return a->batch == b->batch && a->kv_len == b->kv_len && a->qo_heads == b->qo_heads &&
         a->kv_heads == b->kv_heads;
}

/* What the grid held fixed, from the file's first line. */
typedef struct sweep_setup {
  int head_dim, page_size, kv_fp8, kv_matches_q; /* (q: 16-bit in every grid) */
  int dram_gbps_per_sm;                          /* the device's (0: unknown) */
} sweep_setup;

/* The name under which `variant` is compared: with `pool_kv_tile` (the shape runs the
 * warp-specialised kernel) a tensor-core variant's kv_tile is dropped ("decode_tc_q16_kv32_split"
 * -> "decode_tc_q16_kv*_split"), else the name itself. */
static void kernel_key(const char *variant, int pool_kv_tile, char *key, size_t size) {
  const char *kv = strstr(variant, "_kv");
  if (!pool_kv_tile || strncmp(variant, "decode_tc_", 10) || !kv) {
    snprintf(key, size, "%s", variant);
    return;
  }
  const char *rest = kv + 3;
  while (*rest >= '0' && *rest <= '9') ++rest;
  snprintf(key, size, "%.*s_kv*%s", (int)(kv - variant), variant, rest);
}

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

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
  s->dram_gbps_per_sm = header_int(line, "dram");
  if (s->dram_gbps_per_sm < 0)
    s->dram_gbps_per_sm = strstr(line, " H200") ? 36 : strstr(line, " H100") ? 25 : 0;
  return s->head_dim > 0 && s->page_size > 0 && (s->kv_fp8 || s->kv_matches_q);
}

/* The tile problem of a row's shape, as api.c's select_decode_tiles builds it. */
static fi_tile_problem shape_problem(const sweep_setup *setup, const sweep_row *r) {
  fi_tile_problem p;
  memset(&p, 0, sizeof p);
  p.batch = r->batch;
  p.num_qo_heads = r->qo_heads;
  p.num_kv_heads = r->kv_heads;
  p.head_dim = setup->head_dim;
  p.q_dtype_bytes = 2;
  p.kv_dtype_bytes = setup->kv_fp8 ? 1 : 2;
  p.avg_qo_len = 1;
  p.avg_kv_len = r->kv_len;
  p.page_size = setup->page_size;
  /* (api.c select_decode_tiles: 16-bit q; KV of q's dtype or fp8; pages in boxes) */
  p.fast_path = fi_decode_page_box_rows(setup->page_size) != 0 &&
                (setup->kv_fp8 || setup->kv_matches_q);
  return p;
}

/* Whether the warp-specialised decode kernel runs the row's tensor-core variants (its launch
 * ignores kv_tile: kernel_key pools them). */
static int pools_kv_tile(const sweep_setup *setup, const sweep_row *r) {
  const fi_dtype kv_dt = setup->kv_fp8 ? FI_DTYPE_E4M3 : FI_DTYPE_F16;
  return shape_problem(setup, r).fast_path &&
         fi_decode_tws_shape_ok(FI_DTYPE_F16, kv_dt, setup->head_dim,
                                r->qo_heads / r->kv_heads, setup->page_size, 0);
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
  sweep_setup setup = {0, 0, 0, 0, 0};
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
  printf("test_decode_sweep: %s: head_dim %d, page %d, %s KV, %d GB/s per SM\n", path,
         setup.head_dim, setup.page_size, setup.kv_fp8 ? "e4m3" : "16-bit",
         setup.dram_gbps_per_sm);
  for (int i = 0; i < n; ++i)
    kernel_key(rows[i].variant, pools_kv_tile(&setup, &rows[i]), rows[i].kernel,
               sizeof rows[i].kernel);
  fi_target sm90 = fi_target_default(); /* sm_90, 132 SMs */
  sm90.dram_gbps_per_sm = setup.dram_gbps_per_sm;
  int shapes = 0, bad = 0, missing = 0;
  double worst = 1.0;
  for (int i = 0; i < n; ++i) {
    /* the first row of each shape */
    int seen = 0;
    for (int j = 0; j < i && !seen; ++j) seen = same_shape(&rows[j], &rows[i]);
    if (seen) continue;
    ++shapes;
    const fi_tile_problem p = shape_problem(&setup, &rows[i]);
    char chosen_variant[64], chosen[48];
    const char *best_name = "";
    fi_tiles_name(fi_select_decode_tiles(&sm90, &p), 1, chosen_variant, sizeof chosen_variant);
    kernel_key(chosen_variant, pools_kv_tile(&setup, &rows[i]), chosen, sizeof chosen);
    double best = 0, mine = 0;
    for (int j = i; j < n; ++j) {
      const sweep_row *r = &rows[j];
      if (!same_shape(r, &rows[i])) continue;
      /* the kernel's median over its lines (at the first line of each kernel only) */
      int first = 1, count = 0;
      double times[64];
      for (int k = i; k < n && first; ++k) {
        const sweep_row *x = &rows[k];
        if (!same_shape(x, r) || strcmp(x->kernel, r->kernel)) continue;
        if (k < j) first = 0;
        if (count < 64) times[count++] = x->us;
      }
      if (!first) continue;
      qsort(times, (size_t)count, sizeof times[0], compare_doubles);
      const double us = count % 2 ? times[count / 2]
                                  : 0.5 * (times[count / 2 - 1] + times[count / 2]);
      if (best == 0 || us < best) best = us, best_name = r->kernel;
      if (!strcmp(r->kernel, chosen)) mine = us;
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
