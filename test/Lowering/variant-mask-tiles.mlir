// fi-lower-to-runtime gives each mask_mod a tile classifier (lowering/lib/MaskTiles.cpp):
// from the mask's body, by interval arithmetic, a function of (batch, qo_head first /
// last, q_pos first / last, kv_pos first / last, captures...) that says whether the mask
// drops every pair of the rectangle (0, FI_MASK_TILE_EMPTY), keeps every pair (1, FULL)
// or neither is proven (2, PARTIAL). The host run gets it as a third hook; backend=cuda
// also puts it in the device module as fi_variant_mask_tile (the kernels skip EMPTY tiles
// and call the mask only on PARTIAL ones). Its soundness is tested end to end by
// test/E2E/mask_tiles.mlir.
// RUN: fi-opt %s --fi-lower-to-runtime="backend=cuda variant-bitcode=%s" | FileCheck %s

// doc[q_pos] == doc[kv_pos] over a captured table: each read's index range, clamped into
// the table as the variant's reads are, bounds the value by the [min, max] of the entries
// it covers (a scan of at most 512, in the entries' own type; an empty table reads 0); then
// the equality of two ranges (overlap: may be kept; one equal value each: must be). A
// unit-stride table and a range of at least 16 entries: 16 loads a step, the last step moved
// back to end at the range's last entry, no clamps; else 8 a step, indices clamped.
// CHECK-LABEL: func.func private @__fi_mask_tiles_same_doc_0(
// CHECK-SAME: %[[DOC:[^:]*]]: memref<?xi32, strided<[?], offset: ?>>) -> i32
// CHECK: %[[DIM:.*]] = memref.dim %[[DOC]]
// CHECK: %[[SCAN:.*]] = arith.andi
// CHECK: scf.if %[[SCAN]] -> (i64, i64) {
// CHECK: %[[FROM:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT: %[[HI:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[END:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %{{.*}}, %[[OFF:.*]], %[[SIZE:.*]], %[[STRIDE:.*]] = memref.extract_strided_metadata %[[DOC]]
// CHECK: %[[UNIT:.*]] = arith.cmpi eq, %[[STRIDE]], %c1{{[_0-9]*}} : index
// CHECK: %[[LONG:.*]] = arith.cmpi sle, %c15_i64{{[_0-9]*}}, %{{.*}} : i64
// CHECK: %[[FAST:.*]] = arith.andi %[[UNIT]], %[[LONG]] : i1
// CHECK: scf.if %[[FAST]] -> (i32, i32) {
// CHECK-NEXT: %[[DENSE:.*]] = memref.reinterpret_cast %[[DOC]] to offset: [%[[OFF]]], sizes: [%[[SIZE]]], strides: [1]
// CHECK: scf.for %[[I:.*]] = %[[FROM]] to %[[END]] step %c16 iter_args(%[[MIN:.*]] = %c2147483647_i32, %[[MAX:.*]] = %c-2147483648_i32) -> (i32, i32) {
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[END]], %c16
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[I]], %[[LAST]] : index
// CHECK-NEXT: %[[E:.*]] = memref.load %[[DENSE]][%[[B]]]
// CHECK-NEXT: %[[MIN1:.*]] = arith.minsi %[[MIN]], %[[E]] : i32
// CHECK-NEXT: %[[MAX1:.*]] = arith.maxsi %[[MAX]], %[[E]] : i32
// CHECK-NEXT: %c1{{.*}} = arith.constant 1 : index
// CHECK-NEXT: %[[B1:.*]] = arith.addi %[[B]], %c1{{.*}} : index
// CHECK-NEXT: %[[E1:.*]] = memref.load %[[DENSE]][%[[B1]]]
// CHECK-NEXT: arith.minsi %[[MIN1]], %[[E1]] : i32
// CHECK: } else {
// CHECK: scf.for %[[J:.*]] = %[[FROM]] to %[[END]] step %c8 iter_args(
// CHECK-NEXT: %[[F:.*]] = memref.load %[[DOC]][%[[J]]]
// CHECK: %[[J1:.*]] = arith.addi %[[J]], %c1{{.*}} : index
// CHECK-NEXT: %[[J1C:.*]] = arith.minsi %[[J1]], %[[HI]] : index
// CHECK-NEXT: memref.load %[[DOC]][%[[J1C]]]
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK-NEXT: arith.extsi %{{.*}} : i32 to i64
// CHECK: } else {
// CHECK-NEXT: scf.yield %c-2147483648_i64{{.*}}, %c2147483647_i64{{.*}} : i64, i64
// CHECK: scf.if
// CHECK: return

// The host hook unpacks the captured value and calls the classifier.
// CHECK-LABEL: func.func private @__fi_mask_tile_hook_1(
// CHECK-SAME: %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK: call @__fi_mask_tiles_by_region_0(
// A mask whose value comes out of an op with regions (scf.if) proves nothing: the
// classifier returns PARTIAL whatever the tile.
// CHECK-LABEL: func.func private @__fi_mask_tiles_by_region_0(
// CHECK: %[[PART:.*]] = arith.select %true{{.*}}, %c2_i32, %c1_i32 : i32
// CHECK-NEXT: %[[CLS:.*]] = arith.select %true{{.*}}, %[[PART]], %c0_i32 : i32
// CHECK-NEXT: return %[[CLS]] : i32

// kv_pos >= q_pos - w: q_pos - w is [q_first - w, q_last - w] (sound for i32: a result
// outside i32 would widen to the whole range); the pair may be kept where q_first - w <=
// kv_last and dropped where kv_first < q_last - w.
// CHECK-LABEL: func.func private @__fi_mask_tiles_window_0(
// CHECK-SAME: %[[B:[^:]*]]: i32, %[[H0:[^:]*]]: i32, %[[H1:[^:]*]]: i32, %[[Q0:[^:]*]]: i32, %[[Q1:[^:]*]]: i32, %[[K0:[^:]*]]: i32, %[[K1:[^:]*]]: i32, %[[W:[^:]*]]: i32) -> i32
// CHECK-DAG: %[[Q0W:.*]] = arith.extsi %[[Q0]] : i32 to i64
// CHECK-DAG: %[[Q1W:.*]] = arith.extsi %[[Q1]] : i32 to i64
// CHECK-DAG: %[[K0W:.*]] = arith.extsi %[[K0]] : i32 to i64
// CHECK-DAG: %[[K1W:.*]] = arith.extsi %[[K1]] : i32 to i64
// CHECK-DAG: %[[WW:.*]] = arith.extsi %[[W]] : i32 to i64
// CHECK: %[[HI:.*]] = arith.subi %[[Q1W]], %[[WW]] : i64
// CHECK: %[[LO:.*]] = arith.subi %[[Q0W]], %[[WW]] : i64
// CHECK: %[[LOF:.*]] = arith.select %[[FITS:.*]], %[[LO]], %c-2147483648_i64{{.*}} : i64
// CHECK: %[[HIF:.*]] = arith.select %[[FITS]], %[[HI]], %c2147483647_i64{{.*}} : i64
// CHECK: %[[MAYDROP:.*]] = arith.cmpi slt, %[[K0W]], %[[HIF]] : i64
// CHECK: %[[MAYKEEP:.*]] = arith.cmpi sle, %[[LOF]], %[[K1W]] : i64
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[C1:.*]] = arith.constant 1 : i32
// CHECK: %[[C2:.*]] = arith.constant 2 : i32
// CHECK: %[[PF:.*]] = arith.select %[[MAYDROP]], %[[C2]], %[[C1]] : i32
// CHECK: %[[CLS:.*]] = arith.select %[[MAYKEEP]], %[[PF]], %[[C0]] : i32
// CHECK: return %[[CLS]] : i32

// The run passes score_mod (none here), mask_mod and the classifier.
// CHECK-LABEL: func.func @ragged
// CHECK: %[[NOSCORE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[MF:.*]] = constant @__fi_mask_mod_hook_0
// CHECK: %[[MP:.*]] = builtin.unrealized_conversion_cast %[[MF]]
// CHECK: %[[TF:.*]] = constant @__fi_mask_tile_hook_0
// CHECK: %[[TP:.*]] = builtin.unrealized_conversion_cast %[[TF]]
// CHECK: call @fi_rt_ragged_prefill_run_f16_f16({{.*}}, %[[NOSCORE]], %[[MP]], %[[TP]], %{{.*}}, %{{.*}}, %{{.*}})

// On the device: the window's classifier as fi_variant_mask_tile; an op without a mask
// would get one that says FULL.
// With it, whether the mask reads a captured table (the prefill kernel then calls the mask
// per pair from a rolled loop): no for the window, yes for the documents.
// CHECK: gpu.module @__fi_variant_device_0
// CHECK: func.func @fi_variant_mask_tile(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK: call @__fi_mask_tiles_window_1(
// CHECK: func.func @fi_variant_mask_reads_tables() -> i32
// CHECK-NEXT: %[[NO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: return %[[NO]]
// CHECK: gpu.module @__fi_variant_device_1
// CHECK: func.func @fi_variant_mask_tile(
// CHECK: call @__fi_mask_tiles_by_region_1(
// CHECK: gpu.module @__fi_variant_device_2
// CHECK: func.func @fi_variant_mask_reads_tables() -> i32
// CHECK-NEXT: %[[YES:.*]] = arith.constant 1 : i32
// CHECK-NEXT: return %[[YES]]

func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %lo = arith.subi %qp, %w : i32
  %keep = arith.cmpi sge, %kp, %lo : i32
  return %keep : i1
}
func.func private @by_region(%b: i32, %qh: i32, %qp: i32, %kp: i32, %w: i32) -> i1 {
  %c0 = arith.constant 0 : i32
  %h0 = arith.cmpi eq, %qh, %c0 : i32
  %keep = scf.if %h0 -> (i1) {
    %k = arith.cmpi sge, %kp, %qp : i32
    scf.yield %k : i1
  } else {
    %t = arith.constant true
    scf.yield %t : i1
  }
  return %keep : i1
}
func.func private @same_doc(%b: i32, %qh: i32, %qp: i32, %kp: i32, %doc: memref<?xi32>) -> i1 {
  %qi = arith.index_cast %qp : i32 to index
  %ki = arith.index_cast %kp : i32 to index
  %qd = memref.load %doc[%qi] : memref<?xi32>
  %kd = memref.load %doc[%ki] : memref<?xi32>
  %keep = arith.cmpi eq, %qd, %kd : i32
  return %keep : i1
}
func.func @ragged(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %w: i32, %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%w : i32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @window}
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%w : i32)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @by_region}
  return
}
func.func @documents(%q: memref<?x4x128xf16>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>,
                     %qo: memref<?xi32>, %kvp: memref<?xi32>, %doc: memref<?xi32>,
                     %o: memref<?x4x128xf16>) {
  fi.ragged_prefill q(%q : memref<?x4x128xf16>) kv(%k, %v : memref<?x2x128xf16>, memref<?x2x128xf16>)
      indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>) variant_args(%doc : memref<?xi32>)
      outs(%o : memref<?x4x128xf16>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @same_doc}
  return
}
