// probe_common.h -- what the device probes share: CK(call) checks a CUDA runtime call and,
// on an error, prints the call, the file and line and the error, and exits with 1.
#ifndef FI_BENCH_PROBE_COMMON_H
#define FI_BENCH_PROBE_COMMON_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
              cudaGetErrorString(e_));                                             \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

#endif
