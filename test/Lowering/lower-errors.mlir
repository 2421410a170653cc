// What fi-lower-to-runtime rejects, with messages that name the op and what is supported.
// RUN: fi-opt %s --split-input-file --verify-diagnostics --fi-lower-to-runtime=backend=cuda

func.func @head_dim_96(%q: memref<?x4x96xf16>, %k: memref<?x16x4x96xf16>, %p: memref<?xi32>,
    %i: memref<?xi32>, %l: memref<?xi32>, %o: memref<?x4x96xf16>) {
  // expected-error @below {{'fi.decode_plan' op cannot run on the CUDA backend: decode: head_dim 96 has no CUDA kernel (64, 128 and 256 do); use one of those or the host backend}}
  fi.paged_decode q(%q : memref<?x4x96xf16>) kv(%k, %k : memref<?x16x4x96xf16>, memref<?x16x4x96xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x96xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// -----

func.func @f32_query(%q: memref<?x4x64xf32>, %k: memref<?x4x64xf32>, %qo: memref<?xi32>,
    %kvp: memref<?xi32>, %o: memref<?x4x64xf32>) {
  // expected-error @below {{'fi.ragged_prefill_plan' op cannot run on the CUDA backend: ragged prefill: the CUDA kernels take f16 or bf16 queries, not f32; convert q or use the host backend}}
  fi.ragged_prefill q(%q : memref<?x4x64xf32>) kv(%k, %k : memref<?x4x64xf32>, memref<?x4x64xf32>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x64xf32>)
  return
}

// -----

func.func @no_such_prefill_variant(%q: memref<?x4x64xf16>, %k: memref<?x4x64xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x64xf16>) {
  // expected-error @below {{cannot run on the CUDA backend: ragged prefill: no CUDA variant with q_tile 128, kv_tile 128; compiled (q, kv) tiles: (16,32) (16,64) (16,128) (32,32) (32,64) (32,128) (64,32) (64,64) (64,128) (128,32) (128,64)}}
  fi.ragged_prefill q(%q : memref<?x4x64xf16>) kv(%k, %k : memref<?x4x64xf16>, memref<?x4x64xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x64xf16>)
      {tiles = #fi.tiles<q = 128, kv = 128, split_kv = false, cores = tensor>}
  return
}

// -----

func.func @wgmma_head_dim_256(%q: memref<?x4x256xf16>, %k: memref<?x4x256xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x256xf16>) {
  // expected-error @below {{cannot run on the CUDA backend: ragged prefill: at head_dim 256 the wgmma prefill kernel (the warp-specialised Hopper kernel) runs q_tile 128, kv_tile 64, not q_tile 128, kv_tile 128; pass those, cores = tensor tiles, or no tiles}}
  fi.ragged_prefill q(%q : memref<?x4x256xf16>) kv(%k, %k : memref<?x4x256xf16>, memref<?x4x256xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x256xf16>)
      {tiles = #fi.tiles<q = 128, kv = 128, split_kv = false, cores = wgmma>}
  return
}

// -----

func.func @wgmma_q_tile_32(%q: memref<?x4x128xf16>, %k: memref<?x4x128xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x128xf16>) {
  // expected-error @below {{cannot run on the CUDA backend: ragged prefill: no wgmma prefill variant with q_tile 32, kv_tile 128; compiled (q, kv) tiles: (64,64) (64,128) (128,64) (128,128); or use cores = tensor}}
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %k : memref<?x4x128xf16>, memref<?x4x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x128xf16>)
      {tiles = #fi.tiles<q = 32, kv = 128, split_kv = false, cores = wgmma>}
  return
}

// -----

func.func @tensor_form(%va: tensor<?x4x16xf32>, %sa: tensor<?x4xf32>) -> tensor<?x4x16xf32> {
  // expected-error @below {{'fi.merge_state' op is in tensor form; fi-lower-to-runtime needs memrefs: run one-shot-bufferize first (or use fi-to-llvm)}}
  %r = fi.merge_state a(%va, %sa : tensor<?x4x16xf32>, tensor<?x4xf32>)
      b(%va, %sa : tensor<?x4x16xf32>, tensor<?x4xf32>) outs(%va : tensor<?x4x16xf32>)
      -> tensor<?x4x16xf32>
  return %r : tensor<?x4x16xf32>
}

// -----

func.func @plan_argument(%plan: !fi.plan<decode>, %q: memref<?x4x64xf16>,
    %k: memref<?x16x4x64xf16>, %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>,
    %o: memref<?x4x64xf16>) {
  // expected-error @below {{takes a plan that does not come from an fi plan op of this module (a function argument or a value passed through control flow); make the plan in the function that runs the op}}
  fi.paged_decode q(%q : memref<?x4x64xf16>) kv(%k, %k : memref<?x16x4x64xf16>, memref<?x16x4x64xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) plan(%plan : !fi.plan<decode>)
      outs(%o : memref<?x4x64xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// -----

// Block-sparse attention on CUDA: the wgmma (warp-specialised) kernel's head dims ...
func.func @block_sparse_hd256(%q: memref<?x4x256xf16>, %k: memref<?x2x256xf16>,
    %ip: memref<?xi32>, %ix: memref<?xi32>, %o: memref<?x4x256xf16>) {
  // expected-error @below {{'fi.block_sparse_plan' op cannot run on the CUDA backend: block_sparse: the wgmma kernel (the warp-specialised Hopper prefill kernel) has head_dim 64 and 128, not 256; use cores = tensor (the mma.sync kernel) or no tiles}}
  fi.block_sparse_attention q(%q : memref<?x4x256xf16>)
      kv(%k, %k : memref<?x2x256xf16>, memref<?x2x256xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x256xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
  return
}

// -----

// ... its tiles ...
func.func @block_sparse_tiles(%q: memref<?x4x64xf16>, %k: memref<?x2x64xf16>,
    %ip: memref<?xi32>, %ix: memref<?xi32>, %o: memref<?x4x64xf16>) {
  // expected-error @below {{'fi.block_sparse_plan' op cannot run on the CUDA backend: block_sparse: the wgmma kernel runs 128 x 128 tiles (q_tile 128, kv_tile 128), not q_tile 64, kv_tile 64; pass those (with split_kv as wanted), cores = tensor tiles, or no tiles}}
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %k : memref<?x2x64xf16>, memref<?x2x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
       tiles = #fi.tiles<q = 64, kv = 64, split_kv = false, cores = wgmma>}
  return
}

// -----

// ... and the mma.sync kernel's: tensor-core tiles of the compiled list.
func.func @block_sparse_mma_tiles(%q: memref<?x4x256xf16>, %k: memref<?x2x256xf16>,
    %ip: memref<?xi32>, %ix: memref<?xi32>, %o: memref<?x4x256xf16>) {
  // expected-error @below {{'fi.block_sparse_plan' op cannot run on the CUDA backend: block_sparse: no CUDA variant with q_tile 128, kv_tile 128; compiled (q, kv) tiles: (16,32)}}
  fi.block_sparse_attention q(%q : memref<?x4x256xf16>)
      kv(%k, %k : memref<?x2x256xf16>, memref<?x2x256xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x256xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = tensor>}
  return
}

// -----

// A plan made in one lane (for its SMs) run in another.
func.func @plan_in_another_lane(%q: memref<?x2x64xbf16>, %kv: memref<?x2x2x8x64xbf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %np: index,
    %o: memref<?x2x64xbf16>) {
  // expected-error @below {{'fi.decode_plan' op is in lane "main" but feeds fi.paged_decode in lane "side"; give a plan and the ops it feeds the same `fi.lane`}}
  %plan = fi.decode_plan pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>, num_qo_heads = 2,
       num_kv_heads = 2, head_dim = 64, q_type = bf16, kv_type = bf16,
       tiles = #fi.tiles<q = 1, kv = 32, split_kv = false, cores = cuda>, fi.lane = "main"}
  fi.paged_decode q(%q : memref<?x2x64xbf16>) kv(%kv : memref<?x2x2x8x64xbf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) plan(%plan : !fi.plan<decode>)
      outs(%o : memref<?x2x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = hnd>, fi.lane = "side"}
  return
}
