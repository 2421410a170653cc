/*===- fi-c/Passes.h - C API of the fi passes and pipeline --------*- C -*-===*\
|*                                                                            *|
|* Registers fi-select-tiles, fi-materialize-plans, fi-lower-to-runtime and   *|
|* the fi-to-llvm pipeline, and runs them from C: a compiler embedding fi     *|
|* goes from a module it built to LLVM IR without fi-opt.                     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef FI_C_PASSES_H
#define FI_C_PASSES_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the fi passes and the `fi-to-llvm` pipeline with MLIR's global pass
 * registry, so that textual pipelines (mlirParsePassPipeline, mlirFiRunPipeline) can
 * name them. Idempotent. */
MLIR_CAPI_EXPORTED void mlirFiRegisterPasses(void);

/* Inserts into `registry` everything fi-to-llvm and the translation to LLVM IR need:
 * the fi dialect, the upstream dialects and their extensions (bufferization and
 * to-LLVM interfaces), and the LLVM IR translations. Append it to a context with
 * mlirContextAppendDialectRegistry before running the pipeline. */
MLIR_CAPI_EXPORTED void mlirFiRegisterCompilerDialects(MlirDialectRegistry registry);

/* Runs a textual pass pipeline on `module`, e.g. "fi-select-tiles,fi-materialize-plans"
 * or "fi-to-llvm{backend=cuda}" (with or without the builtin.module(...) anchor).
 * Errors (a malformed pipeline, a pass failure) are emitted as diagnostics on the
 * module's context; returns failure then. */
MLIR_CAPI_EXPORTED MlirLogicalResult mlirFiRunPipeline(MlirModule module,
                                                       MlirStringRef pipeline);

/* Runs fi-to-llvm with `options` ("" or e.g. "backend=cuda"): tensors -> tiles ->
 * plans -> bufferization -> runtime calls -> LLVM dialect. */
MLIR_CAPI_EXPORTED MlirLogicalResult mlirFiLowerToLLVM(MlirModule module,
                                                       MlirStringRef options);

/* Translates a module in the LLVM dialect to LLVM IR and passes its text to `callback`
 * (possibly in several pieces). Returns failure (with diagnostics) if the module holds
 * ops that do not translate. */
MLIR_CAPI_EXPORTED MlirLogicalResult mlirFiTranslateToLLVMIR(MlirModule module,
                                                             MlirStringCallback callback,
                                                             void *userData);

#ifdef __cplusplus
}
#endif
#endif /* FI_C_PASSES_H */
