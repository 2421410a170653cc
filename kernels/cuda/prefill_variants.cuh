// prefill_variants.cuh -- the set of compiled prefill tile variants and the switch that
// launches one. Each prefill_hd*_*.cu file stamps out the variants of one (head_dim, dtype)
// pair so that the builds of the six files run in parallel.
#ifndef FI_CUDA_PREFILL_VARIANTS_CUH
#define FI_CUDA_PREFILL_VARIANTS_CUH

#include <cuda_runtime.h>

#include "fi/cuda_variants.h"

#include "prefill_params.h"

// (query tile, KV tile) pairs compiled for every head_dim and dtype: the shared list of
// fi/cuda_variants.h, so a forced tile outside it is refused at plan (and compile) time.
#define FI_PREFILL_TILE_LIST(X) FI_CUDA_PREFILL_TILE_LIST(X)

// Launches the variant; cudaErrorInvalidConfiguration when (q_tile, kv_tile) is not compiled.
// kv_kind: FI_KV_SAME / FI_KV_E4M3 / FI_KV_E5M2. extras: soft cap, ALiBi, custom mask or
// sliding window in use (fp8 always takes the extras kernel).
typedef cudaError_t (*fi_prefill_launch_fn)(const PrefillParams &p, int q_tile, int kv_tile,
                                            int kv_kind, bool extras, int num_work_units,
                                            cudaStream_t stream);

#define FI_PREFILL_DECLARE(HD, NAME)                                                      \
  cudaError_t fi_prefill_launch_hd##HD##_##NAME(const PrefillParams &p, int q_tile,         \
                                                 int kv_tile, int kv_kind, bool extras,     \
                                                 int num_work_units, cudaStream_t stream);
FI_PREFILL_DECLARE(64, f16)
FI_PREFILL_DECLARE(64, bf16)
FI_PREFILL_DECLARE(128, f16)
FI_PREFILL_DECLARE(128, bf16)
FI_PREFILL_DECLARE(256, f16)
FI_PREFILL_DECLARE(256, bf16)

#ifdef FI_PREFILL_DEFINE_LAUNCHER
#include "prefill_kernel.cuh"
#define FI_PREFILL_CASE(Q, KV)                                                               \
  if (q_tile == Q && kv_tile == KV) {                                                        \
    if (kv_kind == FI_KV_E4M3)                                                               \
      return fi_prefill::launch_prefill<HD_, Q, KV, DT_, FI_KV_E4M3, true>(p, n, stream);    \
    if (kv_kind == FI_KV_E5M2)                                                               \
      return fi_prefill::launch_prefill<HD_, Q, KV, DT_, FI_KV_E5M2, true>(p, n, stream);    \
    if (extras) return fi_prefill::launch_prefill<HD_, Q, KV, DT_, FI_KV_SAME, true>(p, n, stream); \
    return fi_prefill::launch_prefill<HD_, Q, KV, DT_, FI_KV_SAME, false>(p, n, stream);    \
  }
#define FI_PREFILL_DEFINE(HD, NAME)                                                          \
  cudaError_t fi_prefill_launch_hd##HD##_##NAME(const PrefillParams &p, int q_tile,           \
                                                 int kv_tile, int kv_kind, bool extras,       \
                                                 int n, cudaStream_t stream) {                \
    FI_PREFILL_TILE_LIST(FI_PREFILL_CASE)                                                     \
    return cudaErrorInvalidConfiguration;                                                     \
  }
#endif

#endif
