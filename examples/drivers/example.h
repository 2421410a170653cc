/* examples/drivers/example.h -- what the three example drivers share: the E2E helpers
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

#endif
