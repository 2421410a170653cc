// The device copy of a score_mod in three parts (VariantCalls.cpp, foldScoreScales;
// variant_hooks.cuh): a multiply of the score by (or a division by) a value of the captures
// and constants alone becomes fi_variant_score_in, which the kernel folds into its scale; a
// returned product with (or quotient by) one becomes fi_variant_score_out, which joins the
// softmax's factor; fi_variant_score_mod keeps the rest. So a soft cap written in IR costs
// the built-in's work per pair. Anything that depends on the pair stays in the core.
// (The lowering only checks that the bitcode exists: this file stands in for it.)
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s

// The soft cap with a captured cap: in = 1 / cap, out = cap, the core a tanh alone.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK-DAG: func.func @fi_variant_score_in(%[[B:.*]]: !llvm.ptr) -> f32
// CHECK-DAG: func.func @fi_variant_score_out(%{{.*}}: !llvm.ptr) -> f32
// CHECK-DAG: func.func private @__fi_score_out_soft_cap_0(%[[CAP:.*]]: f32) -> f32
// CHECK-NEXT: return %[[CAP]] : f32
// CHECK-DAG: func.func private @__fi_score_in_soft_cap_0(%[[CAP2:.*]]: f32) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[RCP:.*]] = arith.divf %[[ONE]], %[[CAP2]] : f32
// CHECK-NEXT: return %[[RCP]] : f32
// CHECK-DAG: func.func private @__fi_variant_soft_cap_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32,
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
// CHECK-NEXT: return %[[T]] : f32
func.func private @soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                            %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %cap: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%cap : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @soft_cap}
  return
}

// -----

// Constants and arithmetic on captures fold too (in = 0.5 * w, out = 1 / 30, the score on
// either side of the multiply); the core keeps the pair's bias.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK-DAG: func.func private @__fi_score_out_const_scales_0(%{{.*}}: f32) -> f32
// CHECK-NEXT: %[[C30:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[ONE]], %[[C30]] : f32
// CHECK-NEXT: return %[[R]] : f32
// CHECK-DAG: func.func private @__fi_score_in_const_scales_0(%[[W:.*]]: f32) -> f32
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[HW:.*]] = arith.mulf %[[HALF]], %[[W]] : f32
// CHECK-NEXT: return %[[HW]] : f32
// CHECK-DAG: func.func private @__fi_variant_const_scales_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %[[KP:[a-z0-9]+]]: i32,
// CHECK-NOT: arith.mulf %[[S]]
// CHECK: %[[KF:.*]] = arith.sitofp %[[KP]] : i32 to f32
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[S]], %[[KF]] : f32
// CHECK-NEXT: return %[[Y]] : f32
func.func private @const_scales(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                                %w: f32) -> f32 {
  %half = arith.constant 0.5 : f32
  %c30 = arith.constant 30.0 : f32
  %hw = arith.mulf %half, %w : f32
  %x = arith.mulf %hw, %s : f32
  %kf = arith.sitofp %kp : i32 to f32
  %y = arith.addf %x, %kf : f32
  %r = arith.divf %y, %c30 : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %w: f32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%w : f32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @const_scales}
  return
}

// -----

// Nothing folds where the factor depends on the pair (a key position, a table read) or
// the score has a second use: both factors are one and the core is the whole function.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK-DAG: func.func private @__fi_score_out_pair_factors_0(%{{.*}}: f32, %{{.*}}: memref<?xf32, strided<[?], offset: ?>>) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: return %[[ONE]] : f32
// CHECK-DAG: func.func private @__fi_score_in_pair_factors_0(%{{.*}}: f32, %{{.*}}: memref<?xf32, strided<[?], offset: ?>>) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: return %[[ONE]] : f32
// CHECK-DAG: func.func private @__fi_variant_pair_factors_{{[0-9]+}}(
// CHECK: arith.mulf
// CHECK: math.tanh
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK: return
func.func private @pair_factors(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                                %c: f32, %table: memref<?xf32>) -> f32 {
  %kf = arith.sitofp %kp : i32 to f32
  %x = arith.mulf %s, %kf : f32
  %t = math.tanh %x : f32
  %u = arith.addf %t, %s : f32
  %i = arith.index_cast %qh : i32 to index
  %g = memref.load %table[%i] : memref<?xf32>
  %r = arith.mulf %u, %g : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %c: f32, %t: memref<?xf32>,
                  %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%c, %t : f32, memref<?xf32>)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @pair_factors}
  return
}

// -----

// A mask_mod alone: the score's identity hooks, factors one.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_score_out(%{{.*}}: !llvm.ptr) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: return %[[ONE]] : f32
// CHECK: func.func @fi_variant_score_in(%{{.*}}: !llvm.ptr) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: return %[[ONE]] : f32
func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %w: i32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%w : i32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @window}
  return
}

// -----

// A paged decode's device module takes the same factors (the decode kernel applies them:
// `in` on each logit it hands the core, `out` in its factor to the log2 domain); here the
// cap is the second capture, after a window.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK-DAG: func.func private @__fi_score_out_dec_cap_0(%{{.*}}: i32, %[[CAP:.*]]: f32) -> f32
// CHECK-NEXT: return %[[CAP]] : f32
// CHECK-DAG: func.func private @__fi_score_in_dec_cap_0(%{{.*}}: i32, %[[CAP2:.*]]: f32) -> f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[RCP:.*]] = arith.divf %[[ONE]], %[[CAP2]] : f32
// CHECK-NEXT: return %[[RCP]] : f32
// CHECK-DAG: func.func private @__fi_variant_dec_cap_{{[0-9]+}}(%[[S:[a-z0-9]+]]: f32,
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
// CHECK-NEXT: return %[[T]] : f32
// CHECK-DAG: llvm.func @fi_variant_v8_decode_hd128_f16(!llvm.ptr, !llvm.ptr, !llvm.ptr)
func.func private @dec_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %w: i32, %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %t, %cap : f32
  return %r : f32
}
func.func @decode(%q: memref<?x8x128xf16>, %k: memref<?x16x2x128xf16>,
                  %v: memref<?x16x2x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                  %lp: memref<?xi32>, %w: i32, %cap: f32, %o: memref<?x8x128xf16>) {
  fi.paged_decode q(%q : memref<?x8x128xf16>)
      kv(%k, %v : memref<?x16x2x128xf16>, memref<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      variant_args(%w, %cap : i32, f32) outs(%o : memref<?x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, score_mod = @dec_cap}
  return
}
