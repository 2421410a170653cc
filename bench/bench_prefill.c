/* bench/bench_prefill.c -- the prefill table: batch ragged prefill, fp16, head_dim 128,
 * causal (bottom-right aligned), qo_len = kv_len, two head_dim 256 rows of Gemma's shapes
 * (16 / 8 heads), and paged cases (8 x 512 new tokens on 4096 cached, and one causal 8192,
 * page 16), each over a shuffled page table and over pages in order (the warp-specialised
 * kernel loads a tile of consecutive pages as one box). Each case runs the plan the heuristics choose (variant
 * printed), then a tile sweep forces every compiled (q_tile, kv_tile) variant on the same
 * inputs ("sweep" rows, fewer repeats) and reports whether the chosen variant is within
 * 10% of the best one (the chosen variant's sweep row against the best sweep row).
 *
 * FLOPs: 4 * head_dim * qo_heads * (unmasked (query, key) pairs), the pairs counted exactly
 * for the bottom-right causal mask: query i of a request with qo_len queries and kv_len
 * keys sees kv_len - qo_len + i + 1 keys. Bytes: q, k, v read once and o written once.
 * FI_BENCH_PREFILL_MASK=none runs the same rows without the causal mask (every pair). */
#include <string.h>

#include "bench.h"
#include "fi/cuda_variants.h"

typedef struct prefill_arg {
  fi_context *ctx;
  fi_plan plan;
  int paged;
  fi_tensor q, k, v, o;
  fi_paged_kv_cache kv;
  fi_page_table pages;
  int32_t *qo_indptr, *kv_indptr;
} prefill_arg;

static void run_prefill(void *p) {
  prefill_arg *a = (prefill_arg *)p;
  if (a->paged)
    FI_BENCH_OK(a->ctx, fi_paged_prefill_run(a->ctx, &a->plan, &a->q, a->qo_indptr, &a->kv,
                                             &a->pages, NULL, &a->o, NULL));
  else
    FI_BENCH_OK(a->ctx, fi_ragged_prefill_run(a->ctx, &a->plan, &a->q, &a->k, &a->v,
                                              a->qo_indptr, a->kv_indptr, NULL, &a->o, NULL));
}

/* (q_tile, kv_tile, cores): every compiled variant (fi/cuda_variants.h), the mma.sync ones
 * first, then the wgmma (Hopper) tier. */
#define FI_SWEEP_TENSOR(Q, KV) {(Q), (KV), FI_CORES_TENSOR},
#define FI_SWEEP_WGMMA(Q, KV) {(Q), (KV), FI_CORES_WGMMA},
static const int sweep_tiles[][3] = {FI_CUDA_PREFILL_TILE_LIST(FI_SWEEP_TENSOR)
                                         FI_CUDA_PREFILL_WGMMA_TILE_LIST(FI_SWEEP_WGMMA)};
#undef FI_SWEEP_TENSOR
#undef FI_SWEEP_WGMMA
enum { NUM_SWEEP_TILES = sizeof sweep_tiles / sizeof sweep_tiles[0] };

static void *dev_copy(const void *h, size_t bytes) {
  void *d = NULL;
  FI_BENCH_CK(cudaMalloc(&d, bytes));
  FI_BENCH_CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}

static uint32_t page_rng = 24681357u;

/* One case: batch requests of qo_len queries on kv_len keys, causal; paged: 0 ragged, 1 a
 * shuffled page table, 2 pages in order. */
static void prefill_case(fi_bench_ctx *b, int paged, int batch, int qo_len, int kv_len,
                         int qo_heads, int kv_heads, int hd, int page_size, int sweep,
                         int fixed_split) {
  char name[96], hd_tag[16] = "";
  /* FI_BENCH_PREFILL_MASK=none: the same rows without the causal mask */
  const char *mask_env = getenv("FI_BENCH_PREFILL_MASK");
  const int no_mask = mask_env && !strcmp(mask_env, "none");
  if (hd != 128) snprintf(hd_tag, sizeof hd_tag, " hd%d", hd);
  if (paged)
    snprintf(name, sizeof name, "paged append b%d q%d kv%d h%d/%d p%d%s%s%s", batch, qo_len,
             kv_len, qo_heads, kv_heads, page_size, hd_tag, paged == 2 ? " pages in order" : "",
             no_mask ? " no mask" : "");
  else
    snprintf(name, sizeof name, "ragged %s b%d L%d h%d/%d%s", no_mask ? "no mask" : "causal",
             batch, qo_len, qo_heads, kv_heads, hd_tag);
  if (!fi_bench_selected(b, name)) return;

  fi_attention_params p = fi_attention_params_default(qo_heads, kv_heads, hd);
  p.mask_mode = no_mask ? FI_MASK_NONE : FI_MASK_CAUSAL;
  p.page_size = paged ? page_size : 1;
  p.fixed_split_size = fixed_split;
  int32_t *qo_indptr = malloc(sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *kv_indptr = malloc(sizeof(int32_t) * (size_t)(batch + 1));
  int pages_per = (kv_len + page_size - 1) / page_size;
  int32_t *page_indptr = malloc(sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *last = malloc(sizeof(int32_t) * (size_t)batch);
  int32_t num_pages = paged ? batch * pages_per : 0;
  int32_t *indices = malloc(sizeof(int32_t) * (size_t)(num_pages + 1));
  for (int i = 0; i <= batch; ++i) {
    qo_indptr[i] = i * qo_len;
    kv_indptr[i] = i * kv_len;
    page_indptr[i] = i * pages_per;
  }
  for (int i = 0; i < batch; ++i) last[i] = kv_len - (pages_per - 1) * page_size;
  /* FI_BENCH_PREFILL_L2_PAGES=n (paged rows): the page table lists pages 0 .. n - 1 again
   * and again, the same tiles and boxes over K / V that stays in L2 */
  const char *l2_env = getenv("FI_BENCH_PREFILL_L2_PAGES");
  const int l2_pages = l2_env ? atoi(l2_env) : 0;
  for (int i = 0; i < num_pages; ++i) indices[i] = l2_pages > 0 ? i % l2_pages : i;
  if (paged == 1) /* a shuffled page table (2: the pages in order) */
    for (int i = num_pages - 1; i > 0; --i) {
      page_rng = page_rng * 1664525u + 1013904223u;
      int j = (int)((page_rng >> 8) % (uint32_t)(i + 1)), t = indices[i];
      indices[i] = indices[j];
      indices[j] = t;
    }

  prefill_arg a;
  memset(&a, 0, sizeof a);
  a.ctx = b->ctx;
  a.paged = paged;
  int64_t nnz_q = (int64_t)batch * qo_len, nnz_kv = (int64_t)batch * kv_len;
  int64_t qshape[3] = {nnz_q, qo_heads, hd};
  size_t qbytes = (size_t)nnz_q * qo_heads * hd * 2;
  a.q = fi_tensor_contiguous(fi_bench_random_device(qbytes), FI_DTYPE_F16, 3, qshape);
  void *obuf = NULL;
  FI_BENCH_CK(cudaMalloc(&obuf, qbytes));
  a.o = fi_tensor_contiguous(obuf, FI_DTYPE_F16, 3, qshape);
  size_t kvbytes;
  if (paged) {
    int64_t shape[4] = {num_pages, page_size, kv_heads, hd};
    kvbytes = (size_t)num_pages * page_size * kv_heads * hd * 2;
    a.kv.k = fi_tensor_contiguous(fi_bench_random_device(kvbytes), FI_DTYPE_F16, 4, shape);
    a.kv.v = fi_tensor_contiguous(fi_bench_random_device(kvbytes), FI_DTYPE_F16, 4, shape);
    a.kv.layout = FI_LAYOUT_NHD;
    a.pages.indptr = dev_copy(page_indptr, sizeof(int32_t) * (size_t)(batch + 1));
    a.pages.indices = dev_copy(indices, sizeof(int32_t) * (size_t)num_pages);
    a.pages.last_page_len = dev_copy(last, sizeof(int32_t) * (size_t)batch);
  } else {
    int64_t shape[3] = {nnz_kv, kv_heads, hd};
    kvbytes = (size_t)nnz_kv * kv_heads * hd * 2;
    a.k = fi_tensor_contiguous(fi_bench_random_device(kvbytes), FI_DTYPE_F16, 3, shape);
    a.v = fi_tensor_contiguous(fi_bench_random_device(kvbytes), FI_DTYPE_F16, 3, shape);
    a.kv_indptr = dev_copy(kv_indptr, sizeof(int32_t) * (size_t)(batch + 1));
  }
  a.qo_indptr = dev_copy(qo_indptr, sizeof(int32_t) * (size_t)(batch + 1));

  size_t ws_bytes = 0;
  FI_BENCH_OK(b->ctx, fi_prefill_workspace_size(b->ctx, &p, batch, nnz_q, &ws_bytes));
  void *ws = NULL;
  FI_BENCH_CK(cudaMalloc(&ws, ws_bytes));
  fi_page_table host_pages = {page_indptr, indices, last};

  /* Exact unmasked pairs of the bottom-right causal mask (no mask: every pair). */
  double pairs = 0;
  for (int i = 0; i < qo_len; ++i) {
    int seen = no_mask ? kv_len : kv_len - qo_len + i + 1;
    pairs += seen < 0 ? 0 : seen;
  }
  pairs *= batch;
  const double flops = 4.0 * hd * qo_heads * pairs;
  const double bytes = 2.0 * (double)qbytes + 2.0 * (double)kvbytes;

  /* The rule's comparison is like for like: the chosen variant's own sweep row (15 repeats,
   * like the others) against the best sweep row, so that drift of the GPU's clocks between
   * the table row and the sweep does not count (bench/NOTES.md, v14b). */
  double chosen_ms = 0, best_ms = 1e30;
  char chosen_name[64] = "", best_name[64] = "";
  double table_ms = 0;
  int chosen_from_sweep = 0;  /* else the table row is compared (and counts as a candidate) */
  fi_tiles chosen_tiles;
  memset(&chosen_tiles, 0, sizeof chosen_tiles);
  for (int t = -1; t < (sweep ? NUM_SWEEP_TILES : 0); ++t) {
    fi_tiles forced = a.plan.tiles;
    const fi_tiles *force = NULL;
    if (t >= 0) {
      forced = a.plan.tiles; /* keep the heuristic's split choice, change the tiles */
      forced.q_tile = sweep_tiles[t][0];
      forced.kv_tile = sweep_tiles[t][1];
      forced.cores = (fi_core_kind)sweep_tiles[t][2];
      force = &forced;
    }
    fi_plan plan;
    fi_status s =
        paged ? fi_paged_prefill_plan(b->ctx, &p, batch, qo_indptr, &host_pages, num_pages,
                                      NULL, force, ws, ws_bytes, &plan)
              : fi_ragged_prefill_plan(b->ctx, &p, batch, qo_indptr, kv_indptr, NULL, force,
                                       ws, ws_bytes, &plan);
    if (s != FI_SUCCESS) {
      printf("| prefill  | %-34s | sweep q%d kv%d: %s\n", name, forced.q_tile, forced.kv_tile,
             fi_last_error(b->ctx));
      continue;
    }
    a.plan = plan;
    int reps = b->reps, warm = b->warmup;
    if (t >= 0) {
      b->reps = 15;
      b->warmup = 3;
    }
    double ms = fi_bench_time_ms(b, run_prefill, &a);
    b->reps = reps;
    b->warmup = warm;
    char tn[64], variant[96];
    fi_tiles_name(plan.tiles, 0, tn, sizeof tn);
    snprintf(variant, sizeof variant, "%s%s u%d", t >= 0 ? "sweep " : "", tn,
             plan.num_work_units);
    fi_bench_row(b, "prefill", name, variant, ms, bytes, flops);
    const int is_chosen = plan.tiles.q_tile == chosen_tiles.q_tile &&
                          plan.tiles.kv_tile == chosen_tiles.kv_tile &&
                          plan.tiles.cores == chosen_tiles.cores;
    if (t < 0 || is_chosen) {  /* the sweep's row replaces the table's */
      chosen_ms = ms;
      chosen_from_sweep = t >= 0;
      snprintf(chosen_name, sizeof chosen_name, "%s", tn);
    }
    if (t < 0) {
      chosen_tiles = plan.tiles;
      table_ms = ms;
    } else if (ms < best_ms) {
      best_ms = ms;
      snprintf(best_name, sizeof best_name, "%s", tn);
    }
    if (t < 0) a.plan = plan; /* the sweep keeps the chosen plan's split flag */
  }
  if (sweep && !chosen_from_sweep && table_ms > 0 && table_ms < best_ms) {
    best_ms = table_ms;  /* the chosen tiles are not in the sweep list: the table row */
    snprintf(best_name, sizeof best_name, "%s", chosen_name);
  }
  if (sweep && chosen_ms <= 0)
    printf("| prefill  | %-34s | the chosen plan failed: no tile rule |\n", name);
  else if (sweep && best_ms < 1e30)
    printf("| prefill  | %-34s | chosen %s %.1f us, best %s %.1f us: chosen is %.1f%% slower "
           "(%s) |\n",
           name, chosen_name, chosen_ms * 1e3, best_name, best_ms * 1e3,
           100.0 * (chosen_ms / best_ms - 1.0),
           chosen_ms <= 1.10 * best_ms ? "within 10%" : "MORE THAN 10%");

  cudaFree(ws);
  cudaFree((void *)(uintptr_t)a.q.data);
  cudaFree(obuf);
  if (paged) {
    cudaFree(a.kv.k.data);
    cudaFree(a.kv.v.data);
    cudaFree((void *)(uintptr_t)a.pages.indptr);
    cudaFree((void *)(uintptr_t)a.pages.indices);
    cudaFree((void *)(uintptr_t)a.pages.last_page_len);
  } else {
    cudaFree(a.k.data);
    cudaFree(a.v.data);
    cudaFree(a.kv_indptr);
  }
  cudaFree(a.qo_indptr);
  free(qo_indptr);
  free(kv_indptr);
  free(page_indptr);
  free(last);
  free(indices);
}

/* FI_BENCH_PREFILL_ROWS="b,q,kv,qo,kvh[,split] ...": only these rows, each a paged append
 * (batch b of q new tokens on kv cached ones, causal, pages of 16 in order, head_dim 128),
 * without the tile sweep: the plan's split (u<units> in the variant) under planner knobs,
 * or a fixed split of `split` tokens (FI_BENCH_PREFILL_L2_PAGES=n: over n pages reused). */
static int prefill_env_rows(fi_bench_ctx *b) {
  const char *rows = getenv("FI_BENCH_PREFILL_ROWS");
  if (!rows || !*rows) return 0;
  for (const char *r = rows; *r;) {
    int bt, q, kv, qo, kvh, split = 0, n = 0, n6 = 0;
    if (sscanf(r, "%d,%d,%d,%d,%d%n", &bt, &q, &kv, &qo, &kvh, &n) != 5 || bt < 1 || q < 1 ||
        kv < q || qo < 1 || kvh < 1 || qo % kvh) {
      fprintf(stderr, "FI_BENCH_PREFILL_ROWS: bad row at \"%s\": want b,q,kv,qo,kvh[,split] "
                      "with kv >= q and kvh dividing qo, rows separated by spaces\n", r);
      return 1;
    }
    if (sscanf(r + n, ",%d%n", &split, &n6) == 1) n += n6;
    prefill_case(b, 2, bt, q, kv, qo, kvh, 128, 16, 0, split > 0 ? split : 0);
    r += n;
    while (*r == ' ') ++r;
  }
  return 1;
}

void fi_bench_prefill(fi_bench_ctx *b) {
  if (prefill_env_rows(b)) return;
  static const int ragged[][4] = {{1, 8192, 32, 8}, {8, 2048, 32, 8}, {32, 512, 32, 8},
                                  {4, 4096, 32, 32}};
  const char *sweep_env = getenv("FI_BENCH_PREFILL_SWEEP");
  int sweep = !sweep_env || atoi(sweep_env) != 0;
  for (int i = 0; i < 4; ++i)
    prefill_case(b, 0, ragged[i][0], ragged[i][1], ragged[i][1], ragged[i][2], ragged[i][3],
                 128, 16, sweep, 0);
  prefill_case(b, 0, 1, 8192, 8192, 16, 8, 256, 16, sweep, 0);
  prefill_case(b, 0, 8, 2048, 2048, 16, 8, 256, 16, sweep, 0);
  for (int order = 1; order <= 2; ++order) {
    prefill_case(b, order, 8, 512, 4096, 32, 8, 128, 16, sweep, 0);
    prefill_case(b, order, 1, 8192, 8192, 32, 8, 128, 16, sweep, 0);
  }
}
