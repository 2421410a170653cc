// End to end: fi.paged_prefill and fi.ragged_prefill compiled through fi-to-llvm into an
// executable, run with random inputs and random ragged query/KV lengths, compared with
// the runtime called directly (drivers/prefill.c).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/prefill.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: paged_causal_lse: 6 trials, 0 mismatches
// CHECK: paged_custom_hnd: 6 trials, 0 mismatches
// CHECK: ragged_causal_rope: 6 trials, 0 mismatches
// CHECK: ragged_static: 6 trials, 0 mismatches
// CHECK: ragged_custom_hint: 6 trials, 0 mismatches
// CHECK: E2E prefill: PASS

// Paged prefill, causal, combined NHD cache, LSE; query length dynamic -> tiles at plan
// time.
func.func @paged_causal_lse(%q: tensor<?x8x64xf16>, %qo: tensor<?xi32>,
    %kv: tensor<?x2x16x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x8xf32>
  %o, %lse = fi.paged_prefill q(%q : tensor<?x8x64xf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%kv : tensor<?x2x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>} -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// Paged prefill, custom bit-packed mask, separate HND K/V, bf16, query-length hint.
func.func @paged_custom_hnd(%q: tensor<?x4x32xbf16>, %qo: tensor<?xi32>,
    %k: tensor<?x4x8x32xbf16>, %v: tensor<?x4x8x32xbf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>, %mask: tensor<?xi8>,
    %mask_indptr: tensor<?xi32>) -> tensor<?x4x32xbf16>
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x32xbf16>
  %o0 = tensor.empty(%n) : tensor<?x4x32xbf16>
  %o = fi.paged_prefill q(%q : tensor<?x4x32xbf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%k, %v : tensor<?x4x8x32xbf16>, tensor<?x4x8x32xbf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      mask(%mask, %mask_indptr : tensor<?xi8>, tensor<?xi32>)
      outs(%o0 : tensor<?x4x32xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>,
       mask_mode = #fi.mask_mode<custom>, fi.avg_qo_len = 12 : i64} -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}

// Ragged prefill, causal, LLaMA RoPE, GQA, LSE; plan-time tiles.
func.func @ragged_causal_rope(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<rope_llama>}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// Ragged prefill with static shapes (40 query rows, 4 requests): tiles at compile time;
// f32, soft cap, sliding window.
func.func @ragged_static(%q: tensor<40x4x16xf32>, %k: tensor<?x2x16xf32>,
    %v: tensor<?x2x16xf32>, %qo: tensor<5xi32>, %kvp: tensor<5xi32>)
    -> tensor<40x4x16xf32> attributes {llvm.emit_c_interface} {
  %o0 = tensor.empty() : tensor<40x4x16xf32>
  %o = fi.ragged_prefill q(%q : tensor<40x4x16xf32>)
      kv(%k, %v : tensor<?x2x16xf32>, tensor<?x2x16xf32>)
      indptr(%qo, %kvp : tensor<5xi32>, tensor<5xi32>)
      outs(%o0 : tensor<40x4x16xf32>)
      {logits_soft_cap = 20.0 : f32, window_left = 10 : i64} -> tensor<40x4x16xf32>
  return %o : tensor<40x4x16xf32>
}

// Ragged prefill, combined K/V [nnz, 2, kv_heads, head_dim], custom ui8 mask, hint.
func.func @ragged_custom_hint(%q: tensor<?x2x32xf16>, %kv: tensor<?x2x2x32xf16>,
    %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %mask: tensor<?xui8>,
    %mask_indptr: tensor<?xi32>) -> tensor<?x2x32xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x2x32xf16>
  %o0 = tensor.empty(%n) : tensor<?x2x32xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x2x32xf16>) kv(%kv : tensor<?x2x2x32xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      mask(%mask, %mask_indptr : tensor<?xui8>, tensor<?xi32>)
      outs(%o0 : tensor<?x2x32xf16>)
      {mask_mode = #fi.mask_mode<custom>, fi.avg_qo_len = 40 : i64} -> tensor<?x2x32xf16>
  return %o : tensor<?x2x32xf16>
}
