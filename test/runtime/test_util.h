/* test/runtime/test_util.h -- seeded random data, poisoning, element-wise checks. */
#ifndef FI_TEST_UTIL_H
#define FI_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "fi/runtime.h"

static int g_failures = 0;
static int g_checks = 0;

#define EXPECT(cond, ...)                                                                  \
  do {                                                                                     \
    ++g_checks;                                                                            \
    if (!(cond)) {                                                                         \
      ++g_failures;                                                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                 \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fprintf(stderr, "\n");                                                               \
    }                                                                                      \
  } while (0)

#define EXPECT_OK(expr, ctx)                                                               \
  do {                                                                                     \
    fi_status st_ = (expr);                                                                \
    EXPECT(st_ == FI_SUCCESS, "%s -> %s: %s", #expr, fi_status_string(st_),                \
           fi_last_error(ctx));                                                            \
  } while (0)

/* `expr` fails with `want_status` and a message of the test's `ctx` holding every string
 * that follows (the array, index and value a rule names). */
#define EXPECT_ERR(expr, want_status, ...)                                                 \
  do {                                                                                     \
    fi_status st_ = (expr);                                                                \
    const char *msg_ = fi_last_error(ctx);                                                 \
    const char *subs_[] = {__VA_ARGS__};                                                   \
    int ok_ = st_ == (want_status);                                                        \
    for (size_t i_ = 0; i_ < sizeof(subs_) / sizeof(subs_[0]); ++i_)                       \
      if (!strstr(msg_, subs_[i_])) ok_ = 0;                                               \
    EXPECT(ok_, "%s: got %s \"%s\", want %s with [%s]", #expr, fi_status_string(st_), msg_, \
           fi_status_string(want_status), subs_[0]);                                       \
  } while (0)

static inline int test_finish(const char *name) {
  if (g_failures) {
    fprintf(stderr, "%s: %d of %d checks FAILED\n", name, g_failures, g_checks);
    return 1;
  }
  printf("%s: all %d checks passed\n", name, g_checks);
  return 0;
}

/* splitmix64: deterministic, seedable */
typedef struct rng {
  uint64_t s;
} rng;
static inline uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static inline double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }
static inline double rng_range(rng *r, double lo, double hi) {
  return lo + (hi - lo) * rng_uniform(r);
}
static inline int64_t rng_int(rng *r, int64_t lo, int64_t hi_incl) {
  return lo + (int64_t)(rng_next(r) % (uint64_t)(hi_incl - lo + 1));
}

/* Fills n elements of `dtype` with uniform values in [lo, hi] (rounded to the dtype). */
static inline void fill_random(void *data, fi_dtype dtype, int64_t n, rng *r, double lo, double hi) {
  for (int64_t i = 0; i < n; ++i) fi_store_f32(data, dtype, i, (float)rng_range(r, lo, hi));
}

/* Poison: all-ones bytes are NaN in f16, bf16 and f32, so an unwritten element fails. */
static inline void poison(void *data, size_t bytes) { memset(data, 0xff, bytes); }

/* ALiBi slopes as runtime.h states them (Press et al.): 2^(-8(h+1)/n) for the first
 * n = 2^floor(log2(heads)) heads, then the odd steps of the 2n sequence. */
static inline void alibi_slopes(int heads, float *out) {
  int n = 1;
  while (n * 2 <= heads) n *= 2;
  for (int h = 0; h < heads; ++h)
    out[h] = h < n ? (float)pow(2.0, -8.0 * (h + 1) / n)
                   : (float)pow(2.0, -8.0 * (2 * (h - n) + 1) / (2.0 * n));
}

static inline void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(2);
  }
  return p;
}

/* |got - want| <= atol + rtol * |want|; both -inf counts as equal; NaN never does. */
static inline int close_enough(double got, double want, double atol, double rtol) {
  if (isnan(got) || isnan(want)) return 0;
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

#endif
