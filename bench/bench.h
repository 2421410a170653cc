/* bench/bench.h -- what every benchmark suite (bench_NAME.c) gets from bench_main.c: the
 * context, the ceilings measured in the same run, a CUDA-event timer (warm-up, repeats,
 * median) and the table printer. */
#ifndef FI_BENCH_H
#define FI_BENCH_H

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fi/runtime.h"

typedef struct fi_bench_ctx {
  fi_context *ctx;          /* CUDA backend, launching on `stream` */
  cudaStream_t stream;
  int warmup, reps;         /* per timed case */
  double warm_ms;           /* and at least this long a warm-up (bench_main.c) */
  double copy_gbps;         /* device-to-device copy, bytes read + written per second / 1e9 */
  double gemm_tflops;       /* cuBLAS fp16 GEMM 8192^3 (fp32 accumulation) */
  char gpu[256];
  const char *filter;       /* only cases whose name contains this (NULL: all) */
  double last_host_ms;      /* host time per call of the last fi_bench_time_ms */
} fi_bench_ctx;

/* Median milliseconds of `fn(arg)` over ctx->reps runs after a warm-up of at least
 * ctx->warmup runs and ctx->warm_ms milliseconds, each run bracketed by CUDA events on
 * ctx->stream. fn must only enqueue work on that stream. */
double fi_bench_time_ms(fi_bench_ctx *ctx, void (*fn)(void *), void *arg);
/* The median of v[0..n) (sorts v in place). */
double fi_bench_median(double *v, int n);

/* One table row: case name, kernel variant, median time, bytes moved (GB/s and fraction
 * of the copy ceiling) and flops (TFLOP/s and fraction of the GEMM ceiling; 0: skipped). */
void fi_bench_row(fi_bench_ctx *ctx, const char *suite, const char *name, const char *variant,
                  double ms, double bytes, double flops);

/* 1 when `name` passes the filter. */
int fi_bench_selected(const fi_bench_ctx *ctx, const char *name);

/* Device buffer of `bytes` filled with a repeating random pattern (never zeros). */
void *fi_bench_random_device(size_t bytes);

#define FI_BENCH_CK(call)                                                                \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)
#define FI_BENCH_OK(ctx, call)                                                           \
  do {                                                                                   \
    fi_status s_ = (call);                                                               \
    if (s_ != FI_SUCCESS) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                   \
              fi_status_string(s_), fi_last_error(ctx));                                 \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

#endif
