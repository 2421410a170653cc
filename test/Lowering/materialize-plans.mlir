// fi-materialize-plans gives every op a plan op placed right after its operands, so that
// -cse folds the plans of all layers of a step into one, in the tensor and memref forms.
// RUN: fi-opt %s --split-input-file --fi-select-tiles --fi-materialize-plans | FileCheck %s --check-prefix=PLANS
// RUN: fi-opt %s --split-input-file --fi-select-tiles --fi-materialize-plans --cse | FileCheck %s --check-prefix=CSE

// Four layers over one page table, each with its own cache: before CSE four plans (all
// taking the page count of the first layer's cache), after CSE one, used by every layer.
// PLANS-LABEL: func.func @four_layers
// PLANS-COUNT-4: fi.decode_plan pages(%arg4, %arg5, %arg6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%[[NP:.*]])
// CSE-LABEL: func.func @four_layers
// CSE: %[[NP:.*]] = tensor.dim %arg1, %c0
// CSE: %[[PLAN:.*]] = fi.decode_plan pages(%arg4, %arg5, %arg6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%[[NP]])
// CSE-SAME: head_dim = 128 : i64, kv_type = f16, num_kv_heads = 8 : i64, num_qo_heads = 32 : i64, q_type = f16, tiles = #fi.tiles<q = 16, kv = 32, split_kv = true, cores = tensor>
// CSE-NOT: fi.decode_plan
// CSE-COUNT-4: fi.paged_decode {{.*}} plan(%[[PLAN]] : !fi.plan<decode>)
// CSE-NOT: fi.decode_plan
func.func @four_layers(%q: tensor<?x32x128xf16>, %k1: tensor<?x16x8x128xf16>,
    %k2: tensor<?x16x8x128xf16>, %k3: tensor<?x16x8x128xf16>,
    %p: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xi32>, %o: tensor<?x32x128xf16>)
    -> tensor<?x32x128xf16> {
  %o1 = fi.paged_decode q(%q : tensor<?x32x128xf16>)
      kv(%k1, %k1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %o2 = fi.paged_decode q(%o1 : tensor<?x32x128xf16>)
      kv(%k2, %k2 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %o3 = fi.paged_decode q(%o2 : tensor<?x32x128xf16>)
      kv(%k3, %k3 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %o4 = fi.paged_decode q(%o3 : tensor<?x32x128xf16>)
      kv(%k1, %k2 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%p, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %o4 : tensor<?x32x128xf16>
}

// -----

// Memref form: the plans move above the earlier layers' fi ops (which write only float
// buffers), so they are adjacent and CSE folds them; a store into an index array is a
// barrier that keeps the third plan below it (it must see the new contents).
// CSE-LABEL: func.func @memref_layers
// CSE: %[[P1:.*]] = fi.decode_plan
// CSE-NOT: fi.decode_plan
// CSE: fi.paged_decode {{.*}} plan(%[[P1]] : !fi.plan<decode>)
// CSE: fi.paged_decode {{.*}} plan(%[[P1]] : !fi.plan<decode>)
// CSE: memref.store
// CSE: %[[P2:.*]] = fi.decode_plan
// CSE: fi.paged_decode {{.*}} plan(%[[P2]] : !fi.plan<decode>)
func.func @memref_layers(%q: memref<?x4x64xf16>, %k: memref<?x16x4x64xf16>,
    %p: memref<?xi32>, %i: memref<?xi32>, %l: memref<?xi32>, %o1: memref<?x4x64xf16>,
    %o2: memref<?x4x64xf16>, %o3: memref<?x4x64xf16>) {
  fi.paged_decode q(%q : memref<?x4x64xf16>) kv(%k, %k : memref<?x16x4x64xf16>, memref<?x16x4x64xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o1 : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  fi.paged_decode q(%o1 : memref<?x4x64xf16>) kv(%k, %k : memref<?x16x4x64xf16>, memref<?x16x4x64xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o2 : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : i32
  memref.store %c7, %l[%c0] : memref<?xi32>
  fi.paged_decode q(%o2 : memref<?x4x64xf16>) kv(%k, %k : memref<?x16x4x64xf16>, memref<?x16x4x64xf16>)
      pages(%p, %i, %l : memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o3 : memref<?x4x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}
  return
}

// -----

// Different page tables (a shared prefix and unique suffixes, as in cascade attention)
// and different op families keep their own plans.
// CSE-LABEL: func.func @two_tables
// CSE-DAG: fi.ragged_prefill_plan indptr(%arg7, %arg8 : tensor<?xi32>, tensor<?xi32>) {{.*}}mask_mode = #fi.mask_mode<causal>
// CSE-DAG: fi.decode_plan pages(%arg2, %arg3, %arg4 :
// CSE-DAG: fi.decode_plan pages(%arg5, %arg6, %arg4 :
// CSE: fi.paged_decode
// CSE-NOT: = fi.{{[a-z_]*}}_plan
func.func @two_tables(%q: tensor<?x8x64xf16>, %k: tensor<?x16x8x64xf16>,
    %p1: tensor<?xi32>, %i1: tensor<?xi32>, %l1: tensor<?xi32>,
    %p2: tensor<?xi32>, %i2: tensor<?xi32>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
    %rk: tensor<?x8x64xf16>, %o: tensor<?x8x64xf16>) -> (tensor<?x8x64xf16>, tensor<?x8x64xf16>, tensor<?x8x64xf16>) {
  %a = fi.paged_decode q(%q : tensor<?x8x64xf16>) kv(%k, %k : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16>)
      pages(%p1, %i1, %l1 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x8x64xf16>
  %b = fi.paged_decode q(%q : tensor<?x8x64xf16>) kv(%k, %k : tensor<?x16x8x64xf16>, tensor<?x16x8x64xf16>)
      pages(%p2, %i2, %l1 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x8x64xf16>
  %c = fi.ragged_prefill q(%q : tensor<?x8x64xf16>) kv(%rk, %rk : tensor<?x8x64xf16>, tensor<?x8x64xf16>)
      indptr(%qo, %kvp : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x8x64xf16>)
      {mask_mode = #fi.mask_mode<causal>} -> tensor<?x8x64xf16>
  return %a, %b, %c : tensor<?x8x64xf16>, tensor<?x8x64xf16>, tensor<?x8x64xf16>
}
