/* test_decode_gpu.c -- CUDA batch paged decode against the host backend.
 *
 * FI_TEST_CONFIGS random configurations (default 240; seed FI_TEST_SEED): f16/bf16 q, KV
 * of q's dtype or fp8 e4m3/e5m2 with random k_scale/v_scale, head_dim 64/128/256, GQA
 * groups 1..16, page sizes 1..1024, NHD/HND, separate or combined K/V, batch 1..512,
 * kv_len 0..32768 (long KV with small batches so the host oracle stays fast), page tables
 * that are random permutations, RoPE / ALiBi / soft cap / sliding window / sm_scale /
 * LSE alone and combined, automatic / fixed / disabled split-KV, and forced CUDA-core and
 * tensor-core variants with every kv_tile. Cache rows no kernel may read (past each
 * request's end, before a window's start, unused pages) hold NaN; outputs are poisoned
 * with NaN before each run;
 * every element of o and lse is compared with the host backend on the same inputs:
 *   o:   |gpu - host| <= 1e-2 * max(max|host row|, 1e-3)   (per (request, head) row)
 *   lse: |gpu - host| <= 1e-3 * max(1, |host|), -inf exactly (2e-3 with RoPE over an fp8
 *        cache: the kernels rotate the widened K in f16, one more rounding per element;
 *        with RoPE plus the bound of rounding the rotated q and k, rope_lse_slack)
 * FI_TEST_PAGE16=1 rounds the page sizes up to multiples of 16 (the page-aligned kernels:
 * on sm_90 the warp-specialised one, decode_tws_kernel); FI_TEST_DECODE_FP8=1 gives every
 * configuration fp8 KV, most of them at head_dim 128 (its fp8 instance), and large q
 * values in some bf16 ones; FI_TEST_PAGE_SMALL=1 gives every configuration pages of 1, 2,
 * 4, 8, 12, 20, 24 or 40 tokens (all but 1 and 2: decode_tws_kernel's boxes of 4 or 8
 * rows, fi_decode_page_box_rows, several per 16-token sub-tile).
 * Then: a CUDA graph of a decode run, replayed after re-planning into the same workspace
 * with new lengths (and more work units); and plan errors for unsupported head_dim/dtype.
 * Exit 77 without a GPU. */
#include "gpu_common.h"

#define O_TOL 1e-2
#define LSE_TOL 1e-3

typedef struct decode_case {
  fi_attention_params p;
  int batch, combined, with_lse, force_tiles, spare_pages;
  int big_q; /* bf16 q values x 2^17 (past f16's range), sm_scale x 2^-17 */
  fi_kv_layout layout;
  fi_tiles tiles;
  int32_t *kv_len;
} decode_case;

static const char *pos_name(fi_pos_encoding e) {
  return e == FI_POS_ROPE_LLAMA ? "rope" : e == FI_POS_ALIBI ? "alibi" : "none";
}

/* Host and device copies of one problem's data. */
typedef struct decode_data {
  gpu_pages pages;
  size_t q_bytes, kv_bytes, o_bytes, lse_bytes;
  void *q_h, *kv_h, *o_ref, *o_gpu;
  float *lse_ref, *lse_gpu;
  void *q_d, *kv_d, *o_d, *lse_d;
  int32_t *indptr_d, *indices_d, *last_d;
  fi_paged_kv_cache cache_h, cache_d;
} decode_data;

/* Cache tensors: combined [pages, 2, ...] or separate K and V in one allocation. */
static fi_paged_kv_cache cache_view(const decode_case *c, void *base, int32_t num_pages) {
  const fi_attention_params *p = &c->p;
  int64_t d1, d2, d3;
  if (c->layout == FI_LAYOUT_NHD) {
    d1 = p->page_size; d2 = p->num_kv_heads; d3 = p->head_dim;
  } else {
    d1 = p->num_kv_heads; d2 = p->page_size; d3 = p->head_dim;
  }
  fi_paged_kv_cache kv;
  if (c->combined) {
    int64_t shape[5] = {num_pages, 2, d1, d2, d3};
    fi_tensor t = fi_tensor_contiguous(base, p->kv_dtype, 5, shape);
    if (fi_paged_kv_cache_from_combined(&t, c->layout, &kv) != FI_SUCCESS) {
      fprintf(stderr, "fi_paged_kv_cache_from_combined: %s\n", fi_last_error(NULL));
      exit(1);
    }
  } else {
    int64_t shape[4] = {num_pages, d1, d2, d3};
    size_t half = (size_t)num_pages * d1 * d2 * d3 * fi_dtype_size(p->kv_dtype);
    kv.k = fi_tensor_contiguous(base, p->kv_dtype, 4, shape);
    kv.v = fi_tensor_contiguous((char *)base + half, p->kv_dtype, 4, shape);
    kv.layout = c->layout;
  }
  return kv;
}

/* Cache rows that no kernel may use hold NaN: past each request's end in its last page,
 * before a sliding window's start, and unused pages (a kernel that lets one reach o, even
 * as 0 x NaN, fails the comparison). The host oracle skips masked positions. */
static void poison_unread_rows(decode_data *d, const decode_case *c) {
  const fi_attention_params *p = &c->p;
  const fi_paged_kv_cache *kv = &d->cache_h;
  const int pos_dim = c->layout == FI_LAYOUT_NHD ? 1 : 2;
  const int head_dim = c->layout == FI_LAYOUT_NHD ? 2 : 1;
  const size_t es = fi_dtype_size(p->kv_dtype);
  const uint16_t nan16 = p->kv_dtype == FI_DTYPE_BF16 ? 0x7FC0 : 0x7E00;
  const int32_t np = d->pages.num_pages;
  /* owner[page]: the request holding it (-1: unused), first[page]: its first position */
  int32_t *owner = (int32_t *)malloc(sizeof(int32_t) * (size_t)(np > 0 ? np : 1));
  int32_t *first_pos = (int32_t *)malloc(sizeof(int32_t) * (size_t)(np > 0 ? np : 1));
  for (int32_t page = 0; page < np; ++page) owner[page] = -1;
  for (int b = 0; b < c->batch; ++b)
    for (int32_t i = d->pages.indptr[b]; i < d->pages.indptr[b + 1]; ++i) {
      owner[d->pages.indices[i]] = b;
      first_pos[d->pages.indices[i]] = (i - d->pages.indptr[b]) * p->page_size;
    }
  for (int32_t page = 0; page < np; ++page) {
    const int b = owner[page];
    const int32_t first = b >= 0 ? first_pos[page] : 0;
    for (int32_t off = 0; off < p->page_size; ++off) {
      if (b >= 0) {
        const int32_t pos = first + off, kv_len = c->kv_len[b];
        const int32_t start = p->window_left >= 0 && kv_len - 1 - p->window_left > 0
                                  ? kv_len - 1 - p->window_left : 0;
        if (pos < kv_len && pos >= start) continue;
      }
      for (int t = 0; t < 2; ++t) {
        const fi_tensor *x = t ? &kv->v : &kv->k;
        for (int32_t h = 0; h < p->num_kv_heads; ++h) {
          int64_t e = page * x->strides[0] + off * x->strides[pos_dim] + h * x->strides[head_dim];
          for (int32_t dd = 0; dd < p->head_dim; ++dd) {
            char *at = (char *)x->data + (size_t)(e + dd) * es;
            if (es == 2) memcpy(at, &nan16, 2);
            else *(uint8_t *)at = 0x7F; /* e4m3 and e5m2 NaN */
          }
        }
      }
    }
  }
  free(owner);
  free(first_pos);
}

/* poison: NaN in the rows no kernel may read (the random cases; the graph test re-plans
 * the same cache with other lengths, so its rows stay finite). */
static void data_init(decode_data *d, const decode_case *c, int poison) {
  const fi_attention_params *p = &c->p;
  memset(d, 0, sizeof(*d));
  d->pages = gpu_make_pages(c->batch, c->kv_len, p->page_size, c->spare_pages);
  int64_t np = d->pages.num_pages > 0 ? d->pages.num_pages : 1;
  size_t qes = fi_dtype_size(p->q_dtype), kes = fi_dtype_size(p->kv_dtype);
  size_t q_elems = (size_t)c->batch * p->num_qo_heads * p->head_dim;
  size_t kv_elems = 2 * (size_t)np * p->page_size * p->num_kv_heads * p->head_dim;
  d->q_bytes = q_elems * qes;
  d->o_bytes = q_elems * qes;
  d->kv_bytes = kv_elems * kes;
  d->lse_bytes = (size_t)c->batch * p->num_qo_heads * sizeof(float);
  d->q_h = malloc(d->q_bytes + 16);
  d->kv_h = malloc(d->kv_bytes + 16);
  d->o_ref = malloc(d->o_bytes + 16);
  d->o_gpu = malloc(d->o_bytes + 16);
  d->lse_ref = (float *)malloc(d->lse_bytes + 16);
  d->lse_gpu = (float *)malloc(d->lse_bytes + 16);
  gpu_fill_random(d->q_h, p->q_dtype, q_elems);
  if (c->big_q) /* 2^17 times each finite nonzero bf16 value (its exponent field + 17) */
    for (size_t i = 0; i < q_elems; ++i) {
      uint16_t *h = (uint16_t *)d->q_h + i;
      if ((*h & 0x7f80) != 0 && (*h & 0x7f80) != 0x7f80) *h = (uint16_t)(*h + (17 << 7));
    }
  gpu_fill_random(d->kv_h, p->kv_dtype, kv_elems);
  /* (the cache as the plan sees it: no pages when there are none, though one is allocated) */
  d->cache_h = cache_view(c, d->kv_h, d->pages.num_pages);
  if (poison) poison_unread_rows(d, c);
  d->q_d = gpu_upload(d->q_h, d->q_bytes);
  d->kv_d = gpu_upload(d->kv_h, d->kv_bytes);
  d->o_d = gpu_alloc_poisoned(d->o_bytes);
  d->lse_d = gpu_alloc_poisoned(d->lse_bytes);
  d->indptr_d = (int32_t *)gpu_upload(d->pages.indptr, sizeof(int32_t) * (size_t)(c->batch + 1));
  d->indices_d = (int32_t *)gpu_upload(d->pages.indices, sizeof(int32_t) * (size_t)(np));
  d->last_d = (int32_t *)gpu_upload(d->pages.last_page_len, sizeof(int32_t) * (size_t)(c->batch > 0 ? c->batch : 1));
  d->cache_d = cache_view(c, d->kv_d, d->pages.num_pages);
}

static void data_free(decode_data *d) {
  gpu_free_pages(&d->pages);
  free(d->q_h); free(d->kv_h); free(d->o_ref); free(d->o_gpu); free(d->lse_ref); free(d->lse_gpu);
  cudaFree(d->q_d); cudaFree(d->kv_d); cudaFree(d->o_d); cudaFree(d->lse_d);
  cudaFree(d->indptr_d); cudaFree(d->indices_d); cudaFree(d->last_d);
}

/* The total KV tokens of `c`: the workspace's bound (fi_decode_workspace_size_kv), which a
 * fixed split size needs (it makes a unit per fixed_split_size tokens). */
static int64_t case_total_kv(const decode_case *c) {
  int64_t t = 0;
  for (int i = 0; i < c->batch; ++i) t += c->kv_len[i];
  return t;
}

/* Runs the host oracle of `c` into d->o_ref / d->lse_ref. */
static void run_host(fi_context *hctx, const decode_case *c, decode_data *d) {
  const fi_attention_params *p = &c->p;
  fi_page_table pt = {d->pages.indptr, d->pages.indices, d->pages.last_page_len};
  size_t ws = 0;
  FI_CK(hctx, fi_decode_workspace_size_kv(hctx, p, c->batch, case_total_kv(c), &ws));
  void *w = malloc(ws + 16);
  fi_plan plan;
  FI_CK(hctx, fi_decode_plan(hctx, p, c->batch, &pt, d->pages.num_pages, NULL, w, ws, &plan));
  int64_t qshape[3] = {c->batch, p->num_qo_heads, p->head_dim}, lshape[2] = {c->batch, p->num_qo_heads};
  fi_tensor q = fi_tensor_contiguous(d->q_h, p->q_dtype, 3, qshape);
  fi_tensor o = fi_tensor_contiguous(d->o_ref, p->q_dtype, 3, qshape);
  fi_tensor l = fi_tensor_contiguous(d->lse_ref, FI_DTYPE_F32, 2, lshape);
  FI_CK(hctx, fi_decode_run(hctx, &plan, &q, &d->cache_h, &pt, &o, &l));
  free(w);
}

static void random_case(decode_case *c, int idx) {
  memset(c, 0, sizeof(*c));
  static const int groups[] = {1, 1, 2, 3, 4, 4, 5, 8, 8, 16};
  static const int dims[] = {64, 128, 256};
  static const int page_sizes[] = {1, 2, 4, 8, 3, 7, 16, 16, 32, 64, 128, 256, 1024};
  int kvh = 1 << gpu_rand_int(0, idx % 8 == 0 ? 1 : 3); /* long-KV cases: few KV heads */
  int g = groups[gpu_rand_int(0, 9)];
  int D = dims[gpu_rand_int(0, 2)];
  /* FI_TEST_DECODE_FP8=1: fp8 KV in every configuration and, in three of four, head_dim
   * 128 (the warp-specialised kernel's fp8 instance); same random sequence. Some q rows
   * get large values in bf16 (the instance's f16 Q tile is then scaled down). */
  const int fp8_mode = (int)gpu_env_u64("FI_TEST_DECODE_FP8", 0);
  if (fp8_mode && idx % 4 != 3) D = 128;
  c->p = fi_attention_params_default(kvh * g, kvh, D);
  c->p.q_dtype = gpu_rand_int(0, 1) ? FI_DTYPE_BF16 : FI_DTYPE_F16;
  int kvk = gpu_rand_int(0, 9);
  c->p.kv_dtype = kvk < 6 ? c->p.q_dtype : kvk < 8 ? FI_DTYPE_E4M3 : FI_DTYPE_E5M2;
  if (fp8_mode) c->p.kv_dtype = kvk % 3 ? FI_DTYPE_E4M3 : FI_DTYPE_E5M2;
  c->big_q = fp8_mode && c->p.q_dtype == FI_DTYPE_BF16 && idx % 3 == 0;
  c->p.page_size = gpu_rand_int(0, 4) == 0 ? gpu_rand_int(1, 1024) : page_sizes[gpu_rand_int(0, 12)];
  /* FI_TEST_PAGE16: page sizes rounded up to multiples of 16 (the page-aligned kernels:
   * decode_tcw_kernel's single slots, decode_tws_kernel), same random sequence otherwise. */
  if (gpu_env_u64("FI_TEST_PAGE16", 0)) c->p.page_size = (c->p.page_size + 15) / 16 * 16;
  /* FI_TEST_PAGE_SMALL: pages that are not a multiple of 16 (all but 1 and 2:
   * decode_tws_kernel's boxes of 4 or 8 rows, a page holding one or several). */
  static const int small_pages[] = {1, 2, 4, 8, 12, 20, 24, 40};
  if (gpu_env_u64("FI_TEST_PAGE_SMALL", 0)) c->p.page_size = small_pages[gpu_rand_int(0, 7)];
  c->layout = gpu_rand_int(0, 1) ? FI_LAYOUT_HND : FI_LAYOUT_NHD;
  c->combined = gpu_rand_int(0, 1);
  c->with_lse = gpu_rand_int(0, 4) != 0;
  c->spare_pages = gpu_rand_int(0, 8);

  /* Shapes: every 8th case one long request, every 8th+1 a batch of 512; otherwise
   * log-uniform, with the host oracle's work (total_kv * qo_heads * D) bounded. */
  /* Host oracle work (total_kv * qo_heads * D) and KV elements to fill, bounded;
   * FI_TEST_SMALL (sanitizer runs) divides both by 100. */
  const double scale = getenv("FI_TEST_SMALL") ? 0.01 : 1.0;
  const double work_budget = 3e8 * scale, fill_budget = 2.5e7 * scale;
  if (idx % 8 == 0) c->batch = gpu_rand_int(1, 2);
  else if (idx % 8 == 1) c->batch = getenv("FI_TEST_SMALL") ? 64 : 512;
  else c->batch = gpu_rand_log(1, 512);
  double per_token = (double)c->p.num_qo_heads * D;
  double kv_max_work = work_budget / (per_token * c->batch);
  double kv_max_fill = fill_budget / (2.0 * kvh * D * c->batch);
  int max_kv = (int)(kv_max_work < kv_max_fill ? kv_max_work : kv_max_fill);
  if (max_kv > 32768) max_kv = 32768;
  if (max_kv < 1) max_kv = 1;
  c->kv_len = (int32_t *)malloc(sizeof(int32_t) * (size_t)c->batch);
  for (int i = 0; i < c->batch; ++i) {
    c->kv_len[i] = gpu_rand_log(1, max_kv);
    if (gpu_rand_int(0, 40) == 0) c->kv_len[i] = 0;              /* an empty request */
    if (gpu_rand_int(0, 20) == 0) c->kv_len[i] = c->p.page_size; /* last page full */
  }
  if (idx % 8 == 0) c->kv_len[0] = max_kv > 16384 ? gpu_rand_int(16384, max_kv) : max_kv;

  /* Features alone (cases 2..7 mod 8 pick one) and combined (the others draw each). */
  int solo = idx % 8;
  int all = solo < 2;
  if (all ? gpu_rand_int(0, 2) == 0 : solo == 2) c->p.pos_encoding = FI_POS_ROPE_LLAMA;
  else if (all ? gpu_rand_int(0, 2) == 0 : solo == 3) c->p.pos_encoding = FI_POS_ALIBI;
  if (all ? gpu_rand_int(0, 2) == 0 : solo == 4) c->p.logits_soft_cap = gpu_rand_uniform(5.f, 50.f);
  if (all ? gpu_rand_int(0, 2) == 0 : solo == 5) c->p.window_left = gpu_rand_int(0, max_kv);
  if (all ? gpu_rand_int(0, 1) == 0 : solo == 6) c->p.sm_scale = gpu_rand_uniform(0.02f, 0.5f);
  /* big_q: q x 2^17 with sm_scale x 2^-17, so the logits stay as well conditioned as the
   * other cases' (huge logits make any two summation orders disagree past the bounds) */
  if (c->big_q) c->p.sm_scale *= 0x1p-17f;
  if (c->p.pos_encoding == FI_POS_ROPE_LLAMA) {
    c->p.rope_scale = gpu_rand_int(0, 1) ? 1.f : gpu_rand_uniform(1.f, 8.f);
    c->p.rope_theta = gpu_rand_int(0, 1) ? 1e4f : 5e5f;
  }
  if (c->p.kv_dtype == FI_DTYPE_E4M3 || c->p.kv_dtype == FI_DTYPE_E5M2 || gpu_rand_int(0, 5) == 0) {
    c->p.k_scale = gpu_rand_uniform(0.05f, 0.5f);
    c->p.v_scale = gpu_rand_uniform(0.5f, 2.f);
  }
  int split = gpu_rand_int(0, 9);
  c->p.fixed_split_size = split < 5 ? 0 : split < 7 ? -1 : gpu_rand_int(1, 4096);
  c->force_tiles = solo == 7 || gpu_rand_int(0, 3) == 0;
  if (c->force_tiles) {
    static const int kv_tiles[] = {16, 32, 64, 128};
    c->tiles.cores = gpu_rand_int(0, 1) ? FI_CORES_TENSOR : FI_CORES_CUDA;
    c->tiles.q_tile = c->tiles.cores == FI_CORES_TENSOR ? 16 : 1;
    c->tiles.kv_tile = kv_tiles[gpu_rand_int(0, 3)];
    if (D == 256 && c->tiles.kv_tile == 128)
      c->tiles.kv_tile = 64; /* hd 256 x 128 tokens x 2 stages > 227 KiB: plan says
                                UNSUPPORTED (unsupported_test checks that) */
    c->tiles.split_kv = 1;
  }
}

typedef struct stats {
  gpu_err f16, bf16;
  int configs, failed_configs, split_plans, tc_plans, cc_plans, unsupported_forced;
  int rerun_differs; /* configs whose second run was not bitwise equal to the first */
  int device_plans, device_differs; /* the same problem planned on the device */
} stats;

/* The problem of `c` planned on the device (fi_decode_plan_device, kv_indices given with
 * its capacity) and run into freshly poisoned outputs must equal the host-planned run
 * (d->o_gpu, d->lse_gpu) bit for bit. Returns 1 on a difference or an error. */
static int device_plan_matches(fi_context *dctx, const decode_case *c, decode_data *d,
                               const fi_plan *host_plan, void *w, size_t ws, int idx) {
  const fi_attention_params *p = &c->p;
  fi_page_table pt_d = {d->indptr_d, d->indices_d, d->last_d};
  int64_t cap_indices = d->pages.num_pages > 0 ? d->pages.num_pages : 1;
  GPU_CK(cudaMemset(w, 0xff, ws));
  GPU_CK(cudaMemset(d->o_d, 0xff, d->o_bytes));
  GPU_CK(cudaMemset(d->lse_d, 0xff, d->lse_bytes));
  fi_plan plan;
  fi_status s = fi_decode_plan_device(dctx, p, c->batch, &pt_d, cap_indices, d->pages.num_pages,
                                      &host_plan->tiles, w, ws, &plan);
  int64_t qshape[3] = {c->batch, p->num_qo_heads, p->head_dim}, lshape[2] = {c->batch, p->num_qo_heads};
  fi_tensor q = fi_tensor_contiguous(d->q_d, p->q_dtype, 3, qshape);
  fi_tensor o = fi_tensor_contiguous(d->o_d, p->q_dtype, 3, qshape);
  fi_tensor l = fi_tensor_contiguous(d->lse_d, FI_DTYPE_F32, 2, lshape);
  if (s == FI_SUCCESS)
    s = fi_decode_run(dctx, &plan, &q, &d->cache_d, &pt_d, &o, c->with_lse ? &l : NULL);
  GPU_CK(cudaDeviceSynchronize());
  if (s == FI_SUCCESS) s = fi_plan_device_status(dctx, &plan);
  if (s != FI_SUCCESS) {
    fprintf(stderr, "case %d: device plan failed: %s: %s\n", idx, fi_status_string(s),
            fi_last_error(dctx));
    return 1;
  }
  void *o2 = malloc(d->o_bytes + 16), *l2 = malloc(d->lse_bytes + 16);
  gpu_download(o2, d->o_d, d->o_bytes);
  gpu_download(l2, d->lse_d, d->lse_bytes);
  int differs = memcmp(o2, d->o_gpu, d->o_bytes) != 0 ||
                (c->with_lse && memcmp(l2, d->lse_gpu, d->lse_bytes) != 0);
  if (differs)
    fprintf(stderr, "case %d: the device-planned run differs bitwise from the host-planned one "
            "(host plan: %d work units)\n", idx, host_plan->num_work_units);
  free(o2);
  free(l2);
  return differs;
}

/* With RoPE the kernels round the rotated q and k to the 16-bit type of their MMA (f16 for
 * an fp8 cache) where the host keeps fp32: each logit moves by at most (2u + u^2) x
 * sm_scale x k_scale x |q| |k| (u that type's unit roundoff; Cauchy-Schwarz, the rotation
 * keeps the norms), and the LSE, a weighted mean of the logits, by at most the largest such
 * move. The norms are the largest over q's rows and the cache's finite rows. */
static double rope_lse_slack(const decode_case *c, const decode_data *d) {
  const fi_attention_params *p = &c->p;
  const int hd = p->head_dim;
  const size_t q_rows = (size_t)c->batch * p->num_qo_heads;
  const size_t kv_rows = d->kv_bytes / fi_dtype_size(p->kv_dtype) / (size_t)hd;
  /* (K and V rows alike: a bound) */
  const double qn = gpu_max_row_norm(d->q_h, p->q_dtype, q_rows, hd),
               kn = gpu_max_row_norm(d->kv_h, p->kv_dtype, kv_rows, hd);
  const int f16_math = p->q_dtype == FI_DTYPE_F16 || fi_dtype_size(p->kv_dtype) == 1;
  const double u = f16_math ? 0x1p-11 : 0x1p-8;
  return (2 * u + u * u) * fabs((double)p->sm_scale) * fabs((double)p->k_scale) * qn * kn;
}

static int run_case(fi_context *hctx, fi_context *dctx, decode_case *c, int idx, stats *st) {
  decode_data d;
  data_init(&d, c, 1);
  const fi_attention_params *p = &c->p;
  fi_page_table pt_h = {d.pages.indptr, d.pages.indices, d.pages.last_page_len};
  fi_page_table pt_d = {d.indptr_d, d.indices_d, d.last_d};
  size_t ws = 0;
  FI_CK(dctx, fi_decode_workspace_size_kv(dctx, p, c->batch, case_total_kv(c), &ws));
  void *w = NULL;
  GPU_CK(cudaMalloc(&w, ws));
  GPU_CK(cudaMemset(w, 0xff, ws)); /* stale garbage in the partial rows */
  fi_plan plan;
  fi_status s = fi_decode_plan(dctx, p, c->batch, &pt_h, d.pages.num_pages,
                               c->force_tiles ? &c->tiles : NULL, w, ws, &plan);
  int failed = 0;
  char name[64];
  fi_tiles_name(plan.tiles, 1, name, sizeof(name));
  if (s == FI_ERROR_UNSUPPORTED && c->force_tiles && strstr(fi_last_error(dctx), "shared memory")) {
    /* a forced variant too large for this device: plan must say so (it did) */
    st->unsupported_forced++;
  } else if (s != FI_SUCCESS) {
    fprintf(stderr, "case %d: plan failed: %s: %s\n", idx, fi_status_string(s), fi_last_error(dctx));
    failed = 1;
  } else {
    int64_t qshape[3] = {c->batch, p->num_qo_heads, p->head_dim}, lshape[2] = {c->batch, p->num_qo_heads};
    fi_tensor q = fi_tensor_contiguous(d.q_d, p->q_dtype, 3, qshape);
    fi_tensor o = fi_tensor_contiguous(d.o_d, p->q_dtype, 3, qshape);
    fi_tensor l = fi_tensor_contiguous(d.lse_d, FI_DTYPE_F32, 2, lshape);
    /* Two runs of the plan, the second (poisoned outputs first) checked and compared
     * bitwise with the first: runs are deterministic, and a split request merged inside
     * the decode kernel relies on the first run resetting its merge counters. */
    s = fi_decode_run(dctx, &plan, &q, &d.cache_d, &pt_d, &o, c->with_lse ? &l : NULL);
    cudaError_t ce = cudaDeviceSynchronize();
    int rerun_differs = 0;
    if (s == FI_SUCCESS && ce == cudaSuccess) {
      void *o1 = malloc(d.o_bytes + 16), *l1 = malloc(d.lse_bytes + 16);
      gpu_download(o1, d.o_d, d.o_bytes);
      gpu_download(l1, d.lse_d, d.lse_bytes);
      GPU_CK(cudaMemset(d.o_d, 0xff, d.o_bytes));
      GPU_CK(cudaMemset(d.lse_d, 0xff, d.lse_bytes));
      s = fi_decode_run(dctx, &plan, &q, &d.cache_d, &pt_d, &o, c->with_lse ? &l : NULL);
      ce = cudaDeviceSynchronize();
      if (s == FI_SUCCESS && ce == cudaSuccess) {
        gpu_download(d.o_gpu, d.o_d, d.o_bytes);
        gpu_download(d.lse_gpu, d.lse_d, d.lse_bytes);
        rerun_differs = memcmp(o1, d.o_gpu, d.o_bytes) != 0 ||
                        (c->with_lse && memcmp(l1, d.lse_gpu, d.lse_bytes) != 0);
      }
      free(o1);
      free(l1);
    }
    if (rerun_differs) {
      fprintf(stderr, "case %d: the second run of the same plan differs bitwise from the first\n",
              idx);
      st->rerun_differs++;
    }
    if (s != FI_SUCCESS || ce != cudaSuccess) {
      fprintf(stderr, "case %d: run failed: %s: %s / %s\n", idx, fi_status_string(s),
              fi_last_error(dctx), cudaGetErrorString(ce));
      if (ce != cudaSuccess) exit(1);
      failed = 1;
    } else {
      run_host(hctx, c, &d);
      gpu_download(d.o_gpu, d.o_d, d.o_bytes);
      gpu_download(d.lse_gpu, d.lse_d, d.lse_bytes);
      gpu_err *e = p->q_dtype == FI_DTYPE_F16 ? &st->f16 : &st->bf16;
      long long bad = gpu_compare_rows("o", d.o_gpu, d.o_ref, p->q_dtype,
                                       (int64_t)c->batch * p->num_qo_heads, p->head_dim,
                                       p->head_dim, O_TOL, 1e-3, e);
      if (c->with_lse) {
        const int rope = p->pos_encoding == FI_POS_ROPE_LLAMA;
        const double tol = (rope && fi_dtype_size(p->kv_dtype) == 1 ? 2 * LSE_TOL : LSE_TOL) +
                           (rope ? rope_lse_slack(c, &d) : 0.0);
        bad += gpu_compare_lse(d.lse_gpu, d.lse_ref, (int64_t)c->batch * p->num_qo_heads, tol, e);
      }
      failed = bad > 0 || rerun_differs;
      int dev_differs = device_plan_matches(dctx, c, &d, &plan, w, ws, idx);
      st->device_plans++;
      st->device_differs += dev_differs;
      failed |= dev_differs;
      if (plan.num_partial_rows > 0) st->split_plans++;
      if (plan.tiles.cores == FI_CORES_TENSOR) st->tc_plans++;
      else st->cc_plans++;
    }
  }
  if (failed || getenv("FI_TEST_VERBOSE")) {
    long long tot = 0;
    for (int i = 0; i < c->batch; ++i) tot += c->kv_len[i];
    fprintf(stderr,
            "%s case %d: %s q %s kv %s hd %d heads %d/%d page %d %s %s batch %d total_kv %lld "
            "pos %s cap %g window %d scale %g ks %g vs %g split %d lse %d units %d partial %d\n",
            failed ? "FAIL" : "ok", idx, name, fi_dtype_name(p->q_dtype),
            fi_dtype_name(p->kv_dtype), p->head_dim, p->num_qo_heads, p->num_kv_heads,
            p->page_size, c->layout == FI_LAYOUT_NHD ? "NHD" : "HND",
            c->combined ? "combined" : "separate", c->batch, tot, pos_name(p->pos_encoding),
            p->logits_soft_cap, p->window_left, p->sm_scale, p->k_scale, p->v_scale,
            p->fixed_split_size, c->with_lse, plan.num_work_units, plan.num_partial_rows);
  }
  cudaFree(w);
  data_free(&d);
  return failed;
}

/* Graph capture: capture a run with plan A, re-plan B (other lengths, more work units)
 * into the same workspace with the page table rewritten in place, replay, check. */
static int graph_test(fi_context *hctx) {
  fi_context *ctx = NULL;
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &ctx));
  cudaStream_t stream;
  GPU_CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FI_CK(ctx, fi_context_set_stream(ctx, stream));
  decode_case c;
  memset(&c, 0, sizeof(c));
  c.p = fi_attention_params_default(32, 8, 128);
  c.p.page_size = 16;
  c.batch = 4;
  c.layout = FI_LAYOUT_NHD;
  c.with_lse = 1;
  c.p.fixed_split_size = 2048; /* A: 7 work units, B: 17 (more than the captured grid) */
  int32_t len_a[4] = {100, 5000, 17, 3000}, len_b[4] = {20000, 1, 700, 9000};
  int32_t max_len[4] = {20000, 5000, 700, 9000};
  /* Allocate for the larger of both; page tables rewritten in place. */
  c.kv_len = max_len;
  decode_data d;
  data_init(&d, &c, 0);
  GPU_CK(cudaDeviceSynchronize()); /* legacy-stream uploads done before the other stream */
  size_t ws = 0;
  FI_CK(ctx, fi_decode_workspace_size_kv(ctx, &c.p, c.batch, 20000 + 5000 + 700 + 9000, &ws));
  void *w = NULL;
  GPU_CK(cudaMalloc(&w, ws));
  int failed = 0;
  int64_t qshape[3] = {c.batch, 32, 128}, lshape[2] = {c.batch, 32};
  fi_tensor q = fi_tensor_contiguous(d.q_d, c.p.q_dtype, 3, qshape);
  fi_tensor o = fi_tensor_contiguous(d.o_d, c.p.q_dtype, 3, qshape);
  fi_tensor l = fi_tensor_contiguous(d.lse_d, FI_DTYPE_F32, 2, lshape);
  fi_page_table pt_d = {d.indptr_d, d.indices_d, d.last_d};
  cudaGraphExec_t exec = NULL;
  int units[2] = {0, 0};
  for (int phase = 0; phase < 2; ++phase) {
    int32_t *lens = phase == 0 ? len_a : len_b;
    int need = 0;
    for (int i = 0; i < c.batch; ++i) need += (lens[i] + c.p.page_size - 1) / c.p.page_size;
    /* a fresh permutation of all allocated pages */
    gpu_pages pg = gpu_make_pages(c.batch, lens, c.p.page_size, d.pages.num_pages - need);
    /* on the context's (non-blocking) stream, so the replay sees the new table */
    GPU_CK(cudaMemcpyAsync(d.indptr_d, pg.indptr, sizeof(int32_t) * 5, cudaMemcpyHostToDevice, stream));
    GPU_CK(cudaMemcpyAsync(d.indices_d, pg.indices, sizeof(int32_t) * (size_t)pg.total_pages, cudaMemcpyHostToDevice, stream));
    GPU_CK(cudaMemcpyAsync(d.last_d, pg.last_page_len, sizeof(int32_t) * 4, cudaMemcpyHostToDevice, stream));
    GPU_CK(cudaStreamSynchronize(stream));
    fi_page_table pt_h = {pg.indptr, pg.indices, pg.last_page_len};
    fi_plan plan;
    FI_CK(ctx, fi_decode_plan(ctx, &c.p, c.batch, &pt_h, d.pages.num_pages, NULL, w, ws, &plan));
    units[phase] = plan.num_work_units;
    if (phase == 0) {
      cudaGraph_t graph;
      GPU_CK(cudaStreamSynchronize(stream));
      GPU_CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      FI_CK(ctx, fi_decode_run(ctx, &plan, &q, &d.cache_d, &pt_d, &o, &l));
      GPU_CK(cudaStreamEndCapture(stream, &graph));
      GPU_CK(cudaGraphInstantiate(&exec, graph, 0));
      GPU_CK(cudaGraphDestroy(graph));
    }
    /* Two replays, the second checked: a split request merged inside the decode kernel
     * (planner.c, "Fused merge") relies on its counters being reset by the replay before. */
    GPU_CK(cudaGraphLaunch(exec, stream));
    GPU_CK(cudaMemsetAsync(d.o_d, 0xff, d.o_bytes, stream));
    GPU_CK(cudaMemsetAsync(d.lse_d, 0xff, d.lse_bytes, stream));
    GPU_CK(cudaGraphLaunch(exec, stream));
    GPU_CK(cudaStreamSynchronize(stream));
    /* host oracle on the same page table */
    gpu_pages saved = d.pages;
    d.pages = pg;
    d.pages.num_pages = saved.num_pages;
    decode_case ch = c;
    ch.kv_len = lens;
    run_host(hctx, &ch, &d);
    d.pages = saved;
    gpu_download(d.o_gpu, d.o_d, d.o_bytes);
    gpu_download(d.lse_gpu, d.lse_d, d.lse_bytes);
    gpu_err e;
    memset(&e, 0, sizeof(e));
    long long bad = gpu_compare_rows("graph o", d.o_gpu, d.o_ref, c.p.q_dtype, 4 * 32, 128, 128,
                                     O_TOL, 1e-3, &e);
    bad += gpu_compare_lse(d.lse_gpu, d.lse_ref, 4 * 32, LSE_TOL, &e);
    printf("graph replay %s (plan %s: %d work units, %d partial rows): max rel err %.3g, "
           "lse %.3g: %s\n", phase == 0 ? "as captured" : "after re-plan",
           phase == 0 ? "A" : "B", plan.num_work_units, plan.num_partial_rows, e.max_rel,
           e.max_lse, bad ? "FAIL" : "ok");
    failed |= bad > 0;
    gpu_free_pages(&pg);
  }
  if (units[0] == units[1]) {
    printf("graph test: plans A and B have the same unit count; the test proves less\n");
    failed = 1;
  }
  cudaGraphExecDestroy(exec);
  cudaFree(w);
  c.kv_len = NULL;
  data_free(&d);
  cudaStreamDestroy(stream);
  fi_context_destroy(ctx);
  return failed;
}

/* The first of `n` tuning knobs set in the environment, or NULL. */
static const char *first_knob_set(const char *const *knobs, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (getenv(knobs[i])) return knobs[i];
  return NULL;
}

/* Peak DRAM bandwidth per SM of device 0, as the runtime computes it (context.cu). */
static double device_gbps_per_sm(int sms) {
  int mem_khz = 0, bus_bits = 0;
  GPU_CK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0));
  GPU_CK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
  return 2.0 * mem_khz * 1e3 * bus_bits / 8.0 / 1e9 / sms;
}

/* The host plan of a decode of `batch` requests of `len` tokens each (32 query heads, `kvh`
 * KV heads, `head_dim`, pages of `page`, a KV cache of `kv_dtype`); only its counts are
 * read afterwards. */
static fi_plan plan_equal_lengths(fi_context *dctx, int batch, int kvh, int page, int len,
                                  fi_dtype kv_dtype, int head_dim) {
  int32_t *lens = (int32_t *)malloc(sizeof(int32_t) * (size_t)batch);
  for (int i = 0; i < batch; ++i) lens[i] = len;
  gpu_pages pg = gpu_make_pages(batch, lens, page, 0);
  fi_attention_params p = fi_attention_params_default(32, kvh, head_dim);
  p.page_size = page;
  p.kv_dtype = kv_dtype;
  size_t ws = 0;
  FI_CK(dctx, fi_decode_workspace_size(dctx, &p, batch, &ws));
  void *w = NULL;
  GPU_CK(cudaMalloc(&w, ws));
  fi_page_table pt = {pg.indptr, pg.indices, pg.last_page_len};
  fi_plan plan;
  FI_CK(dctx, fi_decode_plan(dctx, &p, batch, &pt, pg.num_pages, NULL, w, ws, &plan));
  cudaFree(w);
  gpu_free_pages(&pg);
  free(lens);
  return plan;
}

/* The planner's split rule for the per-warp tensor-core kernel (planner.c,
 * decode_target_units) on a device of at most 30 GB/s of memory bandwidth per SM (an H100):
 * a 16-bit GQA decode at head_dim 128 whose (request, kv head) CTAs cover 9/10 of the SMs
 * up to 1.1 per SM is not split (one CTA of up to 16 warps per SM runs it); one request
 * fewer, 1.2 CTAs per SM, the same batch at head_dim 64 and over an e4m3 cache are split;
 * e4m3 grids stay unsplit from 1.6 CTAs per SM (1.7: unsplit, 1.4: split). On a device with
 * more bandwidth per SM (an H200) every one of these is split. The expected shapes follow
 * from this device's SM count and bandwidth, computed here from its attributes as the
 * runtime does. The grids above one CTA per SM split only through the Hopper fast path's
 * rules (heuristics.c): those cases run on an sm_90 device of a build with sm_90a code.
 * Skipped when a decode tuning knob in the environment changes the planner's target. */
static int split_rule_test(fi_context *dctx) {
  static const char *const knobs[] = {"FI_DECODE_CTAS_PER_SM", "FI_DECODE_WARP_PIPE",
                                      "FI_DECODE_ONE_WAVE", "FI_DECODE_SPLIT",
                                      "FI_DECODE_WARP_SPEC"};
  if (first_knob_set(knobs, sizeof knobs / sizeof knobs[0])) {
    printf("split rule: skipped (a decode tuning knob is set)\n");
    return 0;
  }
  int sms = 0, major = 0;
  GPU_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  GPU_CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
#ifdef FI_CUDA_HAS_SM90A
  const int hopper = major == 9;
#else
  const int hopper = 0;
#endif
  const int kvh = 8, fill = (9 * sms + 10 * kvh - 1) / (10 * kvh);  /* ceil(0.9 sms / kvh) */
  const double gbps_per_sm = device_gbps_per_sm(sms);
  const int gbps_rounded = (int)(gbps_per_sm + 0.5);
  const int low_bw = gbps_rounded <= 30;
  printf("split rule: %.1f GB/s of memory bandwidth per SM\n", gbps_per_sm);
  /* the context's target carries it (rounded), which the heuristics read */
  if (fi_context_target(dctx).dram_gbps_per_sm != gbps_rounded) {
    printf("FAIL split rule: the context's target has %d GB/s of memory bandwidth per SM, "
           "the device's attributes give %d\n",
           fi_context_target(dctx).dram_gbps_per_sm, gbps_rounded);
    return 1;
  }
  const struct { int batch, head_dim, fp8, unsplit, above_one; } cases[] = {
      {fill - 1, 128, 0, 0, 0},
      {fill, 128, 0, low_bw, 0},
      {(12 * sms) / (10 * kvh), 128, 0, 0, 1},
      {fill, 64, 0, 0, 0},
      {fill, 128, 1, 0, 0},
      {(17 * sms + 10 * kvh - 1) / (10 * kvh), 128, 1, low_bw, 1},
      {(14 * sms) / (10 * kvh), 128, 1, 0, 1}};
  int failed = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    const int batch = cases[c].batch;
    if (batch < 1) continue;
    if (cases[c].above_one && !hopper) {
      printf("split rule: batch %d x %d kv heads: skipped (above one CTA per SM: the Hopper "
             "fast path's rule)\n", batch, kvh);
      continue;
    }
    const fi_plan plan = plan_equal_lengths(dctx, batch, kvh, 16, 4096,
                                            cases[c].fp8 ? FI_DTYPE_E4M3 : FI_DTYPE_F16,
                                            cases[c].head_dim);
    const int unsplit = plan.num_partial_rows == 0 && plan.num_work_units == batch;
    const int ok = unsplit == cases[c].unsplit;
    printf("split rule: batch %d x %d kv heads, head_dim %d%s on %d SMs -> %d work units, %d "
           "partial rows (%s expected): %s\n",
           batch, kvh, cases[c].head_dim, cases[c].fp8 ? " over e4m3" : "", sms,
           plan.num_work_units, plan.num_partial_rows, cases[c].unsplit ? "unsplit" : "split",
           ok ? "ok" : "FAIL");
    failed |= !ok;
  }
  return failed;
}

/* The Hopper fast path's split rules (heuristics.c fi_select_decode_tiles, planner.c
 * decode_target_units), checked on an sm_90 device from its SM count: 16-bit KV at
 * head_dim 128 splits unsplit grids of up to 1.5 CTAs per SM (with pages of 8, up to 2
 * for groups below 4 from 4096 keys); split
 * plans aim for 3 CTAs per SM with GQA over pages of 16, 4 with MHA or pages of 4, and 4
 * with GQA over pages of 8 only where 3 would leave under 2.5 busy CTAs per SM. Requests
 * of 8192 (32768 for one request) tokens; the planner's units per KV head u then satisfy
 * lo < u <= hi for the target it aims at. On a device of at most 30 GB/s of memory
 * bandwidth per SM (an H100) grids over pages of 16 covering 9/10 of the SMs up to 1.1 CTAs
 * per SM stay unsplit (split_rule_test). Skipped off sm_90, in a build without sm_90a code (no Hopper tier)
 * or with a decode knob set. */
static int hopper_split_rule_test(fi_context *dctx) {
  int major = 0, sms = 0;
  GPU_CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  GPU_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  static const char *const knobs[] = {"FI_DECODE_CTAS_PER_SM", "FI_DECODE_WARP_PIPE",
                                      "FI_DECODE_ONE_WAVE",    "FI_DECODE_SPLIT",
                                      "FI_DECODE_WARP_SPEC",   "FI_DECODE_HEADS_N"};
  const char *knob = first_knob_set(knobs, sizeof knobs / sizeof knobs[0]);
  if (knob) {
    printf("hopper split rule: skipped (%s is set)\n", knob);
    return 0;
  }
  if (major != 9) {
    printf("hopper split rule: skipped (not an sm_90 device)\n");
    return 0;
  }
#ifndef FI_CUDA_HAS_SM90A
  printf("hopper split rule: skipped (a build without sm_90a code)\n");
  return 0;
#endif
  struct { int batch, kvh, page, len, per_sm; const char *what; } cases[] = {
      /* 1.2 CTAs per SM: split, 3 per SM (GQA, pages of 16) */
      {(12 * sms) / (10 * 8), 8, 16, 8192, 3, "GQA, 1.2 CTAs per SM, pages of 16"},
      /* 1.7 per SM: unsplit with pages of 16 (per_sm 0); with pages of 8 unsplit for a
       * group of 4, split for MHA (1.9 per SM) */
      {(17 * sms + 79) / (10 * 8), 8, 16, 8192, 0, "GQA, 1.7 CTAs per SM, pages of 16"},
      {(17 * sms + 79) / (10 * 8), 8, 8, 8192, 0, "GQA, 1.7 CTAs per SM, pages of 8"},
      {(17 * sms + 319) / (10 * 32), 32, 8, 8192, 4, "MHA, 1.9 CTAs per SM, pages of 8"},
      {1, 8, 8, 32768, 3, "GQA, one request, pages of 8"},
      {1, 8, 4, 32768, 4, "GQA, one request, pages of 4"},
      {1, 32, 16, 32768, 4, "MHA, one request"}};
  const double gbps_per_sm = device_gbps_per_sm(sms);
  int failed = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    const int batch = cases[c].batch, kvh = cases[c].kvh;
    if (cases[c].page == 16 && batch * kvh * 10 >= sms * 9 && batch * kvh * 10 <= sms * 11 &&
        !(gbps_per_sm > 30.0))
      cases[c].per_sm = 0; /* one CTA per SM, unsplit */
    const fi_plan plan =
        plan_equal_lengths(dctx, batch, kvh, cases[c].page, cases[c].len, FI_DTYPE_F16, 128);
    const int units = plan.num_work_units;
    int ok;
    if (cases[c].per_sm == 0) {
      ok = plan.num_partial_rows == 0 && units == batch;
    } else {
      /* at most the target's units; more than the next lower target's (whole chunks per
       * request: the largest multiple of the batch within the target) */
      const int hi = cases[c].per_sm * sms / kvh, lower = (cases[c].per_sm - 1) * sms / kvh;
      const int lo = lower / batch * batch;
      ok = plan.num_partial_rows > 0 && units <= hi && units > lo;
    }
    printf("hopper split rule: %s: batch %d x %d kv heads on %d SMs -> %d work units, %d "
           "partial rows (%s): %s\n",
           cases[c].what, batch, kvh, sms, units, plan.num_partial_rows,
           cases[c].per_sm ? (cases[c].per_sm == 3 ? "split, 3 per SM" : "split, 4 per SM")
                           : "unsplit",
           ok ? "ok" : "FAIL");
    failed |= !ok;
  }
  return failed;
}

/* Bad page tables given to the device planner: each is reported by fi_plan_device_status
 * with a message naming the array, and the run computes nothing (outputs stay poisoned). */
static int device_plan_errors(fi_context *dctx) {
  int failed = 0;
  int32_t lens[3] = {40, 17, 33};
  fi_attention_params p = fi_attention_params_default(32, 8, 128);
  p.page_size = 16;
  fi_tiles tiles; /* the variant a host plan of the valid table chooses */
  {
    gpu_pages pg = gpu_make_pages(3, lens, 16, 0);
    fi_page_table pt = {pg.indptr, pg.indices, pg.last_page_len};
    size_t ws = 0;
    FI_CK(dctx, fi_decode_workspace_size(dctx, &p, 3, &ws));
    void *w = NULL;
    GPU_CK(cudaMalloc(&w, ws));
    fi_plan plan;
    FI_CK(dctx, fi_decode_plan(dctx, &p, 3, &pt, pg.num_pages, NULL, w, ws, &plan));
    tiles = plan.tiles;
    cudaFree(w);
    gpu_free_pages(&pg);
  }
  struct { const char *what, *expect; int which, at, value; } cases[] = {
      {"indptr[0] != 0", "kv_indptr[0]", 0, 0, 1},
      {"decreasing indptr", "non-decreasing", 0, 2, 0},
      {"indptr past kv_indices", "more pages than kv_indices holds", 0, 3, 1000},
      {"last_page_len 0", "kv_last_page_len[1]", 2, 1, 0},
      {"last_page_len > page", "kv_last_page_len[2]", 2, 2, 17},
      {"page id >= num_pages", "kv_indices[4]", 1, 4, 999},
      {"negative page id", "kv_indices[0]", 1, 0, -1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    gpu_pages pg = gpu_make_pages(3, lens, 16, 0);
    int32_t *arr[3] = {pg.indptr, pg.indices, pg.last_page_len};
    arr[cases[i].which][cases[i].at] = cases[i].value;
    int32_t *ip = (int32_t *)gpu_upload(pg.indptr, 4 * sizeof(int32_t));
    int32_t *ix = (int32_t *)gpu_upload(pg.indices, (size_t)pg.num_pages * sizeof(int32_t));
    int32_t *lp = (int32_t *)gpu_upload(pg.last_page_len, 3 * sizeof(int32_t));
    size_t ws = 0;
    FI_CK(dctx, fi_decode_workspace_size(dctx, &p, 3, &ws));
    void *w = NULL, *q = NULL, *kv = NULL, *o = NULL;
    GPU_CK(cudaMalloc(&w, ws));
    size_t qb = 3 * 32 * 128 * 2, kvb = (size_t)pg.num_pages * 2 * 16 * 8 * 128 * 2;
    GPU_CK(cudaMalloc(&q, qb));
    GPU_CK(cudaMemset(q, 0, qb));
    GPU_CK(cudaMalloc(&kv, kvb));
    GPU_CK(cudaMemset(kv, 0, kvb));
    o = gpu_alloc_poisoned(qb);
    fi_page_table pt = {ip, ix, lp};
    fi_plan plan;
    FI_CK(dctx, fi_decode_plan_device(dctx, &p, 3, &pt, pg.num_pages, pg.num_pages, &tiles, w,
                                      ws, &plan));
    int64_t qs[3] = {3, 32, 128}, cs[5] = {pg.num_pages, 2, 16, 8, 128};
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
    fi_tensor to = fi_tensor_contiguous(o, FI_DTYPE_F16, 3, qs);
    fi_tensor tc = fi_tensor_contiguous(kv, FI_DTYPE_F16, 5, cs);
    fi_paged_kv_cache cache;
    FI_CK(dctx, fi_paged_kv_cache_from_combined(&tc, FI_LAYOUT_NHD, &cache));
    FI_CK(dctx, fi_decode_run(dctx, &plan, &tq, &cache, &pt, &to, NULL));
    GPU_CK(cudaDeviceSynchronize());
    fi_status s = fi_plan_device_status(dctx, &plan);
    uint16_t *oh = (uint16_t *)malloc(qb);
    gpu_download(oh, o, qb);
    int untouched = 1;
    for (size_t e = 0; e < qb / 2; ++e) untouched &= oh[e] == 0xffff;
    int ok = s == FI_ERROR_INVALID_ARGUMENT && strstr(fi_last_error(dctx), cases[i].expect) &&
             untouched;
    printf("device plan, %s -> %s (%s)%s: %s\n", cases[i].what, fi_status_string(s),
           fi_last_error(dctx), untouched ? "" : " [outputs written]", ok ? "ok" : "FAIL");
    failed |= !ok;
    free(oh);
    cudaFree(w); cudaFree(q); cudaFree(kv); cudaFree(o);
    cudaFree(ip); cudaFree(ix); cudaFree(lp);
    gpu_free_pages(&pg);
  }
  return failed;
}

static int unsupported_test(fi_context *dctx) {
  int failed = 0;
  int32_t lens[1] = {10};
  gpu_pages pg = gpu_make_pages(1, lens, 16, 0);
  fi_page_table pt = {pg.indptr, pg.indices, pg.last_page_len};
  struct { int hd; fi_dtype q, kv; } cases[] = {
      {96, FI_DTYPE_F16, FI_DTYPE_F16}, {32, FI_DTYPE_BF16, FI_DTYPE_BF16},
      {128, FI_DTYPE_F32, FI_DTYPE_F32}, {128, FI_DTYPE_F16, FI_DTYPE_BF16}};
  for (int i = 0; i < 4; ++i) {
    fi_attention_params p = fi_attention_params_default(8, 8, cases[i].hd);
    p.page_size = 16;
    p.q_dtype = cases[i].q;
    p.kv_dtype = cases[i].kv;
    size_t ws = 0;
    fi_status s = fi_decode_workspace_size(dctx, &p, 1, &ws);
    void *w = NULL;
    if (s == FI_SUCCESS) GPU_CK(cudaMalloc(&w, ws ? ws : 16));
    fi_plan plan;
    if (s == FI_SUCCESS) s = fi_decode_plan(dctx, &p, 1, &pt, pg.num_pages, NULL, w, ws, &plan);
    int ok = s == FI_ERROR_UNSUPPORTED || s == FI_ERROR_INVALID_ARGUMENT;
    printf("plan hd %d q %s kv %s -> %s (%s): %s\n", cases[i].hd, fi_dtype_name(cases[i].q),
           fi_dtype_name(cases[i].kv), fi_status_string(s), fi_last_error(dctx), ok ? "ok" : "FAIL");
    failed |= !ok;
    cudaFree(w);
  }
  {
    fi_attention_params p = fi_attention_params_default(8, 8, 256);
    p.page_size = 16;
    fi_tiles t = {1, 128, 1, FI_CORES_CUDA};
    size_t ws = 0;
    FI_CK(dctx, fi_decode_workspace_size(dctx, &p, 1, &ws));
    void *w = NULL;
    GPU_CK(cudaMalloc(&w, ws));
    fi_plan plan;
    fi_status s = fi_decode_plan(dctx, &p, 1, &pt, pg.num_pages, &t, w, ws, &plan);
    int ok = s == FI_ERROR_UNSUPPORTED;
    printf("plan hd 256 forced cc kv_tile 128 -> %s (%s): %s\n", fi_status_string(s),
           fi_last_error(dctx), ok ? "ok" : "FAIL");
    failed |= !ok;
    cudaFree(w);
  }
  gpu_free_pages(&pg);
  return failed;
}

int main(void) {
  gpu_require_device("test_decode_gpu");
  uint64_t seed = gpu_env_u64("FI_TEST_SEED", 20240611);
  int n = (int)gpu_env_u64("FI_TEST_CONFIGS", 240);
  gpu_seed(seed);
  fi_context *hctx = NULL, *dctx = NULL;
  FI_CK(NULL, fi_context_create(FI_BACKEND_HOST, &hctx));
  FI_CK(NULL, fi_context_create(FI_BACKEND_CUDA, &dctx));
  stats st;
  memset(&st, 0, sizeof(st));
  for (int i = 0; i < n; ++i) {
    decode_case c;
    random_case(&c, i);
    st.configs++;
    st.failed_configs += run_case(hctx, dctx, &c, i, &st);
    free(c.kv_len);
  }
  printf("decode: %d configs (seed %llu), %d failed; %d split-KV plans, %d tensor-core, %d "
         "CUDA-core, %d forced variants refused by plan (too much shared memory); %d second "
         "runs not bitwise equal to the first\n",
         st.configs, (unsigned long long)seed, st.failed_configs, st.split_plans, st.tc_plans,
         st.cc_plans, st.unsupported_forced, st.rerun_differs);
  printf("  f16:  %lld values checked, max o err %.3g (bound %.0e x row max), max lse err %.3g (bound %.0e)\n",
         st.f16.elements, st.f16.max_rel, O_TOL, st.f16.max_lse, LSE_TOL);
  printf("  bf16: %lld values checked, max o err %.3g (bound %.0e x row max), max lse err %.3g (bound %.0e)\n",
         st.bf16.elements, st.bf16.max_rel, O_TOL, st.bf16.max_lse, LSE_TOL);
  printf("  device planning: %d configs planned on the device too, %d not bitwise equal to the "
         "host-planned run\n", st.device_plans, st.device_differs);
  int failed = st.failed_configs > 0;
  failed |= device_plan_errors(dctx);
  failed |= graph_test(hctx);
  failed |= unsupported_test(dctx);
  failed |= split_rule_test(dctx);
  failed |= hopper_split_rule_test(dctx);
  fi_context_destroy(dctx);
  fi_context_destroy(hctx);
  printf("test_decode_gpu: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
