// RUN: fi-opt %s -verify-diagnostics
// Rule: a plan made on the device cannot read a page table that lives in host memory

func.func @bad(%ap: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32, #fi.memory<host>>, %lp: memref<?xi32>, %np: index) {
  // expected-error @+1 {{operand 'kv_indices' is host memory (#fi.memory<host>) but an `on_device` plan reads it on the GPU; pass it in device memory (#fi.memory<device>) or drop `on_device`}}
  %p = fi.append_plan append_indptr(%ap : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32, #fi.memory<host>>, memref<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  return
}
