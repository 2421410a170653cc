// fi-to-llvm with backend=cuda stops at the lowering with a clear error for what the
// CUDA kernels do not cover.
// RUN: not fi-opt %s --fi-to-llvm=backend=cuda 2>&1 | FileCheck %s
// CHECK: error: 'fi.decode_plan' op cannot run on the CUDA backend: decode: head_dim 80 has no CUDA kernel (64, 128 and 256 do)
func.func @hd80(%q: tensor<?x4x80xf16>, %k: tensor<?x16x4x80xf16>, %p: tensor<?xi32>,
    %i: tensor<?xi32>, %l: tensor<?xi32>, %o: tensor<?x4x80xf16>) -> tensor<?x4x80xf16> {
  %r = fi.paged_decode q(%q : tensor<?x4x80xf16>) kv(%k, %k : tensor<?x16x4x80xf16>, tensor<?x16x4x80xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x80xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x4x80xf16>
  return %r : tensor<?x4x80xf16>
}
