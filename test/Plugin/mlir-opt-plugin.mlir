// fi inside Debian's stock mlir-opt-22: the dialect through --load-dialect-plugin, the
// passes and the fi-to-llvm pipeline through --load-pass-plugin (tools/fi-plugin). Passes
// of a plugin are named in --pass-pipeline: mlir-opt builds its --<pass> flags before it
// loads plugins.
// REQUIRES: fi-plugin
// RUN: mlir-opt %s --load-dialect-plugin=%fi_plugin --load-pass-plugin=%fi_plugin \
// RUN:   --pass-pipeline='builtin.module(fi-select-tiles)' | FileCheck %s --check-prefix=TILES
// RUN: mlir-opt %s --load-dialect-plugin=%fi_plugin --load-pass-plugin=%fi_plugin \
// RUN:   --pass-pipeline='builtin.module(fi-to-llvm)' | FileCheck %s --check-prefix=LLVM
// Without the pass plugin, the dialect parses but fi's passes are unknown:
// RUN: not mlir-opt %s --load-dialect-plugin=%fi_plugin \
// RUN:   --pass-pipeline='builtin.module(fi-select-tiles)' 2>&1 | FileCheck %s --check-prefix=NOPASS

// TILES-LABEL: func.func @decode
// TILES: fi.paged_decode
// TILES-SAME: tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>

// LLVM-LABEL: llvm.func @decode(
// LLVM: llvm.call @fi_rt_decode_plan({{.*}}) {fi.variant = "decode_tc_q16_kv32_split"}
// LLVM: llvm.call @fi_rt_decode_run_f16_f16({{.*}}) {fi.variant = "decode_tc_q16_kv32_split"}

// NOPASS: 'fi-select-tiles' does not refer to a registered pass or pass pipeline
func.func @decode(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %v: tensor<?x16x8x128xf16>, %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>,
    %o: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
