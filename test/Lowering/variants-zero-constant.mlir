// A clamped read of a captured tensor reads an empty tensor's zero from a one-element
// constant, made once per element type (variants.mlir checks the read itself). A program
// symbol of the constant's name keeps it: the constant takes the next name.
// RUN: fi-opt %s --fi-lower-to-runtime | FileCheck %s

// CHECK-DAG: memref.global "private" constant @__fi_zero_f32_1 : memref<1xf32> = dense<0.000000e+00>
// CHECK-DAG: memref.global "private" constant @__fi_zero_i32 : memref<1xi32> = dense<0>
// CHECK-LABEL: func.func private @__fi_variant_bias_0
// CHECK: memref.get_global @__fi_zero_f32_1 : memref<1xf32>
// CHECK: memref.get_global @__fi_zero_i32 : memref<1xi32>
// CHECK-NOT: memref.get_global
// CHECK: return
// CHECK-LABEL: func.func private @__fi_zero_f32()
func.func private @__fi_zero_f32() -> f32 {
  %z = arith.constant 0.0 : f32
  return %z : f32
}
func.func private @bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                        %slopes: memref<8xf32>, %shift: memref<8xi32>) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = memref.load %slopes[%h] : memref<8xf32>
  %sh = memref.load %shift[%h] : memref<8xi32>
  %d = arith.subi %kp, %qp : i32
  %e = arith.addi %d, %sh : i32
  %df = arith.sitofp %e : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func @ragged(%q: memref<?x8x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %slopes: memref<8xf32>,
                  %shift: memref<8xi32>, %o: memref<?x8x64xf16>) {
  fi.ragged_prefill q(%q : memref<?x8x64xf16>) kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>)
      variant_args(%slopes, %shift : memref<8xf32>, memref<8xi32>) outs(%o : memref<?x8x64xf16>)
      {score_mod = @bias}
  return
}
