// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.split_shared_prefix (tensor and memref forms) and fi.paged_decode's shared_prefix.

// CHECK-LABEL: func.func @split
// CHECK: %{{.*}}:7 = fi.split_shared_prefix pages(%arg0, %arg1, %arg2 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%arg3) outs(%arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10 : tensor<2xi32>, tensor<2xi32>, tensor<?xi32>, tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {page_size = 16 : i64} -> tensor<2xi32>, tensor<2xi32>, tensor<?xi32>, tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
func.func @split(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %l: tensor<?xi32>, %np: index,
    %qo: tensor<2xi32>, %pi: tensor<2xi32>, %px: tensor<?xi32>, %pl: tensor<1xi32>,
    %si: tensor<?xi32>, %sx: tensor<?xi32>, %sl: tensor<?xi32>) {
  %r:7 = fi.split_shared_prefix pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      num_pages(%np)
      outs(%qo, %pi, %px, %pl, %si, %sx, %sl : tensor<2xi32>, tensor<2xi32>, tensor<?xi32>,
           tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      {page_size = 16} -> tensor<2xi32>, tensor<2xi32>, tensor<?xi32>, tensor<1xi32>,
                          tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// CHECK-LABEL: func.func @split_memref
// CHECK: fi.split_shared_prefix pages(%arg0, %arg1, %arg2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%arg3) outs(%arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10 : memref<2xi32>, memref<2xi32>, memref<?xi32>, memref<1xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) {page_size = 8 : i64}
// CHECK-NOT: ->
func.func @split_memref(%ip: memref<?xi32>, %ix: memref<?xi32>, %l: memref<?xi32>, %np: index,
    %qo: memref<2xi32>, %pi: memref<2xi32>, %px: memref<?xi32>, %pl: memref<1xi32>,
    %si: memref<?xi32>, %sx: memref<?xi32>, %sl: memref<?xi32>) {
  fi.split_shared_prefix pages(%ip, %ix, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      num_pages(%np)
      outs(%qo, %pi, %px, %pl, %si, %sx, %sl : memref<2xi32>, memref<2xi32>, memref<?xi32>,
           memref<1xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) {page_size = 8}
  return
}

// CHECK-LABEL: func.func @decode_shared
// CHECK: fi.paged_decode {{.*}}shared_prefix
func.func @decode_shared(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
    %ip: tensor<?xi32>, %ix: tensor<?xi32>, %l: tensor<?xi32>, %o: tensor<?x32x128xf16>)
    -> tensor<?x32x128xf16> {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
