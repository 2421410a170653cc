// RUN: fi-opt %s -split-input-file -verify-diagnostics
// Rule: pages takes the page table's three arrays (generic form: two given), and a paged plan num_pages

func.func @bad(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %pi: tensor<2xi32>, %px: tensor<?xi32>, %np: index, %m: index) {
  // expected-error @+1 {{has 2 of the page table's 3 arrays (kv_indptr, kv_indices, kv_last_page_len); pages takes all three}}
  %0 = "fi.block_sparse_plan"(%ip, %ix, %pi, %px, %np, %m) <{bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, head_dim = 64 : i64, kv_type = f16, mask_mode = #fi.mask_mode<none>, num_kv_heads = 2 : i64, num_qo_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 1, 1, 0, 1, 1, 0>, q_type = f16}> : (tensor<?xi32>, tensor<?xi32>, tensor<2xi32>, tensor<?xi32>, index, index) -> !fi.plan<block_sparse>
  return
}

// -----

func.func @bad2(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %pi: tensor<2xi32>, %px: tensor<?xi32>, %pl: tensor<1xi32>, %m: index) {
  // expected-error @+1 {{has pages without num_pages; a paged plan takes both}}
  %0 = "fi.block_sparse_plan"(%ip, %ix, %pi, %px, %pl, %m) <{bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>, head_dim = 64 : i64, kv_type = f16, mask_mode = #fi.mask_mode<none>, num_kv_heads = 2 : i64, num_qo_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 1, 1, 1, 0, 1, 0>, q_type = f16}> : (tensor<?xi32>, tensor<?xi32>, tensor<2xi32>, tensor<?xi32>, tensor<1xi32>, index) -> !fi.plan<block_sparse>
  return
}
