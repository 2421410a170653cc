/* test/gpu/bsr_torch_shim.c -- one flat C entry point over fi's block-sparse plan and run,
 * for test_block_sparse_torch.py: PyTorch (through ctypes) hands it the BSR arrays on the
 * host and q, k, v, o, lse as tensor data pointers (device memory for the CUDA backend,
 * host memory for the host backend), so that the test can check fi against a dense masked
 * reference that PyTorch builds from the same arrays. Scalars and int32 arrays only: no
 * fi struct is mirrored in Python. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi/runtime.h"

#ifdef FI_SHIM_WITH_CUDA
#include <cuda_runtime.h>
#endif

/* One context per backend for the process (the test runs every configuration on it). */
static fi_context *contexts[2];

static int fail(char *err, int32_t err_len, const char *what, const char *msg) {
  if (err && err_len > 0) snprintf(err, (size_t)err_len, "%s: %s", what, msg);
  return 1;
}

#ifdef FI_SHIM_WITH_CUDA
static void *device_copy(const void *host, size_t bytes) {
  void *d = NULL;
  if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) return NULL;
  if (bytes && cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    cudaFree(d);
    return NULL;
  }
  return d;
}
#endif

/* dims: m (query rows), n (keys), qo_heads, kv_heads, head_dim.
 * opts: dtype (0 f16, 1 bf16), causal, window_left (-1 none), q_tile, kv_tile (0, 0: the
 *       runtime's choice; else forced mma.sync tiles, cores = tensor), page_size (0: k and v
 *       are [n, kv_heads, head_dim]; else [pool_pages, page_size, kv_heads, head_dim] NHD),
 *       num_pages (the page table's length P, (P - 1) page_size < n <= P page_size),
 *       pool_pages.
 * blocks: block_rows, block_cols, num_block_rows (0: uniform rows), num_block_cols (0:
 *       uniform columns). pages: the page table's P page ids (page_size > 0).
 * Returns 0 on success, 1 with `err` set otherwise (the failing call and fi's message). */
int fi_bsr_shim_run(int32_t use_cuda, const int64_t *dims, const int32_t *opts,
                    float soft_cap, const int32_t *blocks, const int32_t *indptr,
                    const int32_t *indices, const int32_t *row_offsets,
                    const int32_t *col_offsets, const int32_t *pages, void *q, void *k,
                    void *v, void *o, float *lse, char *err, int32_t err_len) {
  const fi_backend backend = use_cuda ? FI_BACKEND_CUDA : FI_BACKEND_HOST;
#ifndef FI_SHIM_WITH_CUDA
  if (use_cuda) return fail(err, err_len, "fi_bsr_shim_run", "built without CUDA");
#endif
  if (!contexts[backend] && fi_context_create(backend, &contexts[backend]) != FI_SUCCESS)
    return fail(err, err_len, "fi_context_create", fi_last_error(NULL));
  fi_context *ctx = contexts[backend];
  const int64_t m = dims[0], n = dims[1];
  const int32_t hq = (int32_t)dims[2], hk = (int32_t)dims[3], hd = (int32_t)dims[4];
  const int32_t page = opts[5], num_pages = opts[6], pool = opts[7];
  fi_attention_params p = fi_attention_params_default(hq, hk, hd);
  p.q_dtype = p.kv_dtype = opts[0] ? FI_DTYPE_BF16 : FI_DTYPE_F16;
  p.mask_mode = opts[1] ? FI_MASK_CAUSAL : FI_MASK_NONE;
  p.window_left = opts[2];
  p.logits_soft_cap = soft_cap;
  p.page_size = page > 0 ? page : 0;
  const fi_tiles forced = {opts[3], opts[4], 1, FI_CORES_TENSOR};
  const fi_tiles *tiles = opts[3] > 0 ? &forced : NULL;

  fi_bsr_matrix bsr;
  memset(&bsr, 0, sizeof bsr);
  bsr.block_rows = blocks[0], bsr.block_cols = blocks[1];
  bsr.indptr = indptr, bsr.indices = indices;
  if (blocks[2] > 0) bsr.num_block_rows = blocks[2], bsr.row_offsets = row_offsets;
  if (blocks[3] > 0) bsr.num_block_cols = blocks[3], bsr.col_offsets = col_offsets;

  const int64_t qs[3] = {m, hq, hd}, ks[3] = {n, hk, hd}, cs[4] = {pool, page, hk, hd};
  const int64_t ls[2] = {m, hq};
  fi_tensor tq = fi_tensor_contiguous(q, p.q_dtype, 3, qs);
  fi_tensor to = fi_tensor_contiguous(o, p.q_dtype, 3, qs);
  fi_tensor tl = fi_tensor_contiguous(lse, FI_DTYPE_F32, 2, ls);

  int rc = 0;
  const char *what = "", *msg = NULL; /* msg: NULL for fi's message */
  void *ws = NULL, *stage = NULL;
  int32_t *d_pt = NULL; /* the page table on the device: indptr, indices, last_page_len */
  size_t ws_bytes = 0, stage_bytes = 0;
  const int32_t last = (int32_t)(n - (int64_t)(num_pages - 1) * page);
  const int32_t pt_host[2] = {0, num_pages};
  fi_page_table host_pages = {pt_host, pages, &last};
  if (fi_block_sparse_workspace_size(ctx, &p, m, n, bsr.block_rows, bsr.block_cols,
                                     &ws_bytes) != FI_SUCCESS) {
    what = "fi_block_sparse_workspace_size", rc = 1;
    goto done;
  }
  if (page > 0 && fi_block_sparse_stage_size(ctx, &p, (int64_t)num_pages * page,
                                              &stage_bytes) != FI_SUCCESS) {
    what = "fi_block_sparse_stage_size", rc = 1;
    goto done;
  }
#ifdef FI_SHIM_WITH_CUDA
  if (use_cuda) {
    if (cudaMalloc(&ws, ws_bytes) != cudaSuccess ||
        (stage_bytes && cudaMalloc(&stage, stage_bytes) != cudaSuccess)) {
      what = "cudaMalloc", msg = "workspace or stage", rc = 1;
      goto done;
    }
    if (page > 0) {
      int32_t *h = malloc(sizeof(int32_t) * (size_t)(num_pages + 3));
      h[0] = 0, h[1] = num_pages, h[2] = last;
      memcpy(h + 3, pages, sizeof(int32_t) * (size_t)num_pages);
      d_pt = device_copy(h, sizeof(int32_t) * (size_t)(num_pages + 3));
      free(h);
      if (!d_pt) {
        what = "cudaMalloc", msg = "page table", rc = 1;
        goto done;
      }
    }
  }
#endif
  if (!use_cuda) ws = malloc(ws_bytes ? ws_bytes : 1);
  if (fi_context_set_prefill_stage(ctx, stage, stage_bytes) != FI_SUCCESS) {
    what = "fi_context_set_prefill_stage", rc = 1;
    goto done;
  }
  fi_plan plan;
  if (page > 0) {
    if (fi_block_sparse_paged_plan(ctx, &p, m, &host_pages, pool, &bsr, tiles, ws, ws_bytes,
                                   &plan) != FI_SUCCESS) {
      what = "fi_block_sparse_paged_plan", rc = 1;
      goto done;
    }
    fi_paged_kv_cache kv;
    kv.k = fi_tensor_contiguous(k, p.kv_dtype, 4, cs);
    kv.v = fi_tensor_contiguous(v, p.kv_dtype, 4, cs);
    kv.layout = FI_LAYOUT_NHD;
    fi_page_table run_pages = host_pages;
    if (d_pt) run_pages.indptr = d_pt, run_pages.indices = d_pt + 3, run_pages.last_page_len = d_pt + 2;
    if (fi_block_sparse_paged_run(ctx, &plan, &tq, &kv, &run_pages, &bsr, &to, &tl) !=
        FI_SUCCESS) {
      what = "fi_block_sparse_paged_run", rc = 1;
      goto done;
    }
  } else {
    fi_tensor tk = fi_tensor_contiguous(k, p.kv_dtype, 3, ks);
    fi_tensor tv = fi_tensor_contiguous(v, p.kv_dtype, 3, ks);
    if (fi_block_sparse_plan(ctx, &p, m, n, &bsr, tiles, ws, ws_bytes, &plan) != FI_SUCCESS) {
      what = "fi_block_sparse_plan", rc = 1;
      goto done;
    }
    if (fi_block_sparse_run(ctx, &plan, &tq, &tk, &tv, &bsr, &to, &tl) != FI_SUCCESS) {
      what = "fi_block_sparse_run", rc = 1;
      goto done;
    }
  }
done:
  if (rc) fail(err, err_len, what, msg ? msg : fi_last_error(ctx));
  fi_context_set_prefill_stage(ctx, NULL, 0);
#ifdef FI_SHIM_WITH_CUDA
  if (use_cuda) {
    const cudaError_t e = cudaDeviceSynchronize();
    if (!rc && e != cudaSuccess) rc = fail(err, err_len, "cudaDeviceSynchronize", cudaGetErrorString(e));
    cudaFree(ws), cudaFree(stage), cudaFree(d_pt);
    return rc;
  }
#endif
  free(ws);
  return rc;
}
