// End to end on the CUDA backend: variants compiled with fi-to-llvm=backend=cuda (device
// code through NVPTX and ptxas into the program's own cubin) run on the GPU and, from the
// same object, on a host context; drivers/variants_cuda.c compares the two on random
// problems and times a variant against the built-in feature it reimplements. Without a GPU
// the driver runs the host side only.
//
// REQUIRES: fi-variant-bitcode
// RUN: fi-opt %s --fi-to-llvm="backend=cuda variant-bitcode=%fi_variant_bitcode cuda-toolkit=%fi_cuda_toolkit" | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: fi-opt %S/variants_cuda_decode_bench.mlir --fi-to-llvm="backend=cuda plans-on-device=1 variant-bitcode=%fi_variant_bitcode cuda-toolkit=%fi_cuda_toolkit" | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.bench.o
// RUN: %cc %fi_e2e_cflags %S/drivers/variants_cuda.c %t.o %t.bench.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe --configs=4 | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: variants_cuda: PASS

// (fastmath<afn>: on the GPU the SFU's tanh.approx, as the built-in soft cap; <arcp>: the
// division may be a multiplication by 1 / cap, computed once, as the built-in's)
func.func private @soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %cap: f32) -> f32 {
  %x = arith.divf %s, %cap fastmath<arcp> : f32
  %t = math.tanh %x fastmath<afn> : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}
func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}
func.func private @window_causal(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %in = arith.cmpi sge, %kp, %lo : i32
  %past = arith.cmpi sle, %kp, %qp : i32
  %keep = arith.andi %in, %past : i1
  return %keep : i1
}
// Packed documents: a token attends only within its document (doc[token], one request).
// The tile classifier bounds doc[] over each tile's query and key ranges, so tiles across
// two documents are skipped and tiles inside one need no mask call.
func.func private @same_doc(%b: i32, %qh: i32, %qp: i32, %kp: i32, %doc: tensor<?xi32>) -> i1 {
  %qi = arith.index_cast %qp : i32 to index
  %ki = arith.index_cast %kp : i32 to index
  %qd = tensor.extract %doc[%qi] : tensor<?xi32>
  %kd = tensor.extract %doc[%ki] : tensor<?xi32>
  %keep = arith.cmpi eq, %qd, %kd : i32
  return %keep : i1
}
// The same documents from arithmetic (each `len` tokens long): no table to scan.
func.func private @same_block(%b: i32, %qh: i32, %qp: i32, %kp: i32, %len: i32) -> i1 {
  %qd = arith.divsi %qp, %len : i32
  %kd = arith.divsi %kp, %len : i32
  %keep = arith.cmpi eq, %qd, %kd : i32
  return %keep : i1
}
// Keeps every pair: the bench's floor of what a variant costs the kernel.
// ALiBi as a score_mod: the slope of the query head from a captured table times the
// distance, added to the logit (the built-in pos_encoding = alibi's bias).
func.func private @alibi(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                         %slopes: tensor<32xf32>) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = tensor.extract %slopes[%h] : tensor<32xf32>
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
// Causal as a mask_mod (on a call without the built-in causal mask): the lowering splits
// the term off, and the kernel ends each chunk at the diagonal as its built-in causal does.
func.func private @causal(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %keep = arith.cmpi sle, %kp, %qp : i32
  return %keep : i1
}
func.func private @keep_all(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
// T5-style bias per (head, clamped distance) from a captured table, and a head mask: head 1
// sees only even keys, heads 4-7 none.
func.func private @t5_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %table: tensor<8x32xf32>) -> f32 {
  %d = arith.subi %qp, %kp : i32
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %d : i32 to index
  %bias = tensor.extract %table[%h, %j] : tensor<8x32xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func private @head_mask(%b: i32, %qh: i32, %qp: i32, %kp: i32,
                             %table: tensor<8x32xf32>) -> i1 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %odd = arith.remsi %kp, %c2 : i32
  %head1 = arith.cmpi eq, %qh, %c1 : i32
  %is_odd = arith.cmpi eq, %odd, %c1 : i32
  %drop = arith.andi %head1, %is_odd : i1
  %true = arith.constant true
  %kept = arith.xori %drop, %true : i1
  // Heads 4-7 (KV head 1's group) see nothing: every tile of their chunks is EMPTY, so
  // those chunks load no tile (o = 0, as on the host).
  %c4 = arith.constant 4 : i32
  %low = arith.cmpi slt, %qh, %c4 : i32
  %keep = arith.andi %kept, %low : i1
  return %keep : i1
}

// Soft cap as score_mod: ragged, causal, head_dim 128, f16, with LSE.
func.func @ragged_cap(%q: tensor<?x8x128xf16>, %k: tensor<?x2x128xf16>,
    %v: tensor<?x2x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %cap: f32)
    -> (tensor<?x8x128xf16>, tensor<?x8xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x128xf16>
  %l0 = tensor.empty(%n) : tensor<?x8xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x8x128xf16>)
      kv(%k, %v : tensor<?x2x128xf16>, tensor<?x2x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%cap : f32) outs(%o0, %l0 : tensor<?x8x128xf16>, tensor<?x8xf32>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @soft_cap}
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x128xf16>, tensor<?x8xf32>
}

// Sliding window and causal as one mask_mod: paged (page 16), head_dim 64, bf16 (the
// lowering splits the causal term off for the kernel's built-in causal bound; the host
// runs the whole mask).
func.func @paged_window(%q: tensor<?x8x64xbf16>, %qo: tensor<?xi32>,
    %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %w: i32)
    -> tensor<?x8x64xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xbf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xbf16>
  %o = fi.paged_prefill q(%q : tensor<?x8x64xbf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%k, %v : tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x8x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mod = @window_causal} -> tensor<?x8x64xbf16>
  return %o : tensor<?x8x64xbf16>
}

// T5 bias + head mask: ragged, causal, head_dim 128, bf16, the table in device memory.
func.func @ragged_t5(%q: tensor<?x8x128xbf16>, %k: tensor<?x2x128xbf16>,
    %v: tensor<?x2x128xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
    %table: tensor<8x32xf32>) -> tensor<?x8x128xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x128xbf16>
  %o0 = tensor.empty(%n) : tensor<?x8x128xbf16>
  %o = fi.ragged_prefill q(%q : tensor<?x8x128xbf16>)
      kv(%k, %v : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<8x32xf32>) outs(%o0 : tensor<?x8x128xbf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @t5_bias, mask_mod = @head_mask}
      -> tensor<?x8x128xbf16>
  return %o : tensor<?x8x128xbf16>
}

// Packed documents from a captured table on random ragged batches (the table's runs rise
// and fall; positions past its end read its last entry): the classifier's table scans,
// shared by the producer warpgroup's four warps on the GPU.
func.func @ragged_docs(%q: tensor<?x8x128xf16>, %k: tensor<?x2x128xf16>,
    %v: tensor<?x2x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %doc: tensor<?xi32>)
    -> tensor<?x8x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x8x128xf16>)
      kv(%k, %v : tensor<?x2x128xf16>, tensor<?x2x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%doc : tensor<?xi32>) outs(%o0 : tensor<?x8x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @same_doc} -> tensor<?x8x128xf16>
  return %o : tensor<?x8x128xf16>
}

// The bench rows: (1, 8192, 32, 8)-shaped causal prefill, hd 128, f16: soft cap as a
// variant and built in; a window as a variant and built in; packed documents (at the end).
func.func @bench_cap_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %cap: f32)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%cap : f32) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @soft_cap} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_cap_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, logits_soft_cap = 30.0 : f32,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_plain(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_window_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %w: i32)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @window} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_window_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, window_left = 1024 : i64,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_keep_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %w: i32)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @keep_all} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_causal_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %w: i32)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mod = @causal} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_alibi_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %slopes: tensor<32xf32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%slopes : tensor<32xf32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @alibi} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_alibi_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<alibi>,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
// Packed documents as a mask_mod and as the built-in custom mask (the same pairs as bits).
func.func @bench_docs_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %doc: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%doc : tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @same_doc} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_docs_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %mask: tensor<?xi8>,
    %mask_indptr: tensor<?xi32>) -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      mask(%mask, %mask_indptr : tensor<?xi8>, tensor<?xi32>) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<custom>,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_blocks_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>,
    %v: tensor<?x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %len: i32)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%len : i32) outs(%o0 : tensor<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @same_block} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}

// ------------------------------------------------------------------ decode variants ---
// Attention sinks + sliding window (StreamingLLM) with a soft cap on a paged decode (page
// 16, head_dim 128, f16, LSE): the warp-specialised decode kernel with both hooks; the
// mask's tile classifier proves the sub-tiles between the sinks and the window EMPTY (the
// producer copies none of them) and those inside FULL (no mask call).
func.func private @dec_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %cap: f32, %sinks: i32, %w: i32) -> f32 {
  %x = arith.divf %s, %cap fastmath<arcp> : f32
  %t = math.tanh %x fastmath<afn> : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}
func.func private @dec_stream(%b: i32, %qh: i32, %qp: i32, %kp: i32, %cap: f32, %sinks: i32,
                              %w: i32) -> i1 {
  %is_sink = arith.cmpi slt, %kp, %sinks : i32
  %lo = arith.subi %qp, %w : i32
  %in_window = arith.cmpi sge, %kp, %lo : i32
  %keep = arith.ori %is_sink, %in_window : i1
  return %keep : i1
}
func.func @decode_stream(%q: tensor<?x8x128xf16>, %k: tensor<?x16x2x128xf16>,
    %v: tensor<?x16x2x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %cap: f32, %sinks: i32, %w: i32) -> (tensor<?x8x128xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x128xf16>
  %l0 = tensor.empty(%n) : tensor<?x8xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x8x128xf16>)
      kv(%k, %v : tensor<?x16x2x128xf16>, tensor<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%cap, %sinks, %w : f32, i32, i32) outs(%o0, %l0 : tensor<?x8x128xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       score_mod = @dec_cap, mask_mod = @dec_stream}
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x128xf16>, tensor<?x8xf32>
}

// A per-head bias from a captured table (by distance bucket, T5-like) after RoPE, with the
// head mask of @head_mask (head 1 sees only even keys, heads 4-7 nothing: their CTAs'
// sub-tiles are all EMPTY): paged decode over pages of 8 (a copy per page), head_dim 64,
// bf16 -- the kernel's RoPE instance and its per-page copies.
func.func private @dec_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %table: tensor<8x32xf32>) -> f32 {
  %d = arith.subi %qp, %kp : i32
  %c31 = arith.constant 31 : i32
  %dc = arith.minsi %d, %c31 : i32
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %dc : i32 to index
  %bias = tensor.extract %table[%h, %j] : tensor<8x32xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func @decode_rope_bias(%q: tensor<?x8x64xbf16>, %k: tensor<?x8x2x64xbf16>,
    %v: tensor<?x8x2x64xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %table: tensor<8x32xf32>) -> tensor<?x8x64xbf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xbf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xbf16>
  %o = fi.paged_decode q(%q : tensor<?x8x64xbf16>)
      kv(%k, %v : tensor<?x8x2x64xbf16>, tensor<?x8x2x64xbf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<8x32xf32>) outs(%o0 : tensor<?x8x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = nhd>,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_theta = 500.0 : f32,
       score_mod = @dec_bias, mask_mod = @head_mask} -> tensor<?x8x64xbf16>
  return %o : tensor<?x8x64xbf16>
}

// ------------------------------------------------------------ block-sparse variant ---
// A per-head bias table (@dec_bias) and the head mask of @head_mask inside the listed
// 16 x 32 blocks, causal, head_dim 128, f16, with LSE: the block-sparse instance of the
// warp-specialised kernel with the program's hooks.
func.func @bsr_bias(%q: tensor<?x8x128xf16>, %k: tensor<?x2x128xf16>,
    %v: tensor<?x2x128xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %table: tensor<8x32xf32>) -> (tensor<?x8x128xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x8x128xf16>
  %o0 = tensor.empty(%m) : tensor<?x8x128xf16>
  %l0 = tensor.empty(%m) : tensor<?x8xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x8x128xf16>)
      kv(%k, %v : tensor<?x2x128xf16>, tensor<?x2x128xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<8x32xf32>) outs(%o0, %l0 : tensor<?x8x128xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 32, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, score_mod = @dec_bias, mask_mod = @head_mask}
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x128xf16>, tensor<?x8xf32>
}

// ---------------------------------------------------------------- ALiBi as a slope ---
// ALiBi from a captured slopes table: on the GPU the prefill kernel takes the slope of
// each row's head and adds the bias as its built-in ALiBi does (VariantCalls.cpp,
// splitKeyLinearTerm); ragged, causal, head_dim 64, bf16, with LSE.
func.func @ragged_alibi(%q: tensor<?x8x64xbf16>, %k: tensor<?x2x64xbf16>,
    %v: tensor<?x2x64xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %slopes: tensor<8xf32>)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xbf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xbf16>
  %l0 = tensor.empty(%n) : tensor<?x8xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x8x64xbf16>)
      kv(%k, %v : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%slopes : tensor<8xf32>) outs(%o0, %l0 : tensor<?x8x64xbf16>, tensor<?x8xf32>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @alibi_8}
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xbf16>, tensor<?x8xf32>
}
func.func private @alibi_8(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %slopes: tensor<8xf32>) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = tensor.extract %slopes[%h] : tensor<8xf32>
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
// A soft cap, then a bias of the distance the other way round (slope * (q_pos - kv_pos)),
// over random 16 x 32 blocks, causal, head_dim 128, f16, with LSE: the slope negated, the
// cap's factors folded, each half of a block-sparse tile from its own first key.
func.func private @cap_then_alibi(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                                  %slopes: tensor<8xf32>, %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %c = arith.mulf %cap, %t : f32
  %h = arith.index_cast %qh : i32 to index
  %slope = tensor.extract %slopes[%h] : tensor<8xf32>
  %d = arith.subi %qp, %kp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %df, %slope : f32
  %r = arith.addf %c, %bias : f32
  return %r : f32
}
func.func @bsr_cap_alibi(%q: tensor<?x8x128xf16>, %k: tensor<?x2x128xf16>,
    %v: tensor<?x2x128xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %slopes: tensor<8xf32>, %cap: f32) -> (tensor<?x8x128xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x8x128xf16>
  %o0 = tensor.empty(%m) : tensor<?x8x128xf16>
  %l0 = tensor.empty(%m) : tensor<?x8xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x8x128xf16>)
      kv(%k, %v : tensor<?x2x128xf16>, tensor<?x2x128xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      variant_args(%slopes, %cap : tensor<8xf32>, f32)
      outs(%o0, %l0 : tensor<?x8x128xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 32, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, score_mod = @cap_then_alibi}
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x128xf16>, tensor<?x8xf32>
}
