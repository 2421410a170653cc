// End to end, context parallelism: compiled KV-sharded steps (`kv_shard = #fi.kv_shard<ranks
// = 2, split_size = 32>`) on the host backend. Two threads are the two ranks, each on its
// own host context (fi_rt_set_thread_context) with its communicator of an in-process group
// (fi_comm_create_local_group(2), fi_context_set_comm); each rank holds a contiguous segment
// of every request's KV (rank 0 a multiple of the 32-token split, rank 1 the rest; a causal
// prefill's new tokens on rank 1) in its own paged cache. Steps of changing batch sizes and
// lengths (plans re-made) run a sharded decode, a sharded causal paged prefill and a
// cascade (a sharded paged prefill of the shared prefix with every query as one request, a
// sharded decode of the suffixes, fi.merge_state of the two); every element of o and lse,
// on both ranks, is compared bit for bit with the single-rank run of the whole cache with
// the same fixed split (the runtime called directly on a third context with
// fixed_split_size = 32, kv_shards = 0, and the compiled code's tiles: the unsharded ops
// carry no fixed split in IR). Then the bad inputs through the compiled code: a context
// with no communicator, and a communicator of the wrong size, reported through the error
// handler (drivers/kv_shard.c).
//
// Sharded plans size each rank's workspace for its own problem; when a rank's cannot hold the
// largest rank's states every rank's plan fails alike and the adapters resize and plan again
// (the driver's steps exercise it: the ranks' segments differ in length).
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/kv_shard.c %t.o %fi_e2e_ldflags -lpthread -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: kv_shard: 2 ranks x 6 steps x 3 functions, 36 results bit-exact against the single-rank run
// CHECK: bad input: no communicator: fi.decode_plan: FI_ERROR_INVALID_ARGUMENT: {{.*}}kv_shards = 2{{.*}}no communicator
// CHECK: bad input: communicator of 2 ranks for kv_shard ranks = 3: fi.decode_plan: FI_ERROR_INVALID_ARGUMENT: {{.*}}kv_shards = 3{{.*}}communicator has 2 ranks
// CHECK: E2E kv_shard: PASS

#shard = #fi.kv_shard<ranks = 2, split_size = 32>
#dec = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>

// Batch decode: GQA group 4, head_dim 64, page 16, separate NHD K/V, f16, with LSE.
func.func @decode_sharded(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
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
      {bsr = #dec, kv_shard = #shard} -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// Causal paged prefill (each request's new tokens on the last rank), same shapes.
func.func @prefill_sharded(%q: tensor<?x8x64xf16>, %qo: tensor<?xi32>,
    %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %indptr: tensor<?xi32>,
    %indices: tensor<?xi32>, %last: tensor<?xi32>) -> (tensor<?x8x64xf16>, tensor<?x8xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x8xf32>
  %o, %lse = fi.paged_prefill q(%q : tensor<?x8x64xf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%indptr, %indices, %last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #dec, mask_mode = #fi.mask_mode<causal>, kv_shard = #shard}
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// Cascade across ranks: the shared prefix as one request of every query (qo_indptr =
// [0, batch], no mask), sharded; the unique suffixes as a sharded decode; each sharded op
// returns full states, so fi.merge_state of the two is local to the rank.
func.func @cascade_sharded(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>,
    %p_qo: tensor<2xi32>, %p_indptr: tensor<2xi32>, %p_indices: tensor<?xi32>,
    %p_last: tensor<1xi32>,
    %s_indptr: tensor<?xi32>, %s_indices: tensor<?xi32>, %s_last: tensor<?xi32>)
    -> (tensor<?x8x64xf16>, tensor<?x8xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%b) : tensor<?x8x64xf16>
  %l0 = tensor.empty(%b) : tensor<?x8xf32>
  %op, %lp = fi.paged_prefill q(%q : tensor<?x8x64xf16>) qo_indptr(%p_qo : tensor<2xi32>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%p_indptr, %p_indices, %p_last : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #fi.bsr<block_rows = 8, block_cols = 16, layout = nhd>, kv_shard = #shard}
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  %os, %ls = fi.paged_decode q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%s_indptr, %s_indices, %s_last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      {bsr = #dec, kv_shard = #shard} -> tensor<?x8x64xf16>, tensor<?x8xf32>
  %o, %lse = fi.merge_state a(%op, %lp : tensor<?x8x64xf16>, tensor<?x8xf32>)
      b(%os, %ls : tensor<?x8x64xf16>, tensor<?x8xf32>)
      outs(%o0, %l0 : tensor<?x8x64xf16>, tensor<?x8xf32>)
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// The bad input: a decode sharded over 3 ranks, run on a context whose communicator has 2.
func.func @decode_sharded3(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
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
      {bsr = #dec, kv_shard = #fi.kv_shard<ranks = 3, split_size = 32>}
      -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x64xf16>, tensor<?x8xf32>
}
