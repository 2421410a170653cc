/* RUN: fi-capi-test 2>&1 | FileCheck %s
 *
 * The fi C API from plain C11: register the dialect, build every attribute and the
 * plan type, read them back, reject bad values, parse a module with every op, verify
 * and print it, and read attributes off the parsed ops. The CHECK lines follow the
 * order of the output: main() prints the dialect first, then each test. */
// CHECK: dialect: fi
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi-c/Dialect.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/IR.h"

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static void printAttr(const char *label, MlirAttribute attr) {
  printf("%s: ", label);
  mlirAttributePrint(attr, printToStdout, NULL);
  printf("\n");
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diag, void *userData) {
  (void)userData;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diag, printToStdout, NULL);
  printf("\n");
  return mlirLogicalResultSuccess();
}

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      printf("FAILED: %s (line %d)\n", #cond, __LINE__);                              \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static void testAttributes(MlirContext ctx) {
  printf("@attributes\n");
  // CHECK-LABEL: @attributes
  MlirAttribute bsr = mlirFiBsrAttrGet(ctx, 4, 16, MlirFiKvLayoutHND);
  printAttr("bsr", bsr);
  // CHECK: bsr: #fi.bsr<block_rows = 4, block_cols = 16, layout = hnd>
  EXPECT(mlirAttributeIsAFiBsr(bsr) && !mlirAttributeIsAFiTiles(bsr));
  printf("bsr fields: %lld %lld %d\n", (long long)mlirFiBsrAttrGetBlockRows(bsr),
         (long long)mlirFiBsrAttrGetBlockCols(bsr), (int)mlirFiBsrAttrGetLayout(bsr));
  // CHECK: bsr fields: 4 16 1

  MlirAttribute shard = mlirFiKvShardAttrGet(ctx, 2, 256);
  printAttr("kv_shard", shard);
  // CHECK: kv_shard: #fi.kv_shard<ranks = 2, split_size = 256>
  EXPECT(mlirAttributeIsAFiKvShard(shard) && !mlirAttributeIsAFiBsr(shard));
  printf("kv_shard fields: %lld %lld\n", (long long)mlirFiKvShardAttrGetRanks(shard),
         (long long)mlirFiKvShardAttrGetSplitSize(shard));
  // CHECK: kv_shard fields: 2 256
  printAttr("kv_shard auto", mlirFiKvShardAttrGet(ctx, 8, 0));
  // CHECK: kv_shard auto: #fi.kv_shard<ranks = 8>

  MlirAttribute tiles = mlirFiTilesAttrGet(ctx, 64, 128, true, MlirFiCoresTensor);
  printAttr("tiles", tiles);
  // CHECK: tiles: #fi.tiles<q = 64, kv = 128, split_kv = true, cores = tensor>
  EXPECT(mlirAttributeIsAFiTiles(tiles) && !mlirAttributeIsAFiBsr(tiles));
  printf("tiles fields: %lld %lld %d %d\n", (long long)mlirFiTilesAttrGetQTile(tiles),
         (long long)mlirFiTilesAttrGetKvTile(tiles), (int)mlirFiTilesAttrGetSplitKv(tiles),
         (int)mlirFiTilesAttrGetCores(tiles));
  // CHECK: tiles fields: 64 128 1 1

  MlirAttribute wgTiles = mlirFiTilesAttrGet(ctx, 64, 64, false, MlirFiCoresWgmma);
  printAttr("wgmma tiles", wgTiles);
  // CHECK: wgmma tiles: #fi.tiles<q = 64, kv = 64, split_kv = false, cores = wgmma>
  EXPECT(mlirFiTilesAttrGetCores(wgTiles) == MlirFiCoresWgmma);

  MlirAttribute target = mlirFiTargetAttrGet(ctx, 90, 132, 232448);
  printAttr("target", target);
  // CHECK: target: #fi.target<sm = 90, sm_count = 132, smem = 232448>
  EXPECT(mlirAttributeIsAFiTarget(target));
  printf("target fields: %lld %lld %lld %lld\n", (long long)mlirFiTargetAttrGetSmVersion(target),
         (long long)mlirFiTargetAttrGetSmCount(target),
         (long long)mlirFiTargetAttrGetSmemPerBlock(target),
         (long long)mlirFiTargetAttrGetDramGbpsPerSm(target));
  // CHECK: target fields: 90 132 232448 0

  MlirAttribute h200 = mlirFiTargetAttrGetWithDramBandwidth(ctx, 90, 132, 232448, 36);
  printAttr("h200 target", h200);
  // CHECK: h200 target: #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = 36>
  EXPECT(mlirFiTargetAttrGetDramGbpsPerSm(h200) == 36);

  MlirAttribute mask = mlirFiMaskModeAttrGet(ctx, MlirFiMaskModeCausal);
  MlirAttribute pos = mlirFiPosEncodingAttrGet(ctx, MlirFiPosEncodingRopeLlama);
  MlirAttribute layout = mlirFiKvLayoutAttrGet(ctx, MlirFiKvLayoutNHD);
  MlirAttribute cores = mlirFiCoresAttrGet(ctx, MlirFiCoresCuda);
  MlirAttribute family = mlirFiPlanFamilyAttrGet(ctx, MlirFiPlanFamilyRaggedPrefill);
  printAttr("mask", mask);
  printAttr("pos", pos);
  printAttr("layout", layout);
  printAttr("cores", cores);
  printAttr("family", family);
  // CHECK: mask: #fi.mask_mode<causal>
  // CHECK: pos: #fi.pos_encoding<rope_llama>
  // CHECK: layout: #fi.kv_layout<nhd>
  // CHECK: cores: #fi.cores<cuda>
  // CHECK: family: #fi.plan_family<ragged_prefill>
  EXPECT(mlirAttributeIsAFiMaskMode(mask) && !mlirAttributeIsAFiPosEncoding(mask));
  EXPECT(mlirAttributeIsAFiPosEncoding(pos) && mlirAttributeIsAFiKvLayout(layout));
  EXPECT(mlirAttributeIsAFiCores(cores) && mlirAttributeIsAFiPlanFamily(family));
  printf("enum values: %d %d %d %d %d\n", (int)mlirFiMaskModeAttrGetValue(mask),
         (int)mlirFiPosEncodingAttrGetValue(pos), (int)mlirFiKvLayoutAttrGetValue(layout),
         (int)mlirFiCoresAttrGetValue(cores), (int)mlirFiPlanFamilyAttrGetValue(family));
  // CHECK: enum values: 1 1 0 0 3

  /* Attributes built in C equal the parsed ones (uniqued in the context). */
  MlirAttribute parsed = mlirAttributeParseGet(
      ctx, mlirStringRefCreateFromCString(
               "#fi.bsr<block_rows = 4, block_cols = 16, layout = hnd>"));
  printf("built == parsed: %d\n", (int)mlirAttributeEqual(parsed, bsr));
  // CHECK: built == parsed: 1
  EXPECT(!mlirAttributeIsAFiBsr(mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), 1)));
}

static void testPlanType(MlirContext ctx) {
  printf("@plan_type\n");
  // CHECK-LABEL: @plan_type
  MlirType plan = mlirFiPlanTypeGet(ctx, MlirFiPlanFamilyDecode);
  printf("plan: ");
  mlirTypePrint(plan, printToStdout, NULL);
  printf("\n");
  // CHECK: plan: !fi.plan<decode>
  EXPECT(mlirTypeIsAFiPlan(plan) && !mlirTypeIsAFiPlan(mlirF16TypeGet(ctx)));
  printf("family: %d\n", (int)mlirFiPlanTypeGetFamily(plan));
  // CHECK: family: 1
  MlirType append = mlirFiPlanTypeGet(ctx, MlirFiPlanFamilyAppend);
  printf("distinct: %d\n", (int)!mlirTypeEqual(plan, append));
  // CHECK: distinct: 1
}

static void testInvalidValues(MlirContext ctx) {
  printf("@invalid_values\n");
  // CHECK-LABEL: @invalid_values
  MlirDiagnosticHandlerID handler =
      mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  MlirAttribute badRows = mlirFiBsrAttrGet(ctx, 0, 16, MlirFiKvLayoutNHD);
  // CHECK: diagnostic: #fi.bsr block_rows = 0 must be >= 1
  printf("bad bsr is null: %d\n", (int)mlirAttributeIsNull(badRows));
  // CHECK: bad bsr is null: 1
  MlirAttribute badShard = mlirFiKvShardAttrGet(ctx, 0, 16);
  // CHECK: diagnostic: {{.*}}ranks = 0
  printf("bad kv_shard is null: %d\n", (int)mlirAttributeIsNull(badShard));
  // CHECK: bad kv_shard is null: 1
  MlirAttribute badTiles = mlirFiTilesAttrGet(ctx, 16, 0, false, MlirFiCoresCuda);
  // CHECK: diagnostic: #fi.tiles kv = 0 must be >= 1
  printf("bad tiles is null: %d\n", (int)mlirAttributeIsNull(badTiles));
  // CHECK: bad tiles is null: 1
  MlirAttribute badTarget = mlirFiTargetAttrGet(ctx, 90, 0, 232448);
  // CHECK: diagnostic: #fi.target sm_count = 0 must be >= 1
  printf("bad target is null: %d\n", (int)mlirAttributeIsNull(badTarget));
  // CHECK: bad target is null: 1
  MlirAttribute badDram = mlirFiTargetAttrGetWithDramBandwidth(ctx, 90, 132, 232448, -1);
  // CHECK: diagnostic: #fi.target dram_gbps_per_sm = -1 must be >= 0
  printf("bad dram is null: %d\n", (int)mlirAttributeIsNull(badDram));
  // CHECK: bad dram is null: 1
  MlirAttribute badEnum = mlirFiMaskModeAttrGet(ctx, (MlirFiMaskMode)7);
  // CHECK: diagnostic: invalid MlirFiMaskMode value 7
  printf("bad enum is null: %d\n", (int)mlirAttributeIsNull(badEnum));
  // CHECK: bad enum is null: 1
  MlirType badPlan = mlirFiPlanTypeGet(ctx, (MlirFiPlanFamily)0);
  // CHECK: diagnostic: invalid MlirFiPlanFamily value 0
  printf("bad plan is null: %d\n", (int)mlirTypeIsNull(badPlan));
  // CHECK: bad plan is null: 1
  mlirContextDetachDiagnosticHandler(ctx, handler);
}

static const char *kModule =
    "#bsr = #fi.bsr<block_rows = 1, block_cols = 16, layout = nhd>\n"
    "func.func @step(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,\n"
    "                %qo: tensor<?xi32>, %ip: tensor<?xi32>, %ix: tensor<?xi32>,\n"
    "                %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>,\n"
    "                %kn: tensor<?x8x128xf16>, %k: tensor<?x8x128xf16>, %np: index,\n"
    "                %vs: tensor<?x2x32x128xf16>, %ss: tensor<?x2x32xf32>) {\n"
    "  %ap = fi.append_plan append_indptr(%qo : tensor<?xi32>) pages(%ip, %ix, %lp :\n"
    "      tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #bsr}\n"
    "  %kv1 = fi.append_paged_kv kv_new(%kn, %kn : tensor<?x8x128xf16>, tensor<?x8x128xf16>)\n"
    "      append_indptr(%qo : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<?xi32>,\n"
    "      tensor<?xi32>, tensor<?xi32>) plan(%ap : !fi.plan<append>)\n"
    "      outs(%kv : tensor<?x2x16x8x128xf16>) {bsr = #bsr} -> tensor<?x2x16x8x128xf16>\n"
    "  %dp = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)\n"
    "      num_pages(%np) {bsr = #bsr, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,\n"
    "      q_type = f16, kv_type = f16}\n"
    "  %d:2 = fi.paged_decode q(%q : tensor<?x32x128xf16>) kv(%kv1 : tensor<?x2x16x8x128xf16>)\n"
    "      pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)\n"
    "      plan(%dp : !fi.plan<decode>) outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)\n"
    "      {bsr = #bsr, tiles = #fi.tiles<q = 1, kv = 64, split_kv = true, cores = tensor>}\n"
    "      -> tensor<?x32x128xf16>, tensor<?x32xf32>\n"
    "  %pp = fi.paged_prefill_plan qo_indptr(%qo : tensor<?xi32>) pages(%ip, %ix, %lp :\n"
    "      tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) num_pages(%np) {bsr = #bsr,\n"
    "      mask_mode = #fi.mask_mode<causal>, num_qo_heads = 32, num_kv_heads = 8,\n"
    "      head_dim = 128, q_type = f16, kv_type = f16}\n"
    "  %p = fi.paged_prefill q(%q : tensor<?x32x128xf16>) qo_indptr(%qo : tensor<?xi32>)\n"
    "      kv(%kv1 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>,\n"
    "      tensor<?xi32>, tensor<?xi32>) plan(%pp : !fi.plan<paged_prefill>)\n"
    "      outs(%o : tensor<?x32x128xf16>) {bsr = #bsr, mask_mode = #fi.mask_mode<causal>}\n"
    "      -> tensor<?x32x128xf16>\n"
    "  %rp = fi.ragged_prefill_plan indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>)\n"
    "      {num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, q_type = f16, kv_type = f16}\n"
    "  %r:2 = fi.ragged_prefill q(%q : tensor<?x32x128xf16>) kv(%k, %k : tensor<?x8x128xf16>,\n"
    "      tensor<?x8x128xf16>) indptr(%qo, %qo : tensor<?xi32>, tensor<?xi32>)\n"
    "      plan(%rp : !fi.plan<ragged_prefill>)\n"
    "      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)\n"
    "      -> tensor<?x32x128xf16>, tensor<?x32xf32>\n"
    "  %m:2 = fi.merge_state a(%d#0, %d#1 : tensor<?x32x128xf16>, tensor<?x32xf32>)\n"
    "      b(%r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>)\n"
    "      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)\n"
    "      -> tensor<?x32x128xf16>, tensor<?x32xf32>\n"
    "  %n = fi.merge_states %vs, %ss : tensor<?x2x32x128xf16>, tensor<?x2x32xf32>\n"
    "      outs(%o : tensor<?x32x128xf16>) -> tensor<?x32x128xf16>\n"
    "  return\n"
    "}\n";

static void testModule(MlirContext ctx) {
  printf("@module\n");
  // CHECK-LABEL: @module
  MlirModule module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  EXPECT(!mlirModuleIsNull(module));
  MlirOperation moduleOp = mlirModuleGetOperation(module);
  printf("verified: %d\n", (int)mlirOperationVerify(moduleOp));
  // CHECK: verified: 1
  mlirOperationPrint(moduleOp, printToStdout, NULL);
  printf("\n");
  // CHECK: func.func @step
  // CHECK: fi.append_plan
  // CHECK: fi.append_paged_kv
  // CHECK: fi.decode_plan
  // CHECK: fi.paged_decode
  // CHECK: fi.paged_prefill_plan
  // CHECK: fi.paged_prefill
  // CHECK: fi.ragged_prefill_plan
  // CHECK: fi.ragged_prefill
  // CHECK: fi.merge_state
  // CHECK: fi.merge_states
  // CHECK: return

  /* Walk the body and read the fi attributes and the plan types through the C API. */
  MlirOperation func = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  int numFiOps = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirIdentifier name = mlirOperationGetName(op);
    MlirStringRef nameRef = mlirIdentifierStr(name);
    if (nameRef.length < 3 || strncmp(nameRef.data, "fi.", 3) != 0)
      continue;
    ++numFiOps;
    printf("op %.*s", (int)nameRef.length, nameRef.data);
    MlirAttribute bsr = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("bsr"));
    if (!mlirAttributeIsNull(bsr) && mlirAttributeIsAFiBsr(bsr))
      printf(" page_size=%lld", (long long)mlirFiBsrAttrGetBlockCols(bsr));
    MlirAttribute tiles =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("tiles"));
    if (!mlirAttributeIsNull(tiles) && mlirAttributeIsAFiTiles(tiles))
      printf(" kv_tile=%lld", (long long)mlirFiTilesAttrGetKvTile(tiles));
    MlirAttribute maskMode =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("mask_mode"));
    if (!mlirAttributeIsNull(maskMode) && mlirAttributeIsAFiMaskMode(maskMode))
      printf(" mask_mode=%d", (int)mlirFiMaskModeAttrGetValue(maskMode));
    if (mlirOperationGetNumResults(op) == 1) {
      MlirType type = mlirValueGetType(mlirOperationGetResult(op, 0));
      if (mlirTypeIsAFiPlan(type))
        printf(" plan_family=%d", (int)mlirFiPlanTypeGetFamily(type));
    }
    printf("\n");
  }
  printf("fi ops: %d\n", numFiOps);
  // CHECK: op fi.append_plan page_size=16 plan_family=4
  // CHECK: op fi.append_paged_kv page_size=16
  // CHECK: op fi.decode_plan page_size=16 plan_family=1
  // CHECK: op fi.paged_decode page_size=16 kv_tile=64
  // CHECK: op fi.paged_prefill_plan page_size=16 mask_mode=1 plan_family=2
  // CHECK: op fi.paged_prefill page_size=16 mask_mode=1
  // CHECK: op fi.ragged_prefill_plan mask_mode=0 plan_family=3
  // CHECK: op fi.ragged_prefill mask_mode=0
  // CHECK: op fi.merge_state
  // CHECK: op fi.merge_states
  // CHECK: fi ops: 10
  mlirModuleDestroy(module);
}

static void testBadModule(MlirContext ctx) {
  printf("@bad_module\n");
  // CHECK-LABEL: @bad_module
  MlirDiagnosticHandlerID handler =
      mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  const char *bad =
      "func.func @f(%ip: tensor<?xi64>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %n: index) {\n"
      "  %p = fi.decode_plan pages(%ip, %ix, %lp : tensor<?xi64>, tensor<?xi32>,\n"
      "      tensor<?xi32>) num_pages(%n) {bsr = #fi.bsr<block_rows = 1, block_cols = 16,\n"
      "      layout = nhd>, num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,\n"
      "      q_type = f16, kv_type = f16}\n"
      "  return\n"
      "}\n";
  MlirModule module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(bad));
  // CHECK: diagnostic: 'fi.decode_plan' op operand 'kv_indptr' has element type 'i64' but index arrays must be i32
  printf("rejected: %d\n", (int)mlirModuleIsNull(module));
  // CHECK: rejected: 1
  mlirContextDetachDiagnosticHandler(ctx, handler);
}

int main(void) {
  MlirContext ctx = mlirContextCreate();
  mlirDialectHandleRegisterDialect(mlirGetDialectHandle__fi__(), ctx);
  mlirDialectHandleRegisterDialect(mlirGetDialectHandle__func__(), ctx);
  MlirDialect fi = mlirContextGetOrLoadDialect(ctx, mlirStringRefCreateFromCString("fi"));
  EXPECT(!mlirDialectIsNull(fi));
  MlirStringRef ns = mlirDialectGetNamespace(fi);
  printf("dialect: %.*s\n", (int)ns.length, ns.data);
  testAttributes(ctx);
  testPlanType(ctx);
  testInvalidValues(ctx);
  testModule(ctx);
  testBadModule(ctx);
  mlirContextDestroy(ctx);
  printf("done\n");
  // CHECK: done
  return 0;
}
