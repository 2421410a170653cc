// fi-decompose-shared-prefix: a decode marked `shared_prefix` becomes the split, the prefix
// as one block row of every query (paged prefill, qo_indptr from the split), the suffix
// decode and the merge, into the decode's own destinations; the rest of fi-to-llvm lowers
// it to the runtime calls (a plan per part).
// The prefix's prefill is marked for the main lane and the suffix decode for the side lane
// (fi.lane; `lanes=false` leaves the marks out); fi-to-llvm enters each one's lane around
// its plan and run calls and joins the lanes before the function returns.
// RUN: fi-opt %s --fi-decompose-shared-prefix --canonicalize | FileCheck %s
// RUN: fi-opt %s --fi-decompose-shared-prefix=lanes=false | FileCheck %s --check-prefix=NOLANES
// RUN: fi-opt %s --fi-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[Q:.*]]: tensor<?x32x128xf16>, %[[KV:.*]]: tensor<?x2x16x8x128xf16>, %[[IP:.*]]: tensor<?xi32>, %[[IX:.*]]: tensor<?xi32>, %[[L:.*]]: tensor<?xi32>, %[[O:.*]]: tensor<?x32x128xf16>, %[[LSE:.*]]: tensor<?x32xf32>)
// CHECK: %[[NP:.*]] = tensor.dim %[[KV]], %c0
// CHECK: %[[S:.*]]:7 = fi.split_shared_prefix pages(%[[IP]], %[[IX]], %[[L]] : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%[[NP]]) outs({{.*}}) {page_size = 16 : i64}
// CHECK: %[[P:.*]]:2 = fi.paged_prefill q(%[[Q]] : tensor<?x32x128xf16>) qo_indptr(%[[S]]#0 : tensor<2xi32>) kv(%[[KV]] : tensor<?x2x16x8x128xf16>) pages(%[[S]]#1, %[[S]]#2, %[[S]]#3 : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>) outs({{.*}}) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.lane = "main", logits_soft_cap = 3.000000e+01 : f32}
// CHECK: %[[D:.*]]:2 = fi.paged_decode q(%[[Q]] : tensor<?x32x128xf16>) kv(%[[KV]] : tensor<?x2x16x8x128xf16>) pages(%[[S]]#4, %[[S]]#5, %[[S]]#6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs({{.*}}) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, fi.lane = "side", logits_soft_cap = 3.000000e+01 : f32}
// CHECK-NOT: shared_prefix
// CHECK: %[[M:.*]]:2 = fi.merge_state a(%[[P]]#0, %[[P]]#1 : tensor<?x32x128xf16>, tensor<?x32xf32>) b(%[[D]]#0, %[[D]]#1 : tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%[[O]], %[[LSE]] : tensor<?x32x128xf16>, tensor<?x32xf32>)
// CHECK: return %[[M]]#0, %[[M]]#1
// NOLANES-LABEL: func.func @step
// NOLANES-NOT: fi.lane
// NOLANES: fi.merge_state
// LLVM-LABEL: llvm.func @step(
// LLVM: llvm.call @fi_rt_split_shared_prefix(
// LLVM: llvm.call @fi_rt_lane_enter(%[[SIDE:.*]]) : (i32) -> ()
// LLVM: llvm.call @fi_rt_decode_plan(
// LLVM: llvm.call @fi_rt_lane_leave()
// LLVM: llvm.call @fi_rt_lane_enter(%[[MAIN:.*]]) : (i32) -> ()
// LLVM: llvm.call @fi_rt_paged_prefill_plan(
// LLVM: llvm.call @fi_rt_lane_leave()
// (the two runs are independent: no join between them)
// LLVM-NOT: llvm.call @fi_rt_lanes_join
// LLVM: llvm.call @fi_rt_lane_enter(%[[MAIN]])
// LLVM: llvm.call @fi_rt_paged_prefill_run_f16_f16(
// LLVM: llvm.call @fi_rt_lane_leave()
// LLVM: llvm.call @fi_rt_lane_enter(%[[SIDE]])
// LLVM-NOT: llvm.call @fi_rt_lanes_join
// LLVM: llvm.call @fi_rt_decode_run_f16_f16(
// LLVM: llvm.call @fi_rt_lane_leave()
// LLVM-NOT: llvm.call @fi_rt_lanes_join
// LLVM: llvm.call @fi_rt_merge_state_f16(
// LLVM: llvm.call @fi_rt_lanes_join()
// LLVM: llvm.return
func.func @step(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
    %indptr: tensor<?xi32>, %indices: tensor<?xi32>, %last: tensor<?xi32>,
    %o0: tensor<?x32x128xf16>, %l0: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %o, %lse = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix,
       logits_soft_cap = 30.0 : f32} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// A decode without the marker is left alone.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: fi.split_shared_prefix
// CHECK: fi.paged_decode
func.func @plain(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
    %indptr: tensor<?xi32>, %indices: tensor<?xi32>, %last: tensor<?xi32>,
    %o0: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %o = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %o : tensor<?x32x128xf16>
}

// Two layers over the same page tables share one split.
// CHECK-LABEL: func.func @two_layers
// CHECK: fi.split_shared_prefix
// CHECK-NOT: fi.split_shared_prefix
// CHECK: fi.merge_state
// CHECK-NOT: fi.split_shared_prefix
// CHECK: fi.merge_state
// CHECK: return
func.func @two_layers(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>,
    %kv1: tensor<?x2x16x8x128xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>, %o0: tensor<?x32x128xf16>)
    -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>) {
  %a = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix}
      -> tensor<?x32x128xf16>
  %b = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv1 : tensor<?x2x16x8x128xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix}
      -> tensor<?x32x128xf16>
  return %a, %b : tensor<?x32x128xf16>, tensor<?x32x128xf16>
}
