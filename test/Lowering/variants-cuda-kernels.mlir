// fi-lower-to-runtime with backend=cuda on a paged decode and on block-sparse attention with
// a variant: the device module keeps the kernel of the op's kind, head_dim, dtype and
// (decode) position encoding -- the warp-specialised decode kernel (three parameters:
// DecodeParams, TwsMaps and the variant's block) or the block-sparse instance of the
// prefill kernel -- and the run passes the image; a decode without tiles gets tensor-core
// ones from fi-select-tiles whatever its group (the variant kernel is the tensor-core one).
// (The lowering only checks that the bitcode exists: this file stands in for it.)
// RUN: fi-opt %s --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s
// RUN: fi-opt %s --fi-select-tiles | FileCheck %s --check-prefix=TILES

// CHECK-LABEL: func.func @decode_rope
// CHECK: %[[IMAGE:.*]] = llvm.mlir.addressof @__fi_variant_image_0 : !llvm.ptr
// CHECK: call @fi_rt_decode_run_bf16_bf16({{.*}}, %[[IMAGE]])
// CHECK-LABEL: func.func @decode_plain_f16
// CHECK: %[[IMAGE1:.*]] = llvm.mlir.addressof @__fi_variant_image_1 : !llvm.ptr
// CHECK: call @fi_rt_decode_run_f16_f16({{.*}}, %[[IMAGE1]])
// CHECK-LABEL: func.func @bsr
// CHECK: %[[IMAGE2:.*]] = llvm.mlir.addressof @__fi_variant_image_2 : !llvm.ptr
// CHECK: call @fi_rt_block_sparse_run_f16_f16({{.*}}, %[[IMAGE2]]
// CHECK: gpu.module @__fi_variant_device_0
// CHECK-DAG: llvm.func @fi_variant_v8_decode_hd64_bf16_rope(!llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK: gpu.module @__fi_variant_device_1
// CHECK-DAG: llvm.func @fi_variant_v8_decode_hd128_f16(!llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK: gpu.module @__fi_variant_device_2
// CHECK-DAG: llvm.func @fi_variant_v8_block_sparse_hd64_f16(!llvm.ptr, !llvm.ptr)

// TILES-LABEL: func.func @decode_rope
// TILES: tiles = #fi.tiles<q = 16, kv = {{[0-9]+}}, split_kv = {{.*}}, cores = tensor>
// TILES-LABEL: func.func @decode_plain_f16
// TILES: tiles = #fi.tiles<q = 16, kv = {{[0-9]+}}, split_kv = {{.*}}, cores = tensor>
func.func private @bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32) -> f32 {
  %c = arith.constant 0.5 : f32
  %r = arith.addf %s, %c : f32
  return %r : f32
}
func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}
// MHA at head_dim 64 (the heuristics' CUDA-core choice without a variant), RoPE, pages of 8.
func.func @decode_rope(%q: memref<?x2x64xbf16>, %k: memref<?x8x2x64xbf16>,
                       %v: memref<?x8x2x64xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                       %lp: memref<?xi32>, %o: memref<?x2x64xbf16>) {
  fi.paged_decode q(%q : memref<?x2x64xbf16>) kv(%k, %v : memref<?x8x2x64xbf16>, memref<?x8x2x64xbf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x2x64xbf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 8, layout = nhd>,
       pos_encoding = #fi.pos_encoding<rope_llama>, score_mod = @bias}
  return
}
func.func @decode_plain_f16(%q: memref<?x8x128xf16>, %k: memref<?x16x2x128xf16>,
                            %v: memref<?x16x2x128xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                            %lp: memref<?xi32>, %w: i32, %o: memref<?x8x128xf16>) {
  fi.paged_decode q(%q : memref<?x8x128xf16>) kv(%k, %v : memref<?x16x2x128xf16>, memref<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) variant_args(%w : i32)
      outs(%o : memref<?x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @window}
  return
}
func.func @bsr(%q: memref<?x4x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>,
               %ip: memref<?xi32>, %ix: memref<?xi32>, %w: i32, %o: memref<?x4x64xf16>) {
  fi.block_sparse_attention q(%q : memref<?x4x64xf16>)
      kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>)
      blocks(%ip, %ix : memref<?xi32>, memref<?xi32>) variant_args(%w : i32)
      outs(%o : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 64, block_cols = 64, layout = nhd>,
       mask_mode = #fi.mask_mode<causal>, mask_mod = @window}
  return
}
