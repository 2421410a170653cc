// A prefill mask_mod's causal term (VariantCalls.cpp, splitCausalTerm; variant_hooks.cuh):
// `kv_pos <= q_pos` (`cmpi sle %kv_pos, %q_pos` or `cmpi sge %q_pos, %kv_pos`), alone or
// one side of an `arith.andi`, is split off the device copy: fi_variant_mask_causal returns
// 1 and the prefill kernel applies the term as its built-in causal mask does, while the
// mask hook returns the rest. Other forms, other masks, decode and block-sparse masks stay
// whole (fi_variant_mask_causal 0); the host backend always runs the whole mask.
// (The lowering only checks that the bitcode exists: this file stands in for it.)
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s

// Causal alone: the host's copy keeps the compare; the device's returns `true`.
// CHECK: func.func private @__fi_variant_causal_0(%{{.*}}: i32, %{{.*}}: i32, %[[QP:[a-z0-9]+]]: i32, %[[KP:[a-z0-9]+]]: i32)
// CHECK-NEXT: %[[C:.*]] = arith.cmpi sle, %[[KP]], %[[QP]] : i32
// CHECK-NEXT: return %[[C]] : i1
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_mask_causal() -> i32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[ONE]] : i32
// CHECK: func.func private @__fi_variant_causal_1(
// CHECK-NEXT: %[[T:.*]] = arith.constant true
// CHECK-NEXT: return %[[T]] : i1
func.func private @causal(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %keep = arith.cmpi sle, %kp, %qp : i32
  return %keep : i1
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x128xf16>)
      {mask_mod = @causal}
  return
}

// -----

// A sliding window and the causal term as `q_pos >= kv_pos` on the right of the `and`: the
// device mask returns the window's compare alone.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_mask_causal() -> i32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[ONE]] : i32
// CHECK: func.func private @__fi_variant_window_causal_{{[0-9]+}}(%{{.*}}: i32, %{{.*}}: i32, %[[QP:[a-z0-9]+]]: i32, %[[KP:[a-z0-9]+]]: i32, %[[W:[a-z0-9]+]]: i32)
// CHECK-NEXT: %[[LO:.*]] = arith.subi %[[QP]], %[[W]] : i32
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi sge, %[[KP]], %[[LO]] : i32
// CHECK-NEXT: return %[[IN]] : i1
func.func private @window_causal(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %in = arith.cmpi sge, %kp, %lo : i32
  %past = arith.cmpi sge, %qp, %kp : i32
  %keep = arith.andi %in, %past : i1
  return %keep : i1
}
func.func @paged(%q: memref<?x4x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x2x128xf16>,
                 %v: memref<?x16x2x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                 %lp: memref<?xi32>, %w: i32, %o: memref<?x4x128xf16>) {
  fi.paged_prefill q(%q : memref<?x4x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv(%k, %v : memref<?x16x2x128xf16>, memref<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      variant_args(%w : i32) outs(%o : memref<?x4x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @window_causal}
  return
}

// -----

// Not the causal term: `kv_pos < q_pos` (the diagonal dropped) stays whole.
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_mask_causal() -> i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[ZERO]] : i32
// CHECK: func.func private @__fi_variant_strict_{{[0-9]+}}(%{{.*}}: i32, %{{.*}}: i32, %[[QP:[a-z0-9]+]]: i32, %[[KP:[a-z0-9]+]]: i32)
// CHECK-NEXT: %[[C:.*]] = arith.cmpi slt, %[[KP]], %[[QP]] : i32
// CHECK-NEXT: return %[[C]] : i1
func.func private @strict(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %keep = arith.cmpi slt, %kp, %qp : i32
  return %keep : i1
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x128xf16>)
      {mask_mod = @strict}
  return
}

// -----

// Decode: the mask stays whole (its kernel reads no causal flag).
// CHECK-LABEL: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_mask_causal() -> i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[ZERO]] : i32
// CHECK: func.func private @__fi_variant_dec_causal_{{[0-9]+}}(%{{.*}}: i32, %{{.*}}: i32, %[[QP:[a-z0-9]+]]: i32, %[[KP:[a-z0-9]+]]: i32)
// CHECK-NEXT: %[[C:.*]] = arith.cmpi sle, %[[KP]], %[[QP]] : i32
// CHECK-NEXT: return %[[C]] : i1
func.func private @dec_causal(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %keep = arith.cmpi sle, %kp, %qp : i32
  return %keep : i1
}
func.func @decode(%q: memref<?x4x128xf16>, %k: memref<?x16x2x128xf16>, %v: memref<?x16x2x128xf16>,
                  %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>,
                  %o: memref<?x4x128xf16>) {
  fi.paged_decode q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x16x2x128xf16>, memref<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%o : memref<?x4x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @dec_causal}
  return
}
