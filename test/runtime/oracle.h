/* test/runtime/oracle.h -- a deliberately naive float64 attention oracle: dense per-request
 * arrays, every logit computed explicitly, softmax by definition. Shares nothing with the
 * host backend but the runtime.h parameter struct. */
#ifndef FI_TEST_ORACLE_H
#define FI_TEST_ORACLE_H

#include <stdint.h>

#include "fi/runtime.h"

/* One request. q [qo_len, qo_heads, head_dim], k/v [kv_len, kv_heads, head_dim] (already
 * dequantised, k_scale / v_scale NOT yet applied). mask_bits: the request's bits start at
 * bit mask_bit0 (custom mask only). o [qo_len, qo_heads, head_dim], lse [qo_len, qo_heads]
 * (natural log; -inf and o = 0 for rows that see no key). */
void oracle_attention(const fi_attention_params *p, int64_t qo_len, int64_t kv_len,
                      const double *q, const double *k, const double *v,
                      const uint8_t *mask_bits, int64_t mask_bit0, double *o, double *lse);

/* Merge of n states of one (row, head): v [n][head_dim], s [n]. */
void oracle_merge(int64_t n, int64_t head_dim, const double *v, const double *s, double *v_out,
                  double *s_out);

#endif
