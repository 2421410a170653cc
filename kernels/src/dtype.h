/* kernels/src/dtype.h -- scalar conversions between fp32 and the storage dtypes (f16,
 * bf16, fp8 e4m3 / e5m2), in plain C, shared by the host backend and the tests.
 * Conversions to the narrow types round to nearest even; fp8 saturates to the largest
 * finite value (e4m3 has no infinity), as the fp8 KV-cache quantisers do. */
#ifndef FI_KERNELS_DTYPE_H
#define FI_KERNELS_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fi/runtime.h"

static inline uint32_t fi_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float fi_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline float fi_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) { /* zero or subnormal: man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return fi_bits_f32(sign | 0x7f800000u | (man << 13));
  return fi_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t fi_f32_to_f16(float f) {
  uint32_t u = fi_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t au = u & 0x7fffffffu;
  if (au >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (au > 0x7f800000u ? 0x200 : 0));
  if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (au < 0x38800000u) { /* below 2^-14: subnormal half, round to nearest even */
    float a = fi_bits_f32(au);
    float scaled = a * 16777216.0f; /* a / 2^-24 */
    uint32_t m = (uint32_t)scaled;
    float rem = scaled - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    return (uint16_t)(sign | m);
  }
  uint32_t exp = (au >> 23) - 112, man = au & 0x7fffff;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return (uint16_t)(sign | h);
}

static inline float fi_bf16_to_f32(uint16_t b) { return fi_bits_f32((uint32_t)b << 16); }

static inline uint16_t fi_f32_to_bf16(float f) {
  uint32_t u = fi_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* e4m3 (OCP "fn"): bias 7, no infinity, S.1111.111 is NaN, max 448. */
static inline float fi_e4m3_to_f32(uint8_t x) {
  int sign = x & 0x80;
  int exp = (x >> 3) & 0xf, man = x & 7;
  float v;
  if (exp == 15 && man == 7) return NAN;
  if (exp == 0)
    v = ldexpf((float)man, -9); /* man/8 * 2^-6 */
  else
    v = ldexpf(1.0f + (float)man / 8.0f, exp - 7);
  return sign ? -v : v;
}

/* e5m2: bias 15, the top byte of an f16. */
static inline float fi_e5m2_to_f32(uint8_t x) { return fi_f16_to_f32((uint16_t)(x << 8)); }

/* Nearest fp8 code (ties to even), saturating; by search over the 127 magnitudes, which
 * is plenty fast for quantising test data and caches on the host. */
static inline uint8_t fi_f32_to_fp8(float f, int e5m2) {
  if (isnan(f)) return e5m2 ? 0x7f : 0x7f;
  uint8_t sign = signbit(f) ? 0x80 : 0;
  float a = fabsf(f);
  int max_code = e5m2 ? 0x7b : 0x7e; /* largest finite magnitude code */
  int lo = 0, hi = max_code;
  /* magnitudes are increasing in the code: binary search the last code <= a */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    float v = e5m2 ? fi_e5m2_to_f32((uint8_t)mid) : fi_e4m3_to_f32((uint8_t)mid);
    if (v <= a) lo = mid; else hi = mid - 1;
  }
  int best = lo;
  if (lo < max_code) {
    float vlo = e5m2 ? fi_e5m2_to_f32((uint8_t)lo) : fi_e4m3_to_f32((uint8_t)lo);
    float vhi = e5m2 ? fi_e5m2_to_f32((uint8_t)(lo + 1)) : fi_e4m3_to_f32((uint8_t)(lo + 1));
    if (a - vlo > vhi - a || (a - vlo == vhi - a && (lo & 1))) best = lo + 1;
  }
  return (uint8_t)(sign | best);
}

/* Element i (linear element offset) of `data` with `dtype`, as fp32. */
static inline float fi_load_f32(const void *data, fi_dtype dtype, int64_t i) {
  switch (dtype) {
  case FI_DTYPE_F16: return fi_f16_to_f32(((const uint16_t *)data)[i]);
  case FI_DTYPE_BF16: return fi_bf16_to_f32(((const uint16_t *)data)[i]);
  case FI_DTYPE_F32: return ((const float *)data)[i];
  case FI_DTYPE_E4M3: return fi_e4m3_to_f32(((const uint8_t *)data)[i]);
  case FI_DTYPE_E5M2: return fi_e5m2_to_f32(((const uint8_t *)data)[i]);
  }
  return 0.0f;
}

static inline void fi_store_f32(void *data, fi_dtype dtype, int64_t i, float v) {
  switch (dtype) {
  case FI_DTYPE_F16: ((uint16_t *)data)[i] = fi_f32_to_f16(v); break;
  case FI_DTYPE_BF16: ((uint16_t *)data)[i] = fi_f32_to_bf16(v); break;
  case FI_DTYPE_F32: ((float *)data)[i] = v; break;
  case FI_DTYPE_E4M3: ((uint8_t *)data)[i] = fi_f32_to_fp8(v, 0); break;
  case FI_DTYPE_E5M2: ((uint8_t *)data)[i] = fi_f32_to_fp8(v, 1); break;
  }
}

#endif
