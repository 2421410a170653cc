/* test/gpu/gpu_common.h -- helpers shared by the GPU tests: CUDA/fi call checks, a seeded
 * random generator, dtype conversions, random fill (never zeros), device buffers with a
 * NaN poison, random shuffled page tables, and element-wise comparison against the host
 * backend. Header-only (static functions) so every test_*.c stays a single file. */
#ifndef FI_TEST_GPU_COMMON_H
#define FI_TEST_GPU_COMMON_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/runtime.h"
#include "gpu_check.h" /* GPU_CK */

#define FI_CK(ctx, call)                                                                  \
  do {                                                                                    \
    fi_status s_ = (call);                                                                \
    if (s_ != FI_SUCCESS) {                                                               \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,                 \
              fi_status_string(s_), fi_last_error(ctx));                                  \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* Exit 77 (ctest: skipped) when no device can run the CUDA backend. */
static inline void gpu_require_device(const char *test) {
  if (!fi_cuda_available()) {
    printf("%s: skipped: no CUDA device\n", test);
    exit(77);
  }
}

/* ------------------------------------------------------------------ random -------- */

static uint64_t gpu_rng = 0x243f6a8885a308d3ull;
static inline void gpu_seed(uint64_t s) { gpu_rng = s ? s : 0x243f6a8885a308d3ull; }
static inline uint32_t gpu_rand(void) {
  gpu_rng ^= gpu_rng << 13;
  gpu_rng ^= gpu_rng >> 7;
  gpu_rng ^= gpu_rng << 17;
  return (uint32_t)(gpu_rng >> 16);
}
static inline int gpu_rand_int(int lo, int hi) { /* inclusive */
  return lo + (int)(gpu_rand() % (uint32_t)(hi - lo + 1));
}
static inline float gpu_rand_uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)(gpu_rand() & 0xffffff) / 16777216.0f;
}
/* Log-uniform integer in [lo, hi]. */
static inline int gpu_rand_log(int lo, int hi) {
  double a = log((double)lo), b = log((double)hi + 1.0);
  int v = (int)exp(a + (b - a) * (double)(gpu_rand() & 0xffffff) / 16777216.0);
  return v < lo ? lo : (v > hi ? hi : v);
}
static inline uint64_t gpu_env_u64(const char *name, uint64_t dflt) {
  const char *s = getenv(name);
  return s && *s ? strtoull(s, NULL, 0) : dflt;
}

/* ------------------------------------------------------------------ dtypes -------- */

static inline uint32_t gpu_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float gpu_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline uint16_t gpu_f32_to_f16(float f) {
  uint32_t x = gpu_f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) return (uint16_t)(sign | (uint32_t)lrintf(gpu_bits_f32(ax) * 16777216.0f));
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;
  return (uint16_t)(sign | (r >> 13));
}
static inline float gpu_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) return (sign ? -1.f : 1.f) * (float)m * 5.9604644775390625e-8f;
  if (e == 31) return gpu_bits_f32(sign | 0x7f800000u | (m << 13));
  return gpu_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}
static inline uint16_t gpu_f32_to_bf16(float f) {
  uint32_t x = gpu_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
static inline float gpu_bf16_to_f32(uint16_t b) { return gpu_bits_f32((uint32_t)b << 16); }

/* An e4m3 code's value (0x7f and 0xff: NaN, the poison of cache rows no kernel reads). */
static inline float gpu_e4m3_to_f32(uint8_t b) {
  if ((b & 0x7f) == 0x7f) return NAN;
  const int ex = (b >> 3) & 15, m = b & 7;
  const float mag = ex == 0 ? ldexpf((float)m / 8.f, -6) : ldexpf(1.f + (float)m / 8.f, ex - 7);
  return (b & 0x80) ? -mag : mag;
}

/* Element i of a buffer of dtype dt (f16, bf16, f32, or fp8 codes before any scale) as
 * float. */
static inline float gpu_load(const void *buf, fi_dtype dt, int64_t i) {
  switch (dt) {
    case FI_DTYPE_F16: return gpu_f16_to_f32(((const uint16_t *)buf)[i]);
    case FI_DTYPE_BF16: return gpu_bf16_to_f32(((const uint16_t *)buf)[i]);
    case FI_DTYPE_F32: return ((const float *)buf)[i];
    case FI_DTYPE_E4M3: return gpu_e4m3_to_f32(((const uint8_t *)buf)[i]);
    case FI_DTYPE_E5M2: return gpu_f16_to_f32((uint16_t)(((const uint8_t *)buf)[i] << 8));
    default: return NAN;
  }
}

/* The largest L2 norm of `rows` rows of hd elements (rows holding NaN, the poison of cache
 * rows no kernel reads, left out): the |q| and |k| of the tests' RoPE rounding bounds. */
static inline double gpu_max_row_norm(const void *buf, fi_dtype dt, size_t rows, int hd) {
  double best = 0;
  for (size_t r = 0; r < rows; ++r) {
    double s2 = 0;
    for (int i = 0; i < hd; ++i) {
      const double x = gpu_load(buf, dt, (int64_t)(r * (size_t)hd + (size_t)i));
      s2 += x * x;
    }
    if (s2 == s2 && sqrt(s2) > best) best = sqrt(s2);
  }
  return best;
}

/* Random values in [-1, 1] (fp8: random finite codes of moderate magnitude); nonzero
 * almost surely, never all zeros. */
static inline void gpu_fill_random(void *buf, fi_dtype dt, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float x = gpu_rand_uniform(-1.f, 1.f);
    switch (dt) {
      case FI_DTYPE_F16: ((uint16_t *)buf)[i] = gpu_f32_to_f16(x); break;
      case FI_DTYPE_BF16: ((uint16_t *)buf)[i] = gpu_f32_to_bf16(x); break;
      case FI_DTYPE_E4M3: /* exponent 4..9 of bias 7: |x| in [2^-3, 2^3) */
        ((uint8_t *)buf)[i] = (uint8_t)(((gpu_rand() & 1) << 7) | (gpu_rand_int(4, 9) << 3) | (gpu_rand() & 7));
        break;
      case FI_DTYPE_E5M2: /* exponent 12..17 of bias 15 */
        ((uint8_t *)buf)[i] = (uint8_t)(((gpu_rand() & 1) << 7) | (gpu_rand_int(12, 17) << 2) | (gpu_rand() & 3));
        break;
      default: ((float *)buf)[i] = x; break;
    }
  }
}

/* ------------------------------------------------------------------ device -------- */

static inline void *gpu_upload(const void *host, size_t bytes) {
  void *d = NULL;
  GPU_CK(cudaMalloc(&d, bytes ? bytes : 16));
  if (bytes) GPU_CK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}
/* Device buffer filled with 0xff bytes: NaN in f16, bf16 and f32. */
static inline void *gpu_alloc_poisoned(size_t bytes) {
  void *d = NULL;
  GPU_CK(cudaMalloc(&d, bytes ? bytes : 16));
  GPU_CK(cudaMemset(d, 0xff, bytes ? bytes : 16));
  return d;
}
static inline void gpu_download(void *host, const void *dev, size_t bytes) {
  if (bytes) GPU_CK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

/* ------------------------------------------------------------------ pages --------- */

/* A page table for `batch` requests of kv_len[i] tokens, pages of `page_size`, whose page
 * ids are a random permutation of [0, num_pages) (not in order), with `spare` unused
 * pages mixed in. Arrays are malloc'ed; free with gpu_free_pages. */
typedef struct gpu_pages {
  int32_t *indptr, *indices, *last_page_len;
  int32_t num_pages, total_pages;
} gpu_pages;

static inline gpu_pages gpu_make_pages(int batch, const int32_t *kv_len, int page_size,
                                       int spare) {
  gpu_pages p;
  p.indptr = (int32_t *)malloc(sizeof(int32_t) * (size_t)(batch + 1));
  p.last_page_len = (int32_t *)malloc(sizeof(int32_t) * (size_t)(batch > 0 ? batch : 1));
  p.indptr[0] = 0;
  for (int i = 0; i < batch; ++i) {
    int n = (kv_len[i] + page_size - 1) / page_size;
    p.indptr[i + 1] = p.indptr[i] + n;
    p.last_page_len[i] = n ? kv_len[i] - (n - 1) * page_size : 1;
  }
  p.total_pages = p.indptr[batch];
  p.num_pages = p.total_pages + spare;
  int32_t *perm = (int32_t *)malloc(sizeof(int32_t) * (size_t)(p.num_pages > 0 ? p.num_pages : 1));
  for (int i = 0; i < p.num_pages; ++i) perm[i] = i;
  for (int i = p.num_pages - 1; i > 0; --i) {
    int j = (int)(gpu_rand() % (uint32_t)(i + 1));
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  p.indices = perm; /* the first total_pages entries are used */
  return p;
}
static inline void gpu_free_pages(gpu_pages *p) {
  free(p->indptr);
  free(p->indices);
  free(p->last_page_len);
}

/* ------------------------------------------------------------------ compare ------- */

/* Running statistics of a comparison. */
typedef struct gpu_err {
  double max_rel;    /* max over elements of |gpu - ref| / row scale */
  double max_lse;    /* max |gpu lse - ref lse| / max(1, |ref lse|) */
  long long elements, failures;
} gpu_err;

/* Compares rows of `width` elements: |gpu - ref| <= tol * max(max|ref row|, floor) for
 * every element (NaN fails). Returns the number of failing elements; prints the first few. */
static inline long long gpu_compare_rows(const char *what, const void *gpu, const void *ref,
                                         fi_dtype dt, int64_t rows, int64_t width,
                                         int64_t row_stride, double tol, double floor_,
                                         gpu_err *err) {
  long long bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double scale = floor_;
    for (int64_t c = 0; c < width; ++c) {
      double v = fabs((double)gpu_load(ref, dt, r * row_stride + c));
      if (v > scale) scale = v;
    }
    for (int64_t c = 0; c < width; ++c) {
      double g = gpu_load(gpu, dt, r * row_stride + c), x = gpu_load(ref, dt, r * row_stride + c);
      double rel = fabs(g - x) / scale;
      if (!(rel <= tol)) {
        if (bad < 4)
          fprintf(stderr, "  %s row %lld col %lld: gpu %.6g host %.6g (rel %.3g > %.3g)\n", what,
                  (long long)r, (long long)c, g, x, rel, tol);
        ++bad;
      }
      if (rel > err->max_rel || rel != rel) err->max_rel = rel != rel ? INFINITY : rel;
    }
  }
  err->elements += rows * width;
  err->failures += bad;
  return bad;
}

/* LSE: equal infinities, else |gpu - ref| <= tol * max(1, |ref|). */
static inline long long gpu_compare_lse(const float *gpu, const float *ref, int64_t n,
                                        double tol, gpu_err *err) {
  long long bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double g = gpu[i], x = ref[i];
    int ok;
    double e = 0;
    if (isinf(x)) ok = (g == x);
    else {
      e = fabs(g - x) / (fabs(x) > 1.0 ? fabs(x) : 1.0);
      ok = e <= tol;
    }
    if (!ok) {
      if (bad < 4) fprintf(stderr, "  lse %lld: gpu %.7g host %.7g\n", (long long)i, g, x);
      ++bad;
    }
    if (e > err->max_lse) err->max_lse = e;
  }
  err->elements += n;
  err->failures += bad;
  return bad;
}

#endif
