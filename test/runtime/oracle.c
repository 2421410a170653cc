/* test/runtime/oracle.c -- naive float64 reference of attention and state merging. */
#include "oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ALiBi slopes as in the reference implementation of Press et al. (get_slopes): for a
 * power of two n, start = 2^(-8/n) and slope_i = start^(i+1); otherwise the slopes of the
 * closest smaller power of two followed by every other slope of twice that power. */
static void slopes_pow2(int n, double *out) {
  double start = pow(2.0, -8.0 / n);
  for (int i = 0; i < n; ++i) out[i] = pow(start, i + 1);
}

static double alibi_slope(int heads, int h) {
  double buf[4096];
  int closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  if (closest == heads) {
    slopes_pow2(heads, buf);
    return buf[h];
  }
  if (h < closest) {
    slopes_pow2(closest, buf);
    return buf[h];
  }
  slopes_pow2(2 * closest, buf);
  return buf[2 * (h - closest)]; /* every other slope, starting with the first */
}

static void rope(const fi_attention_params *p, double *x, int64_t pos) {
  int64_t hd = p->head_dim, half = hd / 2;
  double *tmp = (double *)malloc(sizeof(double) * (size_t)hd);
  for (int64_t d = 0; d < hd; ++d) {
    int64_t i = d < half ? d : d - half;
    double freq = pow((double)p->rope_theta, -2.0 * (double)i / (double)hd) / p->rope_scale;
    double ang = (double)pos * freq;
    /* rotate halves: [x1, x2] -> [x1 cos - x2 sin, x2 cos + x1 sin] */
    if (d < half)
      tmp[d] = x[d] * cos(ang) - x[d + half] * sin(ang);
    else
      tmp[d] = x[d] * cos(ang) + x[d - half] * sin(ang);
  }
  memcpy(x, tmp, sizeof(double) * (size_t)hd);
  free(tmp);
}

void oracle_attention(const fi_attention_params *p, int64_t qo_len, int64_t kv_len,
                      const double *q, const double *k, const double *v,
                      const uint8_t *mask_bits, int64_t mask_bit0, double *o, double *lse) {
  int64_t hq = p->num_qo_heads, hkv = p->num_kv_heads, hd = p->head_dim;
  int64_t group = hq / hkv;
  double *qv = (double *)malloc(sizeof(double) * (size_t)hd);
  double *kv = (double *)malloc(sizeof(double) * (size_t)hd);
  double *logit = (double *)malloc(sizeof(double) * (size_t)(kv_len > 0 ? kv_len : 1));
  char *keep = (char *)malloc((size_t)(kv_len > 0 ? kv_len : 1));
  for (int64_t i = 0; i < qo_len; ++i) {
    int64_t qpos = kv_len - qo_len + i;
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kh = h / group;
      /* fp8 attention's per-head scales (q's are applied here, q being the dequantised
       * tensor without them) */
      const double qhs = p->q_scale_heads ? p->q_scale_heads[h] : 1.0;
      const double khs = p->k_scale_heads ? p->k_scale_heads[kh] : 1.0;
      const double vhs = p->v_scale_heads ? p->v_scale_heads[kh] : 1.0;
      memcpy(qv, q + (i * hq + h) * hd, sizeof(double) * (size_t)hd);
      for (int64_t d = 0; d < hd; ++d) qv[d] *= qhs;
      if (p->pos_encoding == FI_POS_ROPE_LLAMA) rope(p, qv, qpos);
      double mx = -INFINITY;
      for (int64_t j = 0; j < kv_len; ++j) {
        int ok = 1;
        if (p->mask_mode == FI_MASK_CAUSAL && j > qpos) ok = 0;
        if (p->mask_mode == FI_MASK_CUSTOM) {
          int64_t bit = mask_bit0 + i * kv_len + j;
          if (!((mask_bits[bit / 8] >> (bit % 8)) & 1)) ok = 0;
        }
        if (p->window_left >= 0 && j < qpos - p->window_left) ok = 0;
        keep[j] = (char)ok;
        if (!ok) continue;
        for (int64_t d = 0; d < hd; ++d) kv[d] = k[(j * hkv + kh) * hd + d] * p->k_scale * khs;
        if (p->pos_encoding == FI_POS_ROPE_LLAMA) rope(p, kv, j);
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += qv[d] * kv[d];
        double s = dot * p->sm_scale;
        if (p->pos_encoding == FI_POS_ALIBI) s += alibi_slope((int)hq, (int)h) * (double)(j - qpos);
        if (p->logits_soft_cap > 0) s = p->logits_soft_cap * tanh(s / p->logits_soft_cap);
        logit[j] = s;
        if (s > mx) mx = s;
      }
      double *orow = o + (i * hq + h) * hd;
      for (int64_t d = 0; d < hd; ++d) orow[d] = 0;
      if (mx == -INFINITY) {
        lse[i * hq + h] = -INFINITY;
        continue;
      }
      double den = 0;
      for (int64_t j = 0; j < kv_len; ++j)
        if (keep[j]) den += exp(logit[j] - mx);
      for (int64_t j = 0; j < kv_len; ++j) {
        if (!keep[j]) continue;
        double w = exp(logit[j] - mx) / den;
        for (int64_t d = 0; d < hd; ++d)
          orow[d] += w * v[(j * hkv + kh) * hd + d] * p->v_scale * vhs;
      }
      lse[i * hq + h] = mx + log(den);
    }
  }
  free(qv);
  free(kv);
  free(logit);
  free(keep);
}

void oracle_merge(int64_t n, int64_t head_dim, const double *v, const double *s, double *v_out,
                  double *s_out) {
  double mx = -INFINITY;
  for (int64_t c = 0; c < n; ++c)
    if (s[c] > mx) mx = s[c];
  for (int64_t d = 0; d < head_dim; ++d) v_out[d] = 0;
  if (mx == -INFINITY) {
    *s_out = -INFINITY;
    return;
  }
  double den = 0;
  for (int64_t c = 0; c < n; ++c) den += exp(s[c] - mx);
  for (int64_t c = 0; c < n; ++c) {
    double w = exp(s[c] - mx) / den;
    for (int64_t d = 0; d < head_dim; ++d) v_out[d] += w * v[c * head_dim + d];
  }
  *s_out = mx + log(den);
}
