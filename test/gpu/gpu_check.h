/* test/gpu/gpu_check.h -- GPU_CK(call): checks a CUDA runtime call and, on an error, prints
 * the call, the file and line and the error, and exits with 1. Shared by the GPU tests
 * (gpu_common.h) and the device probes (bench/probes), which need nothing else of them. */
#ifndef FI_TEST_GPU_CHECK_H
#define FI_TEST_GPU_CHECK_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define GPU_CK(call)                                                                      \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                \
              cudaGetErrorString(e_));                                                    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#endif
