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
#include "llvm/Support/thread.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
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

// One input, as fi-opt runs it: parse, verify, fi-to-llvm.
static void runOne(const uint8_t *data, size_t size) {
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module || failed(verify(*module)))
    return;
  PassManager pm(&ctx);
  fi::FiToLLVMOptions options;
  fi::buildFiToLLVMPipeline(pm, options);
  (void)pm.run(*module);
}

namespace {
// Runs the inputs on a stack as deep as fi-opt's (tools/fi-opt): MLIR's parser and verifier
// recurse once per level of nesting, and a 64 KB input nests up to 65,536 levels (the 8 MB
// main stack overflowed at 21,825 nested parentheses: fuzz/regressions/ir). One thread for
// the whole run: a thread per input grew AddressSanitizer's memory by ~0.4 KB an input.
class DeepStackWorker {
public:
  static constexpr unsigned kStackBytes = 256u << 20;
  DeepStackWorker() : thread(std::optional<unsigned>(kStackBytes), [this] { loop(); }) {}
  void run(const uint8_t *d, size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    data = d, size = n, pending = true;
    wake.notify_all();
    wake.wait(lock, [this] { return !pending; });
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [this] { return pending; });
      lock.unlock();
      runOne(data, size);
      lock.lock();
      pending = false;
      wake.notify_all();
    }
  }
  std::mutex mutex;
  std::condition_variable wake;
  const uint8_t *data = nullptr;
  size_t size = 0;
  bool pending = false;
  llvm::thread thread; // (last: it starts once the members above exist)
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 16))
    return 0; // large inputs add nothing the seeds do not have
  static DeepStackWorker *worker = new DeepStackWorker(); // (runs until the process exits)
  worker->run(data, size);
  return 0;
}
