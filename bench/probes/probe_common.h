// probe_common.h -- what the device probes share: CK(call), the GPU tests' GPU_CK
// (test/gpu/gpu_check.h: a CUDA runtime call checked, the call, file, line and error
// printed, exit 1 on an error).
#ifndef FI_BENCH_PROBE_COMMON_H
#define FI_BENCH_PROBE_COMMON_H

#include "gpu_check.h"

#define CK(call) GPU_CK(call)

#endif
