/* kernels/src/plan_split.h -- the split-KV planner's constants (planner.c, the device
 * planner plan_device.cu), shared with the heuristics that predict its split (heuristics.c
 * fi_select_decode_tiles, head_dim 256), so that the prediction follows the planner. */
#ifndef FI_PLAN_SPLIT_H
#define FI_PLAN_SPLIT_H

/* The shortest KV chunk (tokens) that a split makes. */
enum { FI_MIN_CHUNK = 128 };

/* The decode split's target CTAs per SM: the per-warp tensor-core kernel's, and the
 * warp-specialised kernel's over 16-bit KV for GQA (planner.c decode_target_units says
 * where each applies and why). */
enum { FI_DECODE_TCW_CTAS_PER_SM = 4, FI_DECODE_TWS_CTAS_PER_SM = 3 };

#endif
