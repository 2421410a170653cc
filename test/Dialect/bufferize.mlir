// RUN: fi-opt %s --one-shot-bufferize="bufferize-function-boundaries" --canonicalize | FileCheck %s
// The tensor form bufferizes with one-shot-bufferize into the memref form: tensor
// operands become buffers, each result becomes its destination's buffer, and the ops
// lose their results. Plans keep theirs.

// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[Q:.*]]: memref<4x32x128xf16{{.*}}>, %[[K:.*]]: memref<?x16x8x128xf16{{.*}}>, %[[V:.*]]: memref<?x16x8x128xf16{{.*}}>, %[[IP:.*]]: memref<5xi32{{.*}}>, %[[IX:.*]]: memref<?xi32{{.*}}>, %[[LP:.*]]: memref<4xi32{{.*}}>, %[[NP:.*]]: index)
// CHECK: %[[O:.*]] = memref.alloc() {{.*}} : memref<4x32x128xf16>
// CHECK: %[[L:.*]] = memref.alloc() {{.*}} : memref<4x32xf32>
// CHECK: %[[P:.*]] = fi.decode_plan pages(%[[IP]], %[[IX]], %[[LP]] : memref<5xi32{{.*}}>, memref<?xi32{{.*}}>, memref<4xi32{{.*}}>) num_pages(%[[NP]])
// CHECK-NOT: memref.copy
// CHECK: fi.paged_decode q(%[[Q]] : {{.*}}) kv(%[[K]], %[[V]] : {{.*}}) pages(%[[IP]], %[[IX]], %[[LP]] : {{.*}}) plan(%[[P]] : !fi.plan<decode>) outs(%[[O]], %[[L]] : memref<4x32x128xf16>, memref<4x32xf32>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>}{{$}}
// CHECK: return %[[O]], %[[L]]
func.func @decode(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>,
                  %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %np: index)
    -> (tensor<4x32x128xf16>, tensor<4x32xf32>) {
  %o0 = tensor.empty() : tensor<4x32x128xf16>
  %l0 = tensor.empty() : tensor<4x32xf32>
  %p = fi.decode_plan pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %o, %l = fi.paged_decode q(%q : tensor<4x32x128xf16>)
      kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) plan(%p : !fi.plan<decode>)
      outs(%o0, %l0 : tensor<4x32x128xf16>, tensor<4x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return %o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>
}

// Prefill + ragged prefill + merge of their states (cascade-like), all through buffers.
// CHECK-LABEL: func.func @prefill_and_merge
// CHECK: fi.paged_prefill {{.*}} outs(%[[O1:.*]], %[[S1:.*]] : memref<?x32x128xf16>, memref<?x32xf32>) {{.*}}}{{$}}
// CHECK: fi.ragged_prefill {{.*}} outs(%[[O2:.*]], %[[S2:.*]] : memref<?x32x128xf16>, memref<?x32xf32>) {{.*}}}{{$}}
// The merge may not overwrite %o1 while reading it, so it gets a fresh buffer; as
// destinations are written, not read, nothing is copied into it.
// CHECK-NOT: memref.copy
// CHECK: %[[M:.*]] = memref.alloc
// CHECK-NOT: memref.copy
// CHECK: fi.merge_state a(%[[O1]], %[[S1]] : {{.*}}) b(%[[O2]], %[[S2]] : {{.*}}) outs(%[[M]] : memref<?x32x128xf16>){{$}}
// CHECK: return %[[M]]
func.func @prefill_and_merge(%q: tensor<?x32x128xf16>, %qo: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>,
                             %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                             %k2: tensor<?x8x128xf16>, %v2: tensor<?x8x128xf16>, %kvp2: tensor<?xi32>,
                             %n: index) -> tensor<?x32x128xf16> {
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %s0 = tensor.empty(%n) : tensor<?x32xf32>
  %o1, %s1 = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %s0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  %o2, %s2 = fi.ragged_prefill q(%q : tensor<?x32x128xf16>) kv(%k2, %v2 : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      indptr(%qo, %kvp2 : tensor<?xi32>, tensor<?xi32>) outs(%o0, %s0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {mask_mode = #fi.mask_mode<causal>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  %m = fi.merge_state a(%o1, %s1 : tensor<?x32x128xf16>, tensor<?x32xf32>)
      b(%o2, %s2 : tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%o1 : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>
  return %m : tensor<?x32x128xf16>
}

// merge_states into fresh buffers.
// CHECK-LABEL: func.func @merge_n
// CHECK: fi.merge_states %{{.*}}, %{{.*}} : memref<8x4x32x64xbf16{{.*}}>, memref<8x4x32xf32{{.*}}> outs(%{{.*}}, %{{.*}} : memref<8x32x64xbf16>, memref<8x32xf32>){{$}}
func.func @merge_n(%v: tensor<8x4x32x64xbf16>, %s: tensor<8x4x32xf32>) -> (tensor<8x32x64xbf16>, tensor<8x32xf32>) {
  %vo = tensor.empty() : tensor<8x32x64xbf16>
  %so = tensor.empty() : tensor<8x32xf32>
  %r:2 = fi.merge_states %v, %s : tensor<8x4x32x64xbf16>, tensor<8x4x32xf32>
      outs(%vo, %so : tensor<8x32x64xbf16>, tensor<8x32xf32>) -> tensor<8x32x64xbf16>, tensor<8x32xf32>
  return %r#0, %r#1 : tensor<8x32x64xbf16>, tensor<8x32xf32>
}

// append_paged_kv reads and writes its cache. When the old cache is still used after
// the append, bufferization must copy it first (the copy keeps the old contents,
// because the op reads its destination); the append then updates the copy.
// CHECK-LABEL: func.func @append_then_read_old_cache
// CHECK-SAME: %[[CACHE:[a-z0-9]+]]: memref<?x2x16x8x128xf16{{.*}}>
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: memref.copy %[[CACHE]], %[[COPY]]
// CHECK: fi.append_paged_kv {{.*}} outs(%[[COPY]] : memref<?x2x16x8x128xf16>)
// CHECK: fi.paged_decode {{.*}} kv(%[[CACHE]] : {{.*}})
// CHECK: fi.paged_decode {{.*}} kv(%[[COPY]] : {{.*}})
func.func @append_then_read_old_cache(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ap: tensor<?xi32>,
                                      %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                                      %cache: tensor<?x2x16x8x128xf16>, %q: tensor<?x32x128xf16>,
                                      %o: tensor<?x32x128xf16>) -> (tensor<?x32x128xf16>, tensor<?x32x128xf16>) {
  %new = fi.append_paged_kv kv_new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      append_indptr(%ap : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%cache : tensor<?x2x16x8x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x2x16x8x128xf16>
  %old_o = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %new_o = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%new : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<?x32x128xf16>)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %old_o, %new_o : tensor<?x32x128xf16>, tensor<?x32x128xf16>
}
