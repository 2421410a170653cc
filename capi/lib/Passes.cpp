//===- Passes.cpp - C API of the fi passes and pipeline -------------------===//
#include "fi-c/Passes.h"

#include "fi/Dialect/FiDialect.h"
#include "fi/Lowering/Passes.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;

void mlirFiRegisterPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] { fi::registerFiPasses(); });
}

void mlirFiRegisterCompilerDialects(MlirDialectRegistry registry) {
  DialectRegistry *r = unwrap(registry);
  registerAllDialects(*r);
  registerAllExtensions(*r);
  registerAllToLLVMIRTranslations(*r);
  r->insert<fi::FiDialect>();
}

MlirLogicalResult mlirFiRunPipeline(MlirModule module, MlirStringRef pipeline) {
  mlirFiRegisterPasses();
  ModuleOp op = unwrap(module);
  // The pass manager is anchored on the module: the text lists its passes, without the
  // builtin.module(...) anchor (stripped if given).
  std::string text = unwrap(pipeline).str();
  const std::string anchor = "builtin.module(";
  if (text.rfind(anchor, 0) == 0 && !text.empty() && text.back() == ')')
    text = text.substr(anchor.size(), text.size() - anchor.size() - 1);
  PassManager pm(op->getContext(), ModuleOp::getOperationName());
  std::string message;
  llvm::raw_string_ostream errors(message);
  if (failed(parsePassPipeline(text, pm, errors))) {
    op.emitError() << "fi: cannot parse the pass pipeline '" << text << "': " << message;
    return wrap(failure());
  }
  return wrap(pm.run(op));
}

MlirLogicalResult mlirFiLowerToLLVM(MlirModule module, MlirStringRef options) {
  std::string text = "fi-to-llvm";
  if (options.length)
    text += "{" + unwrap(options).str() + "}";
  return mlirFiRunPipeline(module, MlirStringRef{text.data(), text.size()});
}

MlirLogicalResult mlirFiTranslateToLLVMIR(MlirModule module, MlirStringCallback callback,
                                          void *userData) {
  ModuleOp op = unwrap(module);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(op, llvmContext);
  if (!llvmModule)
    return wrap(failure());
  detail::CallbackOstream stream(callback, userData);
  llvmModule->print(stream, nullptr);
  stream.flush();
  return wrap(success());
}
