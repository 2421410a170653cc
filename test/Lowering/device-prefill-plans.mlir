// Prefill plans made on the device: the ops round-trip, `on_device` paged and ragged plans
// lower to the fi_rt_*_prefill_plan_device adapters with their row bounds (i64) where the
// host plans pass mask_indptr, and memory spaces are erased.
// RUN: fi-opt %s | fi-opt | FileCheck %s --check-prefix=RT
// RUN: fi-opt %s --fi-lower-to-runtime | FileCheck %s

// RT-LABEL: func.func @step
// RT: fi.paged_prefill_plan qo_indptr(%{{.*}} : memref<?xi32, #fi.memory<device>>) pages({{.*}}) num_pages(%{{.*}}) max_qo_rows(%{{.*}}) {{{.*}}on_device
// RT: fi.ragged_prefill_plan indptr({{.*}}) max_rows(%{{.*}}, %{{.*}}) {{{.*}}on_device

// CHECK-DAG: func.func private @fi_rt_paged_prefill_plan_device(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @fi_rt_ragged_prefill_plan_device(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @step
// CHECK-NOT: #fi.memory
// CHECK: %[[QROWS:.*]] = arith.index_cast %[[NQ:.*]] : index to i64
// CHECK: call @fi_rt_paged_prefill_plan_device(%[[PSLOT:[^,]*]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[QROWS]],
// CHECK-SAME: {fi.variant = "prefill_wg_q128_kv128_split"}
// CHECK: call @fi_rt_paged_prefill_run_f16_f16(%[[PSLOT]],
// CHECK: call @fi_rt_ragged_prefill_plan_device(%[[RSLOT:[^,]*]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %c32_i32
// CHECK: call @fi_rt_ragged_prefill_run_f16_f16(%[[RSLOT]],
// CHECK-NOT: call @fi_rt_paged_prefill_plan(
// CHECK-NOT: call @fi_rt_ragged_prefill_plan(
func.func @step(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
    %k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>,
    %qo: memref<?xi32, #fi.memory<device>>, %ip: memref<?xi32, #fi.memory<device>>,
    %ix: memref<?xi32, #fi.memory<device>>, %lp: memref<?xi32, #fi.memory<device>>,
    %kvi: memref<?xi32, #fi.memory<device>>, %np: index, %nq: index, %nk: index,
    %o: memref<?x32x128xf16>, %o2: memref<?x32x128xf16>) {
  %pplan = fi.paged_prefill_plan qo_indptr(%qo : memref<?xi32, #fi.memory<device>>)
      pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      num_pages(%np) max_qo_rows(%nq)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>, on_device,
       num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16,
       tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
  fi.paged_prefill q(%q : memref<?x32x128xf16>) qo_indptr(%qo : memref<?xi32, #fi.memory<device>>)
      kv(%cache : memref<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      plan(%pplan : !fi.plan<paged_prefill>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, mask_mode = #fi.mask_mode<causal>}
  %rplan = fi.ragged_prefill_plan indptr(%qo, %kvi : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      max_rows(%nq, %nk)
      {mask_mode = #fi.mask_mode<causal>, on_device, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,
       q_type = f16, kv_type = f16, tiles = #fi.tiles<q = 128, kv = 128, split_kv = true, cores = wgmma>}
  fi.ragged_prefill q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x8x128xf16>, memref<?x8x128xf16>)
      indptr(%qo, %kvi : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      plan(%rplan : !fi.plan<ragged_prefill>) outs(%o2 : memref<?x32x128xf16>)
      {mask_mode = #fi.mask_mode<causal>}
  return
}
