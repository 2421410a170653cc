// What fi-decompose-shared-prefix refuses, by name.
// RUN: fi-opt %s --split-input-file --verify-diagnostics --fi-decompose-shared-prefix

func.func @rope(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %l: tensor<?xi32>, %o0: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  // expected-error @below {{'fi.paged_decode' op is `shared_prefix` with position-dependent attention (pos_encoding or window_left): the prefix part sees every query at the prefix's end; apply RoPE to q and k before the op, or drop `shared_prefix`}}
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix,
       pos_encoding = #fi.pos_encoding<rope_llama>} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}

// -----

func.func @window(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %l: tensor<?xi32>, %o0: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  // expected-error @below {{position-dependent attention (pos_encoding or window_left)}}
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix,
       window_left = 512} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}

// -----

func.func @memref_form(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %ip: memref<?xi32>,
    %ix: memref<?xi32>, %l: memref<?xi32>, %o0: memref<?x32x128xf16>) {
  // expected-error @below {{is `shared_prefix` in memref form; run fi-decompose-shared-prefix before bufferization (fi-to-llvm does)}}
  fi.paged_decode q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      pages(%ip, %ix, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o0 : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix}
  return
}

// -----

func.func @with_plan(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %l: tensor<?xi32>, %o0: tensor<?x32x128xf16>, %np: index) -> tensor<?x32x128xf16> {
  %plan = fi.decode_plan pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32,
       num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  // expected-error @below {{is `shared_prefix` but has a plan; drop `plan` (the decomposition plans its prefix and suffix parts)}}
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%plan : !fi.plan<decode>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
