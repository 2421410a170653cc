// kernels/cuda/shard.cu -- the rank-order merge of a KV-sharded run on CUDA (src/shard.h),
// after the exchange (fi_shard_exchange: four grouped NCCL all-gathers of every rank's
// header, merge units and partial states into the workspace's gathered regions), and the
// CUDA side of the plans' signature exchange.
//
// Work split. shard_merge_kernel: a block of 128 threads per (query row, head), grid.x
// striding over the rows, grid.y = heads. Its threads first find, for every rank, the
// merge unit that holds the row (binary search of the rank's table by out_row) and write
// its chunk runs to shared memory; the row's chunk list (rank 0's chunks, then rank 1's,
// ...) is then merged by merge_row.cuh, as the split-KV merge merges one unit's chunks.
//
// Memory traffic: each gathered partial row read once (D * 4 + 4 bytes per chunk and head),
// the output written once; the exchange moves R x (P x qo_heads x (D + 1) x 4 + 16 M + 256)
// bytes into each rank (P, M: the most partial rows and merge units of any rank's plan).
#include "common.cuh"
#include "merge_row.cuh"

extern "C" {
#include "shard.h"
}

#include <math.h>
#include <string.h>

namespace fi {

// The gathered states (fi_shard_gathered, device pointers into the workspace) and the
// problem's sizes.
struct ShardArgs {
  const int32_t *mine;
  const char *headers, *merge, *lse, *o;
  int64_t merge_bytes, lse_bytes, o_bytes;
  int ranks, heads, head_dim;
  int64_t rows;
};

struct RankRun {
  int64_t first, stride, count;
};

struct GatheredChunks {
  const ShardArgs *a;
  const RankRun *runs;  // shared memory, [ranks]
  const int64_t *start; // shared memory, [ranks + 1]: first chunk index of each rank
  int h;
  __device__ __forceinline__ void at(int c, int &r, int64_t &prow) const {
    r = 0;
    while (start[r + 1] <= c) ++r;
    prow = runs[r].first + (int64_t)(c - start[r]) * runs[r].stride;
  }
  __device__ __forceinline__ const float *row(int c) const {
    int r;
    int64_t prow;
    at(c, r, prow);
    const float *po = (const float *)(a->o + (int64_t)r * a->o_bytes);
    return po + (prow * a->heads + h) * a->head_dim;
  }
  __device__ __forceinline__ float lse(int c) const {
    int r;
    int64_t prow;
    at(c, r, prow);
    const float *pl = (const float *)(a->lse + (int64_t)r * a->lse_bytes);
    return pl[prow * a->heads + h];
  }
  template <int NV>
  __device__ __forceinline__ void load(int c, int d0, float (&x)[NV]) const {
    load_f32<NV>(row(c) + d0, x);
  }
};

__device__ __forceinline__ const int32_t *rank_header(const ShardArgs &a, int r) {
  return (const int32_t *)(a.headers + (int64_t)r * FI_SHARD_HEADER_BYTES);
}

// Records the first failure {code, rank, value} in the workspace header's status words.
__device__ __forceinline__ void record_failure(int32_t *status, int code, int r, int value) {
  if (atomicCAS(status, 0, code) == 0) {
    status[1] = r;
    status[2] = value;
  }
}

template <typename T>
__global__ void __launch_bounds__(128)
shard_merge_kernel(ShardArgs a, T *o, int64_t o_sb, int64_t o_sh, float *lse, int64_t lse_sb,
                   int64_t lse_sh, int32_t *status) {
  __shared__ float red_o[128 * 8];
  __shared__ float2 red_md[128];
  extern __shared__ int64_t dyn[];
  RankRun *runs = (RankRun *)dyn;
  int64_t *start = (int64_t *)(runs + a.ranks);
  __shared__ int bad;
  pdl_enter();
  const int h = blockIdx.y;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  // Every rank's header against this rank's: a peer that failed its run or runs another
  // plan makes this rank's outputs NaN and leaves a record for fi_plan_device_status.
  for (int r = threadIdx.x; r < a.ranks; r += blockDim.x) {
    int value = 0;
    const int code = fi_shard_header_verdict(a.mine, rank_header(a, r), r, &value);
    if (code) {
      bad = 1;
      record_failure(status, code, r, value);
    }
  }
  __syncthreads();
  for (int64_t q = blockIdx.x; q < a.rows; q += gridDim.x) {
    T *orow = o + q * o_sb + h * o_sh;
    float *lrow = lse ? lse + q * lse_sb + h * lse_sh : nullptr;
    if (!bad) {
      for (int r = threadIdx.x; r < a.ranks; r += blockDim.x) {
        const fi_merge_unit *units = (const fi_merge_unit *)(a.merge + (int64_t)r * a.merge_bytes);
        const int u = fi_shard_unit_of(units, rank_header(a, r)[FI_SH_MERGE_UNITS], q);
        RankRun rr = {0, 1, 0};
        if (u >= 0) {
          rr.first = (int64_t)units[u].first_partial_row + (q - units[u].out_row);
          rr.stride = units[u].rows;
          rr.count = units[u].num_chunks;
        } else {
          bad = 1;
          record_failure(status, FI_SHARD_NO_UNIT, r, (int)q);
        }
        runs[r] = rr;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        start[0] = 0;
        for (int r = 0; r < a.ranks; ++r) start[r + 1] = start[r] + runs[r].count;
      }
      __syncthreads();
    }
    if (bad) {
      const float nan = __int_as_float(0x7fc00000);
      for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) orow[d] = from_float<T>(nan);
      if (lrow && threadIdx.x == 0) *lrow = nan;
      continue;
    }
    const GatheredChunks loc = {&a, runs, start, h};
    merge_chunk_list<T>(loc, (int)start[a.ranks], a.head_dim, red_o, red_md, orow, lrow);
  }
}

}  // namespace fi

using namespace fi;

extern "C" fi_status fi_cuda_shard_mark(fi_context *ctx, const fi_plan *plan, int32_t status) {
  fi_shard_layout l = fi_shard_layout_for(&plan->params, plan->workspace_bytes);
  char *w = (char *)plan->workspace + l.off_send_header + FI_SH_STATUS * 4;
  cudaError_t e = cudaMemsetAsync(w, status & 0xff, 1, fi_cuda_stream(ctx));
  if (e != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "sharded run: marking its header failed: %s",
                        cudaGetErrorString(e));
  return FI_SUCCESS;
}

extern "C" fi_status fi_cuda_shard_merge(fi_context *ctx, const fi_plan *plan,
                                        const fi_shard_gathered *g, fi_tensor *o,
                                        fi_tensor *lse) {
  const int heads = plan->params.num_qo_heads, D = plan->params.head_dim;
  if ((D != 64 && D != 128 && D != 256) || !fi_is_aligned(o->data, 16) ||
      (o->strides[0] * (int64_t)fi_dtype_size(o->dtype)) % 16 ||
      (o->strides[1] * (int64_t)fi_dtype_size(o->dtype)) % 16)
    return fi_set_error(ctx, FI_ERROR_UNSUPPORTED,
                        "sharded run: o needs a 16-byte aligned base and strides that are "
                        "multiples of 16 bytes, and head_dim 64, 128 or 256");
  ShardArgs a;
  a.mine = g->mine;
  a.headers = g->headers;
  a.merge = g->merge;
  a.lse = g->lse;
  a.o = g->o;
  a.merge_bytes = (int64_t)g->merge_bytes;
  a.lse_bytes = (int64_t)g->lse_bytes;
  a.o_bytes = (int64_t)g->o_bytes;
  a.ranks = g->ranks;
  a.heads = heads;
  a.head_dim = D;
  a.rows = plan->total_qo_rows;
  if (a.rows == 0) return FI_SUCCESS;
  const long long fill = ((long long)(ctx->target.sm_count > 0 ? ctx->target.sm_count : 132) *
                              16 + heads - 1) / heads;
  dim3 grid((unsigned)(a.rows < fill ? a.rows : fill), heads);
  const size_t smem = (size_t)a.ranks * sizeof(RankRun) + (size_t)(a.ranks + 1) * sizeof(int64_t);
  int32_t *status = (int32_t *)plan->workspace + 4;  // the workspace header's status record
  float *lp = lse ? (float *)lse->data : nullptr;
  const int64_t lsb = lse ? lse->strides[0] : 0, lsh = lse ? lse->strides[1] : 0;
  cudaError_t e;
  switch (o->dtype) {
    case FI_DTYPE_F16:
      e = fi_cuda_launch(ctx, grid, dim3(128), smem, shard_merge_kernel<f16>, a, (f16 *)o->data,
                         o->strides[0], o->strides[1], lp, lsb, lsh, status);
      break;
    case FI_DTYPE_BF16:
      e = fi_cuda_launch(ctx, grid, dim3(128), smem, shard_merge_kernel<bf16>, a, (bf16 *)o->data,
                         o->strides[0], o->strides[1], lp, lsb, lsh, status);
      break;
    case FI_DTYPE_F32:
      e = fi_cuda_launch(ctx, grid, dim3(128), smem, shard_merge_kernel<float>, a,
                         (float *)o->data, o->strides[0], o->strides[1], lp, lsb, lsh, status);
      break;
    default:
      return fi_set_error(ctx, FI_ERROR_UNSUPPORTED, "sharded run: o dtype %s unsupported",
                          fi_dtype_name(o->dtype));
  }
  if (e != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "sharded merge: kernel launch failed: %s",
                        cudaGetErrorString(e));
  return fi_cuda_check_launch(ctx, "sharded merge");
}

namespace {
// What fi_nccl_wait polls: an event when one is given, else the stream.
struct CudaDone {
  cudaEvent_t ev;
  cudaStream_t st;
  fi_context *ctx;
  const char *what;
};
int cuda_done(void *arg) {
  CudaDone *d = (CudaDone *)arg;
  cudaError_t e = d->ev ? cudaEventQuery(d->ev) : cudaStreamQuery(d->st);
  if (e == cudaSuccess) return 1;
  if (e == cudaErrorNotReady) return 0;
  fi_set_error(d->ctx, FI_ERROR_CUDA, "%s failed: %s", d->what, cudaGetErrorString(e));
  return -1;
}
}  // namespace

extern "C" fi_status fi_cuda_shard_agree_exchange(fi_context *ctx, fi_comm *comm,
                                                  const void *send_host, void *recv_host,
                                                  size_t bytes) {
  const size_t need = (size_t)(comm->size + 1) * bytes;
  if (ctx->shard_scratch_bytes < need) {
    if (ctx->shard_scratch) cudaFree(ctx->shard_scratch);
    ctx->shard_scratch = nullptr;
    ctx->shard_scratch_bytes = 0;
    if (cudaMalloc(&ctx->shard_scratch, need) != cudaSuccess)
      return fi_set_error(ctx, FI_ERROR_OUT_OF_MEMORY,
                          "sharded plan: no device memory for the signature exchange");
    ctx->shard_scratch_bytes = need;
  }
  char *dsend = (char *)ctx->shard_scratch, *drecv = dsend + bytes;
  cudaStream_t st = fi_cuda_stream(ctx);
  ++ctx->sync_count;
  cudaError_t e = cudaMemcpyAsync(dsend, send_host, bytes, cudaMemcpyHostToDevice, st);
  if (e != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "sharded plan: copy failed: %s", cudaGetErrorString(e));
  const void *send[1] = {dsend};
  void *recv[1] = {drecv};
  fi_status s = fi_nccl_allgather(ctx, comm, 1, send, recv, &bytes, st);
  if (s != FI_SUCCESS) return s;
  CudaDone d = {nullptr, st, ctx, "sharded plan: the signature exchange"};
  if ((e = cudaEventCreateWithFlags(&d.ev, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaEventRecord(d.ev, st)) != cudaSuccess) {
    if (d.ev) cudaEventDestroy(d.ev);
    return fi_set_error(ctx, FI_ERROR_CUDA, "sharded plan: event failed: %s",
                        cudaGetErrorString(e));
  }
  // Waits with the communicator's timeout (a peer that never joins aborts the communicator
  // instead of hanging this thread), then copies the headers back.
  s = fi_nccl_wait(ctx, comm, cuda_done, &d, "sharded plan (signature exchange)");
  cudaEventDestroy(d.ev);
  if (s != FI_SUCCESS) return s;
  e = cudaMemcpyAsync(recv_host, drecv, (size_t)comm->size * bytes, cudaMemcpyDeviceToHost, st);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  if (e != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "sharded plan: copy failed: %s", cudaGetErrorString(e));
  return FI_SUCCESS;
}

extern "C" fi_status fi_cuda_comm_synchronize(fi_context *ctx) {
  CudaDone d = {nullptr, fi_cuda_stream(ctx), ctx, "the stream"};
  if (!ctx->comm) {
    cudaError_t e = cudaStreamSynchronize(d.st);
    return e == cudaSuccess ? FI_SUCCESS
                            : fi_set_error(ctx, FI_ERROR_CUDA, "the stream failed: %s",
                                           cudaGetErrorString(e));
  }
  ++ctx->sync_count;
  return fi_nccl_wait(ctx, ctx->comm, cuda_done, &d, "fi_comm_synchronize");
}
