/* test/runtime/test_validation.c -- every validation rule of plan and run: the bad input
 * is rejected with the right status and a message that names the array, the index and the
 * value; a rejected run leaves its output untouched. */
#include "test_util.h"

static fi_context *ctx;

/* A valid paged problem: 2 requests, page size 4. */
static int32_t qo_indptr[3] = {0, 2, 5};
static int32_t kv_indptr[3] = {0, 2, 4};
static int32_t kv_indices[4] = {3, 0, 1, 2};
static int32_t last_len[2] = {3, 4}; /* kv_len 7 and 8 */
static fi_attention_params params;
static char workspace[1 << 22];

static fi_status paged_plan(const int32_t *qi, const fi_page_table *pt, int32_t num_pages,
                            const fi_custom_mask *mask, size_t ws_bytes, fi_plan *plan) {
  return fi_paged_prefill_plan(ctx, &params, 2, qi, pt, num_pages, mask, NULL, workspace,
                               ws_bytes, plan);
}

static void test_plan_rules(void) {
  fi_page_table pt = {kv_indptr, kv_indices, last_len};
  fi_plan plan;
  /* the valid problem plans */
  EXPECT_OK(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), ctx);

  /* indptr: NULL, start, monotone */
  EXPECT_ERR(paged_plan(NULL, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "qo_indptr is NULL");
  int32_t bad_start[3] = {1, 2, 5};
  EXPECT_ERR(paged_plan(bad_start, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "qo_indptr[0] = 1", "start at 0");
  int32_t bad_mono[3] = {0, 4, 3};
  EXPECT_ERR(paged_plan(bad_mono, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "qo_indptr[2] = 3 is less than qo_indptr[1] = 4", "non-decreasing");
  int32_t bad_kv_mono[3] = {0, 3, 2};
  fi_page_table pt_mono = {bad_kv_mono, kv_indices, last_len};
  EXPECT_ERR(paged_plan(qo_indptr, &pt_mono, 4, NULL, sizeof workspace, &plan),
             FI_ERROR_INVALID_ARGUMENT, "kv_indptr[2] = 2 is less than kv_indptr[1] = 3");

  /* page ids in [0, num_pages) */
  int32_t bad_ids[4] = {3, 0, 9, 2};
  fi_page_table pt_ids = {kv_indptr, bad_ids, last_len};
  EXPECT_ERR(paged_plan(qo_indptr, &pt_ids, 4, NULL, sizeof workspace, &plan),
             FI_ERROR_INVALID_ARGUMENT, "kv_indices[2] = 9", "[0, num_pages = 4)");
  int32_t neg_ids[4] = {3, -1, 1, 2};
  fi_page_table pt_neg = {kv_indptr, neg_ids, last_len};
  EXPECT_ERR(paged_plan(qo_indptr, &pt_neg, 4, NULL, sizeof workspace, &plan),
             FI_ERROR_INVALID_ARGUMENT, "kv_indices[1] = -1");
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 3, NULL, sizeof workspace, &plan),
             FI_ERROR_INVALID_ARGUMENT, "kv_indices[0] = 3", "num_pages = 3");

  /* last_page_len in 1..page_size */
  int32_t zero_last[2] = {0, 4}, big_last[2] = {3, 5};
  fi_page_table pt_z = {kv_indptr, kv_indices, zero_last}, pt_b = {kv_indptr, kv_indices, big_last};
  EXPECT_ERR(paged_plan(qo_indptr, &pt_z, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "kv_last_page_len[0] = 0", "1..page_size = 4");
  EXPECT_ERR(paged_plan(qo_indptr, &pt_b, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "kv_last_page_len[1] = 5", "1..page_size = 4");

  /* causal: qo_len <= kv_len */
  params.mask_mode = FI_MASK_CAUSAL;
  int32_t long_q[3] = {0, 2, 11}; /* request 1: qo 9 > kv 8 */
  EXPECT_ERR(paged_plan(long_q, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "request 1 has qo_len = 9 > kv_len = 8", "causal");
  EXPECT_OK(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), ctx);
  int32_t rag_kv[3] = {0, 1, 9};
  EXPECT_ERR(fi_ragged_prefill_plan(ctx, &params, 2, qo_indptr, rag_kv, NULL, NULL, workspace,
                                    sizeof workspace, &plan),
             FI_ERROR_INVALID_ARGUMENT, "request 0 has qo_len = 2 > kv_len = 1");

  /* custom mask: present, segments of qo_len * kv_len bits */
  params.mask_mode = FI_MASK_CUSTOM;
  uint8_t bits[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  int32_t good_mi[3] = {0, 14, 38}; /* 2*7, 3*8 */
  int32_t bad_mi[3] = {0, 14, 37};
  fi_custom_mask good = {bits, good_mi}, badm = {bits, bad_mi}, nobits = {NULL, good_mi};
  EXPECT_OK(paged_plan(qo_indptr, &pt, 4, &good, sizeof workspace, &plan), ctx);
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "mask is NULL", "FI_MASK_CUSTOM");
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, &badm, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "mask_indptr[2] - mask_indptr[1] = 23 bits", "3 * 8 = 24");
  /* bits NULL at plan: allowed (no per-row extents; test_run_rules: the run needs them) */
  EXPECT_OK(paged_plan(qo_indptr, &pt, 4, &nobits, sizeof workspace, &plan), ctx);
  params.mask_mode = FI_MASK_NONE;

  /* workspace large enough */
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, 64, &plan), FI_ERROR_WORKSPACE_TOO_SMALL,
             "workspace of 64 bytes", "fi_prefill_workspace_size");
  EXPECT_ERR(fi_paged_prefill_plan(ctx, &params, 2, qo_indptr, &pt, 4, NULL, NULL, NULL, 0, &plan),
             FI_ERROR_WORKSPACE_TOO_SMALL, "workspace of 0 bytes");
  fi_page_table dpt = {kv_indptr, kv_indices, last_len};
  EXPECT_ERR(fi_decode_plan(ctx, &params, 2, &dpt, 4, NULL, workspace, 100, &plan),
             FI_ERROR_WORKSPACE_TOO_SMALL, "fi_decode_workspace_size");

  /* params */
  fi_attention_params saved = params;
  params.num_qo_heads = 6;
  params.num_kv_heads = 4;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "num_qo_heads = 6 is not a multiple of num_kv_heads = 4");
  params = saved;
  params.head_dim = 0;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "head_dim = 0");
  params = saved;
  params.q_dtype = FI_DTYPE_E5M2;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "q_dtype", "f16, bf16 or f32");
  params = saved;
  /* fp8 attention: e4m3 q needs e4m3 K/V, an f16/bf16 o, a finite q_scale > 0, no RoPE, and is
   * a prefill only */
  params.q_dtype = FI_DTYPE_E4M3;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "q_dtype = e4m3 with kv_dtype = f16", "e4m3 K and V");
  params.kv_dtype = FI_DTYPE_E4M3;
  params.o_dtype = FI_DTYPE_F32;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "o_dtype", "f16 or bf16");
  params.o_dtype = FI_DTYPE_BF16;
  params.q_scale = INFINITY;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "q_scale", "finite");
  params.q_scale = -1.f;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "q_scale = -1", "> 0");
  params.q_scale = 1.f;
  params.pos_encoding = FI_POS_ROPE_LLAMA;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_UNSUPPORTED,
             "RoPE", "rotate before quantising");
  params.pos_encoding = FI_POS_NONE;
  {
    const float one[4] = {1.f, 1.f, 1.f, 1.f};
    fi_attention_params p16 = saved;
    p16.k_scale_heads = one;
    fi_attention_params keep = params;
    params = p16;
    EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan),
               FI_ERROR_INVALID_ARGUMENT, "k_scale_heads", "per-head scales are for fp8 attention");
    params = keep;
  }
  {
    int32_t dind[2] = {0, 1}, dpages[1] = {0}, dlast[1] = {3};
    fi_page_table dpt1 = {dind, dpages, dlast};
    EXPECT_ERR(fi_decode_plan(ctx, &params, 1, &dpt1, 4, NULL, workspace, sizeof workspace, &plan),
               FI_ERROR_UNSUPPORTED, "fp8 attention is a prefill");
  }
  params = saved;
  params.page_size = 0;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "page_size = 0");
  params = saved;
  params.window_left = -5;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "window_left = -5");
  params = saved;
  params.head_dim = 63;
  params.pos_encoding = FI_POS_ROPE_LLAMA;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "head_dim = 63 is odd");
  params = saved;
  params.logits_soft_cap = -1;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "logits_soft_cap = -1");
  params = saved;
  /* the logits' factors are positive (the prefill kernels take each row's max logit from the
   * max of q.k) */
  params.sm_scale = -0.125f;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "sm_scale = -0.125", "> 0");
  params = saved;
  params.k_scale = -2;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "k_scale = -2", "> 0");
  params = saved;
  params.k_scale = 0;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "k_scale = 0", "> 0");
  params = saved;
  params.fixed_split_size = -3;
  EXPECT_ERR(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), FI_ERROR_INVALID_ARGUMENT,
             "fixed_split_size = -3");
  params = saved;
  /* forced tiles the backend has no variant for */
  fi_tiles odd = {24, 64, 0, FI_CORES_TENSOR};
  EXPECT_ERR(fi_paged_prefill_plan(ctx, &params, 2, qo_indptr, &pt, 4, NULL, &odd, workspace,
                                   sizeof workspace, &plan),
             FI_ERROR_UNSUPPORTED, "q_tile 24");
  /* decode takes no custom mask */
  params.mask_mode = FI_MASK_CUSTOM;
  EXPECT_ERR(fi_decode_plan(ctx, &params, 2, &dpt, 4, NULL, workspace, sizeof workspace, &plan),
             FI_ERROR_INVALID_ARGUMENT, "decode takes no mask");
  params = saved;
  /* append: page table must already include the new tokens */
  int32_t app[3] = {0, 8, 9}; /* request 0 appends 8 > kv_len 7 */
  EXPECT_ERR(fi_append_paged_kv_plan(ctx, 2, 4, app, &pt, 4, &plan), FI_ERROR_INVALID_ARGUMENT,
             "request 0 appends 8 tokens", "holds only 7");
}

static void test_run_rules(void) {
  fi_page_table pt = {kv_indptr, kv_indices, last_len};
  fi_plan plan;
  EXPECT_OK(paged_plan(qo_indptr, &pt, 4, NULL, sizeof workspace, &plan), ctx);
  const int hq = params.num_qo_heads, hd = params.head_dim, hkv = params.num_kv_heads;
  uint16_t q[5 * 4 * 8], o[5 * 4 * 8];
  float lse[5 * 4];
  rng r = {3};
  fill_random(q, FI_DTYPE_F16, 5 * 4 * 8, &r, -1, 1);
  poison(o, sizeof o);
  int64_t qs[3] = {5, hq, hd}, ls[2] = {5, hq}, cs[4] = {4, 4, hkv, hd};
  uint16_t kbuf[4 * 4 * 2 * 8], vbuf[4 * 4 * 2 * 8];
  fill_random(kbuf, FI_DTYPE_F16, 4 * 4 * 2 * 8, &r, -1, 1);
  fill_random(vbuf, FI_DTYPE_F16, 4 * 4 * 2 * 8, &r, -1, 1);
  fi_tensor Q = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs), O = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
  fi_tensor L = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);
  fi_paged_kv_cache kv = {fi_tensor_contiguous(kbuf, FI_DTYPE_F16, 4, cs),
                          fi_tensor_contiguous(vbuf, FI_DTYPE_F16, 4, cs), FI_LAYOUT_NHD};
  /* shape, dtype, stride, lse dtype */
  fi_tensor Qbad = Q;
  Qbad.shape[0] = 4;
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Qbad, qo_indptr, &kv, &pt, NULL, &O, &L),
             FI_ERROR_INVALID_ARGUMENT, "q [nnz_qo, qo_heads, head_dim]", "shape[0] = 4", "expected 5");
  Qbad = Q;
  Qbad.dtype = FI_DTYPE_F32;
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Qbad, qo_indptr, &kv, &pt, NULL, &O, &L),
             FI_ERROR_INVALID_ARGUMENT, "has dtype f32: expected f16");
  Qbad = Q;
  Qbad.strides[2] = 2;
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Qbad, qo_indptr, &kv, &pt, NULL, &O, &L),
             FI_ERROR_INVALID_ARGUMENT, "strides[2] = 2", "innermost");
  fi_tensor Lbad = L;
  Lbad.dtype = FI_DTYPE_F16;
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &O, &Lbad),
             FI_ERROR_INVALID_ARGUMENT, "lse", "expected f32");
  fi_paged_kv_cache kvbad = kv;
  kvbad.k.shape[0] = 3;
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kvbad, &pt, NULL, &O, &L),
             FI_ERROR_INVALID_ARGUMENT, "k (NHD", "shape[0] = 3", "expected 4");
  kvbad = kv;
  kvbad.layout = FI_LAYOUT_HND; /* [4, 4, 2, 8] is not HND [4, 2, 4, 8] */
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kvbad, &pt, NULL, &O, &L),
             FI_ERROR_INVALID_ARGUMENT, "HND", "shape[1] = 4", "expected 2");
  /* plan family and problem mismatches */
  EXPECT_ERR(fi_ragged_prefill_run(ctx, &plan, &Q, &kv.k, &kv.v, qo_indptr, kv_indptr, NULL, &O, &L),
             FI_ERROR_PLAN_MISMATCH, "paged prefill", "ragged prefill");
  int32_t other_q[3] = {0, 1, 5};
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, other_q, &kv, &pt, NULL, &O, &L),
             FI_ERROR_PLAN_MISMATCH, "re-plan");
  int32_t bad_ids[4] = {3, 0, 7, 2};
  fi_page_table pt_ids = {kv_indptr, bad_ids, last_len};
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt_ids, NULL, &O, &L),
             FI_ERROR_INVALID_ARGUMENT, "kv_indices[2] = 7");
  fi_plan garbage;
  memset(&garbage, 0, sizeof garbage);
  EXPECT_ERR(fi_paged_prefill_run(ctx, &garbage, &Q, qo_indptr, &kv, &pt, NULL, &O, &L),
             FI_ERROR_PLAN_MISMATCH, "not made by a fi_*_plan");
  /* outputs that overlap themselves or an input */
  fi_tensor Obad = O;
  Obad.strides[1] = 0; /* every head on one row */
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &Obad, &L),
             FI_ERROR_INVALID_ARGUMENT, "o.strides[1] = 0", "overlap");
  Obad = O;
  Obad.strides[0] = 8; /* rows one head apart: row r's heads 1.. are row r+1's */
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &Obad, &L),
             FI_ERROR_INVALID_ARGUMENT, "o.strides[", "overlap");
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &Q, &L),
             FI_ERROR_INVALID_ARGUMENT, "o overlaps q", "separate buffers");
  fi_tensor Lbad2 = L;
  Lbad2.data = o; /* lse inside o */
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &O, &Lbad2),
             FI_ERROR_INVALID_ARGUMENT, "lse overlaps o");
  fi_tensor Oin_k = O;
  Oin_k.data = kbuf; /* o over the K cache */
  EXPECT_ERR(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &Oin_k, &L),
             FI_ERROR_INVALID_ARGUMENT, "o overlaps k");
  /* a plan whose fields were overwritten after it was made: refused, never dereferenced */
  static const char *const corruptions[] = {"workspace NULL", "work-unit offset", "unit count",
                                            "head_dim", "a copy's workspace"};
  for (int c = 0; c < 5; ++c) {
    fi_plan bad = plan;
    if (c == 0) bad.workspace = NULL;
    if (c == 1) bad.private_[0] += 4096; /* where the work units are */
    if (c == 2) bad.num_work_units += 1000;
    if (c == 3) bad.params.head_dim = 64;
    if (c == 4) bad.workspace = (char *)bad.workspace + 64;
    fi_status st = fi_paged_prefill_run(ctx, &bad, &Q, qo_indptr, &kv, &pt, NULL, &O, &L);
    EXPECT(st == FI_ERROR_PLAN_MISMATCH && strstr(fi_last_error(ctx), "checksum"),
           "corrupted plan (%s): got %s \"%s\"", corruptions[c], fi_status_string(st),
           fi_last_error(ctx));
  }
  fi_plan copy;
  memcpy(&copy, &plan, sizeof copy); /* an unchanged copy is the same plan */
  /* nothing was computed by the rejected runs */
  int untouched = 1;
  for (size_t i = 0; i < sizeof o / sizeof o[0]; ++i)
    if (o[i] != 0xffff) untouched = 0;
  EXPECT(untouched, "a rejected run wrote its output");
  /* and the valid run works, from the plan and from its copy */
  EXPECT_OK(fi_paged_prefill_run(ctx, &plan, &Q, qo_indptr, &kv, &pt, NULL, &O, &L), ctx);
  EXPECT_OK(fi_paged_prefill_run(ctx, &copy, &Q, qo_indptr, &kv, &pt, NULL, &O, &L), ctx);
  /* a custom-mask plan made without the bits runs with them, and is refused without */
  {
    params.mask_mode = FI_MASK_CUSTOM;
    uint8_t bits[5] = {0xff, 0xff, 0xff, 0xff, 0x3f};
    int32_t mi[3] = {0, 14, 38}; /* 2 * 7, 3 * 8 */
    const fi_custom_mask nobits = {NULL, mi}, withbits = {bits, mi};
    fi_plan mplan;
    EXPECT_OK(paged_plan(qo_indptr, &pt, 4, &nobits, sizeof workspace, &mplan), ctx);
    EXPECT_ERR(fi_paged_prefill_run(ctx, &mplan, &Q, qo_indptr, &kv, &pt, &nobits, &O, &L),
               FI_ERROR_INVALID_ARGUMENT, "custom mask", "NULL");
    EXPECT_OK(fi_paged_prefill_run(ctx, &mplan, &Q, qo_indptr, &kv, &pt, &withbits, &O, &L), ctx);
    params.mask_mode = FI_MASK_NONE;
  }

  /* merge shapes */
  float va[2 * 4 * 8], vb[3 * 4 * 8], sa[2 * 4], sb[3 * 4];
  int64_t a3[3] = {2, 4, 8}, b3[3] = {3, 4, 8}, a2[2] = {2, 4}, b2[2] = {3, 4};
  fi_tensor Va = fi_tensor_contiguous(va, FI_DTYPE_F32, 3, a3), Vb = fi_tensor_contiguous(vb, FI_DTYPE_F32, 3, b3);
  fi_tensor Sa = fi_tensor_contiguous(sa, FI_DTYPE_F32, 2, a2), Sb = fi_tensor_contiguous(sb, FI_DTYPE_F32, 2, b2);
  EXPECT_ERR(fi_merge_state(ctx, &Va, &Sa, &Vb, &Sb, &Va, &Sa), FI_ERROR_INVALID_ARGUMENT,
             "v_b", "shape[0] = 3", "expected 2");
  /* in place over a or b: allowed; an output one row off a (overlapping it): refused */
  float vc[3 * 4 * 8], sc[3 * 4], vd[2 * 4 * 8], sd[2 * 4];
  memset(vc, 0, sizeof vc), memset(sc, 0, sizeof sc), memset(vd, 0, sizeof vd), memset(sd, 0, sizeof sd);
  memset(va, 0, sizeof va), memset(sa, 0, sizeof sa);
  fi_tensor Vc = fi_tensor_contiguous(vc, FI_DTYPE_F32, 3, a3), Sc = fi_tensor_contiguous(sc, FI_DTYPE_F32, 2, a2);
  fi_tensor Vd = fi_tensor_contiguous(vd, FI_DTYPE_F32, 3, a3), Sd = fi_tensor_contiguous(sd, FI_DTYPE_F32, 2, a2);
  EXPECT_OK(fi_merge_state(ctx, &Va, &Sa, &Vd, &Sd, &Va, &Sa), ctx);
  EXPECT_OK(fi_merge_state(ctx, &Va, &Sa, &Vd, &Sd, &Vd, &Sd), ctx);
  fi_tensor Vshift = fi_tensor_contiguous(vc + 4 * 8, FI_DTYPE_F32, 3, a3); /* rows 1..2 of vc */
  EXPECT_ERR(fi_merge_state(ctx, &Vc, &Sc, &Vd, &Sd, &Vshift, &Sd), FI_ERROR_INVALID_ARGUMENT,
             "v_out overlaps v_a");
  fi_tensor Vzero = Vd;
  Vzero.strides[0] = 0;
  EXPECT_ERR(fi_merge_state(ctx, &Va, &Sa, &Vd, &Sd, &Vzero, &Sc), FI_ERROR_INVALID_ARGUMENT,
             "v_out.strides[0] = 0", "overlap");
}

static void test_context_rules(void) {
  fi_context *cuda = NULL;
  fi_status st = fi_context_create(FI_BACKEND_CUDA, &cuda);
  if (!fi_cuda_available()) {
    EXPECT(st == FI_ERROR_BACKEND_UNAVAILABLE && cuda == NULL && strlen(fi_last_error(NULL)) > 10,
           "CUDA context without CUDA: %s \"%s\"", fi_status_string(st), fi_last_error(NULL));
  } else {
    fi_context_destroy(cuda);
  }
  EXPECT_ERR(fi_context_set_num_threads(ctx, 0), FI_ERROR_INVALID_ARGUMENT, "num_threads = 0");
  /* The prefill stage: device memory of CUDA contexts; the host backend needs none. */
  static char stage[512];
  EXPECT_ERR(fi_context_set_prefill_stage(ctx, stage, sizeof stage), FI_ERROR_INVALID_ARGUMENT,
             "host context", "CUDA");
  fi_attention_params rope = params;
  rope.pos_encoding = FI_POS_ROPE_LLAMA;
  rope.kv_dtype = FI_DTYPE_E4M3;
  size_t stage_bytes = 1;
  EXPECT_OK(fi_prefill_stage_size(ctx, &rope, 1, 100, 400, &stage_bytes), ctx);
  EXPECT(stage_bytes == 0, "host prefill stage: %zu bytes, want 0", stage_bytes);
  EXPECT_ERR(fi_prefill_stage_size(ctx, &rope, 1, -1, 400, &stage_bytes),
             FI_ERROR_INVALID_ARGUMENT, "max_qo_rows = -1");
  EXPECT_ERR(fi_prefill_stage_size(ctx, &rope, 1, 1, 1, NULL), FI_ERROR_INVALID_ARGUMENT,
             "bytes is NULL");
  rope.page_size = 0;
  EXPECT_ERR(fi_prefill_stage_size(ctx, &rope, 1, 1, 1, &stage_bytes), FI_ERROR_INVALID_ARGUMENT,
             "page_size");
  EXPECT(fi_decode_plan(NULL, &params, 0, NULL, 0, NULL, NULL, 0, NULL) == FI_ERROR_INVALID_ARGUMENT &&
             strstr(fi_last_error(NULL), "ctx is NULL"),
         "NULL context: %s", fi_last_error(NULL));
}

int main(void) {
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) return 1;
  params = fi_attention_params_default(4, 2, 8);
  params.page_size = 4;
  test_plan_rules();
  test_run_rules();
  test_context_rules();
  fi_context_destroy(ctx);
  return test_finish("test_validation");
}
