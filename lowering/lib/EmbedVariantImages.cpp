//===- EmbedVariantImages.cpp - fi-embed-variant-images -------------------===//
//
// gpu.binary @__fi_variant_device_N (a cubin from gpu-module-to-binary) -> the initializer
// of the image global @__fi_variant_image_N that the op's run passes to the runtime: a
// little-endian uint64 byte count, then the cubin.
//
//===----------------------------------------------------------------------===//
#include "fi/Lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FIEMBEDVARIANTIMAGES
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

using namespace mlir;

namespace {
struct FiEmbedVariantImagesPass
    : public mlir::fi::impl::FiEmbedVariantImagesBase<FiEmbedVariantImagesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::BinaryOp> binaries;
    module.walk([&](gpu::BinaryOp bin) {
      if (bin.getSymName().starts_with("__fi_variant_device_"))
        binaries.push_back(bin);
    });
    OpBuilder b(module.getContext());
    for (gpu::BinaryOp bin : binaries) {
      std::string image =
          "__fi_variant_image_" + bin.getSymName().drop_front(strlen("__fi_variant_device_")).str();
      auto global = dyn_cast_or_null<LLVM::GlobalOp>(SymbolTable::lookupSymbolIn(module, image));
      auto objects = bin.getObjects();
      auto object = objects.size() == 1 ? dyn_cast<gpu::ObjectAttr>(objects[0]) : nullptr;
      if (!global || !object || object.getFormat() != gpu::CompilationTarget::Binary) {
        bin.emitOpError() << "is not one cubin with its image global @" << image
                          << "; run gpu-module-to-binary with format=bin after "
                             "fi-lower-to-runtime (fi-to-llvm does)";
        return signalPassFailure();
      }
      StringRef cubin = object.getObject().getValue();
      std::string bytes(8, '\0');
      uint64_t n = cubin.size();
      for (int i = 0; i < 8; ++i)
        bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
      bytes += cubin.str();
      b.setInsertionPoint(global);
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
      auto filled = LLVM::GlobalOp::create(b, global.getLoc(), type, /*isConstant=*/true,
                                           LLVM::Linkage::Internal, image,
                                           b.getStringAttr(bytes));
      filled.setAlignment(8);
      global.erase();
      bin.erase();
    }
    bool anyGpu = false;
    module.walk([&](Operation *op) {
      if (isa<gpu::GPUModuleOp, gpu::BinaryOp>(op))
        anyGpu = true;
    });
    if (!anyGpu)
      module->removeAttr("gpu.container_module");
  }
};
} // namespace
