/* kernels/src/context.c -- contexts, error messages, small value helpers of runtime.h. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Message of the last failed fi_context_create on this thread (fi_last_error(NULL)). */
static _Thread_local char thread_error[FI_ERROR_MESSAGE_BYTES];

const char *fi_status_string(fi_status status) {
  switch (status) {
  case FI_SUCCESS: return "FI_SUCCESS";
  case FI_ERROR_INVALID_ARGUMENT: return "FI_ERROR_INVALID_ARGUMENT";
  case FI_ERROR_UNSUPPORTED: return "FI_ERROR_UNSUPPORTED";
  case FI_ERROR_WORKSPACE_TOO_SMALL: return "FI_ERROR_WORKSPACE_TOO_SMALL";
  case FI_ERROR_PLAN_MISMATCH: return "FI_ERROR_PLAN_MISMATCH";
  case FI_ERROR_BACKEND_UNAVAILABLE: return "FI_ERROR_BACKEND_UNAVAILABLE";
  case FI_ERROR_CUDA: return "FI_ERROR_CUDA";
  case FI_ERROR_OUT_OF_MEMORY: return "FI_ERROR_OUT_OF_MEMORY";
  case FI_ERROR_COMM: return "FI_ERROR_COMM";
  }
  return "FI_ERROR_UNKNOWN";
}

fi_status fi_set_error(fi_context *ctx, fi_status status, const char *fmt, ...) {
  char *buf = ctx ? ctx->last_error : thread_error;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, FI_ERROR_MESSAGE_BYTES, fmt, ap);
  va_end(ap);
  return status;
}

const char *fi_last_error(const fi_context *ctx) {
  return ctx ? ctx->last_error : thread_error;
}

static void *grow(fi_context *ctx, void **buf, size_t *have, size_t bytes) {
  if (bytes <= *have && *buf) return *buf;
  void *p = realloc(*buf, bytes ? bytes : 1);
  if (!p) {
    fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes",
                 bytes);
    return NULL;
  }
  *buf = p;
  *have = bytes;
  return p;
}

void *fi_context_plan_scratch(fi_context *ctx, size_t bytes) {
  return grow(ctx, &ctx->plan_scratch, &ctx->plan_scratch_bytes, bytes);
}
void *fi_context_mask_scratch(fi_context *ctx, size_t bytes) {
  return grow(ctx, &ctx->mask_scratch, &ctx->mask_scratch_bytes, bytes);
}

void *fi_context_run_scratch(fi_context *ctx, size_t bytes) {
  return grow(ctx, &ctx->run_scratch, &ctx->run_scratch_bytes, bytes);
}

/* An integer from the environment, or `dflt` when unset. */
static int32_t env_int(const char *name, int32_t dflt) {
  const char *v = getenv(name);
  return v && *v ? (int32_t)atoi(v) : dflt;
}

static void read_tuning(fi_context *ctx) {
  int32_t cpsm = env_int("FI_DECODE_CTAS_PER_SM", 0);
  ctx->tuning.ctas_per_sm = cpsm >= 1 && cpsm <= 64 ? cpsm : 0;
  ctx->tuning.smem_kb = env_int("FI_DECODE_SMEM_KB", 0);
  ctx->tuning.head_fast = env_int("FI_DECODE_HEAD_FAST", -1);
  ctx->tuning.warp_pipe = env_int("FI_DECODE_WARP_PIPE", -1);
  ctx->tuning.pdl = env_int("FI_PDL", -1);
  ctx->tuning.tcw_warps = env_int("FI_DECODE_TCW_WARPS", 0);
  ctx->tuning.heads_n = env_int("FI_DECODE_HEADS_N", -1);
  ctx->tuning.single_slots = env_int("FI_DECODE_SINGLE_SLOTS", -1);
  ctx->tuning.warp_spec = env_int("FI_DECODE_WARP_SPEC", -1);
  ctx->tuning.tws_slots = env_int("FI_DECODE_TWS_SLOTS", -1);
  ctx->tuning.prefill_warp_spec = env_int("FI_PREFILL_WARP_SPEC", -1);
  ctx->tuning.prefill_ws_all_extras = env_int("FI_PREFILL_WS_ALL_EXTRAS", -1);
  ctx->tuning.prefill_rows_across = env_int("FI_PREFILL_WS_ROWS_ACROSS", -1);
  ctx->tuning.prefill_bsr_stage = env_int("FI_PREFILL_BSR_STAGE", -1);
  ctx->tuning.prefill_bsr_half_skip = env_int("FI_PREFILL_BSR_HALF_SKIP", 1);
  ctx->tuning.prefill_q_ahead = env_int("FI_PREFILL_Q_AHEAD", -1);
  ctx->tuning.prefill_l2_hints = env_int("FI_PREFILL_L2_HINTS", -1);
  ctx->tuning.prefill_v_lag = env_int("FI_PREFILL_V_LAG", -1);
  ctx->tuning.decode_one_wave = env_int("FI_DECODE_ONE_WAVE", -1);
  ctx->tuning.prefill_lead_units = env_int("FI_PREFILL_LEAD_UNITS", -1);
  ctx->tuning.prefill_ws_ctas = env_int("FI_PREFILL_WS_CTAS", 0);
  ctx->tuning.prefill_ws_deep = env_int("FI_PREFILL_WS_DEEP", -1);
  ctx->tuning.merge_warps = env_int("FI_MERGE_WARPS", 1);
  ctx->tuning.decode_max_ctas = env_int("FI_DECODE_MAX_CTAS", 0);
  ctx->tuning.decode_split = env_int("FI_DECODE_SPLIT", -1);
  ctx->tuning.prefill_one_wave_tenths = env_int("FI_PREFILL_ONE_WAVE_TENTHS", 0);
}

fi_status fi_context_create(fi_backend backend, fi_context **out) {
  if (!out)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT, "fi_context_create: out is NULL");
  *out = NULL;
  if (backend != FI_BACKEND_HOST && backend != FI_BACKEND_CUDA)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_create: backend = %d: use FI_BACKEND_HOST or "
                        "FI_BACKEND_CUDA", (int)backend);
  fi_context *ctx = (fi_context *)calloc(1, sizeof(fi_context));
  if (!ctx)
    return fi_set_error(NULL, FI_ERROR_OUT_OF_MEMORY, "fi_context_create: out of memory");
  ctx->backend = backend;
  ctx->target = fi_target_default();
  ctx->wgmma_available = 1; /* the CUDA backend's init says otherwise where it must */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  ctx->num_threads = cores > 0 ? (int32_t)(cores > 256 ? 256 : cores) : 1;
  read_tuning(ctx);
  if (backend == FI_BACKEND_CUDA) {
    fi_status s = fi_cuda_context_init(ctx, &ctx->target);
    if (s != FI_SUCCESS) {
      fi_set_error(NULL, s, "%s", ctx->last_error);
      free(ctx);
      return s;
    }
  }
  *out = ctx;
  return FI_SUCCESS;
}

void fi_context_destroy(fi_context *ctx) {
  if (!ctx) return;
  if (ctx->backend == FI_BACKEND_CUDA) fi_cuda_context_release(ctx);
  free(ctx->plan_scratch);
  free(ctx->run_scratch);
  free(ctx->mask_scratch);
  free(ctx);
}

fi_backend fi_context_backend(const fi_context *ctx) { return ctx->backend; }

fi_status fi_context_set_stream(fi_context *ctx, void *cuda_stream) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (ctx->backend != FI_BACKEND_CUDA)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_stream: this is a host context; streams belong to "
                        "CUDA contexts");
  fi_status st = fi_cuda_check_stream(ctx, cuda_stream);
  if (st != FI_SUCCESS) return st;
  ctx->stream = cuda_stream;
  return FI_SUCCESS;
}

fi_status fi_context_set_prefill_stage(fi_context *ctx, void *device_buffer, size_t bytes) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (ctx->backend != FI_BACKEND_CUDA && (device_buffer || bytes))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_prefill_stage: this is a host context; the stage is "
                        "device memory for the CUDA prefill kernels (pass NULL, 0 or nothing)");
  if ((device_buffer == NULL) != (bytes == 0))
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_prefill_stage: buffer %p with %zu bytes: pass both "
                        "(a device buffer and its size) or neither (NULL, 0)",
                        device_buffer, bytes);
  if (((uintptr_t)device_buffer & 255u) != 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_prefill_stage: the buffer must be 256-byte aligned "
                        "(as cudaMalloc returns)");
  ctx->prefill_stage = device_buffer;
  ctx->prefill_stage_bytes = bytes;
  return FI_SUCCESS;
}

fi_status fi_context_set_num_threads(fi_context *ctx, int32_t num_threads) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (num_threads < 1 || num_threads > 256)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_context_set_num_threads: num_threads = %d: must be in 1..256",
                        (int)num_threads);
  ctx->num_threads = num_threads;
  return FI_SUCCESS;
}

fi_target fi_context_target(const fi_context *ctx) { return ctx->target; }

static fi_context *default_ctx;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void create_default(void) {
  const char *env = getenv("FI_BACKEND");
  fi_backend b = FI_BACKEND_HOST;
  if (env && *env && strcmp(env, "host") != 0) {
    if (strcmp(env, "cuda") != 0) {
      /* A typo must not silently run everything on the host. */
      snprintf(thread_error, sizeof thread_error,
               "fi_default_context: FI_BACKEND=\"%s\" is not a backend; set it to \"host\" "
               "or \"cuda\", or unset it for the host backend", env);
      default_ctx = NULL;
      return;
    }
    b = FI_BACKEND_CUDA;
  }
  if (fi_context_create(b, &default_ctx) != FI_SUCCESS) default_ctx = NULL;
}

fi_context *fi_default_context(void) {
  pthread_once(&default_once, create_default);
  return default_ctx;
}

size_t fi_dtype_size(fi_dtype dtype) {
  switch (dtype) {
  case FI_DTYPE_F16:
  case FI_DTYPE_BF16: return 2;
  case FI_DTYPE_F32: return 4;
  case FI_DTYPE_E4M3:
  case FI_DTYPE_E5M2: return 1;
  }
  return 0;
}

const char *fi_dtype_name(fi_dtype dtype) {
  switch (dtype) {
  case FI_DTYPE_F16: return "f16";
  case FI_DTYPE_BF16: return "bf16";
  case FI_DTYPE_F32: return "f32";
  case FI_DTYPE_E4M3: return "e4m3";
  case FI_DTYPE_E5M2: return "e5m2";
  }
  return "unknown-dtype";
}

fi_tensor fi_tensor_contiguous(void *data, fi_dtype dtype, int32_t rank, const int64_t *shape) {
  fi_tensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.dtype = dtype;
  if (rank < 0) rank = 0;
  if (rank > FI_MAX_RANK) rank = FI_MAX_RANK;
  t.rank = rank;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.strides[d] = stride;
    stride *= shape[d];
  }
  return t;
}

fi_attention_params fi_attention_params_default(int32_t num_qo_heads, int32_t num_kv_heads,
                                                int32_t head_dim) {
  fi_attention_params p;
  memset(&p, 0, sizeof(p));
  p.num_qo_heads = num_qo_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_dim = head_dim;
  p.page_size = 16;
  p.q_dtype = FI_DTYPE_F16;
  p.kv_dtype = FI_DTYPE_F16;
  p.mask_mode = FI_MASK_NONE;
  p.pos_encoding = FI_POS_NONE;
  p.window_left = -1;
  p.logits_soft_cap = 0.0f;
  p.sm_scale = head_dim > 0 ? 1.0f / sqrtf((float)head_dim) : 1.0f;
  p.rope_scale = 1.0f;
  p.rope_theta = 1e4f;
  p.k_scale = 1.0f;
  p.v_scale = 1.0f;
  p.o_dtype = FI_DTYPE_F16;
  p.q_scale = 1.0f;
  p.fixed_split_size = 0;
  p.variant = NULL; /* no user-written score_mod / mask_mod */
  return p;
}

fi_dtype fi_output_dtype(const fi_attention_params *params) {
  return params->q_dtype == FI_DTYPE_E4M3 ? params->o_dtype : params->q_dtype;
}

fi_status fi_paged_kv_cache_from_combined(const fi_tensor *kv, fi_kv_layout layout,
                                          fi_paged_kv_cache *out) {
  if (!kv || !out)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,
                        "fi_paged_kv_cache_from_combined: kv and out must not be NULL");
  if (kv->rank != 5 || kv->shape[1] != 2)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,
                        "fi_paged_kv_cache_from_combined: kv has rank %d and shape[1] = %lld: "
                        "expected [pages, 2, ...3 layout dims...]", (int)kv->rank,
                        kv->rank >= 2 ? (long long)kv->shape[1] : -1LL);
  if (layout != FI_LAYOUT_NHD && layout != FI_LAYOUT_HND)
    return fi_set_error(NULL, FI_ERROR_INVALID_ARGUMENT,
                        "fi_paged_kv_cache_from_combined: layout = %d: use NHD or HND",
                        (int)layout);
  fi_tensor k;
  memset(&k, 0, sizeof(k));
  k.data = kv->data;
  k.dtype = kv->dtype;
  k.rank = 4;
  k.shape[0] = kv->shape[0];
  k.strides[0] = kv->strides[0];
  for (int d = 1; d < 4; ++d) {
    k.shape[d] = kv->shape[d + 1];
    k.strides[d] = kv->strides[d + 1];
  }
  fi_tensor v = k;
  v.data = kv->data ? (char *)kv->data + kv->strides[1] * (int64_t)fi_dtype_size(kv->dtype)
                    : NULL;
  out->k = k;
  out->v = v;
  out->layout = layout;
  return FI_SUCCESS;
}
