// RUN: fi-opt %s -split-input-file -verify-diagnostics
// Attention variants: the function exists, has a body and the right signature, agrees
// with the captures and is pure.

#P = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>
func.func @missing(%q: tensor<?x8x64xf16>, %kv: tensor<?x2x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod refers to @nope, which is not a function of this module; define func.func @nope(%score: f32, %batch: i32, %qo_head: i32, %kv_head: i32, %q_pos: i32, %kv_pos: i32, <captures>)}}
  %r = fi.paged_decode q(%q : tensor<?x8x64xf16>) kv(%kv : tensor<?x2x16x2x64xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {bsr = #P, score_mod = @nope} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

#P = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>
func.func private @decl(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32) -> f32
func.func @external(%q: tensor<?x8x64xf16>, %kv: tensor<?x2x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod @decl is only declared; the variant is compiled with the program, so give the function a body}}
  %r = fi.paged_decode q(%q : tensor<?x8x64xf16>) kv(%kv : tensor<?x2x16x2x64xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {bsr = #P, score_mod = @decl} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @mask_f32(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> f32 {
  %c = arith.constant 1.0 : f32
  return %c : f32
}
func.func @mask_result(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{mask_mod @mask_f32 has type '(i32, i32, i32, i32) -> f32' but must be (%batch: i32, %qo_head: i32, %q_pos: i32, %kv_pos: i32) -> i1 (the fixed arguments, then one parameter per value in variant_args)}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {mask_mod = @mask_f32} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @pos_i64(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i64, %kp: i32) -> f32 {
  return %s : f32
}
func.func @fixed_type(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod @pos_i64 parameter #4 has type 'i64' but must be 'i32'}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {score_mod = @pos_i64} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @needs_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32, %c: f32) -> f32 {
  return %s : f32
}
func.func @missing_capture(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod @needs_cap has type '(f32, i32, i32, i32, i32, i32, f32) -> f32' but must be (%score: f32, %batch: i32, %qo_head: i32, %kv_head: i32, %q_pos: i32, %kv_pos: i32) -> f32}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {score_mod = @needs_cap} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @table(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32, %t: tensor<32xf32>) -> f32 {
  return %s : f32
}
func.func @capture_type(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<32xf16>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod @table parameter #6 has type 'tensor<32xf32>' but variant_args #0 is 'tensor<32xf16>'; make them agree}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) variant_args(%t : tensor<32xf16>) outs(%o : tensor<?x8x64xf16>) {score_mod = @table} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @helper(%s: f32) -> f32 {
  return %s : f32
}
func.func private @calls(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32) -> f32 {
  // expected-note @+1 {{the offending operation}}
  %r = func.call @helper(%s) : (f32) -> f32
  return %r : f32
}
func.func @call_inside(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod @calls contains 'func.call', which a variant function may not use: variants are pure functions of their arguments (arith, math, scf, cf, index ops and reads of captured tensors; no calls, no side effects)}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {score_mod = @calls} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @writes(%b: i32, %qh: i32, %qp: i32, %kp: i32, %t: memref<4xi32>) -> i1 {
  %c0 = arith.constant 0 : index
  // expected-note @+1 {{the offending operation}}
  memref.store %kp, %t[%c0] : memref<4xi32>
  %true = arith.constant true
  return %true : i1
}
func.func @side_effect(%q: memref<?x8x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %t: memref<4xi32>, %o: memref<?x8x64xf16>) {
  // expected-error @+1 {{mask_mod @writes contains 'memref.store', which a variant function may not use}}
  fi.ragged_prefill q(%q : memref<?x8x64xf16>) kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>) indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%t : memref<4xi32>) outs(%o : memref<?x8x64xf16>) {mask_mod = @writes}
  return
}

// -----

func.func @args_unread(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %c: f32, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{has variant_args but neither score_mod nor mask_mod reads them; add the function (score_mod = @f / mask_mod = @m) or drop them}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) variant_args(%c : f32) outs(%o : tensor<?x8x64xf16>) -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

#P = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>
func.func private @keep(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
func.func @shared_prefix(%q: tensor<?x8x64xf16>, %kv: tensor<?x2x16x2x64xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{has shared_prefix and a score_mod/mask_mod}}
  %r = fi.paged_decode q(%q : tensor<?x8x64xf16>) kv(%kv : tensor<?x2x16x2x64xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {bsr = #P, mask_mod = @keep, shared_prefix} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

memref.global "private" constant @bias_table : memref<4xf32> = dense<0.0>
func.func @not_a_function(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{mask_mod refers to @bias_table, which is not a function of this module}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {mask_mod = @bias_table} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

func.func private @wide(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32, %c: i128) -> f32 {
  return %s : f32
}
func.func @wide_scalar(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %c: i128, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{operand #5 must be variadic of i1/i8/i16/i32/i64/index/f16/bf16/f32/f64 scalar, or a ranked tensor or memref}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) variant_args(%c : i128) outs(%o : tensor<?x8x64xf16>) {score_mod = @wide} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}

// -----

memref.global "private" constant @table : memref<4xf32> = dense<1.0>
func.func private @reads_global(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32) -> f32 {
  // expected-note @+1 {{the offending operation}}
  %t = memref.get_global @table : memref<4xf32>
  %c0 = arith.constant 0 : index
  %x = memref.load %t[%c0] : memref<4xf32>
  %r = arith.addf %s, %x : f32
  return %r : f32
}
func.func @global_table(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %o: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  // expected-error @+1 {{score_mod @reads_global contains 'memref.get_global', which a variant function may not use}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>) indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>) {score_mod = @reads_global} -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}
