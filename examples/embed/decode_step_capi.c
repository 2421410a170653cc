/* examples/embed/decode_step_capi.c -- a compiler embedding fi through the C API.
 *
 * Builds, op by op, a LLaMA-style decode step (32 query heads, 8 KV heads, head_dim 128,
 * page size 16; `layers` layers, each with its own paged K/V cache, all over one page
 * table), runs the fi-to-llvm pipeline on it and writes LLVM IR:
 *
 *   fi-embed-decode-step [out.ll] [layers] [device]
 *
 * With `device`, the plans are made on the GPU (fi-to-llvm's plans-on-device=1): the page
 * table is then device memory and the step can be captured in a CUDA graph
 * (examples/embed/serve_decode_step.c serves it so).
 * The built module (fi ops on tensors) goes to stderr, the LLVM IR to out.ll (stdout if
 * absent or "-"). `llc -filetype=obj` turns the IR into an object whose
 * `_mlir_ciface_decode_step` links with libfi_runtime. Plain C11, no fi-opt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fi-c/Dialect.h"
#include "fi-c/Passes.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/IR.h"

enum { QO_HEADS = 32, KV_HEADS = 8, HEAD_DIM = 128, PAGE = 16, MAX_LAYERS = 64 };

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

static MlirNamedAttribute named(MlirContext ctx, const char *name, MlirAttribute attr) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, str(name)), attr);
}

/* Creates `name` with operands, results and attributes at the end of `block`. */
static MlirOperation add_op(MlirBlock block, MlirLocation loc, const char *name,
                            intptr_t num_operands, const MlirValue *operands,
                            intptr_t num_results, const MlirType *results,
                            intptr_t num_attrs, const MlirNamedAttribute *attrs) {
  MlirOperationState state = mlirOperationStateGet(str(name), loc);
  mlirOperationStateAddOperands(&state, num_operands, operands);
  mlirOperationStateAddResults(&state, num_results, results);
  mlirOperationStateAddAttributes(&state, num_attrs, attrs);
  MlirOperation op = mlirOperationCreate(&state);
  mlirBlockAppendOwnedOperation(block, op);
  return op;
}

static void print_to_file(MlirStringRef text, void *user) {
  fwrite(text.data, 1, text.length, (FILE *)user);
}

int main(int argc, char **argv) {
  const char *out_path = argc > 1 ? argv[1] : "-";
  int layers = argc > 2 ? atoi(argv[2]) : 4;
  int on_device = argc > 3 && strcmp(argv[3], "device") == 0;
  if (argc > 3 && !on_device) {
    fprintf(stderr, "third argument `%s`: use `device` (plans on the GPU) or nothing\n", argv[3]);
    return 2;
  }
  if (layers < 1 || layers > MAX_LAYERS) {
    fprintf(stderr, "layers = %d: use 1..%d\n", layers, MAX_LAYERS);
    return 2;
  }

  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirFiRegisterCompilerDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(ctx);
  MlirLocation loc = mlirLocationUnknownGet(ctx);

  /* Types. */
  int64_t dyn = mlirShapedTypeGetDynamicSize();
  MlirAttribute no_encoding = mlirAttributeGetNull();
  MlirType f16 = mlirF16TypeGet(ctx), i32 = mlirIntegerTypeGet(ctx, 32);
  MlirType index = mlirIndexTypeGet(ctx);
  int64_t q_shape[3] = {dyn, QO_HEADS, HEAD_DIM};
  int64_t cache_shape[4] = {dyn, PAGE, KV_HEADS, HEAD_DIM};
  int64_t vec_shape[1] = {dyn};
  MlirType q_type = mlirRankedTensorTypeGet(3, q_shape, f16, no_encoding);
  MlirType cache_type = mlirRankedTensorTypeGet(4, cache_shape, f16, no_encoding);
  MlirType idx_type = mlirRankedTensorTypeGet(1, vec_shape, i32, no_encoding);

  /* func.func @decode_step(%q, %k0, %v0, ..., %indptr, %indices, %last) -> o */
  int num_args = 1 + 2 * layers + 3;
  MlirType arg_types[1 + 2 * MAX_LAYERS + 3];
  MlirLocation arg_locs[1 + 2 * MAX_LAYERS + 3];
  arg_types[0] = q_type;
  for (int l = 0; l < layers; ++l) arg_types[1 + 2 * l] = arg_types[2 + 2 * l] = cache_type;
  for (int i = 0; i < 3; ++i) arg_types[1 + 2 * layers + i] = idx_type;
  for (int i = 0; i < num_args; ++i) arg_locs[i] = loc;
  MlirType fn_type = mlirFunctionTypeGet(ctx, num_args, arg_types, 1, &q_type);

  MlirModule module = mlirModuleCreateEmpty(loc);
  MlirBlock module_body = mlirModuleGetBody(module);
  MlirRegion fn_region = mlirRegionCreate();
  MlirBlock body = mlirBlockCreate(num_args, arg_types, arg_locs);
  mlirRegionAppendOwnedBlock(fn_region, body);
  MlirNamedAttribute fn_attrs[3] = {
      named(ctx, "sym_name", mlirStringAttrGet(ctx, str("decode_step"))),
      named(ctx, "function_type", mlirTypeAttrGet(fn_type)),
      named(ctx, "llvm.emit_c_interface", mlirUnitAttrGet(ctx)),
  };
  MlirOperationState fn_state = mlirOperationStateGet(str("func.func"), loc);
  mlirOperationStateAddAttributes(&fn_state, 3, fn_attrs);
  mlirOperationStateAddOwnedRegions(&fn_state, 1, &fn_region);
  MlirOperation fn = mlirOperationCreate(&fn_state);
  mlirBlockAppendOwnedOperation(module_body, fn);

  MlirValue q = mlirBlockGetArgument(body, 0);
  MlirValue indptr = mlirBlockGetArgument(body, 1 + 2 * layers);
  MlirValue indices = mlirBlockGetArgument(body, 2 + 2 * layers);
  MlirValue last = mlirBlockGetArgument(body, 3 + 2 * layers);

  /* %b = tensor.dim %q, %c0 */
  MlirNamedAttribute zero = named(ctx, "value", mlirIntegerAttrGet(index, 0));
  MlirValue c0 = mlirOperationGetResult(add_op(body, loc, "arith.constant", 0, NULL, 1, &index, 1, &zero), 0);
  MlirValue dim_operands[2] = {q, c0};
  MlirValue batch = mlirOperationGetResult(add_op(body, loc, "tensor.dim", 2, dim_operands, 1, &index, 0, NULL), 0);

  /* One fi.paged_decode per layer; layer l's output is layer l+1's query (a stand-in for
   * the rest of the transformer block). Operand segments: q, k, v, kv_indptr, kv_indices,
   * kv_last_page_len, variant_args (none: no score_mod / mask_mod), plan (none), o, lse
   * (none). */
  MlirAttribute bsr = mlirFiBsrAttrGet(ctx, 1, PAGE, MlirFiKvLayoutNHD);
  int32_t segments[10] = {1, 1, 1, 1, 1, 1, 0, 0, 1, 0};
  MlirNamedAttribute decode_attrs[2] = {
      named(ctx, "bsr", bsr),
      named(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 10, segments)),
  };
  MlirValue h = q;
  for (int l = 0; l < layers; ++l) {
    MlirValue empty = mlirOperationGetResult(
        add_op(body, loc, "tensor.empty", 1, &batch, 1, &q_type, 0, NULL), 0);
    MlirValue operands[7] = {h,      mlirBlockGetArgument(body, 1 + 2 * l),
                             mlirBlockGetArgument(body, 2 + 2 * l), indptr, indices, last,
                             empty};
    h = mlirOperationGetResult(
        add_op(body, loc, "fi.paged_decode", 7, operands, 1, &q_type, 2, decode_attrs), 0);
  }
  add_op(body, loc, "func.return", 1, &h, 0, NULL, 0, NULL);

  MlirOperation module_op = mlirModuleGetOperation(module);
  if (!mlirOperationVerify(module_op)) {
    fprintf(stderr, "the built module does not verify\n");
    return 1;
  }
  fprintf(stderr, "// built:\n");
  mlirOperationPrint(module_op, print_to_file, stderr);
  fprintf(stderr, "\n");

  if (mlirLogicalResultIsFailure(mlirFiLowerToLLVM(module, str(on_device ? "plans-on-device=1" : "")))) {
    fprintf(stderr, "fi-to-llvm failed\n");
    return 1;
  }
  if (getenv("FI_EMBED_DUMP")) mlirOperationPrint(module_op, print_to_file, stderr);
  FILE *out = strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "w");
  if (!out) {
    perror(out_path);
    return 1;
  }
  if (mlirLogicalResultIsFailure(mlirFiTranslateToLLVMIR(module, print_to_file, out))) {
    fprintf(stderr, "translation to LLVM IR failed\n");
    return 1;
  }
  if (out != stdout) fclose(out);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
