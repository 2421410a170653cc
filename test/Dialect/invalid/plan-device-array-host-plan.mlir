// RUN: fi-opt %s -verify-diagnostics
// Rule: a plan made on the host cannot read a page table that lives in device memory

func.func @bad(%ip: memref<?xi32, #fi.memory<device>>, %ix: memref<?xi32, #fi.memory<device>>, %lp: memref<?xi32, #fi.memory<device>>, %np: index) {
  // expected-error @+1 {{operand 'kv_indptr' is device memory (#fi.memory<device>) but this plan reads it on the host; add the `on_device` attribute to plan on the GPU, or pass a host copy (#fi.memory<host>)}}
  %p = fi.decode_plan pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
