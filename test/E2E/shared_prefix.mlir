// End to end: a decode marked `shared_prefix` compiled through fi-to-llvm (which runs
// fi-decompose-shared-prefix first: fi.split_shared_prefix, the prefix as one block row of
// every query, the suffixes as a decode, fi.merge_state), on the host backend, with random
// page tables whose requests share 0-40 leading pages (drivers/shared_prefix.c). Checked
// against (1) the runtime's own composition (fi_split_shared_prefix, the paged prefill, the
// decode and fi_merge_state with the compiled code's tiles): bit for bit; (2) a plain
// decode over the whole page tables, an independent path: within f16 rounding. Half the
// trials run with lanes installed (fi_rt_set_lanes: the parts fi-decompose-shared-prefix
// marks run in the main and side lanes; on the host backend, in order).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/shared_prefix.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: shared_prefix: 16 trials bit-exact against the composition (8 in lanes), within {{.*}} of plain decode
// CHECK: E2E shared-prefix: PASS

// GQA group 4, page 16, soft cap, with LSE.
func.func @decode_shared(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%b) : tensor<?x8x64xf16>
  %l0 = tensor.empty(%b) : tensor<?x8xf32>
  %o, %lse = fi.paged_decode q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, shared_prefix,
       logits_soft_cap = 20.0 : f32} -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}
