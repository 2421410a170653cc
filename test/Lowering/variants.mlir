// fi-lower-to-runtime of attention variants (the host code; variants-cuda.mlir: the device
// code backend=cuda adds): each op's score_mod / mask_mod becomes a
// hook with the runtime's C signature (fi_score_mod_fn / fi_mask_mod_fn) that unpacks the
// captures block and calls a copy of the user's function whose captured-tensor reads
// are clamped into bounds; a mask_mod also gets its tile classifier (variant-mask-tiles.mlir);
// the run adapter gets the three hooks and the block.
// RUN: fi-opt %s --fi-lower-to-runtime | FileCheck %s

// The captures block: 7 slots (table: pointer, offset, 2 sizes, 2 strides; cap: 1).
// CHECK-LABEL: func.func private @__fi_mask_mod_hook_0(
// CHECK-SAME: %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %[[BLK:.*]]: !llvm.ptr) -> i32 attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK: %[[P:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// The table as the descriptor it is (sizes, offset and strides as captured: a slice keeps
// its own).
// CHECK: %[[TABLE:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[CAPP:.*]] = llvm.getelementptr %[[BLK]][6] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[CAP:.*]] = llvm.load %[[CAPP]] : !llvm.ptr -> f32
// CHECK: %[[KEEP:.*]] = call @__fi_variant_window_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TABLE]], %[[CAP]])
// CHECK: %[[K32:.*]] = arith.extui %[[KEEP]] : i1 to i32
// CHECK: return %[[K32]] : i32
// CHECK-LABEL: func.func private @__fi_score_mod_hook_0(%{{.*}}: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK: call @__fi_variant_t5_bias_0(
// The copy clamps the table read into [0, dim - 1] and reads 0 from an empty table: from
// a one-element zero constant whose view it selects instead of the table (no branch).
// CHECK: memref.global "private" constant @__fi_zero_f32 : memref<1xf32> = dense<0.000000e+00>
// CHECK-LABEL: func.func private @__fi_variant_t5_bias_0
// CHECK-SAME: %[[T:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[D0:.*]] = memref.dim %[[T]], %{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[LAST0:.*]] = arith.subi %[[D0]], %{{.*}} : index
// CHECK: %[[LO0:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
// CHECK: %[[I0:.*]] = arith.minsi %[[LO0]], %[[LAST0]] : index
// CHECK: %[[HAS0:.*]] = arith.cmpi sgt, %[[D0]], %{{.*}} : index
// CHECK: %[[I1:.*]] = arith.minsi
// CHECK: %[[NONEMPTY:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK: %[[ZG:.*]] = memref.get_global @__fi_zero_f32 : memref<1xf32>
// CHECK: %[[ZV:.*]] = memref.reinterpret_cast %[[ZG]] to offset: [%{{.*}}], sizes: [%[[ONE:.*]], %[[ONE]]], strides: [%[[Z:.*]], %[[Z]]] : memref<1xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[SRC:.*]] = arith.select %[[NONEMPTY]], %[[T]], %[[ZV]] : memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[J0:.*]] = arith.select %[[NONEMPTY]], %[[I0]], %{{.*}} : index
// CHECK: %[[J1:.*]] = arith.select %[[NONEMPTY]], %[[I1]], %{{.*}} : index
// CHECK: memref.load %[[SRC]][%[[J0]], %[[J1]]] : memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-NOT: scf.if
// The user's functions stay as they were.
// CHECK-LABEL: func.func private @t5_bias
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x32xf32>
// At the op: the block in the entry block; the hooks' addresses; the table's aligned pointer, offset, sizes and
// strides, the cap.
// CHECK-LABEL: func.func @ragged
// CHECK-NEXT: %[[N:.*]] = llvm.mlir.constant(7 : i64) : i64
// CHECK-NEXT: %[[BLOCK:.*]] = llvm.alloca %[[N]] x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK: scf.for
// CHECK: %[[SF:.*]] = func.constant @__fi_score_mod_hook_0
// CHECK: %[[SP:.*]] = builtin.unrealized_conversion_cast %[[SF]] : (f32, i32, i32, i32, i32, i32, !llvm.ptr) -> f32 to !llvm.ptr
// CHECK: %[[MF:.*]] = func.constant @__fi_mask_mod_hook_0
// CHECK: %[[MP:.*]] = builtin.unrealized_conversion_cast %[[MF]]
// CHECK: %[[TF:.*]] = func.constant @__fi_mask_tile_hook_0 : (i32, i32, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// CHECK: %[[TP:.*]] = builtin.unrealized_conversion_cast %[[TF]]
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %arg5 : memref<8x32xf32> -> index
// CHECK: memref.extract_strided_metadata %arg5
// CHECK: %[[S6:.*]] = llvm.getelementptr %[[BLOCK]][6]
// CHECK: llvm.store %arg6, %[[S6]] : f32, !llvm.ptr
// The block's bytes (7 slots) and no device image (host code).
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(56 : i64) : i64
// CHECK: %[[NOIMAGE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @fi_rt_ragged_prefill_run_f16_f16({{.*}}, %[[SP]], %[[MP]], %[[TP]], %[[BLOCK]], %[[BYTES]], %[[NOIMAGE]])
func.func private @t5_bias(%s: f32, %b: i32, %qh: i32, %kh: i32, %qp: i32, %kp: i32,
                           %table: memref<8x32xf32>, %cap: f32) -> f32 {
  %d = arith.subi %qp, %kp : i32
  %h = arith.index_cast %qh : i32 to index
  %j = arith.index_cast %d : i32 to index
  %bias = memref.load %table[%h, %j] : memref<8x32xf32>
  %r = arith.addf %s, %bias : f32
  return %r : f32
}
func.func private @window(%b: i32, %qh: i32, %qp: i32, %kp: i32, %table: memref<8x32xf32>,
                          %w: f32) -> i1 {
  %keep = arith.cmpi sge, %kp, %qp : i32
  return %keep : i1
}
// One op per layer in a loop: the block is allocated once, filled before each call.
func.func @ragged(%q: memref<?x8x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %table: memref<8x32xf32>, %cap: f32,
                  %o: memref<?x8x64xf16>, %layers: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %l = %c0 to %layers step %c1 {
    fi.ragged_prefill q(%q : memref<?x8x64xf16>) kv(%k, %v : memref<?x2x64xf16>, memref<?x2x64xf16>)
        indptr(%qo, %kvp : memref<?xi32>, memref<?xi32>)
        variant_args(%table, %cap : memref<8x32xf32>, f32) outs(%o : memref<?x8x64xf16>)
        {score_mod = @t5_bias, mask_mod = @window}
  }
  return
}
