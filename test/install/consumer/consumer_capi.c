/* Parses an fi module, lowers it with fi-to-llvm and translates it to LLVM IR through the
 * installed C API. */
#include <stdio.h>
#include <string.h>

#include "fi-c/Dialect.h"
#include "fi-c/Passes.h"

static char ir[1 << 20];
static size_t ir_len = 0;
static void collect(MlirStringRef s, void *user) {
  (void)user;
  if (ir_len + s.length < sizeof(ir)) {
    memcpy(ir + ir_len, s.data, s.length);
    ir_len += s.length;
    ir[ir_len] = 0;
  }
}

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirFiRegisterCompilerDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  const char *text =
      "func.func @merge(%va: tensor<?x4x16xf32>, %sa: tensor<?x4xf32>, %vb: tensor<?x4x16xf32>,\n"
      "    %sb: tensor<?x4xf32>, %vo: tensor<?x4x16xf32>) -> tensor<?x4x16xf32>\n"
      "    attributes {llvm.emit_c_interface} {\n"
      "  %r = fi.merge_state a(%va, %sa : tensor<?x4x16xf32>, tensor<?x4xf32>)\n"
      "      b(%vb, %sb : tensor<?x4x16xf32>, tensor<?x4xf32>) outs(%vo : tensor<?x4x16xf32>)\n"
      "      -> tensor<?x4x16xf32>\n"
      "  return %r : tensor<?x4x16xf32>\n"
      "}\n";
  MlirModule module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(module)) {
    printf("parse failed\n");
    return 1;
  }
  if (mlirLogicalResultIsFailure(mlirFiLowerToLLVM(module, mlirStringRefCreateFromCString(""))) ||
      mlirLogicalResultIsFailure(mlirFiTranslateToLLVMIR(module, collect, NULL))) {
    printf("lowering failed\n");
    return 1;
  }
  if (!strstr(ir, "define void @_mlir_ciface_merge(") ||
      !strstr(ir, "@_mlir_ciface_fi_rt_merge_state_f32(")) {
    printf("unexpected LLVM IR:\n%s\n", ir);
    return 1;
  }
  printf("consumer_capi: fi-to-llvm through the installed C API OK (%zu bytes of LLVM IR)\n", ir_len);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
