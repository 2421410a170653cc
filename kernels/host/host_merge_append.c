/* kernels/host/host_merge_append.c -- host merge of attention states and append of new
 * K/V into the paged cache. */
#include <math.h>
#include <string.h>

#include "context.h"
#include "dtype.h"
#include "host_parallel.h"

typedef struct merge2_job {
  const fi_tensor *va, *sa, *vb, *sb;
  fi_tensor *vo, *so;
} merge2_job;

/* One task per row. Reads a and b of a (row, head) before writing, so the output may
 * alias a (or b) element for element. */
static void merge2_task(void *arg, int64_t row, int32_t thread) {
  (void)thread;
  merge2_job *j = (merge2_job *)arg;
  int64_t heads = j->va->shape[1], hd = j->va->shape[2];
  for (int64_t h = 0; h < heads; ++h) {
    float sa = ((const float *)j->sa->data)[row * j->sa->strides[0] + h * j->sa->strides[1]];
    float sb = ((const float *)j->sb->data)[row * j->sb->strides[0] + h * j->sb->strides[1]];
    float m = sa > sb ? sa : sb;
    int64_t ab = row * j->va->strides[0] + h * j->va->strides[1];
    int64_t bb = row * j->vb->strides[0] + h * j->vb->strides[1];
    int64_t ob = row * j->vo->strides[0] + h * j->vo->strides[1];
    float s;
    if (m == -INFINITY) { /* both empty: the identity state */
      for (int64_t d = 0; d < hd; ++d) fi_store_f32(j->vo->data, j->vo->dtype, ob + d, 0.0f);
      s = -INFINITY;
    } else {
      float wa = expf(sa - m), wb = expf(sb - m);
      float inv = 1.0f / (wa + wb);
      for (int64_t d = 0; d < hd; ++d) {
        float a = fi_load_f32(j->va->data, j->va->dtype, ab + d);
        float b = fi_load_f32(j->vb->data, j->vb->dtype, bb + d);
        fi_store_f32(j->vo->data, j->vo->dtype, ob + d, (wa * a + wb * b) * inv);
      }
      s = m + logf(wa + wb);
    }
    ((float *)j->so->data)[row * j->so->strides[0] + h * j->so->strides[1]] = s;
  }
}

fi_status fi_host_merge_state(fi_context *ctx, const fi_tensor *v_a, const fi_tensor *s_a,
                              const fi_tensor *v_b, const fi_tensor *s_b, fi_tensor *v_out,
                              fi_tensor *s_out) {
  merge2_job j = {v_a, s_a, v_b, s_b, v_out, s_out};
  fi_host_parallel_for(ctx->num_threads, v_a->shape[0], merge2_task, &j);
  return FI_SUCCESS;
}

typedef struct mergen_job {
  const fi_tensor *v, *s;
  fi_tensor *vo, *so;
} mergen_job;

static void mergen_task(void *arg, int64_t row, int32_t thread) {
  (void)thread;
  mergen_job *j = (mergen_job *)arg;
  int64_t n = j->v->shape[1], heads = j->v->shape[2], hd = j->v->shape[3];
  const float *s = (const float *)j->s->data;
  for (int64_t h = 0; h < heads; ++h) {
    float m = -INFINITY;
    for (int64_t c = 0; c < n; ++c) {
      float x = s[row * j->s->strides[0] + c * j->s->strides[1] + h * j->s->strides[2]];
      if (x > m) m = x;
    }
    int64_t ob = row * j->vo->strides[0] + h * j->vo->strides[1];
    float lse = -INFINITY;
    if (m == -INFINITY) {
      for (int64_t d = 0; d < hd; ++d) fi_store_f32(j->vo->data, j->vo->dtype, ob + d, 0.0f);
    } else {
      float dsum = 0.0f;
      for (int64_t c = 0; c < n; ++c)
        dsum += expf(s[row * j->s->strides[0] + c * j->s->strides[1] + h * j->s->strides[2]] - m);
      for (int64_t d = 0; d < hd; ++d) {
        float o = 0.0f;
        for (int64_t c = 0; c < n; ++c) {
          float w = expf(s[row * j->s->strides[0] + c * j->s->strides[1] + h * j->s->strides[2]] - m);
          int64_t vb = row * j->v->strides[0] + c * j->v->strides[1] + h * j->v->strides[2];
          o += w * fi_load_f32(j->v->data, j->v->dtype, vb + d);
        }
        fi_store_f32(j->vo->data, j->vo->dtype, ob + d, o / dsum);
      }
      lse = m + logf(dsum);
    }
    if (j->so) ((float *)j->so->data)[row * j->so->strides[0] + h * j->so->strides[1]] = lse;
  }
}

/* The host backend's unmerged runs are complete: only the other state is left to merge. */
fi_status fi_host_prefill_merge_run(fi_context *ctx, const fi_plan *plan,
                                    const fi_tensor *v_other, const fi_tensor *s_other,
                                    fi_tensor *o, fi_tensor *lse) {
  (void)plan;
  return v_other ? fi_host_merge_state(ctx, o, lse, v_other, s_other, o, lse) : FI_SUCCESS;
}

fi_status fi_host_merge_states(fi_context *ctx, const fi_tensor *v, const fi_tensor *s,
                               fi_tensor *v_out, fi_tensor *s_out) {
  mergen_job j = {v, s, v_out, s_out};
  fi_host_parallel_for(ctx->num_threads, v->shape[0], mergen_task, &j);
  return FI_SUCCESS;
}

fi_status fi_host_append_paged_kv_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *k,
                                      const fi_tensor *v, const int32_t *append_indptr,
                                      fi_paged_kv_cache *kv, const fi_page_table *pages) {
  (void)ctx;
  const int64_t ps = plan->params.page_size, heads = k->shape[1], hd = k->shape[2];
  const size_t esz = fi_dtype_size(k->dtype);
  for (int32_t r = 0; r < plan->batch; ++r) {
    int64_t n = (int64_t)append_indptr[r + 1] - append_indptr[r];
    int64_t pages_r = (int64_t)pages->indptr[r + 1] - pages->indptr[r];
    int64_t kv_len = pages_r == 0 ? 0 : ps * (pages_r - 1) + pages->last_page_len[r];
    for (int64_t t = 0; t < n; ++t) {
      int64_t pos = kv_len - n + t, src_row = (int64_t)append_indptr[r] + t;
      int64_t page = pages->indices[pages->indptr[r] + pos / ps], off = pos % ps;
      for (int64_t h = 0; h < heads; ++h) {
        for (int w = 0; w < 2; ++w) {
          const fi_tensor *src = w ? v : k;
          fi_tensor *dst = w ? &kv->v : &kv->k;
          int64_t so = src_row * src->strides[0] + h * src->strides[1];
          int64_t dof = kv->layout == FI_LAYOUT_NHD
                            ? page * dst->strides[0] + off * dst->strides[1] + h * dst->strides[2]
                            : page * dst->strides[0] + h * dst->strides[1] + off * dst->strides[2];
          memcpy((char *)dst->data + dof * (int64_t)esz, (const char *)src->data + so * (int64_t)esz,
                 (size_t)hd * esz);
        }
      }
    }
  }
  return FI_SUCCESS;
}

/* ------------------------------------------------------------ shared prefix -------- */

fi_status fi_host_split_shared_prefix(fi_context *ctx, int32_t batch, int32_t page_size,
                                      const fi_page_table *pages, int32_t *prefix_qo_indptr,
                                      int32_t *prefix_indptr,
                                      int32_t *prefix_indices, int32_t *prefix_last_page_len,
                                      int32_t *suffix_indptr, int32_t *suffix_indices,
                                      int32_t *suffix_last_page_len) {
  (void)ctx;
  const int32_t *ip = pages->indptr, *ix = pages->indices;
  /* P: leading pages every request lists, never a request's last one */
  int64_t shared = -1;
  for (int32_t i = 0; i < batch; ++i) {
    const int64_t own = (int64_t)ip[i + 1] - ip[i] - 1;
    if (shared < 0 || own < shared) shared = own < 0 ? 0 : own;
  }
  if (shared < 0) shared = 0;
  for (int64_t j = 0; j < shared; ++j)
    for (int32_t i = 1; i < batch; ++i)
      if (ix[ip[i] + j] != ix[ip[0] + j]) {
        shared = j;
        break;
      }
  prefix_qo_indptr[0] = 0;
  prefix_qo_indptr[1] = batch;
  prefix_indptr[0] = 0;
  prefix_indptr[1] = (int32_t)shared;
  prefix_last_page_len[0] = page_size;
  for (int64_t j = 0; j < shared; ++j) prefix_indices[j] = ix[ip[0] + j];
  for (int32_t i = 0; i <= batch; ++i)
    suffix_indptr[i] = (int32_t)(ip[i] - ip[0] - (int64_t)i * shared);
  for (int32_t i = 0; i < batch; ++i) {
    suffix_last_page_len[i] = pages->last_page_len[i];
    for (int64_t e = ip[i] + shared; e < ip[i + 1]; ++e)
      suffix_indices[suffix_indptr[i] + (e - ip[i] - shared)] = ix[e];
  }
  return FI_SUCCESS;
}
