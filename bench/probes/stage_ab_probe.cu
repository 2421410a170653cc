// stage_ab_probe.cu -- two versions of the 16-bit stage pass (kernels/cuda/prefill_stage.cu)
// on the same buffers in one process: a RoPE stage of a ragged fp16 K, every output element
// compared bit for bit, then each version timed by CUDA events in alternation (a 256 MB
// write between runs flushes L2; median and p10 / p90 of 190 runs each). One process for
// both keeps the between-process noise of fi_bench out of a few-percent A / B (bench/NOTES.md,
// session 74). Each version is included in its own namespace, its launchers renamed.
//   stage_ab_probe [batch,len,kv_heads,head_dim]     default 8,2048,8,128
// FI_STAGE_A / FI_STAGE_B: the two sources (default: the repository's prefill_stage.cu for
// both, a self-comparison that must print 0 differing elements).
// Built by bench/CMakeLists.txt (target stage_ab_probe; -DFI_STAGE_PROBE_B=<file> for
// another B), or by hand from the repository:
//   nvcc -O3 -std=c++17 -arch=sm_90a --use_fast_math --expt-relaxed-constexpr
//        -Ikernels/cuda -Ikernels/src -Ikernels/include -Itest/gpu -DFI_HAVE_CUDA=1
//        '-DFI_STAGE_B="/path/to/other_prefill_stage.cu"' bench/probes/stage_ab_probe.cu
// (every header the stage sources include, first: inside the namespaces below their
// include guards make those includes no-ops, so only the sources' own code is duplicated)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "common.cuh"
#include "prefill_kernel.cuh"
#include "prefill_stage.h"

#ifndef FI_STAGE_A
#define FI_STAGE_A "prefill_stage.cu"
#endif
#ifndef FI_STAGE_B
#define FI_STAGE_B "prefill_stage.cu"
#endif

#define fi_prefill_stage_launch stage_launch
#define fi_prefill_stage_fp8_launch stage_fp8_launch
namespace version_a {
#include FI_STAGE_A
}
namespace version_b {
#include FI_STAGE_B
}
#undef fi_prefill_stage_launch
#undef fi_prefill_stage_fp8_launch

#include "probe_common.h"  // CK

int main(int argc, char **argv) {
  int batch = 8, len = 2048, heads = 8, hd = 128;
  if (argc > 1 && sscanf(argv[1], "%d,%d,%d,%d", &batch, &len, &heads, &hd) != 4) {
    fprintf(stderr, "usage: stage_ab_probe [batch,len,kv_heads,head_dim]\n");
    return 2;
  }
  if (batch < 1 || len < 1 || heads < 1 || (hd != 64 && hd != 128 && hd != 256)) {
    fprintf(stderr, "stage_ab_probe: batch, len and kv_heads must be >= 1 and head_dim 64, "
                    "128 or 256 (the stage pass's head dims)\n");
    return 2;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("stage_ab_probe: no CUDA device, skipped\n");
    return 77;
  }
  const long rows = (long)batch * len, elems = rows * heads * hd;
  std::vector<int32_t> indptr(batch + 1);
  for (int r = 0; r <= batch; ++r) indptr[r] = r * len;
  std::vector<__half> hk(elems);
  unsigned s = 12345;
  for (long i = 0; i < elems; ++i) {
    s = s * 1664525u + 1013904223u;
    hk[i] = __float2half(((s >> 8) & 0xffff) / 32768.f - 1.f);
  }
  __half *k, *out_a, *out_b;
  int32_t *ip;
  CK(cudaMalloc(&k, elems * 2));
  CK(cudaMalloc(&out_a, elems * 2));
  CK(cudaMalloc(&out_b, elems * 2));
  CK(cudaMalloc(&ip, (batch + 1) * 4));
  CK(cudaMemcpy(k, hk.data(), elems * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ip, indptr.data(), (batch + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(out_a, 0xff, elems * 2));  // different poison in each: an element left
  CK(cudaMemset(out_b, 0x7f, elems * 2));  // unwritten by both still differs
  PrefillStageArgs a;
  memset(&a, 0, sizeof a);
  a.src.k = k, a.src.v = k, a.src.kv_indptr = ip, a.src.paged = 0, a.src.page_size = 1;
  a.src.k_stride_tok = a.src.v_stride_tok = (int64_t)heads * hd;
  a.src.k_stride_head = a.src.v_stride_head = hd;
  a.src.num_kv_heads = heads, a.src.rope_rcp_scale = 1.f, a.src.rope_log2_theta = log2f(1e4f);
  a.batch = batch, a.head_dim = hd, a.kv_kind = FI_KV_SAME, a.rope = 1, a.kv_rows_cap = rows;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  PrefillStageArgs arg_a = a, arg_b = a;
  arg_a.sk = out_a, arg_b.sk = out_b;
  CK(version_a::stage_launch(arg_a, false, sms, false, 0));
  CK(version_b::stage_launch(arg_b, false, sms, false, 0));
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> ha(elems), hb(elems);
  CK(cudaMemcpy(ha.data(), out_a, elems * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), out_b, elems * 2, cudaMemcpyDeviceToHost));
  long diff = 0;
  for (long i = 0; i < elems; ++i) diff += ha[i] != hb[i];
  printf("(%d, %d, %d kv heads, head_dim %d) RoPE stage: %ld of %ld elements differ\n", batch,
         len, heads, hd, diff, elems);
  void *flush;
  const size_t flush_bytes = 256u << 20;
  CK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ta, tb;
  for (int it = 0; it < 400; ++it) {
    const bool b = it & 1;
    CK(cudaMemsetAsync(flush, it & 0xff, flush_bytes, 0));
    CK(cudaEventRecord(e0));
    CK(b ? version_b::stage_launch(arg_b, false, sms, false, 0)
         : version_a::stage_launch(arg_a, false, sms, false, 0));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (it >= 20) (b ? tb : ta).push_back(ms * 1000.f);
  }
  const double bytes = 2.0 * elems * 2;  // K read once, written once
  for (auto *t : {&ta, &tb}) {
    std::sort(t->begin(), t->end());
    const float med = (*t)[t->size() / 2];
    printf("%s: median %.1f us (p10 %.1f, p90 %.1f), %.0f GB/s\n", t == &ta ? "A" : "B", med,
           (*t)[t->size() / 10], (*t)[t->size() * 9 / 10], bytes / med / 1e3);
  }
  return diff != 0;
}
