/* kernels/src/cuda_variants.c -- the CUDA kernels' coverage (see fi/cuda_variants.h). */
#include "fi/cuda_variants.h"

#include <stdio.h>

static const char *family_name(fi_op_family family) {
  switch (family) {
    case FI_OP_DECODE: return "decode";
    case FI_OP_PAGED_PREFILL: return "paged prefill";
    case FI_OP_RAGGED_PREFILL: return "ragged prefill";
    case FI_OP_APPEND_PAGED_KV: return "append_paged_kv";
  }
  return "unknown op";
}

static const char *dtype_name(fi_dtype d) {
  switch (d) {
    case FI_DTYPE_F16: return "f16";
    case FI_DTYPE_BF16: return "bf16";
    case FI_DTYPE_F32: return "f32";
    case FI_DTYPE_E4M3: return "e4m3";
    case FI_DTYPE_E5M2: return "e5m2";
  }
  return "?";
}

static int head_dim_compiled(int32_t head_dim) {
#define FI_MATCH(D) if (head_dim == (D)) return 1;
  FI_CUDA_HEAD_DIM_LIST(FI_MATCH)
#undef FI_MATCH
  return 0;
}

static int decode_kv_tile_compiled(int32_t kv_tile) {
#define FI_MATCH(KV) if (kv_tile == (KV)) return 1;
  FI_CUDA_DECODE_KV_TILE_LIST(FI_MATCH)
#undef FI_MATCH
  return 0;
}

static int wgmma_tiles_compiled(int32_t q_tile, int32_t kv_tile) {
#define FI_MATCH(Q, KV) if (q_tile == (Q) && kv_tile == (KV)) return 1;
  FI_CUDA_PREFILL_WGMMA_TILE_LIST(FI_MATCH)
#undef FI_MATCH
  return 0;
}

static int wgmma_head_dim_compiled(int32_t head_dim) {
#define FI_MATCH(D) if (head_dim == (D)) return 1;
  FI_CUDA_PREFILL_WGMMA_HEAD_DIM_LIST(FI_MATCH)
#undef FI_MATCH
  return 0;
}

static int prefill_tiles_compiled(int32_t q_tile, int32_t kv_tile) {
#define FI_MATCH(Q, KV) if (q_tile == (Q) && kv_tile == (KV)) return 1;
  FI_CUDA_PREFILL_TILE_LIST(FI_MATCH)
#undef FI_MATCH
  return 0;
}

#define FI_WHY(...) (why_len ? (void)snprintf(why, why_len, __VA_ARGS__) : (void)0, 0)

int fi_cuda_variant_supported(fi_op_family family, const fi_attention_params *p,
                              const fi_tiles *tiles, char *why, size_t why_len) {
  const char *op = family_name(family);
  if (family == FI_OP_APPEND_PAGED_KV) return 1; /* a copy kernel: every dtype and shape */
  if (p->q_dtype != FI_DTYPE_F16 && p->q_dtype != FI_DTYPE_BF16)
    return FI_WHY("%s: the CUDA kernels take f16 or bf16 queries, not %s; convert q or use "
                  "the host backend", op, dtype_name(p->q_dtype));
  if (p->kv_dtype != p->q_dtype && p->kv_dtype != FI_DTYPE_E4M3 &&
      p->kv_dtype != FI_DTYPE_E5M2)
    return FI_WHY("%s: the CUDA kernels take a KV cache of q's dtype (%s) or fp8 (e4m3, "
                  "e5m2), not %s", op, dtype_name(p->q_dtype), dtype_name(p->kv_dtype));
  if (!head_dim_compiled(p->head_dim))
    return FI_WHY("%s: head_dim %d has no CUDA kernel (64, 128 and 256 do); use one of "
                  "those or the host backend", op, (int)p->head_dim);
  if (family == FI_OP_DECODE) {
    if (p->mask_mode == FI_MASK_CUSTOM)
      return FI_WHY("decode: custom masks have no CUDA decode kernel; use the host backend");
    if (tiles && !decode_kv_tile_compiled(tiles->kv_tile))
      return FI_WHY("decode: kv_tile %d has no CUDA variant (16, 32, 64 and 128 do)",
                    (int)tiles->kv_tile);
    return 1;
  }
  if (tiles && tiles->cores == FI_CORES_WGMMA) {
    if (!wgmma_head_dim_compiled(p->head_dim))
      return FI_WHY("%s: the wgmma (Hopper) prefill tier has head_dim 64 and 128, not %d; "
                    "use cores = tensor", op, (int)p->head_dim);
    if (!wgmma_tiles_compiled(tiles->q_tile, tiles->kv_tile)) {
      char list[64] = "";
      size_t off = 0;
#define FI_APPEND(Q, KV)                                                                  \
  if (off < sizeof list)                                                                  \
    off += (size_t)snprintf(list + off, sizeof list - off, "%s(%d,%d)", off ? " " : "", \
                            (Q), (KV));
      FI_CUDA_PREFILL_WGMMA_TILE_LIST(FI_APPEND)
#undef FI_APPEND
      return FI_WHY("%s: no wgmma prefill variant with q_tile %d, kv_tile %d; compiled "
                    "(q, kv) tiles: %s; or use cores = tensor", op, (int)tiles->q_tile,
                    (int)tiles->kv_tile, list);
    }
    return 1;
  }
  if (tiles && tiles->cores != FI_CORES_TENSOR)
    return FI_WHY("%s: the CUDA prefill kernels run on tensor cores; use cores = tensor or "
                  "wgmma", op);
  if (tiles && !prefill_tiles_compiled(tiles->q_tile, tiles->kv_tile)) {
    char list[160] = "";
    size_t off = 0;
#define FI_APPEND(Q, KV)                                                                  \
  if (off < sizeof list)                                                                  \
    off += (size_t)snprintf(list + off, sizeof list - off, "%s(%d,%d)", off ? " " : "", \
                            (Q), (KV));
    FI_CUDA_PREFILL_TILE_LIST(FI_APPEND)
#undef FI_APPEND
    return FI_WHY("%s: no CUDA variant with q_tile %d, kv_tile %d; compiled (q, kv) tiles: "
                  "%s", op, (int)tiles->q_tile, (int)tiles->kv_tile, list);
  }
  return 1;
}
