// End to end: fi.merge_state, fi.merge_states and fi.append_paged_kv compiled through
// fi-to-llvm into an executable, run with random inputs and random ragged lengths,
// compared with the runtime called directly (drivers/merge_append.c).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/merge_append.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: merge_state_f16: 5 trials, 0 mismatches
// CHECK: merge_state_no_s_bf16: 5 trials, 0 mismatches
// CHECK: merge_states_f32: 5 trials, 0 mismatches
// CHECK: append_nhd_f16: 5 trials, 0 mismatches
// CHECK: append_combined_hnd_bf16: 5 trials, 0 mismatches
// CHECK: E2E merge/append: PASS

func.func @merge_state_f16(%va: tensor<?x4x32xf16>, %sa: tensor<?x4xf32>,
    %vb: tensor<?x4x32xf16>, %sb: tensor<?x4xf32>)
    -> (tensor<?x4x32xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %va, %c0 : tensor<?x4x32xf16>
  %v0 = tensor.empty(%n) : tensor<?x4x32xf16>
  %s0 = tensor.empty(%n) : tensor<?x4xf32>
  %v, %s = fi.merge_state a(%va, %sa : tensor<?x4x32xf16>, tensor<?x4xf32>)
      b(%vb, %sb : tensor<?x4x32xf16>, tensor<?x4xf32>)
      outs(%v0, %s0 : tensor<?x4x32xf16>, tensor<?x4xf32>)
      -> tensor<?x4x32xf16>, tensor<?x4xf32>
  return %v, %s : tensor<?x4x32xf16>, tensor<?x4xf32>
}

func.func @merge_state_no_s_bf16(%va: tensor<?x2x64xbf16>, %sa: tensor<?x2xf32>,
    %vb: tensor<?x2x64xbf16>, %sb: tensor<?x2xf32>) -> tensor<?x2x64xbf16>
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %va, %c0 : tensor<?x2x64xbf16>
  %v0 = tensor.empty(%n) : tensor<?x2x64xbf16>
  %v = fi.merge_state a(%va, %sa : tensor<?x2x64xbf16>, tensor<?x2xf32>)
      b(%vb, %sb : tensor<?x2x64xbf16>, tensor<?x2xf32>)
      outs(%v0 : tensor<?x2x64xbf16>) -> tensor<?x2x64xbf16>
  return %v : tensor<?x2x64xbf16>
}

func.func @merge_states_f32(%v: tensor<?x3x4x16xf32>, %s: tensor<?x3x4xf32>)
    -> (tensor<?x4x16xf32>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %v, %c0 : tensor<?x3x4x16xf32>
  %v0 = tensor.empty(%n) : tensor<?x4x16xf32>
  %s0 = tensor.empty(%n) : tensor<?x4xf32>
  %vo, %so = fi.merge_states %v, %s : tensor<?x3x4x16xf32>, tensor<?x3x4xf32>
      outs(%v0, %s0 : tensor<?x4x16xf32>, tensor<?x4xf32>)
      -> tensor<?x4x16xf32>, tensor<?x4xf32>
  return %vo, %so : tensor<?x4x16xf32>, tensor<?x4xf32>
}

// The caches are read-only arguments (bufferization.writable = false): the compiled
// function appends into copies and returns them; the caller's caches stay as they were.
func.func @append_nhd_f16(%kn: tensor<?x2x32xf16>, %vn: tensor<?x2x32xf16>,
    %ap: tensor<?xi32>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>, %kc: tensor<?x16x2x32xf16> {bufferization.writable = false},
    %vc: tensor<?x16x2x32xf16> {bufferization.writable = false})
    -> (tensor<?x16x2x32xf16>, tensor<?x16x2x32xf16>) attributes {llvm.emit_c_interface} {
  %k, %v = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x2x32xf16>, tensor<?x2x32xf16>)
      append_indptr(%ap : tensor<?xi32>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%kc, %vc : tensor<?x16x2x32xf16>, tensor<?x16x2x32xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
      -> tensor<?x16x2x32xf16>, tensor<?x16x2x32xf16>
  return %k, %v : tensor<?x16x2x32xf16>, tensor<?x16x2x32xf16>
}

// A writable combined HND cache [pages, 2, kv_heads, page, head_dim] (function arguments
// are writable by default), updated in place.
func.func @append_combined_hnd_bf16(%kn: tensor<?x2x16xbf16>, %vn: tensor<?x2x16xbf16>,
    %ap: tensor<?xi32>, %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
    %last: tensor<?xi32>, %kv: tensor<?x2x2x4x16xbf16> {bufferization.writable = true})
    -> tensor<?x2x2x4x16xbf16> attributes {llvm.emit_c_interface} {
  %r = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x2x16xbf16>, tensor<?x2x16xbf16>)
      append_indptr(%ap : tensor<?xi32>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%kv : tensor<?x2x2x4x16xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 4, layout = hnd>}
      -> tensor<?x2x2x4x16xbf16>
  return %r : tensor<?x2x2x4x16xbf16>
}
