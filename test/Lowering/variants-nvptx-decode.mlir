// The NVPTX path of a decode variant: fi-lower-to-runtime (backend=cuda) keeps the
// warp-specialised decode kernel of the op (head_dim 128, f16, no RoPE); gpu-module-to-binary
// links it with the variant, optimises the whole and emits PTX in which the score_mod (its
// constant once per logit of the lane: 4 per 16-key sub-tile), the mask_mod and the mask's
// tile classifier are inlined (no call); fi-to-llvm=backend=cuda embeds the cubin.
// REQUIRES: fi-variant-bitcode
// RUN: fi-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --fi-lower-to-runtime="backend=cuda variant-bitcode=%fi_variant_bitcode" -o %t.lowered.mlir
// RUN: fi-opt %t.lowered.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts))" -o %t.nvvm.mlir
// RUN: fi-opt %t.nvvm.mlir --gpu-module-to-binary="format=isa toolkit=%fi_cuda_toolkit" | FileCheck %s --check-prefix=PTX
// RUN: fi-opt %s --fi-to-llvm="backend=cuda variant-bitcode=%fi_variant_bitcode cuda-toolkit=%fi_cuda_toolkit" | FileCheck %s --check-prefix=IMAGE

// PTX: .target sm_90a
// PTX-NOT: call.uni
// PTX-NOT: .entry fi_variant_v8_prefill
// PTX: .entry fi_variant_v8_decode_hd128_f16(
// PTX-NOT: .entry
// PTX-COUNT-4: 0f3F9E0419

// IMAGE: llvm.mlir.global internal constant @__fi_variant_image_0("{{.*}}\7FELF
// IMAGE: llvm.mlir.addressof @__fi_variant_image_0
// IMAGE: llvm.call @fi_rt_decode_run_f16_f16(

func.func private @bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                        %w: i32) -> f32 {
  %k = arith.constant 1.2345 : f32
  %y = arith.addf %s, %k : f32
  return %y : f32
}
func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}
func.func @decode(%q: tensor<?x8x128xf16>, %k: tensor<?x16x2x128xf16>,
                  %v: tensor<?x16x2x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
                  %lp: tensor<?xi32>, %w: i32) -> tensor<?x8x128xf16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x8x128xf16>
  %o = fi.paged_decode q(%q : tensor<?x8x128xf16>)
      kv(%k, %v : tensor<?x16x2x128xf16>, tensor<?x16x2x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      variant_args(%w : i32) outs(%o0 : tensor<?x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       score_mod = @bias, mask_mod = @window} -> tensor<?x8x128xf16>
  return %o : tensor<?x8x128xf16>
}
