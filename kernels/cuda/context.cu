// kernels/cuda/context.cu -- the CUDA backend's context hooks: device facts for the
// heuristics (fi_target from cudaGetDeviceProperties), the planner's upload, and the
// backend's support check per op family. No kernels here.
#include "common.cuh"
#include "cuda_backend.h"

cudaError_t fi_decode_prepare_f16(int smem_limit);
cudaError_t fi_decode_prepare_bf16(int smem_limit);
cudaError_t fi_prefill_ws_prepare();

// cuTensorMapEncodeTiled from the driver (through the runtime: no libcuda link), or NULL.
// Resolved when a context is created, not on a run that may be inside a graph capture.
extern "C" void *fi_cuda_tensor_map_encoder(void) {
  static void *const fn = [] {
    void *f = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      f = NULL;
    }
    return f;
  }();
  return fn;
}

extern "C" int fi_cuda_available(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

extern "C" fi_status fi_cuda_context_init(fi_context *ctx, fi_target *target) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0)
    return fi_set_error(ctx, FI_ERROR_BACKEND_UNAVAILABLE,
                        "no CUDA device: cudaGetDeviceCount says %s; use FI_BACKEND_HOST",
                        err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
  int dev = 0;
  err = cudaGetDevice(&dev);
  cudaDeviceProp prop;
  if (err == cudaSuccess) err = cudaGetDeviceProperties(&prop, dev);
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "cudaGetDeviceProperties failed: %s",
                        cudaGetErrorString(err));
  if (prop.major < 8)
    return fi_set_error(ctx, FI_ERROR_BACKEND_UNAVAILABLE,
                        "device %d (%s) is sm_%d%d: the fi kernels need sm_80 or newer",
                        dev, prop.name, prop.major, prop.minor);
  ctx->device = dev;
  // Kernel attributes are set here, once, so that no run (maybe inside a graph capture)
  // has to.
  err = fi_decode_prepare_f16((int)prop.sharedMemPerBlockOptin);
  if (err == cudaSuccess) err = fi_decode_prepare_bf16((int)prop.sharedMemPerBlockOptin);
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "setting the decode kernels' shared-memory limit "
                        "failed: %s", cudaGetErrorString(err));
  (void)fi_cuda_tensor_map_encoder();  // decode's and prefill's tensor maps
  target->sm_version = prop.major * 10 + prop.minor;
#ifdef FI_CUDA_HAS_SM90A
  ctx->wgmma_available = target->sm_version == 90;
  if (ctx->wgmma_available && (err = fi_prefill_ws_prepare()) != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "setting the warp-specialised prefill kernel's "
                        "shared-memory limit failed: %s", cudaGetErrorString(err));
#else
  ctx->wgmma_available = 0;  // no sm_90a code in this build: no Hopper tier
#endif
  target->sm_count = prop.multiProcessorCount;
  target->smem_per_block = (int32_t)prop.sharedMemPerBlockOptin;
  ctx->smem_per_sm = (int32_t)prop.sharedMemPerMultiprocessor;
  // Peak DRAM bandwidth: clock (kHz, double data rate) x bus width (bits) / 8, per SM.
  int mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, ctx->device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ctx->device) ==
          cudaSuccess &&
      prop.multiProcessorCount > 0)
    target->dram_gbps_per_sm = (int32_t)(2.0 * mem_khz * 1e3 * bus_bits / 8.0 / 1e9 /
                                             prop.multiProcessorCount +
                                         0.5);
  else
    target->dram_gbps_per_sm = 0;
  ctx->smem_reserved_per_block = (int32_t)prop.reservedSharedMemPerBlock;
  ctx->l2_bytes = prop.l2CacheSize;
  fi_cuda_merge_prepare(ctx);
  return FI_SUCCESS;
}

extern "C" fi_status fi_cuda_check_stream(fi_context *ctx, void *stream) {
  if (!stream) return FI_SUCCESS;  // the legacy default stream of the current device
  int dev = -1;
  cudaError_t err = cudaStreamGetDevice((cudaStream_t)stream, &dev);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_stream: the stream is not a valid CUDA stream (%s)",
                        cudaGetErrorString(err));
  }
  if (dev != ctx->device)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_stream: the stream belongs to device %d but the "
                        "context was created on device %d; create a context per device "
                        "(cudaSetDevice before fi_context_create)", dev, ctx->device);
  return FI_SUCCESS;
}

void fi_cuda_release_variant_images(fi_context *ctx);  // variant_images.cu
extern "C" void fi_cuda_context_release(fi_context *ctx) {
  fi_cuda_release_variant_images(ctx);
  if (ctx->shard_scratch) cudaFree(ctx->shard_scratch);
  ctx->shard_scratch = nullptr;
}

extern "C" fi_status fi_cuda_upload(fi_context *ctx, void *device_dst, const void *host_src,
                                    size_t bytes) {
  if (bytes == 0) return FI_SUCCESS;
  // From pageable memory the copy is staged before the call returns: it waits for the
  // stream's earlier work (a host plan therefore cannot run ahead of the device).
  ++ctx->sync_count;
  cudaError_t err = cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice,
                                    fi_cuda_stream(ctx));
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA,
                        "uploading the plan (%zu bytes) into the workspace failed: %s; is "
                        "the workspace device memory of at least the size "
                        "fi_*_workspace_size returned?", bytes, cudaGetErrorString(err));
  return FI_SUCCESS;
}

extern "C" fi_status fi_cuda_download_sync(fi_context *ctx, void *host_dst,
                                           const void *device_src, size_t bytes) {
  cudaStream_t st = fi_cuda_stream(ctx);
  ++ctx->sync_count;
  cudaError_t err = cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, st);
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "reading %zu bytes of the workspace back failed: %s",
                        bytes, cudaGetErrorString(err));
  return FI_SUCCESS;
}

extern "C" fi_status fi_cuda_check_supported(fi_context *ctx, fi_op_family family,
                                             const fi_attention_params *params,
                                             const fi_tiles *tiles) {
  switch (family) {
    case FI_OP_DECODE: return fi_cuda_decode_supported(ctx, params, tiles);
    case FI_OP_PAGED_PREFILL:
    case FI_OP_RAGGED_PREFILL:
    case FI_OP_BLOCK_SPARSE:
      return fi_cuda_prefill_check_supported(ctx, family, params, tiles);
    case FI_OP_APPEND_PAGED_KV: return FI_SUCCESS;
  }
  return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "unknown op family %d", (int)family);
}

// planner.c keeps the current plan's counts at the workspace base (see its layout note).
extern "C" const int32_t *fi_cuda_plan_device_counts(const fi_plan *plan) {
  if (!plan->workspace) return NULL;
  if (plan->family != FI_OP_DECODE && plan->family != FI_OP_PAGED_PREFILL &&
      plan->family != FI_OP_RAGGED_PREFILL && plan->family != FI_OP_BLOCK_SPARSE)
    return NULL;
  return (const int32_t *)plan->workspace;
}
