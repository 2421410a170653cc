// RUN: fi-opt %s -split-input-file -verify-diagnostics
// Rules of context parallelism (kv_shard): the attribute's ranges; positions are per shard,
// so no RoPE / ALiBi, window, custom mask, variant or shared prefix; an op and the plan op
// its plan comes from have the same kv_shard.

// ranks must be in 1..1024.
func.func @ranks_zero(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{#fi.kv_shard ranks = 0 must be in 1..1024: it is the number of ranks of the communicator the KV is sharded over}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 0>} -> tensor<4x32x128xf16>
  return
}

// -----

func.func @ranks_too_many(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{#fi.kv_shard ranks = 1025 must be in 1..1024}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 1025>} -> tensor<4x32x128xf16>
  return
}

// -----

// split_size >= 0.
func.func @split_negative(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{#fi.kv_shard split_size = -16 must be >= 0 (and fit in i32): tokens per split-KV chunk, 0 (or absent) for the planner's choice}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2, split_size = -16>} -> tensor<4x32x128xf16>
  return
}

// -----

// RoPE in the kernel needs true positions.
func.func @rope(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and pos_encoding = rope_llama: key positions are per shard (each rank's segment starts at 0), so the kernel cannot rotate K by its true position; apply RoPE to K before appending it to the cache (and to q) and drop pos_encoding, or drop kv_shard}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, pos_encoding = #fi.pos_encoding<rope_llama>} -> tensor<4x32x128xf16>
  return
}

// -----

// So does ALiBi (paged prefill).
func.func @alibi(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and pos_encoding = alibi: ALiBi biases depend on key positions, which are per shard; drop pos_encoding or kv_shard}}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, pos_encoding = #fi.pos_encoding<alibi>}
  return
}

// -----

// And a sliding window.
func.func @window(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and window_left = 128: a sliding window needs the true key positions, which are per shard; drop window_left (no window) or kv_shard}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, window_left = 128} -> tensor<4x32x128xf16>
  return
}

// -----

// window_left = 0 is a window too.
func.func @window_zero(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and window_left = 0: a sliding window}}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, window_left = 0}
  return
}

// -----

// A custom mask covers the whole KV.
func.func @custom_mask(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %m: memref<?xi8>, %mi: memref<?xi32>) {
  // expected-error @+1 {{has kv_shard and mask_mode = custom: a custom mask covers the whole KV of each request, which no rank holds; use none or causal, or drop kv_shard}}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) mask(%m, %mi : memref<?xi8>, memref<?xi32>) outs(%o : memref<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, mask_mode = #fi.mask_mode<custom>}
  return
}

// -----

// So is a custom-mask prefill plan.
func.func @custom_mask_plan(%qo: memref<?xi32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %mi: memref<?xi32>, %np: index) {
  // expected-error @+1 {{has kv_shard and mask_mode = custom: a custom mask covers the whole KV of each request, which no rank holds; use none or causal, or drop kv_shard}}
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) mask_indptr(%mi : memref<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<custom>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16, kv_shard = #fi.kv_shard<ranks = 2>}
  return
}

// -----

// Variants see positions.
func.func @mask_mod_fn(%b: i32, %h: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.cmpi sge, %qp, %kp : i32
  return %t : i1
}
func.func @mask_mod(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and a score_mod/mask_mod: a variant sees key positions, which are per shard; drop the variant or kv_shard}}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, mask_mod = @mask_mod_fn}
  return
}

// -----

func.func @score_mod_fn(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32) -> f32 {
  return %s : f32
}
func.func @score_mod(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and a score_mod/mask_mod}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, score_mod = @score_mod_fn} -> tensor<4x32x128xf16>
  return
}

// -----

// The shared-prefix decomposition works on one page table.
func.func @shared_prefix(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) {
  // expected-error @+1 {{has kv_shard and shared_prefix: the shared-prefix decomposition splits one rank's page table as if it were the whole KV; drop shared_prefix or kv_shard}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>, shared_prefix} -> tensor<4x32x128xf16>
  return
}

// -----

// A sharded op with an unsharded plan.
func.func @plan_unsharded(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  // expected-error @+1 {{operand 'plan' was made for kv_shard none but this op has kv_shard #fi.kv_shard<ranks = 2>; give the plan op the op's kv_shard (fi-materialize-plans copies it) or use the op's own plan}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) plan(%p : !fi.plan<decode>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2>} -> tensor<4x32x128xf16>
  return
}

// -----

// An unsharded op with a sharded plan.
func.func @plan_sharded(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16, kv_shard = #fi.kv_shard<ranks = 2>}
  // expected-error @+1 {{operand 'plan' was made for kv_shard #fi.kv_shard<ranks = 2> but this op has kv_shard none}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) plan(%p : !fi.plan<decode>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, logits_soft_cap = 30.0 : f32} -> tensor<4x32x128xf16>
  return
}

// -----

// Another split size is another plan.
func.func @plan_split(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %pip: tensor<?xi32>, %pix: tensor<?xi32>, %plp: tensor<?xi32>, %np: index) {
  %p = fi.decode_plan pages(%pip, %pix, %plp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16, kv_shard = #fi.kv_shard<ranks = 2, split_size = 64>}
  // expected-error @+1 {{operand 'plan' was made for kv_shard #fi.kv_shard<ranks = 2, split_size = 64> but this op has kv_shard #fi.kv_shard<ranks = 2, split_size = 128>}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) plan(%p : !fi.plan<decode>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 2, split_size = 128>} -> tensor<4x32x128xf16>
  return
}

// -----

// Paged prefill and its plan: other rank counts.
func.func @prefill_plan_ranks(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x32x128xf16>, %np: index) {
  %p = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16, kv_shard = #fi.kv_shard<ranks = 4>}
  // expected-error @+1 {{operand 'plan' was made for kv_shard #fi.kv_shard<ranks = 4> but this op has kv_shard #fi.kv_shard<ranks = 8>}}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32>) kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) plan(%p : !fi.plan<paged_prefill>) outs(%o : memref<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, kv_shard = #fi.kv_shard<ranks = 8>}
  return
}
