//===- TestDownstreamConversion.cpp - fi's patterns in another pipeline ---===//
//
// `test-fi-downstream-conversion`: what a compiler with its own dialect-conversion
// pipeline does with fi's lowering (lowering/include/fi/Lowering/Passes.h): it builds its
// own type converter and conversion target, adds fi's patterns (and fi's memref.copy
// patterns) to its own, here a pattern of the compiler's that rewrites
// `arith.addi %x, %c0` into `%x`, and applies them all in one partial conversion. fi
// itself is not run as a pass. The input must meet the patterns' preconditions (plans
// present, as fi-materialize-plans leaves them).
//
//===----------------------------------------------------------------------===//
#include "fi/Dialect/FiDialect.h"
#include "fi/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace {
/// The downstream compiler's own pattern: x + 0 -> x.
struct FoldAddZero : OpConversionPattern<arith::AddIOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(arith::AddIOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!matchPattern(adaptor.getRhs(), m_Zero()))
      return failure();
    rewriter.replaceOp(op, adaptor.getLhs());
    return success();
  }
};

struct TestDownstreamConversion
    : PassWrapper<TestDownstreamConversion, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestDownstreamConversion)
  StringRef getArgument() const final { return "test-fi-downstream-conversion"; }
  StringRef getDescription() const final {
    return "Apply fi's runtime lowering as patterns inside a conversion of one's own";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, memref::MemRefDialect, arith::ArithDialect,
                    scf::SCFDialect, LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (failed(fi::generateVariantHooks(getOperation())))
      return signalPassFailure();
    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    fi::populateFiToRuntimeTypeConversions(converter);
    RewritePatternSet patterns(ctx);
    patterns.add<FoldAddZero>(converter, ctx);
    fi::populateFiToRuntimeConversionPatterns(converter, patterns, "host");
    fi::populateMemrefCopyToFiRuntimePatterns(converter, patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<fi::FiDialect>();
    target.addIllegalOp<memref::CopyOp>();
    target.addDynamicallyLegalOp<arith::AddIOp>(
        [](arith::AddIOp op) { return !matchPattern(op.getRhs(), m_Zero()); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

namespace mlir::fi::test {
void registerTestPasses() { PassRegistration<TestDownstreamConversion>(); }
} // namespace mlir::fi::test
