// fi-to-llvm with plans-on-device meeting a kv-sharded op: the plan fi-materialize-plans
// makes for it is on the device, which fi-lower-to-runtime refuses by name (a kv-sharded
// plan exchanges a signature between the ranks on the host).
// RUN: not fi-opt %s --fi-to-llvm=plans-on-device=1 2>&1 | FileCheck %s
// RUN: fi-opt %s --fi-to-llvm | FileCheck %s --check-prefix=HOST
// CHECK: error: 'fi.decode_plan' op is `on_device` and has kv_shard: kv-sharded plans are made on the host (the plan exchanges a signature between the ranks); drop `on_device` (or lower without plans-on-device)
// HOST-DAG: llvm.call @_mlir_ciface_fi_rt_decode_plan_sharded(
// HOST-DAG: llvm.call @_mlir_ciface_fi_rt_decode_run_f16_f16(
func.func @pipeline(%q: tensor<?x32x128xf16>, %k: tensor<?x16x8x128xf16>,
    %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>, %o: tensor<?x32x128xf16>)
    -> tensor<?x32x128xf16> {
  %r = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%k, %k : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>,
       kv_shard = #fi.kv_shard<ranks = 4>} -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
