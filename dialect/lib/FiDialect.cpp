//===- FiDialect.cpp - the fi dialect, its attributes and types -----------===//
#include "fi/Dialect/FiDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdint>

using namespace mlir;
using namespace mlir::fi;

#include "fi/Dialect/FiEnums.cpp.inc"
#include "fi/Dialect/FiOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fi/Dialect/FiAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "fi/Dialect/FiOpsTypes.cpp.inc"

#define GET_OP_CLASSES
#include "fi/Dialect/FiOps.cpp.inc"

void FiDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "fi/Dialect/FiOps.cpp.inc"
      >();
  // Attached here so that every context that loads fi can bufferize its ops.
  detail::attachBufferizableOpInterfaceModels(getContext());
}

void FiDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fi/Dialect/FiAttrs.cpp.inc"
      >();
}

void FiDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "fi/Dialect/FiOpsTypes.cpp.inc"
      >();
}

/// Discardable `fi.*` attributes: `fi.lane` is checked here (the lowering's other markers,
/// e.g. `fi.variant` on calls, are its own business).
LogicalResult FiDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (attr.getName() != "fi.lane")
    return success();
  auto lane = dyn_cast<StringAttr>(attr.getValue());
  if (!lane || (lane.getValue() != "main" && lane.getValue() != "side"))
    return op->emitError() << "'fi.lane' must be \"main\" or \"side\", got "
                           << attr.getValue();
  if (!isa<PagedDecodeOp, PagedPrefillOp, RaggedPrefillOp, BlockSparseAttentionOp,
           DecodePlanOp, PagedPrefillPlanOp, RaggedPrefillPlanOp, BlockSparsePlanOp>(op))
    return op->emitError() << "'fi.lane' is for fi attention ops and their plans, not "
                           << op->getName() << "; drop it (ops without a lane run on the "
                              "context's stream after the lanes join)";
  return success();
}

FailureOr<bool> mlir::fi::parseBoolKeyword(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(), "expected 'true' or 'false'");
}

//===----------------------------------------------------------------------===//
// Attribute verifiers
//===----------------------------------------------------------------------===//

LogicalResult BsrAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t blockRows, int64_t blockCols, KvLayout) {
  if (blockRows < 1)
    return emitError() << "#fi.bsr block_rows = " << blockRows
                       << " must be >= 1 (1 for plain decode, the GQA group or the "
                          "number of requests sharing a prefix otherwise)";
  if (blockCols < 1)
    return emitError() << "#fi.bsr block_cols = " << blockCols
                       << " must be >= 1: it is the page size in tokens";
  return success();
}

LogicalResult TilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t qTile, int64_t kvTile, bool, Cores) {
  if (qTile < 1)
    return emitError() << "#fi.tiles q = " << qTile
                       << " must be >= 1 (1 for decode, else 16, 32, 64 or 128)";
  if (kvTile < 1)
    return emitError() << "#fi.tiles kv = " << kvTile
                       << " must be >= 1 (KV tokens per pipeline stage, e.g. 64)";
  return success();
}

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t smVersion, int64_t smCount,
                                 int64_t smemPerBlock, int64_t dramGbpsPerSm) {
  if (smVersion < 1)
    return emitError() << "#fi.target sm = " << smVersion
                       << " must be a positive SM version, e.g. 90 for Hopper";
  if (smCount < 1)
    return emitError() << "#fi.target sm_count = " << smCount
                       << " must be >= 1 (132 on an H100 SXM)";
  if (smemPerBlock < 1)
    return emitError() << "#fi.target smem = " << smemPerBlock
                       << " must be >= 1 byte (232448 on an H100)";
  if (dramGbpsPerSm < 0 || dramGbpsPerSm > INT32_MAX)
    return emitError() << "#fi.target dram_gbps_per_sm = " << dramGbpsPerSm
                       << " must be >= 0 GB/s per SM and fit 32 bits (25 on an H100 SXM; 0 "
                          "or omitted: unknown)";
  return success();
}

LogicalResult KvShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t ranks, int64_t splitSize) {
  if (ranks < 1 || ranks > 1024)
    return emitError() << "#fi.kv_shard ranks = " << ranks
                       << " must be in 1..1024: it is the number of ranks of the "
                          "communicator the KV is sharded over";
  if (splitSize < 0 || splitSize > INT32_MAX)
    return emitError() << "#fi.kv_shard split_size = " << splitSize
                       << " must be >= 0 (and fit in i32): tokens per split-KV chunk, 0 "
                          "(or absent) for the planner's choice";
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers used by the generated op classes
//===----------------------------------------------------------------------===//

void mlir::fi::detail::getFiMemoryEffects(
    Operation *op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  bool initsAreRead = isa<AppendPagedKvOp>(op);
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    bool isInit = dps && dps.isDpsInit(&operand);
    if (!isInit || initsAreRead)
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
    if (isInit)
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

float mlir::fi::detail::effectiveSmScale(std::optional<llvm::APFloat> smScale,
                                         ShapedType q) {
  if (smScale)
    return smScale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(q.getShape().back()));
}
