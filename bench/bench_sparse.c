/* bench/bench_sparse.c -- block-sparse attention (fi_block_sparse_plan/run) beside the dense
 * kernel of the same shape: one sequence of 16384 query rows and keys, 32 / 8 heads,
 * head_dim 128, fp16, no causal mask. The dense row is the ragged prefill of the whole
 * square (the warp-specialised kernel); then BSR matrices of blocks 64 x 64 and 128 x 128:
 * every block listed (0 % sparsity), random blocks at 50, 90 and 98 % sparsity (each block
 * row lists the same count, at random columns), and a causal local + global pattern
 * (StreamingLLM-like: the first block column and the 8 blocks up to the diagonal).
 *
 * FLOPs: 4 * head_dim * qo_heads * (pairs of the listed blocks; causal: the kept ones), so a
 * kernel that computes only the listed blocks keeps the dense row's TFLOP/s; the variant
 * column gives that ratio. Bytes: q and o once, k and v once per listed block row
 * (a lower bound of the traffic). */
#include <string.h>

#include "bench.h"

enum { SEQ = 16384, QO_HEADS = 32, KV_HEADS = 8, HD = 128 };

typedef struct sparse_arg {
  fi_context *ctx;
  fi_plan plan;
  fi_tensor q, k, v, o;
  fi_bsr_matrix bsr;
  int32_t *indptr; /* dense row: qo = kv indptr {0, SEQ} on the device */
  int dense;
} sparse_arg;

static void run_sparse(void *p) {
  sparse_arg *a = (sparse_arg *)p;
  if (a->dense)
    FI_BENCH_OK(a->ctx, fi_ragged_prefill_run(a->ctx, &a->plan, &a->q, &a->k, &a->v,
                                              a->indptr, a->indptr, NULL, &a->o, NULL));
  else
    FI_BENCH_OK(a->ctx, fi_block_sparse_run(a->ctx, &a->plan, &a->q, &a->k, &a->v, &a->bsr,
                                            &a->o, NULL));
}

static uint64_t sparse_rng = 0x9e3779b97f4a7c15ull;
static uint32_t sparse_rand(void) {
  sparse_rng ^= sparse_rng << 13;
  sparse_rng ^= sparse_rng >> 7;
  sparse_rng ^= sparse_rng << 17;
  return (uint32_t)(sparse_rng >> 16);
}

enum { PAT_DENSE_KERNEL, PAT_RANDOM, PAT_LOCAL_GLOBAL };

/* One row; returns its rate (FLOP per ms, 0 when skipped). */
static double sparse_case(fi_bench_ctx *b, sparse_arg *a, int pattern, int block,
                          double sparsity, double dense_rate) {
  char name[96];
  if (pattern == PAT_DENSE_KERNEL)
    snprintf(name, sizeof name, "dense prefill L%d h%d/%d", SEQ, QO_HEADS, KV_HEADS);
  else if (pattern == PAT_RANDOM)
    snprintf(name, sizeof name, "bsr %dx%d random %.0f%% sparse", block, block, sparsity * 100);
  else
    snprintf(name, sizeof name, "bsr %dx%d causal local8+global", block, block);
  if (!fi_bench_selected(b, name)) return 0;
  fi_attention_params p = fi_attention_params_default(QO_HEADS, KV_HEADS, HD);
  p.mask_mode = pattern == PAT_LOCAL_GLOBAL ? FI_MASK_CAUSAL : FI_MASK_NONE;
  const int64_t blocks = block > 0 ? SEQ / block : 0; /* (the dense row lists none) */
  int32_t *indptr = malloc(sizeof(int32_t) * (size_t)(blocks + 1));
  int32_t *indices = malloc(sizeof(int32_t) * (size_t)(blocks * blocks));
  int32_t *perm = malloc(sizeof(int32_t) * (size_t)blocks);
  double pairs = 0, listed_rows = 0;
  indptr[0] = 0;
  for (int64_t i = 0; i < blocks; ++i) {
    int32_t nnz = indptr[i];
    if (pattern == PAT_RANDOM) {
      int64_t keep = (int64_t)((1.0 - sparsity) * (double)blocks + 0.5);
      if (keep < 1) keep = 1;
      for (int64_t j = 0; j < blocks; ++j) perm[j] = (int32_t)j;
      for (int64_t j = 0; j < keep; ++j) { /* a random subset, then sorted */
        const int64_t r = j + sparse_rand() % (uint32_t)(blocks - j);
        const int32_t t = perm[j];
        perm[j] = perm[r];
        perm[r] = t;
      }
      for (int64_t j = 1; j < keep; ++j)
        for (int64_t l = j; l > 0 && perm[l - 1] > perm[l]; --l) {
          const int32_t t = perm[l];
          perm[l] = perm[l - 1];
          perm[l - 1] = t;
        }
      for (int64_t j = 0; j < keep; ++j) indices[nnz++] = perm[j];
      pairs += (double)keep * block * block;
    } else if (pattern == PAT_LOCAL_GLOBAL) {
      for (int64_t j = 0; j <= i; ++j)
        if (j == 0 || j > i - 8) {
          indices[nnz++] = (int32_t)j;
          pairs += j < i ? (double)block * block : (double)block * (block + 1) / 2;
        }
    }
    indptr[i + 1] = nnz;
    listed_rows += nnz > indptr[i];
  }
  if (pattern == PAT_DENSE_KERNEL) pairs = (double)SEQ * SEQ;
  a->bsr.block_rows = a->bsr.block_cols = block;
  a->bsr.indptr = indptr;
  a->bsr.indices = indices;
  a->dense = pattern == PAT_DENSE_KERNEL;
  size_t ws_bytes = 0;
  if (a->dense)
    FI_BENCH_OK(b->ctx, fi_prefill_workspace_size(b->ctx, &p, 1, SEQ, &ws_bytes));
  else
    FI_BENCH_OK(b->ctx, fi_block_sparse_workspace_size(b->ctx, &p, SEQ, SEQ, block, block,
                                                       &ws_bytes));
  void *ws = NULL;
  FI_BENCH_CK(cudaMalloc(&ws, ws_bytes));
  const int32_t host_indptr[2] = {0, SEQ};
  fi_status s = a->dense ? fi_ragged_prefill_plan(b->ctx, &p, 1, host_indptr, host_indptr, NULL,
                                                  NULL, ws, ws_bytes, &a->plan)
                         : fi_block_sparse_plan(b->ctx, &p, SEQ, SEQ, &a->bsr, NULL, ws,
                                                ws_bytes, &a->plan);
  double rate = 0;
  if (s != FI_SUCCESS) {
    printf("| sparse   | %-34s | plan refused: %s\n", name, fi_last_error(b->ctx));
  } else {
    const double ms = fi_bench_time_ms(b, run_sparse, a);
    const double flops = 4.0 * HD * QO_HEADS * pairs;
    rate = flops / ms;
    char tn[64], variant[96];
    fi_tiles_name(a->plan.tiles, 0, tn, sizeof tn);
    if (dense_rate > 0)
      snprintf(variant, sizeof variant, "%s %.2fx dense", a->dense ? tn : "bsr_ws",
               rate / dense_rate);
    else
      snprintf(variant, sizeof variant, "%s", tn);
    const double qo_bytes = 2.0 * SEQ * QO_HEADS * HD * 2;
    const double kv_bytes =
        2.0 * SEQ * KV_HEADS * HD * 2 * (a->dense ? 1.0 : listed_rows / (double)blocks);
    fi_bench_row(b, "sparse", name, variant, ms, qo_bytes + kv_bytes, flops);
  }
  cudaFree(ws);
  free(indptr);
  free(indices);
  free(perm);
  return rate;
}

void fi_bench_sparse(fi_bench_ctx *b) {
  sparse_arg a;
  memset(&a, 0, sizeof a);
  a.ctx = b->ctx;
  const int64_t qshape[3] = {SEQ, QO_HEADS, HD}, kshape[3] = {SEQ, KV_HEADS, HD};
  const size_t qbytes = (size_t)SEQ * QO_HEADS * HD * 2, kbytes = (size_t)SEQ * KV_HEADS * HD * 2;
  a.q = fi_tensor_contiguous(fi_bench_random_device(qbytes), FI_DTYPE_F16, 3, qshape);
  a.k = fi_tensor_contiguous(fi_bench_random_device(kbytes), FI_DTYPE_F16, 3, kshape);
  a.v = fi_tensor_contiguous(fi_bench_random_device(kbytes), FI_DTYPE_F16, 3, kshape);
  void *obuf = NULL;
  FI_BENCH_CK(cudaMalloc(&obuf, qbytes));
  a.o = fi_tensor_contiguous(obuf, FI_DTYPE_F16, 3, qshape);
  const int32_t host_indptr[2] = {0, SEQ};
  FI_BENCH_CK(cudaMalloc((void **)&a.indptr, sizeof host_indptr));
  FI_BENCH_CK(cudaMemcpy(a.indptr, host_indptr, sizeof host_indptr, cudaMemcpyHostToDevice));
  const double dense = sparse_case(b, &a, PAT_DENSE_KERNEL, 0, 0, 0);
  static const int blocks[2] = {64, 128};
  static const double sparsities[4] = {0.0, 0.5, 0.9, 0.98};
  for (int bi = 0; bi < 2; ++bi) {
    for (int si = 0; si < 4; ++si) sparse_case(b, &a, PAT_RANDOM, blocks[bi], sparsities[si], dense);
    sparse_case(b, &a, PAT_LOCAL_GLOBAL, blocks[bi], 0, dense);
  }
  cudaFree((void *)(uintptr_t)a.q.data);
  cudaFree(a.k.data);
  cudaFree(a.v.data);
  cudaFree(obuf);
  cudaFree(a.indptr);
}
