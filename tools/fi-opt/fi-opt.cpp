//===- fi-opt.cpp - mlir-opt with the fi dialect --------------------------===//
#include "fi/Dialect/FiDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/ProgramStack.h"
#include "llvm/Support/Signals.h"

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

  // MLIR's parser, verifier and passes recurse once per level of nesting (regions, types,
  // attributes), so on the main thread's 8 MB stack mlir-opt overflows near 4,000 nested
  // regions or 20,000 nested parentheses (bench/NOTES.md, session 52). fi-opt runs them on
  // a stack of kStackBytes (reserved, used as needed): room for 100,000 nested regions or
  // several hundred thousand nested parentheses.
  constexpr unsigned kStackBytes = 256u << 20;
  // LLVM's crash handlers (and their alternate signal stack) belong to this thread, not to
  // the worker that MlirOptMain's InitLLVM would give them: AddressSanitizer unmaps a
  // thread's alternate stack as its own when the thread ends.
  llvm::sys::PrintStackTraceOnErrorSignal(argv[0]);
  mlir::LogicalResult result = mlir::failure();
  llvm::runOnNewStack(kStackBytes, [&] {
    result = mlir::MlirOptMain(argc, argv, "fi optimizer driver\n", registry);
  });
  return mlir::asMainReturnCode(result);
}
