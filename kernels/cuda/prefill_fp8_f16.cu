// fp8 attention (e4m3 Q, K and V; f16 output; head_dim 128): the warp-specialised Hopper
// kernel of prefill_ws.cuh on fp8 wgmma (see there for the work split and the memory
// traffic), with and without the extras.
#define FI_PREFILL_DEFINE_LAUNCHER
#include "prefill_variants.cuh"

#define DT_ __half
FI_PREFILL_WS_FP8_DEFINE(f16)
