// Attention variants written in IR, one function per variant, compiled ahead of time with
// the program (fi-to-llvm): FlexAttention's score_mod / mask_mod, FlashInfer's variant
// classes, without a JIT where the model runs. Each op names its functions and passes the
// values they capture (`variant_args`); the functions see the logit and the positions of
// one (query, key) pair. Shapes: 8 query heads, 2 KV heads, head_dim 64, f16.
// Both backends: `fi-to-llvm` compiles the variants into host code; `fi-to-llvm=backend=cuda`
// also into the program's own cubin, linked with the warp-specialised prefill or decode
// kernel (NVPTX and ptxas at compile time). examples/drivers/variants.c runs each example on the
// host against the built-in features, the runtime's custom mask or C hooks, and on a GPU
// against the host backend running the same object.

// ------------------------------------------------------------------------------------
// 1. Document masking for packed sequences: several documents packed into one request
// attend only within their own document. `doc_ids` holds each token's document, the
// tokens of all requests concatenated; `kv_indptr` says where each request's tokens
// start. Combined with the causal mask.
func.func private @same_document(%b: i32, %qh: i32, %qp: i32, %kp: i32,
                                 %doc_ids: tensor<?xi32>, %kv_indptr: tensor<?xi32>) -> i1 {
  %bi = arith.index_cast %b : i32 to index
  %base = tensor.extract %kv_indptr[%bi] : tensor<?xi32>
  %qt = arith.addi %base, %qp : i32
  %kt = arith.addi %base, %kp : i32
  %qi = arith.index_cast %qt : i32 to index
  %ki = arith.index_cast %kt : i32 to index
  %qd = tensor.extract %doc_ids[%qi] : tensor<?xi32>
  %kd = tensor.extract %doc_ids[%ki] : tensor<?xi32>
  %same = arith.cmpi eq, %qd, %kd : i32
  return %same : i1
}

func.func @packed_documents(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo_indptr: tensor<?xi32>, %kv_indptr: tensor<?xi32>,
    %doc_ids: tensor<?xi32>) -> tensor<?x8x64xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo_indptr, %kv_indptr : tensor<?xi32>, tensor<?xi32>)
      variant_args(%doc_ids, %kv_indptr : tensor<?xi32>, tensor<?xi32>)
      outs(%o0 : tensor<?x8x64xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @same_document} -> tensor<?x8x64xf16>
  return %o : tensor<?x8x64xf16>
}

// ------------------------------------------------------------------------------------
// 2. T5-style bucketed relative position bias from a learned table [heads, 32 buckets]:
// distances below 16 get a bucket each, longer ones share logarithmic buckets up to 128
// (causal, so the distance q_pos - kv_pos is >= 0).
func.func private @t5_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %table: tensor<8x32xf32>) -> f32 {
  %dist = arith.subi %qp, %kp : i32
  %exact = arith.constant 16 : i32
  %is_small = arith.cmpi slt, %dist, %exact : i32
  %bucket = scf.if %is_small -> i32 {
    scf.yield %dist : i32
  } else {
    // 16 + log(dist / 16) / log(128 / 16) * 16, at most 31
    %df = arith.sitofp %dist : i32 to f32
    %c16 = arith.constant 16.0 : f32
    %ratio = arith.divf %df, %c16 : f32
    %lr = math.log %ratio : f32
    %l8 = arith.constant 2.07944154 : f32
    %frac = arith.divf %lr, %l8 : f32
    %scaled = arith.mulf %frac, %c16 : f32
    %off = arith.fptosi %scaled : f32 to i32
    %big = arith.addi %exact, %off : i32
    %c31 = arith.constant 31 : i32
    %clamped = arith.minsi %big, %c31 : i32
    scf.yield %clamped : i32
  }
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %bucket : i32 to index
  %bias = tensor.extract %table[%h, %j] : tensor<8x32xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}

func.func @t5_relative_bias(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo_indptr: tensor<?xi32>, %kv_indptr: tensor<?xi32>,
    %table: tensor<8x32xf32>) -> tensor<?x8x64xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo_indptr, %kv_indptr : tensor<?xi32>, tensor<?xi32>)
      variant_args(%table : tensor<8x32xf32>) outs(%o0 : tensor<?x8x64xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @t5_bias} -> tensor<?x8x64xf16>
  return %o : tensor<?x8x64xf16>
}

// ------------------------------------------------------------------------------------
// 3. Soft cap and ALiBi composed (Gemma-style cap on an ALiBi model): the bias first,
// then cap * tanh(s / cap), as the built-in pos_encoding = alibi + logits_soft_cap do.
func.func private @alibi_then_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32,
                                  %kp: i32, %slopes: tensor<8xf32>, %cap: f32) -> f32 {
  %h = arith.index_cast %qh : i32 to index
  %slope = tensor.extract %slopes[%h] : tensor<8xf32>
  %d = arith.subi %kp, %qp : i32
  %df = arith.sitofp %d : i32 to f32
  %bias = arith.mulf %slope, %df : f32
  %biased = arith.addf %s, %bias : f32
  %x = arith.divf %biased, %cap : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %cap, %t : f32
  return %r : f32
}

func.func @alibi_soft_cap_prefill(%q: tensor<?x8x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo_indptr: tensor<?xi32>, %kv_indptr: tensor<?xi32>,
    %slopes: tensor<8xf32>, %cap: f32) -> tensor<?x8x64xf16>
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo_indptr, %kv_indptr : tensor<?xi32>, tensor<?xi32>)
      variant_args(%slopes, %cap : tensor<8xf32>, f32) outs(%o0 : tensor<?x8x64xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @alibi_then_cap} -> tensor<?x8x64xf16>
  return %o : tensor<?x8x64xf16>
}

// ------------------------------------------------------------------------------------
// 4. Attention sinks + sliding window (StreamingLLM): every query keeps the first
// `sinks` tokens and the last `window` + 1 tokens up to itself.
func.func private @sinks_and_window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %sinks: i32,
                                   %window: i32) -> i1 {
  %is_sink = arith.cmpi slt, %kp, %sinks : i32
  %lo = arith.subi %qp, %window : i32
  %in_window = arith.cmpi sge, %kp, %lo : i32
  %keep = arith.ori %is_sink, %in_window : i1
  return %keep : i1
}

func.func @streaming_prefill(%q: tensor<?x8x64xf16>, %qo_indptr: tensor<?xi32>,
    %k: tensor<?x16x2x64xf16>, %v: tensor<?x16x2x64xf16>, %kv_indptr: tensor<?xi32>,
    %kv_indices: tensor<?xi32>, %kv_last: tensor<?xi32>, %sinks: i32, %window: i32)
    -> tensor<?x8x64xf16> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %o = fi.paged_prefill q(%q : tensor<?x8x64xf16>) qo_indptr(%qo_indptr : tensor<?xi32>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%sinks, %window : i32, i32) outs(%o0 : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, mask_mod = @sinks_and_window}
      -> tensor<?x8x64xf16>
  return %o : tensor<?x8x64xf16>
}

// ------------------------------------------------------------------------------------
// 5. The same StreamingLLM mask in decode (one new token per request over its paged
// cache), where it matters most: the cache holds every token, attention reads the sinks
// and the window only. The mask's tile classifier proves the pages between them empty, so
// the decode kernel never reads them (on the GPU: neither copies nor computes).
func.func @streaming_decode(%q: tensor<?x8x64xf16>, %k: tensor<?x16x2x64xf16>,
    %v: tensor<?x16x2x64xf16>, %kv_indptr: tensor<?xi32>, %kv_indices: tensor<?xi32>,
    %kv_last: tensor<?xi32>, %sinks: i32, %window: i32) -> tensor<?x8x64xf16>
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x64xf16>
  %o = fi.paged_decode q(%q : tensor<?x8x64xf16>)
      kv(%k, %v : tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%sinks, %window : i32, i32) outs(%o0 : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       mask_mod = @sinks_and_window} -> tensor<?x8x64xf16>
  return %o : tensor<?x8x64xf16>
}
