// variant_images.cu -- the device images of attention variants (runtime.h, fi_variant): a
// cubin fi-to-llvm=backend=cuda made by linking a program's score_mod / mask_mod with the
// variant kernels (variant/variant_kernels.cu), loaded with the runtime API's library
// calls the first time a context runs it, and kept with the context until it is destroyed
// (a program's image is static data: its address identifies it). A context is used by one
// thread at a time (runtime.h), so the list needs no lock.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "cuda_backend.h"
#include "internal.h"
#include "prefill_variants.cuh"

namespace {

// A variant image and the kernels of it loaded so far, by slot (kernel_slot).
struct VariantImage {
  const void *image;
  cudaLibrary_t library;
  cudaKernel_t kernels[16];  // null until first used
  VariantImage *next;
};

// What the CUDA backend hangs on ctx->backend_state.
struct CudaBackendState {
  VariantImage *images;
};

CudaBackendState *state_of(fi_context *ctx) {
  if (!ctx->backend_state) ctx->backend_state = calloc(1, sizeof(CudaBackendState));
  return static_cast<CudaBackendState *>(ctx->backend_state);
}

// The entries of variant_kernels.cu: prefill (slots 0-3), decode without and with RoPE
// (4-7, 8-11) and block-sparse (12-15), each head_dim 64 / 128 x f16 / bf16.
int kernel_slot(int kind, int head_dim, int bf16) {
  return 4 * kind + (head_dim == 128 ? 2 : 0) + (bf16 ? 1 : 0);
}

fi_status load_image(fi_context *ctx, CudaBackendState *st, const void *device_image,
                     VariantImage **out) {
  uint64_t bytes = 0;
  memcpy(&bytes, device_image, 8);
  const unsigned char *cubin = static_cast<const unsigned char *>(device_image) + 8;
  if (bytes < 4 || bytes > (1ull << 31) || memcmp(cubin, "\x7f" "ELF", 4) != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "params.variant.device_image is not a variant image (a uint64 "
                        "byte count, then a cubin: what fi-to-llvm=backend=cuda embeds; "
                        "found a count of %llu)",
                        (unsigned long long)bytes);
  VariantImage *img = static_cast<VariantImage *>(calloc(1, sizeof(VariantImage)));
  if (!img) return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "variant images: out of memory");
  cudaError_t e =
      cudaLibraryLoadData(&img->library, cubin, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess) {
    free(img);
    cudaGetLastError();
    return fi_set_error(ctx, FI_ERROR_CUDA,
                        "loading a variant's device image (%llu bytes of cubin) failed: %s "
                        "(%s); was it compiled for this GPU (fi-to-llvm's "
                        "variant-chip, sm_90a by default)?",
                        (unsigned long long)bytes, cudaGetErrorName(e), cudaGetErrorString(e));
  }
  img->image = device_image;
  img->next = st->images;
  st->images = img;
  *out = img;
  return FI_SUCCESS;
}

// kind 0: prefill, 1: decode, 2: decode with RoPE, 3: block-sparse.
fi_status variant_kernel(fi_context *ctx, const void *device_image, int kind, int head_dim,
                         int bf16, const void **kernel) {
  CudaBackendState *st = state_of(ctx);
  if (!st) return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "variant images: out of memory");
  VariantImage *img = st->images;
  while (img && img->image != device_image) img = img->next;
  fi_status s;
  if (!img && (s = load_image(ctx, st, device_image, &img)) != FI_SUCCESS) return s;
  cudaKernel_t &k = img->kernels[kernel_slot(kind, head_dim, bf16)];
  if (!k) {
    char name[64];
    const char *prefix = kind == 0   ? FI_VARIANT_KERNEL_PREFIX
                         : kind == 3 ? FI_VARIANT_BLOCK_SPARSE_KERNEL_PREFIX
                                     : FI_VARIANT_DECODE_KERNEL_PREFIX;
    snprintf(name, sizeof name, "%s%d_%s%s", prefix, head_dim, bf16 ? "bf16" : "f16",
             kind == 2 ? "_rope" : "");
    // (decode: the launcher sizes the ring to the device's shared memory per block)
    const int smem = kind == 1 || kind == 2 ? ctx->target.smem_per_block
                     : head_dim == 64       ? fi_prefill_ws_smem_hd64()
                                            : fi_prefill_ws_smem_hd128();
    cudaError_t e = cudaLibraryGetKernel(&k, img->library, name);
    if (e == cudaSuccess)
      e = cudaKernelSetAttributeForDevice(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          smem, ctx->device);
    if (e != cudaSuccess) {
      k = nullptr;
      cudaGetLastError();
      return fi_set_error(ctx, FI_ERROR_CUDA,
                          "the variant's device image has no usable kernel %s: %s (%s); "
                          "recompile the program with this runtime's variant bitcode",
                          name, cudaGetErrorName(e), cudaGetErrorString(e));
    }
  }
  *kernel = reinterpret_cast<const void *>(k);
  return FI_SUCCESS;
}

}  // namespace

extern "C" fi_status fi_cuda_variant_kernel(fi_context *ctx, const void *device_image,
                                            int head_dim, int bf16, int block_sparse,
                                            const void **kernel) {
  return variant_kernel(ctx, device_image, block_sparse ? 3 : 0, head_dim, bf16, kernel);
}

extern "C" fi_status fi_cuda_variant_decode_kernel(fi_context *ctx, const void *device_image,
                                                   int head_dim, int bf16, int rope,
                                                   const void **kernel) {
  return variant_kernel(ctx, device_image, rope ? 2 : 1, head_dim, bf16, kernel);
}

// Unloads the context's variant images (fi_context_destroy).
void fi_cuda_release_variant_images(fi_context *ctx) {
  CudaBackendState *st = static_cast<CudaBackendState *>(ctx->backend_state);
  if (!st) return;
  for (VariantImage *img = st->images; img;) {
    VariantImage *next = img->next;
    cudaLibraryUnload(img->library);
    free(img);
    img = next;
  }
  free(st);
  ctx->backend_state = NULL;
}
