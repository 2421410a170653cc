// RUN: fi-opt %s | FileCheck %s
// RUN: fi-opt %s | fi-opt | FileCheck %s
// RUN: fi-opt %s --mlir-print-op-generic | fi-opt | FileCheck %s
// fi.paged_decode in every form: tensor (destination-passing) and memref, separate and
// combined K/V, NHD and HND, fp8 KV, dynamic batch, with and without lse and plan.

// LLaMA-style GQA decode: 32 q heads, 8 kv heads, head_dim 128, page 16, static batch.
// CHECK-LABEL: func.func @decode_tensor
// CHECK: %[[R:.*]]:2 = fi.paged_decode q(%arg0 : tensor<4x32x128xf16>) kv(%arg1, %arg2 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) pages(%arg3, %arg4, %arg5 : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%arg6, %arg7 : tensor<4x32x128xf16>, tensor<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @decode_tensor(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>,
                         %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>,
                         %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>)
    -> (tensor<4x32x128xf16>, tensor<4x32xf32>) {
  %r:2 = fi.paged_decode q(%q : tensor<4x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return %r#0, %r#1 : tensor<4x32x128xf16>, tensor<4x32xf32>
}

// Every attention attribute set; default-valued ones are elided when equal to the default.
// CHECK-LABEL: func.func @decode_all_attributes
// CHECK: fi.paged_decode
// CHECK-SAME: {bsr = #fi.bsr<block_rows = 4, block_cols = 16, layout = nhd>, k_scale = 5.000000e-01 : f32, logits_soft_cap = 5.000000e+01 : f32, pos_encoding = #fi.pos_encoding<rope_llama>, rope_scale = 2.000000e+00 : f32, rope_theta = 5.000000e+05 : f32, sm_scale = 1.250000e-01 : f32, tiles = #fi.tiles<q = 1, kv = 64, split_kv = true, cores = tensor>, v_scale = 2.500000e-01 : f32, window_left = 4096 : i64}
// CHECK-NOT: window_left = -1
// CHECK-LABEL: func.func @decode_defaults_elided
// CHECK: fi.paged_decode
// CHECK-SAME: {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
func.func @decode_all_attributes(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>,
                                 %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                                 %o: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 4, block_cols = 16, layout = nhd>,
       sm_scale = 0.125 : f32, logits_soft_cap = 50.0 : f32, window_left = 4096,
       pos_encoding = #fi.pos_encoding<rope_llama>, rope_scale = 2.0 : f32,
       rope_theta = 500000.0 : f32, k_scale = 0.5 : f32, v_scale = 0.25 : f32,
       tiles = #fi.tiles<q = 1, kv = 64, split_kv = true, cores = tensor>}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
func.func @decode_defaults_elided(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
                                  %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                                  %o: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, window_left = -1,
       logits_soft_cap = 0.0 : f32, rope_scale = 1.0 : f32, rope_theta = 10000.0 : f32,
       k_scale = 1.0 : f32, v_scale = 1.0 : f32, pos_encoding = #fi.pos_encoding<none>}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// HND layout: [pages, kv_heads, page_size, head_dim]; MQA (1 kv head); bf16.
// CHECK-LABEL: func.func @decode_hnd_mqa
// CHECK: fi.paged_decode q(%arg0 : tensor<?x8x64xbf16>) kv(%arg1, %arg2 : tensor<?x1x32x64xbf16>, tensor<?x1x32x64xbf16>)
// CHECK-SAME: layout = hnd
func.func @decode_hnd_mqa(%q: tensor<?x8x64xbf16>, %k: tensor<?x1x32x64xbf16>, %v: tensor<?x1x32x64xbf16>,
                          %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                          %o: tensor<?x8x64xbf16>) -> tensor<?x8x64xbf16> {
  %r = fi.paged_decode q(%q : tensor<?x8x64xbf16>)
      kv(%k, %v : tensor<?x1x32x64xbf16>, tensor<?x1x32x64xbf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x8x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 32, layout = hnd>} -> tensor<?x8x64xbf16>
  return %r : tensor<?x8x64xbf16>
}

// Combined K/V in HND: [pages, 2, kv_heads, page_size, head_dim]; f32 everywhere; e5m2 variant.
// CHECK-LABEL: func.func @decode_combined_hnd
// CHECK: kv(%arg1 : tensor<?x2x4x16x256xf32>)
// CHECK: kv(%arg5 : tensor<?x2x4x16x256xf8E5M2>)
func.func @decode_combined_hnd(%q: tensor<?x16x256xf32>, %kv: tensor<?x2x4x16x256xf32>,
                               %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                               %kv8: tensor<?x2x4x16x256xf8E5M2>,
                               %o: tensor<?x16x256xf32>) -> (tensor<?x16x256xf32>, tensor<?x16x256xf32>) {
  %r = fi.paged_decode q(%q : tensor<?x16x256xf32>) kv(%kv : tensor<?x2x4x16x256xf32>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x16x256xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = hnd>} -> tensor<?x16x256xf32>
  %r8 = fi.paged_decode q(%q : tensor<?x16x256xf32>) kv(%kv8 : tensor<?x2x4x16x256xf8E5M2>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x16x256xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = hnd>, k_scale = 0.02 : f32,
       v_scale = 0.03 : f32} -> tensor<?x16x256xf32>
  return %r, %r8 : tensor<?x16x256xf32>, tensor<?x16x256xf32>
}

// Memref form: writes into outs, no results; strided buffers are fine.
// CHECK-LABEL: func.func @decode_memref
// CHECK: fi.paged_decode q(%arg0 : memref<?x32x128xf16, strided<[4096, 128, 1], offset: ?>>) kv(%arg1, %arg2 : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>) pages(%arg3, %arg4, %arg5 : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%arg6, %arg7 : memref<?x32x128xf16>, memref<?x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
// CHECK-NOT: ->
// CHECK: return
func.func @decode_memref(%q: memref<?x32x128xf16, strided<[4096, 128, 1], offset: ?>>,
                         %k: memref<?x16x8x128xf16>, %v: memref<?x16x8x128xf16>,
                         %ip: memref<?xi32>, %ix: memref<?xi32>, %lp: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  fi.paged_decode q(%q : memref<?x32x128xf16, strided<[4096, 128, 1], offset: ?>>)
      kv(%k, %v : memref<?x16x8x128xf16>, memref<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// A plan from fi.decode_plan feeds the op.
// CHECK-LABEL: func.func @decode_with_plan
// CHECK: %[[P:.*]] = fi.decode_plan pages(%arg3, %arg4, %arg5 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%arg7) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, head_dim = 128 : i64, kv_type = f16, num_kv_heads = 8 : i64, num_qo_heads = 32 : i64, q_type = f16}
// CHECK: fi.paged_decode {{.*}} plan(%[[P]] : !fi.plan<decode>) outs(%arg6 : tensor<?x32x128xf16>)
func.func @decode_with_plan(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>,
                            %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                            %o: tensor<?x32x128xf16>, %np: index) -> tensor<?x32x128xf16> {
  %p = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      plan(%p : !fi.plan<decode>) outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
