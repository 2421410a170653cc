// The tensor-core prefill variants for head_dim 256, bf16 queries (see prefill_kernel.cuh
// for the work split and the memory traffic, prefill_variants.cuh for the tile list).
#define FI_PREFILL_DEFINE_LAUNCHER
#include "prefill_variants.cuh"

#define HD_ 256
#define DT_ __nv_bfloat16
FI_PREFILL_DEFINE(256, bf16)
FI_PREFILL_WS_DEFINE(256, bf16)
