//===- Pipelines.cpp - fi-to-llvm and pass registration -------------------===//
#include "fi/Lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FIEMITCINTERFACE
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

namespace {
struct FiEmitCInterfacePass
    : public mlir::fi::impl::FiEmitCInterfaceBase<FiEmitCInterfacePass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        fn->setAttr("llvm.emit_c_interface", UnitAttr::get(&getContext()));
  }
};
} // namespace

void mlir::fi::buildFiToLLVMPipeline(OpPassManager &pm, const FiToLLVMOptions &options) {
  if (options.cInterface)
    pm.addPass(createFiEmitCInterface());
  // Tensor level: decodes over a shared prefix as two formats, choose tiles, make plans
  // explicit, share identical plans.
  pm.addPass(createFiDecomposeSharedPrefix());
  FiSelectTilesOptions select;
  select.devicePlans = options.plansOnDevice;
  pm.addPass(createFiSelectTiles(select));
  FiMaterializePlansOptions plans;
  plans.onDevice = options.plansOnDevice;
  pm.addPass(createFiMaterializePlans(plans));
  pm.addPass(createCSEPass());

  if (options.bufferize) {
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.bufferizeFunctionBoundaries = true;
    bufferize.functionBoundaryTypeConversion =
        bufferization::LayoutMapOption::IdentityLayoutMap;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    // Private functions whose results are argument buffers stop returning them.
    pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
    bufferization::BufferDeallocationPipelineOptions dealloc;
    bufferization::buildBufferDeallocationPipeline(pm, dealloc);
    pm.addPass(createConvertBufferizationToMemRefPass());
  }

  // Memref level: fi ops -> runtime calls.
  FiLowerToRuntimeOptions lower;
  lower.backend = options.backend;
  lower.variantBitcode = options.variantBitcode;
  lower.variantChip = options.variantChip;
  pm.addPass(createFiLowerToRuntime(lower));
  pm.addPass(createCanonicalizerPass());

  // CUDA: the device code of variants (gpu.module @__fi_variant_device_N) to NVVM, linked
  // with the variant kernels' bitcode and compiled through NVPTX and ptxas into a cubin,
  // which becomes the image global the run passes to the runtime.
  if (options.backend == "cuda") {
    OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
    device.addPass(createSCFToControlFlowPass());
    device.addPass(createConvertGpuOpsToNVVMOps());
    device.addPass(createReconcileUnrealizedCastsPass());
    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = options.cudaToolkit;
    binary.compilationTarget = "bin";
    pm.addPass(createGpuModuleToBinaryPass(binary));
    pm.addPass(createFiEmbedVariantImages());
  }

  // To the LLVM dialect.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Buffers that compiled code allocates go through the runtime
  // (_mlir_memref_to_llvm_alloc/free in mlir_adapters.c): backend-visible memory.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::fi::registerFiPasses() {
  registerFiLoweringPasses();
  PassPipelineRegistration<FiToLLVMOptions>(
      "fi-to-llvm",
      "fi on tensors (or memrefs) -> tiles, plans, bufferization, runtime calls -> LLVM "
      "dialect, ready for mlir-translate --mlir-to-llvmir",
      buildFiToLLVMPipeline);
}
