/* kernels/cuda/cuda_backend.h -- declarations shared by the CUDA backend's .cu files (not
 * part of the runtime contract). */
#ifndef FI_CUDA_BACKEND_H
#define FI_CUDA_BACKEND_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device copy of the plan's unit counts ([0] work units, [1] merge units) in the
 * workspace, written by the planner's upload: kernels read them so that a CUDA graph
 * captured with one plan stays correct after re-planning into the same workspace. NULL
 * when the plan carries none (then the host counts are used). */
const int32_t *fi_cuda_plan_device_counts(const fi_plan *plan);

/* The split-KV merge of a plan's merge units into o / lse (lse may be NULL). */
fi_status fi_cuda_merge_partials(fi_context *ctx, const fi_plan *plan,
                                 const int32_t *device_num_merge_units, fi_tensor *o,
                                 fi_tensor *lse);

/* Sets ctx->merge_wave_blocks_per_sm (at context creation, with the device current). */
void fi_cuda_merge_prepare(fi_context *ctx);

/* Decode support check (dtype, head_dim, kv_tile); FI_ERROR_UNSUPPORTED with a message. */
fi_status fi_cuda_decode_supported(fi_context *ctx, const fi_attention_params *p,
                                   const fi_tiles *tiles);

/* The driver's cuTensorMapEncodeTiled (a PFN_cuTensorMapEncodeTiled_v12000), or NULL when
 * the driver has none; resolved once at context creation (context.cu). */
void *fi_cuda_tensor_map_encoder(void);

/* Defined in prefill.cu (the prefill kernels' own support check). */
fi_status fi_cuda_prefill_check_supported(fi_context *ctx, fi_op_family family,
                                          const fi_attention_params *params,
                                          const fi_tiles *tiles);

/* The prefill kernel (head_dim 64 / 128, f16 / bf16 q; block_sparse: its block-sparse
 * instance) of a variant's device image (runtime.h, fi_variant: a uint64 byte count, then a
 * cubin), loaded once per context (variant_images.cu) with the warp-specialised kernel's
 * shared memory allowed; the kernel as a launchable function pointer. */
fi_status fi_cuda_variant_kernel(fi_context *ctx, const void *device_image, int head_dim,
                                 int bf16, int block_sparse, const void **kernel);
/* The same for the warp-specialised decode kernel (decode_tws.cuh; rope: its RoPE
 * instance), with the device's shared memory per block allowed. */
fi_status fi_cuda_variant_decode_kernel(fi_context *ctx, const void *device_image,
                                        int head_dim, int bf16, int rope, const void **kernel);

#ifdef __cplusplus
}
#endif
#endif
