// RUN: fi-opt %s -cse -canonicalize | FileCheck %s
// Memory effects: the tensor form has none (an unused op is dead code); the memref form
// reads its inputs and writes its destinations (never dead); memref plans read their
// index arrays, so CSE merges two of them only when nothing writes in between.

// CHECK-LABEL: func.func @unused_tensor_op_is_dead
// CHECK-NOT: fi.
// CHECK: return
func.func @unused_tensor_op_is_dead(%v: tensor<?x4x32x128xf16>, %s: tensor<?x4x32xf32>,
                                    %vo: tensor<?x32x128xf16>) {
  %r = fi.merge_states %v, %s : tensor<?x4x32x128xf16>, tensor<?x4x32xf32>
      outs(%vo : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>
  return
}

// CHECK-LABEL: func.func @memref_op_is_kept
// CHECK: fi.merge_states
func.func @memref_op_is_kept(%v: memref<?x4x32x128xf16>, %s: memref<?x4x32xf32>,
                             %vo: memref<?x32x128xf16>) {
  fi.merge_states %v, %s : memref<?x4x32x128xf16>, memref<?x4x32xf32>
      outs(%vo : memref<?x32x128xf16>)
  return
}

// CHECK-LABEL: func.func @memref_plans_merge_without_writes
// CHECK-COUNT-1: fi.append_plan
// CHECK-NOT: fi.append_plan
// CHECK: return
func.func @memref_plans_merge_without_writes(%ap: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                                             %lp: memref<?xi32>, %np: index) -> (!fi.plan<append>, !fi.plan<append>) {
  %a = fi.append_plan append_indptr(%ap : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  %b = fi.append_plan append_indptr(%ap : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return %a, %b : !fi.plan<append>, !fi.plan<append>
}

// CHECK-LABEL: func.func @memref_plans_stay_apart_across_a_write
// CHECK: fi.append_plan
// CHECK: memref.store
// CHECK: fi.append_plan
func.func @memref_plans_stay_apart_across_a_write(%ap: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                                                  %lp: memref<?xi32>, %np: index, %x: i32, %i: index)
    -> (!fi.plan<append>, !fi.plan<append>) {
  %a = fi.append_plan append_indptr(%ap : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  memref.store %x, %ap[%i] : memref<?xi32>
  %b = fi.append_plan append_indptr(%ap : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return %a, %b : !fi.plan<append>, !fi.plan<append>
}

// CSE does no alias analysis: any memory write between two memref-form plans (here
// the append writing the cache) keeps them apart. (In the tensor form they fold.)
// CHECK-LABEL: func.func @decode_plans_across_an_append
// CHECK-COUNT-2: fi.decode_plan
func.func @decode_plans_across_an_append(%kn: memref<?x8x128xf16>, %vn: memref<?x8x128xf16>, %ap: memref<?xi32>,
                                         %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>,
                                         %cache: memref<?x2x16x8x128xf16>, %np: index)
    -> (!fi.plan<decode>, !fi.plan<decode>) {
  %a = fi.decode_plan pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  fi.append_paged_kv kv_new(%kn, %vn : memref<?x8x128xf16>, memref<?x8x128xf16>) append_indptr(%ap : memref<?xi32>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%cache : memref<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  %b = fi.decode_plan pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return %a, %b : !fi.plan<decode>, !fi.plan<decode>
}
