/* kernels/src/validate.c -- argument checks of plan and run. Each failure names the
 * argument, the index and the offending value, and says what to do. Nothing here reads
 * past what the sizes it was given allow. */
#include <math.h>
#include <stdio.h>

#include "internal.h"

static int is_float_dtype(fi_dtype d) {
  return d == FI_DTYPE_F16 || d == FI_DTYPE_BF16 || d == FI_DTYPE_F32;
}
static int is_known_dtype(fi_dtype d) { return (int)d >= 0 && (int)d <= FI_DTYPE_E5M2; }

fi_status fi_validate_params(fi_context *ctx, const fi_attention_params *p, int paged,
                             int allow_fp8_q) {
  if (p && (p->kv_shards < 0 || p->kv_shards > 1024))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.kv_shards = %d: 0 (whole KV) or the number of ranks (1..1024)",
                        (int)p->kv_shards);
  if (!p) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "params is NULL");
  if (p->num_qo_heads <= 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.num_qo_heads = %d: must be >= 1", (int)p->num_qo_heads);
  if (p->num_kv_heads <= 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.num_kv_heads = %d: must be >= 1", (int)p->num_kv_heads);
  if (p->num_qo_heads % p->num_kv_heads != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.num_qo_heads = %d is not a multiple of num_kv_heads = %d "
                        "(GQA/MQA need qo_heads = group * kv_heads)",
                        (int)p->num_qo_heads, (int)p->num_kv_heads);
  if (p->head_dim <= 0 || p->head_dim > 4096)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.head_dim = %d: must be in 1..4096", (int)p->head_dim);
  if (paged && p->page_size <= 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.page_size = %d: a paged cache needs page_size >= 1",
                        (int)p->page_size);
  if (!is_float_dtype(p->q_dtype) && p->q_dtype != FI_DTYPE_E4M3)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.q_dtype = %d: q and o must be f16, bf16 or f32 (or q e4m3 "
                        "for fp8 attention)", (int)p->q_dtype);
  if (p->q_dtype == FI_DTYPE_E4M3) {
    if (!allow_fp8_q)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "params.q_dtype = e4m3: fp8 attention is a prefill (ragged or "
                          "paged); this op takes f16, bf16 or f32 queries");
    if (p->kv_dtype != FI_DTYPE_E4M3)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "params.q_dtype = e4m3 with kv_dtype = %s: fp8 attention takes "
                          "e4m3 K and V too (or use a 16-bit q with an fp8 KV cache)",
                          fi_dtype_name(p->kv_dtype));
    if (p->o_dtype != FI_DTYPE_F16 && p->o_dtype != FI_DTYPE_BF16)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "params.o_dtype = %d: fp8 attention writes o as f16 or bf16",
                          (int)p->o_dtype);
    if (!isfinite(p->q_scale) || !(p->q_scale > 0))
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "params.q_scale = %g: must be finite and > 0 (default 1)",
                          (double)p->q_scale);
    if (p->pos_encoding == FI_POS_ROPE_LLAMA)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "params.q_dtype = e4m3 with RoPE: fp8 attention takes q and k "
                          "already rotated (rotate before quantising)");
    if (p->variant && (p->variant->score_mod || p->variant->mask_mod))
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "params.q_dtype = e4m3 with a score_mod/mask_mod: variants take "
                          "f16 or bf16 queries");
    if (p->kv_shards != 0)
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                          "params.q_dtype = e4m3 with kv_shards = %d: a sharded KV takes "
                          "f16 or bf16 queries", (int)p->kv_shards);
  } else if (p->q_scale_heads || p->k_scale_heads || p->v_scale_heads) {
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.%s_scale_heads is set but q_dtype = %s: per-head scales are "
                        "for fp8 attention (q_dtype e4m3); use k_scale / v_scale, or NULL",
                        p->q_scale_heads ? "q" : p->k_scale_heads ? "k" : "v",
                        fi_dtype_name(p->q_dtype));
  }
  if (!is_known_dtype(p->kv_dtype))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.kv_dtype = %d: K/V must be f16, bf16, f32, e4m3 or e5m2",
                        (int)p->kv_dtype);
  if ((int)p->mask_mode < 0 || p->mask_mode > FI_MASK_CUSTOM)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.mask_mode = %d: use FI_MASK_NONE, FI_MASK_CAUSAL or "
                        "FI_MASK_CUSTOM", (int)p->mask_mode);
  if ((int)p->pos_encoding < 0 || p->pos_encoding > FI_POS_ALIBI)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.pos_encoding = %d: use FI_POS_NONE, FI_POS_ROPE_LLAMA or "
                        "FI_POS_ALIBI", (int)p->pos_encoding);
  if (p->pos_encoding == FI_POS_ROPE_LLAMA && p->head_dim % 2 != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.head_dim = %d is odd: LLaMA RoPE rotates halves and needs "
                        "an even head_dim", (int)p->head_dim);
  if (p->pos_encoding == FI_POS_ROPE_LLAMA &&
      (!(p->rope_scale > 0) || !isfinite(p->rope_scale) || !(p->rope_theta > 0) ||
       !isfinite(p->rope_theta)))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.rope_scale = %g, rope_theta = %g: both must be finite and > 0",
                        (double)p->rope_scale, (double)p->rope_theta);
  if (p->window_left < -1)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.window_left = %d: use -1 (no window) or >= 0",
                        (int)p->window_left);
  if (!(p->logits_soft_cap >= 0) || !isfinite(p->logits_soft_cap))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.logits_soft_cap = %g: use 0 (off) or a finite value > 0",
                        (double)p->logits_soft_cap);
  /* (the prefill kernels take each row's max logit from the max of q.k: the factors must be
   * positive, as the IR's verifiers require of sm_scale) */
  if (!isfinite(p->sm_scale) || !(p->sm_scale > 0))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.sm_scale = %g: must be finite and > 0 (default "
                        "1/sqrt(head_dim))", (double)p->sm_scale);
  /* (k_scale not 0 either: ALiBi's slope enters S divided by the logits' factor) */
  if (!isfinite(p->k_scale) || !(p->k_scale > 0) || !isfinite(p->v_scale))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.k_scale = %g, v_scale = %g: k_scale must be finite and > 0, "
                        "v_scale finite (default 1)",
                        (double)p->k_scale, (double)p->v_scale);
  if (p->fixed_split_size < -1)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.fixed_split_size = %d: use -1 (no split), 0 (planner "
                        "chooses) or a chunk size > 0", (int)p->fixed_split_size);
  return FI_SUCCESS;
}

fi_status fi_validate_indptr(fi_context *ctx, const char *name, const int32_t *indptr,
                             int32_t batch, int64_t *total) {
  if (!indptr)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s is NULL: pass an int32 array of batch + 1 = %d entries", name,
                        (int)batch + 1);
  if (indptr[0] != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s[0] = %d: an indptr must start at 0", name, (int)indptr[0]);
  for (int32_t i = 0; i < batch; ++i)
    if (indptr[i + 1] < indptr[i])
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "%s[%d] = %d is less than %s[%d] = %d: an indptr must be "
                          "non-decreasing (length batch + 1 = %d)",
                          name, (int)i + 1, (int)indptr[i + 1], name, (int)i,
                          (int)indptr[i], (int)batch + 1);
  if (total) *total = indptr[batch];
  return FI_SUCCESS;
}

fi_status fi_validate_page_table(fi_context *ctx, const fi_page_table *pages, int32_t batch,
                                 int32_t page_size, int32_t num_pages, int64_t *total_kv) {
  if (!pages) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "page table is NULL");
  if (num_pages < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "num_pages = %d: must be >= 0",
                        (int)num_pages);
  int64_t nnz = 0;
  fi_status s = fi_validate_indptr(ctx, "kv_indptr", pages->indptr, batch, &nnz);
  if (s != FI_SUCCESS) return s;
  if (nnz > 0 && !pages->indices)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv_indices is NULL but kv_indptr[%d] = %lld pages", (int)batch,
                        (long long)nnz);
  if (batch > 0 && !pages->last_page_len)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv_last_page_len is NULL: pass an int32 array of batch = %d entries",
                        (int)batch);
  for (int64_t j = 0; j < nnz; ++j)
    if (pages->indices[j] < 0 || pages->indices[j] >= num_pages)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "kv_indices[%lld] = %d is out of range: page ids must be in "
                          "[0, num_pages = %d)", (long long)j, (int)pages->indices[j],
                          (int)num_pages);
  int64_t total = 0;
  for (int32_t i = 0; i < batch; ++i) {
    int32_t n = pages->indptr[i + 1] - pages->indptr[i];
    if (n == 0) continue; /* no page: KV length 0, last_page_len unused */
    int32_t last = pages->last_page_len[i];
    if (last < 1 || last > page_size)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "kv_last_page_len[%d] = %d is out of range: must be in "
                          "1..page_size = %d for a request that owns %d page(s)",
                          (int)i, (int)last, (int)page_size, (int)n);
    total += (int64_t)page_size * (n - 1) + last;
  }
  if (total > INT32_MAX)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "the batch holds %lld KV tokens: at most %d are supported",
                        (long long)total, (int)INT32_MAX);
  if (total_kv) *total_kv = total;
  return FI_SUCCESS;
}

fi_status fi_validate_mask(fi_context *ctx, const fi_attention_params *p,
                           const fi_plan_problem *pb, const fi_custom_mask *mask) {
  if (p->mask_mode == FI_MASK_CAUSAL) {
    for (int32_t i = 0; i < pb->batch; ++i) {
      int64_t qo = fi_problem_qo_len(pb, i), kv = fi_problem_kv_len(pb, i);
      if (qo > kv)
        return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                            "request %d has qo_len = %lld > kv_len = %lld: the bottom-right "
                            "causal mask needs qo_len <= kv_len (the first query rows would "
                            "see no key); append the new tokens to the KV first",
                            (int)i, (long long)qo, (long long)kv);
    }
  }
  if (p->mask_mode != FI_MASK_CUSTOM) return FI_SUCCESS;
  if (!mask)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "mask is NULL but params.mask_mode is FI_MASK_CUSTOM: pass the "
                        "bit-packed mask and its mask_indptr");
  /* (bits: NULL allowed at plan, checked by each run) */
  fi_status s = fi_validate_indptr(ctx, "mask_indptr", mask->indptr, pb->batch, NULL);
  if (s != FI_SUCCESS) return s;
  for (int32_t i = 0; i < pb->batch; ++i) {
    int64_t want = fi_problem_qo_len(pb, i) * fi_problem_kv_len(pb, i);
    int64_t got = (int64_t)mask->indptr[i + 1] - mask->indptr[i];
    if (got != want)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "mask_indptr[%d] - mask_indptr[%d] = %lld bits but request %d has "
                          "qo_len * kv_len = %lld * %lld = %lld: mask_indptr is in bits, "
                          "mask_indptr[i+1] = mask_indptr[i] + qo_len_i * kv_len_i",
                          (int)i + 1, (int)i, (long long)got, (int)i,
                          (long long)fi_problem_qo_len(pb, i),
                          (long long)fi_problem_kv_len(pb, i), (long long)want);
  }
  return FI_SUCCESS;
}

static fi_status check_shape(fi_context *ctx, const char *name, const fi_tensor *t,
                             int32_t rank, const int64_t *shape) {
  if (t->rank != rank)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s has rank %d: expected rank %d",
                        name, (int)t->rank, (int)rank);
  int64_t numel = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (t->shape[d] < 0 || (shape && shape[d] >= 0 && t->shape[d] != shape[d]))
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "%s.shape[%d] = %lld: expected %lld", name, (int)d,
                          (long long)t->shape[d], shape ? (long long)shape[d] : 0LL);
    if (t->strides[d] < 0)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "%s.strides[%d] = %lld: strides must be >= 0", name, (int)d,
                          (long long)t->strides[d]);
    numel *= t->shape[d];
  }
  if (rank > 0 && t->shape[rank - 1] > 1 && t->strides[rank - 1] != 1)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s.strides[%d] = %lld: the innermost dimension must be contiguous "
                        "(stride 1)", name, (int)rank - 1, (long long)t->strides[rank - 1]);
  if (numel > 0 && !t->data)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s.data is NULL", name);
  return FI_SUCCESS;
}

fi_status fi_validate_tensor(fi_context *ctx, const char *name, const fi_tensor *t,
                             fi_dtype dtype, int32_t rank, const int64_t *shape) {
  if (!t) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s is NULL", name);
  if (t->dtype != dtype)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s has dtype %s: expected %s", name,
                        fi_dtype_name(t->dtype), fi_dtype_name(dtype));
  return check_shape(ctx, name, t, rank, shape);
}

fi_status fi_validate_float_tensor(fi_context *ctx, const char *name, const fi_tensor *t,
                                   int32_t rank, const int64_t *shape) {
  if (!t) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "%s is NULL", name);
  if (!is_float_dtype(t->dtype))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s has dtype %s: expected f16, bf16 or f32", name,
                        fi_dtype_name(t->dtype));
  return check_shape(ctx, name, t, rank, shape);
}

fi_status fi_validate_kv_cache(fi_context *ctx, const fi_paged_kv_cache *kv,
                               const fi_attention_params *p, int32_t num_pages) {
  if (!kv) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "kv cache is NULL");
  if (kv->layout != FI_LAYOUT_NHD && kv->layout != FI_LAYOUT_HND)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "kv.layout = %d: use FI_LAYOUT_NHD or FI_LAYOUT_HND", (int)kv->layout);
  int64_t shape[4] = {num_pages, p->page_size, p->num_kv_heads, p->head_dim};
  if (kv->layout == FI_LAYOUT_HND) {
    shape[1] = p->num_kv_heads;
    shape[2] = p->page_size;
  }
  const char *kn = kv->layout == FI_LAYOUT_NHD ? "k (NHD [pages, page_size, kv_heads, head_dim])"
                                                : "k (HND [pages, kv_heads, page_size, head_dim])";
  const char *vn = kv->layout == FI_LAYOUT_NHD ? "v (NHD [pages, page_size, kv_heads, head_dim])"
                                                : "v (HND [pages, kv_heads, page_size, head_dim])";
  fi_status s = fi_validate_tensor(ctx, kn, &kv->k, p->kv_dtype, 4, shape);
  if (s != FI_SUCCESS) return s;
  return fi_validate_tensor(ctx, vn, &kv->v, p->kv_dtype, 4, shape);
}

/* ------------------------------------------------------------------ overlap -------- */

/* The first and one-past-last byte a (validated: strides >= 0) tensor touches; 0 when it
 * has no element. */
static int byte_range(const fi_tensor *t, uintptr_t *lo, uintptr_t *hi) {
  uint64_t last = 0;
  for (int32_t d = 0; d < t->rank; ++d) {
    if (t->shape[d] == 0) return 0;
    last += (uint64_t)(t->shape[d] - 1) * (uint64_t)t->strides[d];
  }
  const size_t esz = fi_dtype_size(t->dtype);
  *lo = (uintptr_t)t->data;
  *hi = (uintptr_t)t->data + (uintptr_t)((last + 1) * esz);
  return 1;
}

fi_status fi_validate_no_self_overlap(fi_context *ctx, const char *name, const fi_tensor *t) {
  /* Dimensions of extent > 1 by increasing stride: each stride must step past everything
   * the smaller ones span, else two indices name one element. */
  int order[FI_MAX_RANK], n = 0;
  for (int32_t d = 0; d < t->rank; ++d) {
    if (t->shape[d] == 0) return FI_SUCCESS;
    if (t->shape[d] > 1) order[n++] = d;
  }
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; --j) {
      int x = order[j];
      order[j] = order[j - 1];
      order[j - 1] = x;
    }
  int64_t span = 1; /* elements the smaller dimensions cover */
  for (int i = 0; i < n; ++i) {
    const int d = order[i];
    if (t->strides[d] < span)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "%s.strides[%d] = %lld makes elements overlap (its smaller dimensions "
                          "span %lld elements): an output needs one element per index; pass a "
                          "contiguous tensor", name, d, (long long)t->strides[d],
                          (long long)span);
    span = t->strides[d] * (t->shape[d] - 1) + span;
  }
  return FI_SUCCESS;
}

fi_status fi_validate_disjoint(fi_context *ctx, const char *out_name, const fi_tensor *out,
                               const char *in_name, const fi_tensor *in) {
  if (!out || !in) return FI_SUCCESS;
  uintptr_t a0, a1, b0, b1;
  if (!byte_range(out, &a0, &a1) || !byte_range(in, &b0, &b1)) return FI_SUCCESS;
  if (a0 < b1 && b0 < a1)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s overlaps %s in memory (bytes [%p, %p) and [%p, %p)): the kernels "
                        "read %s while they write %s; pass separate buffers", out_name,
                        in_name, (void *)a0, (void *)a1, (void *)b0, (void *)b1, in_name,
                        out_name);
  return FI_SUCCESS;
}

int fi_tensor_same_view(const fi_tensor *a, const fi_tensor *b) {
  if (a->data != b->data || a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
      return 0;
  return 1;
}

/* ------------------------------------------------------------------ BSR -------------- */

/* Offsets of variable blocks: count + 1 elements from 0, strictly increasing, ending at
 * `total`, every block at least `least` long. */
static fi_status validate_bsr_offsets(fi_context *ctx, const char *name, const int32_t *off,
                                      int32_t count, int64_t total, int32_t least,
                                      const char *least_name, const char *total_name) {
  if (count < 0 || (count == 0 && total > 0))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "bsr.%s is given with %d blocks over %s = %lld: it needs at least one "
                        "block (and its count in num_block_%s)", name, (int)count, total_name,
                        (long long)total, name[0] == 'r' ? "rows" : "cols");
  if (off[0] != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bsr.%s[0] = %d: must be 0", name,
                        (int)off[0]);
  for (int32_t i = 0; i < count; ++i)
    if ((int64_t)off[i + 1] - off[i] < least)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "bsr.%s[%d] = %d after %d: block %d has %lld %s but bsr.%s = %d says "
                          "every block has at least that many (offsets strictly increase; "
                          "set %s to the smallest block)", name, (int)(i + 1), (int)off[i + 1],
                          (int)off[i], (int)i, (long long)off[i + 1] - off[i],
                          name[0] == 'r' ? "rows" : "keys", least_name, (int)least, least_name);
  if (off[count] != total)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "bsr.%s[%d] = %d: the last offset must be %s = %lld", name, (int)count,
                        (int)off[count], total_name, (long long)total);
  return FI_SUCCESS;
}

fi_status fi_validate_bsr(fi_context *ctx, const fi_bsr_matrix *b, int64_t num_qo_rows,
                          int64_t num_kv_rows) {
  if (!b) return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bsr is NULL");
  if (b->block_rows < 1 || b->block_cols < 1)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "bsr.block_rows = %d, block_cols = %d: both must be >= 1 (with "
                        "variable blocks: the smallest block's)",
                        (int)b->block_rows, (int)b->block_cols);
  fi_status s = FI_SUCCESS;
  if (b->row_offsets)
    s = validate_bsr_offsets(ctx, "row_offsets", b->row_offsets, b->num_block_rows,
                             num_qo_rows, b->block_rows, "block_rows", "M");
  if (s == FI_SUCCESS && b->col_offsets)
    s = validate_bsr_offsets(ctx, "col_offsets", b->col_offsets, b->num_block_cols,
                             num_kv_rows, b->block_cols, "block_cols", "N");
  if (s != FI_SUCCESS) return s;
  const int64_t rows = fi_bsr_num_block_rows(b, num_qo_rows);
  const int64_t cols = fi_bsr_num_block_cols(b, num_kv_rows);
  if (!b->indptr)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "bsr.indptr is NULL: it needs %lld elements (block rows + 1)",
                        (long long)(rows + 1));
  if (b->indptr[0] != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "bsr.indptr[0] = %d: must be 0",
                        (int)b->indptr[0]);
  for (int64_t i = 0; i < rows; ++i)
    if (b->indptr[i + 1] < b->indptr[i])
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "bsr.indptr[%lld] = %d < bsr.indptr[%lld] = %d: indptr must not "
                          "decrease (block row %lld)", (long long)(i + 1), (int)b->indptr[i + 1],
                          (long long)i, (int)b->indptr[i], (long long)i);
  if (b->indptr[rows] > 0 && !b->indices)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "bsr.indices is NULL but indptr lists %d blocks", (int)b->indptr[rows]);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t n = b->indptr[i]; n < b->indptr[i + 1]; ++n) {
      const int32_t c = b->indices[n];
      if (c < 0 || c >= cols)
        return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                            "bsr.indices[%lld] = %d (block row %lld): column blocks are 0..%lld "
                            "(%s with N = %lld keys)", (long long)n, (int)c,
                            (long long)i, (long long)cols - 1,
                            b->col_offsets ? "num_block_cols" : "ceil(N / block_cols)",
                            (long long)num_kv_rows);
      if (n > b->indptr[i] && c <= b->indices[n - 1])
        return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                            "bsr.indices[%lld] = %d follows %d in block row %lld: a block row's "
                            "column blocks must strictly increase (sort them, drop duplicates)",
                            (long long)n, (int)c, (int)b->indices[n - 1], (long long)i);
    }
  return FI_SUCCESS;
}
