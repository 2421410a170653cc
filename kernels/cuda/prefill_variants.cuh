// prefill_variants.cuh -- the set of compiled prefill tile variants and the switch that
// launches one. Each prefill_hd*_*.cu file stamps out the variants of one (head_dim, dtype)
// pair so that the builds of the six files run in parallel: the mma.sync tiles
// (FI_CUDA_PREFILL_TILE_LIST) for every head_dim and, for head_dim 64 and 128, the Hopper
// tier's wgmma tiles (FI_CUDA_PREFILL_WGMMA_TILE_LIST; sm_90a code only, chosen per plan by
// tiles.cores) and the warp-specialised kernel of prefill_ws.cuh.
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
// sliding window in use (fp8 always takes the extras kernel). wgmma: the Hopper tier
// (FI_CUDA_PREFILL_WGMMA_TILE_LIST; the caller has checked the device and the build).
typedef cudaError_t (*fi_prefill_launch_fn)(const PrefillParams &p, int q_tile, int kv_tile,
                                            int kv_kind, bool extras, bool wgmma,
                                            int num_work_units, cudaStream_t stream);

#define FI_PREFILL_DECLARE(HD, NAME)                                                      \
  cudaError_t fi_prefill_launch_hd##HD##_##NAME(const PrefillParams &p, int q_tile,         \
                                                 int kv_tile, int kv_kind, bool extras,     \
                                                 bool wgmma, int num_work_units,            \
                                                 cudaStream_t stream);
FI_PREFILL_DECLARE(64, f16)
FI_PREFILL_DECLARE(64, bf16)
FI_PREFILL_DECLARE(128, f16)
FI_PREFILL_DECLARE(128, bf16)
FI_PREFILL_DECLARE(256, f16)
FI_PREFILL_DECLARE(256, bf16)

// The warp-specialised Hopper kernel (prefill_ws.cuh; sm_90a, head_dim 64, 128 and 256, 16-bit
// KV, with or without the extras: prefill.cu checks its conditions and encodes the tensor
// maps).
namespace fi_prefill {
struct WsMaps;
}
// extras: 0 none in use, 1 some (the instance with those), 2 some, on the instance with
// every extra (the tuning knob prefill_ws_all_extras). variant_kernel: a program's variant
// kernel to launch instead of the runtime's (NULL: none).
typedef cudaError_t (*fi_prefill_ws_launch_fn)(const PrefillParams &p,
                                               const fi_prefill::WsMaps &maps, int extras,
                                               int num_work_units, int sm_count,
                                               cudaStream_t stream, const void *variant_kernel);
// ..._prepare sets the kernel's shared-memory attribute (once per context, sm_90 only).
#define FI_PREFILL_WS_DECLARE(HD, NAME)                                                    \
  cudaError_t fi_prefill_ws_launch_hd##HD##_##NAME(const PrefillParams &p,                 \
                                                   const fi_prefill::WsMaps &maps,         \
                                                   int extras, int n, int sm_count,        \
                                                   cudaStream_t stream,                    \
                                                   const void *variant_kernel);            \
  cudaError_t fi_prefill_ws_prepare_hd##HD##_##NAME();
// The dynamic shared memory of head_dim HD's warp-specialised kernel (a variant kernel's
// attribute, set when variant_images.cu loads it).
int fi_prefill_ws_smem_hd64();
int fi_prefill_ws_smem_hd128();
FI_PREFILL_WS_DECLARE(64, f16)
FI_PREFILL_WS_DECLARE(64, bf16)
FI_PREFILL_WS_DECLARE(128, f16)
FI_PREFILL_WS_DECLARE(128, bf16)
FI_PREFILL_WS_DECLARE(256, f16)
FI_PREFILL_WS_DECLARE(256, bf16)
// fp8 attention (e4m3 Q, K, V^T; output NAME; head_dim 128): prefill_ws.cuh with FP8.
#define FI_PREFILL_WS_FP8_DECLARE(NAME)                                                    \
  cudaError_t fi_prefill_ws_fp8_launch_##NAME(const PrefillParams &p,                      \
                                              const fi_prefill::WsMaps &maps, bool extras, \
                                              int n, int sm_count, cudaStream_t stream);   \
  cudaError_t fi_prefill_ws_fp8_prepare_##NAME();
FI_PREFILL_WS_FP8_DECLARE(f16)
FI_PREFILL_WS_FP8_DECLARE(bf16)

#ifdef FI_PREFILL_DEFINE_LAUNCHER
#include "prefill_kernel.cuh"
#include "prefill_ws.cuh"
#define FI_PREFILL_WS_DEFINE(HD, NAME)                                                     \
  cudaError_t fi_prefill_ws_launch_hd##HD##_##NAME(const PrefillParams &p,                 \
                                                   const fi_prefill::WsMaps &maps,         \
                                                   int extras, int n, int sm_count,        \
                                                   cudaStream_t stream,                    \
                                                   const void *variant_kernel) {           \
    return fi_prefill::launch_prefill_ws<HD_, DT_>(p, maps, extras, n, sm_count, stream,   \
                                                   variant_kernel);                        \
  }                                                                                        \
  cudaError_t fi_prefill_ws_prepare_hd##HD##_##NAME() {                                    \
    return fi_prefill::prepare_prefill_ws<HD_, DT_>();                                     \
  }
#define FI_PREFILL_WS_FP8_DEFINE(NAME)                                                     \
  cudaError_t fi_prefill_ws_fp8_launch_##NAME(const PrefillParams &p,                      \
                                              const fi_prefill::WsMaps &maps, bool extras, \
                                              int n, int sm_count, cudaStream_t stream) {  \
    return fi_prefill::launch_prefill_ws_fp8<DT_>(p, maps, extras, n, sm_count, stream);   \
  }                                                                                        \
  cudaError_t fi_prefill_ws_fp8_prepare_##NAME() {                                         \
    return fi_prefill::prepare_prefill_ws_fp8<DT_>();                                      \
  }
#define FI_PREFILL_WS_SMEM_DEFINE(HD)                                                      \
  int fi_prefill_ws_smem_hd##HD() { return fi_prefill::WsShape<HD>::SMEM; }
namespace fi_prefill {
// The kernels of one (tile, engine): fp8 KV (e4m3, e5m2), extras, the fast path, and for
// mma.sync tiles of 64 or 128 keys block-sparse tiles without the extras (the extras
// instances take block-sparse tiles too: kv 32, fp8 KV, soft cap, ALiBi, window).
template <int HD, int Q, int KV, typename DT, bool WG>
cudaError_t launch_kinds(const PrefillParams &p, int kv_kind, bool extras, int n,
                         cudaStream_t stream) {
  if (WG && p.bsr_tiles) return cudaErrorInvalidConfiguration;  // (prefill.cu: mma.sync tiles)
  if (kv_kind == FI_KV_E4M3) return launch_prefill<HD, Q, KV, DT, FI_KV_E4M3, true, WG>(p, n, stream);
  if (kv_kind == FI_KV_E5M2) return launch_prefill<HD, Q, KV, DT, FI_KV_E5M2, true, WG>(p, n, stream);
  if (extras || (KV < 64 && p.bsr_tiles))
    return launch_prefill<HD, Q, KV, DT, FI_KV_SAME, true, WG>(p, n, stream);
  if constexpr (!WG && KV >= 64)
    if (p.bsr_tiles) return launch_prefill<HD, Q, KV, DT, FI_KV_SAME, false, false, true>(p, n, stream);
  return launch_prefill<HD, Q, KV, DT, FI_KV_SAME, false, WG>(p, n, stream);
}
// Head dims without a wgmma variant have no cases (the plan refused them).
template <int HD, typename DT>
cudaError_t launch_wgmma(const PrefillParams &p, int q_tile, int kv_tile, int kv_kind,
                         bool extras, int n, cudaStream_t stream) {
#define FI_PREFILL_WG_HD(D) || HD == D
  if constexpr (false FI_CUDA_PREFILL_WGMMA_HEAD_DIM_LIST(FI_PREFILL_WG_HD)) {
#define FI_PREFILL_WG_CASE(Q, KV) \
    if (q_tile == Q && kv_tile == KV) return launch_kinds<HD, Q, KV, DT, true>(p, kv_kind, extras, n, stream);
    FI_CUDA_PREFILL_WGMMA_TILE_LIST(FI_PREFILL_WG_CASE)
#undef FI_PREFILL_WG_CASE
  }
#undef FI_PREFILL_WG_HD
  return cudaErrorInvalidConfiguration;
}
}  // namespace fi_prefill

#define FI_PREFILL_CASE(Q, KV)                                                               \
  if (q_tile == Q && kv_tile == KV)                                                          \
    return fi_prefill::launch_kinds<HD_, Q, KV, DT_, false>(p, kv_kind, extras, n, stream);
#define FI_PREFILL_DEFINE(HD, NAME)                                                          \
  cudaError_t fi_prefill_launch_hd##HD##_##NAME(const PrefillParams &p, int q_tile,           \
                                                 int kv_tile, int kv_kind, bool extras,       \
                                                 bool wgmma, int n, cudaStream_t stream) {    \
    if (wgmma)                                                                                \
      return fi_prefill::launch_wgmma<HD_, DT_>(p, q_tile, kv_tile, kv_kind, extras, n, stream); \
    FI_PREFILL_TILE_LIST(FI_PREFILL_CASE)                                                     \
    return cudaErrorInvalidConfiguration;                                                     \
  }
#endif

#endif
