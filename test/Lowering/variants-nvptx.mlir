// The NVPTX path of a variant, stage by stage: fi-lower-to-runtime (backend=cuda) puts the
// variant into a gpu.module as the kernels' hooks; convert-gpu-to-nvvm lowers it to the
// LLVM dialect (math.tanh -> libdevice's __nv_tanhf, or with fastmath<afn> the SFU's
// tanh.approx); gpu-module-to-binary links it with
// the runtime's variant kernels' bitcode, optimises the whole (the hook inlined into every
// kernel) and emits PTX. fi-to-llvm=backend=cuda runs the same steps, then ptxas.
// REQUIRES: fi-variant-bitcode
// RUN: fi-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --fi-lower-to-runtime="backend=cuda variant-bitcode=%fi_variant_bitcode" -o %t.lowered.mlir
// RUN: fi-opt %t.lowered.mlir --pass-pipeline="builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,reconcile-unrealized-casts))" -o %t.nvvm.mlir
// RUN: FileCheck %s --check-prefix=NVVM --input-file=%t.nvvm.mlir
// RUN: fi-opt %t.nvvm.mlir --gpu-module-to-binary="format=isa toolkit=%fi_cuda_toolkit" | FileCheck %s --check-prefix=PTX
// RUN: fi-opt %s --fi-to-llvm="backend=cuda variant-bitcode=%fi_variant_bitcode cuda-toolkit=%fi_cuda_toolkit" | FileCheck %s --check-prefix=IMAGE

// NVVM: gpu.module @__fi_variant_device_0
// NVVM-DAG: llvm.func @fi_variant_score_mod(%{{.*}}: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> f32
// NVVM-DAG: llvm.call @__nv_tanhf(
// NVVM-DAG: llvm.intr.tanh(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>}
// NVVM-DAG: llvm.mlir.constant(1.234500e+00 : f32)

// The op's kernel (head_dim 128, f16) only, with the hook's constant inlined (added once
// per unrolled logit; no call of the hook). (A returned product with it would be no work
// per logit: variants-score-scales.mlir.)
// PTX: .target sm_90a
// PTX-NOT: call.uni
// PTX-NOT: .entry fi_variant_v8_prefill_hd64
// PTX: .entry fi_variant_v8_prefill_hd128_f16(
// PTX-NOT: .entry
// PTX: tanh.approx.f32
// PTX-COUNT-64: 0f3F9E0419

// The program: the cubin (ELF) behind its byte count in the image the run passes.
// IMAGE: llvm.mlir.global internal constant @__fi_variant_image_0("{{.*}}\7FELF
// IMAGE-NOT: gpu.module
// IMAGE: llvm.mlir.addressof @__fi_variant_image_0

func.func private @scaled_soft_cap(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                                   %cap: f32) -> f32 {
  %x = arith.divf %s, %cap : f32
  %t = math.tanh %x : f32
  %t2 = math.tanh %t fastmath<afn> : f32
  %r = arith.mulf %cap, %t2 : f32
  %k = arith.constant 1.2345 : f32
  %y = arith.addf %r, %k : f32
  return %y : f32
}
func.func @ragged(%q: tensor<?x4x128xf16>, %k: tensor<?x2x128xf16>, %v: tensor<?x2x128xf16>,
                  %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %cap: f32) -> tensor<?x4x128xf16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x128xf16>
  %o = fi.ragged_prefill q(%q : tensor<?x4x128xf16>)
      kv(%k, %v : tensor<?x2x128xf16>, tensor<?x2x128xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) variant_args(%cap : f32)
      outs(%o0 : tensor<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, score_mod = @scaled_soft_cap} -> tensor<?x4x128xf16>
  return %o : tensor<?x4x128xf16>
}
