// One prefill (append) step of a LLaMA-style model (32 query heads, 8 KV heads,
// head_dim 128, page size 16, bf16), four layers shown: the new tokens of every request
// (ragged, qo_indptr) are appended to the layer's paged cache, then attend causally to
// the whole cache (aligned bottom-right: earlier context + themselves). One prefill plan
// and one append plan serve all layers. Results: the attention output of each layer.
//
// As in decode_step.mlir, each layer's cache is the caller's buffer (a memref), viewed as
// a tensor with `bufferization.to_tensor ... restrict writable` and written back with
// `bufferization.materialize_in_destination`: the append happens in place and the
// compiled step copies no cache.
func.func @prefill_step(
    %q0: tensor<?x32x128xbf16>,
    %k0: tensor<?x8x128xbf16>,
    %v0: tensor<?x8x128xbf16>,
    %cache0_buf: memref<?x2x16x8x128xbf16>,
    %q1: tensor<?x32x128xbf16>,
    %k1: tensor<?x8x128xbf16>,
    %v1: tensor<?x8x128xbf16>,
    %cache1_buf: memref<?x2x16x8x128xbf16>,
    %q2: tensor<?x32x128xbf16>,
    %k2: tensor<?x8x128xbf16>,
    %v2: tensor<?x8x128xbf16>,
    %cache2_buf: memref<?x2x16x8x128xbf16>,
    %q3: tensor<?x32x128xbf16>,
    %k3: tensor<?x8x128xbf16>,
    %v3: tensor<?x8x128xbf16>,
    %cache3_buf: memref<?x2x16x8x128xbf16>,
    %qo_indptr: tensor<?xi32>,
    %kv_indptr: tensor<?xi32>,
    %kv_indices: tensor<?xi32>,
    %kv_last_page_len: tensor<?xi32>,
    %num_pages: index)
    -> (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<?x32x128xbf16>) {
  %c0 = arith.constant 0 : index
  %nnz = tensor.dim %q0, %c0 : tensor<?x32x128xbf16>
  %empty = tensor.empty(%nnz) : tensor<?x32x128xbf16>
  // The plans of the step: new tokens go to the last positions of each request.
  // Both are made `on_device`: on the CUDA backend planning kernels read the index arrays
  // from device memory (nothing waits for the GPU; the step can be captured in a CUDA
  // graph and replayed with new lengths); the prefill plan checks qo_indptr against the
  // rows of q (%nnz). On the host backend they are host plans.
  %append_plan = fi.append_plan append_indptr(%qo_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%num_pages)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  %prefill_plan = fi.paged_prefill_plan qo_indptr(%qo_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%num_pages)
      max_qo_rows(%nnz)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>, on_device,
       num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = bf16, kv_type = bf16}
  // Layer 0.
  %cache0 = bufferization.to_tensor %cache0_buf restrict writable : memref<?x2x16x8x128xbf16> to tensor<?x2x16x8x128xbf16>
  %new_cache0 = fi.append_paged_kv kv_new(%k0, %v0 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>)
      append_indptr(%qo_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan : !fi.plan<append>) outs(%cache0 : tensor<?x2x16x8x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xbf16>
  bufferization.materialize_in_destination %new_cache0 in restrict writable %cache0_buf
      : (tensor<?x2x16x8x128xbf16>, memref<?x2x16x8x128xbf16>) -> ()
  %o0 = fi.paged_prefill q(%q0 : tensor<?x32x128xbf16>) qo_indptr(%qo_indptr : tensor<?xi32>)
      kv(%new_cache0 : tensor<?x2x16x8x128xbf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%prefill_plan : !fi.plan<paged_prefill>) outs(%empty : tensor<?x32x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = 500000.0 : f32}
      -> tensor<?x32x128xbf16>
  // Layer 1.
  %cache1 = bufferization.to_tensor %cache1_buf restrict writable : memref<?x2x16x8x128xbf16> to tensor<?x2x16x8x128xbf16>
  %new_cache1 = fi.append_paged_kv kv_new(%k1, %v1 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>)
      append_indptr(%qo_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan : !fi.plan<append>) outs(%cache1 : tensor<?x2x16x8x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xbf16>
  bufferization.materialize_in_destination %new_cache1 in restrict writable %cache1_buf
      : (tensor<?x2x16x8x128xbf16>, memref<?x2x16x8x128xbf16>) -> ()
  %o1 = fi.paged_prefill q(%q1 : tensor<?x32x128xbf16>) qo_indptr(%qo_indptr : tensor<?xi32>)
      kv(%new_cache1 : tensor<?x2x16x8x128xbf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%prefill_plan : !fi.plan<paged_prefill>) outs(%empty : tensor<?x32x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = 500000.0 : f32}
      -> tensor<?x32x128xbf16>
  // Layer 2.
  %cache2 = bufferization.to_tensor %cache2_buf restrict writable : memref<?x2x16x8x128xbf16> to tensor<?x2x16x8x128xbf16>
  %new_cache2 = fi.append_paged_kv kv_new(%k2, %v2 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>)
      append_indptr(%qo_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan : !fi.plan<append>) outs(%cache2 : tensor<?x2x16x8x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xbf16>
  bufferization.materialize_in_destination %new_cache2 in restrict writable %cache2_buf
      : (tensor<?x2x16x8x128xbf16>, memref<?x2x16x8x128xbf16>) -> ()
  %o2 = fi.paged_prefill q(%q2 : tensor<?x32x128xbf16>) qo_indptr(%qo_indptr : tensor<?xi32>)
      kv(%new_cache2 : tensor<?x2x16x8x128xbf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%prefill_plan : !fi.plan<paged_prefill>) outs(%empty : tensor<?x32x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = 500000.0 : f32}
      -> tensor<?x32x128xbf16>
  // Layer 3.
  %cache3 = bufferization.to_tensor %cache3_buf restrict writable : memref<?x2x16x8x128xbf16> to tensor<?x2x16x8x128xbf16>
  %new_cache3 = fi.append_paged_kv kv_new(%k3, %v3 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>)
      append_indptr(%qo_indptr : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%append_plan : !fi.plan<append>) outs(%cache3 : tensor<?x2x16x8x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xbf16>
  bufferization.materialize_in_destination %new_cache3 in restrict writable %cache3_buf
      : (tensor<?x2x16x8x128xbf16>, memref<?x2x16x8x128xbf16>) -> ()
  %o3 = fi.paged_prefill q(%q3 : tensor<?x32x128xbf16>) qo_indptr(%qo_indptr : tensor<?xi32>)
      kv(%new_cache3 : tensor<?x2x16x8x128xbf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%prefill_plan : !fi.plan<paged_prefill>) outs(%empty : tensor<?x32x128xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = 500000.0 : f32}
      -> tensor<?x32x128xbf16>
  return %o0, %o1, %o2, %o3 : tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<?x32x128xbf16>
}
