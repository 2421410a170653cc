/* kernels/host/host_attention.c -- the host reference backend: decode, paged and ragged
 * prefill over the planner's work units (so split-KV and the merge run here exactly as
 * planned for the GPU), fp32 accumulation with an online (streaming) softmax over KV
 * tiles, every feature of fi_attention_params, any head_dim.
 *
 * One task = (work unit, KV head): its GQA group of query heads and its query rows against
 * the unit's KV range. K and V of each KV tile are converted to fp32 once per task (RoPE
 * applied to K at the key's position, k_scale / v_scale folded in), then every row of the
 * group consumes them. Split units write fp32 partial states to the workspace; a second
 * parallel phase merges them in chunk order. A user-written variant (params.variant:
 * score_mod / mask_mod) is called per (row, head, key) pair; block-sparse attention runs
 * here as a one-request ragged prefill, so it gets the variant too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "dtype.h"
#include "host_merge.h"
#include "host_parallel.h"
#include "shard.h"
#include "internal.h"

enum { KV_TILE = 64 };

typedef struct attn_job {
  const fi_plan *plan;
  fi_plan_layout layout;
  const fi_attention_params *p;
  int32_t group;
  /* q / o / lse */
  const fi_tensor *q;
  fi_tensor *o, *lse;
  const int32_t *qo_indptr; /* NULL: decode (row = request) */
  /* KV source: paged (pages != NULL) or ragged (kv_indptr) */
  const fi_tensor *k, *v;
  fi_kv_layout layout_kv;
  const fi_page_table *pages;
  const int32_t *kv_indptr;
  const fi_custom_mask *mask;
  /* per-thread scratch */
  float *scratch;
  size_t scratch_floats_per_thread;
  int32_t max_rows;
  float *alibi; /* [qo_heads] */
  double *freq; /* [head_dim/2] */
} attn_job;

static int64_t kv_len_of(const attn_job *j, int32_t r) {
  if (j->pages) {
    int64_t n = (int64_t)j->pages->indptr[r + 1] - j->pages->indptr[r];
    return n == 0 ? 0 : (int64_t)j->p->page_size * (n - 1) + j->pages->last_page_len[r];
  }
  return (int64_t)j->kv_indptr[r + 1] - j->kv_indptr[r];
}

static int64_t qo_len_of(const attn_job *j, int32_t r) {
  return j->qo_indptr ? (int64_t)j->qo_indptr[r + 1] - j->qo_indptr[r] : 1;
}

/* Element offset of K/V (request r, position pos, kv head h, dim 0). */
static int64_t kv_offset(const attn_job *j, const fi_tensor *t, int32_t r, int64_t pos,
                         int32_t h) {
  if (j->pages) {
    int64_t ps = j->p->page_size;
    int64_t page = j->pages->indices[j->pages->indptr[r] + pos / ps];
    int64_t off = pos % ps;
    if (j->layout_kv == FI_LAYOUT_NHD)
      return page * t->strides[0] + off * t->strides[1] + h * t->strides[2];
    return page * t->strides[0] + h * t->strides[1] + off * t->strides[2];
  }
  return ((int64_t)j->kv_indptr[r] + pos) * t->strides[0] + h * t->strides[1];
}

/* dst[0..n) = scale * src[off .. off+n) as fp32; the dtype switch is hoisted out of the loop. */
static void load_row(float *dst, const void *src, fi_dtype dtype, int64_t off, int32_t n,
                     float scale) {
  switch (dtype) {
  case FI_DTYPE_F32: {
    const float *x = (const float *)src + off;
    for (int32_t d = 0; d < n; ++d) dst[d] = x[d] * scale;
    break;
  }
  case FI_DTYPE_F16: {
    const uint16_t *x = (const uint16_t *)src + off;
    for (int32_t d = 0; d < n; ++d) dst[d] = fi_f16_to_f32(x[d]) * scale;
    break;
  }
  case FI_DTYPE_BF16: {
    const uint16_t *x = (const uint16_t *)src + off;
    for (int32_t d = 0; d < n; ++d) dst[d] = fi_bf16_to_f32(x[d]) * scale;
    break;
  }
  default:
    for (int32_t d = 0; d < n; ++d) dst[d] = fi_load_f32(src, dtype, off + d) * scale;
  }
}

/* q.k with 8 independent partial sums, so the compiler can vectorise without
 * reassociating (deterministic: the summation order is fixed by the code). */
static inline float dot_f32(const float *a, const float *b, int32_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int32_t l = 0; l < 8; ++l) acc[l] += a[d + l] * b[d + l];
  float tail = 0.0f;
  for (; d < n; ++d) tail += a[d] * b[d];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

static void rope_inplace(float *x, int32_t hd, const double *freq, int64_t pos) {
  int32_t half = hd / 2;
  for (int32_t d = 0; d < half; ++d) {
    double a = (double)pos * freq[d];
    double c = cos(a), s = sin(a);
    double x1 = x[d], x2 = x[d + half];
    x[d] = (float)(x1 * c - x2 * s);
    x[d + half] = (float)(x2 * c + x1 * s);
  }
}

static void attn_task(void *arg, int64_t task, int32_t thread) {
  attn_job *j = (attn_job *)arg;
  const fi_attention_params *p = j->p;
  const int32_t hkv = p->num_kv_heads, hd = p->head_dim, g = j->group;
  const fi_work_unit *u = &j->layout.work[task / hkv];
  const int32_t kvh = (int32_t)(task % hkv);
  const int32_t r = u->request, rows = u->qo_len;
  const int64_t qo_len = qo_len_of(j, r), kv_len = kv_len_of(j, r);
  const int64_t row0 = (j->qo_indptr ? j->qo_indptr[r] : r) + u->qo_start;
  const int32_t nrh = rows * g; /* (row, head) pairs of this task */

  float *qb = j->scratch + (size_t)thread * j->scratch_floats_per_thread;
  float *acc = qb + (size_t)j->max_rows * g * hd;
  float *mrow = acc + (size_t)j->max_rows * g * hd;
  float *drow = mrow + (size_t)j->max_rows * g;
  float *kb = drow + (size_t)j->max_rows * g;
  float *vb = kb + (size_t)KV_TILE * hd;
  float *sb = vb + (size_t)KV_TILE * hd;

  const int rope = p->pos_encoding == FI_POS_ROPE_LLAMA;
  const int alibi = p->pos_encoding == FI_POS_ALIBI;
  const float cap = p->logits_soft_cap;
  /* The user's variant, read once per task: without one the inner loop only tests two
   * NULL locals. Positions and the request index as runtime.h defines them (int32: the
   * planner bounds lengths below 2^31). */
  const fi_score_mod_fn score_mod = p->variant ? p->variant->score_mod : NULL;
  const fi_mask_mod_fn mask_mod = p->variant ? p->variant->mask_mod : NULL;
  const fi_mask_tile_fn mask_tile = mask_mod ? p->variant->mask_tile : NULL;
  const void *captures = p->variant ? p->variant->captures : NULL;

  /* fp8 attention's per-KV-head scales multiply the tensor's */
  const float k_scale = p->k_scale * (p->k_scale_heads ? p->k_scale_heads[kvh] : 1.0f);
  const float v_scale = p->v_scale * (p->v_scale_heads ? p->v_scale_heads[kvh] : 1.0f);
  /* q rows of the group, fp32, RoPE'd at their positions */
  for (int32_t i = 0; i < rows; ++i) {
    int64_t qpos = kv_len - qo_len + u->qo_start + i;
    for (int32_t hh = 0; hh < g; ++hh) {
      int32_t h = kvh * g + hh;
      float *dst = qb + ((size_t)i * g + hh) * hd;
      int64_t base = (row0 + i) * j->q->strides[0] + h * j->q->strides[1];
      load_row(dst, j->q->data, j->q->dtype, base, hd,
               j->q->dtype == FI_DTYPE_E4M3
                   ? p->q_scale * (p->q_scale_heads ? p->q_scale_heads[h] : 1.0f)
                   : 1.0f);
      if (rope) rope_inplace(dst, hd, j->freq, qpos);
    }
  }
  for (int32_t x = 0; x < nrh; ++x) {
    mrow[x] = -INFINITY;
    drow[x] = 0.0f;
  }
  memset(acc, 0, sizeof(float) * (size_t)nrh * hd);

  const uint8_t *mbits = NULL;
  int64_t mbase = 0;
  if (p->mask_mode == FI_MASK_CUSTOM) {
    mbits = j->mask->bits;
    mbase = j->mask->indptr[r];
  }

  /* the task's query positions (its rows) and heads (the KV head's group) */
  const int64_t qpos_first = kv_len - qo_len + u->qo_start, qpos_last = qpos_first + rows - 1;
  for (int64_t t0 = u->kv_start; t0 < u->kv_end; t0 += KV_TILE) {
    int32_t nt = (int32_t)(u->kv_end - t0 < KV_TILE ? u->kv_end - t0 : KV_TILE);
    /* What the user's mask does on this tile (runtime.h, fi_mask_tile): EMPTY skips it,
     * FULL keeps every pair without calling the mask, as the CUDA kernels do. Causal pairs
     * past the last row are masked anyway, so they stay out of the rectangle. */
    int tile_mask_mod = mask_mod != NULL;
    if (mask_tile && rows > 0) {
      int64_t kv_last = t0 + nt - 1;
      if (p->mask_mode == FI_MASK_CAUSAL && kv_last > qpos_last) kv_last = qpos_last;
      if (kv_last >= t0) {
        const int32_t cls = mask_tile(r, kvh * g, kvh * g + g - 1, (int32_t)qpos_first,
                                      (int32_t)qpos_last, (int32_t)t0, (int32_t)kv_last,
                                      captures);
        if (cls == FI_MASK_TILE_EMPTY) continue;
        if (cls == FI_MASK_TILE_FULL) tile_mask_mod = 0;
      }
    }
    for (int32_t t = 0; t < nt; ++t) {
      int64_t ko = kv_offset(j, j->k, r, t0 + t, kvh);
      int64_t vo = kv_offset(j, j->v, r, t0 + t, kvh);
      float *kd = kb + (size_t)t * hd, *vd = vb + (size_t)t * hd;
      load_row(kd, j->k->data, j->k->dtype, ko, hd, k_scale);
      load_row(vd, j->v->data, j->v->dtype, vo, hd, v_scale);
      if (rope) rope_inplace(kd, hd, j->freq, t0 + t);
    }
    for (int32_t i = 0; i < rows; ++i) {
      int64_t qi = u->qo_start + i;          /* row within the request */
      int64_t qpos = kv_len - qo_len + qi;   /* its position */
      for (int32_t hh = 0; hh < g; ++hh) {
        int32_t x = i * g + hh, h = kvh * g + hh;
        const float *qv = qb + (size_t)x * hd;
        float tile_max = -INFINITY;
        for (int32_t t = 0; t < nt; ++t) {
          int64_t kpos = t0 + t;
          int masked = 0;
          if (p->mask_mode == FI_MASK_CAUSAL && kpos > qpos) masked = 1;
          if (mbits) {
            int64_t bit = mbase + qi * kv_len + kpos;
            if (!((mbits[bit >> 3] >> (bit & 7)) & 1)) masked = 1;
          }
          if (p->window_left >= 0 && kpos < qpos - p->window_left) masked = 1;
          /* the user's mask only for pairs the built-in masks keep (it may be costly) */
          if (!masked && tile_mask_mod && !mask_mod(r, h, (int32_t)qpos, (int32_t)kpos, captures))
            masked = 1;
          if (masked) {
            sb[t] = -INFINITY;
            continue;
          }
          const float *kd = kb + (size_t)t * hd;
          float dot = dot_f32(qv, kd, hd);
          float s = dot * p->sm_scale;
          if (alibi) s += j->alibi[h] * (float)(kpos - qpos);
          if (cap > 0) s = cap * tanhf(s / cap);
          /* after the built-in transforms; -inf drops the pair as a mask does (tile_max
           * ignores it and the accumulation below skips it) */
          if (score_mod) s = score_mod(s, r, h, kvh, (int32_t)qpos, (int32_t)kpos, captures);
          sb[t] = s;
          if (s > tile_max) tile_max = s;
        }
        if (tile_max == -INFINITY) continue; /* nothing attended in this tile */
        float m_new = mrow[x] > tile_max ? mrow[x] : tile_max;
        float rescale = expf(mrow[x] - m_new); /* exp(-inf) = 0 on the first tile */
        float *a = acc + (size_t)x * hd;
        if (rescale != 1.0f) {
          for (int32_t d = 0; d < hd; ++d) a[d] *= rescale;
        }
        float dsum = drow[x] * rescale;
        for (int32_t t = 0; t < nt; ++t) {
          if (sb[t] == -INFINITY) continue;
          float w = expf(sb[t] - m_new);
          dsum += w;
          const float *vd = vb + (size_t)t * hd;
          for (int32_t d = 0; d < hd; ++d) a[d] += w * vd[d];
        }
        drow[x] = dsum;
        mrow[x] = m_new;
      }
    }
  }

  /* finalize: o = acc / d, lse = m + log d; nothing attended -> o = 0, lse = -inf */
  const int32_t hq = p->num_qo_heads;
  for (int32_t i = 0; i < rows; ++i) {
    for (int32_t hh = 0; hh < g; ++hh) {
      int32_t x = i * g + hh, h = kvh * g + hh;
      float dsum = drow[x];
      float inv = dsum > 0 ? 1.0f / dsum : 0.0f;
      float lse = dsum > 0 ? mrow[x] + logf(dsum) : -INFINITY;
      const float *a = acc + (size_t)x * hd;
      if (u->partial_row >= 0) {
        int64_t prow = (int64_t)u->partial_row + i;
        float *po = j->layout.partial_o + (prow * hq + h) * hd;
        for (int32_t d = 0; d < hd; ++d) po[d] = a[d] * inv;
        j->layout.partial_lse[prow * hq + h] = lse;
      } else {
        int64_t base = (row0 + i) * j->o->strides[0] + h * j->o->strides[1];
        for (int32_t d = 0; d < hd; ++d) fi_store_f32(j->o->data, j->o->dtype, base + d, a[d] * inv);
        if (j->lse) {
          float *l = (float *)j->lse->data;
          l[(row0 + i) * j->lse->strides[0] + h * j->lse->strides[1]] = lse;
        }
      }
    }
  }
}

/* Phase 2: one task per (merge unit, row). Combines the unit's chunks in index order. */
static void merge_task(void *arg, int64_t task, int32_t thread) {
  (void)thread;
  attn_job *j = (attn_job *)arg;
  const fi_attention_params *p = j->p;
  /* task enumerates (merge unit, row) pairs; rows per unit <= max_rows */
  const fi_merge_unit *m = &j->layout.merge[task / j->max_rows];
  int32_t r = (int32_t)(task % j->max_rows);
  if (r >= m->rows) return;
  fi_host_chunk_run run = {j->layout.partial_o, j->layout.partial_lse,
                           (int64_t)m->first_partial_row + r, m->rows, m->num_chunks};
  for (int32_t h = 0; h < p->num_qo_heads; ++h)
    fi_host_merge_row(&run, 1, p->num_qo_heads, p->head_dim, h, j->o, j->lse,
                      (int64_t)m->out_row + r);
}

void fi_host_merge_row(const fi_host_chunk_run *runs, int32_t num_runs, int32_t hq,
                       int32_t hd, int32_t h, fi_tensor *o, fi_tensor *lse, int64_t out_row) {
#define FOR_CHUNKS(body)                                                        \
  for (int32_t k = 0; k < num_runs; ++k)                                        \
    for (int64_t c = 0; c < runs[k].count; ++c) {                               \
      const int64_t prow = runs[k].first + c * runs[k].stride;                  \
      const float *plse = runs[k].plse, *po = runs[k].po;                       \
      (void)po;                                                                 \
      body                                                                      \
    }
  float mx = -INFINITY;
  FOR_CHUNKS({
    float s = plse[prow * hq + h];
    if (s > mx) mx = s;
  })
  int64_t obase = out_row * o->strides[0] + h * o->strides[1];
  float l = -INFINITY;
  if (mx == -INFINITY) {
    for (int32_t d = 0; d < hd; ++d) fi_store_f32(o->data, o->dtype, obase + d, 0.0f);
  } else {
    float dsum = 0.0f;
    FOR_CHUNKS({ dsum += expf(plse[prow * hq + h] - mx); })
    for (int32_t d = 0; d < hd; ++d) {
      float acc = 0.0f;
      FOR_CHUNKS({
        float w = expf(plse[prow * hq + h] - mx);
        acc += w * po[(prow * hq + h) * hd + d];
      })
      fi_store_f32(o->data, o->dtype, obase + d, acc / dsum);
    }
    l = mx + logf(dsum);
  }
#undef FOR_CHUNKS
  if (lse) ((float *)lse->data)[out_row * lse->strides[0] + h * lse->strides[1]] = l;
}

/* ALiBi slopes (Press et al.): 2^(-8(h+1)/n) for the first n = 2^floor(log2(heads)) heads,
 * then the odd steps of the 2n sequence, 2^(-8(2k+1)/(2n)), for the remaining heads. */
void fi_host_alibi_slopes(int32_t heads, float *out) {
  int32_t n = 1;
  while (n * 2 <= heads) n *= 2;
  for (int32_t h = 0; h < heads; ++h) {
    double e = h < n ? -8.0 * (h + 1) / n : -8.0 * (2 * (h - n) + 1) / (2.0 * n);
    out[h] = (float)pow(2.0, e);
  }
}

static fi_status run_attention(fi_context *ctx, attn_job *j) {
  const fi_attention_params *p = j->p;
  j->group = p->num_qo_heads / p->num_kv_heads;
  j->layout = fi_plan_get_layout(j->plan);
  int32_t max_rows = 1;
  for (int32_t u = 0; u < j->layout.num_work_units; ++u)
    if (j->layout.work[u].qo_len > max_rows) max_rows = j->layout.work[u].qo_len;
  for (int32_t m = 0; m < j->layout.num_merge_units; ++m)
    if (j->layout.merge[m].rows > max_rows) max_rows = j->layout.merge[m].rows;
  j->max_rows = max_rows;
  int32_t hd = p->head_dim, g = j->group;
  int32_t threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
  size_t per_thread = (size_t)max_rows * g * hd * 2 + (size_t)max_rows * g * 2 +
                      (size_t)KV_TILE * hd * 2 + KV_TILE;
  per_thread = (per_thread + 15) / 16 * 16;
  size_t common = (size_t)p->num_qo_heads + (size_t)hd; /* alibi floats + freq doubles */
  size_t bytes = sizeof(float) * (per_thread * (size_t)threads + common) +
                 sizeof(double) * ((size_t)hd / 2 + 1);
  char *mem = (char *)fi_context_run_scratch(ctx, bytes);
  if (!mem) return FI_ERROR_OUT_OF_MEMORY;
  j->freq = (double *)mem;
  j->alibi = (float *)(mem + sizeof(double) * ((size_t)hd / 2 + 1));
  j->scratch = j->alibi + common;
  j->scratch_floats_per_thread = per_thread;
  for (int32_t d = 0; d < hd / 2; ++d)
    j->freq[d] = pow((double)p->rope_theta, -2.0 * d / hd) / (double)p->rope_scale;
  fi_host_alibi_slopes(p->num_qo_heads, j->alibi);

  fi_host_parallel_for(threads, (int64_t)j->layout.num_work_units * p->num_kv_heads, attn_task, j);
  if (fi_plan_is_sharded(j->plan)) { /* the ranks' partials, merged in rank order */
    fi_shard_gathered g;
    fi_status s = fi_shard_exchange(ctx, j->plan, &g);
    return s != FI_SUCCESS ? s : fi_host_shard_merge(ctx, j->plan, &g, j->o, j->lse);
  }
  if (j->layout.num_merge_units > 0)
    fi_host_parallel_for(threads, (int64_t)j->layout.num_merge_units * max_rows, merge_task, j);
  /* Rows of requests with no work unit (qo_len 0) have no output rows; rows whose KV is
   * empty got a unit with an empty range, which wrote o = 0 and lse = -inf. */
  return FI_SUCCESS;
}

/* The fields every op family sets; the caller adds its K/V and index arrays. */
static attn_job job_of(const fi_plan *plan, const fi_tensor *q, fi_tensor *o, fi_tensor *lse) {
  attn_job j;
  memset(&j, 0, sizeof(j));
  j.plan = plan;
  j.p = &plan->params;
  j.q = q;
  j.o = o;
  j.lse = lse;
  return j;
}

fi_status fi_host_decode_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                             const fi_paged_kv_cache *kv, const fi_page_table *pages,
                             fi_tensor *o, fi_tensor *lse) {
  attn_job j = job_of(plan, q, o, lse);
  j.k = &kv->k;
  j.v = &kv->v;
  j.layout_kv = kv->layout;
  j.pages = pages;
  return run_attention(ctx, &j);
}

fi_status fi_host_paged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                    const int32_t *qo_indptr, const fi_paged_kv_cache *kv,
                                    const fi_page_table *pages, const fi_custom_mask *mask,
                                    fi_tensor *o, fi_tensor *lse) {
  attn_job j = job_of(plan, q, o, lse);
  j.qo_indptr = qo_indptr;
  j.k = &kv->k;
  j.v = &kv->v;
  j.layout_kv = kv->layout;
  j.pages = pages;
  j.mask = mask;
  return run_attention(ctx, &j);
}

fi_status fi_host_ragged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                     const fi_tensor *k, const fi_tensor *v,
                                     const int32_t *qo_indptr, const int32_t *kv_indptr,
                                     const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse) {
  attn_job j = job_of(plan, q, o, lse);
  j.qo_indptr = qo_indptr;
  j.k = k;
  j.v = v;
  j.kv_indptr = kv_indptr;
  j.mask = mask;
  return run_attention(ctx, &j);
}
