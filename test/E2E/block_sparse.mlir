// End to end: fi.block_sparse_attention compiled through fi-to-llvm, run on the host
// backend with random BSR matrices (local, global and random blocks, blocks that do not
// divide the lengths, variable block sizes, paged caches) and compared bit for bit with fi_block_sparse_plan/run called
// directly (drivers/block_sparse.c); scripts/gpu-e2e.sh runs it on the CUDA backend too.
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/block_sparse.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: block_sparse: 12 trials bit-exact
// CHECK: block_sparse variable blocks: 12 trials bit-exact
// CHECK: block_sparse paged: 12 trials bit-exact
// CHECK: block_sparse paged 24: 12 trials bit-exact
// CHECK: block_sparse paged 24 mma.sync: 12 trials bit-exact
// CHECK: E2E block-sparse: PASS

// GQA group 2, causal inside the listed 16 x 32 blocks, soft cap, with LSE.
func.func @bsr_attention(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 32, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, logits_soft_cap = 25.0 : f32}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// Variable blocks (block_offsets; blocks of at least 8 rows and 24 keys), GQA group 2, no
// mask, with LSE.
func.func @bsr_variable(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %rows: tensor<?xi32>, %cols: tensor<?xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      block_offsets(%rows, %cols : tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 8, block_cols = 24, layout = nhd>}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// Over a paged cache (pages of 16 tokens, NHD; one block column per page), 16-row block
// rows, causal, with LSE.
func.func @bsr_paged(%q: tensor<?x4x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %kv_indptr: tensor<2xi32>, %kv_indices: tensor<?xi32>, %kv_last: tensor<1xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// Over a cache of 24-token pages (not a multiple of 16: on CUDA the stage pass gathers the
// pages into token rows; the compiled program sizes the stage), one block column per page,
// GQA group 2, soft cap, with LSE.
func.func @bsr_paged24(%q: tensor<?x4x64xf16>, %k: tensor<?x24x2x64xf16>,
    %v: tensor<?x24x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %kv_indptr: tensor<2xi32>, %kv_indices: tensor<?xi32>, %kv_last: tensor<1xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x24x2x64xf16>, tensor<?x24x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 24, layout = nhd>,
       logits_soft_cap = 30.0 : f32}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// @bsr_paged24 on the mma.sync kernel's tiles (q 64 x kv 32, split; on CUDA the kernel
// reads the pages row by row, without the stage; the host backend ignores tiles).
func.func @bsr_paged24_mma(%q: tensor<?x4x64xf16>, %k: tensor<?x24x2x64xf16>,
    %v: tensor<?x24x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %kv_indptr: tensor<2xi32>, %kv_indices: tensor<?xi32>, %kv_last: tensor<1xi32>)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%m) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%m) : tensor<?x4xf32>
  %o, %lse = fi.block_sparse_attention q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x24x2x64xf16>, tensor<?x24x2x64xf16>)
      blocks(%indptr, %indices : tensor<?xi32>, tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 24, layout = nhd>,
       logits_soft_cap = 30.0 : f32,
       tiles = #fi.tiles<q = 64, kv = 32, split_kv = true, cores = tensor>}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}
