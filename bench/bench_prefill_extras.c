/* bench/bench_prefill_extras.c -- prefill with each extra beside the plain causal run of
 * the same row: fp16, head_dim 128, qo_len = kv_len, causal (bottom-right aligned), then
 * the same row with a logits soft cap (30), a sliding window (window_left 1024), ALiBi, a
 * custom mask (the causal pattern as bits: the same kept pairs, read from memory), RoPE
 * (LLaMA) and fp8 e4m3 KV -- these two through the stage pass into the context's prefill
 * stage, and once more without a stage (the one-warpgroup kernels they ran on before) --
 * fp8 attention (e4m3 q, k and v on fp8 tensor cores, f16 o; plain and soft cap 30) --
 * GQA groups that do not divide 128 (8 KV heads, 8 x group query heads), and head_dim 256
 * (1 x 8192, 16 / 8 heads) plain, soft cap, window, ALiBi, custom mask, RoPE and fp8 KV
 * (with and without a stage). Each row runs the
 * plan the heuristics choose; the variant column adds its TFLOP/s over the base row's (the
 * plain row of the same shape; for a group, the group-4 row of the same query heads).
 *
 * FLOPs: 4 * head_dim * qo_heads * (kept (query, key) pairs), counted exactly: query i of a
 * request sees keys max(0, p - window_left) .. p with p = kv_len - qo_len + i. Bytes: q, k,
 * v read once and o written once. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct extras_arg {
  fi_context *ctx;
  fi_plan plan;
  fi_tensor q, k, v, o;
  int32_t *qo_indptr, *kv_indptr;
  fi_custom_mask mask;
  int custom;
} extras_arg;

static void run_extras(void *p) {
  extras_arg *a = (extras_arg *)p;
  FI_BENCH_OK(a->ctx, fi_ragged_prefill_run(a->ctx, &a->plan, &a->q, &a->k, &a->v,
                                            a->qo_indptr, a->kv_indptr,
                                            a->custom ? &a->mask : NULL, &a->o, NULL));
}

enum { EX_PLAIN, EX_CAP, EX_WINDOW, EX_ALIBI, EX_MASK, EX_ROPE, EX_FP8, EX_ROPE_NO_STAGE,
       EX_FP8_NO_STAGE, EX_FP8_ATTN, EX_FP8_ATTN_CAP, EX_COUNT };
static const char *const extra_names[EX_COUNT] = {
    "plain", "soft cap 30", "window 1024", "alibi", "custom mask (causal bits)", "rope",
    "fp8 e4m3 kv", "rope, no stage", "fp8 e4m3 kv, no stage", "fp8 attention (e4m3 q,k,v)",
    "fp8 attention, soft cap 30"};

/* Runs one (row, extra) and returns its rate in FLOP per ms (0 when skipped or refused);
 * `base_rate` > 0: the row also prints its rate over that one. */
static double extras_case(fi_bench_ctx *b, int batch, int len, int qo_heads, int kv_heads,
                          int hd, int extra, double base_rate) {
  const int window = 1024;
  char name[96], hd_tag[16] = "";
  if (hd != 128) snprintf(hd_tag, sizeof hd_tag, " hd%d", hd);
  snprintf(name, sizeof name, "causal b%d L%d h%d/%d%s %s", batch, len, qo_heads, kv_heads,
           hd_tag, extra_names[extra]);
  if (!fi_bench_selected(b, name)) return 0;
  fi_attention_params p = fi_attention_params_default(qo_heads, kv_heads, hd);
  p.mask_mode = extra == EX_MASK ? FI_MASK_CUSTOM : FI_MASK_CAUSAL;
  if (extra == EX_CAP || extra == EX_FP8_ATTN_CAP) p.logits_soft_cap = 30.f;
  if (extra == EX_WINDOW) p.window_left = window;
  if (extra == EX_ALIBI) p.pos_encoding = FI_POS_ALIBI;
  if (extra == EX_ROPE || extra == EX_ROPE_NO_STAGE) p.pos_encoding = FI_POS_ROPE_LLAMA;
  const int fp8_attn = extra == EX_FP8_ATTN || extra == EX_FP8_ATTN_CAP;
  const int fp8 = extra == EX_FP8 || extra == EX_FP8_NO_STAGE || fp8_attn;
  if (fp8) p.kv_dtype = FI_DTYPE_E4M3;
  if (fp8_attn) p.q_dtype = FI_DTYPE_E4M3; /* o stays f16 (o_dtype's default) */

  int32_t *qo_indptr = malloc(sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *mask_indptr = malloc(sizeof(int32_t) * (size_t)(batch + 1));
  for (int i = 0; i <= batch; ++i) {
    qo_indptr[i] = i * len;
    mask_indptr[i] = (int32_t)((int64_t)i * len * len);
  }
  extras_arg a;
  memset(&a, 0, sizeof a);
  a.ctx = b->ctx;
  const int64_t nnz = (int64_t)batch * len;
  const int64_t qshape[3] = {nnz, qo_heads, hd}, kshape[3] = {nnz, kv_heads, hd};
  const size_t qbytes = (size_t)nnz * qo_heads * hd * 2;
  const size_t kbytes = (size_t)nnz * kv_heads * hd * (fp8 ? 1 : 2);
  a.q = fi_tensor_contiguous(fi_bench_random_device(fp8_attn ? qbytes / 2 : qbytes), p.q_dtype,
                             3, qshape);
  void *obuf = NULL;
  FI_BENCH_CK(cudaMalloc(&obuf, qbytes));
  a.o = fi_tensor_contiguous(obuf, FI_DTYPE_F16, 3, qshape);
  a.k = fi_tensor_contiguous(fi_bench_random_device(kbytes), p.kv_dtype, 3, kshape);
  a.v = fi_tensor_contiguous(fi_bench_random_device(kbytes), p.kv_dtype, 3, kshape);
  FI_BENCH_CK(cudaMalloc((void **)&a.qo_indptr, sizeof(int32_t) * (size_t)(batch + 1)));
  FI_BENCH_CK(cudaMemcpy(a.qo_indptr, qo_indptr, sizeof(int32_t) * (size_t)(batch + 1),
                         cudaMemcpyHostToDevice));
  a.kv_indptr = a.qo_indptr; /* qo_len = kv_len */
  uint8_t *bits = NULL;
  size_t mask_bytes = 0;
  if (extra == EX_MASK) { /* the causal pattern, request by request */
    mask_bytes = ((size_t)mask_indptr[batch] + 7) / 8;
    bits = calloc(mask_bytes, 1);
    for (int r = 0; r < batch; ++r)
      for (int i = 0; i < len; ++i)
        for (int j = 0; j <= i; ++j) {
          const int64_t bit = (int64_t)mask_indptr[r] + (int64_t)i * len + j;
          bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));
        }
    void *dbits = NULL, *dind = NULL;
    FI_BENCH_CK(cudaMalloc(&dbits, mask_bytes));
    FI_BENCH_CK(cudaMemcpy(dbits, bits, mask_bytes, cudaMemcpyHostToDevice));
    FI_BENCH_CK(cudaMalloc(&dind, sizeof(int32_t) * (size_t)(batch + 1)));
    FI_BENCH_CK(cudaMemcpy(dind, mask_indptr, sizeof(int32_t) * (size_t)(batch + 1),
                           cudaMemcpyHostToDevice));
    a.mask.bits = dbits;
    a.mask.indptr = dind;
    a.custom = 1;
  }
  fi_custom_mask host_mask = {bits, mask_indptr};

  /* The prefill stage (set before the plan: the heuristics take the fast kernel with one). */
  size_t stage_bytes = 0;
  void *stage = NULL;
  if (extra != EX_ROPE_NO_STAGE && extra != EX_FP8_NO_STAGE)
    FI_BENCH_OK(b->ctx, fi_prefill_stage_size(b->ctx, &p, 0, nnz, nnz, &stage_bytes));
  if (stage_bytes) FI_BENCH_CK(cudaMalloc(&stage, stage_bytes));
  FI_BENCH_OK(b->ctx, fi_context_set_prefill_stage(b->ctx, stage, stage_bytes));
  size_t ws_bytes = 0;
  FI_BENCH_OK(b->ctx, fi_prefill_workspace_size(b->ctx, &p, batch, nnz, &ws_bytes));
  void *ws = NULL;
  FI_BENCH_CK(cudaMalloc(&ws, ws_bytes));
  double ms = 0; /* then the rate */
  fi_status s = fi_ragged_prefill_plan(b->ctx, &p, batch, qo_indptr, qo_indptr,
                                       extra == EX_MASK ? &host_mask : NULL, NULL, ws, ws_bytes,
                                       &a.plan);
  if (s != FI_SUCCESS) {
    printf("| prefill+ | %-34s | plan refused: %s\n", name, fi_last_error(b->ctx));
  } else {
    double pairs = 0;
    for (int i = 0; i < len; ++i) {
      const int lo = extra == EX_WINDOW && i - window > 0 ? i - window : 0;
      pairs += i - lo + 1;
    }
    pairs *= batch;
    ms = fi_bench_time_ms(b, run_extras, &a);
    char tn[64], variant[96];
    fi_tiles_name(a.plan.tiles, 0, tn, sizeof tn);
    if (base_rate > 0)
      snprintf(variant, sizeof variant, "%s %.2fx base", tn,
               (4.0 * hd * qo_heads * pairs / ms) / base_rate);
    else
      snprintf(variant, sizeof variant, "%s", tn);
    fi_bench_row(b, "prefill+", name, variant, ms, (fp8_attn ? 1.5 : 2.0) * qbytes + 2.0 * kbytes,
                 4.0 * hd * qo_heads * pairs);
    ms = 4.0 * hd * qo_heads * pairs / ms; /* returned as FLOP per ms for the ratio */
  }
  cudaFree(ws);
  FI_BENCH_OK(b->ctx, fi_context_set_prefill_stage(b->ctx, NULL, 0));
  cudaFree(stage);
  cudaFree((void *)(uintptr_t)a.q.data);
  cudaFree(obuf);
  cudaFree(a.k.data);
  cudaFree(a.v.data);
  cudaFree(a.qo_indptr);
  if (a.custom) {
    cudaFree((void *)(uintptr_t)a.mask.bits);
    cudaFree((void *)(uintptr_t)a.mask.indptr);
  }
  free(bits);
  free(qo_indptr);
  free(mask_indptr);
  return ms;
}

void fi_bench_prefill_extras(fi_bench_ctx *b) {
  /* FI_BENCH_EXTRAS=groups: the GQA group rows alone; =hd256: the head_dim 256 rows alone */
  const char *only = getenv("FI_BENCH_EXTRAS");
  const int groups_only = only && strcmp(only, "groups") == 0;
  const int hd256_only = only && strcmp(only, "hd256") == 0;
  static const int rows[][4] = {{1, 8192, 32, 8}, {8, 2048, 32, 8}};
  for (int r = 0; r < (groups_only || hd256_only ? 0 : 2); ++r) {
    const double plain = extras_case(b, rows[r][0], rows[r][1], rows[r][2], rows[r][3], 128,
                                     EX_PLAIN, 0);
    for (int e = EX_CAP; e < EX_COUNT; ++e)
      extras_case(b, rows[r][0], rows[r][1], rows[r][2], rows[r][3], 128, e, plain);
  }
  /* head_dim 256 (Gemma's shapes, 16 / 8 heads): the 16-bit extras, RoPE and fp8 KV
   * through the stage pass and without it */
  if (!groups_only) {
    const double plain = extras_case(b, 1, 8192, 16, 8, 256, EX_PLAIN, 0);
    for (int e = EX_CAP; e <= EX_FP8_NO_STAGE; ++e) extras_case(b, 1, 8192, 16, 8, 256, e, plain);
  }
  /* GQA groups 3, 5, 6, 7, 12 (8 KV heads) each beside the group-4 row of the same total
   * size (the same query heads over 2 x group KV heads): the same FLOPs and waves. The two
   * take turns for three rounds after a warm-up pair (the first rows of a process ran up to
   * 10 % fast), and each group reports the median of its rounds' ratios. */
  if (hd256_only) return;
  static const int groups[] = {3, 5, 6, 7, 12};
  enum { ROUNDS = 3 };
  extras_case(b, 4, 4096, 32, 8, 128, EX_PLAIN, 0); /* warm-up */
  for (int g = 0; g < 5; ++g) {
    double ratio[ROUNDS];
    for (int r = 0; r < ROUNDS; ++r) {
      const double g4 = extras_case(b, 4, 4096, 8 * groups[g], 2 * groups[g], 128, EX_PLAIN, 0);
      const double rate = extras_case(b, 4, 4096, 8 * groups[g], 8, 128, EX_PLAIN, g4);
      ratio[r] = g4 > 0 ? rate / g4 : 0;
    }
    const double med = fi_bench_median(ratio, ROUNDS); /* (ratio now sorted) */
    printf("| prefill+ | group %d over group 4, median of %d rounds: %.3f (%.3f .. %.3f)\n",
           groups[g], ROUNDS, med, ratio[0], ratio[ROUNDS - 1]);
  }
}
