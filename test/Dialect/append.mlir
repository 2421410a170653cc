// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.append_paged_kv: new tokens into the paged cache, which is read and written.

// Combined cache, tensor form, with a plan.
// CHECK-LABEL: func.func @append_combined
// CHECK: %[[P:.*]] = fi.append_plan append_indptr(%arg2 : tensor<?xi32>) pages(%arg3, %arg4, %arg5 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%arg7) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
// CHECK: fi.append_paged_kv kv_new(%arg0, %arg1 : tensor<?x8x128xf16>, tensor<?x8x128xf16>) append_indptr(%arg2 : tensor<?xi32>) pages(%arg3, %arg4, %arg5 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%[[P]] : !fi.plan<append>) outs(%arg6 : tensor<?x2x16x8x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
func.func @append_combined(%k: tensor<?x8x128xf16>, %v: tensor<?x8x128xf16>, %ap: tensor<?xi32>,
                           %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                           %cache: tensor<?x2x16x8x128xf16>, %np: index) -> tensor<?x2x16x8x128xf16> {
  %p = fi.append_plan append_indptr(%ap : tensor<?xi32>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  %r = fi.append_paged_kv kv_new(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%ap : tensor<?xi32>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%p : !fi.plan<append>) outs(%cache : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  return %r : tensor<?x2x16x8x128xf16>
}

// Separate fp8 K and V caches in HND layout, memref form.
// CHECK-LABEL: func.func @append_separate_fp8
// CHECK: fi.append_paged_kv kv_new(%arg0, %arg1 : memref<?x2x64xf8E4M3FN>, memref<?x2x64xf8E4M3FN>) {{.*}} outs(%arg6, %arg7 : memref<?x2x32x64xf8E4M3FN>, memref<?x2x32x64xf8E4M3FN>) {bsr = #fi.bsr<block_rows = 1, block_cols = 32, layout = hnd>}
func.func @append_separate_fp8(%k: memref<?x2x64xf8E4M3FN>, %v: memref<?x2x64xf8E4M3FN>, %ap: memref<?xi32>,
                               %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>,
                               %kc: memref<?x2x32x64xf8E4M3FN>, %vc: memref<?x2x32x64xf8E4M3FN>) {
  fi.append_paged_kv kv_new(%k, %v : memref<?x2x64xf8E4M3FN>, memref<?x2x64xf8E4M3FN>)
      append_indptr(%ap : memref<?xi32>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%kc, %vc : memref<?x2x32x64xf8E4M3FN>, memref<?x2x32x64xf8E4M3FN>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 32, layout = hnd>}
  return
}
