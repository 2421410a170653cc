// End to end, reentrancy: one compiled decode function called from 4 threads at once, each
// thread on its own host context (fi_rt_set_thread_context) with its own batch sizes and
// page tables (so each (plan op, context) needs its own plan and workspace, re-planned and
// grown as the batches change); every call is compared bit for bit with the runtime called
// directly on the thread's context (drivers/threads.c).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/threads.c %t.o %fi_e2e_ldflags -lpthread -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: threads: 4 threads x 30 calls, 120 calls bit-exact
// CHECK: E2E threads: PASS

// GQA group 4, NHD, separate K/V, with LSE; two layers share one plan.
func.func @decode_two_layers(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%b) : tensor<?x8x64xf16>
  %l0 = tensor.empty(%b) : tensor<?x8xf32>
  %o1, %lse1 = fi.paged_decode q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  // layer 2 attends with layer 1's output as its query (same plan: same page table)
  %o2, %lse2 = fi.paged_decode q(%o1 : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o2, %lse2 : tensor<?x8x64xf16>, tensor<?x8xf32>
}
