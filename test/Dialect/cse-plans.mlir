// RUN: fi-opt %s -cse | FileCheck %s
// RUN: fi-opt %s | FileCheck %s --check-prefix=BEFORE
// "Plan once, run per layer" in IR: four layers each ask for the same decode plan;
// after -cse one plan remains and every layer uses it. A plan with a different shape
// (layer 4 of another model part with head_dim 64) stays separate.

// BEFORE-LABEL: func.func @four_layers
// BEFORE-COUNT-4: fi.decode_plan
// CHECK-LABEL: func.func @four_layers
// CHECK: %[[P:.*]] = fi.decode_plan
// CHECK-NOT: fi.decode_plan
// CHECK-COUNT-4: plan(%[[P]] : !fi.plan<decode>)
// CHECK-NOT: fi.decode_plan
// CHECK: return
func.func @four_layers(%q: tensor<?x32x128xf16>, %o: tensor<?x32x128xf16>,
                       %kv0: tensor<?x2x16x8x128xf16>, %kv1: tensor<?x2x16x8x128xf16>,
                       %kv2: tensor<?x2x16x8x128xf16>, %kv3: tensor<?x2x16x8x128xf16>,
                       %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %np: index)
    -> tensor<?x32x128xf16> {
  %p0 = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %h0 = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p0 : !fi.plan<decode>)
      outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %p1 = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %h1 = fi.paged_decode q(%h0 : tensor<?x32x128xf16>) kv(%kv1 : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p1 : !fi.plan<decode>)
      outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %p2 = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %h2 = fi.paged_decode q(%h1 : tensor<?x32x128xf16>) kv(%kv2 : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p2 : !fi.plan<decode>)
      outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  %p3 = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %h3 = fi.paged_decode q(%h2 : tensor<?x32x128xf16>) kv(%kv3 : tensor<?x2x16x8x128xf16>)
      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) plan(%p3 : !fi.plan<decode>)
      outs(%o : tensor<?x32x128xf16>) {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>} -> tensor<?x32x128xf16>
  return %h3 : tensor<?x32x128xf16>
}

// Plans that differ in any attribute or operand are not merged.
// CHECK-LABEL: func.func @different_plans_stay
// CHECK-COUNT-3: fi.decode_plan
func.func @different_plans_stay(%ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>,
                                %lp2: tensor<?xi32>, %np: index)
    -> (!fi.plan<decode>, !fi.plan<decode>, !fi.plan<decode>) {
  %a = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  %b = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 64, q_type = f16, kv_type = f16}
  %c = fi.decode_plan pages(%ip, %ix, %lp2 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np)
      {bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}
  return %a, %b, %c : !fi.plan<decode>, !fi.plan<decode>, !fi.plan<decode>
}
