// fi's lowering as patterns in another compiler's own conversion: the test pass
// (test/lib/TestDownstreamConversion.cpp) adds populateFiToRuntimeConversionPatterns,
// populateFiToRuntimeTypeConversions and populateMemrefCopyToFiRuntimePatterns to a pattern
// of its own (x + 0 -> x) and applies them in one partial conversion; the result is the
// same runtime calls fi-lower-to-runtime makes.
// RUN: fi-opt %s --fi-materialize-plans --test-fi-downstream-conversion | FileCheck %s

// CHECK-DAG: memref.global "private" @__fi_plan_slot_0 : memref<1xi64> = dense<0>
// CHECK-LABEL: func.func @decode_and_more
// CHECK: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0 : memref<1xi64>
// CHECK: call @fi_rt_decode_plan(%[[SLOT]], {{.*}}) {fi.variant = "decode_tc_q16_kv64_split"}
// CHECK: call @fi_rt_decode_run_f16_f16(%[[SLOT]], {{.*}}) {fi.variant = "decode_tc_q16_kv64_split"}
// The compiler's own pattern ran in the same conversion:
// CHECK-NOT: arith.addi
// CHECK: call @fi_rt_memref_copy_f16(
// CHECK: return %arg7 : index
// CHECK-NOT: fi.
func.func @decode_and_more(%q: memref<?x32x128xf16>, %k: memref<?x16x8x128xf16>,
    %v: memref<?x16x8x128xf16>, %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>,
    %o: memref<?x32x128xf16>, %n: index, %o2: memref<?x32x128xf16>) -> index {
  fi.paged_decode q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       tiles = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>}
  memref.copy %o, %o2 : memref<?x32x128xf16> to memref<?x32x128xf16>
  %c0 = arith.constant 0 : index
  %r = arith.addi %n, %c0 : index
  return %r : index
}
