// peer_common.cuh -- what the peer programs here share: error checks that exit (CK for CUDA
// calls, FK for fi calls on the `ctx` in scope) and the timer (median of 50 event-timed runs
// after 50 ms of warm-up).
#ifndef FI_BENCH_PEER_COMMON_CUH
#define FI_BENCH_PEER_COMMON_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define FK(x) do { fi_status s_ = (x); if (s_ != FI_SUCCESS) { fprintf(stderr, "fi: %s\n", fi_last_error(ctx)); exit(1); } } while (0)

template <typename F> static double time_ms(F f, cudaStream_t s) {
  auto t0 = std::chrono::steady_clock::now();
  do { f(); CK(cudaStreamSynchronize(s)); } while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < 50);
  const int n = 50; std::vector<cudaEvent_t> ev(2 * n);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < n; ++i) { CK(cudaEventRecord(ev[2 * i], s)); f(); CK(cudaEventRecord(ev[2 * i + 1], s)); }
  CK(cudaStreamSynchronize(s));
  std::vector<float> t(n);
  for (int i = 0; i < n; ++i) CK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end()); return t[n / 2];
}

#endif
