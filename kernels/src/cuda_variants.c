/* kernels/src/cuda_variants.c -- the CUDA kernels' coverage (see fi/cuda_variants.h). */
#include "fi/cuda_variants.h"

#include <stdio.h>

static const char *family_name(fi_op_family family) {
  switch (family) {
    case FI_OP_DECODE: return "decode";
    case FI_OP_PAGED_PREFILL: return "paged prefill";
    case FI_OP_RAGGED_PREFILL: return "ragged prefill";
    case FI_OP_APPEND_PAGED_KV: return "append_paged_kv";
    case FI_OP_BLOCK_SPARSE: return "block_sparse";
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

/* The lists of fi/cuda_variants.h as tables: one membership test and one formatter serve
 * all of them. */
#define FI_ONE(V) {(V), 0},
#define FI_PAIR(A, B) {(A), (B)},
static const int32_t head_dims[][2] = {FI_CUDA_HEAD_DIM_LIST(FI_ONE)};
static const int32_t decode_kv_tiles[][2] = {FI_CUDA_DECODE_KV_TILE_LIST(FI_ONE)};
static const int32_t prefill_tiles[][2] = {FI_CUDA_PREFILL_TILE_LIST(FI_PAIR)};
static const int32_t wgmma_tiles[][2] = {FI_CUDA_PREFILL_WGMMA_TILE_LIST(FI_PAIR)};
static const int32_t wgmma_head_dims[][2] = {FI_CUDA_PREFILL_WGMMA_HEAD_DIM_LIST(FI_ONE)};
#undef FI_ONE
#undef FI_PAIR
#define FI_COUNT(table) (sizeof(table) / sizeof((table)[0]))

static int listed(const int32_t (*table)[2], size_t n, int32_t a, int32_t b) {
  for (size_t i = 0; i < n; ++i)
    if (table[i][0] == a && table[i][1] == b) return 1;
  return 0;
}

/* "(16,32) (16,64) ..." into buf. */
static const char *format_pairs(const int32_t (*table)[2], size_t n, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && off < len; ++i)
    off += (size_t)snprintf(buf + off, len - off, "%s(%d,%d)", i ? " " : "", (int)table[i][0],
                            (int)table[i][1]);
  return buf;
}

#define FI_WHY(...) (why_len ? (void)snprintf(why, why_len, __VA_ARGS__) : (void)0, 0)

int fi_cuda_variant_supported(fi_op_family family, const fi_attention_params *p,
                              const fi_tiles *tiles, char *why, size_t why_len) {
  const char *op = family_name(family);
  if (family == FI_OP_APPEND_PAGED_KV) return 1; /* a copy kernel: every dtype and shape */
  if (p->q_dtype == FI_DTYPE_E4M3) {
    /* fp8 attention: the warp-specialised Hopper kernel on fp8 wgmma (prefill_ws.cuh) */
    if (family != FI_OP_RAGGED_PREFILL && family != FI_OP_PAGED_PREFILL)
      return FI_WHY("%s: fp8 (e4m3) queries are a prefill (ragged or paged) on CUDA", op);
    if (p->head_dim != 128)
      return FI_WHY("%s: the CUDA fp8 attention kernel has head_dim 128, not %d; use the "
                    "host backend or 16-bit queries", op, (int)p->head_dim);
    if (p->num_kv_heads > 0 && p->num_qo_heads / p->num_kv_heads > 128)
      return FI_WHY("%s: a GQA group of %d query heads per KV head; the CUDA fp8 kernel "
                    "takes at most 128", op, (int)(p->num_qo_heads / p->num_kv_heads));
    if (tiles && (tiles->cores != FI_CORES_WGMMA || tiles->q_tile != 128 ||
                  tiles->kv_tile != 128))
      return FI_WHY("%s: fp8 attention runs wgmma 128 x 128 tiles (q_tile 128, kv_tile 128, "
                    "cores = wgmma), not q_tile %d, kv_tile %d; pass those or no tiles", op,
                    (int)tiles->q_tile, (int)tiles->kv_tile);
    return 1;
  }
  if (p->q_dtype != FI_DTYPE_F16 && p->q_dtype != FI_DTYPE_BF16)
    return FI_WHY("%s: the CUDA kernels take f16 or bf16 queries, not %s; convert q or use "
                  "the host backend", op, dtype_name(p->q_dtype));
  if (p->kv_dtype != p->q_dtype && p->kv_dtype != FI_DTYPE_E4M3 &&
      p->kv_dtype != FI_DTYPE_E5M2)
    return FI_WHY("%s: the CUDA kernels take a KV cache of q's dtype (%s) or fp8 (e4m3, "
                  "e5m2), not %s", op, dtype_name(p->q_dtype), dtype_name(p->kv_dtype));
  if (!listed(head_dims, FI_COUNT(head_dims), p->head_dim, 0))
    return FI_WHY("%s: head_dim %d has no CUDA kernel (64, 128 and 256 do); use one of "
                  "those or the host backend", op, (int)p->head_dim);
  if (family == FI_OP_BLOCK_SPARSE && tiles && tiles->cores == FI_CORES_WGMMA) {
    /* The warp-specialised Hopper prefill kernel walks the plan's KV tiles (the mma.sync
     * kernel, cores = tensor, takes the prefill tiles and head dims below). */
    if (!listed(wgmma_head_dims, FI_COUNT(wgmma_head_dims), p->head_dim, 0))
      return FI_WHY("block_sparse: the wgmma kernel (the warp-specialised Hopper prefill "
                    "kernel) has head_dim 64 and 128, not %d; use cores = tensor (the "
                    "mma.sync kernel) or no tiles", (int)p->head_dim);
    if (p->num_kv_heads > 0 && p->num_qo_heads / p->num_kv_heads > 128)
      return FI_WHY("block_sparse: a GQA group of %d query heads per KV head; the wgmma "
                    "kernel takes at most 128; use cores = tensor or no tiles",
                    (int)(p->num_qo_heads / p->num_kv_heads));
    if (tiles->q_tile != 128 || tiles->kv_tile != 128)
      return FI_WHY("block_sparse: the wgmma kernel runs 128 x 128 tiles (q_tile 128, "
                    "kv_tile 128), not q_tile %d, kv_tile %d; pass those (with split_kv as "
                    "wanted), cores = tensor tiles, or no tiles",
                    (int)tiles->q_tile, (int)tiles->kv_tile);
    return 1;
  }
  if (family == FI_OP_DECODE) {
    if (p->mask_mode == FI_MASK_CUSTOM)
      return FI_WHY("decode: custom masks have no CUDA decode kernel; use the host backend");
    if (tiles && !listed(decode_kv_tiles, FI_COUNT(decode_kv_tiles), tiles->kv_tile, 0))
      return FI_WHY("decode: kv_tile %d has no CUDA variant (16, 32, 64 and 128 do)",
                    (int)tiles->kv_tile);
    return 1;
  }
  if (tiles && tiles->cores == FI_CORES_WGMMA) {
    /* head_dim 256: the warp-specialised Hopper kernel alone, with its 128 x 64 tiles */
    if (p->head_dim == FI_CUDA_PREFILL_WS_HD256) {
      if (tiles->q_tile != 128 || tiles->kv_tile != 64)
        return FI_WHY("%s: at head_dim 256 the wgmma prefill kernel (the warp-specialised "
                      "Hopper kernel) runs q_tile 128, kv_tile 64, not q_tile %d, kv_tile %d; "
                      "pass those, cores = tensor tiles, or no tiles", op, (int)tiles->q_tile,
                      (int)tiles->kv_tile);
      return 1;
    }
    /* the warp-specialised kernel's long KV tile (176 keys, prefill_ws.cuh WsShape WIDE):
     * head_dim 128 without extras but a soft cap or ALiBi (not both), or a custom mask alone
     * (whose runs take it where every row of the plan's mask keeps one run of keys, and 128
     * keys otherwise: prefill.cu) */
    if (tiles->kv_tile == 176) {
      if (p->head_dim != 128 || tiles->q_tile != 128)
        return FI_WHY("%s: kv_tile 176 (the warp-specialised Hopper kernel's long KV tile) "
                      "runs head_dim 128 with q_tile 128, not head_dim %d, q_tile %d; pass "
                      "kv_tile 128", op, (int)p->head_dim, (int)tiles->q_tile);
      if (!fi_params_fit_wide_tile(p) && !fi_params_fit_wide_tile_mask_runs(p))
        return FI_WHY("%s: kv_tile 176 runs without a sliding window, a score_mod / mask_mod "
                      "or ALiBi beside a soft cap, and a custom mask only alone (a soft cap "
                      "or ALiBi alone it runs); pass kv_tile 128", op);
      return 1;
    }
    if (!listed(wgmma_head_dims, FI_COUNT(wgmma_head_dims), p->head_dim, 0))
      return FI_WHY("%s: the wgmma (Hopper) prefill tier has head_dim 64, 128 and 256 (q_tile "
                    "128, kv_tile 64), not %d; use cores = tensor", op, (int)p->head_dim);
    if (!listed(wgmma_tiles, FI_COUNT(wgmma_tiles), tiles->q_tile, tiles->kv_tile)) {
      char list[160];
      return FI_WHY("%s: no wgmma prefill variant with q_tile %d, kv_tile %d; compiled "
                    "(q, kv) tiles: %s; or use cores = tensor", op, (int)tiles->q_tile,
                    (int)tiles->kv_tile,
                    format_pairs(wgmma_tiles, FI_COUNT(wgmma_tiles), list, sizeof list));
    }
    return 1;
  }
  if (tiles && tiles->cores != FI_CORES_TENSOR)
    return FI_WHY("%s: the CUDA prefill kernels run on tensor cores; use cores = tensor or "
                  "wgmma", op);
  if (tiles && !listed(prefill_tiles, FI_COUNT(prefill_tiles), tiles->q_tile, tiles->kv_tile)) {
    char list[160];
    return FI_WHY("%s: no CUDA variant with q_tile %d, kv_tile %d; compiled (q, kv) tiles: "
                  "%s", op, (int)tiles->q_tile, (int)tiles->kv_tile,
                  format_pairs(prefill_tiles, FI_COUNT(prefill_tiles), list, sizeof list));
  }
  return 1;
}
