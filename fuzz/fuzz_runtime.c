/* fuzz/fuzz_runtime.c -- libFuzzer target: the runtime's validation, planners and host runs
 * on parameters, lengths and page tables drawn from the input, many of them invalid. Every
 * call must return a status (FI_SUCCESS or an error with a message); a crash, a sanitizer
 * report or an error without a message is a finding.
 *
 * The target keeps the caller's side of the contract: every buffer it passes holds what the
 * values it passes say (kv_indices as many entries as the largest kv_indptr value, a mask as
 * many bits as the largest mask_indptr value, tensors exactly their shapes' elements), since
 * the runtime cannot check the length of a raw pointer. The values themselves -- sizes,
 * strides, dtypes, indptrs, page ids, attributes -- are the input's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/runtime.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} input;

/* A value in [0, n) from the next input byte(s); 0 when the input is used up. */
static uint32_t pick(input *in, uint32_t n) {
  if (n <= 1) return 0;
  uint32_t v = 0;
  for (uint32_t span = 1; span < n && span != 0; span <<= 8) {
    v = (v << 8) | (in->n ? *in->p : 0);
    if (in->n) ++in->p, --in->n;
  }
  return v % n;
}

static int32_t pick_of(input *in, const int32_t *set, uint32_t n) { return set[pick(in, n)]; }

static void *alloc0(size_t bytes) { return calloc(bytes ? bytes : 1, 1); }

/* A status other than success must come with a message. */
static void expect_message(fi_context *ctx, fi_status s) {
  if (s != FI_SUCCESS && fi_last_error(ctx)[0] == '\0') {
    fprintf(stderr, "status %s without a message\n", fi_status_string(s));
    abort();
  }
}

/* A tensor of `rank` dims over a fresh buffer of exactly its elements; the input may then
 * change a stride or the dtype (the buffer stays as long as the contiguous view). */
static fi_tensor tensor(input *in, fi_dtype dtype, int32_t rank, const int64_t *shape,
                        void **owned) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= shape[d] > 0 ? shape[d] : 0;
  *owned = alloc0((size_t)n * 4 + 16);
  fi_tensor t = fi_tensor_contiguous(*owned, dtype, rank, shape);
  switch (pick(in, 8)) {
    case 0: t.strides[pick(in, (uint32_t)rank)] = 0; break;              /* overlap */
    case 1: if (rank > 1) t.strides[0] = t.strides[0] > 1 ? t.strides[0] / 2 : 0; break;
    case 2: t.dtype = (fi_dtype)pick(in, 6); break;                      /* wrong dtype */
    default: break;
  }
  return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  static fi_context *ctx = NULL;
  if (!ctx && fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) abort();
  fi_context_set_num_threads(ctx, 1);

  /* Parameters: mostly valid, each field sometimes not. */
  static const int32_t heads[] = {1, 2, 4, 0, -1};
  static const int32_t groups[] = {1, 2, 3, 5};
  static const int32_t dims[] = {8, 16, 64, 3, 0};
  static const int32_t pages[] = {1, 3, 16, 0, -2};
  static const int32_t windows[] = {-1, -1, 0, 5, 40, -7};
  static const int32_t splits[] = {0, 0, -1, 1, 16, 64, -3};
  const int32_t kvh = pick_of(&in, heads, 5);
  fi_attention_params p = fi_attention_params_default(kvh * pick_of(&in, groups, 4), kvh,
                                                      pick_of(&in, dims, 5));
  p.page_size = pick_of(&in, pages, 5);
  p.q_dtype = (fi_dtype)pick(&in, 6);
  p.kv_dtype = pick(&in, 2) ? p.q_dtype : (fi_dtype)pick(&in, 6);
  p.mask_mode = (fi_mask_mode)pick(&in, 4);
  p.pos_encoding = (fi_pos_encoding)pick(&in, 4);
  p.window_left = pick_of(&in, windows, 6);
  static const float caps[] = {0.f, 0.f, 5.f, 30.f, -1.f, NAN, INFINITY};
  p.logits_soft_cap = caps[pick(&in, 7)];
  static const float bad_scales[] = {0.f, NAN, -0.125f};
  if (pick(&in, 8) == 0) p.sm_scale = bad_scales[pick(&in, 3)];
  if (pick(&in, 16) == 0) p.k_scale = -2.f;
  if (pick(&in, 8) == 0) p.rope_theta = pick(&in, 2) ? -1.f : INFINITY;
  p.fixed_split_size = pick_of(&in, splits, 7);

  /* The problem: lengths, then a page table and indptrs that may be corrupted. */
  const int32_t batch = (int32_t)pick(&in, 7) - (pick(&in, 16) == 0 ? 1 : 0);
  const int nb = batch > 0 ? batch : 0;
  const int ps = p.page_size > 0 ? p.page_size : 1;
  int32_t *qo = alloc0(sizeof(int32_t) * (nb + 1)), *kvp = alloc0(sizeof(int32_t) * (nb + 1));
  int32_t *kvr = alloc0(sizeof(int32_t) * (nb + 1)), *last = alloc0(sizeof(int32_t) * (nb + 1));
  int32_t *mi = alloc0(sizeof(int32_t) * (nb + 1));
  for (int i = 0; i < nb; ++i) {
    const int32_t q = (int32_t)pick(&in, 24), k = (int32_t)pick(&in, 48);
    const int32_t np = (k + ps - 1) / ps;
    qo[i + 1] = qo[i] + q;
    kvr[i + 1] = kvr[i] + k;
    kvp[i + 1] = kvp[i] + np;
    last[i] = np ? k - (np - 1) * ps : 1;
    mi[i + 1] = mi[i] + q * k;
  }
  switch (pick(&in, 10)) { /* one corruption, or none */
    case 0: if (nb) qo[pick(&in, nb + 1)] += (int32_t)pick(&in, 5) - 2; break;
    case 1: if (nb) kvp[pick(&in, nb + 1)] += (int32_t)pick(&in, 5) - 2; break;
    case 2: if (nb) last[pick(&in, nb)] = (int32_t)pick(&in, 40) - 3; break;
    case 3: if (nb) kvr[pick(&in, nb + 1)] -= 1; break;
    case 4: if (nb) mi[pick(&in, nb + 1)] += 3; break;
    default: break;
  }
  int32_t max_entry = 0, max_bit = 0, max_q = 0, max_kv = 0;
  for (int i = 0; i <= nb; ++i) {
    if (kvp[i] > max_entry) max_entry = kvp[i];
    if (mi[i] > max_bit) max_bit = mi[i];
    if (qo[i] > max_q) max_q = qo[i];
    if (kvr[i] > max_kv) max_kv = kvr[i];
  }
  const int32_t num_pages = max_entry + (int32_t)pick(&in, 3) - (pick(&in, 8) == 0 ? 2 : 0);
  int32_t *ind = alloc0(sizeof(int32_t) * (max_entry + 1));
  for (int i = 0; i < max_entry; ++i) ind[i] = i;
  if (max_entry && pick(&in, 6) == 0)
    ind[pick(&in, max_entry)] = (int32_t)pick(&in, 3) ? num_pages : -1; /* out of range */
  uint8_t *bits = alloc0((size_t)max_bit / 8 + 1);
  for (int32_t i = 0; i < max_bit / 8 + 1; ++i) bits[i] = (uint8_t)pick(&in, 256);
  fi_page_table pt = {kvp, ind, last};
  fi_custom_mask mask = {bits, mi};

  /* Workspace: the size the runtime asks for, sometimes less, sometimes none. */
  const uint32_t family = pick(&in, 4);
  size_t ws_bytes = 0;
  fi_status s;
  const int64_t max_rows = (int64_t)max_q + (int64_t)pick(&in, 3);
  if (family == 0)
    s = fi_decode_workspace_size_kv(ctx, &p, batch, max_kv + max_entry * ps, &ws_bytes);
  else
    s = fi_prefill_workspace_size(ctx, &p, batch, max_rows, &ws_bytes);
  expect_message(ctx, s);
  if (s != FI_SUCCESS) ws_bytes = 4096;
  const uint32_t ws_kind = pick(&in, 8);
  if (ws_kind == 0) ws_bytes /= 2;
  void *ws = ws_kind == 1 ? NULL : alloc0(ws_bytes + 64);
  fi_plan plan;
  memset(&plan, 0, sizeof plan);
  const fi_custom_mask *mp = pick(&in, 4) ? &mask : NULL;
  if (family == 0)
    s = fi_decode_plan(ctx, &p, batch, &pt, num_pages, NULL, ws, ws_bytes, &plan);
  else if (family == 1)
    s = fi_paged_prefill_plan(ctx, &p, batch, qo, &pt, num_pages, mp, NULL, ws, ws_bytes, &plan);
  else if (family == 2)
    s = fi_ragged_prefill_plan(ctx, &p, batch, qo, kvr, mp, NULL, ws, ws_bytes, &plan);
  else
    s = fi_append_paged_kv_plan(ctx, batch, p.page_size, qo, &pt, num_pages, &plan);
  expect_message(ctx, s);

  /* A run over tensors of the plan's shapes (the input may bend one), possibly with a
   * corrupted plan. */
  if (s == FI_SUCCESS && p.num_qo_heads > 0 && p.num_kv_heads > 0 && p.head_dim > 0) {
    if (pick(&in, 16) == 0) plan.private_[pick(&in, 16)] ^= 1u << pick(&in, 32);
    const int64_t rows = family == 0 ? nb : max_q;
    void *bq, *bo, *bl, *bk, *bv;
    const int64_t qs[3] = {rows, p.num_qo_heads, p.head_dim}, ls[2] = {rows, p.num_qo_heads};
    fi_tensor tq = tensor(&in, p.q_dtype, 3, qs, &bq), to = tensor(&in, fi_output_dtype(&p), 3, qs, &bo);
    fi_tensor tl = tensor(&in, FI_DTYPE_F32, 2, ls, &bl);
    fi_tensor *lse = pick(&in, 2) ? &tl : NULL;
    if (family == 2) {
      const int64_t ks[3] = {max_kv, p.num_kv_heads, p.head_dim};
      fi_tensor tk = tensor(&in, p.kv_dtype, 3, ks, &bk), tv = tensor(&in, p.kv_dtype, 3, ks, &bv);
      s = fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tv, qo, kvr, mp, &to, lse);
    } else {
      const int64_t cs[4] = {num_pages > 0 ? num_pages : 0, ps, p.num_kv_heads, p.head_dim};
      fi_paged_kv_cache kv = {tensor(&in, p.kv_dtype, 4, cs, &bk),
                              tensor(&in, p.kv_dtype, 4, cs, &bv), FI_LAYOUT_NHD};
      if (family == 0) {
        s = fi_decode_run(ctx, &plan, &tq, &kv, &pt, &to, lse);
      } else if (family == 1) {
        s = fi_paged_prefill_run(ctx, &plan, &tq, qo, &kv, &pt, mp, &to, lse);
      } else {
        const int64_t ns[3] = {max_q, p.num_kv_heads, p.head_dim};
        void *bnk, *bnv;
        fi_tensor nk = tensor(&in, p.kv_dtype, 3, ns, &bnk), nv = tensor(&in, p.kv_dtype, 3, ns, &bnv);
        s = fi_append_paged_kv_run(ctx, &plan, &nk, &nv, qo, &kv, &pt);
        free(bnk), free(bnv);
      }
    }
    expect_message(ctx, s);
    free(bq), free(bo), free(bl), free(bk), free(bv);
  }
  /* Block-sparse attention: a BSR matrix drawn over max_q x max_kv (each buffer as long as
   * the values passed say), sometimes with a bad entry. */
  if (pick(&in, 3) == 0) {
    static const int32_t bs[] = {1, 2, 4, 16, 0};
    fi_bsr_matrix b = {pick_of(&in, bs, 5), pick_of(&in, bs, 5), NULL, NULL};
    const int32_t br = b.block_rows > 0 ? b.block_rows : 1, bc = b.block_cols > 0 ? b.block_cols : 1;
    const int32_t rows = (max_q + br - 1) / br, cols = (max_kv + bc - 1) / bc;
    int32_t *bp = alloc0(sizeof(int32_t) * (rows + 1)), *bi = alloc0(sizeof(int32_t) * (rows * cols + 1));
    int32_t nnz = 0;
    for (int32_t i = 0; i < rows; ++i) {
      for (int32_t j = 0; j < cols; ++j)
        if (pick(&in, 2)) bi[nnz++] = j;
      bp[i + 1] = nnz;
    }
    if (nnz && pick(&in, 4) == 0) bi[pick(&in, nnz)] = (int32_t)pick(&in, cols + 2) - 1;
    if (rows && pick(&in, 8) == 0) bp[pick(&in, rows + 1)] -= 1;
    b.indptr = bp;
    b.indices = bi;
    /* Variable column blocks (maybe not increasing, not ending at N, or too few for the
     * indices) in one matrix in three; the count is the array's. */
    int32_t *co = NULL;
    if (pick(&in, 3) == 0) {
      const int32_t nc = (int32_t)pick(&in, (uint32_t)cols + 2);
      co = alloc0(sizeof(int32_t) * ((size_t)nc + 1));
      for (int32_t j = 1; j <= nc; ++j) co[j] = co[j - 1] + (int32_t)pick(&in, 2 * (uint32_t)bc + 1);
      if (nc > 0 && pick(&in, 2)) co[nc] = (int32_t)max_kv;
      b.col_offsets = co;
      b.num_block_cols = nc;
    }
    size_t wb = 0;
    s = fi_block_sparse_workspace_size(ctx, &p, max_q, max_kv, b.block_rows, b.block_cols, &wb);
    expect_message(ctx, s);
    void *w = alloc0(wb + 64);
    s = fi_block_sparse_plan(ctx, &p, max_q, max_kv, &b, NULL, w, wb, &plan);
    expect_message(ctx, s);
    if (s == FI_SUCCESS && p.num_qo_heads > 0 && p.num_kv_heads > 0 && p.head_dim > 0) {
      void *bq, *bk, *bv, *bo;
      const int64_t qs[3] = {max_q, p.num_qo_heads, p.head_dim}, ks[3] = {max_kv, p.num_kv_heads, p.head_dim};
      fi_tensor tq = tensor(&in, p.q_dtype, 3, qs, &bq), to = tensor(&in, fi_output_dtype(&p), 3, qs, &bo);
      fi_tensor tk = tensor(&in, p.kv_dtype, 3, ks, &bk), tv = tensor(&in, p.kv_dtype, 3, ks, &bv);
      s = fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &b, &to, NULL);
      expect_message(ctx, s);
      free(bq), free(bk), free(bv), free(bo);
    }
    free(w), free(bp), free(bi), free(co);
  }
  /* The shared prefix of the (maybe corrupted) page table; outputs as long as the table
   * says (validated first). */
  if (pick(&in, 4) == 0) {
    int32_t qo2[2], pi[2], pl[1];
    int32_t *px = alloc0(sizeof(int32_t) * (max_entry + 1)), *sx = alloc0(sizeof(int32_t) * (max_entry + 1));
    int32_t *si = alloc0(sizeof(int32_t) * (nb + 1)), *sl = alloc0(sizeof(int32_t) * (nb + 1));
    s = fi_split_shared_prefix(ctx, batch, p.page_size, &pt, num_pages, qo2, pi, px, pl, si, sx, sl);
    expect_message(ctx, s);
    free(px), free(sx), free(si), free(sl);
  }
    /* Merges of fuzzed shapes. */
  if (pick(&in, 4) == 0) {
    const int64_t vs[3] = {pick(&in, 5), pick(&in, 3) + 1, 8}, ss[2] = {vs[0], vs[1]};
    void *b1, *b2, *b3, *b4, *b5, *b6;
    fi_tensor va = tensor(&in, FI_DTYPE_F32, 3, vs, &b1), vb = tensor(&in, FI_DTYPE_F32, 3, vs, &b2);
    fi_tensor vo = tensor(&in, FI_DTYPE_F32, 3, vs, &b3);
    fi_tensor sa = tensor(&in, FI_DTYPE_F32, 2, ss, &b4), sb = tensor(&in, FI_DTYPE_F32, 2, ss, &b5);
    fi_tensor so = tensor(&in, FI_DTYPE_F32, 2, ss, &b6);
    s = fi_merge_state(ctx, &va, &sa, &vb, &sb, pick(&in, 2) ? &va : &vo, pick(&in, 2) ? &sa : &so);
    expect_message(ctx, s);
    free(b1), free(b2), free(b3), free(b4), free(b5), free(b6);
  }
  free(qo), free(kvp), free(kvr), free(last), free(mi), free(ind), free(bits), free(ws);
  return 0;
}
