/* kernels/cuda_unavailable/cuda_unavailable.c -- the fi_cuda_* entry points of a build
 * without the CUDA backend (-DFI_ENABLE_CUDA=OFF or no nvcc): every one fails with
 * FI_ERROR_BACKEND_UNAVAILABLE and says how to get a CUDA build. */
#include "shard.h"
#include "context.h"

#define UNAVAILABLE(ctx)                                                                   \
  fi_set_error((ctx), FI_ERROR_BACKEND_UNAVAILABLE,                                        \
               "the CUDA backend was not built: configure with -DFI_ENABLE_CUDA=ON on a "  \
               "machine with nvcc, or use FI_BACKEND_HOST")

int fi_cuda_available(void) { return 0; }

fi_status fi_cuda_context_init(fi_context *ctx, fi_target *target) {
  (void)target;
  return UNAVAILABLE(ctx);
}
void fi_cuda_context_release(fi_context *ctx) { (void)ctx; }

fi_status fi_cuda_upload(fi_context *ctx, void *device_dst, const void *host_src,
                         size_t bytes) {
  (void)device_dst, (void)host_src, (void)bytes;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_check_supported(fi_context *ctx, fi_op_family family,
                                  const fi_attention_params *params, const fi_tiles *tiles) {
  (void)family, (void)params, (void)tiles;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_decode_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                             const fi_paged_kv_cache *kv, const fi_page_table *pages,
                             fi_tensor *o, fi_tensor *lse) {
  (void)plan, (void)q, (void)kv, (void)pages, (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_paged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                    const int32_t *qo_indptr, const fi_paged_kv_cache *kv,
                                    const fi_page_table *pages, const fi_custom_mask *mask,
                                    fi_tensor *o, fi_tensor *lse) {
  (void)plan, (void)q, (void)qo_indptr, (void)kv, (void)pages, (void)mask, (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_split_shared_prefix(fi_context *ctx, int32_t batch, int32_t page_size,
                                      const fi_page_table *pages, int32_t *prefix_qo_indptr,
                                      int32_t *prefix_indptr,
                                      int32_t *prefix_indices, int32_t *prefix_last_page_len,
                                      int32_t *suffix_indptr, int32_t *suffix_indices,
                                      int32_t *suffix_last_page_len) {
  (void)batch, (void)page_size, (void)pages, (void)prefix_indptr, (void)prefix_indices;
  (void)prefix_qo_indptr;
  (void)prefix_last_page_len, (void)suffix_indptr, (void)suffix_indices;
  (void)suffix_last_page_len;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_block_sparse_paged_run(fi_context *ctx, const fi_plan *plan,
                                         const fi_tensor *q, const fi_paged_kv_cache *kv,
                                         const fi_page_table *pages, fi_tensor *o,
                                         fi_tensor *lse) {
  (void)plan, (void)q, (void)kv, (void)pages, (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_block_sparse_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                   const fi_tensor *k, const fi_tensor *v, fi_tensor *o,
                                   fi_tensor *lse) {
  (void)plan, (void)q, (void)k, (void)v, (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_ragged_prefill_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *q,
                                     const fi_tensor *k, const fi_tensor *v,
                                     const int32_t *qo_indptr, const int32_t *kv_indptr,
                                     const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse) {
  (void)plan, (void)q, (void)k, (void)v, (void)qo_indptr, (void)kv_indptr, (void)mask;
  (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_merge_state(fi_context *ctx, const fi_tensor *v_a, const fi_tensor *s_a,
                              const fi_tensor *v_b, const fi_tensor *s_b, fi_tensor *v_out,
                              fi_tensor *s_out) {
  (void)v_a, (void)s_a, (void)v_b, (void)s_b, (void)v_out, (void)s_out;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_prefill_merge_run(fi_context *ctx, const fi_plan *plan,
                                    const fi_tensor *v_other, const fi_tensor *s_other,
                                    fi_tensor *o, fi_tensor *lse) {
  (void)plan, (void)v_other, (void)s_other, (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_merge_states(fi_context *ctx, const fi_tensor *v, const fi_tensor *s,
                               fi_tensor *v_out, fi_tensor *s_out) {
  (void)v, (void)s, (void)v_out, (void)s_out;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_append_paged_kv_run(fi_context *ctx, const fi_plan *plan, const fi_tensor *k,
                                      const fi_tensor *v, const int32_t *append_indptr,
                                      fi_paged_kv_cache *kv, const fi_page_table *pages) {
  (void)plan, (void)k, (void)v, (void)append_indptr, (void)kv, (void)pages;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_plan_device(fi_context *ctx, const fi_cuda_device_plan_problem *pb,
                              const fi_cuda_device_plan_caps *caps, const fi_plan *plan) {
  (void)pb, (void)caps, (void)plan;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_download_sync(fi_context *ctx, void *host_dst, const void *device_src,
                                size_t bytes) {
  (void)host_dst, (void)device_src, (void)bytes;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_check_stream(fi_context *ctx, void *stream) {
  (void)stream;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_shard_merge(fi_context *ctx, const fi_plan *plan, const fi_shard_gathered *g,
                              fi_tensor *o, fi_tensor *lse) {
  (void)plan, (void)g, (void)o, (void)lse;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_shard_agree_exchange(fi_context *ctx, fi_comm *comm, const void *send_host,
                                       void *recv_host, size_t bytes) {
  (void)comm, (void)send_host, (void)recv_host, (void)bytes;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_shard_mark(fi_context *ctx, const fi_plan *plan, int32_t status) {
  (void)plan, (void)status;
  return UNAVAILABLE(ctx);
}

fi_status fi_cuda_comm_synchronize(fi_context *ctx) { return UNAVAILABLE(ctx); }
