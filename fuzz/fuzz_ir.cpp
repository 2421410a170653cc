//===- fuzz_ir.cpp - libFuzzer target: parse, verify, fi-to-llvm ----------===//
//
// The input is IR text (seeded from test/ and examples/). It is parsed with the fi dialect
// and every upstream dialect registered, verified, and lowered by the fi-to-llvm pipeline
// (tile selection, plan materialization, bufferization, the runtime lowering, LLVM).
// Diagnostics are the expected outcome of bad IR and are dropped; a crash, an assertion or
// a sanitizer report is a finding.
//
//===----------------------------------------------------------------------===//
#include "fi/Dialect/FiDialect.h"
#include "fi/Lowering/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

namespace {
MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registry.insert<fi::FiDialect>();
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 16))
    return 0; // large inputs add nothing the seeds do not have
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&ctx);
  fi::FiToLLVMOptions options;
  fi::buildFiToLLVMPipeline(pm, options);
  (void)pm.run(*module);
  return 0;
}
