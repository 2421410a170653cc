// kernels/cuda/shared_prefix.cu -- fi_split_shared_prefix: a page table as its shared prefix
// (the leading page ids every request lists, never a request's last page) and each
// request's own suffix (see runtime.h).
//
// Work split. find_prefix_kernel: one block; the shortest request bounds P, every thread
// compares (request, page) pairs against request 0 and the first mismatching page wins
// (atomicMin in shared memory); it writes prefix_indptr {0, P}, prefix_qo_indptr
// {0, batch} and prefix_last_page_len.
// copy_suffix_kernel: block b copies request b's pages past P (and its indptr and last page
// length), block 0 also the prefix's page ids; it reads P from prefix_indptr[1], written
// by the first kernel on the same stream.
//
// Memory traffic: the page table read once or twice (the prefix's ids by every request in
// the first kernel), every id written once; no host synchronisation.
#include <climits>

#include "common.cuh"
#include "internal.h"

namespace fi {

struct SplitParams {
  const int32_t *indptr, *indices, *last;
  int32_t *prefix_qo_indptr, *prefix_indptr, *prefix_indices, *prefix_last, *suffix_indptr,
      *suffix_indices, *suffix_last;
  int32_t batch, page_size;
};

__global__ void find_prefix_kernel(const SplitParams p) {
  pdl_enter();  // (the launch contract of every kernel: pdl.cuh)
  __shared__ int shortest, first_bad;
  if (threadIdx.x == 0) shortest = INT_MAX;
  __syncthreads();
  for (int i = threadIdx.x; i < p.batch; i += blockDim.x) {
    const int own = p.indptr[i + 1] - p.indptr[i] - 1;
    atomicMin(&shortest, own < 0 ? 0 : own);
  }
  __syncthreads();
  const int bound = p.batch > 0 ? shortest : 0;
  if (threadIdx.x == 0) first_bad = bound;
  __syncthreads();
  const int first = p.indptr[0];
  for (long long w = threadIdx.x; w < (long long)(p.batch - 1) * bound; w += blockDim.x) {
    const int i = 1 + (int)(w / bound), j = (int)(w % bound);
    if (p.indices[p.indptr[i] + j] != p.indices[first + j]) atomicMin(&first_bad, j);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    p.prefix_qo_indptr[0] = 0;
    p.prefix_qo_indptr[1] = p.batch;
    p.prefix_indptr[0] = 0;
    p.prefix_indptr[1] = first_bad;
    p.prefix_last[0] = p.page_size;
  }
}

__global__ void copy_suffix_kernel(const SplitParams p) {
  pdl_enter();
  const int shared = p.prefix_indptr[1], first = p.indptr[0];
  const int i = blockIdx.x;
  if (i == 0) {
    for (int j = threadIdx.x; j < shared; j += blockDim.x)
      p.prefix_indices[j] = p.indices[first + j];
    if (threadIdx.x == 0) p.suffix_indptr[p.batch] = p.indptr[p.batch] - first - p.batch * shared;
  }
  if (i >= p.batch) return;
  const int begin = p.indptr[i] + shared, end = p.indptr[i + 1];
  const int dst = p.indptr[i] - first - i * shared;
  if (threadIdx.x == 0) {
    p.suffix_indptr[i] = dst;
    p.suffix_last[i] = p.last[i];
  }
  for (int e = begin + threadIdx.x; e < end; e += blockDim.x)
    p.suffix_indices[dst + e - begin] = p.indices[e];
}

}  // namespace fi

extern "C" fi_status fi_cuda_split_shared_prefix(fi_context *ctx, int32_t batch,
                                                 int32_t page_size, const fi_page_table *pages,
                                                 int32_t *prefix_qo_indptr,
                                                 int32_t *prefix_indptr, int32_t *prefix_indices,
                                                 int32_t *prefix_last_page_len,
                                                 int32_t *suffix_indptr, int32_t *suffix_indices,
                                                 int32_t *suffix_last_page_len) {
  fi::SplitParams p;
  p.indptr = pages->indptr;
  p.indices = pages->indices;
  p.last = pages->last_page_len;
  p.prefix_qo_indptr = prefix_qo_indptr;
  p.prefix_indptr = prefix_indptr;
  p.prefix_indices = prefix_indices;
  p.prefix_last = prefix_last_page_len;
  p.suffix_indptr = suffix_indptr;
  p.suffix_indices = suffix_indices;
  p.suffix_last = suffix_last_page_len;
  p.batch = batch;
  p.page_size = page_size;
  fi_cuda_launch(ctx, dim3(1), dim3(256), 0, fi::find_prefix_kernel, p);
  fi_cuda_launch(ctx, dim3(batch > 0 ? (unsigned)batch : 1u), dim3(128), 0,
                 fi::copy_suffix_kernel, p);
  return fi_cuda_check_launch(ctx, "split_shared_prefix");
}
