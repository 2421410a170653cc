// End to end: the tile classifier fi-lower-to-runtime derives from a mask_mod
// (lowering/lib/MaskTiles.cpp) is sound. The host backend skips the KV tiles the
// classifier proves EMPTY and does not call the mask on tiles it proves FULL; each mask
// below (one rule of the interval arithmetic or more: divisions, remainders, products,
// selects, unsigned compares, wrapping adds, truncations, min / max, extensions, index
// ands, ops with regions, i64, reads of captured tables of i8 / i32 / i64 / index entries,
// a strided view of a table, indices clamped into the table, an empty table, ranges too
// wide to scan; tables whose values rise and fall) runs compiled
// against the runtime called directly with a C twin of the mask and no classifier
// (drivers/mask_tiles.c), bit for bit, on random
// ragged batches whose lengths, rows per work unit and captured values vary. A tile
// wrongly proven EMPTY or FULL drops or keeps pairs the twin does not.
//
// RUN: fi-opt %s --fi-to-llvm | mlir-translate --mlir-to-llvmir | llc -O2 -filetype=obj --relocation-model=pic -o %t.o
// RUN: %cc %fi_e2e_cflags %S/drivers/mask_tiles.c %t.o %fi_e2e_ldflags -o %t.exe
// RUN: %t.exe | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: block_diag: 8 trials bit-exact
// CHECK: dilated_sinks: 8 trials bit-exact
// CHECK: band_select: 8 trials bit-exact
// CHECK: unsigned_band: 8 trials bit-exact
// CHECK: wrapping_add: 8 trials bit-exact
// CHECK: trunc_i8: 8 trials bit-exact
// CHECK: min_max_ext: 8 trials bit-exact
// CHECK: and_index: 8 trials bit-exact
// CHECK: region: 8 trials bit-exact
// CHECK: product_i64: 8 trials bit-exact
// CHECK: keep_all: 8 trials bit-exact
// CHECK: table_clamped: 8 trials bit-exact
// CHECK: table_strided: 8 trials bit-exact
// CHECK: table_i8: 8 trials bit-exact
// CHECK: table_i64: 8 trials bit-exact
// CHECK: table_index: 8 trials bit-exact
// CHECK: table_wide_range: 8 trials bit-exact
// CHECK: E2E mask tiles: PASS

func.func private @block_diag(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %qb = arith.divsi %qp, %a : i32
  %kb = arith.divsi %kp, %a : i32
  %keep = arith.cmpi eq, %qb, %kb : i32
  return %keep : i1
}
func.func @run_block_diag(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @block_diag}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @dilated_sinks(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %d = arith.subi %qp, %kp : i32
  %r = arith.remsi %d, %a : i32
  %c0 = arith.constant 0 : i32
  %on = arith.cmpi eq, %r, %c0 : i32
  %sink = arith.cmpi slt, %kp, %c : i32
  %keep = arith.ori %on, %sink : i1
  return %keep : i1
}
func.func @run_dilated_sinks(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @dilated_sinks}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @band_select(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %low = arith.cmpi slt, %qh, %c2 : i32
  %d = arith.subi %qp, %kp : i32
  %d3 = arith.muli %d, %c3 : i32
  %left = arith.cmpi sle, %d3, %a : i32
  %e = arith.subi %kp, %qp : i32
  %e2 = arith.muli %e, %c2 : i32
  %right = arith.cmpi sle, %e2, %c : i32
  %keep = arith.select %low, %left, %right : i1
  return %keep : i1
}
func.func @run_band_select(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @band_select}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @unsigned_band(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %d = arith.subi %qp, %kp : i32
  %keep = arith.cmpi ult, %d, %a : i32
  return %keep : i1
}
func.func @run_unsigned_band(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @unsigned_band}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @wrapping_add(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %x = arith.addi %kp, %c : i32
  %y = arith.addi %qp, %c : i32
  %keep = arith.cmpi sgt, %x, %y : i32
  return %keep : i1
}
func.func @run_wrapping_add(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @wrapping_add}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @trunc_i8(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %t = arith.trunci %kp : i32 to i8
  %c0 = arith.constant 0 : i8
  %pos = arith.cmpi sge, %t, %c0 : i8
  %head = arith.cmpi eq, %qh, %c : i32
  %keep = arith.ori %pos, %head : i1
  return %keep : i1
}
func.func @run_trunc_i8(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @trunc_i8}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @min_max_ext(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %m = arith.minsi %qp, %a : i32
  %x = arith.cmpi sge, %kp, %m : i32
  %n = arith.maxsi %kp, %c : i32
  %y = arith.cmpi eq, %n, %kp : i32
  %xi = arith.extui %x : i1 to i32
  %yi = arith.extui %y : i1 to i32
  %s = arith.addi %xi, %yi : i32
  %c2 = arith.constant 2 : i32
  %keep = arith.cmpi sge, %s, %c2 : i32
  return %keep : i1
}
func.func @run_min_max_ext(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @min_max_ext}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @and_index(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %ki = arith.index_cast %kp : i32 to index
  %ai = arith.index_cast %a : i32 to index
  %x = arith.andi %ki, %ai : index
  %z = arith.constant 0 : index
  %keep = arith.cmpi eq, %x, %z : index
  return %keep : i1
}
func.func @run_and_index(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @and_index}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @region(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %c0 = arith.constant 0 : i32
  %h0 = arith.cmpi eq, %qh, %c0 : i32
  %keep = scf.if %h0 -> (i1) {
    %w = arith.subi %qp, %a : i32
    %k = arith.cmpi sge, %kp, %w : i32
    scf.yield %k : i1
  } else {
    %t = arith.constant true
    scf.yield %t : i1
  }
  return %keep : i1
}
func.func @run_region(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @region}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @product_i64(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %k64 = arith.extsi %kp : i32 to i64
  %q64 = arith.extsi %qp : i32 to i64
  %p = arith.muli %k64, %q64 : i64
  %a64 = arith.extsi %a : i32 to i64
  %c1000 = arith.constant 1000 : i64
  %lim = arith.muli %a64, %c1000 : i64
  %keep = arith.cmpi sle, %p, %lim : i64
  return %keep : i1
}
func.func @run_product_i64(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @product_i64}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @keep_all(%b: i32, %qh: i32, %qp: i32, %kp: i32, %a: i32,
                          %c: i32) -> i1 {
  %keep = arith.constant true
  return %keep : i1
}
func.func @run_keep_all(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %a: i32, %c: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%a, %c : i32, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @keep_all}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// Masks over a captured table (the classifier bounds a read by the entries it covers).
func.func private @table_clamped(%b: i32, %qh: i32, %qp: i32, %kp: i32, %t: tensor<?xi32>,
                          %a: i32) -> i1 {
  %qa = arith.subi %qp, %a : i32
  %ka = arith.subi %kp, %a : i32
  %qi = arith.index_cast %qa : i32 to index
  %ki = arith.index_cast %ka : i32 to index
  %qd = tensor.extract %t[%qi] : tensor<?xi32>
  %kd = tensor.extract %t[%ki] : tensor<?xi32>
  %keep = arith.cmpi eq, %qd, %kd : i32
  return %keep : i1
}
func.func @run_table_clamped(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<?xi32>, %a: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%t, %a : tensor<?xi32>, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @table_clamped}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

// The same mask over every second entry of the table: a strided capture (the classifier's
// scan of unit-stride tables does not apply).
func.func @run_table_strided(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<?xi32>, %a: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %tn = tensor.dim %t, %c0 : tensor<?xi32>
  %tn1 = arith.addi %tn, %c1 : index
  %half = arith.divui %tn1, %c2 : index
  %every2 = tensor.extract_slice %t[0] [%half] [2] : tensor<?xi32> to tensor<?xi32>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%every2, %a : tensor<?xi32>, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @table_clamped}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @table_i8(%b: i32, %qh: i32, %qp: i32, %kp: i32, %t: tensor<?xi8>,
                          %a: i32) -> i1 {
  %qi = arith.index_cast %qp : i32 to index
  %ki = arith.index_cast %kp : i32 to index
  %qd = tensor.extract %t[%qi] : tensor<?xi8>
  %kd = tensor.extract %t[%ki] : tensor<?xi8>
  %a8 = arith.trunci %a : i32 to i8
  %kda = arith.addi %kd, %a8 : i8
  %keep = arith.cmpi sle, %qd, %kda : i8
  return %keep : i1
}
func.func @run_table_i8(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<?xi8>, %a: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%t, %a : tensor<?xi8>, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @table_i8}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @table_i64(%b: i32, %qh: i32, %qp: i32, %kp: i32, %t: tensor<?xi64>,
                          %a: i32) -> i1 {
  %qi = arith.index_cast %qp : i32 to index
  %ki = arith.index_cast %kp : i32 to index
  %qd = tensor.extract %t[%qi] : tensor<?xi64>
  %kd = tensor.extract %t[%ki] : tensor<?xi64>
  %d = arith.subi %qd, %kd : i64
  %a64 = arith.extsi %a : i32 to i64
  %keep = arith.cmpi sle, %d, %a64 : i64
  return %keep : i1
}
func.func @run_table_i64(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<?xi64>, %a: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%t, %a : tensor<?xi64>, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @table_i64}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @table_index(%b: i32, %qh: i32, %qp: i32, %kp: i32, %t: tensor<?xindex>,
                          %a: i32) -> i1 {
  %qi = arith.index_cast %qp : i32 to index
  %ki = arith.index_cast %kp : i32 to index
  %qd = tensor.extract %t[%qi] : tensor<?xindex>
  %kd = tensor.extract %t[%ki] : tensor<?xindex>
  %ai = arith.index_cast %a : i32 to index
  %before = arith.cmpi sle, %kd, %qd : index
  %low = arith.cmpi sle, %kd, %ai : index
  %keep = arith.andi %before, %low : i1
  return %keep : i1
}
func.func @run_table_index(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<?xindex>, %a: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%t, %a : tensor<?xindex>, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<causal>, mask_mod = @table_index}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}

func.func private @table_wide_range(%b: i32, %qh: i32, %qp: i32, %kp: i32, %t: tensor<?xi32>,
                          %a: i32) -> i1 {
  %c8 = arith.constant 8 : i32
  %k8 = arith.muli %kp, %c8 : i32
  %ki = arith.index_cast %k8 : i32 to index
  %qi = arith.index_cast %qp : i32 to index
  %kd = tensor.extract %t[%ki] : tensor<?xi32>
  %qd = tensor.extract %t[%qi] : tensor<?xi32>
  %keep = arith.cmpi sge, %kd, %qd : i32
  return %keep : i1
}
func.func @run_table_wide_range(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>,
    %v: tensor<?x2x64xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %t: tensor<?xi32>, %a: i32)
    -> (tensor<?x4x64xf16>, tensor<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x4x64xf16>
  %o0 = tensor.empty(%n) : tensor<?x4x64xf16>
  %l0 = tensor.empty(%n) : tensor<?x4xf32>
  %o, %lse = fi.ragged_prefill q(%q : tensor<?x4x64xf16>)
      kv(%k, %v : tensor<?x2x64xf16>, tensor<?x2x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>)
      variant_args(%t, %a : tensor<?xi32>, i32) outs(%o0, %l0 : tensor<?x4x64xf16>, tensor<?x4xf32>)
      {mask_mode = #fi.mask_mode<none>, mask_mod = @table_wide_range}
      -> tensor<?x4x64xf16>, tensor<?x4xf32>
  return %o, %lse : tensor<?x4x64xf16>, tensor<?x4xf32>
}
