// RUN: fi-opt %s -split-input-file -verify-diagnostics
// Rules of prefill plans made on the device (`on_device`): they take the row bounds
// their indptrs are checked against, only they take them, and a custom mask needs a host
// plan.

func.func @paged_no_rows(%qo: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %np: index) {
  // expected-error @+1 {{is `on_device` but has no `max_qo_rows(%q_rows)`: a plan made on the GPU checks qo_indptr against the rows of the tensors its ops run on; pass them (tensor.dim of q)}}
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}

// -----

func.func @ragged_no_rows(%qo: memref<?xi32>, %kv: memref<?xi32>) {
  // expected-error @+1 {{is `on_device` but has no `max_rows(%q_rows, %kv_rows)`: a plan made on the GPU checks qo_indptr and kv_indptr against the rows of the tensors its ops run on; pass them (tensor.dim of q and k)}}
  %p = fi.ragged_prefill_plan indptr(%qo, %kv : memref<?xi32>, memref<?xi32>) {on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}

// -----

func.func @rows_on_host_plan(%qo: memref<?xi32>, %kv: memref<?xi32>, %n: index) {
  // expected-error @+1 {{has `max_rows(%q_rows, %kv_rows)` but is not `on_device`: only a plan made on the GPU takes row bounds; add `on_device` or drop them}}
  %p = fi.ragged_prefill_plan indptr(%qo, %kv : memref<?xi32>, memref<?xi32>) max_rows(%n, %n) {num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}

// -----

func.func @custom_mask_on_device(%qo: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %mi: memref<?xi32>, %np: index, %n: index) {
  // expected-error @+1 {{is `on_device` with mask_mode = custom: a custom mask is checked against the query and KV lengths on the host; drop `on_device`}}
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) mask_indptr(%mi : memref<?xi32>) num_pages(%np) max_qo_rows(%n) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<custom>, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}

// -----

func.func @host_array_device_plan(%qo: memref<?xi32, #fi.memory<host>>, %kv: memref<?xi32>, %n: index) {
  // expected-error @+1 {{operand 'qo_indptr' is host memory (#fi.memory<host>) but an `on_device` plan reads it on the GPU}}
  %p = fi.ragged_prefill_plan indptr(%qo, %kv : memref<?xi32, #fi.memory<host>>, memref<?xi32>) max_rows(%n, %n) {on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
