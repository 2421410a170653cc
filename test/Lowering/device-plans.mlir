// Plans made on the device: `on_device` decode and append plans lower to the
// fi_rt_*_plan_device adapters (same operands as the host ones), #fi.memory memory spaces
// are erased (the runtime takes plain pointers), and a plan on the device without tiles
// is an error.
// RUN: fi-opt %s --fi-lower-to-runtime | FileCheck %s

// CHECK-DAG: func.func private @fi_rt_decode_plan_device(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @fi_rt_append_plan_device(memref<1xi64>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x8x128xf16>, %{{.*}}: memref<?x8x128xf16>, %{{.*}}: memref<?x2x16x8x128xf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: index, %{{.*}}: memref<?x32x128xf16>)
// CHECK-NOT: #fi.memory
// CHECK: call @fi_rt_append_plan_device(%[[ASLOT:[^,]*]],
// CHECK: call @fi_rt_append_run_f16(%[[ASLOT]],
// CHECK: call @fi_rt_decode_plan_device(%[[DSLOT:[^,]*]], {{.*}}, %c16_i32{{[_0-9]*}}, %c64_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}, %c1_i32{{[_0-9]*}}) {fi.variant = "decode_tc_q16_kv64_split"}
// CHECK: call @fi_rt_decode_run_f16_f16(%[[DSLOT]],
// CHECK-NOT: call @fi_rt_decode_plan(
// CHECK-NOT: call @fi_rt_append_plan(
func.func @step(%q: memref<?x32x128xf16>, %kn: memref<?x8x128xf16>, %vn: memref<?x8x128xf16>,
    %cache: memref<?x2x16x8x128xf16>,
    %ap: memref<?xi32, #fi.memory<device>>, %ip: memref<?xi32, #fi.memory<device>>,
    %ix: memref<?xi32, #fi.memory<device>>, %lp: memref<?xi32, #fi.memory<device>>,
    %np: index, %o: memref<?x32x128xf16>) {
  %aplan = fi.append_plan append_indptr(%ap : memref<?xi32, #fi.memory<device>>)
      pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device}
  fi.append_paged_kv kv_new(%kn, %vn : memref<?x8x128xf16>, memref<?x8x128xf16>)
      append_indptr(%ap : memref<?xi32, #fi.memory<device>>)
      pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      plan(%aplan : !fi.plan<append>) outs(%cache : memref<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  %dplan = fi.decode_plan pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      num_pages(%np) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, on_device,
      num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16,
      tiles = #fi.tiles<q = 16, kv = 64, split_kv = true, cores = tensor>}
  fi.paged_decode q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>, memref<?xi32, #fi.memory<device>>)
      plan(%dplan : !fi.plan<decode>) outs(%o : memref<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

