/* examples/drivers/example.h -- what the example drivers share: the E2E helpers
 * (memref descriptors, random ragged problems, comparison with the runtime called
 * directly; test/E2E/drivers/e2e.h), a clock, and argument parsing. */
#ifndef FI_EXAMPLE_H
#define FI_EXAMPLE_H

#include "e2e.h" /* first: it sets _POSIX_C_SOURCE */

#include <time.h>

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n ? v[n / 2] : 0;
}

/* --name=value integer options with defaults. */
static inline long arg_long(int argc, char **argv, const char *name, long dflt) {
  size_t n = strlen(name);
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 && argv[i][2 + n] == '=')
      return strtol(argv[i] + 3 + n, NULL, 10);
  return dflt;
}

static inline void *data_ptr(const void *desc, fi_dtype dtype) {
  void *const *p = (void *const *)desc;
  const int64_t *d = (const int64_t *)(p + 2);
  return (char *)p[1] + d[0] * (int64_t)fi_dtype_size(dtype);
}

static inline void *copy_of(const void *src, size_t bytes) {
  void *p = e2e_alloc(bytes);
  memcpy(p, src, bytes);
  return p;
}

/* ---- A compiled op on the GPU against the host backend, from the same object ---- */
/* The results of an attention op with its LSE. */
typedef struct { memref3 o; memref2 lse; } o_lse;

/* A host copy of a compiled result (device memory on the GPU context). */
static inline void *result_copy(fi_context *ctx, const void *desc, fi_dtype dt, int64_t n) {
  fi_rt_set_thread_context(ctx);
  void *h = host_copy_of(data_ptr(desc, dt), (size_t)n * fi_dtype_size(dt));
  fi_rt_free(((void *const *)desc)[0]);
  return h;
}

/* |gpu - host| <= atol + rtol |host| everywhere (atol = rtol * max |host|); NaN fails. */
static inline int64_t close_to(const char *what, const void *gpu, const void *host, fi_dtype dt,
                        int64_t n) {
  const double rtol = dt == FI_DTYPE_BF16 ? 2e-2 : dt == FI_DTYPE_F16 ? 1e-2 : 1e-3;
  double maxref = 0;
  for (int64_t i = 0; i < n; ++i) {
    double r = fi_load_f32(host, dt, i);
    if (isfinite(r) && fabs(r) > maxref) maxref = fabs(r);
  }
  const double atol = rtol * (maxref > 0 ? maxref : 1.0);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double g = fi_load_f32(gpu, dt, i), r = fi_load_f32(host, dt, i);
    int ok = (isinf(r) && g == r) || fabs(g - r) <= atol + rtol * fabs(r);
    if (!ok && bad++ < 4) printf("MISMATCH %s[%lld]: gpu %.6g host %.6g\n", what, (long long)i, g, r);
  }
  return bad;
}

/* One configuration of a compiled op on both contexts: `run` writes the op's results (an
 * o_lse when has_lse, else a memref3) to `out`; outputs as close_to says, and a second GPU
 * run bit-identical; returns 1 when the GPU matches. Without a GPU context (gpu NULL) the
 * host side runs alone and must write finite values. */
typedef void (*run_fn)(void *state, void *out);
static inline int gpu_vs_host(fi_context *gpu_ctx, fi_context *host_ctx, const char *what, int config,
                       run_fn run, void *state, fi_dtype dt, int64_t n, int has_lse,
                       int64_t nl) {
  char gpu_out[sizeof(o_lse)], gpu_again[sizeof(o_lse)], host_out[sizeof(o_lse)];
  if (!gpu_ctx) { /* host only: it runs, and writes finite values */
    fi_rt_set_thread_context(host_ctx);
    run(state, host_out);
    void *h = result_copy(host_ctx, host_out, dt, n);
    int64_t nan = 0;
    for (int64_t i = 0; i < n; ++i) nan += !isfinite(fi_load_f32(h, dt, i));
    free(h);
    fi_rt_set_thread_context(NULL);
    if (nan) printf("MISMATCH %s config %d: %lld non-finite outputs on the host\n", what, config, (long long)nan);
    return nan == 0;
  }
  fi_rt_set_thread_context(gpu_ctx);
  run(state, gpu_out);
  run(state, gpu_again);
  fi_rt_set_thread_context(host_ctx);
  run(state, host_out);
  void *g = result_copy(gpu_ctx, gpu_out, dt, n), *g2 = result_copy(gpu_ctx, gpu_again, dt, n);
  void *h = result_copy(host_ctx, host_out, dt, n);
  int64_t bad = close_to(what, g, h, dt, n);
  int differs = memcmp(g, g2, (size_t)n * fi_dtype_size(dt)) != 0;
  if (has_lse) {
    const o_lse *go = (const o_lse *)gpu_out, *ga = (const o_lse *)gpu_again, *ho = (const o_lse *)host_out;
    void *gl = result_copy(gpu_ctx, &go->lse, FI_DTYPE_F32, nl);
    void *gl2 = result_copy(gpu_ctx, &ga->lse, FI_DTYPE_F32, nl);
    void *hl = result_copy(host_ctx, &ho->lse, FI_DTYPE_F32, nl);
    bad += close_to("lse", gl, hl, FI_DTYPE_F32, nl);
    differs |= memcmp(gl, gl2, (size_t)nl * 4) != 0;
    free(gl), free(gl2), free(hl);
  }
  fi_rt_set_thread_context(NULL); /* the inputs are the default context's (managed) memory */
  if (differs) printf("MISMATCH %s config %d: a second GPU run differs\n", what, config);
  if (bad) printf("MISMATCH %s config %d: %lld elements\n", what, config, (long long)bad);
  free(g), free(g2), free(h);
  return !bad && !differs;
}

/* A device copy of a host-filled buffer (fi_rt_alloc: the runtime's device pool). */
static inline void *device_copy(const void *src, size_t bytes) {
  void *p = fi_rt_alloc(bytes ? bytes : 1);
  if (!p || fi_rt_copy(p, src, bytes) != FI_SUCCESS) exit(2);
  return p;
}

/* Compares one compiled step with the runtime called directly: each layer's output and the
 * caller's cache the compiled step appended to in place. Returns the mismatch count. */
static inline int64_t compare_step(int layers, void *const *got_o, void *const *want_o,
                                   size_t nq, void *const *cache, void *const *want_cache,
                                   size_t nc, fi_dtype dtype) {
  int64_t bad = 0;
  for (int l = 0; l < layers; ++l) {
    char name[32];
    snprintf(name, sizeof(name), "layer %d o", l);
    bad += compare(name, got_o[l], want_o[l], dtype, nq);
    snprintf(name, sizeof(name), "layer %d cache", l);
    bad += compare(name, cache[l], want_cache[l], dtype, nc);
  }
  return bad;
}

/* Prints the steady-state timing of steps 2.. and counts workspace allocations made after
 * the first step (there must be none) as a mismatch. */
static inline int64_t report_steady_state(const double *t, int steps, long extra_allocations) {
  double sorted[256];
  int n = steps < 256 ? steps : 256;
  memcpy(sorted, t, (size_t)n * sizeof(double));
  printf("  compiled steps 2..%d: median %.2f ms per step; workspace allocations after step 1: %ld\n",
         n + 1, median(sorted, n), extra_allocations);
  if (!extra_allocations) return 0;
  printf("MISMATCH: steady-state steps allocated workspaces\n");
  return 1;
}

#ifdef FI_DRIVER_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

/* GPU time per call of fn(user), from CUDA events on `stream`: `reps` calls back to back
 * between two events (so the host's launch work overlaps the GPU's, as in a serving loop,
 * and the time is the GPU's unless the host is slower), median of `trials` such runs. */
typedef void (*gpu_timed_fn)(void *user);
static inline double gpu_ms_per_call(cudaStream_t stream, int reps, int trials, gpu_timed_fn fn,
                                     void *user) {
  cudaEvent_t e0, e1;
  if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) exit(2);
  double t[64];
  if (trials > 64) trials = 64;
  /* The warm-up call is the one a profiler sees (ncu --profile-from-start off lists each
   * kernel of one call, timed alone). */
  cudaProfilerStart();
  fn(user);
  cudaStreamSynchronize(stream);
  cudaProfilerStop();
  for (int i = 0; i < trials; ++i) {
    cudaEventRecord(e0, stream);
    for (int r = 0; r < reps; ++r) fn(user);
    cudaEventRecord(e1, stream);
    float ms = 0;
    if (cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
      exit(2);
    t[i] = ms / reps;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (fi_rt_synchronize() != FI_SUCCESS) exit(2);
  return median(t, trials);
}

/* The copy ceiling of this run: a device-to-device copy of 1 GiB on `stream`, bytes read
 * plus written per second (GB/s), the median of 10 after 5 warm-ups (bench/ measures it the
 * same way). */
typedef struct { void *dst, *src; size_t bytes; cudaStream_t stream; } copy_job;
static void copy_once(void *user) {
  copy_job *c = (copy_job *)user;
  if (cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
    exit(2);
}
static inline double copy_ceiling_gbs(cudaStream_t stream) {
  copy_job c = {NULL, NULL, (size_t)1 << 30, stream};
  if (cudaMalloc(&c.dst, c.bytes) != cudaSuccess || cudaMalloc(&c.src, c.bytes) != cudaSuccess)
    exit(2);
  cudaMemsetAsync(c.src, 1, c.bytes, stream);
  for (int i = 0; i < 5; ++i) copy_once(&c);
  double ms = gpu_ms_per_call(stream, 1, 10, copy_once, &c);
  cudaFree(c.dst);
  cudaFree(c.src);
  return 2.0 * (double)c.bytes / (ms * 1e6);
}

/* One line of step timing: GPU time per step of the compiled step, its graph replay, and
 * the kernel sum (the runtime's runs alone with plans made beforehand, plus the device plan
 * alone), against the HBM floor of the bytes the step must move at the copy ceiling. */
static inline void print_step_timing(const char *what, double bytes, double ceiling_gbs,
                                     double compiled_ms, double graph_ms, double runs_ms,
                                     double plan_ms) {
  const double kernels = runs_ms + plan_ms, floor_ms = bytes / (ceiling_gbs * 1e6);
  printf("  GPU time per step (%s, events, back to back): compiled %.3f ms, graph %.3f ms, "
         "kernel sum %.3f ms (runs alone %.3f + device plan alone %.3f); graph / kernels "
         "%.2fx, compiled / kernels %.2fx; HBM floor %.3f ms (%.3f GB at the copy ceiling "
         "%.0f GB/s): graph / floor %.2fx\n",
         what, compiled_ms, graph_ms, kernels, runs_ms, plan_ms, graph_ms / kernels,
         compiled_ms / kernels, floor_ms, bytes / 1e9, ceiling_gbs, graph_ms / floor_ms);
}
#endif

#endif
