// One decode step of a LLaMA-style model (32 query heads, 8 KV heads, head_dim 128,
// page size 16, fp16), four layers shown. Each layer appends the new token's K/V to its
// paged cache, then attends with its query. The page table is the same for every layer,
// so a frontend may emit one plan per layer (as here): `fi-opt -cse` folds them into one
// decode plan and one append plan ("plan once, run per layer").
//
// Arguments: q_l [batch, 32, 128] per layer, new K/V [batch, 8, 128] per layer, the
// combined cache of each layer [pages, 2, 16, 8, 128], the page table (already including
// the new token), append_indptr (one new token per request: 0, 1, ..., batch) and the
// number of pages of the cache. Results: the attention output of each layer.
//
// The plans are made `on_device`: on the CUDA backend a planning kernel reads the page
// table from device memory, so the step never waits for the GPU and is captured once in a
// CUDA graph and replayed with new lengths (examples/drivers/decode_step.c). The page table
// is therefore device memory (on the host backend: host memory, planned on the host).
//
// The caches are the caller's buffers, updated in place: each comes in as a memref,
// enters tensor land through `bufferization.to_tensor ... restrict writable` (the only
// tensor view of that buffer, which the step may write), and the appended cache is
// written back with `bufferization.materialize_in_destination ... in restrict writable`.
// One-shot bufferization then gives fi.append_paged_kv the caller's buffer itself and the
// write-back folds away: the compiled step neither copies nor allocates a cache. (A cache
// taken and returned as a tensor is copied on every step instead: lowering/README.md,
// "Known costs".)
func.func @decode_step(
    %q0: tensor<?x32x128xf16>,
    %k0: tensor<?x8x128xf16>,
    %v0: tensor<?x8x128xf16>,
    %cache0_buf: memref<?x2x16x8x128xf16>,
    %q1: tensor<?x32x128xf16>,
    %k1: tensor<?x8x128xf16>,
    %v1: tensor<?x8x128xf16>,
    %cache1_buf: memref<?x2x16x8x128xf16>,
    %q2: tensor<?x32x128xf16>,
    %k2: tensor<?x8x128xf16>,
    %v2: tensor<?x8x128xf16>,
    %cache2_buf: memref<?x2x16x8x128xf16>,
    %q3: tensor<?x32x128xf16>,
    %k3: tensor<?x8x128xf16>,
    %v3: tensor<?x8x128xf16>,
    %cache3_buf: memref<?x2x16x8x128xf16>,
    %kv_indptr: tensor<?xi32>,
    %kv_indices: tensor<?xi32>,
    %kv_last_page_len: tensor<?xi32>,
    %append_indptr: tensor<?xi32>,
    %num_pages: index)
    -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>) {
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q0, %c0 : tensor<?x32x128xf16>
  %empty = tensor.empty(%batch) : tensor<?x32x128xf16>
  // Layer 0.
  %append_plan0 = fi.append_plan append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%num_pages)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  %cache0 = bufferization.to_tensor %cache0_buf restrict writable : memref<?x2x16x8x128xf16> to tensor<?x2x16x8x128xf16>
  %new_cache0 = fi.append_paged_kv kv_new(%k0, %v0 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan0 : !fi.plan<append>) outs(%cache0 : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  bufferization.materialize_in_destination %new_cache0 in restrict writable %cache0_buf
      : (tensor<?x2x16x8x128xf16>, memref<?x2x16x8x128xf16>) -> ()
  %decode_plan0 = fi.decode_plan pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      num_pages(%num_pages) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device,
      num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %o0 = fi.paged_decode q(%q0 : tensor<?x32x128xf16>) kv(%new_cache0 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%decode_plan0 : !fi.plan<decode>) outs(%empty : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, pos_encoding = #fi.pos_encoding<rope_llama>,
       rope_theta = 500000.0 : f32} -> tensor<?x32x128xf16>
  // Layer 1.
  %append_plan1 = fi.append_plan append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%num_pages)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  %cache1 = bufferization.to_tensor %cache1_buf restrict writable : memref<?x2x16x8x128xf16> to tensor<?x2x16x8x128xf16>
  %new_cache1 = fi.append_paged_kv kv_new(%k1, %v1 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan1 : !fi.plan<append>) outs(%cache1 : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  bufferization.materialize_in_destination %new_cache1 in restrict writable %cache1_buf
      : (tensor<?x2x16x8x128xf16>, memref<?x2x16x8x128xf16>) -> ()
  %decode_plan1 = fi.decode_plan pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      num_pages(%num_pages) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device,
      num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %o1 = fi.paged_decode q(%q1 : tensor<?x32x128xf16>) kv(%new_cache1 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%decode_plan1 : !fi.plan<decode>) outs(%empty : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, pos_encoding = #fi.pos_encoding<rope_llama>,
       rope_theta = 500000.0 : f32} -> tensor<?x32x128xf16>
  // Layer 2.
  %append_plan2 = fi.append_plan append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%num_pages)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  %cache2 = bufferization.to_tensor %cache2_buf restrict writable : memref<?x2x16x8x128xf16> to tensor<?x2x16x8x128xf16>
  %new_cache2 = fi.append_paged_kv kv_new(%k2, %v2 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan2 : !fi.plan<append>) outs(%cache2 : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  bufferization.materialize_in_destination %new_cache2 in restrict writable %cache2_buf
      : (tensor<?x2x16x8x128xf16>, memref<?x2x16x8x128xf16>) -> ()
  %decode_plan2 = fi.decode_plan pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      num_pages(%num_pages) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device,
      num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %o2 = fi.paged_decode q(%q2 : tensor<?x32x128xf16>) kv(%new_cache2 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%decode_plan2 : !fi.plan<decode>) outs(%empty : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, pos_encoding = #fi.pos_encoding<rope_llama>,
       rope_theta = 500000.0 : f32} -> tensor<?x32x128xf16>
  // Layer 3.
  %append_plan3 = fi.append_plan append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%num_pages)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  %cache3 = bufferization.to_tensor %cache3_buf restrict writable : memref<?x2x16x8x128xf16> to tensor<?x2x16x8x128xf16>
  %new_cache3 = fi.append_paged_kv kv_new(%k3, %v3 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%append_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan3 : !fi.plan<append>) outs(%cache3 : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  bufferization.materialize_in_destination %new_cache3 in restrict writable %cache3_buf
      : (tensor<?x2x16x8x128xf16>, memref<?x2x16x8x128xf16>) -> ()
  %decode_plan3 = fi.decode_plan pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      num_pages(%num_pages) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device,
      num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %o3 = fi.paged_decode q(%q3 : tensor<?x32x128xf16>) kv(%new_cache3 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%decode_plan3 : !fi.plan<decode>) outs(%empty : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, pos_encoding = #fi.pos_encoding<rope_llama>,
       rope_theta = 500000.0 : f32} -> tensor<?x32x128xf16>
  return %o0, %o1, %o2, %o3 : tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>
}
