// End to end: fi.paged_decode compiled through fi-to-llvm into an executable, run on the
// default backend with random inputs and random ragged KV lengths, compared with the
// runtime called directly (drivers/decode.c).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/decode.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: decode_gqa_lse: 6 trials
// CHECK: decode_combined_hnd: 6 trials
// CHECK: decode_f32_alibi: 6 trials
// CHECK: decode_fp8: 6 trials
// CHECK: decode_layers: 6 trials, 1 plan per call
// CHECK: E2E decode: PASS

// GQA group 4 (tensor-core decode), NHD, separate K/V, with LSE.
func.func @decode_gqa_lse(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%b) : tensor<?x8x64xf16>
  %l0 = tensor.empty(%b) : tensor<?x8xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// MHA (CUDA-core decode), one combined HND cache [pages, 2, kv_heads, page, head_dim],
// soft cap, sliding window, LLaMA RoPE; no LSE.
func.func @decode_combined_hnd(%q: tensor<?x4x32xbf16>, %kv: tensor<?x2x4x8x32xbf16>,
    %indptr: tensor<?xi32>, %indices: tensor<?xi32>, %last: tensor<?xi32>)
    -> tensor<?x4x32xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x4x32xbf16>
  %o0 = tensor.empty(%b) : tensor<?x4x32xbf16>
  %o = fi.paged_decode q(%q : tensor<?x4x32xbf16>) kv(%kv : tensor<?x2x4x8x32xbf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x4x32xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>,
       logits_soft_cap = 30.0 : f32, window_left = 40 : i64,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = 500.0 : f32,
       rope_scale = 2.0 : f32} -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}

// f32, ALiBi, explicit sm_scale, GQA group 2, page 4.
func.func @decode_f32_alibi(%q: tensor<?x6x16xf32>, %k: tensor<?x4x3x16xf32>,
    %v: tensor<?x4x3x16xf32>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>) -> (tensor<?x6x16xf32>, tensor<?x6xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x6x16xf32>
  %o0 = tensor.empty(%b) : tensor<?x6x16xf32>
  %l0 = tensor.empty(%b) : tensor<?x6xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x6x16xf32>)
      kv(%k, %v : tensor<?x4x3x16xf32>, tensor<?x4x3x16xf32>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x6x16xf32>, tensor<?x6xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 4, layout = nhd>,
       pos_encoding = #fi.pos_encoding<alibi>, sm_scale = 0.3 : f32}
      -> tensor<?x6x16xf32>, tensor<?x6xf32>
  return %o, %lse : tensor<?x6x16xf32>, tensor<?x6xf32>
}

// fp8 (e4m3) KV cache with dequantisation scales, f16 queries, MQA.
func.func @decode_fp8(%q: tensor<?x4x64xf16>, %k: tensor<?x16x1x64xf8E4M3FN>,
    %v: tensor<?x16x1x64xf8E4M3FN>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>) -> (tensor<?x4x64xf16>, tensor<?x4xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%b) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%b) : tensor<?x4xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x16x1x64xf8E4M3FN>, tensor<?x16x1x64xf8E4M3FN>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       k_scale = 0.5 : f32, v_scale = 2.0 : f32}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// Two layers of one step over the same page table: one plan after CSE.
func.func @decode_layers(%q1: tensor<?x8x64xf16>, %q2: tensor<?x8x64xf16>,
    %k1: tensor<?x16x2x64xf16>, %v1: tensor<?x16x2x64xf16>,
    %k2: tensor<?x16x2x64xf16>, %v2: tensor<?x16x2x64xf16>,
    %indptr: tensor<?xi32>, %indices: tensor<?xi32>, %last: tensor<?xi32>)
    -> (tensor<?x8x64xf16>, tensor<?x8x64xf16>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q1, %c0 : tensor<?x8x64xf16>
  %e = tensor.empty(%b) : tensor<?x8x64xf16>
  %o1 = fi.paged_decode q(%q1 : tensor<?x8x64xf16>)
      kv(%k1, %v1 : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%e : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x8x64xf16>
  %e2 = tensor.empty(%b) : tensor<?x8x64xf16>
  %o2 = fi.paged_decode q(%q2 : tensor<?x8x64xf16>)
      kv(%k2, %v2 : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%e2 : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x8x64xf16>
  return %o1, %o2 : tensor<?x8x64xf16>, tensor<?x8x64xf16>
}
