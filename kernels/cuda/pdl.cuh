// kernels/cuda/pdl.cuh -- programmatic dependent launch: the device-side rule every kernel
// of the runtime keeps (pdl_enter) and the host-side launch that asks for it (launch_on).
// Shared by common.cuh and the prefill kernels (which do not include common.cuh).
#ifndef FI_CUDA_PDL_CUH
#define FI_CUDA_PDL_CUH

#include <cuda_runtime.h>

namespace fi {

// Programmatic dependent launch (PDL). The runtime launches every kernel with programmatic
// stream serialization (fi_cuda_launch, on sm_90 unless the context's `pdl` knob is 0), so a
// grid is launched while the kernel before it on the stream is still running and the launch
// latency between the kernels of a step (plan, append, decode, merge per layer) overlaps
// their tails. One rule makes that safe, and every kernel keeps it with its first statement,
// in every thread, before any early exit: pdl_enter waits for the grids before it (complete,
// their writes visible), then lets the next grid launch. Waiting before releasing makes the
// order transitive: a grid that launches finds every earlier grid of the stream complete but
// the one right before it. Without the attribute (other GPUs, the knob off, a kernel
// launched with <<<>>>) both instructions are no-ops.
__device__ __forceinline__ void pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Launches `kernel` like kernel<<<grid, block, smem, stream>>>(args), with programmatic
// stream serialization when `pdl` (pdl_enter above). Check the launch with
// fi_cuda_check_launch (or the returned error) as after <<<>>>.
template <typename... Params, typename... Args>
inline cudaError_t launch_on(cudaStream_t stream, bool pdl, dim3 grid, dim3 block, size_t smem,
                             void (*kernel)(Params...), Args &&...args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<Args &&>(args)...);
}

}  // namespace fi

#endif  // FI_CUDA_PDL_CUH
