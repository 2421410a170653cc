//===- Passes.h - fi lowering passes and pipelines --------------*- C++ -*-===//
//
// fi-select-tiles, fi-materialize-plans, fi-lower-to-runtime and the fi-to-llvm
// pipeline (tensors -> bufferize -> fi passes -> LLVM dialect).
//
//===----------------------------------------------------------------------===//
#ifndef FI_LOWERING_PASSES_H
#define FI_LOWERING_PASSES_H

#include "fi/Dialect/FiDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/DenseMap.h"

#include <tuple>

#include <memory>
#include <string>

namespace mlir {
namespace fi {

#define GEN_PASS_DECL
#include "fi/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fi/Lowering/Passes.h.inc"

/// Options of the fi-to-llvm pipeline.
struct FiToLLVMOptions : public PassPipelineOptions<FiToLLVMOptions> {
  PassOptions::Option<std::string> backend{
      *this, "backend",
      llvm::cl::desc("Backend to check ops against: any, host or cuda"),
      llvm::cl::init("any")};
  PassOptions::Option<bool> bufferize{
      *this, "bufferize",
      llvm::cl::desc("Run one-shot-bufferize (with function boundaries, identity "
                     "layouts) and buffer deallocation first"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> cInterface{
      *this, "c-interface",
      llvm::cl::desc("Give every public function a C interface (_mlir_ciface_<name>)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> plansOnDevice{
      *this, "plans-on-device",
      llvm::cl::desc("Plans that fi-materialize-plans creates for decode and append ops "
                     "are made on the device (`on_device`): no host planning, capturable "
                     "in CUDA graphs; their index arrays must be device memory"),
      llvm::cl::init(false)};
};

/// tensors -> fi-select-tiles -> fi-materialize-plans -> cse -> one-shot-bufferize ->
/// buffer deallocation -> fi-lower-to-runtime -> LLVM dialect.
void buildFiToLLVMPipeline(OpPassManager &pm, const FiToLLVMOptions &options);

/// Registers the fi passes and the `fi-to-llvm` pipeline with the global registry.
void registerFiPasses();

/// Page counts already materialized per page table (kv_indptr, kv_indices,
/// kv_last_page_len): the layers of a step share one page table, so their plans take the
/// page count of the first layer's cache and fold into one plan under CSE. (The runtime
/// checks at run that every layer's cache has that many pages.)
using NumPagesCache = llvm::DenseMap<std::tuple<Value, Value, Value>, Value>;

/// Inserts the plan op of `op` (an fi op with an optional plan operand but none given)
/// and sets it as the op's plan. Returns the plan value, or null for ops without plans.
/// With `onDevice`, decode and append plans are made on the device (`on_device`).
Value materializePlan(OpBuilder &builder, Operation *op, NumPagesCache *numPages = nullptr,
                      bool onDevice = false);

} // namespace fi
} // namespace mlir

#endif // FI_LOWERING_PASSES_H
