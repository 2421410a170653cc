// End to end, fp8 attention: a ragged fi.ragged_prefill with q, k and v in f8E4M3FN (per
// tensor scales q_scale / k_scale / v_scale and per-head head_scales), o in bf16 and LSE,
// compiled through fi-to-llvm into an executable, run with random inputs and ragged
// lengths, compared bit for bit with the runtime called directly with the same params
// (drivers/fp8.c). On the host backend the CUDA kernel's cases are the host's.
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/fp8.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: ragged_fp8_head_scales: 6 trials, 0 mismatches
// CHECK: E2E fp8: PASS

func.func @ragged_fp8_head_scales(%q: tensor<?x8x128xf8E4M3FN>, %k: tensor<?x2x128xf8E4M3FN>,
    %v: tensor<?x2x128xf8E4M3FN>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
    %qs: tensor<8xf32>, %ks: tensor<2xf32>, %vs: tensor<2xf32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x8x128xf8E4M3FN>
  %o0 = tensor.empty(%n) : tensor<?x8x128xbf16>
  %l0 = tensor.empty(%n) : tensor<?x8xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x8x128xf8E4M3FN>)
      kv(%k, %v : tensor<?x2x128xf8E4M3FN>, tensor<?x2x128xf8E4M3FN>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      head_scales(%qs, %ks, %vs : tensor<8xf32>, tensor<2xf32>, tensor<2xf32>)
      outs(%o0, %l0 : tensor<?x8x128xbf16>, tensor<?x8xf32>)
      {mask_mode = #fi.mask_mode<causal>, q_scale = 0.5 : f32, k_scale = 0.25 : f32,
       v_scale = 2.0 : f32} -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %lse : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
