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
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/DenseMap.h"

#include <tuple>

#include <memory>
#include <string>

namespace mlir {
class RewritePatternSet;
class TypeConverter;

namespace fi {

#define GEN_PASS_DECL
#ifndef FI_VARIANT_BITCODE_DEFAULT
#define FI_VARIANT_BITCODE_DEFAULT ""
#endif
#ifndef FI_CUDA_TOOLKIT_DEFAULT
#define FI_CUDA_TOOLKIT_DEFAULT "/usr/local/cuda"
#endif
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
  PassOptions::Option<std::string> cudaToolkit{
      *this, "cuda-toolkit",
      llvm::cl::desc("backend=cuda with variants: the CUDA toolkit whose ptxas and "
                     "libdevice compile them"),
      llvm::cl::init(FI_CUDA_TOOLKIT_DEFAULT)};
  PassOptions::Option<std::string> variantBitcode{
      *this, "variant-bitcode",
      llvm::cl::desc("backend=cuda with variants: the runtime's variant kernels' bitcode"),
      llvm::cl::init(FI_VARIANT_BITCODE_DEFAULT)};
  PassOptions::Option<std::string> variantChip{
      *this, "variant-chip",
      llvm::cl::desc("backend=cuda with variants: the GPU they are compiled for"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<bool> plansOnDevice{
      *this, "plans-on-device",
      llvm::cl::desc("Plans that fi-materialize-plans creates are made on the device "
                     "(`on_device`; prefill with a custom mask excepted): no host "
                     "planning, capturable in CUDA graphs; their index arrays must be "
                     "device memory"),
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
/// With `onDevice`, plans are made on the device (`on_device`; not a custom-mask prefill).
Value materializePlan(OpBuilder &builder, Operation *op, NumPagesCache *numPages = nullptr,
                      bool onDevice = false);

/// fi's lowering as patterns, for a compiler with its own dialect-conversion pipeline (as
/// upstream conversions offer populate...Patterns): every fi op in memref form becomes a
/// func.call of a runtime adapter; plan ops become calls whose `!fi.plan` result is
/// replaced by the plan's slot (a module-level memref<1xi64>). Mark the fi dialect
/// illegal and func, memref and arith legal. Preconditions (fi-lower-to-runtime meets them
/// before it applies the same patterns): every run op has its plan operand
/// (materializePlan / fi-materialize-plans), plans feed only fi ops, and `#fi.memory`
/// spaces are gone from memref types (or converted by `converter`). `backend` = "cuda"
/// rejects ops the CUDA kernels do not cover, naming the op. The calls pass the variant
/// hooks as `!llvm.ptr` values: the LLVM, SCF dialects must be loaded, and ops with a
/// score_mod / mask_mod need generateVariantHooks (below) first.
void populateFiToRuntimeConversionPatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns,
                                           StringRef backend = "any");

/// Device code of variants (backend=cuda): where the variant kernels' bitcode is and the
/// chip they are compiled for.
struct VariantDeviceOptions {
  std::string bitcode;
  std::string chip = "sm_90a";
};

/// Pre-step of the patterns above for attention ops with a score_mod / mask_mod (memref
/// form, functions bufferized): generates each op's hooks, functions with the runtime's
/// C signatures (fi_score_mod_fn / fi_mask_mod_fn) that unpack the op's captured values
/// and call a copy of the user's function whose captured-tensor reads are clamped into
/// bounds. fi-lower-to-runtime runs it.
/// With `device` (backend=cuda), each op with a variant also gets its device code: a
/// `gpu.module @__fi_variant_device_N` for gpu-module-to-binary and the image global
/// `@__fi_variant_image_N` that fi-embed-variant-images fills.
LogicalResult generateVariantHooks(ModuleOp module,
                                   const VariantDeviceOptions *device = nullptr);

/// `!fi.plan` -> memref<1xi64> (the plan's slot), for the converter of the patterns above.
void populateFiToRuntimeTypeConversions(TypeConverter &converter);

/// memref.copy -> fi_rt_memref_copy_<type>: a stream-ordered copy on the CUDA backend
/// (memref-to-llvm's copy is a host loop or memcpy, wrong for device memory).
void populateMemrefCopyToFiRuntimePatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns);

} // namespace fi
} // namespace mlir

#endif // FI_LOWERING_PASSES_H
