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
// mask_mod's tile classifier (runtime.h, fi_mask_tile_fn; fi-lower-to-runtime derives it
// from the mask's body): FI_MASK_TILE_EMPTY tiles are skipped, FULL ones need no mask call.
extern "C" __device__ int fi_variant_mask_tile(int batch, int qo_head_first, int qo_head_last,
                                               int q_pos_first, int q_pos_last,
                                               int kv_pos_first, int kv_pos_last,
                                               const void *captures);

#endif
