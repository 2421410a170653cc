// The decode bench rows of drivers/variants_cuda.c, compiled apart with plans made on the
// device (fi-to-llvm plans-on-device=1; the driver hands the page table in device memory):
// a host plan would read the page table the kernels read, and its managed pages moved
// between host and device inside the timed calls (single rounds up to 2x apart). Linked
// into variants_cuda by its RUN lines and scripts/gpu-e2e.sh.
// RUN: fi-opt %s --fi-select-tiles=device-plans=1 --fi-materialize-plans=on-device | FileCheck %s
// CHECK-COUNT-8: fi.decode_plan {{.*}} on_device
// CHECK-NOT: fi.decode_plan

// (variants_cuda.mlir's variants these rows use, renamed: both objects define them)
func.func private @bench_soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %cap: f32) -> f32 {
  %x = arith.divf %s, %cap fastmath<arcp> : f32
  %t = math.tanh %x fastmath<afn> : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}
func.func private @bench_window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}
func.func private @bench_alibi(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                         %slopes: tensor<32xf32>) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = tensor.extract %slopes[%h] : tensor<32xf32>
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func private @bench_keep_all(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}

// The decode bench rows ((batch, kv_len, 32, 8), page 16, hd 128, f16): plain, soft cap, a
// window of 1024 and ALiBi, each built in and as a variant, and the keep-all mask.
func.func @bench_dec_plain(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_dec_cap_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       logits_soft_cap = 30.0 : f32} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_dec_cap_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %cap: f32) -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%cap : f32) outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, score_mod = @bench_soft_cap}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_dec_window_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       window_left = 1024 : i64} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_dec_window_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %w: i32) -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @bench_window}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_dec_alibi_builtin(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>)
    -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       pos_encoding = #fi.pos_encoding<alibi>} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
// (the decode kernel runs the whole score_mod: its I2F, multiply and add per logit)
func.func @bench_dec_alibi_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %slopes: tensor<32xf32>) -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%slopes : tensor<32xf32>) outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, score_mod = @bench_alibi}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}
func.func @bench_dec_keep_variant(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
    %w: i32) -> tensor<?x32x128xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @bench_keep_all}
      -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}

