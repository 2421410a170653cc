//===- FiBufferization.cpp - one-shot-bufferize support for fi ops --------===//
//
// One model for every fi op: tensor operands become buffers, the op is re-created
// with the same attributes and no tensor results (the memref form), and each tensor
// result is replaced by the buffer of its destination.
//
//===----------------------------------------------------------------------===//
#include "fi/Dialect/FiDialect.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {
template <typename OpTy>
struct FiBufferizableModel
    : public BufferizableOpInterface::ExternalModel<FiBufferizableModel<OpTy>, OpTy> {
  static bool isInit(Operation *op, OpOperand &operand) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    return dps && dps.isDpsInit(&operand);
  }

  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    // Destinations are only written, except the cache that append_paged_kv updates.
    return !isInit(op, operand) || isa<fi::AppendPagedKvOp>(op);
  }

  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return isInit(op, operand);
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (!isInit(op, operand))
      return {};
    auto dps = cast<DestinationStyleOpInterface>(op);
    return {{dps.getTiedOpResult(&operand), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      if (!isa<TensorType>(operand.getType())) {
        operands.push_back(operand);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    // Tensor results go away (their values live in the destination buffers); other
    // results (a plan) stay.
    SmallVector<Type> resultTypes;
    for (Type type : op->getResultTypes())
      if (!isa<TensorType>(type))
        resultTypes.push_back(type);

    rewriter.setInsertionPoint(op);
    Operation *memrefOp = Operation::create(
        op->getLoc(), op->getName(), resultTypes, operands,
        op->getDiscardableAttrDictionary(), op->getPropertiesStorage(), {}, 0);
    rewriter.insert(memrefOp);

    SmallVector<Value> replacements;
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    unsigned nextKept = 0;
    for (OpResult result : op->getResults()) {
      if (isa<TensorType>(result.getType()))
        replacements.push_back(
            memrefOp->getOperand(dps.getTiedOpOperand(result)->getOperandNumber()));
      else
        replacements.push_back(memrefOp->getResult(nextKept++));
    }
    replaceOpWithBufferizedValues(rewriter, op, replacements);
    return success();
  }
};

template <typename... OpTys>
void attachAll(MLIRContext *context) {
  (OpTys::template attachInterface<FiBufferizableModel<OpTys>>(*context), ...);
}
} // namespace

void mlir::fi::detail::attachBufferizableOpInterfaceModels(MLIRContext *context) {
  attachAll<PagedDecodeOp, PagedPrefillOp, RaggedPrefillOp, MergeStateOp, MergeStatesOp,
            AppendPagedKvOp, DecodePlanOp, PagedPrefillPlanOp, RaggedPrefillPlanOp,
            AppendPlanOp, BlockSparseAttentionOp, BlockSparsePlanOp, SplitSharedPrefixOp>(context);
}
