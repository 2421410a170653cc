// The score_mod walks that decide what a kernel computes once (VariantCalls.cpp,
// invariantSlice): a factor of the score (fi_variant_score_in / _out) may depend on the
// captures and constants alone -- the same for every pair -- while the slope of a term in
// the key's distance (fi_variant_score_slope) may also depend on the query head and read
// captured tables -- the same for every key a row meets. Both walks follow chains of up to
// 32 ops.
// (The lowering only checks that the bitcode exists: this file stands in for it.)
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s

// A factor of the query head is not a factor of the kernel (`in` stays one, the core keeps
// the multiply), but the same value times a capture is a slope: split off as a function of
// (qo_head, captures), and the core no longer computes the distance.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK-DAG: func.func private @__fi_score_in_head_factor_0(%{{.*}}: f32) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: return %[[ONE]] : f32
// CHECK-DAG: func.func private @__fi_score_slope_head_factor_0(%[[QH:[a-z0-9]+]]: i32, %[[C:[a-z0-9]+]]: f32) -> f32
// CHECK-NEXT: %[[HF:.*]] = arith.sitofp %[[QH]] : i32 to f32
// CHECK-NEXT: %[[SL:.*]] = arith.mulf %[[HF]], %[[C]] : f32
// CHECK-NEXT: return %[[SL]] : f32
// CHECK-DAG: func.func private @__fi_variant_head_factor_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: i32, %[[QH2:[a-z0-9]+]]: i32,
// CHECK-NOT: arith.subi
// CHECK: %[[HF2:.*]] = arith.sitofp %[[QH2]] : i32 to f32
// CHECK-NEXT: %[[X:.*]] = arith.mulf %[[S]], %[[HF2]] : f32
// CHECK-NEXT: return %[[X]] : f32
func.func private @head_factor(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                               %c: f32) -> f32 {
  %hf = arith.sitofp %qh : i32 to f32
  %x = arith.mulf %s, %hf : f32
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %slope = arith.mulf %hf, %c : f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %x, %bias : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %c: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%c : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @head_factor}
  return
}

// -----

// A factor computed by a chain of 20 ops on a capture folds whole into `in`; the core
// returns the score itself.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_score_is_identity() -> i32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[ONE]] : i32
// CHECK-DAG: func.func private @__fi_score_in_deep_factor_0(%[[W:[a-z0-9]+]]: f32) -> f32
// CHECK-COUNT-10: arith.mulf
// CHECK-NEXT: return
// CHECK-DAG: func.func private @__fi_variant_deep_factor_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32,
// CHECK-NOT: arith.mulf %[[S]]
// CHECK: return %[[S]] : f32
func.func private @deep_factor(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                               %w: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %a0 = arith.addf %w, %one : f32
  %m0 = arith.mulf %a0, %half : f32
  %a1 = arith.addf %m0, %one : f32
  %m1 = arith.mulf %a1, %half : f32
  %a2 = arith.addf %m1, %one : f32
  %m2 = arith.mulf %a2, %half : f32
  %a3 = arith.addf %m2, %one : f32
  %m3 = arith.mulf %a3, %half : f32
  %a4 = arith.addf %m3, %one : f32
  %m4 = arith.mulf %a4, %half : f32
  %a5 = arith.addf %m4, %one : f32
  %m5 = arith.mulf %a5, %half : f32
  %a6 = arith.addf %m5, %one : f32
  %m6 = arith.mulf %a6, %half : f32
  %a7 = arith.addf %m6, %one : f32
  %m7 = arith.mulf %a7, %half : f32
  %a8 = arith.addf %m7, %one : f32
  %m8 = arith.mulf %a8, %half : f32
  %a9 = arith.addf %m8, %one : f32
  %m9 = arith.mulf %a9, %half : f32
  %r = arith.mulf %s, %m9 : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %w: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%w : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @deep_factor}
  return
}
