// fi-lower-to-runtime with backend=cuda refuses what has no device code: a variant beside a
// built-in soft cap, with a head_dim the variant kernels lack or a decode on CUDA-core
// tiles; and any variant when the variant kernels' bitcode is missing.
// RUN: fi-opt %s --split-input-file --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" -verify-diagnostics
// RUN: not fi-opt %s --split-input-file --fi-lower-to-runtime="backend=cuda variant-bitcode=%s.missing" 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: 'fi.paged_decode' op has a score_mod/mask_mod for the CUDA backend, which links it with the runtime's variant kernels, but their bitcode '{{.*}}variants-cuda-errors.mlir.missing' does not exist; build the runtime with the CUDA backend and clang-22

// The decode variant kernel is the warp-specialised decode kernel: head_dim 64 or 128, on
// tensor cores.
func.func private @keep5(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
func.func @decode_256(%q: memref<?x4x256xf16>, %kv: memref<?x2x16x2x256xf16>, %ip: memref<?xi32>,
                      %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x4x256xf16>) {
  // expected-error @+1 {{has a score_mod/mask_mod for the CUDA backend, whose variant kernels (the warp-specialised Hopper decode kernel) take head_dim 64 or 128}}
  fi.paged_decode q(%q : memref<?x4x256xf16>) kv(%kv : memref<?x2x16x2x256xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x256xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @keep5}
  return
}

// -----

func.func private @keep6(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
func.func @decode_cc(%q: memref<?x4x128xf16>, %kv: memref<?x2x16x2x128xf16>, %ip: memref<?xi32>,
                     %ix: memref<?xi32>, %lp: memref<?xi32>, %o: memref<?x4x128xf16>) {
  // expected-error @+1 {{which runs in the warp-specialised tensor-core decode kernel, but its tiles (its own or its plan's, shared with another op) are #fi.tiles<q = 1, kv = 32, split_kv = true, cores = cuda>}}
  fi.paged_decode q(%q : memref<?x4x128xf16>) kv(%kv : memref<?x2x16x2x128xf16>) pages(%ip, %ix, %lp : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mod = @keep6, tiles = #fi.tiles<q = 1, kv = 32, split_kv = true, cores = cuda>}
  return
}

// -----

func.func private @keep2(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>) indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x128xf16>) {mask_mod = @keep2}
  return
}

// -----

// Beside a variant the CUDA variant kernel has no built-in soft cap (nor window, ALiBi,
// custom mask): the variant expresses it.
func.func private @keep3(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
func.func @with_soft_cap(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                         %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x128xf16>) {
  // expected-error @+1 {{has a score_mod/mask_mod and a built-in soft cap, sliding window, ALiBi or custom mask: on the CUDA backend the variant kernel has none of those built in}}
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>) indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x128xf16>) {mask_mod = @keep3, logits_soft_cap = 30.0 : f32}
  return
}

// -----

// The variant kernels are the warp-specialised kernel's: head_dim 64 or 128, 16-bit q.
func.func private @keep4(%b: i32, %qh: i32, %qp: i32, %kp: i32) -> i1 {
  %t = arith.constant true
  return %t : i1
}
func.func @head_dim_256(%q: memref<?x4x256xf16>, %k: memref<?x2x256xf16>, %v: memref<?x2x256xf16>,
                        %qo: memref<?xi32>, %kvp: memref<?xi32>, %o: memref<?x4x256xf16>) {
  // expected-error @+1 {{has a score_mod/mask_mod for the CUDA backend, whose variant kernels (the warp-specialised Hopper prefill kernel) take head_dim 64 or 128 with f16 or bf16 q and the same KV type}}
  fi.ragged_prefill q(%q : memref<?x4x256xf16>) kv(%k, %v : memref<?x2x256xf16>, memref<?x2x256xf16>) indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) outs(%o : memref<?x4x256xf16>) {mask_mod = @keep4}
  return
}
