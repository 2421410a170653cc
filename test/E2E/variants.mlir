// End to end: attention variants written in IR (score_mod / mask_mod with captured
// scalars and tensors), compiled through fi-to-llvm and run on the host backend, against
// (a) the same op with the built-in feature the variant reimplements -- soft cap, sliding
// window, ALiBi -- bit for bit, and (b) for a variant with no built-in (a T5-style
// bucketed bias read from a captured table, with distances past the table clamped, and a
// per-head mask), the runtime called directly with C hooks computing the same
// (drivers/variants.c).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/variants.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: soft cap (ragged prefill): 6 trials bit-exact
// CHECK: window (paged decode): 6 trials bit-exact
// CHECK: alibi (paged prefill): 6 trials bit-exact
// CHECK: t5 bias + head mask (block sparse): 6 trials bit-exact
// CHECK: t5 bias from a slice of a stacked table: 6 trials bit-exact
// CHECK: E2E variants: PASS

// ---------------------------------------------------------------- the variants --
func.func private @soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}

func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}

// ALiBi from a captured slope per query head: s + slope[h] * (kv_pos - q_pos).
func.func private @alibi(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                         %slopes: tensor<4xf32>) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = tensor.extract %slopes[%h] : tensor<4xf32>
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}

// T5-style: a learned bias per (head, distance bucket) with bucket = q_pos - kv_pos
// (not clamped here: the compiled read clamps it into the table, 0..7).
func.func private @t5_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %table: tensor<4x8xf32>) -> f32 {
  %d = arith.subi %qp, %kp : i32
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %d : i32 to index
  %bias = tensor.extract %table[%h, %j] : tensor<4x8xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
// Head 1 sees only even keys.
func.func private @head_mask(%b: i32, %qh: i32, %qp: i32, %kp: i32,
                             %table: tensor<4x8xf32>) -> i1 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %odd = arith.remsi %kp, %c2 : i32
  %head1 = arith.cmpi eq, %qh, %c1 : i32
  %is_odd = arith.cmpi eq, %odd, %c1 : i32
  %drop = arith.andi %head1, %is_odd : i1
  %true = arith.constant true
  %keep = arith.xori %drop, %true : i1
  return %keep : i1
}

// ------------------------------------------------------ soft cap, ragged prefill --
func.func @ragged_cap_builtin(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
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
      {mask_mode = #fi.mask_mode<causal>, logits_soft_cap = 30.0 : f32}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}
func.func @ragged_cap_variant(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %cap: f32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%cap : f32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @soft_cap}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// --------------------------------------------------------- window, paged decode --
func.func @decode_window_builtin(%q: tensor<?x4x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, window_left = 37 : i64}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}
func.func @decode_window_variant(%q: tensor<?x4x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %w: i32) -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @window}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// ---------------------------------------------------------- ALiBi, paged prefill --
func.func @paged_alibi_builtin(%q: tensor<?x4x64xf16>, %qo: tensor<?xi32>,
    %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.paged_prefill q(%q : tensor<?x4x64xf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, pos_encoding = #fi.pos_encoding<alibi>}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}
func.func @paged_alibi_variant(%q: tensor<?x4x64xf16>, %qo: tensor<?xi32>,
    %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %ip: tensor<?xi32>,
    %ix: tensor<?xi32>, %lp: tensor<?xi32>, %slopes: tensor<4xf32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.paged_prefill q(%q : tensor<?x4x64xf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%slopes : tensor<4xf32>) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, score_mod = @alibi}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// ----------------------------------------- T5 bias + head mask, block sparse --
func.func @bsr_t5(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>,
    %indptr: tensor<?xi32>, %indices: tensor<?xi32>, %table: tensor<4x8xf32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<4x8xf32>) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 32, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, score_mod = @t5_bias, mask_mod = @head_mask}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// The same with the table a slice of a stacked [layers, heads, buckets] tensor (layer 1):
// the variant reads the slice through its own offset, not the stack's first layer.
func.func @bsr_t5_sliced(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>,
    %indptr: tensor<?xi32>, %indices: tensor<?xi32>, %stack: tensor<2x4x8xf32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %table = tensor.extract_slice %stack[1, 0, 0] [1, 4, 8] [1, 1, 1]
      : tensor<2x4x8xf32> to tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<4x8xf32>) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 32, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, score_mod = @t5_bias, mask_mod = @head_mask}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}
