// Placeholder until the tensor-core prefill kernels land (issue 5): the CUDA backend
// reports prefill as unsupported rather than computing anything.
#include "backend.h"

extern "C" fi_status fi_cuda_prefill_check_supported(fi_context *ctx, fi_op_family family,
                                                     const fi_attention_params *params,
                                                     const fi_tiles *tiles) {
  (void)family; (void)params; (void)tiles;
  return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                      "prefill: the CUDA backend has no prefill kernels yet; use the host backend");
}

extern "C" fi_status fi_cuda_paged_prefill_run(fi_context *ctx, const fi_plan *, const fi_tensor *,
                                               const int32_t *, const fi_paged_kv_cache *,
                                               const fi_page_table *, const fi_custom_mask *,
                                               fi_tensor *, fi_tensor *) {
  return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "paged prefill: no CUDA kernel yet");
}

extern "C" fi_status fi_cuda_ragged_prefill_run(fi_context *ctx, const fi_plan *, const fi_tensor *,
                                                const fi_tensor *, const fi_tensor *,
                                                const int32_t *, const int32_t *,
                                                const fi_custom_mask *, fi_tensor *, fi_tensor *) {
  return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "ragged prefill: no CUDA kernel yet");
}
