/* fi/heuristics.h -- tile-size heuristics: pure C functions of the problem shape and the
 * target, shared by the runtime's plan step and the compiler's fi-select-tiles pass (which
 * links this code rather than re-implementing it). No state, no allocation, no CUDA.
 * The decision table is documented in kernels/src/heuristics.c next to the code. */
#ifndef FI_HEURISTICS_H
#define FI_HEURISTICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The facts of the GPU the heuristics need (the `#fi.target<...>` attribute). */
typedef struct fi_target {
  int32_t sm_version;         /* 90 for Hopper, 80 for Ampere */
  int32_t sm_count;           /* 132 on an H100 SXM */
  int32_t smem_per_block;     /* bytes a block may opt in to (232448 on an H100) */
  /* Peak device-memory bandwidth per SM in GB/s, rounded (25 on an H100 SXM, 36 on an
   * H200; 0: unknown, taken as at most FI_LOW_DRAM_GBPS_PER_SM). */
  int32_t dram_gbps_per_sm;
} fi_target;

/* Some decode choices depend on how much memory bandwidth each SM has to keep busy: on a
 * device of at most this many GB/s per SM (an H100) fewer bytes in flight per SM suffice
 * (the planner's one-wave grids, head_dim 256's KV tiles; bench/NOTES.md, sessions 61
 * and 63). */
enum { FI_LOW_DRAM_GBPS_PER_SM = 30 };

/* An H100 SXM: sm_90, 132 SMs, 227 KiB of shared memory per block, 25 GB/s of HBM3 per SM. */
fi_target fi_target_default(void);

/* 1 when `t` has at most FI_LOW_DRAM_GBPS_PER_SM per SM (or does not say). */
int32_t fi_target_low_dram_per_sm(const fi_target *t);

typedef enum fi_core_kind {
  FI_CORES_CUDA = 0,   /* CUDA-core kernel (decode with small GQA groups) */
  FI_CORES_TENSOR = 1, /* tensor-core kernel (mma.sync, sm_80 and newer) */
  FI_CORES_WGMMA = 2,  /* Hopper tensor-core kernel (warpgroup wgmma, sm_90a; prefill) */
} fi_core_kind;

/* The microkernel variant of one op: the `#fi.tiles<...>` attribute. */
typedef struct fi_tiles {
  int32_t q_tile;   /* query rows per CTA: 1 (decode) or 16/32/64/128 */
  int32_t kv_tile;  /* KV tokens per pipeline stage: 32/64/128 (decode: 16..128; 176: the
                       Hopper warp-specialised prefill kernel at head_dim 128 without
                       extras or with a soft cap, ALiBi or a custom mask of one run of
                       keys per row alone, which host plans with chosen tiles take for
                       long units) */
  int32_t split_kv; /* 1: the KV of one request may be split over CTAs and merged */
  fi_core_kind cores;
} fi_tiles;

/* Inputs of a choice. Lengths are averages over the batch; 0 when unknown at compile
 * time (then the plan step decides with the real lengths). */
typedef struct fi_tile_problem {
  int32_t batch;
  int32_t num_qo_heads;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t q_dtype_bytes;  /* 2 for f16/bf16, 4 for f32, 1 for fp8 attention (e4m3 q) */
  int32_t kv_dtype_bytes; /* 1 for fp8, 2, 4 */
  int64_t avg_qo_len;     /* 1 for decode */
  int64_t avg_kv_len;
  /* 1 when the Hopper tier's warp-specialised prefill kernel can run the op: f16/bf16
   * queries with KV of the query's dtype (soft cap, ALiBi, custom masks and sliding windows
   * run on it), or with RoPE, fp8 KV or a page size that is not a multiple of 16 when the
   * runtime stages them (a prefill stage: fi_context_set_prefill_stage). Decode: 1 when the warp-specialised
   * decode kernel can run it: a page size it takes (fi_decode_page_box_rows) and 16-bit KV
   * of the query's dtype or fp8 KV (RoPE included). 0 when not (or not known). */
  int32_t fast_path;
  /* Decode: 1 when the op has a score_mod / mask_mod compiled for the CUDA backend, which
   * runs in the warp-specialised (tensor-core) decode kernel alone. */
  int32_t variant;
  /* Paged decode: tokens per page (0: not paged, or not known). */
  int32_t page_size;
  /* Decode: 1 when the kernel applies RoPE to K (pos_encoding rope_llama), whose rotated K
   * tiles take shared memory beside the raw ones; 0 when not (or not known). */
  int32_t rope;
} fi_tile_problem; /* zero-initialise it: fields added later read 0 ("not known") */

/* Smallest query tile of {1,16,32,64,128} that covers the average query length (counting
 * GQA heads packed into the tile when the query is short). */
int32_t fi_select_q_tile(const fi_tile_problem *p);
/* KV tile that maximises occupancy under the register / shared-memory model of the
 * candidate kernels for this head_dim, dtype and query tile. */
int32_t fi_select_kv_tile(const fi_target *t, const fi_tile_problem *p, int32_t q_tile);
/* Tensor cores for decode when the GQA group (qo_heads / kv_heads) is >= 4. */
fi_core_kind fi_select_decode_cores(const fi_tile_problem *p);
/* Split-KV on when (request, kv-head) pairs cannot fill the SMs and KV is long. */
int32_t fi_select_split_kv(const fi_target *t, const fi_tile_problem *p, int32_t q_tile);

/* The whole choice for one op. */
fi_tiles fi_select_decode_tiles(const fi_target *t, const fi_tile_problem *p);
fi_tiles fi_select_prefill_tiles(const fi_target *t, const fi_tile_problem *p);

/* Rows per copy-engine box of the warp-specialised decode kernel over pages of page_size
 * tokens, which it loads in 16-token sub-tiles: 16 for a multiple of 16 (a box per
 * sub-tile), else the largest of 8 or 4 that divides page_size (16 / rows boxes per
 * sub-tile, each inside one page); 0 where it takes no such box (pages whose size is not a
 * multiple of 4, and page_size <= 0): boxes of 1 or 2 rows ran slower than the per-warp
 * kernels' copies (bench/NOTES.md), so those pages run the per-warp kernels. */
int32_t fi_decode_page_box_rows(int64_t page_size);

/* A stable name of the variant, e.g. "decode_tc_q1_kv64_split" (for IR and benchmarks). */
const char *fi_tiles_name(fi_tiles tiles, int32_t is_decode, char *buf, int32_t buf_len);

#ifdef __cplusplus
}
#endif
#endif /* FI_HEURISTICS_H */
