// RUN: fi-opt %s -verify-diagnostics
// Rule: block_offsets takes both arrays (generic form: only row_offsets given)

func.func @bad(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %ro: tensor<?xi32>, %m: index, %n: index) {
  // expected-error @+1 {{has row_offsets without col_offsets; block_offsets takes both (uniform blocks: neither)}}
  %0 = "fi.block_sparse_plan"(%ip, %ix, %ro, %m, %n) <{bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, head_dim = 64 : i64, kv_type = f16, mask_mode = #fi.mask_mode<none>, num_kv_heads = 2 : i64, num_qo_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1>, q_type = f16}> : (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, index, index) -> !fi.plan<block_sparse>
  return
}
