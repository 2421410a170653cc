//===- FiPlugin.cpp - fi as a plugin of a stock mlir-opt ------------------===//
//
// One shared object that a stock `mlir-opt` (linked against libMLIR.so, as Debian's
// mlir-opt-22 is) loads twice:
//
//   mlir-opt --load-dialect-plugin=FiPlugin.so --load-pass-plugin=FiPlugin.so \
//     x.mlir --fi-select-tiles --fi-to-llvm
//
// The dialect plugin entry registers the fi dialect; the pass plugin entry registers
// fi's passes and the fi-to-llvm pipeline (mlir::fi::registerFiPasses).
//
//===----------------------------------------------------------------------===//
#include "fi/Dialect/FiDialect.h"
#include "fi/Lowering/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "fi", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) { registry->insert<mlir::fi::FiDialect>(); }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "fi", LLVM_VERSION_STRING,
          []() { mlir::fi::registerFiPasses(); }};
}
