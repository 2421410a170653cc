// RUN: fi-opt %s --fi-lower-to-runtime -verify-diagnostics -split-input-file

// A plan made on the device needs its tiles at compile time.
func.func @no_tiles(%ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %np: index) {
  // expected-error @+1 {{is `on_device` but has no tiles: a plan made on the GPU cannot choose them from lengths the host never sees; run --fi-select-tiles first (fi-to-llvm does) or set `tiles`}}
  %p = fi.decode_plan pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}

// -----

// A copy of an element type the runtime cannot copy is an error, not a host loop.
func.func @bad_copy(%a: memref<4xcomplex<f32>>, %b: memref<4xcomplex<f32>>) {
  // expected-error @+1 {{copies elements of type 'complex<f32>', for which the fi runtime has no copy; copy f16, bf16, f32, f64, fp8, i1-i64 or index}}
  memref.copy %a, %b : memref<4xcomplex<f32>> to memref<4xcomplex<f32>>
  return
}

// -----

// So does a prefill plan made on the device.
func.func @prefill_no_tiles(%qo: memref<?xi32>, %kv: memref<?xi32>, %n: index) {
  // expected-error @+1 {{is `on_device` but has no tiles: a plan made on the GPU cannot choose them from lengths the host never sees; run --fi-select-tiles first (fi-to-llvm does) or set `tiles`}}
  %p = fi.ragged_prefill_plan indptr(%qo, %kv : memref<?xi32>, memref<?xi32>) max_rows(%n, %n) {on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return
}
