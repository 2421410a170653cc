// RUN: fi-opt %s -verify-diagnostics
// Rule: fi.split_shared_prefix's prefix_indptr holds {0, P}: 2 entries

func.func @bad(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %l: tensor<?xi32>, %np: index, %qo: tensor<2xi32>, %pi: tensor<3xi32>, %px: tensor<?xi32>, %pl: tensor<1xi32>, %si: tensor<?xi32>, %sx: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error @+1 {{operand 'prefix_indptr' has 3 entries but needs 2}}
  %r:7 = fi.split_shared_prefix pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) outs(%qo, %pi, %px, %pl, %si, %sx, %sl : tensor<2xi32>, tensor<3xi32>, tensor<?xi32>, tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {page_size = 16} -> tensor<2xi32>, tensor<3xi32>, tensor<?xi32>, tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}
