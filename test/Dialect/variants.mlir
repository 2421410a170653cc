// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// Attention variants written in IR: score_mod / mask_mod functions and their captures.

func.func private @soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}

// T5-style relative bias: one learned value per (head, clamped distance bucket).
func.func private @t5_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %table: tensor<8x32xf32>) -> f32 {
  %d = arith.subi %qp, %kp : i32
  %c0 = arith.constant 0 : i32
  %c31 = arith.constant 31 : i32
  %lo = arith.maxsi %d, %c0 : i32
  %bucket = arith.minsi %lo, %c31 : i32
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %bucket : i32 to index
  %bias = tensor.extract %table[%h, %j] : tensor<8x32xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}

func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}

// CHECK-LABEL: func.func @decode_soft_cap
// CHECK: fi.paged_decode q(%arg0 : tensor<?x8x64xf16>) kv(%arg1 : tensor<?x2x16x2x64xf16>) pages(%arg2, %arg3, %arg4 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) variant_args(%arg5 : f32) outs(%arg6 : tensor<?x8x64xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, score_mod = @soft_cap} -> tensor<?x8x64xf16>
func.func @decode_soft_cap(%q: tensor<?x8x64xf16>, %kv: tensor<?x2x16x2x64xf16>,
                           %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                           %cap: f32, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  %r = fi.paged_decode q(%q : tensor<?x8x64xf16>) kv(%kv : tensor<?x2x16x2x64xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%cap : f32) outs(%o : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, score_mod = @soft_cap}
      -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// Both functions take every captured value: here the bias table and the window.
func.func private @t5_bias_tw(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                              %table: tensor<8x32xf32>, %w: i32) -> f32 {
  %d = arith.subi %qp, %kp : i32
  %c0 = arith.constant 0 : i32
  %c31 = arith.constant 31 : i32
  %lo = arith.maxsi %d, %c0 : i32
  %bucket = arith.minsi %lo, %c31 : i32
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %bucket : i32 to index
  %bias = tensor.extract %table[%h, %j] : tensor<8x32xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func private @window_tw(%b: i32, %qh: i32, %qp: i32, %kp: i32,
                             %table: tensor<8x32xf32>, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  %even = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %odd = arith.remsi %qh, %c2 : i32
  %is_even = arith.cmpi eq, %odd, %even : i32
  %r = scf.if %is_even -> i1 {
    scf.yield %keep : i1
  } else {
    %t = arith.constant true
    scf.yield %t : i1
  }
  return %r : i1
}

// CHECK-LABEL: func.func @ragged_t5_window
// CHECK: fi.ragged_prefill q(%arg0 : tensor<?x8x64xf16>) kv(%arg1, %arg2 : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%arg3, %arg4 : tensor<?xi32>, tensor<?xi32>) variant_args(%arg5, %arg6 : tensor<8x32xf32>, i32) outs(%arg7 : tensor<?x8x64xf16>) {mask_mod = @window_tw, mask_mode = #fi.mask_mode<causal>, score_mod = @t5_bias_tw} -> tensor<?x8x64xf16>
func.func @ragged_t5_window(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>,
                            %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %table: tensor<8x32xf32>,
                            %w: i32, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table, %w : tensor<8x32xf32>, i32) outs(%o : tensor<?x8x64xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @t5_bias_tw, mask_mod = @window_tw}
      -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// CHECK-LABEL: func.func @paged_prefill_window
// CHECK: fi.paged_prefill {{.*}} variant_args(%arg6 : i32) outs(%arg7 : memref<?x8x64xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @window}
func.func @paged_prefill_window(%q: memref<?x8x64xf16>, %qo: memref<?xi32>,
                                %kv: memref<?x2x16x2x64xf16>, %ip: memref<?xi32>,
                                %ix: memref<?xi32>, %lp: memref<?xi32>, %w: i32,
                                %o: memref<?x8x64xf16>) {
  fi.paged_prefill q(%q : memref<?x8x64xf16>) qo_indptr(%qo : memref<?xi32>)
      kv(%kv : memref<?x2x16x2x64xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      variant_args(%w : i32) outs(%o : memref<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @window}
  return
}

// CHECK-LABEL: func.func @block_sparse_t5
// CHECK: fi.block_sparse_attention {{.*}} variant_args(%arg5 : tensor<8x32xf32>) outs(%arg6 : tensor<?x8x64xf16>) {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>, score_mod = @t5_bias}
func.func @block_sparse_t5(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>,
                           %bi: tensor<?xi32>, %bx: tensor<?xi32>, %table: tensor<8x32xf32>,
                           %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  %r = fi.block_sparse_attention q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      blocks(%bi, %bx : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<8x32xf32>) outs(%o : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>, score_mod = @t5_bias}
      -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}
