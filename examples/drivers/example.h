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

#endif
