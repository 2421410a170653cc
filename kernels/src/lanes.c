/* kernels/src/lanes.c -- fi_lanes (fi/lanes.h): two green contexts over disjoint SMs of a
 * CUDA context's device, a stream in each, and the fork / join events between them and the
 * context's stream. Entering a lane points the context's stream and SM count at the lane's
 * (the planner and every launch read them there), leaving restores them.
 *
 * The driver's green-context calls are looked up through the CUDA runtime
 * (cudaGetDriverEntryPointByVersion), so the runtime library does not link libcuda and
 * still loads where there is no driver. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fi/lanes.h"
#include "internal.h"

#ifdef FI_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

struct fi_lanes {
  fi_context *ctx;
  int32_t sms[2];      /* the lanes' SM counts */
  int32_t entered;     /* 0, FI_LANE_MAIN or FI_LANE_SIDE */
  int32_t forked;      /* the lanes' streams wait for the context's stream (since the first
                          enter after the last join) */
  int32_t on_base;     /* this epoch's lanes run on the context's stream (a capture) */
  int32_t pending[2];  /* the lane was entered since the last join */
  int32_t covered[2];  /* the other lane waited for all of this lane's work (a join inside
                          it): the context's stream need not wait for this one too */
  void *fork_stream;   /* the context's stream the lanes forked from (this epoch; a lane's
                          leave points the context back at it) */
  int32_t base_sms;    /* the context's SM count while a lane is entered */
#ifdef FI_HAVE_CUDA
  CUgreenCtx green[2];
  cudaStream_t stream[2];
  cudaEvent_t fork, done[2];
#endif
};

/* The side lane's SMs of `total` (0: the default share, FI_LANES_DEFAULT_SIDE_SHARE, at
 * least 1), refused where they leave none to the main lane. */
static fi_status resolve_side(fi_context *ctx, int32_t *side_sms, unsigned int total) {
  if (*side_sms == 0) {
    const long side = lround(FI_LANES_DEFAULT_SIDE_SHARE * (double)total);
    *side_sms = side < 1 ? 1 : (int32_t)side;
  }
  if ((unsigned int)*side_sms >= total)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_create: side_sms = %d leaves no SMs to the main lane (the "
                        "device has %u); give fewer", *side_sms, total);
  return FI_SUCCESS;
}

#ifdef FI_HAVE_CUDA
typedef CUresult (*get_device_fn)(CUdevice *, int);
typedef CUresult (*get_resource_fn)(CUdevice, CUdevResource *, CUdevResourceType);
typedef CUresult (*split_fn)(CUdevResource *, unsigned int *, const CUdevResource *,
                             CUdevResource *, unsigned int, unsigned int);
typedef CUresult (*desc_fn)(CUdevResourceDesc *, CUdevResource *, unsigned int);
typedef CUresult (*green_create_fn)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned int);
typedef CUresult (*green_destroy_fn)(CUgreenCtx);
typedef CUresult (*green_stream_fn)(CUstream *, CUgreenCtx, unsigned int, int);
typedef CUresult (*error_string_fn)(CUresult, const char **);

/* One driver entry point (NULL where the driver has none). */
static void *driver_entry(const char *name, unsigned int version) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return fn;
}

static fi_status driver_failed(fi_context *ctx, CUresult r, const char *what) {
  const char *why = "unknown driver error";
  error_string_fn str = (error_string_fn)driver_entry("cuGetErrorString", 6000);
  if (str) str(r, &why);
  return fi_set_error(ctx, r == CUDA_ERROR_NOT_SUPPORTED ? FI_ERROR_UNSUPPORTED : FI_ERROR_CUDA,
                      "fi_lanes_create: %s failed: %s", what, why);
}

static void release_cuda(fi_lanes *l) {
  green_destroy_fn destroy = (green_destroy_fn)driver_entry("cuGreenCtxDestroy", 12040);
  for (int i = 0; i < 2; ++i) {
    if (l->done[i]) cudaEventDestroy(l->done[i]);
    if (l->stream[i]) cudaStreamDestroy(l->stream[i]);
    if (l->green[i] && destroy) destroy(l->green[i]);
  }
  if (l->fork) cudaEventDestroy(l->fork);
}

static fi_status create_cuda(fi_context *ctx, int32_t side_sms, fi_lanes *l) {
  get_device_fn get_device = (get_device_fn)driver_entry("cuDeviceGet", 2000);
  get_resource_fn get_resource = (get_resource_fn)driver_entry("cuDeviceGetDevResource", 12040);
  split_fn split = (split_fn)driver_entry("cuDevSmResourceSplitByCount", 12040);
  desc_fn desc = (desc_fn)driver_entry("cuDevResourceGenerateDesc", 12040);
  green_create_fn create = (green_create_fn)driver_entry("cuGreenCtxCreate", 12040);
  green_stream_fn stream = (green_stream_fn)driver_entry("cuGreenCtxStreamCreate", 12050);
  if (!get_device || !get_resource || !split || !desc || !create || !stream ||
      !driver_entry("cuGreenCtxDestroy", 12040))
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "fi_lanes_create: the CUDA driver has no green contexts (they need "
                        "a 12.4 or later driver); run the step on one stream instead");
  CUdevice dev;
  CUdevResource all, part[2];
  memset(&all, 0, sizeof all);
  memset(part, 0, sizeof part);
  CUresult r = get_device(&dev, ctx->device);
  if (r != CUDA_SUCCESS) return driver_failed(ctx, r, "cuDeviceGet");
  r = get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
  if (r != CUDA_SUCCESS) return driver_failed(ctx, r, "cuDeviceGetDevResource");
  /* one group of at least (all - side) SMs for the main lane, the rest for the side (0:
   * the default share of the device's SMs, not of a lane another lanes object entered) */
  const unsigned int total = all.sm.smCount;
  const fi_status side_ok = resolve_side(ctx, &side_sms, total);
  if (side_ok != FI_SUCCESS) return side_ok;
  unsigned int groups = 1;
  r = split(&part[0], &groups, &all, &part[1], 0, total - (unsigned int)side_sms);
  if (r != CUDA_SUCCESS) return driver_failed(ctx, r, "cuDevSmResourceSplitByCount");
  if (groups != 1 || part[1].sm.smCount == 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_create: side_sms = %d: the driver's SM groups leave no SMs "
                        "to the side lane (the device has %u); give more", side_sms, total);
  for (int i = 0; i < 2; ++i) {
    CUdevResourceDesc d;
    r = desc(&d, &part[i], 1);
    if (r != CUDA_SUCCESS) return driver_failed(ctx, r, "cuDevResourceGenerateDesc");
    r = create(&l->green[i], d, dev, CU_GREEN_CTX_DEFAULT_STREAM);
    if (r != CUDA_SUCCESS) return driver_failed(ctx, r, "cuGreenCtxCreate");
    r = stream((CUstream *)&l->stream[i], l->green[i], CU_STREAM_NON_BLOCKING, 0);
    if (r != CUDA_SUCCESS) return driver_failed(ctx, r, "cuGreenCtxStreamCreate");
    l->sms[i] = (int32_t)part[i].sm.smCount;
    if (cudaEventCreateWithFlags(&l->done[i], cudaEventDisableTiming) != cudaSuccess) break;
  }
  if (!l->done[0] || !l->done[1] ||
      cudaEventCreateWithFlags(&l->fork, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return fi_set_error(ctx, FI_ERROR_CUDA, "fi_lanes_create: creating the lanes' events failed");
  }
  return FI_SUCCESS;
}

/* Whether the context's stream is capturing a graph. */
static int capturing(const fi_context *ctx) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing((cudaStream_t)ctx->stream, &cs) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return cs != cudaStreamCaptureStatusNone;
}

static fi_status cuda_failed(fi_context *ctx, const char *fn, cudaError_t e) {
  return fi_set_error(ctx, FI_ERROR_CUDA, "%s: %s", fn, cudaGetErrorString(e));
}
#endif

static int is_cuda_lanes(const fi_lanes *l) {
  return fi_context_backend(l->ctx) == FI_BACKEND_CUDA;
}

fi_status fi_lanes_create(fi_context *ctx, int32_t side_sms, fi_lanes **out) {
  if (!ctx) return FI_ERROR_INVALID_ARGUMENT;
  if (!out)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT, "fi_lanes_create: out is NULL");
  *out = NULL;
  if (side_sms < 0)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_create: side_sms = %d is negative; give 0 for the default "
                        "share or a count of SMs", side_sms);
  fi_lanes *l = calloc(1, sizeof *l);
  if (!l)
    return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY, "fi_lanes_create: out of host memory");
  l->ctx = ctx;
  if (fi_context_backend(ctx) == FI_BACKEND_CUDA) {
#ifdef FI_HAVE_CUDA
    const fi_status s = create_cuda(ctx, side_sms, l);
    if (s != FI_SUCCESS) {
      release_cuda(l);
      free(l);
      return s;
    }
#else
    free(l);
    return fi_set_error(ctx, FI_ERROR_BACKEND_UNAVAILABLE,
                        "fi_lanes_create: this runtime was built without CUDA");
#endif
  } else {
    const int32_t sm_count = ctx->target.sm_count > 0 ? ctx->target.sm_count : 1;
    const fi_status s = resolve_side(ctx, &side_sms, (unsigned int)sm_count);
    if (s != FI_SUCCESS) {
      free(l);
      return s;
    }
    l->sms[0] = l->sms[1] = sm_count; /* (the host backend runs each lane with every thread) */
  }
  *out = l;
  return FI_SUCCESS;
}

/* Opens the lanes' epoch at the first enter after a join (`first`; a capture decides here
 * whether the epoch's lanes run on the context's stream), or forks again inside it
 * (fi_lanes_fork): both lanes' streams wait for the context's stream once (one event), so
 * that entering the second lane costs no call. */
static fi_status fork_lanes(fi_lanes *l, int first) {
  fi_context *ctx = l->ctx;
  int on_base = first ? 1 : l->on_base;
#ifdef FI_HAVE_CUDA
  if (first && is_cuda_lanes(l) && !capturing(ctx)) on_base = 0;
  if (!on_base) {
    cudaError_t e = cudaEventRecord(l->fork, (cudaStream_t)ctx->stream);
    for (int i = 0; i < 2 && e == cudaSuccess; ++i) e = cudaStreamWaitEvent(l->stream[i], l->fork, 0);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return cuda_failed(ctx, "fi_lanes_enter: forking the lanes from the context's stream", e);
    }
  }
#endif
  if (first) { /* (only once the fork is in place) */
    l->forked = 1;
    l->on_base = on_base;
    l->fork_stream = ctx->stream;
  }
  return FI_SUCCESS;
}

/* A forked epoch's lanes stay ordered with the stream they forked from: refused where the
 * context's stream changed since, or (`capture`) began capturing while they ran outside. */
static fi_status epoch_intact(fi_lanes *l, const char *fn, int capture) {
  if (!l->forked) return FI_SUCCESS;
  if (l->ctx->stream != l->fork_stream)
    return fi_set_error(l->ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s: the context's stream changed (fi_context_set_stream) since the "
                        "lanes forked from it; fi_lanes_join on the old stream first", fn);
#ifdef FI_HAVE_CUDA
  if (capture && !l->on_base && capturing(l->ctx))
    return fi_set_error(l->ctx, FI_ERROR_INVALID_ARGUMENT,
                        "%s: the context's stream began capturing a graph while the lanes "
                        "ran outside it; fi_lanes_join before the capture begins", fn);
#else
  (void)capture;
#endif
  return FI_SUCCESS;
}

fi_status fi_lanes_fork(fi_lanes *l) {
  if (!l) return FI_ERROR_INVALID_ARGUMENT;
  if (l->entered)
    return fi_set_error(l->ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_fork: lane %d is entered; fork from outside the lanes",
                        l->entered);
  if (!l->forked) return FI_SUCCESS; /* (the next enter forks) */
  const fi_status st = epoch_intact(l, "fi_lanes_fork", 1);
  return st != FI_SUCCESS ? st : fork_lanes(l, 0);
}

fi_status fi_lanes_enter(fi_lanes *l, int32_t lane) {
  if (!l) return FI_ERROR_INVALID_ARGUMENT;
  fi_context *ctx = l->ctx;
  if (lane != FI_LANE_MAIN && lane != FI_LANE_SIDE)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_enter: lane %d is not FI_LANE_MAIN (1) or FI_LANE_SIDE (2)",
                        lane);
  if (l->entered)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_enter: lane %d is still entered; fi_lanes_leave it before "
                        "entering lane %d", l->entered, lane);
  const fi_status s =
      l->forked ? epoch_intact(l, "fi_lanes_enter", 1) : fork_lanes(l, 1);
  if (s != FI_SUCCESS) return s;
  l->base_sms = ctx->target.sm_count;
#ifdef FI_HAVE_CUDA
  if (!l->on_base) {
    ctx->stream = l->stream[lane - 1];
    ctx->target.sm_count = l->sms[lane - 1];
  }
#endif
  l->pending[lane - 1] = 1;
  l->covered[lane - 1] = 0;
  l->entered = lane;
  return FI_SUCCESS;
}

fi_status fi_lanes_leave(fi_lanes *l) {
  if (!l) return FI_ERROR_INVALID_ARGUMENT;
  fi_context *ctx = l->ctx;
  if (!l->entered)
    return fi_set_error(ctx, FI_ERROR_INVALID_ARGUMENT,
                        "fi_lanes_leave: no lane is entered (fi_lanes_enter first)");
  ctx->stream = l->fork_stream;
  ctx->target.sm_count = l->base_sms;
  l->entered = 0;
  return FI_SUCCESS;
}

#ifdef FI_HAVE_CUDA
/* `waiter` waits for lane i's work so far. */
static fi_status wait_for_lane(fi_lanes *l, int i, cudaStream_t waiter) {
  cudaError_t e = cudaEventRecord(l->done[i], l->stream[i]);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(waiter, l->done[i], 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return cuda_failed(l->ctx, "fi_lanes_join: waiting for a lane's work", e);
  }
  return FI_SUCCESS;
}
#endif

fi_status fi_lanes_join(fi_lanes *l) {
  if (!l) return FI_ERROR_INVALID_ARGUMENT;
  if (!l->entered) {
    const fi_status st = epoch_intact(l, "fi_lanes_join", 0);
    if (st != FI_SUCCESS) return st;
  }
  /* (inside a lane: that lane waits for the other's work, which stays pending for the
   * context's stream) */
  const int inside = l->entered != 0;
  for (int i = 0; i < 2; ++i) {
    if (!l->pending[i] || (inside && i == l->entered - 1)) continue;
    if (!inside && l->covered[i] && l->pending[1 - i]) continue; /* (waited for through it) */
#ifdef FI_HAVE_CUDA
    if (!l->on_base) {
      const fi_status s = wait_for_lane(l, i, (cudaStream_t)l->ctx->stream);
      if (s != FI_SUCCESS) return s;
    }
#endif
    if (inside) l->covered[i] = 1;
  }
  if (!inside) {
    l->pending[0] = l->pending[1] = 0;
    l->covered[0] = l->covered[1] = 0;
    l->forked = 0; /* (the next enter forks again) */
  }
  return FI_SUCCESS;
}

int32_t fi_lanes_sm_count(const fi_lanes *l, int32_t lane) {
  if (!l || (lane != FI_LANE_MAIN && lane != FI_LANE_SIDE)) return 0;
  return l->sms[lane - 1];
}

fi_context *fi_lanes_context(const fi_lanes *l) { return l ? l->ctx : NULL; }

void *fi_lanes_stream(const fi_lanes *l, int32_t lane) {
  if (!l || (lane != FI_LANE_MAIN && lane != FI_LANE_SIDE) || !is_cuda_lanes(l)) return NULL;
#ifdef FI_HAVE_CUDA
  if (l->forked && l->on_base) return l->fork_stream; /* (a capture: the lanes run there) */
  return l->stream[lane - 1];
#else
  return NULL;
#endif
}

void fi_lanes_destroy(fi_lanes *l) {
  if (!l) return;
  if (l->entered) fi_lanes_leave(l);
  fi_lanes_join(l);
#ifdef FI_HAVE_CUDA
  if (is_cuda_lanes(l)) {
    /* (the join ordered the context's stream after the lanes' work; their green contexts
     * go only once that work is done) */
    if (!capturing(l->ctx)) /* (a synchronisation would invalidate a capture) */
      for (int i = 0; i < 2; ++i)
        if (l->stream[i]) cudaStreamSynchronize(l->stream[i]);
    release_cuda(l);
  }
#endif
  free(l);
}
