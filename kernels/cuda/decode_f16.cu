// Instantiates the decode kernels for fp16 q/o (KV fp16, e4m3, e5m2; head_dim 64/128/256).
// Split from decode.cu so the instantiations compile in parallel.
#include "decode.cuh"

cudaError_t fi_decode_launch_f16(const fi::DecodeParams &p, fi_dtype kv_dtype, int head_dim,
                                 bool tc, int grid_x, size_t budget, size_t limit,
                                 cudaStream_t s) {
  return fi::decode_dispatch<fi::f16>(p, kv_dtype, head_dim, tc, grid_x, budget, limit, s);
}

cudaError_t fi_decode_prepare_f16(int smem_limit) { return fi::decode_prepare<fi::f16>(smem_limit); }
