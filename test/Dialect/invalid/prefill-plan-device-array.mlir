// RUN: fi-opt %s -verify-diagnostics
// Rule: a prefill plan made on the host (no `on_device`) cannot read device memory

func.func @bad(%qo: memref<?xi32, #fi.memory<device>>, %kv: memref<?xi32>) {
  // expected-error @+1 {{operand 'qo_indptr' is device memory (#fi.memory<device>) but this plan reads it on the host}}
  %p = fi.ragged_prefill_plan indptr(%qo, %kv : memref<?xi32, #fi.memory<device>>, memref<?xi32>) {num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
