// Cascade attention: 8 requests decode one token each and share a long prefix (a system
// prompt) stored once in the paged cache, plus a unique suffix each. LLaMA-style:
// 32 query heads, 8 KV heads, head_dim 128, page size 16, fp16; two layers shown.
//
// Level 0 (shared prefix): all 8 queries form ONE block row of the BSR matrix, so the
// prefix pages are read once for all of them: fi.paged_prefill with a single "request"
// whose 8 query rows are the 8 decode queries (qo_indptr = [0, 8]), no mask (every query
// sees the whole prefix) and #fi.bsr<block_rows = 8, ...>.
// Level 1 (unique suffixes): plain batch decode, block_rows = 1.
// The two partial states (o, lse) of each query are merged exactly with fi.merge_state.
// Both levels' plans are computed once and shared by the layers.
// examples/shared_prefix_decode.mlir writes the same step as one decode marked
// `shared_prefix`: fi-decompose-shared-prefix finds the prefix at run time and emits this.
#prefix = #fi.bsr<block_rows = 8, block_cols = 16, layout = nhd>
#suffix = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>

func.func @cascade_decode_step(
    %q0: tensor<8x32x128xf16>, %cache0: tensor<?x2x16x8x128xf16>,
    %q1: tensor<8x32x128xf16>, %cache1: tensor<?x2x16x8x128xf16>,
    // Level 0: the shared prefix as one request: [0, 8] query rows, its pages.
    %prefix_qo_indptr: tensor<2xi32>, %prefix_kv_indptr: tensor<2xi32>,
    %prefix_kv_indices: tensor<?xi32>, %prefix_last_page_len: tensor<1xi32>,
    // Level 1: the unique suffix of each of the 8 requests.
    %suffix_kv_indptr: tensor<9xi32>, %suffix_kv_indices: tensor<?xi32>,
    %suffix_last_page_len: tensor<8xi32>,
    %num_pages: index)
    -> (tensor<8x32x128xf16>, tensor<8x32x128xf16>) {
  %o_empty = tensor.empty() : tensor<8x32x128xf16>
  %lse_empty = tensor.empty() : tensor<8x32xf32>

  // Both plans are made `on_device` (planning kernels on the CUDA backend: the step can
  // be captured in a CUDA graph and replayed with new lengths; host plans on the host
  // backend); the prefix plan checks its qo_indptr against the 8 query rows.
  %rows = arith.constant 8 : index
  %prefix_plan = fi.paged_prefill_plan qo_indptr(%prefix_qo_indptr : tensor<2xi32>)
      pages(%prefix_kv_indptr, %prefix_kv_indices, %prefix_last_page_len
            : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) num_pages(%num_pages)
      max_qo_rows(%rows)
      {bsr = #prefix, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,
       q_type = f16, kv_type = f16}
  %suffix_plan = fi.decode_plan
      pages(%suffix_kv_indptr, %suffix_kv_indices, %suffix_last_page_len
            : tensor<9xi32>, tensor<?xi32>, tensor<8xi32>) num_pages(%num_pages)
      {bsr = #suffix, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,
       q_type = f16, kv_type = f16}

  // Layer 0.
  %o_prefix0, %lse_prefix0 = fi.paged_prefill q(%q0 : tensor<8x32x128xf16>)
      qo_indptr(%prefix_qo_indptr : tensor<2xi32>) kv(%cache0 : tensor<?x2x16x8x128xf16>)
      pages(%prefix_kv_indptr, %prefix_kv_indices, %prefix_last_page_len
            : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      plan(%prefix_plan : !fi.plan<paged_prefill>)
      outs(%o_empty, %lse_empty : tensor<8x32x128xf16>, tensor<8x32xf32>)
      {bsr = #prefix} -> tensor<8x32x128xf16>, tensor<8x32xf32>
  %o_suffix0, %lse_suffix0 = fi.paged_decode q(%q0 : tensor<8x32x128xf16>)
      kv(%cache0 : tensor<?x2x16x8x128xf16>)
      pages(%suffix_kv_indptr, %suffix_kv_indices, %suffix_last_page_len
            : tensor<9xi32>, tensor<?xi32>, tensor<8xi32>)
      plan(%suffix_plan : !fi.plan<decode>)
      outs(%o_empty, %lse_empty : tensor<8x32x128xf16>, tensor<8x32xf32>)
      {bsr = #suffix} -> tensor<8x32x128xf16>, tensor<8x32xf32>
  %o0 = fi.merge_state a(%o_prefix0, %lse_prefix0 : tensor<8x32x128xf16>, tensor<8x32xf32>)
      b(%o_suffix0, %lse_suffix0 : tensor<8x32x128xf16>, tensor<8x32xf32>)
      outs(%o_empty : tensor<8x32x128xf16>) -> tensor<8x32x128xf16>

  // Layer 1.
  %o_prefix1, %lse_prefix1 = fi.paged_prefill q(%q1 : tensor<8x32x128xf16>)
      qo_indptr(%prefix_qo_indptr : tensor<2xi32>) kv(%cache1 : tensor<?x2x16x8x128xf16>)
      pages(%prefix_kv_indptr, %prefix_kv_indices, %prefix_last_page_len
            : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      plan(%prefix_plan : !fi.plan<paged_prefill>)
      outs(%o_empty, %lse_empty : tensor<8x32x128xf16>, tensor<8x32xf32>)
      {bsr = #prefix} -> tensor<8x32x128xf16>, tensor<8x32xf32>
  %o_suffix1, %lse_suffix1 = fi.paged_decode q(%q1 : tensor<8x32x128xf16>)
      kv(%cache1 : tensor<?x2x16x8x128xf16>)
      pages(%suffix_kv_indptr, %suffix_kv_indices, %suffix_last_page_len
            : tensor<9xi32>, tensor<?xi32>, tensor<8xi32>)
      plan(%suffix_plan : !fi.plan<decode>)
      outs(%o_empty, %lse_empty : tensor<8x32x128xf16>, tensor<8x32xf32>)
      {bsr = #suffix} -> tensor<8x32x128xf16>, tensor<8x32xf32>
  %o1 = fi.merge_state a(%o_prefix1, %lse_prefix1 : tensor<8x32x128xf16>, tensor<8x32xf32>)
      b(%o_suffix1, %lse_suffix1 : tensor<8x32x128xf16>, tensor<8x32xf32>)
      outs(%o_empty : tensor<8x32x128xf16>) -> tensor<8x32x128xf16>

  return %o0, %o1 : tensor<8x32x128xf16>, tensor<8x32x128xf16>
}
