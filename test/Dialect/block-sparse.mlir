// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.block_sparse_attention and fi.block_sparse_plan: one sequence through a BSR matrix.

// CHECK-LABEL: func.func @bsr_causal
// CHECK: %{{.*}}:2 = fi.block_sparse_attention q(%arg0 : tensor<?x32x128xf16>) kv(%arg1, %arg2 : tensor<?x8x128xf16>, tensor<?x8x128xf16>) blocks(%arg3, %arg4 : tensor<?xi32>, tensor<?xi32>) outs(%arg5, %arg6 : tensor<?x32x128xf16>, tensor<?x32xf32>) {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>, logits_soft_cap = 3.000000e+01 : f32, mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
func.func @bsr_causal(%q: tensor<?x32x128xf16>, %k: tensor<?x8x128xf16>, %v: tensor<?x8x128xf16>,
                      %ip: tensor<?xi32>, %ix: tensor<?xi32>, %o: tensor<?x32x128xf16>,
                      %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = fi.block_sparse_attention q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      blocks(%ip, %ix : tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, logits_soft_cap = 30.0 : f32}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// An explicit plan, memref form, blocks that differ in rows and columns.
// CHECK-LABEL: func.func @bsr_planned
// CHECK: %[[P:.*]] = fi.block_sparse_plan blocks(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) rows(%arg6, %arg7) {bsr = #fi.bsr<block_rows = 16, block_cols = 128, layout = nhd>, head_dim = 64 : i64, kv_type = bf16, num_kv_heads = 2 : i64, num_qo_heads = 4 : i64, q_type = bf16}
// CHECK: fi.block_sparse_attention q(%arg0 : memref<?x4x64xbf16>) kv(%arg1, %arg2 : memref<?x2x64xbf16>, memref<?x2x64xbf16>) blocks(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) plan(%[[P]] : !fi.plan<block_sparse>) outs(%arg5 : memref<?x4x64xbf16>) {bsr = #fi.bsr<block_rows = 16, block_cols = 128, layout = nhd>}
func.func @bsr_planned(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>,
                       %ip: memref<?xi32>, %ix: memref<?xi32>, %o: memref<?x4x64xbf16>,
                       %m: index, %n: index) {
  %p = fi.block_sparse_plan blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) rows(%m, %n)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 128, layout = nhd>, num_qo_heads = 4,
       num_kv_heads = 2, head_dim = 64, q_type = bf16, kv_type = bf16}
  fi.block_sparse_attention q(%q : memref<?x4x64xbf16>)
      kv(%k, %v : memref<?x2x64xbf16>, memref<?x2x64xbf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) plan(%p : !fi.plan<block_sparse>)
      outs(%o : memref<?x4x64xbf16>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 128, layout = nhd>}
  return
}

// Variable blocks (FlashInfer's variable block-sparse form): block_offsets give each block
// row's query rows and each column block's keys; bsr names the smallest block. The plan
// that fi-materialize-plans makes carries the same offsets.
// CHECK-LABEL: func.func @bsr_variable
// CHECK: fi.block_sparse_plan blocks(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) block_offsets(%arg5, %arg6 : memref<?xi32>, memref<?xi32>) rows(%arg8, %arg9) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>
// CHECK: fi.block_sparse_attention q(%arg0 : memref<?x4x64xf16>) kv(%arg1, %arg2 : memref<?x2x64xf16>, memref<?x2x64xf16>) blocks(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) block_offsets(%arg5, %arg6 : memref<?xi32>, memref<?xi32>) plan(%{{.*}} : !fi.plan<block_sparse>) outs(%arg7 : memref<?x4x64xf16>)
func.func @bsr_variable(%q: memref<?x4x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>,
                        %ip: memref<?xi32>, %ix: memref<?xi32>, %ro: memref<?xi32>,
                        %co: memref<?xi32>, %o: memref<?x4x64xf16>, %m: index, %n: index) {
  %p = fi.block_sparse_plan blocks(%ip, %ix : memref<?xi32>, memref<?xi32>)
      block_offsets(%ro, %co : memref<?xi32>, memref<?xi32>) rows(%m, %n)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 4,
       num_kv_heads = 2, head_dim = 64, q_type = f16, kv_type = f16}
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>)
      block_offsets(%ro, %co : memref<?xi32>, memref<?xi32>) plan(%p : !fi.plan<block_sparse>)
      outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// Over a paged cache (the paper's view: column blocks of pages): the op's pages give the
// one sequence's page table, k and v are the cache in bsr's layout; its plan takes the
// page table and the pool's pages, and N comes from the table (rows(%m) alone).
// CHECK-LABEL: func.func @bsr_paged
// CHECK: %[[P:.*]] = fi.block_sparse_plan blocks(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) pages(%arg5, %arg6, %arg7 : memref<2xi32>, memref<?xi32>, memref<1xi32>) num_pages(%arg9) rows(%arg10) {bsr = #fi.bsr<block_rows = 64, block_cols = 16, layout = hnd>
// CHECK: fi.block_sparse_attention q(%arg0 : memref<?x4x64xf16>) kv(%arg1, %arg2 : memref<?x2x16x64xf16>, memref<?x2x16x64xf16>) blocks(%arg3, %arg4 : memref<?xi32>, memref<?xi32>) pages(%arg5, %arg6, %arg7 : memref<2xi32>, memref<?xi32>, memref<1xi32>) plan(%[[P]] : !fi.plan<block_sparse>) outs(%arg8 : memref<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 64, block_cols = 16, layout = hnd>, mask_mode = #fi.mask_mode<causal>}
func.func @bsr_paged(%q: memref<?x4x64xf16>, %k: memref<?x2x16x64xf16>,
                     %v: memref<?x2x16x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                     %pi: memref<2xi32>, %px: memref<?xi32>, %pl: memref<1xi32>,
                     %o: memref<?x4x64xf16>, %np: index, %m: index) {
  %p = fi.block_sparse_plan blocks(%ip, %ix : memref<?xi32>, memref<?xi32>)
      pages(%pi, %px, %pl : memref<2xi32>, memref<?xi32>, memref<1xi32>) num_pages(%np)
      rows(%m) {bsr = #fi.bsr<block_rows = 64, block_cols = 16, layout = hnd>,
       mask_mode = #fi.mask_mode<causal>, num_qo_heads = 4, num_kv_heads = 2, head_dim = 64,
       q_type = f16, kv_type = f16}
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %v : memref<?x2x16x64xf16>, memref<?x2x16x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>)
      pages(%pi, %px, %pl : memref<2xi32>, memref<?xi32>, memref<1xi32>)
      plan(%p : !fi.plan<block_sparse>) outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 16, layout = hnd>,
       mask_mode = #fi.mask_mode<causal>}
  return
}
