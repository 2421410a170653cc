// variant_hooks.cuh -- the attention variant a program compiles into the kernels: its
// score_mod / mask_mod (fi_score_mod_fn / fi_mask_mod_fn of runtime.h, as device functions
// of these names) are defined by the program's device code, which fi-to-llvm=backend=cuda
// links with the variant kernels' LLVM bitcode (variant_kernels.cu) and compiles through
// NVPTX and ptxas into the program's own cubin. The runtime's nvcc-built kernels never
// call them (VARIANT = false), so nothing defines them there.
#ifndef FI_CUDA_VARIANT_HOOKS_CUH
#define FI_CUDA_VARIANT_HOOKS_CUH

extern "C" __device__ float fi_variant_score_mod(float score, int batch, int qo_head,
                                                 int kv_head, int q_pos, int kv_pos,
                                                 const void *captures);
extern "C" __device__ int fi_variant_mask_mod(int batch, int qo_head, int q_pos, int kv_pos,
                                              const void *captures);

#endif
