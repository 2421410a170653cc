// Block-sparse attention through fi-to-llvm's steps: the plan op made by
// fi-materialize-plans (M, N from dim 0 of q and k) and its runtime calls, for the host
// and the CUDA backend (the runtime's default kernel, or forced tiles: the mma.sync kernel
// below; lower-errors.mlir has what it refuses).
// RUN: fi-opt %s --fi-lower-to-runtime | FileCheck %s
// RUN: fi-opt %s --fi-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: fi-opt %s --fi-lower-to-runtime=backend=cuda | FileCheck %s --check-prefix=CUDA

// CHECK-DAG: func.func private @fi_rt_block_sparse_plan(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @fi_rt_block_sparse_run_f16_f16(
// CHECK-LABEL: func.func @bsr
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK: %[[SLOT:.*]] = memref.get_global @__fi_plan_slot_0 : memref<1xi64>
// Uniform blocks: the block offsets are two empty arrays.
// CHECK: %[[NOROWS:.*]] = memref.alloca() : memref<0xi32>
// CHECK: %[[NR:.*]] = memref.cast %[[NOROWS]]
// CHECK: %[[NOCOLS:.*]] = memref.alloca() : memref<0xi32>
// CHECK: %[[NC:.*]] = memref.cast %[[NOCOLS]]
// CHECK: %[[M64:.*]] = arith.index_cast %[[M]] : index to i64
// CHECK: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// Blocks 16 x 32; 4 / 2 heads, head_dim 64, page 0, f16 / f16, causal (1), tiles at plan time.
// CHECK: call @fi_rt_block_sparse_plan(%[[SLOT]], %{{.*}}, %{{.*}}, %[[NR]], %[[NC]], %[[M64]], %[[N64]], %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}}, %c4_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}) {fi.variant = "plan-time"}
// CHECK: call @fi_rt_block_sparse_run_f16_f16(%[[SLOT]], {{.*}}) {fi.variant = "plan-time"}
// CHECK-NOT: fi.block_sparse
// LLVM: llvm.call @fi_rt_block_sparse_plan(
// LLVM: llvm.call @fi_rt_block_sparse_run_f16_f16(
// CUDA: call @fi_rt_block_sparse_plan(
// CUDA: call @fi_rt_block_sparse_run_f16_f16(
func.func @bsr(%q: memref<?x4x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>,
               %ip: memref<?xi32>, %ix: memref<?xi32>, %o: memref<?x4x64xf16>) {
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 16, block_cols = 32, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>}
  return
}

// Variable blocks: the plan and the run get the op's row and column offsets after the BSR
// arrays (the run: then o).
// CHECK-LABEL: func.func @bsr_variable
// CHECK-DAG: %[[RO:.*]] = memref.cast %arg5 : memref<?xi32> to memref<?xi32, strided<[?], offset: ?>>
// CHECK-DAG: %[[CO:.*]] = memref.cast %arg6 : memref<?xi32> to memref<?xi32, strided<[?], offset: ?>>
// CHECK: call @fi_rt_block_sparse_plan(%{{.*}}, %{{.*}}, %{{.*}}, %[[RO]], %[[CO]], %{{.*}}, %{{.*}}, %c4_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}},
// CHECK: %[[RRO:.*]] = memref.cast %arg5 : memref<?xi32> to memref<?xi32, strided<[?], offset: ?>>
// CHECK: %[[RCO:.*]] = memref.cast %arg6 : memref<?xi32> to memref<?xi32, strided<[?], offset: ?>>
// CHECK: %[[RO_:.*]] = memref.cast %arg7 : memref<?x4x64xf16>
// CHECK: call @fi_rt_block_sparse_run_f16_f16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[RRO]], %[[RCO]], %[[RO_]],
// LLVM-LABEL: llvm.func @bsr_variable
// CUDA-LABEL: func.func @bsr_variable
// CUDA: call @fi_rt_block_sparse_plan(
func.func @bsr_variable(%q: memref<?x4x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>,
                        %ip: memref<?xi32>, %ix: memref<?xi32>, %ro: memref<?xi32>,
                        %co: memref<?xi32>, %o: memref<?x4x64xf16>) {
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>)
      block_offsets(%ro, %co : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 4, block_cols = 32, layout = nhd>}
  return
}

// Over a paged cache: the paged plan gets the page table, the cache's pages (dim 0 of k)
// and M (no N: the table's), page size 16 in the shape; the paged run gets the cache
// (rank 4), the page table after the block offsets, then o, lse and the layout (hnd: 1).
// CHECK-LABEL: func.func @bsr_paged
// CHECK: %[[QM:.*]] = memref.dim %arg0, %c0
// CHECK: %[[PAGES:.*]] = memref.dim %arg1, %c0
// CHECK: %[[PAGES64:.*]] = arith.index_cast %[[PAGES]] : index to i64
// CHECK: %[[M64P:.*]] = arith.index_cast %[[QM]] : index to i64
// CHECK: call @fi_rt_block_sparse_paged_plan(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PAGES64]], %[[M64P]], %c64_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}}, %c4_i32{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c16_i32{{[_0-9]*}},
// CHECK: call @fi_rt_block_sparse_paged_run_f16_f16({{.*}}) {{.*}} : (memref<1xi64>, memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?x?xf16, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf16, strided<[?, ?, ?, ?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?x?x?xf16, strided<[?, ?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32,
// LLVM-LABEL: llvm.func @bsr_paged
// LLVM: llvm.call @fi_rt_block_sparse_paged_plan(
// LLVM: llvm.call @fi_rt_block_sparse_paged_run_f16_f16(
// CUDA-LABEL: func.func @bsr_paged
// CUDA: call @fi_rt_block_sparse_paged_plan(
func.func @bsr_paged(%q: memref<?x4x64xf16>, %k: memref<?x2x16x64xf16>,
                     %v: memref<?x2x16x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                     %pi: memref<2xi32>, %px: memref<?xi32>, %pl: memref<1xi32>,
                     %o: memref<?x4x64xf16>) {
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %v : memref<?x2x16x64xf16>, memref<?x2x16x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>)
      pages(%pi, %px, %pl : memref<2xi32>, memref<?xi32>, memref<1xi32>)
      outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 16, layout = hnd>}
  return
}

// On CUDA, head_dim 256 with the mma.sync kernel's tiles forced: the plan call carries
// them after the shape (head_dim, page size, q, kv and mask codes): q 128, kv 64, split,
// cores = tensor (1).
// CUDA-LABEL: func.func @bsr_mma_hd256
// CUDA: call @fi_rt_block_sparse_plan({{.*}}, %c256_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, %c128_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}) {fi.variant = "prefill_q128_kv64_split"}
// CUDA: call @fi_rt_block_sparse_run_f16_f16(
func.func @bsr_mma_hd256(%q: memref<?x4x256xf16>, %k: memref<?x2x256xf16>,
                         %v: memref<?x2x256xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                         %o: memref<?x4x256xf16>) {
  fi.block_sparse_attention q(%q : memref<?x4x256xf16>)
      kv(%k, %v : memref<?x2x256xf16>, memref<?x2x256xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x256xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
       tiles = #fi.tiles<q = 128, kv = 64, split_kv = true, cores = tensor>}
  return
}
