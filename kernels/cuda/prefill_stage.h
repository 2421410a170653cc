// prefill_stage.h -- the arguments and launcher of the stage pass (prefill_stage.cu), which
// writes a run's K (RoPE, fp8, odd pages) and V (fp8, odd pages) as 16-bit contiguous token
// rows for the warp-specialised prefill kernel.
#ifndef FI_CUDA_PREFILL_STAGE_H
#define FI_CUDA_PREFILL_STAGE_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "prefill_params.h"

struct PrefillStageArgs {
  // The run's K/V, page table, head counts and RoPE parameters, as the kernel gets them.
  PrefillParams src;
  // The plan's batch: read from the workspace header (device_batch, written by the host and
  // the device planner) so that graph replays after re-planning see the current one; batch
  // when device_batch is null.
  const int32_t *device_batch;
  int32_t batch, head_dim;
  int32_t kv_kind;  // FI_KV_SAME / FI_KV_E4M3 / FI_KV_E5M2
  int32_t rope;     // rotate K (LLaMA)
  // Destinations, 16-bit of q's type, rows of (heads, head_dim) contiguous: sk / sv
  // [kv_rows_cap] (null: that tensor is not staged).
  void *sk, *sv;
  int64_t kv_rows_cap;
  // fp8 attention (q, k, v e4m3; fi_prefill_stage_fp8_launch): sk holds paged K as e4m3
  // token rows (null for ragged K, which the kernel maps as it is), svt V^T as
  // [kv heads][head_dim][vt_pitch] bytes, each 32-key group in pack_p_e4m3's order.
  void *svt;
  int64_t vt_pitch;
};

cudaError_t fi_prefill_stage_fp8_launch(const PrefillStageArgs &s, bool pdl, cudaStream_t stream);
cudaError_t fi_prefill_stage_launch(const PrefillStageArgs &s, bool bf16, int sm_count,
                                    bool pdl, cudaStream_t stream);

#endif
