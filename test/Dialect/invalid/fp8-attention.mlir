// RUN: fi-opt %s -split-input-file -verify-diagnostics
// Rules of fp8 attention (q, k and v in f8E4M3FN, o in f16 or bf16; ragged and paged
// prefill only) and of the o_type its plans carry.

func.func @k_not_fp8(%q: tensor<?x4x128xf8E4M3FN>, %k: tensor<?x4x128xf16>, %qo: tensor<?xi32>, %o: tensor<?x4x128xf16>) -> tensor<?x4x128xf16> {
  // expected-error @+1 {{operand 'q' is f8E4M3FN but 'k' has element type 'f16': fp8 attention takes f8E4M3FN K and V too}}
  %r = fi.ragged_prefill q(%q : tensor<?x4x128xf8E4M3FN>) kv(%k, %k : tensor<?x4x128xf16>, tensor<?x4x128xf16>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x128xf16>) -> tensor<?x4x128xf16>
  return %r : tensor<?x4x128xf16>
}

// -----

func.func @o_f32(%q: tensor<?x4x128xf8E4M3FN>, %k: tensor<?x4x128xf8E4M3FN>, %qo: tensor<?xi32>, %o: tensor<?x4x128xf32>) -> tensor<?x4x128xf32> {
  // expected-error @+1 {{fp8 attention writes the shape of 'q' ('tensor<?x4x128xf8E4M3FN>') in f16 or bf16}}
  %r = fi.ragged_prefill q(%q : tensor<?x4x128xf8E4M3FN>) kv(%k, %k : tensor<?x4x128xf8E4M3FN>, tensor<?x4x128xf8E4M3FN>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x128xf32>) -> tensor<?x4x128xf32>
  return %r : tensor<?x4x128xf32>
}

// -----

func.func @decode_fp8_q(%q: tensor<4x32x128xf8E4M3FN>, %k: tensor<?x16x8x128xf8E4M3FN>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>) -> tensor<4x32x128xf16> {
  // expected-error @+1 {{fp8 queries (fp8 attention) are for ragged_prefill and paged_prefill; this op takes f16, bf16 or f32}}
  %r = fi.paged_decode q(%q : tensor<4x32x128xf8E4M3FN>) kv(%k, %k : tensor<?x16x8x128xf8E4M3FN>, tensor<?x16x8x128xf8E4M3FN>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>
  return %r : tensor<4x32x128xf16>
}

// -----

func.func @plan_without_o_type(%qo: tensor<?xi32>) {
  // expected-error @+1 {{q_type = f8E4M3FN needs o_type = f16 or bf16 (the output of fp8 attention)}}
  %p = fi.ragged_prefill_plan indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) {num_qo_heads = 4, num_kv_heads = 4, head_dim = 128, q_type = f8E4M3FN, kv_type = f8E4M3FN}
  return
}

// -----

func.func @plan_o_type_without_fp8(%qo: tensor<?xi32>) {
  // expected-error @+1 {{has o_type but q_type = 'f16': o_type is for fp8 attention (q_type = f8E4M3FN); drop it}}
  %p = fi.ragged_prefill_plan indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) {num_qo_heads = 4, num_kv_heads = 4, head_dim = 128, q_type = f16, kv_type = f16, o_type = f16}
  return
}

// -----

func.func @plan_fp8_kv_f16(%qo: tensor<?xi32>) {
  // expected-error @+1 {{q_type = f8E4M3FN with kv_type = 'f16': fp8 attention takes f8E4M3FN K and V}}
  %p = fi.ragged_prefill_plan indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) {num_qo_heads = 4, num_kv_heads = 4, head_dim = 128, q_type = f8E4M3FN, kv_type = f16, o_type = f16}
  return
}

// -----

func.func @decode_plan_fp8_q(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %np: index) {
  // expected-error @+1 {{q_type = 'f8E4M3FN' is not supported; use f16, bf16 or f32}}
  %p = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f8E4M3FN, kv_type = f8E4M3FN}
  return
}

// -----

func.func @plan_o_type_mismatch(%q: tensor<?x4x128xf8E4M3FN>, %k: tensor<?x4x128xf8E4M3FN>, %qo: tensor<?xi32>, %o: tensor<?x4x128xbf16>) -> tensor<?x4x128xbf16> {
  %p = fi.ragged_prefill_plan indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) {num_qo_heads = 4, num_kv_heads = 4, head_dim = 128, q_type = f8E4M3FN, kv_type = f8E4M3FN, o_type = f16}
  // expected-error @+1 {{operand 'plan' was made for o_type 'f16' but this op's 'o' has element type 'bf16'}}
  %r = fi.ragged_prefill q(%q : tensor<?x4x128xf8E4M3FN>) kv(%k, %k : tensor<?x4x128xf8E4M3FN>, tensor<?x4x128xf8E4M3FN>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) plan(%p : !fi.plan<ragged_prefill>) outs(%o : tensor<?x4x128xbf16>) -> tensor<?x4x128xbf16>
  return %r : tensor<?x4x128xbf16>
}

// -----

func.func @q_scale_zero(%q: tensor<?x4x128xf8E4M3FN>, %k: tensor<?x4x128xf8E4M3FN>, %qo: tensor<?xi32>, %o: tensor<?x4x128xf16>) -> tensor<?x4x128xf16> {
  // expected-error @+1 {{q_scale = 0 must be > 0}}
  %r = fi.ragged_prefill q(%q : tensor<?x4x128xf8E4M3FN>) kv(%k, %k : tensor<?x4x128xf8E4M3FN>, tensor<?x4x128xf8E4M3FN>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x128xf16>) {q_scale = 0.0 : f32} -> tensor<?x4x128xf16>
  return %r : tensor<?x4x128xf16>
}

// -----

func.func @head_scales_f16_q(%q: tensor<?x4x128xf16>, %k: tensor<?x4x128xf16>, %qo: tensor<?xi32>, %s: tensor<4xf32>, %o: tensor<?x4x128xf16>) -> tensor<?x4x128xf16> {
  // expected-error @+1 {{has head_scales but 'q' is 'f16': per-head scales are for fp8 attention}}
  %r = fi.ragged_prefill q(%q : tensor<?x4x128xf16>) kv(%k, %k : tensor<?x4x128xf16>, tensor<?x4x128xf16>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) head_scales(%s, %s, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<?x4x128xf16>) -> tensor<?x4x128xf16>
  return %r : tensor<?x4x128xf16>
}

// -----

func.func @head_scales_size(%q: tensor<?x8x128xf8E4M3FN>, %k: tensor<?x2x128xf8E4M3FN>, %qo: tensor<?xi32>, %qs: tensor<8xf32>, %ks: tensor<4xf32>, %o: tensor<?x8x128xf16>) -> tensor<?x8x128xf16> {
  // expected-error @+1 {{operand 'k_scale_heads' has type 'tensor<4xf32>' but must be [2] f32 (one scale per KV head)}}
  %r = fi.ragged_prefill q(%q : tensor<?x8x128xf8E4M3FN>) kv(%k, %k : tensor<?x2x128xf8E4M3FN>, tensor<?x2x128xf8E4M3FN>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>) head_scales(%qs, %ks, %ks : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<?x8x128xf16>) -> tensor<?x8x128xf16>
  return %r : tensor<?x8x128xf16>
}
