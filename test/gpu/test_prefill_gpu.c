/* test_prefill_gpu.c -- CUDA ragged and paged prefill against the host backend.
 *
 * Random configurations (seeded; FI_TEST_SEED overrides, FI_TEST_CONFIGS the count):
 * ragged and paged forms, f16/bf16 queries, same-dtype or fp8 (e4m3/e5m2) KV with scales,
 * head_dim 64/128/256, GQA groups 1..32 (3, 5, 6, 7, 12: not dividing 128), NHD/HND, page sizes 1..1024, ragged lengths
 * 1..8192 with qo_len <= kv_len and qo_len == kv_len (without the causal mask also qo_len >
 * kv_len: the first rows at negative positions, RoPE's among them), random page tables, every mask
 * (none/causal/custom) and variant (RoPE, ALiBi, soft cap, sliding window, sm_scale, LSE)
 * alone and combined, automatic, fixed and disabled split-KV, and forced tile variants.
 * FI_TEST_HEAD_DIM=64/128/256 draws that head_dim alone (the longest configs keep <= 128).
 * With FI_TEST_PREFILL_WS=1, FI_TEST_WIDE=1 gives every config the 176-key tile can take
 * those tiles (otherwise one in three); FI_TEST_MASK_RUNS=1 gives every config a custom mask
 * whose rows each keep one run of keys (causal bits or packed documents), planned with its
 * bits (what the 176-key tile's masked runs take).
 * The CUDA outputs are poisoned (NaN) before the run; every element of o (and lse) is
 * compared with the host backend's result on the same inputs; a second run of the plan,
 * the same problem planned on the device and the plan run in a context with
 * FI_PREFILL_Q_AHEAD=0, FI_PREFILL_L2_HINTS=0 (every copy at L2's normal eviction
 * priority) and FI_PREFILL_V_LAG=0 (K, then V, of each tile) must give the same bits.
 * Exit 77 without a GPU.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/cuda_variants.h"
#include "fi/runtime.h"
#include "gpu_common.h" /* gpu_max_row_norm */

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

/* ------------------------------------------------------------ random, dtypes ------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int hopper; /* compute capability 9.0: the wgmma tier can be forced */
static int device_plans_run; /* configurations also planned on the device, bit-exact */
/* The CUDA context runs with FI_PREFILL_Q_AHEAD=1 (unless the environment sets it; the
 * default is 1 for block-sparse runs only), a second one created with it at 0 (the
 * warp-specialised kernel copies each chunk's Q after the chunk before's last tile, into a
 * slot released at that chunk's end) and with FI_PREFILL_L2_HINTS=0 (its copies at L2's
 * normal eviction priority): every configuration's plan runs in it too and must give the same
 * bits (the order of the copies and their priorities change no arithmetic). */
static fi_context *cuda_q_late;
static int q_late_runs;

/* Sets the environment variable `name` to `value` (overwrite 0: where the environment sets
 * none), saving what was there in `saved`; put_env_back restores it. */
typedef struct saved_env {
  char value[32];
  int had;
} saved_env;
static void set_env_saved(const char *name, const char *value, int overwrite, saved_env *saved) {
  const char *v = getenv(name);
  saved->had = v != NULL;
  if (v) snprintf(saved->value, sizeof saved->value, "%s", v);
  setenv(name, value, overwrite);
}
static void put_env_back(const char *name, const saved_env *saved) {
  if (saved->had) setenv(name, saved->value, 1);
  else unsetenv(name);
}
/* A CUDA context created with FI_PREFILL_Q_AHEAD at `value` (overwrite 0: where the
 * environment sets none) and, with `old_order`, every knob of old_order_knobs at 0 (every
 * copy at L2's normal eviction priority, K then V of each tile); the tuning knobs are read
 * at context creation, and the environment is put back as it was. */
static const char *const old_order_knobs[] = {"FI_PREFILL_L2_HINTS", "FI_PREFILL_V_LAG"};
enum { OLD_ORDER_KNOBS = sizeof old_order_knobs / sizeof old_order_knobs[0] };
static fi_status create_cuda_with_knobs(fi_context **ctx, const char *value, int overwrite,
                                        int old_order) {
  saved_env q_ahead, saved[OLD_ORDER_KNOBS];
  set_env_saved("FI_PREFILL_Q_AHEAD", value, overwrite, &q_ahead);
  for (int i = 0; old_order && i < OLD_ORDER_KNOBS; ++i)
    set_env_saved(old_order_knobs[i], "0", 1, &saved[i]);
  const fi_status s = fi_context_create(FI_BACKEND_CUDA, ctx);
  put_env_back("FI_PREFILL_Q_AHEAD", &q_ahead);
  for (int i = 0; old_order && i < OLD_ORDER_KNOBS; ++i)
    put_env_back(old_order_knobs[i], &saved[i]);
  return s;
}
static int lead_plans; /* CUDA plans with lead units (planner.c lead_units, header word 9) */
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 11);
}
static int rint_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }
static float rfloat(void) { return (float)(rnd() & 0xffffff) / 16777216.0f * 2.f - 1.f; }

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) { /* subnormal */
    float a = bits_f32(ax) * 16777216.0f; /* * 2^24 */
    return (uint16_t)(sign | (uint32_t)lrintf(a));
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;
  return (uint16_t)(sign | (r >> 13));
}
static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) return (sign ? -1.f : 1.f) * (float)m * 5.9604644775390625e-8f;
  if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
  return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}
static uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
static float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

/* Random fp8 codes of moderate magnitude (no NaN/inf codes). */
static uint8_t rand_e4m3(void) { return (uint8_t)(((rnd() & 1) << 7) | (rint_in(4, 9) << 3) | (rnd() & 7)); }
static uint8_t rand_e5m2(void) { return (uint8_t)(((rnd() & 1) << 7) | (rint_in(12, 17) << 2) | (rnd() & 3)); }

static void fill_random(void *buf, fi_dtype dt, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (dt) {
      case FI_DTYPE_F16: ((uint16_t *)buf)[i] = f32_to_f16(rfloat()); break;
      case FI_DTYPE_BF16: ((uint16_t *)buf)[i] = f32_to_bf16(rfloat()); break;
      case FI_DTYPE_E4M3: ((uint8_t *)buf)[i] = rand_e4m3(); break;
      case FI_DTYPE_E5M2: ((uint8_t *)buf)[i] = rand_e5m2(); break;
      default: ((float *)buf)[i] = rfloat(); break;
    }
  }
}
/* Spiky keys: about one key row (hd elements of one token and head) in 32 scaled by 16
 * (fp8: the exponent + 4, within range for the codes drawn above). The logits of those keys
 * move a row's running max by more than the kernels' lazy-rescale slack (2^8 in 16 bits)
 * in the middle of its keys, so the rescale of O runs there, not only on a first tile. */
static void spike_keys(void *buf, fi_dtype dt, size_t n, int hd) {
  for (size_t row = 0; row < n / (size_t)hd; ++row) {
    if (rnd() % 32) continue;
    for (size_t i = row * (size_t)hd; i < (row + 1) * (size_t)hd; ++i) {
      uint8_t *b8 = (uint8_t *)buf + i;
      uint16_t *b16 = (uint16_t *)buf + i;
      switch (dt) {
        case FI_DTYPE_F16: *b16 = f32_to_f16(16.f * f16_to_f32(*b16)); break;
        case FI_DTYPE_BF16: *b16 = f32_to_bf16(16.f * bf16_to_f32(*b16)); break;
        case FI_DTYPE_E4M3: *b8 = (uint8_t)((*b8 & 0x87u) | ((((*b8 >> 3) & 15u) + 4u) << 3)); break;
        case FI_DTYPE_E5M2: *b8 = (uint8_t)((*b8 & 0x83u) | ((((*b8 >> 2) & 31u) + 4u) << 2)); break;
        default: break;
      }
    }
  }
}

/* An e4m3 byte's value (the test's own decoding: no NaN code is ever drawn). */
static float fi_test_e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float mag = e == 0 ? ldexpf((float)m / 8.f, -6) : ldexpf(1.f + (float)m / 8.f, e - 7);
  return (b & 0x80) ? -mag : mag;
}
static float load_elem(const void *buf, fi_dtype dt, size_t i) {
  return dt == FI_DTYPE_F16 ? f16_to_f32(((const uint16_t *)buf)[i])
                            : bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* The device's output rows (rows of row_bytes, pad_bytes apart) into dst, packed; returns
 * the padding bytes that are no longer the poison 0xff (written by the kernel). */
static size_t fetch_rows(void *dst, const void *dev, uint8_t *staging, int64_t rows,
                         size_t row_bytes, size_t pad_bytes) {
  const size_t pitch = row_bytes + pad_bytes;
  CK(cudaMemcpy(staging, dev, (size_t)rows * pitch, cudaMemcpyDeviceToHost));
  size_t touched = 0;
  for (int64_t r = 0; r < rows; ++r) {
    memcpy((uint8_t *)dst + (size_t)r * row_bytes, staging + (size_t)r * pitch, row_bytes);
    for (size_t b = 0; b < pad_bytes; ++b) touched += staging[(size_t)r * pitch + row_bytes + b] != 0xff;
  }
  return touched;
}

/* ------------------------------------------------------------------ a config ------ */

typedef struct config {
  int paged, batch, hd, qo_heads, kv_heads, page_size;
  fi_dtype q_dtype, kv_dtype;
  fi_dtype o_dtype; /* fp8 attention (q e4m3): f16 or bf16; else q's */
  fi_kv_layout layout;
  fi_mask_mode mask;
  int mask_pattern; /* custom masks: 0 random bits, 1 causal bits, 2 blocks (empty, full or
                       random), so that kernels that skip empty tiles and leave full ones
                       unmasked meet all three kinds, 3 packed documents (causal inside
                       documents of one random length: each row keeps one run of keys that
                       starts past 0) */
  fi_pos_encoding pos;
  int window_left, with_lse, fixed_split, force_tiles;
  int use_stage; /* the CUDA context had a prefill stage (fi_context_set_prefill_stage) */
  int plan_without_bits; /* custom mask: the CUDA plan made with mask.bits NULL */
  int head_scales; /* fp8 attention with per-head q, k and v scales */
  int spiky; /* some key rows x 16: a row's max jumps mid-row past the lazy-rescale slack */
  int o_pad; /* elements between one token's output rows and the next's (strided o; the
                CUDA kernels take strides of multiples of 8 elements) */
  float soft_cap, sm_scale, k_scale, v_scale, q_scale;
  fi_tiles tiles;
  int *qo_len, *kv_len;
} config;

/* The compiled tile variants (fi/cuda_variants.h): mma.sync, then the wgmma tier. */
#define FI_PAIR(Q, KV) {(Q), (KV)},
static const int tile_list[][2] = {FI_CUDA_PREFILL_TILE_LIST(FI_PAIR)};
static const int wg_tile_list[][2] = {FI_CUDA_PREFILL_WGMMA_TILE_LIST(FI_PAIR)};
#undef FI_PAIR
enum {
  NUM_TILES = sizeof tile_list / sizeof tile_list[0],
  NUM_WG_TILES = sizeof wg_tile_list / sizeof wg_tile_list[0]
};

static int ws_mode; /* FI_TEST_PREFILL_WS: every config on the warp-specialised kernel */
static int wide_mode; /* FI_TEST_WIDE: (with ws_mode) every config that fits on 176-key tiles */
static int mask_runs_mode; /* FI_TEST_MASK_RUNS: every config a custom mask of one run per row */
static int fp8_mode; /* FI_TEST_PREFILL_FP8: every config fp8 attention (Hopper) */
/* FI_PREFILL_WARP_SPEC=0 (the mma.sync tiers only): no fp8 attention, which runs only on
 * the warp-specialised kernel (such runs are refused with a message) */
static int ws_off;

static void *dmalloc(size_t bytes) {
  void *p = NULL;
  CK(cudaMalloc(&p, bytes ? bytes : 16));
  return p;
}
static void *dcopy(const void *h, size_t bytes) {
  void *d = dmalloc(bytes);
  if (bytes) CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}

/* A one-request ragged prefill plan of `head_dim` (tiles forced when given) must fail with
 * FI_ERROR_UNSUPPORTED; prints the message. Returns 1 on a failed expectation. */
static int expect_refused(fi_context *cuda, int head_dim, const fi_tiles *tiles,
                          const char *what) {
  fi_attention_params prm = fi_attention_params_default(4, 4, head_dim);
  int32_t ind[2] = {0, 16};
  fi_plan pl;
  size_t ws = 0;
  fi_prefill_workspace_size(cuda, &prm, 1, 16, &ws);
  void *w = dmalloc(ws);
  fi_status s = fi_ragged_prefill_plan(cuda, &prm, 1, ind, ind, NULL, tiles, w, ws, &pl);
  cudaFree(w);
  if (s != FI_ERROR_UNSUPPORTED) {
    fprintf(stderr, "FAIL: %s planned with status %s (expected unsupported)\n", what,
            fi_status_string(s));
    return 1;
  }
  printf("%s refused: %s\n", what, fi_last_error(cuda));
  return 0;
}

/* The warp-specialised kernel's KV tile of 176 keys (api.c choose_ws_layout): a host plan with
 * chosen tiles takes it at head_dim 128 without extras but a soft cap or ALiBi (not both), or
 * a custom mask alone that keeps one run of keys in every row (not one with holes), on
 * units of >= 4096
 * keys (causal: 8192), keeps 128 otherwise, and keeps 128 (with the deep ring) where a
 * request's few query rows (at most 512, GQA-packed) meet long units over K and V of more
 * than twice the L2 cache (134 and 268 MB here; an H100 or H200 has 50 MB) -- but with a soft
 * cap or ALiBi (the deep ring has no extras) or over pages the 176-key tile takes (pages of
 * 16); tiles given with it and another extra are refused by name. Hopper only (other devices
 * plan mma tiles). */
static int wide_tile_rule(fi_context *cuda) {
  if (!hopper || ws_off) return 0;
  struct {
    const char *what;
    int len, qo;  /* keys; query tokens (0: as many as keys) */
    fi_mask_mode mask;
    float cap;
    int window; /* window_left; -1 none */
    int want;
    int alibi;
    int mask_bits; /* FI_MASK_CUSTOM: 1 the causal pattern (a run per row), 2 with holes */
  } rows[] = {{"no mask, 8192 keys", 8192, 0, FI_MASK_NONE, 0.f, -1, 176},
              {"no mask, 2048 keys", 2048, 0, FI_MASK_NONE, 0.f, -1, 128},
              {"causal, 8192 keys", 8192, 0, FI_MASK_CAUSAL, 0.f, -1, 176},
              {"causal, 4096 keys", 4096, 0, FI_MASK_CAUSAL, 0.f, -1, 128},
              {"no mask, soft cap, 8192 keys", 8192, 0, FI_MASK_NONE, 30.f, -1, 176},
              {"causal, soft cap, 8192 keys", 8192, 0, FI_MASK_CAUSAL, 50.f, -1, 176},
              {"causal, soft cap, 4096 keys", 4096, 0, FI_MASK_CAUSAL, 30.f, -1, 128},
              {"causal, window, 8192 keys", 8192, 0, FI_MASK_CAUSAL, 0.f, 4000, 128},
              {"no mask, 65536 keys", 65536, 0, FI_MASK_NONE, 0.f, -1, 176},
              {"no mask, 64 queries, 65536 keys (K/V streamed)", 65536, 64, FI_MASK_NONE, 0.f, -1, 128},
              {"causal, 128 queries, 32768 keys (K/V streamed)", 32768, 128, FI_MASK_CAUSAL, 0.f, -1, 128},
              {"causal, soft cap, 128 queries, 32768 keys", 32768, 128, FI_MASK_CAUSAL, 30.f, -1, 176},
              {"no mask, 512 queries, 8192 keys (K/V in L2)", 8192, 512, FI_MASK_NONE, 0.f, -1, 176},
              {"causal, ALiBi, 8192 keys", 8192, 0, FI_MASK_CAUSAL, 0.f, -1, 176, 1},
              {"causal, ALiBi, 4096 keys", 4096, 0, FI_MASK_CAUSAL, 0.f, -1, 128, 1},
              {"no mask, ALiBi, 128 queries, 32768 keys", 32768, 128, FI_MASK_NONE, 0.f, -1, 176, 1},
              {"causal, ALiBi and soft cap, 8192 keys", 8192, 0, FI_MASK_CAUSAL, 30.f, -1, 128, 1},
              {"custom mask, a run per row, 8192 keys", 8192, 0, FI_MASK_CUSTOM, 0.f, -1, 176, 0, 1},
              {"custom mask, a run per row, 4096 keys", 4096, 0, FI_MASK_CUSTOM, 0.f, -1, 128, 0, 1},
              {"custom mask with holes, 8192 keys", 8192, 0, FI_MASK_CUSTOM, 0.f, -1, 128, 0, 2},
              {"custom mask, a run per row, soft cap, 8192 keys", 8192, 0, FI_MASK_CUSTOM, 30.f, -1, 128, 0, 1}};
  /* (FI_PREFILL_WS_DEEP=0 / 1: no deep-ring rule, those rows widened as the others) */
  const char *deep_env = getenv("FI_PREFILL_WS_DEEP");
  const int deep_rule = !deep_env || atoi(deep_env) < 0;
  int failures = 0;
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
    if (!deep_rule && strstr(rows[r].what, "streamed")) rows[r].want = 176;
    fi_attention_params prm = fi_attention_params_default(32, 8, 128);
    prm.mask_mode = rows[r].mask;
    prm.logits_soft_cap = rows[r].cap;
    prm.window_left = rows[r].window;
    if (rows[r].alibi) prm.pos_encoding = FI_POS_ALIBI;
    const int qo = rows[r].qo > 0 ? rows[r].qo : rows[r].len;
    int32_t ind[2] = {0, rows[r].len}, qind[2] = {0, qo};
    /* the causal pattern, bottom-right aligned; with holes: every 64th key dropped */
    const int64_t pairs = (int64_t)qo * rows[r].len;
    uint8_t *bits = rows[r].mask_bits ? calloc((size_t)(pairs + 7) / 8, 1) : NULL;
    int32_t mind[2] = {0, (int32_t)pairs};
    for (int64_t i = 0; bits && i < qo; ++i)
      for (int64_t j = 0; j <= i + rows[r].len - qo; ++j)
        if (rows[r].mask_bits == 1 || j % 64 != 7) {
          const int64_t b = i * rows[r].len + j;
          bits[b >> 3] |= (uint8_t)(1u << (b & 7));
        }
    const fi_custom_mask mask = {bits, mind};
    size_t ws = 0;
    fi_prefill_workspace_size(cuda, &prm, 1, qo, &ws);
    void *w = dmalloc(ws);
    fi_plan pl;
    fi_status s = fi_ragged_prefill_plan(cuda, &prm, 1, qind, ind, bits ? &mask : NULL, NULL, w,
                                         ws, &pl);
    cudaFree(w);
    free(bits);
    if (s == FI_SUCCESS && r == 0 && pl.tiles.cores != FI_CORES_WGMMA) {
      printf("the 176-key tile's rule: skipped (this runtime plans no wgmma tiles)\n");
      return 0;
    }
    if (s != FI_SUCCESS || pl.tiles.kv_tile != rows[r].want) {
      fprintf(stderr, "FAIL: %s: planned %s with kv_tile %d, expected %d\n", rows[r].what,
              fi_status_string(s), s == FI_SUCCESS ? (int)pl.tiles.kv_tile : -1, rows[r].want);
      ++failures;
    }
  }
  /* Over pages: 64 queries over 32768 keys (K/V streamed) widen over pages of 16 (the
   * 176-key tile beat the deep ring there, session 71; under every FI_PREFILL_WS_DEEP) and
   * keep 128 over pages of 32, which the 176-key tile does not take (the deep ring by the
   * rule). */
  for (int page = 16; page <= 32; page += 16) {
    const int keys = 32768, pages = keys / page, want = page == 16 ? 176 : 128;
    fi_attention_params prm = fi_attention_params_default(32, 8, 128);
    prm.page_size = page;
    int32_t qind[2] = {0, 64}, pind[2] = {0, pages}, last[1] = {page};
    int32_t *idx = (int32_t *)malloc(sizeof(int32_t) * pages);
    for (int j = 0; j < pages; ++j) idx[j] = j;
    const fi_page_table pt = {pind, idx, last};
    size_t ws = 0;
    fi_prefill_workspace_size(cuda, &prm, 1, 64, &ws);
    void *w = dmalloc(ws);
    fi_plan pl;
    fi_status s = fi_paged_prefill_plan(cuda, &prm, 1, qind, &pt, pages, NULL, NULL, w, ws, &pl);
    cudaFree(w);
    free(idx);
    if (s != FI_SUCCESS || pl.tiles.kv_tile != want) {
      fprintf(stderr, "FAIL: 64 queries over %d keys in pages of %d: planned %s with kv_tile %d, "
              "expected %d\n", keys, page, fi_status_string(s),
              s == FI_SUCCESS ? (int)pl.tiles.kv_tile : -1, want);
      ++failures;
    }
  }
  /* given with a soft cap, ALiBi or a custom mask alone: planned (the mask's runs take the
   * tile where every row keeps one run of keys); with ALiBi or a window beside a soft cap, or
   * a custom mask beside a window: refused naming the tile */
  for (int other = 0; other < 6; ++other) {
    fi_attention_params prm = fi_attention_params_default(32, 8, 128);
    prm.logits_soft_cap = other >= 3 ? 0.f : 30.f;
    if (other == 1 || other == 3) prm.pos_encoding = FI_POS_ALIBI;
    if (other == 2 || other == 5) prm.window_left = 64;
    if (other >= 4) prm.mask_mode = FI_MASK_CUSTOM;
    const fi_tiles wide = {128, 176, 0, FI_CORES_WGMMA};
    int32_t ind[2] = {0, 256};
    size_t ws = 0;
    fi_prefill_workspace_size(cuda, &prm, 1, 256, &ws);
    void *w = dmalloc(ws);
    fi_plan pl;
    uint8_t ones[256 * 256 / 8];
    memset(ones, 0xff, sizeof ones);
    int32_t mind[2] = {0, 256 * 256};
    const fi_custom_mask mask = {ones, mind};
    fi_status s = fi_ragged_prefill_plan(cuda, &prm, 1, ind, ind, other >= 4 ? &mask : NULL,
                                         &wide, w, ws, &pl);
    cudaFree(w);
    const int refused = other == 1 || other == 2 || other == 5;
    if (refused ? s != FI_ERROR_UNSUPPORTED || !strstr(fi_last_error(cuda), "kv_tile 176")
                : s != FI_SUCCESS || pl.tiles.kv_tile != 176) {
      fprintf(stderr, "FAIL: kv_tile 176 given with %s: %s (%s)\n",
              other == 1   ? "a soft cap and ALiBi"
              : other == 2 ? "a soft cap and a window"
              : other == 3 ? "ALiBi"
              : other == 4 ? "a custom mask"
              : other == 5 ? "a custom mask and a window"
                           : "a soft cap",
              fi_status_string(s), fi_last_error(cuda));
      ++failures;
    }
  }
  printf("the 176-key tile's rule: %s\n", failures ? "FAILED" : "as planned");
  return failures;
}

static const char *mask_name(fi_mask_mode m) {
  return m == FI_MASK_CAUSAL ? "causal" : m == FI_MASK_CUSTOM ? "custom" : "none";
}
static const char *pos_name(fi_pos_encoding p) {
  return p == FI_POS_ROPE_LLAMA ? "rope" : p == FI_POS_ALIBI ? "alibi" : "none";
}

static void describe(const config *c, char *buf, size_t n) {
  int off = snprintf(buf, n,
                     "%s %s/%s->%s hd%d heads %d/%d batch %d%s%s page %d mask %s%s%s pos %s win %d cap "
                     "%.1f lse %d split %d tiles %s%s%d/%d%s%s%s o pad %d lens",
                     c->paged ? "paged" : "ragged", fi_dtype_name(c->q_dtype),
                     fi_dtype_name(c->kv_dtype), fi_dtype_name(c->o_dtype), c->hd, c->qo_heads, c->kv_heads, c->batch,
                     c->paged ? (c->layout == FI_LAYOUT_NHD ? " NHD" : " HND") : "", "",
                     c->page_size, mask_name(c->mask),
                     c->mask != FI_MASK_CUSTOM ? ""
                     : c->mask_pattern == 1 ? " (causal bits)"
                     : c->mask_pattern == 2 ? " (blocks)"
                     : c->mask_pattern == 3 ? " (documents)" : " (random bits)",
                     c->mask == FI_MASK_CUSTOM && c->plan_without_bits ? " planned without bits" : "",
                     pos_name(c->pos), c->window_left,
                     c->soft_cap, c->with_lse, c->fixed_split, c->force_tiles ? "forced " : "",
                     c->tiles.cores == FI_CORES_WGMMA ? "wgmma " : "", c->tiles.q_tile,
                     c->tiles.kv_tile, c->use_stage ? " stage" : "",
                     c->head_scales ? " head-scales" : "", c->spiky ? " spiky keys" : "",
                     c->o_pad);
  for (int i = 0; i < c->batch && off < (int)n - 24; ++i)
    off += snprintf(buf + off, n - (size_t)off, " %d:%d", c->qo_len[i], c->kv_len[i]);
}

/* Returns 0 on pass. `cost` accumulates qo*kv*heads*hd for the work budget. */
/* One prefill run of config c on ctx (host or device pointers alike): paged or ragged K/V
 * of shape kv_dims, o and (when the config asks for it) lse. */
static fi_status run_on(fi_context *ctx, const fi_plan *plan, const config *c, const fi_tensor *q,
                        void *k, void *v, const int64_t *kv_dims, const int32_t *qo_indptr,
                        const int32_t *kv_indptr, const fi_page_table *pages,
                        const fi_custom_mask *mask, fi_tensor *o, fi_tensor *lse) {
  fi_tensor *l = c->with_lse ? lse : NULL;
  if (c->paged) {
    fi_paged_kv_cache kv = {fi_tensor_contiguous(k, c->kv_dtype, 4, kv_dims),
                            fi_tensor_contiguous(v, c->kv_dtype, 4, kv_dims), c->layout};
    return fi_paged_prefill_run(ctx, plan, q, qo_indptr, &kv, pages, mask, o, l);
  }
  fi_tensor tk = fi_tensor_contiguous(k, c->kv_dtype, 3, kv_dims);
  fi_tensor tv = fi_tensor_contiguous(v, c->kv_dtype, 3, kv_dims);
  return fi_ragged_prefill_run(ctx, plan, q, &tk, &tv, qo_indptr, kv_indptr, mask, o, l);
}

static void swap_i32(int32_t *v, int i, int j) {
  const int32_t t = v[i];
  v[i] = v[j];
  v[j] = t;
}

static int run_config(fi_context *host, fi_context *cuda, config *c, int idx) {
  const int B = c->batch, hd = c->hd, Hq = c->qo_heads, Hk = c->kv_heads;
  const size_t kvb = (c->kv_dtype == FI_DTYPE_E4M3 || c->kv_dtype == FI_DTYPE_E5M2) ? 1 : 2;
  const int fp8 = c->q_dtype == FI_DTYPE_E4M3; /* fp8 attention: o of o_dtype */
  const size_t qb = fp8 ? 1 : 2, ob = 2;
  const fi_dtype odt = c->o_dtype;
  int32_t *qo_indptr = calloc((size_t)B + 1, 4), *kv_indptr = calloc((size_t)B + 1, 4);
  int32_t *mask_indptr = calloc((size_t)B + 1, 4);
  for (int i = 0; i < B; ++i) {
    qo_indptr[i + 1] = qo_indptr[i] + c->qo_len[i];
    kv_indptr[i + 1] = kv_indptr[i] + c->kv_len[i];
    mask_indptr[i + 1] = mask_indptr[i] + c->qo_len[i] * c->kv_len[i];
  }
  const int64_t nnz_qo = qo_indptr[B], nnz_kv = kv_indptr[B];

  fi_attention_params prm = fi_attention_params_default(Hq, Hk, hd);
  prm.q_dtype = c->q_dtype;
  prm.kv_dtype = c->kv_dtype;
  prm.mask_mode = c->mask;
  prm.pos_encoding = c->pos;
  prm.window_left = c->window_left;
  prm.logits_soft_cap = c->soft_cap;
  prm.sm_scale = c->sm_scale;
  prm.k_scale = c->k_scale;
  prm.v_scale = c->v_scale;
  prm.o_dtype = odt;
  prm.q_scale = c->q_scale;
  prm.fixed_split_size = c->fixed_split;
  prm.page_size = c->paged ? c->page_size : 1;
  if (c->pos == FI_POS_ROPE_LLAMA) {
    prm.rope_scale = 1.f + (float)(rnd() % 4) * 0.5f;
    prm.rope_theta = (rnd() & 1) ? 1e4f : 5e5f;
  }

  /* fp8 attention: per-head scales in half of the configurations (host arrays for the host
   * plan, device copies for the CUDA ones: each plan keeps its pointers) */
  fi_attention_params prm_d = prm;
  float *hs_q = NULL, *hs_kv = NULL, *ds_q = NULL, *ds_kv = NULL;
  if (fp8 && (rnd() & 1)) {
    hs_q = malloc(sizeof(float) * (size_t)Hq);
    hs_kv = malloc(sizeof(float) * (size_t)(2 * Hk));
    for (int h = 0; h < Hq; ++h) hs_q[h] = 0.5f + 0.25f * (float)(rnd() % 5);
    for (int h = 0; h < 2 * Hk; ++h) hs_kv[h] = 0.5f + 0.25f * (float)(rnd() % 5);
    ds_q = dcopy(hs_q, sizeof(float) * (size_t)Hq);
    ds_kv = dcopy(hs_kv, sizeof(float) * (size_t)(2 * Hk));
    prm.q_scale_heads = hs_q;
    prm.k_scale_heads = hs_kv;
    prm.v_scale_heads = hs_kv + Hk;
    prm_d.q_scale_heads = ds_q;
    prm_d.k_scale_heads = ds_kv;
    prm_d.v_scale_heads = ds_kv + Hk;
    c->head_scales = 1;
  }

  /* Inputs. */
  uint16_t *q = malloc((size_t)nnz_qo * Hq * hd * qb);
  fill_random(q, c->q_dtype, (size_t)nnz_qo * Hq * hd);
  int64_t q_shape[3] = {nnz_qo, Hq, hd};

  /* Paged: a shuffled page pool with spare pages; ragged: packed k, v. */
  int32_t *page_indptr = calloc((size_t)B + 1, 4), *last_len = calloc((size_t)B + 1, 4);
  int32_t num_pages = 0, *indices = NULL;
  void *kbuf = NULL, *vbuf = NULL;
  size_t kv_elems = 0;
  int64_t kv_shape[4];
  if (c->paged) {
    for (int i = 0; i < B; ++i) {
      int np = (c->kv_len[i] + c->page_size - 1) / c->page_size;
      page_indptr[i + 1] = page_indptr[i] + np;
      last_len[i] = np ? c->kv_len[i] - (np - 1) * c->page_size : 1;
    }
    num_pages = page_indptr[B] + rint_in(0, 3);
    int32_t *perm = malloc((size_t)num_pages * 4 + 4);
    for (int i = 0; i < num_pages; ++i) perm[i] = i;
    /* Half the pools in order with a few pages swapped: most KV tiles are runs of
     * consecutive pages (one copy per tile on the warp-specialised kernel), some not. */
    if (rint_in(0, 1)) {
      const int swaps = rint_in(0, 3);
      for (int s = 0; s < swaps && s < num_pages - 1; ++s) {
        const int a = (int)(rnd() % (uint32_t)num_pages);
        swap_i32(perm, a, (int)(rnd() % (uint32_t)num_pages));
      }
    } else {
      for (int i = num_pages - 1; i > 0; --i) swap_i32(perm, i, (int)(rnd() % (uint32_t)(i + 1)));
    }
    indices = malloc((size_t)page_indptr[B] * 4 + 4);
    for (int i = 0; i < page_indptr[B]; ++i) indices[i] = perm[i];
    free(perm);
    if (c->layout == FI_LAYOUT_NHD) {
      kv_shape[0] = num_pages; kv_shape[1] = c->page_size; kv_shape[2] = Hk; kv_shape[3] = hd;
    } else {
      kv_shape[0] = num_pages; kv_shape[1] = Hk; kv_shape[2] = c->page_size; kv_shape[3] = hd;
    }
    kv_elems = (size_t)num_pages * c->page_size * Hk * hd;
  } else {
    kv_elems = (size_t)nnz_kv * Hk * hd;
  }
  kbuf = malloc(kv_elems * kvb + 16);
  vbuf = malloc(kv_elems * kvb + 16);
  fill_random(kbuf, c->kv_dtype, kv_elems);
  fill_random(vbuf, c->kv_dtype, kv_elems);
  /* (16-bit q without RoPE only. With RoPE the kernels round the rotated q and k to 16 bits
   * for the MMA where the host keeps fp32; fp8 attention sums q k on fp8 tensor cores with
   * fewer bits than fp32. Both errors grow with the logits, and spiky keys took a few
   * elements of such configurations past this test's bounds, before the lazy rescale as
   * after it. fp8 attention's own slack (0.75) makes its exact rescale common anyway.) */
  if (c->pos == FI_POS_ROPE_LLAMA || fp8) c->spiky = 0;
  if (c->spiky) spike_keys(kbuf, c->kv_dtype, kv_elems, hd);

  size_t mask_bytes = ((size_t)mask_indptr[B] + 7) / 8 + 1;
  uint8_t *mask_bits = malloc(mask_bytes);
  if (c->mask_pattern == 0) {
    uint32_t density = rnd() % 4; /* 25%..100% ones-ish */
    for (size_t i = 0; i < mask_bytes; ++i) {
      uint8_t b = (uint8_t)rnd();
      for (uint32_t d = 0; d < density; ++d) b |= (uint8_t)rnd();
      mask_bits[i] = b;
    }
  } else {
    memset(mask_bits, 0, mask_bytes);
    const int bq = 1 + (int)(rnd() % 200), bk = 16 + (int)(rnd() % 300);
    const int doc = c->mask_pattern == 3 ? 1 + (int)(rnd() % 600) : 1;
    for (int r = 0; r < B; ++r)
      for (int i = 0; i < c->qo_len[r]; ++i)
        for (int j = 0; j < c->kv_len[r]; ++j) {
          int keep;
          if (c->mask_pattern == 1) {
            keep = j <= i + c->kv_len[r] - c->qo_len[r];
          } else if (c->mask_pattern == 3) {
            const int qpos = i + c->kv_len[r] - c->qo_len[r];
            keep = j <= qpos && j / doc == qpos / doc;
          } else { /* a block's kind from a hash of (request, block row, block column) */
            uint32_t h = (uint32_t)(r * 7919 + (i / bq) * 104729 + (j / bk) * 1299709);
            h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
            const uint32_t kind = h % 3; /* 0 empty, 1 full, 2 random */
            keep = kind == 1 || (kind == 2 && (rnd() & 1));
          }
          if (keep) {
            const int64_t bit = (int64_t)mask_indptr[r] + (int64_t)i * c->kv_len[r] + j;
            mask_bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));
          }
        }
  }

  /* The bits past the last pair (the last byte's rest, then a whole byte) set: a kernel or
   * planner that reads past the mask would see kept pairs there. */
  for (int64_t bit = mask_indptr[B]; bit < (int64_t)mask_bytes * 8; ++bit)
    mask_bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));

  /* Plans. */
  fi_page_table hpages = {page_indptr, indices, last_len};
  fi_custom_mask hmask = {mask_bits, mask_indptr};
  const fi_custom_mask *hmask_p = c->mask == FI_MASK_CUSTOM ? &hmask : NULL;
  /* One custom-mask config in two plans the CUDA run without the bits (as the compiled
   * plan steps do): the run finds the rows' extents on the device. */
  const fi_custom_mask nobits = {NULL, mask_indptr};
  const fi_custom_mask *cmask_p = hmask_p && c->plan_without_bits ? &nobits : hmask_p;
  const fi_tiles *forced = c->force_tiles ? &c->tiles : NULL;
  size_t ws_h = 0, ws_d = 0;
  fi_status s;
  if ((s = fi_prefill_workspace_size(host, &prm, B, nnz_qo, &ws_h)) ||
      (s = fi_prefill_workspace_size(cuda, &prm, B, nnz_qo, &ws_d))) {
    fprintf(stderr, "config %d: workspace size: host: %s cuda: %s\n", idx, fi_last_error(host),
            fi_last_error(cuda));
    return 1;
  }
  void *wh = malloc(ws_h + 16), *wd = dmalloc(ws_d);
  /* The prefill stage (RoPE, fp8 KV and odd page sizes on the warp-specialised kernel), in
   * two configs of three (always with FI_TEST_PREFILL_WS): sized for the host plan's and
   * the device plan's page-table entries (the latter passes one more as num_indices). The
   * plans below see it (the heuristics take the fast kernel when a stage is set). */
  size_t stage_bytes = 0;
  void *stage = NULL;
  const int64_t stage_kv_rows = c->paged ? ((int64_t)page_indptr[B] + 1) * c->page_size : nnz_kv;
  if ((c->use_stage = ws_mode || fp8 || rnd() % 3 != 0)) {
    if ((s = fi_prefill_stage_size(cuda, &prm, c->paged, nnz_qo, stage_kv_rows, &stage_bytes))) {
      fprintf(stderr, "config %d: stage size: %s\n", idx, fi_last_error(cuda));
      return 1;
    }
    if (stage_bytes) {
      stage = dmalloc(stage_bytes);
      CK(cudaMemset(stage, 0xff, stage_bytes)); /* stale rows read as NaN */
    }
  }
  if ((s = fi_context_set_prefill_stage(cuda, stage, stage_bytes))) {
    fprintf(stderr, "config %d: set stage: %s\n", idx, fi_last_error(cuda));
    return 1;
  }
  fi_plan ph, pd;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (c->paged) {
      s = fi_paged_prefill_plan(host, &prm, B, qo_indptr, &hpages, num_pages, hmask_p, NULL, wh, ws_h, &ph);
      if (s == FI_SUCCESS)
        s = fi_paged_prefill_plan(cuda, &prm_d, B, qo_indptr, &hpages, num_pages, cmask_p, forced, wd, ws_d, &pd);
    } else {
      s = fi_ragged_prefill_plan(host, &prm, B, qo_indptr, kv_indptr, hmask_p, NULL, wh, ws_h, &ph);
      if (s == FI_SUCCESS)
        s = fi_ragged_prefill_plan(cuda, &prm_d, B, qo_indptr, kv_indptr, cmask_p, forced, wd, ws_d, &pd);
    }
    /* A fixed split of many query rows can need more partial rows than the workspace
     * budget holds (a documented plan error): then let the planner choose. */
    if (s == FI_ERROR_WORKSPACE_TOO_SMALL && prm.fixed_split_size > 0) {
      prm.fixed_split_size = prm_d.fixed_split_size = c->fixed_split = 0;
      continue;
    }
    break;
  }
  char desc[1024];
  if (s) {
    describe(c, desc, sizeof desc);
    fprintf(stderr, "config %d: plan failed: host: %s cuda: %s\n  %s\n", idx, fi_last_error(host),
            fi_last_error(cuda), desc);
    return 1;
  }
  c->tiles = pd.tiles;
  int32_t lead = 0;
  CK(cudaMemcpy(&lead, (const char *)wd + 9 * sizeof(int32_t), sizeof lead,
                cudaMemcpyDeviceToHost));
  lead_plans += lead > 0;

  /* Host run. */
  fi_tensor tq = fi_tensor_contiguous(q, c->q_dtype, 3, q_shape);
  void *oh = malloc((size_t)nnz_qo * Hq * hd * ob);
  float *lh = malloc((size_t)nnz_qo * Hq * 4 + 4);
  fi_tensor toh = fi_tensor_contiguous(oh, odt, 3, q_shape);
  int64_t lse_shape[2] = {nnz_qo, Hq};
  fi_tensor tlh = fi_tensor_contiguous(lh, FI_DTYPE_F32, 2, lse_shape);
  int64_t rk_shape[3] = {nnz_kv, Hk, hd};
  const int64_t *kv_dims = c->paged ? kv_shape : rk_shape;
  s = run_on(host, &ph, c, &tq, kbuf, vbuf, kv_dims, qo_indptr, kv_indptr, &hpages, hmask_p,
             &toh, &tlh);
  if (s) { fprintf(stderr, "config %d: host run: %s\n", idx, fi_last_error(host)); return 1; }

  /* CUDA run on poisoned outputs. */
  void *dq = dcopy(q, (size_t)nnz_qo * Hq * hd * qb);
  void *dk = dcopy(kbuf, kv_elems * kvb), *dv = dcopy(vbuf, kv_elems * kvb);
  int32_t *dqo = dcopy(qo_indptr, (size_t)(B + 1) * 4), *dkv = dcopy(kv_indptr, (size_t)(B + 1) * 4);
  int32_t *dpi = dcopy(page_indptr, (size_t)(B + 1) * 4), *dll = dcopy(last_len, (size_t)(B + 1) * 4);
  int32_t *dind = dcopy(indices ? indices : page_indptr, indices ? (size_t)page_indptr[B] * 4 + 4 : 4);
  uint8_t *dmb = dcopy(mask_bits, mask_bytes);
  int32_t *dmi = dcopy(mask_indptr, (size_t)(B + 1) * 4);
  /* o's token rows o_row elements apart: the padding must stay poisoned. */
  const int64_t o_row = (int64_t)Hq * hd + c->o_pad;
  const size_t o_dev_bytes = (size_t)nnz_qo * (size_t)o_row * ob;
  void *dout = dmalloc(o_dev_bytes);
  uint8_t *o_dev_host = malloc(o_dev_bytes + 1);
  size_t pad_touched = 0;
  float *dlse = dmalloc((size_t)nnz_qo * Hq * 4 + 4);
  fi_tensor dtq = fi_tensor_contiguous(dq, c->q_dtype, 3, q_shape);
  fi_tensor dto = fi_tensor_contiguous(dout, odt, 3, q_shape);
  dto.strides[0] = o_row;
  fi_tensor dtl = fi_tensor_contiguous(dlse, FI_DTYPE_F32, 2, lse_shape);
  fi_custom_mask dmask = {dmb, dmi};
  const fi_custom_mask *dmask_p = c->mask == FI_MASK_CUSTOM ? &dmask : NULL;
  const fi_page_table dpages = {dpi, dind, dll};
  const size_t o_bytes = (size_t)nnz_qo * Hq * hd * ob, l_bytes = (size_t)nnz_qo * Hq * 4;
  void *od = malloc(o_bytes), *od2 = malloc(o_bytes);
  float *ld = malloc(l_bytes + 4), *ld2 = malloc(l_bytes + 4);
  /* Two runs of the same plan, outputs poisoned before each: the second must equal the
   * first bit for bit (the persistent kernel's scheduler starts from zero every run). */
  for (int rep = 0; rep < 2; ++rep) {
    CK(cudaMemset(dout, 0xff, o_dev_bytes)); /* NaN in f16 and bf16 */
    CK(cudaMemset(dlse, 0xff, l_bytes + 4)); /* NaN in f32 */
    s = run_on(cuda, &pd, c, &dtq, dk, dv, kv_dims, dqo, dkv, &dpages, dmask_p, &dto, &dtl);
    describe(c, desc, sizeof desc);
    if (s) { fprintf(stderr, "config %d: cuda run: %s\n  %s\n", idx, fi_last_error(cuda), desc); return 1; }
    CK(cudaDeviceSynchronize());
    pad_touched += fetch_rows(rep ? od2 : od, dout, o_dev_host, nnz_qo, (size_t)Hq * hd * ob,
                              (size_t)c->o_pad * ob);
    CK(cudaMemcpy(rep ? ld2 : ld, dlse, l_bytes, cudaMemcpyDeviceToHost));
  }
  const int rerun_differs =
      memcmp(od, od2, o_bytes) != 0 || (c->with_lse && memcmp(ld, ld2, l_bytes) != 0);

  /* The same plan in the context with FI_PREFILL_Q_AHEAD=0, FI_PREFILL_L2_HINTS=0 and
   * FI_PREFILL_V_LAG=0: the same bits. */
  int q_late_differs = 0;
  if (cuda_q_late) {
    CK(cudaMemset(dout, 0xff, o_dev_bytes));
    CK(cudaMemset(dlse, 0xff, l_bytes + 4));
    s = fi_context_set_prefill_stage(cuda_q_late, stage, stage_bytes);
    if (s == FI_SUCCESS)
      s = run_on(cuda_q_late, &pd, c, &dtq, dk, dv, kv_dims, dqo, dkv, &dpages, dmask_p, &dto,
                 &dtl);
    CK(cudaDeviceSynchronize());
    fi_context_set_prefill_stage(cuda_q_late, NULL, 0);
    if (s != FI_SUCCESS) {
      fprintf(stderr,
              "config %d: run with FI_PREFILL_Q_AHEAD=0 FI_PREFILL_L2_HINTS=0 "
              "FI_PREFILL_V_LAG=0: %s\n", idx,
              fi_last_error(cuda_q_late));
      q_late_differs = 1;
    } else {
      pad_touched += fetch_rows(od2, dout, o_dev_host, nnz_qo, (size_t)Hq * hd * ob,
                                (size_t)c->o_pad * ob);
      CK(cudaMemcpy(ld2, dlse, l_bytes, cudaMemcpyDeviceToHost));
      q_late_differs = memcmp(od, od2, o_bytes) != 0 ||
                       (c->with_lse && memcmp(ld, ld2, l_bytes) != 0);
      ++q_late_runs;
    }
  }

  /* The same problem planned on the device (fi_*_prefill_plan_device, with the variant
   * of the host plan) into a poisoned workspace, run into poisoned outputs: bit-identical
   * to the host-planned run. Custom masks need a host plan (refused with a message). */
  int device_differs = 0;
  {
    void *wd2 = dmalloc(ws_d);
    CK(cudaMemset(wd2, 0xff, ws_d));
    CK(cudaMemset(dout, 0xff, o_dev_bytes));
    CK(cudaMemset(dlse, 0xff, l_bytes + 4));
    fi_plan pdev;
    if (c->paged)
      s = fi_paged_prefill_plan_device(cuda, &prm_d, B, dqo, nnz_qo, &dpages,
                                       (int64_t)page_indptr[B] + 1, num_pages, &pd.tiles, wd2,
                                       ws_d, &pdev);
    else
      s = fi_ragged_prefill_plan_device(cuda, &prm_d, B, dqo, nnz_qo, dkv, nnz_kv, &pd.tiles, wd2,
                                        ws_d, &pdev);
    if (c->mask == FI_MASK_CUSTOM) {
      if (s != FI_ERROR_UNSUPPORTED || !strstr(fi_last_error(cuda), "custom mask")) {
        fprintf(stderr, "config %d: a device plan with a custom mask was not refused (%s)\n",
                idx, fi_last_error(cuda));
        device_differs = 1;
      }
    } else {
      if (s == FI_SUCCESS)
        s = run_on(cuda, &pdev, c, &dtq, dk, dv, kv_dims, dqo, dkv, &dpages, NULL, &dto, &dtl);
      CK(cudaDeviceSynchronize());
      if (s == FI_SUCCESS) s = fi_plan_device_status(cuda, &pdev);
      if (s != FI_SUCCESS) {
        fprintf(stderr, "config %d: device plan: %s\n", idx, fi_last_error(cuda));
        device_differs = 1;
      } else {
        pad_touched += fetch_rows(od2, dout, o_dev_host, nnz_qo, (size_t)Hq * hd * ob,
                                  (size_t)c->o_pad * ob);
        CK(cudaMemcpy(ld2, dlse, l_bytes, cudaMemcpyDeviceToHost));
        device_differs = memcmp(od, od2, o_bytes) != 0 ||
                         (c->with_lse && memcmp(ld, ld2, l_bytes) != 0);
        ++device_plans_run;
      }
    }
    cudaFree(wd2);
  }

  /* Compare every element. */
  const size_t n = (size_t)nnz_qo * Hq * hd;
  const double rtol = odt == FI_DTYPE_BF16 ? 2e-2 : 1e-2;
  double maxref = 0, num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    double r = load_elem(oh, odt, i);
    if (fabs(r) > maxref) maxref = fabs(r);
  }
  double atol = rtol * (maxref > 0 ? maxref : 1.0);
  /* fp8 attention rounds P to e4m3 for P V (relative error <= 2^-4 per probability), so an
   * output may move by up to 2^-4 of the largest |v_scale * v| its row reads; the RMS
   * error over all elements must stay at the few percent that rounding gives. */
  double rms_tol = rtol;
  if (fp8) {
    double vmax = 0;
    for (size_t i = 0; i < kv_elems; ++i) {
      double v = fabs((double)fi_test_e4m3(((const uint8_t *)vbuf)[i]) * c->v_scale);
      if (v > vmax) vmax = v;
    }
    if (hs_kv) { /* (the largest per-head v scale: a bound, not each head's own) */
      double hv = 0;
      for (int h = 0; h < Hk; ++h) hv = hs_kv[Hk + h] > hv ? hs_kv[Hk + h] : hv;
      vmax *= hv;
    }
    atol = 0.0625 * vmax + rtol * maxref;
    rms_tol = 0.04;
  }
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < n; ++i) {
    double r = load_elem(oh, odt, i), g = load_elem(od, odt, i);
    num += (g - r) * (g - r);
    den += r * r;
    if (!(fabs(g - r) <= atol + rtol * fabs(r))) {
      if (!bad) first_bad = i;
      ++bad;
    }
  }
  double rel = den > 0 ? sqrt(num / den) : sqrt(num);
  size_t lbad = 0, first_lbad = 0;
  if (c->with_lse) {
    /* With RoPE the kernels round the rotated q and k to q's 16-bit type for the MMA where
     * the host keeps fp32 (see spiky above): each logit moves by at most (2u + u^2)
     * sm_scale |q| |k| (u the type's unit roundoff; Cauchy-Schwarz, the rotation keeps the
     * norms; k as dequantized), so the LSE by at most the largest such move. */
    double lse_slack = 0;
    if (c->pos == FI_POS_ROPE_LLAMA && !fp8) {
      const double qn = gpu_max_row_norm(q, c->q_dtype, (size_t)nnz_qo * Hq, hd),
                   kn = gpu_max_row_norm(kbuf, c->kv_dtype, kv_elems / (size_t)hd, hd);
      const double ks = c->k_scale; /* (per-head scales come with fp8 attention only) */
      const double u = c->q_dtype == FI_DTYPE_BF16 ? 0x1p-8 : 0x1p-11;
      lse_slack = (2 * u + u * u) * fabs((double)c->sm_scale) * qn * kn * ks;
    }
    for (size_t i = 0; i < (size_t)nnz_qo * Hq; ++i) {
      double r = lh[i], g = ld[i];
      int ok = (isinf(r) && r < 0) ? (isinf(g) && g < 0)
                                   : fabs(g - r) <= 1e-2 * (1 + fabs(r)) + lse_slack;
      if (!ok) {
        if (!lbad) first_lbad = i;
        ++lbad;
      }
    }
  }
  int fail = bad > 0 || lbad > 0 || !(rel <= rms_tol) || rerun_differs || device_differs ||
             q_late_differs || pad_touched > 0;
  if (fail) {
    fprintf(stderr, "FAIL config %d: %s\n  o: %zu/%zu elements off (first %zu: gpu %g host %g), rel %.3g; lse: %zu off",
            idx, desc, bad, n, first_bad, bad ? load_elem(od, odt, first_bad) : 0.0,
            bad ? load_elem(oh, odt, first_bad) : 0.0, rel, lbad);
    if (lbad) fprintf(stderr, " (first %zu: gpu %g host %g)", first_lbad, ld[first_lbad], lh[first_lbad]);
    if (rerun_differs) fprintf(stderr, "; a second run of the plan differs from the first");
    if (device_differs) fprintf(stderr, "; the device-planned run differs from the host-planned one");
    if (q_late_differs)
      fprintf(stderr, "; the run with FI_PREFILL_Q_AHEAD=0 FI_PREFILL_L2_HINTS=0 "
                      "FI_PREFILL_V_LAG=0 differs");
    if (pad_touched) fprintf(stderr, "; %zu bytes written between o's rows", pad_touched);
    fprintf(stderr, "\n");
  } else if (getenv("FI_TEST_VERBOSE")) {
    printf("ok config %d: rel %.2e  %s\n", idx, rel, desc);
  }

  cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dqo); cudaFree(dkv); cudaFree(dpi);
  cudaFree(dll); cudaFree(dind); cudaFree(dmb); cudaFree(dmi); cudaFree(dout); cudaFree(dlse);
  cudaFree(wd);
  cudaFree(ds_q); cudaFree(ds_kv); free(hs_q); free(hs_kv);
  fi_context_set_prefill_stage(cuda, NULL, 0);
  cudaFree(stage);
  free(wh); free(q); free(kbuf); free(vbuf); free(mask_bits); free(oh); free(lh); free(od);
  free(ld); free(od2); free(ld2); free(qo_indptr); free(kv_indptr); free(mask_indptr); free(page_indptr);
  free(last_len); free(indices); free(o_dev_host);
  return fail;
}

/* Graph capture: one ragged prefill run (RoPE through the stage pass + soft cap + window +
 * causal + LSE, HQ / HK query heads per KV head: 3, which does not divide 128, or 4, whose
 * output rows the copy engine stores through a tensor map of o; on Hopper the
 * warp-specialised kernel is required) captured
 * with plan A, then re-planned with plan B (other batch and lengths, more work units, same
 * tensors at their capacity) into the same workspace with the indptrs rewritten in place;
 * each replay's output (poisoned before) is compared with the host backend's. */
static int graph_test(fi_context *host, int HQ, int HK) {
  enum { HD = 128, CAP_Q = 1024, CAP_KV = 2048 };
  saved_env warp_spec;
  if (hopper) set_env_saved("FI_PREFILL_WARP_SPEC", "2", 1, &warp_spec);
  fi_context *cuda = NULL;
  const fi_status made = fi_context_create(FI_BACKEND_CUDA, &cuda);
  if (hopper) put_env_back("FI_PREFILL_WARP_SPEC", &warp_spec);
  if (made) { fprintf(stderr, "graph: context\n"); return 1; }
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (fi_context_set_stream(cuda, stream)) { fprintf(stderr, "graph: %s\n", fi_last_error(cuda)); return 1; }
  fi_attention_params prm = fi_attention_params_default(HQ, HK, HD);
  prm.mask_mode = FI_MASK_CAUSAL;
  prm.logits_soft_cap = 30.f;
  prm.window_left = 300;
  prm.pos_encoding = FI_POS_ROPE_LLAMA; /* through the stage pass, under capture too */
  const size_t qn = (size_t)CAP_Q * HQ * HD, kn = (size_t)CAP_KV * HK * HD;
  uint16_t *q = malloc(qn * 2), *k = malloc(kn * 2), *v = malloc(kn * 2), *oh = malloc(qn * 2);
  uint16_t *og = malloc(qn * 2);
  float *lh = malloc((size_t)CAP_Q * HQ * 4), *lg = malloc((size_t)CAP_Q * HQ * 4);
  fill_random(q, FI_DTYPE_F16, qn);
  fill_random(k, FI_DTYPE_F16, kn);
  fill_random(v, FI_DTYPE_F16, kn);
  void *dq = dcopy(q, qn * 2), *dk = dcopy(k, kn * 2), *dv = dcopy(v, kn * 2);
  void *dout = dmalloc(qn * 2);
  float *dlse = dmalloc((size_t)CAP_Q * HQ * 4);
  int32_t *dqo = dmalloc(4 * 4), *dkv = dmalloc(4 * 4);
  const int64_t qs[3] = {CAP_Q, HQ, HD}, ks[3] = {CAP_KV, HK, HD}, ls[2] = {CAP_Q, HQ};
  fi_tensor tq = fi_tensor_contiguous(q, FI_DTYPE_F16, 3, qs);
  fi_tensor tk = fi_tensor_contiguous(k, FI_DTYPE_F16, 3, ks);
  fi_tensor tv = fi_tensor_contiguous(v, FI_DTYPE_F16, 3, ks);
  fi_tensor to = fi_tensor_contiguous(oh, FI_DTYPE_F16, 3, qs);
  fi_tensor tl = fi_tensor_contiguous(lh, FI_DTYPE_F32, 2, ls);
  fi_tensor dtq = fi_tensor_contiguous(dq, FI_DTYPE_F16, 3, qs);
  fi_tensor dtk = fi_tensor_contiguous(dk, FI_DTYPE_F16, 3, ks);
  fi_tensor dtv = fi_tensor_contiguous(dv, FI_DTYPE_F16, 3, ks);
  fi_tensor dto = fi_tensor_contiguous(dout, FI_DTYPE_F16, 3, qs);
  fi_tensor dtl = fi_tensor_contiguous(dlse, FI_DTYPE_F32, 2, ls);
  /* A: 2 requests, B: 3 (q and kv totals within the capacities) */
  static const int32_t qo_a[] = {0, 300, 400}, kv_a[] = {0, 600, 1000};
  static const int32_t qo_b[] = {0, 500, 520, 920}, kv_b[] = {0, 900, 1400, 2000};
  size_t ws = 0;
  fi_tiles ws_tiles = {128, 128, 1, FI_CORES_WGMMA};
  int failed = 0, units[2] = {0, 0};
  void *w = NULL, *wh = NULL;
  size_t wsh = 0;
  cudaGraphExec_t exec = NULL;
  if (fi_prefill_workspace_size(cuda, &prm, 3, CAP_Q, &ws) ||
      fi_prefill_workspace_size(host, &prm, 3, CAP_Q, &wsh)) {
    fprintf(stderr, "graph: workspace size: %s\n", fi_last_error(cuda));
    return 1;
  }
  w = dmalloc(ws);
  wh = malloc(wsh);
  size_t stage_bytes = 0;
  void *stage = NULL;
  if (fi_prefill_stage_size(cuda, &prm, 0, CAP_Q, CAP_KV, &stage_bytes)) {
    fprintf(stderr, "graph: stage size: %s\n", fi_last_error(cuda));
    return 1;
  }
  if (hopper && stage_bytes == 0) {
    fprintf(stderr, "graph: a RoPE prefill on Hopper needs no stage?\n");
    return 1;
  }
  if (stage_bytes) stage = dmalloc(stage_bytes);
  if (fi_context_set_prefill_stage(cuda, stage, stage_bytes)) {
    fprintf(stderr, "graph: set stage: %s\n", fi_last_error(cuda));
    return 1;
  }
  for (int phase = 0; phase < 2; ++phase) {
    const int32_t *qo = phase ? qo_b : qo_a, *kv = phase ? kv_b : kv_a;
    const int batch = phase ? 3 : 2;
    CK(cudaMemcpyAsync(dqo, qo, 4 * (size_t)(batch + 1), cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(dkv, kv, 4 * (size_t)(batch + 1), cudaMemcpyHostToDevice, stream));
    fi_plan pd, ph;
    if (fi_ragged_prefill_plan(cuda, &prm, batch, qo, kv, NULL, hopper ? &ws_tiles : NULL, w, ws,
                               &pd) ||
        fi_ragged_prefill_plan(host, &prm, batch, qo, kv, NULL, NULL, wh, wsh, &ph)) {
      fprintf(stderr, "graph: plan: %s / %s\n", fi_last_error(cuda), fi_last_error(host));
      return 1;
    }
    units[phase] = pd.num_work_units;
    if (phase == 0) {
      cudaGraph_t graph;
      CK(cudaStreamSynchronize(stream));
      CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      fi_status s = fi_ragged_prefill_run(cuda, &pd, &dtq, &dtk, &dtv, dqo, dkv, NULL, &dto, &dtl);
      CK(cudaStreamEndCapture(stream, &graph));
      if (s) { fprintf(stderr, "graph: captured run: %s\n", fi_last_error(cuda)); return 1; }
      CK(cudaGraphInstantiate(&exec, graph, 0));
      CK(cudaGraphDestroy(graph));
    }
    CK(cudaMemsetAsync(dout, 0xff, qn * 2, stream));
    CK(cudaMemsetAsync(dlse, 0xff, (size_t)CAP_Q * HQ * 4, stream));
    CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(og, dout, qn * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(lg, dlse, (size_t)CAP_Q * HQ * 4, cudaMemcpyDeviceToHost));
    if (fi_ragged_prefill_run(host, &ph, &tq, &tk, &tv, qo, kv, NULL, &to, &tl)) {
      fprintf(stderr, "graph: host run: %s\n", fi_last_error(host));
      return 1;
    }
    const size_t n = (size_t)qo[batch] * HQ * HD;
    double maxref = 0;
    for (size_t i = 0; i < n; ++i) maxref = fmax(maxref, fabs(load_elem(oh, FI_DTYPE_F16, i)));
    size_t bad = 0, lbad = 0;
    for (size_t i = 0; i < n; ++i) {
      double r = load_elem(oh, FI_DTYPE_F16, i), g = load_elem(og, FI_DTYPE_F16, i);
      bad += !(fabs(g - r) <= 1e-2 * maxref + 1e-2 * fabs(r));
    }
    for (size_t i = 0; i < (size_t)qo[batch] * HQ; ++i)
      lbad += !(fabs(lg[i] - lh[i]) <= 1e-2 * (1 + fabs(lh[i])));
    printf("prefill graph replay %s (group %d, %d work units): %zu/%zu o, %zu lse elements "
           "off: %s\n", phase ? "after re-plan" : "as captured", HQ / HK, pd.num_work_units, bad, n, lbad,
           bad || lbad ? "FAIL" : "ok");
    failed |= bad || lbad;
  }
  if (units[0] == units[1]) {
    printf("prefill graph test: plans A and B have the same unit count; the test proves less\n");
    failed = 1;
  }
  cudaGraphExecDestroy(exec);
  cudaFree(stage);
  cudaFree(w); cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout); cudaFree(dlse);
  cudaFree(dqo); cudaFree(dkv);
  free(wh); free(q); free(k); free(v); free(oh); free(og); free(lh); free(lg);
  cudaStreamDestroy(stream);
  fi_context_destroy(cuda);
  return failed;
}

/* The prefill stage's bad input on CUDA: a misaligned or half-given buffer is refused at
 * once; with the warp-specialised kernel required (FI_TEST_PREFILL_WS on Hopper), a RoPE run
 * without a stage (or with one too small) fails naming the bytes it needs. */
static int stage_refusals(fi_context *cuda) {
  int failed = 0;
  void *buf = dmalloc(4096);
  fi_status s = fi_context_set_prefill_stage(cuda, (char *)buf + 16, 1024);
  if (s != FI_ERROR_INVALID_ARGUMENT || !strstr(fi_last_error(cuda), "256-byte aligned")) {
    fprintf(stderr, "FAIL: a misaligned stage was not refused (%s)\n", fi_last_error(cuda));
    failed = 1;
  }
  s = fi_context_set_prefill_stage(cuda, buf, 0);
  if (s != FI_ERROR_INVALID_ARGUMENT || !strstr(fi_last_error(cuda), "pass both")) {
    fprintf(stderr, "FAIL: a stage without a size was not refused (%s)\n", fi_last_error(cuda));
    failed = 1;
  }
  if (hopper && ws_mode) {
    enum { H = 4, D = 128, N = 200 };
    fi_attention_params prm = fi_attention_params_default(H, H, D);
    prm.pos_encoding = FI_POS_ROPE_LLAMA;
    prm.mask_mode = FI_MASK_CAUSAL;
    int32_t ind[2] = {0, N};
    int32_t *dind = dcopy(ind, sizeof ind);
    const int64_t shape[3] = {N, H, D};
    void *dq = dmalloc((size_t)N * H * D * 2), *dout = dmalloc((size_t)N * H * D * 2);
    fi_tensor tq = fi_tensor_contiguous(dq, FI_DTYPE_F16, 3, shape);
    fi_tensor to = fi_tensor_contiguous(dout, FI_DTYPE_F16, 3, shape);
    fi_tiles t = {128, 128, 0, FI_CORES_WGMMA};
    size_t ws = 0, need = 0;
    fi_prefill_workspace_size(cuda, &prm, 1, N, &ws);
    fi_prefill_stage_size(cuda, &prm, 0, N, N, &need);
    void *w = dmalloc(ws);
    fi_plan plan;
    for (int attempt = 0; attempt < 2; ++attempt) {
      /* no stage, then one a byte short of the need (rounded down to 256) */
      if (attempt == 1) fi_context_set_prefill_stage(cuda, buf, (need - 1) / 256 * 256);
      s = fi_ragged_prefill_plan(cuda, &prm, 1, ind, ind, NULL, &t, w, ws, &plan);
      if (s == FI_SUCCESS)
        s = fi_ragged_prefill_run(cuda, &plan, &tq, &tq, &tq, dind, dind, NULL, &to, NULL);
      char want[64];
      snprintf(want, sizeof want, "prefill stage of %zu bytes", need);
      if (s != FI_ERROR_UNSUPPORTED || !strstr(fi_last_error(cuda), want)) {
        fprintf(stderr, "FAIL: a RoPE run without a large enough stage: %s \"%s\"\n",
                fi_status_string(s), fi_last_error(cuda));
        failed = 1;
      } else {
        printf("RoPE without a stage refused: %s\n", fi_last_error(cuda));
      }
      if (need - 1 < 256) break; /* (never: a stage holds Q and K rows) */
    }
    fi_context_set_prefill_stage(cuda, NULL, 0);
    cudaFree(w); cudaFree(dq); cudaFree(dout); cudaFree(dind);
  }
  cudaFree(buf);
  return failed;
}

/* Draws config number i; about a sixth of the configs exercise one feature alone, the rest
 * combine them at random. */
static void draw_config(config *c, int i) {
  static int qo_buf[64], kv_buf[64];
  memset(c, 0, sizeof *c);
  c->qo_len = qo_buf;
  c->kv_len = kv_buf;
  c->paged = rnd() & 1;
  c->q_dtype = (rnd() & 1) ? FI_DTYPE_BF16 : FI_DTYPE_F16;
  uint32_t kvr = rnd() % 8;
  c->kv_dtype = kvr == 0 ? FI_DTYPE_E4M3 : kvr == 1 ? FI_DTYPE_E5M2 : c->q_dtype;
  static const int hds[] = {64, 128, 128, 128, 256};
  c->hd = hds[rnd() % 5];
  if (getenv("FI_TEST_HEAD_DIM")) c->hd = atoi(getenv("FI_TEST_HEAD_DIM")); /* one head dim */
  /* {32, 1} and {16, 1}: a GQA group larger than a 16/32-row tile, so one work unit's
   * packed rows span several query chunks of the CTA. */
  static const int heads[][2] = {{1, 1}, {4, 4}, {4, 1}, {8, 2}, {8, 1}, {6, 2},
                                 {32, 8}, {16, 2}, {12, 4}, {32, 1}, {16, 1},
                                 {10, 2}, {14, 2}, {12, 1}, {6, 1}};
  int hsel = (int)(rnd() % 15);
  c->qo_heads = heads[hsel][0];
  c->kv_heads = heads[hsel][1];
  c->layout = (rnd() & 1) ? FI_LAYOUT_HND : FI_LAYOUT_NHD;
  static const int pss[] = {1, 3, 8, 16, 16, 16, 32, 64, 100, 256, 1024};
  c->page_size = pss[rnd() % 11];
  c->k_scale = c->kv_dtype == c->q_dtype ? 1.f : 0.25f + 0.5f * (float)(rnd() % 4);
  c->v_scale = c->kv_dtype == c->q_dtype ? 1.f : 0.5f + 0.25f * (float)(rnd() % 4);
  c->sm_scale = (rnd() & 1) ? 1.f / sqrtf((float)c->hd) : 0.02f + 0.1f * fabsf(rfloat() * rfloat());
  c->window_left = -1;
  c->spiky = rnd() % 4 == 0;
  c->fixed_split = 0;
  c->mask_pattern = (int)(rnd() % 4);
  c->plan_without_bits = (int)(rnd() & 1);
  int solo = i % 6 == 0 ? (int)(rnd() % 7) : -1; /* one feature alone */
  if (solo >= 0) {
    c->mask = solo == 0 ? FI_MASK_CAUSAL : solo == 1 ? FI_MASK_CUSTOM : FI_MASK_NONE;
    c->pos = solo == 2 ? FI_POS_ROPE_LLAMA : solo == 3 ? FI_POS_ALIBI : FI_POS_NONE;
    c->soft_cap = solo == 4 ? 5.f + 20.f * (float)(rnd() % 3) : 0.f;
    c->with_lse = solo == 5 || (rnd() & 1);
  } else {
    uint32_t m = rnd() % 3;
    c->mask = m == 0 ? FI_MASK_NONE : m == 1 ? FI_MASK_CAUSAL : FI_MASK_CUSTOM;
    uint32_t pe = rnd() % 4;
    c->pos = pe == 1 ? FI_POS_ROPE_LLAMA : pe == 2 ? FI_POS_ALIBI : FI_POS_NONE;
    c->soft_cap = rnd() % 3 == 0 ? 10.f + 20.f * fabsf(rfloat() * rfloat()) : 0.f;
    c->with_lse = rnd() & 1;
    uint32_t sp = rnd() % 4;
    c->fixed_split = sp == 0 ? -1 : sp == 1 ? 64 + (int)(rnd() % 1000) : 0;
  }
  if (mask_runs_mode) { /* a custom mask of one run per row, planned with its bits */
    c->mask = FI_MASK_CUSTOM;
    c->mask_pattern = (c->mask_pattern & 1) ? 1 : 3;
    c->plan_without_bits = 0;
  }
  /* Lengths: mostly short/medium, a few long (the host oracle's cost bounds them). */
  uint32_t lk = rnd() % 10;
  int maxlen = lk < 5 ? 64 : lk < 8 ? 512 : lk < 9 ? 2048 : 8192;
  const char *cap_env = getenv("FI_TEST_MAXLEN"); /* short runs under compute-sanitizer */
  if (cap_env && atoi(cap_env) > 0 && maxlen > atoi(cap_env)) maxlen = atoi(cap_env);
  c->batch = maxlen >= 2048 ? rint_in(1, 2) : rint_in(1, 8);
  if (maxlen == 8192) { c->qo_heads = c->qo_heads > 4 ? 4 : c->qo_heads; if (c->qo_heads % c->kv_heads) c->kv_heads = 1; c->hd = c->hd > 128 ? 128 : c->hd; }
  for (int b = 0; b < c->batch; ++b) {
    int kv = rint_in(1, maxlen);
    int qo = (rnd() % 3 == 0) ? kv : rint_in(1, kv);
    if (maxlen == 8192 && rnd() % 2) qo = rint_in(1, kv < 256 ? kv : 256); /* long KV, short append */
    /* more query rows than keys (bottom-right aligned: the first rows at negative positions;
     * the causal mask refuses it) */
    if (c->mask != FI_MASK_CAUSAL && rnd() % 8 == 0) qo = kv + rint_in(1, 64);
    if (rnd() % 12 == 0) qo = 0; /* an empty request (no query rows) */
    c->qo_len[b] = qo;
    c->kv_len[b] = kv;
  }
  /* One config in eight: one long request beside short ones (a prefill chunk batched with
   * decodes): its units cost more than twice the mean and lead (planner.c lead_units). */
  if (i % 8 == 4 && maxlen >= 512) {
    if (c->batch < 4) c->batch = 4;
    c->kv_len[0] = c->qo_len[0] = rint_in(maxlen / 2, maxlen);
    for (int b = 1; b < c->batch; ++b) {
      c->qo_len[b] = rint_in(1, 4);
      c->kv_len[b] = rint_in(c->qo_len[b], 64);
    }
  }
  /* An empty request in config 1 and an empty batch (tensors of zero rows) in config 2 on
   * every run, short ones under compute-sanitizer included; more at random. */
  if (i == 1) c->qo_len[0] = 0;
  if (i == 2 || rnd() % 40 == 0) c->batch = 0;
  if (c->batch > 0 && (solo == 6 || (solo < 0 && rnd() % 4 == 0)))
    c->window_left = rint_in(0, c->kv_len[0]);
  c->force_tiles = rnd() % 3 == 0;
  /* FI_TEST_PREFILL_WS=1 (Hopper): every config on the warp-specialised kernel (wgmma
   * 128 x 128 tiles, head_dim 64 or 128; 128 x 64 at head_dim 256), with soft cap, ALiBi,
   * custom masks, windows, RoPE, fp8 KV, page sizes of every kind and every GQA group still
   * drawn at random (the last three through the stage pass); the CUDA context then
   * requires that kernel (FI_PREFILL_WARP_SPEC=2, set in main), so a run that would fall
   * back fails. */
  c->o_dtype = c->q_dtype;
  c->q_scale = 1.f;
  /* fp8 attention (Hopper): e4m3 q, k and v with scales, f16 or bf16 output, head_dim 128,
   * no RoPE (refused); every other feature as drawn. All configs with FI_TEST_PREFILL_FP8,
   * else one in five of those on Hopper that force no tiles (the forced ones keep covering
   * every compiled variant). */
  if (hopper && !ws_off && (fp8_mode || (!c->force_tiles && rnd() % 5 == 0))) {
    c->o_dtype = c->q_dtype;
    c->q_dtype = c->kv_dtype = FI_DTYPE_E4M3;
    c->hd = 128;
    if (c->pos == FI_POS_ROPE_LLAMA) c->pos = FI_POS_NONE;
    c->q_scale = 0.25f + 0.25f * (float)(rnd() % 4);
    c->k_scale = 0.25f + 0.5f * (float)(rnd() % 4);
    c->v_scale = 0.5f + 0.25f * (float)(rnd() % 4);
    if (c->force_tiles) {
      c->tiles.q_tile = 128;
      c->tiles.kv_tile = 128;
      c->tiles.split_kv = rnd() & 1;
      c->tiles.cores = FI_CORES_WGMMA;
    }
    return;
  }
  if (hopper && ws_mode) {
    c->force_tiles = 1;
    c->tiles.q_tile = 128;
    c->tiles.kv_tile = c->hd > 128 ? 64 : 128;
    /* one in three head_dim 128 configs without extras but a soft cap or ALiBi (not both) or
     * a custom mask alone on its tiles of 176 keys (a mask whose rows are each one run of
     * keys runs them; others run 128-key tiles) */
    const int wide_masked = c->mask == FI_MASK_CUSTOM && c->soft_cap == 0.f &&
                            c->pos != FI_POS_ALIBI;
    if (c->hd == 128 && !(c->pos == FI_POS_ALIBI && c->soft_cap > 0.f) &&
        (c->mask != FI_MASK_CUSTOM || wide_masked) && c->window_left < 0 &&
        (rnd() % 3 == 0 || wide_mode))
      c->tiles.kv_tile = 176;
    /* (half of those without a soft cap or ALiBi get a soft cap, so that the capped instance
     * runs often) */
    if (c->tiles.kv_tile == 176 && c->soft_cap == 0.f && c->pos != FI_POS_ALIBI &&
        c->mask != FI_MASK_CUSTOM && solo < 0 && (rnd() & 1))
      c->soft_cap = 10.f + 20.f * fabsf(rfloat() * rfloat());
    c->tiles.split_kv = rnd() & 1;
    c->tiles.cores = FI_CORES_WGMMA;
    return;
  }
  if (c->force_tiles) {
    /* the mma.sync list, then the wgmma tier (Hopper only; head_dim 256: its 128 x 64
     * tiles, the warp-specialised kernel where it takes the run, else the mma.sync one) */
    int t = (int)(rnd() % (uint32_t)(hopper ? NUM_TILES + NUM_WG_TILES : NUM_TILES));
    /* (the first forced head_dim <= 128 draws on Hopper take each wgmma pair once, so that
     * the coverage check below holds whatever the seed) */
    static int wg_cycled = 0;
    if (hopper && c->hd <= 128 && wg_cycled < NUM_WG_TILES) t = NUM_TILES + wg_cycled++;
    static const int hd256_wg[2] = {128, 64};
    const int *pair = t < NUM_TILES ? tile_list[t]
                      : c->hd > 128 ? hd256_wg
                                    : wg_tile_list[t - NUM_TILES];
    c->tiles.q_tile = pair[0];
    c->tiles.kv_tile = pair[1];
    c->tiles.split_kv = rnd() & 1;
    c->tiles.cores = t < NUM_TILES ? FI_CORES_TENSOR : FI_CORES_WGMMA;
  }
}

int main(void) {
  if (!fi_cuda_available()) {
    printf("test_prefill_gpu: no CUDA device (or CUDA backend not built): skipped\n");
    return 77;
  }
  const char *seed = getenv("FI_TEST_SEED"), *count = getenv("FI_TEST_CONFIGS");
  if (seed) rng_state ^= strtoull(seed, NULL, 0) * 0x9e3779b97f4a7c15ull;
  int num = count ? atoi(count) : 240;
  ws_mode = getenv("FI_TEST_PREFILL_WS") && atoi(getenv("FI_TEST_PREFILL_WS")) > 0;
  wide_mode = getenv("FI_TEST_WIDE") && atoi(getenv("FI_TEST_WIDE")) > 0;
  mask_runs_mode = getenv("FI_TEST_MASK_RUNS") && atoi(getenv("FI_TEST_MASK_RUNS")) > 0;
  fp8_mode = getenv("FI_TEST_PREFILL_FP8") && atoi(getenv("FI_TEST_PREFILL_FP8")) > 0;
  ws_off = getenv("FI_PREFILL_WARP_SPEC") && !strcmp(getenv("FI_PREFILL_WARP_SPEC"), "0");
  if (ws_off && (fp8_mode || ws_mode)) {
    fprintf(stderr, "FI_PREFILL_WARP_SPEC=0 turns off the kernel that FI_TEST_PREFILL_%s "
                    "tests; unset one of them\n", fp8_mode ? "FP8" : "WS");
    return 1;
  }
  if (ws_mode) setenv("FI_PREFILL_WARP_SPEC", "2", 1); /* read at context creation */
  fi_context *host = NULL, *cuda = NULL;
  /* (Q_AHEAD on in `cuda` unless the environment says otherwise, off in cuda_q_late, which
   * also runs with FI_PREFILL_L2_HINTS=0 and FI_PREFILL_V_LAG=0) */
  if (fi_context_create(FI_BACKEND_HOST, &host) || create_cuda_with_knobs(&cuda, "1", 0, 0) ||
      create_cuda_with_knobs(&cuda_q_late, "0", 1, 1)) {
    fprintf(stderr, "context creation failed: %s\n", fi_last_error(NULL));
    return 1;
  }
  {
    int dev = 0, major = 0, minor = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    hopper = major == 9 && minor == 0;
  }
  int failures = 0, tile_seen[NUM_TILES] = {0}, wg_seen[NUM_WG_TILES] = {0};
  int ws_tiles_seen = 0; /* configs with the warp-specialised kernel's tiles for their hd */
  int wide_seen = 0;     /* of those, with its tile of 176 keys */
  int wide_capped = 0;   /* of those, with a soft cap */
  int wide_alibi = 0;    /* of those, with ALiBi */
  int wide_runs = 0;     /* of those, with a custom mask of one run per row, planned with it */
  int staged[3] = {0, 0, 0}; /* configs that need the stage pass and have one, by head_dim */
  for (int i = 0; i < num; ++i) {
    config c;
    draw_config(&c, i);
    c.o_pad = rnd() % 4 == 0 ? 8 * rint_in(1, 3) : 0;
    failures += run_config(host, cuda, &c, i) != 0;
    if (c.use_stage && c.q_dtype != FI_DTYPE_E4M3 &&
        (c.pos == FI_POS_ROPE_LLAMA || c.kv_dtype != c.q_dtype ||
         (c.paged && c.page_size % 16 != 0)))
      ++staged[c.hd == 64 ? 0 : c.hd == 128 ? 1 : 2];
    const int wg = c.tiles.cores == FI_CORES_WGMMA;
    ws_tiles_seen += wg && c.tiles.q_tile == 128 &&
                     (c.tiles.kv_tile == (c.hd > 128 ? 64 : 128) ||
                      (c.hd == 128 && c.tiles.kv_tile == 176));
    wide_seen += wg && c.tiles.kv_tile == 176;
    wide_capped += wg && c.tiles.kv_tile == 176 && c.soft_cap > 0.f;
    wide_alibi += wg && c.tiles.kv_tile == 176 && c.pos == FI_POS_ALIBI;
    wide_runs += wg && c.tiles.kv_tile == 176 && c.mask == FI_MASK_CUSTOM &&
                 (c.mask_pattern == 1 || c.mask_pattern == 3) && !c.plan_without_bits;
    for (int t = 0; t < (wg ? NUM_WG_TILES : NUM_TILES); ++t) {
      const int *pair = wg ? wg_tile_list[t] : tile_list[t];
      if (c.tiles.q_tile == pair[0] && c.tiles.kv_tile == pair[1]) ++(wg ? wg_seen : tile_seen)[t];
    }
  }
  printf("test_prefill_gpu: %d configs, %d failed; %d also planned on the device "
         "(bit-exact); %d also run with FI_PREFILL_Q_AHEAD=0 FI_PREFILL_L2_HINTS=0 "
         "FI_PREFILL_V_LAG=0 (bit-exact); "
         "tiles run:", num,
         failures, device_plans_run, q_late_runs);
  for (int t = 0; t < NUM_TILES; ++t)
    printf(" %dx%d:%d", tile_list[t][0], tile_list[t][1], tile_seen[t]);
  int wg_missing = 0;
  for (int t = 0; t < NUM_WG_TILES; ++t) {
    printf(" wgmma%dx%d:%d", wg_tile_list[t][0], wg_tile_list[t][1], wg_seen[t]);
    wg_missing += wg_seen[t] == 0;
  }
  printf(" (of the wgmma ones, 128x176: %d, %d with a soft cap, %d with ALiBi, %d with a custom "
         "mask of one run per row)\n", wide_seen, wide_capped, wide_alibi, wide_runs);
  printf("  configs with a prefill stage and RoPE, fp8 KV or pages not a multiple of 16 (with "
         "FI_TEST_PREFILL_WS=1 all through the stage pass): head_dim 64: %d, 128: %d, 256: %d\n",
         staged[0], staged[1], staged[2]);
  const char *ws_env = getenv("FI_TEST_PREFILL_WS");
  /* (every config on the warp-specialised kernel: its 128 x 128 tiles (head_dim 256: 128
   * x 64), and only those) */
  if ((ws_env && atoi(ws_env) > 0) || fp8_mode)
    wg_missing = hopper && ws_tiles_seen != num;
  if (hopper && num >= 100 && wg_missing) {
    fprintf(stderr, "FAIL: a Hopper device ran no configuration of a wgmma variant\n");
    ++failures;
  }
  printf("  CUDA plans with lead units (a long request beside short ones): %d\n", lead_plans);
  if (hopper && ws_mode && num >= 100 && lead_plans == 0) {
    fprintf(stderr, "FAIL: no configuration planned lead units\n");
    ++failures;
  }
  /* (about one in twenty draws a soft cap on 176 keys: required from 200 configs) */
  if (hopper && ws_mode && num >= 100 && (wide_seen == 0 || (num >= 200 && wide_capped == 0))) {
    fprintf(stderr, "FAIL: no configuration ran the warp-specialised kernel's 128 x 176 "
                    "tiles%s\n", wide_seen ? " with a soft cap" : "");
    ++failures;
  }

  failures += graph_test(host, 6, 2);
  failures += graph_test(host, 8, 2);
  failures += stage_refusals(cuda);
  failures += wide_tile_rule(cuda);

  /* Unsupported shapes fail at plan with a message, never run. */
  failures += expect_refused(cuda, 96, NULL, "head_dim 96");
  /* wgmma tiles with head_dim 256 other than the warp-specialised kernel's 128 x 64:
   * refused at plan */
  fi_tiles wg = {128, 128, 0, FI_CORES_WGMMA};
  failures += expect_refused(cuda, 256, &wg, "wgmma head_dim 256");
  fi_context_destroy(host);
  fi_context_destroy(cuda);
  fi_context_destroy(cuda_q_late);
  return failures ? 1 : 0;
}
