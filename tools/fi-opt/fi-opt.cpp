//===- fi-opt.cpp - mlir-opt with the fi dialect --------------------------===//
#include "fi/Dialect/FiDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#ifdef FI_HAVE_LOWERING
#include "fi/Lowering/Passes.h"
#endif
#ifdef FI_HAVE_TEST_PASSES
namespace mlir::fi::test {
void registerTestPasses(); // test/lib
} // namespace mlir::fi::test
#endif

int main(int argc, char **argv) {
  mlir::registerAllPasses();
#ifdef FI_HAVE_LOWERING
  mlir::fi::registerFiPasses(); // fi-select-tiles, fi-materialize-plans, ...
#endif
#ifdef FI_HAVE_TEST_PASSES
  mlir::fi::test::registerTestPasses(); // test-fi-downstream-conversion
#endif

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry); // gpu-module-to-binary (variants on CUDA)
  registry.insert<mlir::fi::FiDialect>();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "fi optimizer driver\n", registry));
}
