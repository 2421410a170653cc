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

namespace {

struct VariantKernel {
  char name[48];  // one of variant_kernels.cu's entries (a copy: callers pass a buffer)
  cudaKernel_t kernel;
};

struct VariantImage {
  const void *image;
  cudaLibrary_t library;
  VariantKernel kernels[4];
  int num_kernels;
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

}  // namespace

extern "C" fi_status fi_cuda_variant_kernel(fi_context *ctx, const void *device_image,
                                            const char *name, int smem_bytes,
                                            const void **kernel) {
  CudaBackendState *st = state_of(ctx);
  if (!st) return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "variant images: out of memory");
  VariantImage *img = st->images;
  while (img && img->image != device_image) img = img->next;
  if (!img) {
    uint64_t bytes = 0;
    memcpy(&bytes, device_image, 8);
    const unsigned char *cubin = static_cast<const unsigned char *>(device_image) + 8;
    if (bytes < 4 || bytes > (1ull << 31) || memcmp(cubin, "\x7f" "ELF", 4) != 0)
      return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                          "params.variant.device_image is not a variant image (a uint64 "
                          "byte count, then a cubin: what fi-to-llvm=backend=cuda embeds; "
                          "found a count of %llu)",
                          (unsigned long long)bytes);
    img = static_cast<VariantImage *>(calloc(1, sizeof(VariantImage)));
    if (!img) return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "variant images: out of memory");
    cudaError_t e = cudaLibraryLoadData(&img->library, cubin, nullptr, nullptr, 0, nullptr,
                                        nullptr, 0);
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
  }
  for (int i = 0; i < img->num_kernels; ++i)
    if (strcmp(img->kernels[i].name, name) == 0) {
      *kernel = reinterpret_cast<const void *>(img->kernels[i].kernel);
      return FI_SUCCESS;
    }
  if (img->num_kernels == 4)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "variant image: more kernels than the 4 of variant_kernels.cu");
  cudaKernel_t k;
  cudaError_t e = cudaLibraryGetKernel(&k, img->library, name);
  if (e == cudaSuccess)
    e = cudaKernelSetAttributeForDevice(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        smem_bytes, ctx->device);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fi_set_error(ctx, FI_ERROR_CUDA,
                        "the variant's device image has no usable kernel %s: %s (%s); "
                        "recompile the program with this runtime's variant bitcode",
                        name, cudaGetErrorName(e), cudaGetErrorString(e));
  }
  VariantKernel &entry = img->kernels[img->num_kernels++];
  snprintf(entry.name, sizeof entry.name, "%s", name);
  entry.kernel = k;
  *kernel = reinterpret_cast<const void *>(k);
  return FI_SUCCESS;
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
