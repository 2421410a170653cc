// fp8_vs_fi.cu -- FlashInfer's fp8 (e4m3) sm90 ragged causal prefill and fi's fp8 attention
// on the same e4m3 inputs, in one binary: TFLOP/s (exact causal pairs) and the largest
// output difference. The fp8 counterpart of ../shared/anchor/fa3_vs_fi.cu, built by
// build_fp8_vs_fi.sh beside it against the FlashInfer headers that the anchor's build.sh
// extracts (never committed) and libfi_runtime.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <flashinfer/attention/hopper/quantization/prefill_sm90.cuh>
#include <flashinfer/attention/hopper/variants.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/cutlass_utils.cuh>

extern "C" {
#include "fi/runtime.h"
}
#include "peer_common.cuh"

using namespace flashinfer;
using DTypeQ = cutlass::float_e4m3_t;
using DTypeKV = cutlass::float_e4m3_t;
using DTypeO = cutlass_dtype_t<half>;
using IdType = int32_t;

struct RaggedParams {  // the fp16 anchor's argument block with e4m3 inputs
  using DTypeQ = ::DTypeQ;
  using DTypeKV = ::DTypeKV;
  using DTypeO = ::DTypeO;
  using IdType = ::IdType;
  DTypeQ* q_ptr; DTypeKV* k_ptr; DTypeKV* v_ptr; DTypeO* o_ptr; float* lse_ptr;
  IdType* qo_tile_indices; IdType* qo_indptr; IdType* kv_indptr; IdType* qo_lens; IdType* kv_lens;
  IdType* head_indices; IdType* work_indptr; IdType* batch_indices;
  struct AdditionalParams {
    float* maybe_scale_q; float* maybe_scale_k; float* maybe_scale_v;
    float scale_q_scalar, scale_k_scalar, scale_v_scalar;
    double sm_scale; double logits_soft_cap;
  } additional_params;
  int64_t q_stride_n, k_stride_n, v_stride_n, o_stride_n, q_stride_h, k_stride_h, v_stride_h, o_stride_h;
  int64_t nnz_qo, nnz_kv;
  int head_dim, num_qo_heads, num_kv_heads, group_size, window_left;
  bool causal;
};

// Finite e4m3 codes of magnitude 1/8 .. 1.875 with random signs.
__global__ void fill_e4m3(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995; x ^= x >> 15;
    p[i] = (uint8_t)(((x >> 8) & 0x80) | ((4 + (x & 3)) << 3) | ((x >> 4) & 7));
  }
}

// Usage: fp8_vs_fi [batch,len,qo_heads,kv_heads ...] (e4m3 q, k, v; f16 o; head_dim 128;
// causal; ragged, every request of the same length).
int main(int argc, char** argv) {
  struct Row { int b, L, hq, hk; };
  std::vector<Row> rows;
  for (int i = 1; i < argc; ++i) {
    Row r{};
    if (sscanf(argv[i], "%d,%d,%d,%d", &r.b, &r.L, &r.hq, &r.hk) != 4) { fprintf(stderr, "bad row '%s': want b,len,qo_heads,kv_heads\n", argv[i]); return 2; }
    rows.push_back(r);
  }
  if (rows.empty()) rows = {{1, 8192, 32, 8}, {8, 2048, 32, 8}, {32, 512, 32, 8}, {4, 4096, 32, 32}, {1, 16384, 32, 8}};
  const int D = 128;
  cudaStream_t s; CK(cudaStreamCreate(&s));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("GPU: %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  fi_context* ctx = nullptr;
  if (fi_context_create(FI_BACKEND_CUDA, &ctx) != FI_SUCCESS) { fprintf(stderr, "fi ctx: %s\n", fi_last_error(NULL)); return 1; }
  FK(fi_context_set_stream(ctx, s));
  size_t fbytes = 256 << 20, ibytes = 64 << 20;
  void *fbuf, *ibuf, *hbuf;
  CK(cudaMalloc(&fbuf, fbytes)); CK(cudaMalloc(&ibuf, ibytes)); CK(cudaMallocHost(&hbuf, ibytes));
  printf("| fp8 e4m3 causal, hd 128 | FlashInfer fp8 sm90 TFLOP/s | fi TFLOP/s | fi / FlashInfer | fi variant | max |o_fi - o_fls| |\n|---|---|---|---|---|---|\n");
  for (auto r : rows) {
    int64_t nnz = (int64_t)r.b * r.L;
    uint8_t *q, *k, *v; half *o1, *o2;
    CK(cudaMalloc(&q, nnz * r.hq * D)); CK(cudaMalloc(&k, nnz * r.hk * D)); CK(cudaMalloc(&v, nnz * r.hk * D));
    CK(cudaMalloc(&o1, nnz * r.hq * D * 2)); CK(cudaMalloc(&o2, nnz * r.hq * D * 2));
    fill_e4m3<<<1024, 256, 0, s>>>(q, nnz * r.hq * D, 1); fill_e4m3<<<1024, 256, 0, s>>>(k, nnz * r.hk * D, 2);
    fill_e4m3<<<1024, 256, 0, s>>>(v, nnz * r.hk * D, 3);
    std::vector<IdType> qi(r.b + 1), kl(r.b);
    for (int i = 0; i <= r.b; ++i) qi[i] = i * r.L;
    for (int i = 0; i < r.b; ++i) kl[i] = r.L;
    IdType* d_ind; CK(cudaMalloc(&d_ind, (r.b + 1) * 4)); CK(cudaMemcpy(d_ind, qi.data(), (r.b + 1) * 4, cudaMemcpyHostToDevice));
    double pairs = 0;
    for (int64_t i = 0; i < r.L; ++i) pairs += (double)(i + 1);
    pairs *= r.b;
    const double flops = 4.0 * D * r.hq * pairs;
    // FlashInfer fp8 sm90
    PrefillPlanSM90Info info;
    CK(PrefillSM90Plan<IdType>(fbuf, fbytes, ibuf, hbuf, ibytes, info, qi.data(), qi.data(), kl.data(), nnz, r.b, r.hq, r.hk, D, D, 1, true, false, 2, s));
    RaggedParams p{}; p.q_ptr = (DTypeQ*)q; p.k_ptr = (DTypeKV*)k; p.v_ptr = (DTypeKV*)v; p.o_ptr = (DTypeO*)o1; p.lse_ptr = nullptr;
    p.q_stride_n = r.hq * D; p.q_stride_h = D; p.o_stride_n = r.hq * D; p.o_stride_h = D;
    p.k_stride_n = r.hk * D; p.k_stride_h = D; p.v_stride_n = r.hk * D; p.v_stride_h = D;
    p.nnz_qo = nnz; p.nnz_kv = nnz; p.head_dim = D; p.num_qo_heads = r.hq; p.num_kv_heads = r.hk; p.group_size = r.hq / r.hk;
    p.window_left = -1; p.causal = true;
    auto off = [&](int64_t o) { return (IdType*)((char*)ibuf + o); };
    p.qo_tile_indices = off(info.qo_tile_indices_offset); p.qo_indptr = off(info.qo_indptr_offset); p.kv_indptr = off(info.kv_indptr_offset);
    p.qo_lens = off(info.qo_len_offset); p.kv_lens = off(info.kv_len_offset); p.head_indices = off(info.head_indices_offset);
    p.work_indptr = off(info.work_indptr_offset); p.batch_indices = off(info.batch_indices_offset);
    p.additional_params = {}; p.additional_params.sm_scale = 1.0 / std::sqrt((double)D);
    p.additional_params.scale_q_scalar = p.additional_params.scale_k_scalar = p.additional_params.scale_v_scalar = 1.f;
    const bool same = info.same_schedule_for_all_heads;
    auto fls = [&]() {
      cudaError_t e = same ? BatchFP8PrefillWithRaggedKVCacheDispatched<128, MaskMode::kCausal, false, true, DefaultFP8Attention, RaggedParams>(p, false, s)
                           : BatchFP8PrefillWithRaggedKVCacheDispatched<128, MaskMode::kCausal, false, false, DefaultFP8Attention, RaggedParams>(p, false, s);
      CK(e);
    };
    const double ms_fls = time_ms(fls, s);
    // fi: fp8 attention (a prefill stage for V^T)
    fi_attention_params fp = fi_attention_params_default(r.hq, r.hk, D);
    fp.mask_mode = FI_MASK_CAUSAL; fp.q_dtype = FI_DTYPE_E4M3; fp.kv_dtype = FI_DTYPE_E4M3; fp.o_dtype = FI_DTYPE_F16;
    size_t stb = 0; FK(fi_prefill_stage_size(ctx, &fp, 0, nnz, nnz, &stb));
    void* st; CK(cudaMalloc(&st, stb)); FK(fi_context_set_prefill_stage(ctx, st, stb));
    size_t wsb = 0; FK(fi_prefill_workspace_size(ctx, &fp, r.b, nnz, &wsb));
    void* ws; CK(cudaMalloc(&ws, wsb));
    fi_plan plan; FK(fi_ragged_prefill_plan(ctx, &fp, r.b, qi.data(), qi.data(), NULL, NULL, ws, wsb, &plan));
    int64_t qs[3] = {nnz, r.hq, D}, ks[3] = {nnz, r.hk, D};
    fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_E4M3, 3, qs), tk = fi_tensor_contiguous(k, FI_DTYPE_E4M3, 3, ks);
    fi_tensor tv = fi_tensor_contiguous(v, FI_DTYPE_E4M3, 3, ks), to = fi_tensor_contiguous(o2, FI_DTYPE_F16, 3, qs);
    auto fi_run = [&]() { FK(fi_ragged_prefill_run(ctx, &plan, &tq, &tk, &tv, d_ind, d_ind, NULL, &to, NULL)); };
    const double ms_fi = time_ms(fi_run, s);
    char vname[64]; fi_tiles_name(plan.tiles, 0, vname, sizeof vname);
    std::vector<half> h1(nnz * r.hq * D), h2(nnz * r.hq * D);
    CK(cudaMemcpy(h1.data(), o1, h1.size() * 2, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(h2.data(), o2, h2.size() * 2, cudaMemcpyDeviceToHost));
    double md = 0; for (size_t i = 0; i < h1.size(); ++i) md = std::max(md, (double)std::fabs(__half2float(h1[i]) - __half2float(h2[i])));
    printf("| (%d, %d, %d, %d) | %.1f | %.1f | %.3f | %s | %.2e |\n", r.b, r.L, r.hq, r.hk,
           flops / ms_fls / 1e9, flops / ms_fi / 1e9, ms_fls / ms_fi, vname, md);
    fflush(stdout);
    FK(fi_context_set_prefill_stage(ctx, NULL, 0));
    cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o1); cudaFree(o2); cudaFree(d_ind); cudaFree(ws); cudaFree(st);
  }
  return 0;
}
