// Shared-prefix decode, written as the model means it: 8 requests decode one token each
// and their page tables start with the same pages (a system prompt stored once); the
// decode says so with `shared_prefix`. fi-to-llvm's first step, fi-decompose-shared-prefix,
// turns each layer's decode into the paper's composable formats -- the split of the page
// tables (at run time: the leading pages every request lists), the prefix as ONE block row
// of all 8 queries (its KV read once for all of them), the suffixes as a decode, and a merge
// -- and CSE shares the split and the plans between the layers. examples/cascade.mlir is
// the same step written out by hand, with the prefix and suffix tables given.
// LLaMA-style: 32 query heads, 8 KV heads, head_dim 128, page 16, fp16; two layers.
#pages = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>

func.func @shared_prefix_decode_step(
    %q0: tensor<8x32x128xf16>, %cache0: tensor<?x2x16x8x128xf16>,
    %q1: tensor<8x32x128xf16>, %cache1: tensor<?x2x16x8x128xf16>,
    %kv_indptr: tensor<9xi32>, %kv_indices: tensor<?xi32>, %kv_last_page_len: tensor<8xi32>)
    -> (tensor<8x32x128xf16>, tensor<8x32x128xf16>) {
  %o_empty = tensor.empty() : tensor<8x32x128xf16>
  %o0 = fi.paged_decode q(%q0 : tensor<8x32x128xf16>) kv(%cache0 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len
            : tensor<9xi32>, tensor<?xi32>, tensor<8xi32>)
      outs(%o_empty : tensor<8x32x128xf16>) {bsr = #pages, shared_prefix}
      -> tensor<8x32x128xf16>
  %o1 = fi.paged_decode q(%q1 : tensor<8x32x128xf16>) kv(%cache1 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len
            : tensor<9xi32>, tensor<?xi32>, tensor<8xi32>)
      outs(%o_empty : tensor<8x32x128xf16>) {bsr = #pages, shared_prefix}
      -> tensor<8x32x128xf16>
  return %o0, %o1 : tensor<8x32x128xf16>, tensor<8x32x128xf16>
}
