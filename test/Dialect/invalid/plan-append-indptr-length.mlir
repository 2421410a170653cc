// RUN: fi-opt %s -verify-diagnostics
// Rule: append_plan: append_indptr and kv_indptr agree

func.func @bad(%a: tensor<3xi32>, %ip: tensor<5xi32>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{operand 'append_indptr' has 3 entries but 'kv_indptr' has 5; both have batch + 1 entries}}
  %p = fi.append_plan append_indptr(%a : tensor<3xi32>) pages(%ip, %pix, %plp : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}
