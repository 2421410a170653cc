// bsr_vs_fi.cu -- block-sparse attention: FlashInfer's BlockSparseAttentionWrapper path on
// Hopper (its FA3 sm90 paged prefill with one "request" per block row of R query rows, the
// block row's listed column blocks as pages of C keys, as flashinfer/sparse.py plans it)
// against fi_block_sparse_plan / fi_block_sparse_run, on the same q, k, v and the same BSR
// arrays in one binary: TFLOP/s over the listed pairs (4 * hd * qo_heads * blocks * R * C),
// cross-checked outputs (exit 1 where they differ by more than 1e-2). Built by
// build_bsr_vs_fi.sh (peer_nvcc.sh).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <flashinfer/attention/hopper/prefill_sm90.cuh>
#include <flashinfer/attention/hopper/variants.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/cutlass_utils.cuh>

extern "C" {
#include "fi/runtime.h"
}
#include "peer_common.cuh"

using namespace flashinfer;
using DTypeQ = cutlass_dtype_t<half>;
using DTypeKV = cutlass_dtype_t<half>;
using DTypeO = cutlass_dtype_t<half>;
using IdType = int32_t;

struct PagedParams {  // mirrors csrc/batch_prefill_sm90_customize_config.jinja (fa3, fp16)
  using DTypeQ = ::DTypeQ;
  using DTypeKV = ::DTypeKV;
  using DTypeO = ::DTypeO;
  using IdType = ::IdType;
  DTypeQ* q_ptr; DTypeKV* k_ptr; DTypeKV* v_ptr; DTypeO* o_ptr; float* lse_ptr;
  IdType* qo_tile_indices; IdType* qo_indptr; IdType* kv_indptr; IdType* kv_indices; IdType* qo_lens;
  IdType* kv_lens; IdType* head_indices; IdType* work_indptr; IdType* batch_indices;
  struct AdditionalParams {
    uint32_t* maybe_prefix_len_ptr; uint16_t* maybe_token_pos_in_items_ptr;
    uint16_t* maybe_max_item_len_ptr; float* maybe_scale_v;
    double logits_soft_cap; double sm_scale; double scale_v_scalar; int64_t token_pos_in_items_len;
  } additional_params;
  int64_t q_stride_n, k_stride_n, v_stride_n, o_stride_n, q_stride_h, k_stride_h, v_stride_h, o_stride_h;
  int64_t nnz_qo;
  int64_t k_page_stride, v_page_stride;
  int head_dim, num_qo_heads, num_kv_heads, group_size, page_size, window_left;
  bool causal;
};

__global__ void fill(half* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995; x ^= x >> 15;
    p[i] = __float2half(((x & 0xffff) / 65535.f - 0.5f) * 2.f);
  }
}

template <bool SAME> static cudaError_t run_fa3(PagedParams& p, cudaStream_t s) {
  return BatchPrefillWithPagedKVCacheDispatched<128, 128, MaskMode::kNone, false, SAME, DefaultAttention<false>, PagedParams>(p, false, s);
}

// Usage: bsr_vs_fi [block,sparsity ...] -- one sequence of FI_BSR_SEQ (default 16384) query
// rows and keys, 32 / 8 heads, head_dim 128, fp16, no causal mask (fi_bench sparse's rows); R =
// C = block; every block row lists round((1 - sparsity) * blocks) column blocks at random.
// Without arguments: blocks of 64 and 128 at 0, 50, 90 and 98 % sparsity ("x dense" is over
// each library's own 0 % row of the same block size).
int main(int argc, char** argv) {
  struct Row { int block; double sparsity; };
  std::vector<Row> rows;
  for (int i = 1; i < argc; ++i) {
    Row r{};
    if (sscanf(argv[i], "%d,%lf", &r.block, &r.sparsity) != 2 || r.block < 16 || r.block % 16 || r.sparsity < 0 || r.sparsity >= 1) {
      fprintf(stderr, "bad row '%s': want block,sparsity (block a multiple of 16, 0 <= sparsity < 1)\n", argv[i]);
      return 2;
    }
    rows.push_back(r);
  }
  if (rows.empty())
    for (int b : {64, 128}) for (double s : {0.0, 0.5, 0.9, 0.98}) rows.push_back({b, s});
  const int D = 128, hq = 32, hk = 8;
  const int64_t L = getenv("FI_BSR_SEQ") ? atoll(getenv("FI_BSR_SEQ")) : 16384;
  cudaStream_t s; CK(cudaStreamCreate(&s));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("GPU: %s (%d SMs); one sequence of %lld, %d / %d heads, hd %d, fp16, no causal\n", prop.name,
         prop.multiProcessorCount, (long long)L, hq, hk, D);
  fi_context* ctx = nullptr;
  if (fi_context_create(FI_BACKEND_CUDA, &ctx) != FI_SUCCESS) { fprintf(stderr, "fi ctx: %s\n", fi_last_error(NULL)); return 1; }
  FK(fi_context_set_stream(ctx, s));
  size_t fbytes = 256 << 20, ibytes = 64 << 20;
  void *fbuf, *ibuf, *hbuf;
  CK(cudaMalloc(&fbuf, fbytes)); CK(cudaMalloc(&ibuf, ibytes)); CK(cudaMallocHost(&hbuf, ibytes));
  half *q, *k, *v, *o1, *o2;
  CK(cudaMalloc(&q, L * hq * D * 2)); CK(cudaMalloc(&k, L * hk * D * 2)); CK(cudaMalloc(&v, L * hk * D * 2));
  CK(cudaMalloc(&o1, L * hq * D * 2)); CK(cudaMalloc(&o2, L * hq * D * 2));
  fill<<<1024, 256, 0, s>>>(q, L * hq * D, 1); fill<<<1024, 256, 0, s>>>(k, L * hk * D, 2); fill<<<1024, 256, 0, s>>>(v, L * hk * D, 3);
  std::mt19937 rng(20261204);
  double dense_fa3[2] = {0, 0}, dense_fi[2] = {0, 0};
  int disagreements = 0;  // rows whose outputs differ by more than the bound (exit 1)
  printf("| BSR pattern | FlashInfer TFLOP/s | x its dense | fi TFLOP/s | x its dense | fi / FlashInfer | max |o_fi - o_fl| |\n|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const int R = r.block, C = r.block;
    const int64_t nbr = (L + R - 1) / R, nbc = (L + C - 1) / C;
    int64_t keep = (int64_t)((1.0 - r.sparsity) * (double)nbc + 0.5);
    keep = std::max<int64_t>(1, std::min(keep, nbc));
    std::vector<IdType> indptr(nbr + 1, 0), indices, perm(nbc);
    for (int64_t i = 0; i < nbr; ++i) {
      for (int64_t j = 0; j < nbc; ++j) perm[j] = (IdType)j;
      std::shuffle(perm.begin(), perm.end(), rng);
      std::sort(perm.begin(), perm.begin() + keep);
      indices.insert(indices.end(), perm.begin(), perm.begin() + keep);
      indptr[i + 1] = (IdType)indices.size();
    }
    double pairs = 0;  // listed (query, key) pairs (blocks past L cut)
    for (int64_t i = 0; i < nbr; ++i)
      for (IdType e = indptr[i]; e < indptr[i + 1]; ++e)
        pairs += (double)(std::min<int64_t>(L, (i + 1) * R) - i * R) * (double)(std::min<int64_t>(L, ((int64_t)indices[e] + 1) * C) - (int64_t)indices[e] * C);
    const double flops = 4.0 * D * hq * pairs;
    IdType *d_indptr, *d_indices;
    CK(cudaMalloc(&d_indptr, indptr.size() * 4)); CK(cudaMalloc(&d_indices, indices.size() * 4));
    CK(cudaMemcpy(d_indptr, indptr.data(), indptr.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_indices, indices.data(), indices.size() * 4, cudaMemcpyHostToDevice));
    // FlashInfer: block row i is request i of R query rows; its listed blocks are its pages
    // (k and v as [L / C pages, C, hk, D]: the contiguous tensors cut into pages of C keys).
    std::vector<IdType> qo_indptr(nbr + 1), kv_len(nbr);
    for (int64_t i = 0; i <= nbr; ++i) qo_indptr[i] = (IdType)std::min<int64_t>(L, i * R);
    for (int64_t i = 0; i < nbr; ++i) kv_len[i] = (indptr[i + 1] - indptr[i]) * C;
    if (L % C) fprintf(stderr, "note: L %% C != 0: FlashInfer's last page of a row is counted whole\n");
    PrefillPlanSM90Info info;
    CK(PrefillSM90Plan<IdType>(fbuf, fbytes, ibuf, hbuf, ibytes, info, qo_indptr.data(), indptr.data(), kv_len.data(),
                               (uint32_t)L, (uint32_t)nbr, hq, hk, D, D, C, false, false, 2, s));
    PagedParams p{};
    p.q_ptr = (DTypeQ*)q; p.k_ptr = (DTypeKV*)k; p.v_ptr = (DTypeKV*)v; p.o_ptr = (DTypeO*)o1; p.lse_ptr = nullptr;
    p.q_stride_n = hq * D; p.q_stride_h = D; p.o_stride_n = hq * D; p.o_stride_h = D;
    p.k_stride_n = hk * D; p.k_stride_h = D; p.v_stride_n = hk * D; p.v_stride_h = D;
    p.k_page_stride = p.v_page_stride = (int64_t)C * hk * D;
    p.nnz_qo = L; p.head_dim = D; p.num_qo_heads = hq; p.num_kv_heads = hk; p.group_size = hq / hk;
    p.page_size = C; p.window_left = -1; p.causal = false;
    auto off = [&](int64_t o) { return (IdType*)((char*)ibuf + o); };
    p.qo_tile_indices = off(info.qo_tile_indices_offset); p.qo_indptr = off(info.qo_indptr_offset); p.kv_indptr = off(info.kv_indptr_offset);
    p.qo_lens = off(info.qo_len_offset); p.kv_lens = off(info.kv_len_offset); p.head_indices = off(info.head_indices_offset);
    p.work_indptr = off(info.work_indptr_offset); p.batch_indices = off(info.batch_indices_offset);
    p.kv_indices = d_indices;
    p.additional_params = {}; p.additional_params.sm_scale = 1.0 / std::sqrt((double)D); p.additional_params.scale_v_scalar = 1.0;
    const bool same = info.same_schedule_for_all_heads;
    auto fa3 = [&]() { CK(same ? run_fa3<true>(p, s) : run_fa3<false>(p, s)); };
    const double ms_fa3 = time_ms(fa3, s);
    // fi
    fi_attention_params fp = fi_attention_params_default(hq, hk, D);
    fi_bsr_matrix bsr{};
    bsr.block_rows = R; bsr.block_cols = C; bsr.indptr = indptr.data(); bsr.indices = indices.data();
    size_t wsb = 0; FK(fi_block_sparse_workspace_size(ctx, &fp, L, L, R, C, &wsb));
    void* ws; CK(cudaMalloc(&ws, wsb));
    fi_plan plan; FK(fi_block_sparse_plan(ctx, &fp, L, L, &bsr, NULL, ws, wsb, &plan));
    int64_t qs[3] = {L, hq, D}, ks[3] = {L, hk, D};
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs), tk = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, ks);
    fi_tensor tv = fi_tensor_contiguous(v, FI_DTYPE_F16, 3, ks), to = fi_tensor_contiguous(o2, FI_DTYPE_F16, 3, qs);
    auto fi_run = [&]() { FK(fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &bsr, &to, NULL)); };
    const double ms_fi = time_ms(fi_run, s);
    // cross-check (rows whose block row lists nothing cannot occur: keep >= 1)
    std::vector<half> h1(L * hq * D), h2(L * hq * D);
    CK(cudaMemcpy(h1.data(), o1, h1.size() * 2, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(h2.data(), o2, h2.size() * 2, cudaMemcpyDeviceToHost));
    double md = 0;
    for (size_t i = 0; i < h1.size(); ++i) md = std::max(md, (double)std::fabs(__half2float(h1[i]) - __half2float(h2[i])));
    const double t_fa3 = flops / ms_fa3 / 1e9, t_fi = flops / ms_fi / 1e9;
    const int bi = R == 64 ? 0 : 1;
    if (r.sparsity == 0 && (R == 64 || R == 128)) dense_fa3[bi] = t_fa3, dense_fi[bi] = t_fi;
    char x_fa3[16] = "", x_fi[16] = "";  // x each library's own dense row (0 % of this block size)
    if ((R == 64 || R == 128) && dense_fa3[bi] > 0) {
      snprintf(x_fa3, sizeof x_fa3, "%.2f", t_fa3 / dense_fa3[bi]);
      snprintf(x_fi, sizeof x_fi, "%.2f", t_fi / dense_fi[bi]);
    }
    // (both fp16 over the same pairs: they agree within ~1e-3; NaN fails too)
    const bool agree = md <= 1e-2;
    disagreements += !agree;
    printf("| %dx%d random %.0f%% (%lld blocks) | %.1f | %s | %.1f | %s | %.3f | %.2e%s |\n", R, C, r.sparsity * 100,
           (long long)indices.size(), t_fa3, x_fa3, t_fi, x_fi, ms_fa3 / ms_fi, md, agree ? "" : " FAIL");
    fflush(stdout);
    cudaFree(d_indptr); cudaFree(d_indices); cudaFree(ws);
  }
  if (disagreements) fprintf(stderr, "bsr_vs_fi: %d rows where the two outputs differ by more than 1e-2\n", disagreements);
  return disagreements ? 1 : 0;
}
