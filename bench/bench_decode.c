/* bench/bench_decode.c -- the memory-bound family: batch paged decode (fp16, head_dim 128,
 * page 16, NHD, shuffled page tables; other head_dims and pages below), merge_states and
 * append_paged_kv.
 *
 * Bytes counted per decode row: q read + the K and V of every token read (kv_len tokens
 * x kv_heads x head_dim x 2 bytes, twice) + o written; the page table, the split-KV
 * partial rows and the merge are overhead inside the measured time. Each row runs the
 * plan the heuristics choose (its variant printed); rows marked "forced" run the other
 * core kind for comparison; rows marked "rope" apply llama RoPE to q and K (theta 5e5), the
 * same bytes. Environment: FI_BENCH_DECODE_TILES=cores:kv_tile (cores cc or
 * tc) forces every decode row's variant; FI_BENCH_DECODE_ROWS (fi_bench_decode) times other
 * rows ("batch,kv_len,qo_heads,kv_heads", ",e4m3" at the end for an e4m3 KV cache);
 * FI_BENCH_DECODE_PAGE=n sets the decode rows' page size (default 16), FI_BENCH_DECODE_HEAD_DIM
 * their head_dim (64, 128 or 256; default 128); FI_BENCH_DECODE_HND=1
 * stores the caches in HND instead of NHD; FI_BENCH_DECODE_SPLIT=n plans the decode rows
 * with a fixed split of n tokens. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <string.h>

#include "bench.h"

typedef struct decode_arg {
  fi_context *ctx;
  fi_plan plan;
  fi_tensor q, o, lse;
  fi_paged_kv_cache kv;
  fi_page_table pages;
} decode_arg;

static void run_decode(void *p) {
  decode_arg *a = (decode_arg *)p;
  FI_BENCH_OK(a->ctx, fi_decode_run(a->ctx, &a->plan, &a->q, &a->kv, &a->pages, &a->o, &a->lse));
}

static uint32_t shuffle_rng = 987654321u;
static uint32_t next_rand(void) {
  shuffle_rng ^= shuffle_rng << 13;
  shuffle_rng ^= shuffle_rng >> 17;
  shuffle_rng ^= shuffle_rng << 5;
  return shuffle_rng;
}

/* A decode row's median time (ms; 0 when skipped or refused) and variant name. */
typedef struct decode_result {
  double ms;
  char variant[64];
} decode_result;

enum { DECODE_ROPE = 1, DECODE_FP8 = 2, DECODE_BF16 = 4 }; /* decode_case's extras */

/* FI_BENCH_DECODE_PAGE (default 16) and FI_BENCH_DECODE_HEAD_DIM (64, 128 or 256; default
 * 128): every decode row's page size and head_dim. */
static int decode_page_size(void) {
  const char *env = getenv("FI_BENCH_DECODE_PAGE");
  return env && atoi(env) > 0 ? atoi(env) : 16;
}
static int decode_head_dim(void) {
  const char *env = getenv("FI_BENCH_DECODE_HEAD_DIM");
  const int d = env ? atoi(env) : 128;
  return d == 64 || d == 256 ? d : 128;
}

/* Times one decode row (extras: DECODE_ROPE, DECODE_FP8 for an e4m3 KV cache, its bytes
 * counted at one per element, DECODE_BF16 for bf16 q and o); returns the core kind its plan ran (FI_CORES_CUDA when
 * skipped), and its time and variant in *out when out is not NULL. */
static fi_core_kind decode_case(fi_bench_ctx *b, int batch, int kv_len, int qo_heads,
                                int kv_heads, int extras, const fi_tiles *force,
                                const char *tag, decode_result *out) {
  const int rope = extras & DECODE_ROPE, fp8 = extras & DECODE_FP8;
  const int kv_elem = fp8 ? 1 : 2;
  char name[96];
  snprintf(name, sizeof(name), "decode (%d, %d, %d, %d)%s", batch, kv_len, qo_heads, kv_heads, tag);
  if (out) out->ms = 0, out->variant[0] = '\0';
  if (!fi_bench_selected(b, name)) return FI_CORES_CUDA;
  const int D = decode_head_dim(), page = decode_page_size();
  fi_attention_params p = fi_attention_params_default(qo_heads, kv_heads, D);
  p.page_size = page;
  if (rope) {
    p.pos_encoding = FI_POS_ROPE_LLAMA;
    p.rope_theta = 5e5f;
  }
  if (extras & DECODE_BF16) p.q_dtype = p.kv_dtype = FI_DTYPE_BF16;
  const char *split_env = getenv("FI_BENCH_DECODE_SPLIT");
  const int split = split_env ? atoi(split_env) : 0;
  if (split > 0) p.fixed_split_size = split;
  if (fp8) p.kv_dtype = FI_DTYPE_E4M3;
  int pages_per = (kv_len + page - 1) / page;
  int num_pages = batch * pages_per;
  int32_t *indptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *indices = (int32_t *)malloc(sizeof(int32_t) * (size_t)num_pages);
  int32_t *last = (int32_t *)malloc(sizeof(int32_t) * (size_t)batch);
  for (int i = 0; i <= batch; ++i) indptr[i] = i * pages_per;
  for (int i = 0; i < batch; ++i) last[i] = kv_len - (pages_per - 1) * page;
  for (int i = 0; i < num_pages; ++i) indices[i] = i;
  for (int i = num_pages - 1; i > 0; --i) { /* shuffled page table */
    int j = (int)(next_rand() % (uint32_t)(i + 1));
    int32_t t = indices[i];
    indices[i] = indices[j];
    indices[j] = t;
  }
  size_t kv_bytes = (size_t)num_pages * 2 * page * kv_heads * D * kv_elem;
  void *kv = fi_bench_random_device(kv_bytes);
  size_t q_bytes = (size_t)batch * qo_heads * D * 2;
  void *q = fi_bench_random_device(q_bytes);
  void *o = NULL, *lse = NULL, *ws = NULL;
  FI_BENCH_CK(cudaMalloc(&o, q_bytes));
  FI_BENCH_CK(cudaMalloc(&lse, (size_t)batch * qo_heads * 4));
  int32_t *d_indptr, *d_indices, *d_last;
  FI_BENCH_CK(cudaMalloc((void **)&d_indptr, sizeof(int32_t) * (size_t)(batch + 1)));
  FI_BENCH_CK(cudaMalloc((void **)&d_indices, sizeof(int32_t) * (size_t)num_pages));
  FI_BENCH_CK(cudaMalloc((void **)&d_last, sizeof(int32_t) * (size_t)batch));
  FI_BENCH_CK(cudaMemcpy(d_indptr, indptr, sizeof(int32_t) * (size_t)(batch + 1), cudaMemcpyHostToDevice));
  FI_BENCH_CK(cudaMemcpy(d_indices, indices, sizeof(int32_t) * (size_t)num_pages, cudaMemcpyHostToDevice));
  FI_BENCH_CK(cudaMemcpy(d_last, last, sizeof(int32_t) * (size_t)batch, cudaMemcpyHostToDevice));

  decode_arg a;
  memset(&a, 0, sizeof(a));
  a.ctx = b->ctx;
  size_t ws_bytes = 0;
  if (p.fixed_split_size > 0)
    FI_BENCH_OK(b->ctx, fi_decode_workspace_size_kv(b->ctx, &p, batch, (int64_t)batch * kv_len,
                                                    &ws_bytes));
  else
    FI_BENCH_OK(b->ctx, fi_decode_workspace_size(b->ctx, &p, batch, &ws_bytes));
  FI_BENCH_CK(cudaMalloc(&ws, ws_bytes));
  fi_page_table host_pages = {indptr, indices, last};
  fi_tiles forced;
  const char *env = getenv("FI_BENCH_DECODE_TILES");
  if (!force && env) {
    char kind[8] = {0};
    int kvt = 64;
    if (sscanf(env, "%2s:%d", kind, &kvt) == 2 && (!strcmp(kind, "tc") || !strcmp(kind, "cc"))) {
      forced.cores = !strcmp(kind, "tc") ? FI_CORES_TENSOR : FI_CORES_CUDA;
      forced.q_tile = forced.cores == FI_CORES_TENSOR ? 16 : 1;
      forced.kv_tile = kvt;
      forced.split_kv = 1;
      force = &forced;
    }
  }
  fi_status ps = fi_decode_plan(b->ctx, &p, batch, &host_pages, num_pages, force, ws,
                                ws_bytes, &a.plan);
  if (ps != FI_SUCCESS && force) { /* a forced variant the plan refuses (shared memory) */
    printf("| decode   | %-34s | plan refused: %s\n", name, fi_last_error(b->ctx));
    cudaFree(kv); cudaFree(q); cudaFree(o); cudaFree(lse); cudaFree(ws);
    cudaFree(d_indptr); cudaFree(d_indices); cudaFree(d_last);
    free(indptr); free(indices); free(last);
    return FI_CORES_CUDA;
  }
  FI_BENCH_OK(b->ctx, ps);
  int64_t qshape[3] = {batch, qo_heads, D}, lshape[2] = {batch, qo_heads};
  /* FI_BENCH_DECODE_HND=1: the cache in HND (a head's tokens of a page contiguous) */
  const char *hnd_env = getenv("FI_BENCH_DECODE_HND");
  const int hnd = hnd_env && atoi(hnd_env) == 1;
  int64_t kvshape[5] = {num_pages, 2, hnd ? kv_heads : page, hnd ? page : kv_heads, D};
  a.q = fi_tensor_contiguous(q, p.q_dtype, 3, qshape);
  a.o = fi_tensor_contiguous(o, p.q_dtype, 3, qshape);
  a.lse = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, lshape);
  fi_tensor kvt = fi_tensor_contiguous(kv, p.kv_dtype, 5, kvshape);
  FI_BENCH_OK(NULL, fi_paged_kv_cache_from_combined(&kvt, hnd ? FI_LAYOUT_HND : FI_LAYOUT_NHD,
                                                    &a.kv));
  a.pages.indptr = d_indptr;
  a.pages.indices = d_indices;
  a.pages.last_page_len = d_last;

  double ms = fi_bench_time_ms(b, run_decode, &a);
  double bytes = 2.0 * q_bytes + (double)batch * kv_len * kv_heads * D * 2 * kv_elem;
  char variant[96], tn[64];
  fi_tiles_name(a.plan.tiles, 1, tn, sizeof(tn));
  int split_rows = a.plan.num_partial_rows;
  snprintf(variant, sizeof(variant), "%s u%d%s", tn, a.plan.num_work_units,
           split_rows ? " merge" : "");
  fi_bench_row(b, "decode", name, variant, ms, bytes, 0);
  if (out) {
    out->ms = ms;
    snprintf(out->variant, sizeof out->variant, "%s", tn);
  }

  cudaFree(kv); cudaFree(q); cudaFree(o); cudaFree(lse); cudaFree(ws);
  cudaFree(d_indptr); cudaFree(d_indices); cudaFree(d_last);
  free(indptr); free(indices); free(last);
  return a.plan.tiles.cores;
}

typedef struct merge_arg {
  fi_context *ctx;
  fi_tensor v, s, vo, so;
} merge_arg;
static void run_merge(void *p) {
  merge_arg *a = (merge_arg *)p;
  FI_BENCH_OK(a->ctx, fi_merge_states(a->ctx, &a->v, &a->s, &a->vo, &a->so));
}

static void merge_case(fi_bench_ctx *b, int seq, int n, int heads) {
  char name[96];
  snprintf(name, sizeof(name), "merge_states (%d, %d states, %d heads)", seq, n, heads);
  if (!fi_bench_selected(b, name)) return;
  const int D = 128;
  int64_t vshape[4] = {seq, n, heads, D}, sshape[3] = {seq, n, heads};
  int64_t oshape[3] = {seq, heads, D}, lshape[2] = {seq, heads};
  size_t vb = (size_t)seq * n * heads * D * 2, sb = (size_t)seq * n * heads * 4;
  size_t ob = (size_t)seq * heads * D * 2, lb = (size_t)seq * heads * 4;
  void *v = fi_bench_random_device(vb), *s = fi_bench_random_device(sb), *vo, *so;
  FI_BENCH_CK(cudaMalloc(&vo, ob));
  FI_BENCH_CK(cudaMalloc(&so, lb));
  merge_arg a;
  a.ctx = b->ctx;
  a.v = fi_tensor_contiguous(v, FI_DTYPE_F16, 4, vshape);
  a.s = fi_tensor_contiguous(s, FI_DTYPE_F32, 3, sshape);
  a.vo = fi_tensor_contiguous(vo, FI_DTYPE_F16, 3, oshape);
  a.so = fi_tensor_contiguous(so, FI_DTYPE_F32, 2, lshape);
  double ms = fi_bench_time_ms(b, run_merge, &a);
  fi_bench_row(b, "merge", name, "merge_states_v8", ms, (double)(vb + sb + ob + lb), 0);
  cudaFree(v); cudaFree(s); cudaFree(vo); cudaFree(so);
}

typedef struct append_arg {
  fi_context *ctx;
  fi_plan plan;
  fi_tensor k, v;
  const int32_t *aindptr;
  fi_paged_kv_cache kv;
  fi_page_table pages;
} append_arg;
static void run_append(void *p) {
  append_arg *a = (append_arg *)p;
  FI_BENCH_OK(a->ctx, fi_append_paged_kv_run(a->ctx, &a->plan, &a->k, &a->v, a->aindptr, &a->kv, &a->pages));
}

/* batch requests of kv_len tokens, the last `append` of which are new. */
static void append_case(fi_bench_ctx *b, int batch, int kv_len, int append, int kv_heads) {
  char name[96];
  snprintf(name, sizeof(name), "append (%d x %d new, kv %d, %d heads)", batch, append, kv_len, kv_heads);
  if (!fi_bench_selected(b, name)) return;
  const int D = 128, page = 16;
  int pages_per = (kv_len + page - 1) / page, num_pages = batch * pages_per;
  int32_t *indptr = malloc(sizeof(int32_t) * (size_t)(batch + 1)), *indices = malloc(sizeof(int32_t) * (size_t)num_pages);
  int32_t *last = malloc(sizeof(int32_t) * (size_t)batch), *aindptr = malloc(sizeof(int32_t) * (size_t)(batch + 1));
  for (int i = 0; i <= batch; ++i) { indptr[i] = i * pages_per; aindptr[i] = i * append; }
  for (int i = 0; i < batch; ++i) last[i] = kv_len - (pages_per - 1) * page;
  for (int i = 0; i < num_pages; ++i) indices[i] = i;
  for (int i = num_pages - 1; i > 0; --i) {
    int j = (int)(next_rand() % (uint32_t)(i + 1));
    int32_t t = indices[i]; indices[i] = indices[j]; indices[j] = t;
  }
  size_t cache_bytes = (size_t)num_pages * 2 * page * kv_heads * D * 2;
  size_t new_bytes = (size_t)batch * append * kv_heads * D * 2;
  void *cache, *k = fi_bench_random_device(new_bytes), *v = fi_bench_random_device(new_bytes);
  FI_BENCH_CK(cudaMalloc(&cache, cache_bytes));
  int32_t *d[4];
  size_t sz[4] = {sizeof(int32_t) * (size_t)(batch + 1), sizeof(int32_t) * (size_t)num_pages,
                  sizeof(int32_t) * (size_t)batch, sizeof(int32_t) * (size_t)(batch + 1)};
  int32_t *h[4] = {indptr, indices, last, aindptr};
  for (int i = 0; i < 4; ++i) {
    FI_BENCH_CK(cudaMalloc((void **)&d[i], sz[i]));
    FI_BENCH_CK(cudaMemcpy(d[i], h[i], sz[i], cudaMemcpyHostToDevice));
  }
  append_arg a;
  memset(&a, 0, sizeof(a));
  a.ctx = b->ctx;
  fi_page_table hp = {indptr, indices, last};
  FI_BENCH_OK(b->ctx, fi_append_paged_kv_plan(b->ctx, batch, page, aindptr, &hp, num_pages, &a.plan));
  int64_t nshape[3] = {(int64_t)batch * append, kv_heads, D};
  int64_t cshape[5] = {num_pages, 2, page, kv_heads, D};
  a.k = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, nshape);
  a.v = fi_tensor_contiguous(v, FI_DTYPE_F16, 3, nshape);
  fi_tensor ct = fi_tensor_contiguous(cache, FI_DTYPE_F16, 5, cshape);
  FI_BENCH_OK(NULL, fi_paged_kv_cache_from_combined(&ct, FI_LAYOUT_NHD, &a.kv));
  a.aindptr = d[3];
  a.pages.indptr = d[0];
  a.pages.indices = d[1];
  a.pages.last_page_len = d[2];
  double ms = fi_bench_time_ms(b, run_append, &a);
  fi_bench_row(b, "append", name, "append_v16", ms, 4.0 * (double)new_bytes, 0);
  cudaFree(cache); cudaFree(k); cudaFree(v);
  for (int i = 0; i < 4; ++i) cudaFree(d[i]);
  free(indptr); free(indices); free(last); free(aindptr);
}

static const int decode_cases[][4] = {{1, 32768, 32, 8},  {16, 4096, 32, 8},  {64, 4096, 32, 8},
                                      {256, 2048, 32, 8}, {64, 4096, 32, 32}, {64, 4096, 64, 8}};

/* FI_BENCH_SWEEP="TILES/CPSM/SMEMKB/HEADFAST/WARPPIPE[/TCWWARPS]@ROWS ...": for each
 * configuration, set the decode knobs (FI_BENCH_DECODE_TILES = TILES, "auto" for the
 * heuristics; FI_DECODE_CTAS_PER_SM; FI_DECODE_SMEM_KB, 0 = default budget;
 * FI_DECODE_HEAD_FAST; FI_DECODE_WARP_PIPE; FI_DECODE_TCW_WARPS, 0 or left out = chosen
 * per grid) and time the decode rows whose indices (0-5) are listed in ROWS, all in one
 * process. */
static void decode_sweep(fi_bench_ctx *b, const char *spec) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char tiles[16] = {0}, rows[16] = {0};
    int cpsm = 0, smem = 0, hf = 1, wp = 0, tcww = 0;
    const char *at = strchr(tok, '@');
    if (!at || sscanf(at + 1, "%15s", rows) != 1 ||
        sscanf(tok, "%15[^/]/%d/%d/%d/%d/%d", tiles, &cpsm, &smem, &hf, &wp, &tcww) < 5) {
      fprintf(stderr, "bad sweep token %s\n", tok);
      continue;
    }
    char v[32];
    setenv("FI_BENCH_DECODE_TILES", tiles, 1);
    snprintf(v, sizeof v, "%d", cpsm);
    setenv("FI_DECODE_CTAS_PER_SM", v, 1);
    snprintf(v, sizeof v, "%d", smem);
    setenv("FI_DECODE_SMEM_KB", v, 1);
    snprintf(v, sizeof v, "%d", hf);
    setenv("FI_DECODE_HEAD_FAST", v, 1);
    snprintf(v, sizeof v, "%d", wp);
    setenv("FI_DECODE_WARP_PIPE", v, 1);
    snprintf(v, sizeof v, "%d", tcww);
    setenv("FI_DECODE_TCW_WARPS", v, 1);
    /* A context reads its knobs once, when it is created. */
    fi_context_destroy(b->ctx);
    FI_BENCH_OK(NULL, fi_context_create(FI_BACKEND_CUDA, &b->ctx));
    FI_BENCH_OK(b->ctx, fi_context_set_stream(b->ctx, b->stream));
    char tag[64];
    snprintf(tag, sizeof tag, " [%s]", tok);
    for (const char *r = rows; *r; ++r) {
      int i = *r - '0';
      if (i < 0 || i > 5) continue;
      decode_case(b, decode_cases[i][0], decode_cases[i][1], decode_cases[i][2],
                  decode_cases[i][3], 0, NULL, tag, NULL);
    }
    fflush(stdout);
  }
}

/* FI_BENCH_GRID_OUT=<csv>: every decode variant on a grid of shapes (batch 1-128, KV 2k and
 * 16k tokens, groups 1-8), one line per (shape, variant) with its median time, for the
 * heuristics' replay test (test/runtime/test_decode_sweep.c, which checks the variant
 * fi_select_decode_tiles picks against the fastest of each shape). The variants: CUDA cores
 * with kv_tile 16/32/64, tensor cores (q16) with kv_tile 32/64/128, each with and without
 * split-KV (those a plan refuses are left out); the whole grid twice (100 repeats each).
 * What the grid holds fixed goes on the file's first line, which the replay reads: head_dim
 * and page (FI_BENCH_DECODE_HEAD_DIM, FI_BENCH_DECODE_PAGE; default 128 and 16) and the
 * dtypes (fp16; FI_BENCH_GRID_KV=bf16 for bf16 q and KV, =e4m3 for f16 q over an e4m3 KV
 * cache). FI_BENCH_GRID_BATCHES=<b,b,...> (at most 16) replaces the batches. */
static void decode_grid(fi_bench_ctx *b, const char *path) {
  int batches[16] = {1, 8, 64, 128}, num_batches = 4;
  static const int lens[] = {2048, 16384};
  static const int heads[][2] = {{32, 32}, {32, 8}, {32, 4}, {64, 8}};
  const char *bl = getenv("FI_BENCH_GRID_BATCHES");
  if (bl && *bl) {
    num_batches = 0;
    for (const char *c = bl; *c && num_batches < 16;) {
      char *end = NULL;
      const long v = strtol(c, &end, 10);
      if (end == c || v < 1 || v > 4096 || (*end && *end != ',')) {
        fprintf(stderr, "decode grid: FI_BENCH_GRID_BATCHES=%s: want batches 1..4096 "
                "separated by commas\n", bl);
        return;
      }
      batches[num_batches++] = (int)v;
      c = *end ? end + 1 : end;
    }
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "decode grid: cannot write %s\n", path);
    return;
  }
  const char *kv = getenv("FI_BENCH_GRID_KV");
  const int extras = !kv || !*kv ? 0 : !strcmp(kv, "e4m3") ? DECODE_FP8
                                     : !strcmp(kv, "bf16") ? DECODE_BF16 : -1;
  if (extras < 0) {
    fprintf(stderr, "decode grid: FI_BENCH_GRID_KV=%s: want e4m3 or bf16 (unset: fp16)\n", kv);
    fclose(f);
    return;
  }
  fprintf(f, "# fi_bench decode grid on %s (copy %.0f GB/s, dram %d GB/s per SM); head_dim "
          "%d, page %d, %s; batches", b->gpu, b->copy_gbps,
          fi_context_target(b->ctx).dram_gbps_per_sm, decode_head_dim(),
          decode_page_size(),
          extras == DECODE_FP8 ? "f16 q, e4m3 KV" : extras == DECODE_BF16 ? "bf16" : "fp16");
  for (int i = 0; i < num_batches; ++i) fprintf(f, " %d", batches[i]);
  fprintf(f, "\n");
  fprintf(f, "batch,kv_len,qo_heads,kv_heads,variant,us\n");
  const int reps = b->reps;
  b->reps = 100;
  for (int pass = 0; pass < 2; ++pass) /* the grid twice: the replay averages the two */
  for (size_t h = 0; h < sizeof heads / sizeof heads[0]; ++h)
    for (int bi = 0; bi < num_batches; ++bi)
      for (size_t li = 0; li < sizeof lens / sizeof lens[0]; ++li) {
        const int batch = batches[bi], len = lens[li];
        if ((long long)batch * len * heads[h][1] * decode_head_dim() > (1LL << 31))
          continue; /* <= 8.6 GB of 16-bit KV */
        for (int v = 0; v < 12; ++v) {
          fi_tiles t;
          t.cores = v < 6 ? FI_CORES_CUDA : FI_CORES_TENSOR;
          t.q_tile = v < 6 ? 1 : 16;
          t.kv_tile = (v < 6 ? 16 : 32) << (v % 6 / 2);
          t.split_kv = v % 2;
          decode_result res;
          decode_case(b, batch, len, heads[h][0], heads[h][1], extras, &t, " [grid]", &res);
          if (res.ms > 0)
            fprintf(f, "%d,%d,%d,%d,%s,%.2f\n", batch, len, heads[h][0], heads[h][1],
                    res.variant, res.ms * 1e3);
        }
        fflush(f);
      }
  b->reps = reps;
  fclose(f);
}

/* The other core kind than `chosen` (tensor cores: q16, kv 64, split). */
static fi_tiles other_cores(fi_core_kind chosen) {
  fi_tiles t;
  t.cores = chosen == FI_CORES_TENSOR ? FI_CORES_CUDA : FI_CORES_TENSOR;
  t.q_tile = t.cores == FI_CORES_TENSOR ? 16 : 1;
  t.kv_tile = t.cores == FI_CORES_TENSOR ? 64 : 32;
  t.split_kv = 1;
  return t;
}

void fi_bench_decode(fi_bench_ctx *b) {
  const char *sweep = getenv("FI_BENCH_SWEEP");
  if (sweep) {
    decode_sweep(b, sweep);
    return;
  }
  const char *grid = getenv("FI_BENCH_GRID_OUT");
  if (grid) {
    decode_grid(b, grid);
    return;
  }
  /* FI_BENCH_DECODE_ROWS="batch,kv_len,qo_heads,kv_heads[,e4m3] ...": these rows instead of
   * the table, each with the heuristics' variant and the other core kind forced. */
  const char *rows = getenv("FI_BENCH_DECODE_ROWS");
  if (rows) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", rows);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
      int r[4], used = 0;
      if (sscanf(tok, "%d,%d,%d,%d%n", &r[0], &r[1], &r[2], &r[3], &used) != 4 || r[3] <= 0 ||
          r[2] % r[3] || (tok[used] && strcmp(tok + used, ",e4m3"))) {
        fprintf(stderr, "bad row %s (batch,kv_len,qo_heads,kv_heads[,e4m3])\n", tok);
        continue;
      }
      const int extras = tok[used] ? DECODE_FP8 : 0;
      const char *tag = extras ? " fp8 e4m3" : "";
      fi_tiles t = other_cores(decode_case(b, r[0], r[1], r[2], r[3], extras, NULL, tag, NULL));
      decode_case(b, r[0], r[1], r[2], r[3], extras, &t, extras ? " fp8 e4m3 forced" : " forced",
                  NULL);
    }
    return;
  }
  const int(*cases)[4] = decode_cases;
  fi_core_kind chosen[6];
  for (int i = 0; i < 6; ++i)
    chosen[i] = decode_case(b, cases[i][0], cases[i][1], cases[i][2], cases[i][3], 0, NULL, "",
                            NULL);
  for (int i = 0; i < 6; ++i)
    decode_case(b, cases[i][0], cases[i][1], cases[i][2], cases[i][3], DECODE_ROPE, NULL,
                " rope", NULL);
  for (int i = 0; i < 6; ++i) /* (random bytes: some e4m3 NaNs, which cost the same) */
    decode_case(b, cases[i][0], cases[i][1], cases[i][2], cases[i][3], DECODE_FP8, NULL,
                " fp8 e4m3", NULL);
  for (int i = 2; i < 5; i += 2) {
    decode_case(b, cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                DECODE_FP8 | DECODE_BF16, NULL, " fp8 bf16 q", NULL);
    decode_case(b, cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                DECODE_FP8 | DECODE_ROPE, NULL, " fp8 rope", NULL);
  }
  /* the other core kind, forced, for comparison */
  for (int i = 0; i < 6; ++i) {
    fi_tiles t = other_cores(chosen[i]);
    decode_case(b, cases[i][0], cases[i][1], cases[i][2], cases[i][3], 0, &t, " forced", NULL);
  }
  merge_case(b, 4096, 8, 32);
  append_case(b, 256, 2048, 128, 8);
  append_case(b, 256, 2048, 1, 8);
}
