// A prefill score_mod's term linear in the key's distance (VariantCalls.cpp,
// splitKeyLinearTerm; variant_hooks.cuh): `rest + slope * (kv_pos - q_pos)` with a slope of
// the query head and the captures alone (ALiBi's bias) is split off the device copy. The
// slope becomes fi_variant_score_slope (qo_head, captures), fi_variant_score_has_slope says
// one exists, and the kernel adds it as the built-in ALiBi does; fi_variant_score_is_identity
// says whether the rest, after the factors fold, is the score itself (then the kernel calls
// nothing per pair). The decode kernel takes no slope: its score_mod stays whole.
// (The lowering only checks that the bitcode exists: this file stands in for it.)
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s

// ALiBi from a captured slopes table: the slope is the table's clamped read at the query
// head; the core is the score alone.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_score_is_identity() -> i32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[ONE]] : i32
// CHECK: func.func @fi_variant_score_has_slope() -> i32
// CHECK-NEXT: %[[ONE2:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[ONE2]] : i32
// CHECK: func.func @fi_variant_score_slope(%[[H:.*]]: i32, %{{.*}}: !llvm.ptr) -> f32
// CHECK: call @__fi_score_slope_alibi_0(%[[H]], %{{.*}}) : (i32, memref<?xf32, strided<[?], offset: ?>>) -> f32
// CHECK: func.func private @__fi_score_slope_alibi_0(%[[QH:[a-z0-9]+]]: i32, %{{.*}}: memref<?xf32, strided<[?], offset: ?>>) -> f32
// CHECK: arith.index_cast %[[QH]] : i32 to index
// CHECK: %[[SLOPE:.*]] = memref.load
// CHECK-NEXT: return %[[SLOPE]] : f32
// CHECK: func.func private @__fi_variant_alibi_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32,
// CHECK-NEXT: return %[[S]] : f32
func.func private @alibi(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                         %slopes: memref<?xf32>) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = memref.load %slopes[%h] : memref<?xf32>
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %t: memref<?xf32>,
                  %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%t : memref<?xf32>)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @alibi}
  return
}

// -----

// A soft cap with the bias added after it, the distance the other way round (q_pos -
// kv_pos): the slope is negated, the cap's factors fold, and the core is the tanh.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_score_is_identity() -> i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[ZERO]] : i32
// CHECK: func.func @fi_variant_score_has_slope() -> i32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[ONE]] : i32
// CHECK: func.func private @__fi_score_out_cap_then_bias_0(%[[CAP:[a-z0-9]+]]: f32, %{{.*}}: f32) -> f32
// CHECK-NEXT: return %[[CAP]] : f32
// CHECK: func.func private @__fi_score_slope_cap_then_bias_0(%{{.*}}: i32, %{{.*}}: f32, %[[W:[a-z0-9]+]]: f32) -> f32
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[SL:.*]] = arith.mulf %[[W]], %[[HALF]] : f32
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[SL]] : f32
// CHECK-NEXT: return %[[NEG]] : f32
// CHECK: func.func private @__fi_variant_cap_then_bias_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32,
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
// CHECK-NEXT: return %[[T]] : f32
func.func private @cap_then_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                                 %cap: f32, %w: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %c = arith.mulf %cap, %t : f32
  %half = arith.constant 0.5 : f32
  %slope = arith.mulf %w, %half : f32
  %d = arith.subi %qp, %kp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %df, %slope : f32
  %r = arith.addf %bias, %c : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %cap: f32, %w: f32,
                  %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%cap, %w : f32, f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @cap_then_bias}
  return
}

// -----

// The bias subtracted, positions converted before the difference: s - slope * (q_pos -
// kv_pos) is s + slope * (kv_pos - q_pos), no negation.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func private @__fi_score_slope_sub_form_0(%{{.*}}: i32, %[[SLOPE:[a-z0-9]+]]: f32) -> f32
// CHECK-NEXT: return %[[SLOPE]] : f32
// CHECK: func.func private @__fi_variant_sub_form_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32,
// CHECK-NEXT: return %[[S]] : f32
func.func private @sub_form(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %slope: f32) -> f32 {
  %qf = arith.sitofp %qp : i32 to f32
  %kf = arith.sitofp %kp : i32 to f32
  %d = arith.subf %qf, %kf : f32
  %bias = arith.mulf %slope, %d : f32
  %r = arith.subf %s, %bias : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %sl: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%sl : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @sub_form}
  return
}

// -----

// A slope that depends on the query's position is not a head's: nothing splits (the slope
// hook is zero, has_slope 0) and the core keeps the whole bias.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_score_has_slope() -> i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[ZERO]] : i32
// CHECK: func.func @fi_variant_score_slope(%{{.*}}: i32, %{{.*}}: !llvm.ptr) -> f32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: return %[[Z]] : f32
// CHECK-NOT: __fi_score_slope_row_slope
// CHECK: func.func private @__fi_variant_row_slope_{{[0-9]+}}(
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: return
func.func private @row_slope(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                             %c: f32) -> f32 {
  %qf = arith.sitofp %qp : i32 to f32
  %slope = arith.mulf %qf, %c : f32
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %c: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%c : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @row_slope}
  return
}

// -----

// A paged decode keeps the whole ALiBi score_mod (its kernel adds no slope).
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_score_has_slope() -> i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[ZERO]] : i32
// CHECK: func.func private @__fi_variant_dec_alibi_{{[0-9]+}}(
// CHECK: arith.sitofp
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: llvm.func @fi_variant_v8_decode_hd128_f16(!llvm.ptr, !llvm.ptr, !llvm.ptr)
func.func private @dec_alibi(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                             %slope: f32) -> f32 {
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func @decode(%q: memref<?x4x128xf16>, %k: memref<?x16x2x128xf16>,
                  %v: memref<?x16x2x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                  %lp: memref<?xi32>, %sl: f32, %o: memref<?x4x128xf16>) {
  fi.paged_decode q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x16x2x128xf16>, memref<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      variant_args(%sl : f32) outs(%o : memref<?x4x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, score_mod = @dec_alibi}
  return
}
