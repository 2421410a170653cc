//===- MaterializePlans.cpp - fi-materialize-plans ------------------------===//
//
// Gives every fi op that can use a plan an explicit plan op, placed as early as its
// operands allow so that the identical plans of all layers of a step are adjacent and
// plain -cse folds them into one. A plan carries its op's `kv_shard` (context
// parallelism), so ops sharded differently (or not at all) never share a plan: the
// attribute differs, and -cse keeps them apart. With `on-device`, a kv-sharded op's plan
// is marked `on_device` as well, which fi-lower-to-runtime then refuses by name (a sharded
// plan exchanges a signature between the ranks on the host).
//
//===----------------------------------------------------------------------===//
#include "fi/Lowering/Passes.h"

#include "FiOpInfo.h"

#include "mlir/IR/Dominance.h"

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FIMATERIALIZEPLANS
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

using namespace mlir;
using namespace mlir::fi;

namespace {

/// True if `op` may write memory that a plan reads (i32 index arrays). fi ops write
/// only their float destinations (fi.split_shared_prefix excepted), so plans may move
/// above them; anything else that
/// writes memory (or whose effects are unknown) is a barrier.
bool mayWriteIndexArrays(Operation *op) {
  if (isa<SplitSharedPrefixOp>(op))
    return true; // it writes the page tables of a shared prefix and its suffixes
  if (op->getDialect() && isa<FiDialect>(op->getDialect()))
    return false;
  if (isMemoryEffectFree(op))
    return false;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return true; // unknown effects (a call, say): be conservative
  return iface.hasEffect<MemoryEffects::Write>() || iface.hasEffect<MemoryEffects::Free>();
}

/// The earliest point in `op`'s block after the definitions of `operands` (and, for
/// memref operands, after any op that may write to the index arrays).
void setEarliestInsertionPoint(OpBuilder &b, Operation *op, ValueRange operands) {
  Block *block = op->getBlock();
  Operation *after = nullptr;
  for (Value v : operands) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block)
      continue; // a block argument or defined in an enclosing block: dominates `block`
    if (!after || after->isBeforeInBlock(def))
      after = def;
  }
  bool memrefForm = llvm::any_of(operands, [](Value v) { return isa<MemRefType>(v.getType()); });
  if (memrefForm) {
    for (Operation *prev = op->getPrevNode(); prev && prev != after; prev = prev->getPrevNode())
      if (mayWriteIndexArrays(prev)) {
        after = prev;
        break;
      }
  }
  if (after)
    b.setInsertionPointAfter(after);
  else
    b.setInsertionPointToStart(block);
}

Value dim0(OpBuilder &b, Location loc, Value v) {
  if (isa<MemRefType>(v.getType()))
    return memref::DimOp::create(b, loc, v, 0);
  return tensor::DimOp::create(b, loc, v, 0);
}

IntegerAttr i64(OpBuilder &b, int64_t v) { return b.getI64IntegerAttr(v); }

/// Dim 0 of `source` for the plan of `op`, shared by all plans with the same `key`: the
/// value already made for `key` if it dominates `op` (so that the plans of all layers
/// stay identical and -cse folds them), else a new one placed right after `source`'s
/// definition (so that it dominates every later layer).
Value sharedDim0(OpBuilder &b, Operation *op, std::tuple<Value, Value, Value> key,
                 Value source, NumPagesCache *known) {
  if (known) {
    auto it = known->find(key);
    if (it != known->end() && DominanceInfo(op).properlyDominates(it->second, op))
      return it->second;
  }
  OpBuilder::InsertionGuard guard(b);
  setEarliestInsertionPoint(b, op, {source});
  Value n = dim0(b, op->getLoc(), source);
  if (known)
    (*known)[key] = n;
  return n;
}

/// The page count of a plan over page table (indptr, indices, last): dim 0 of `cache`.
Value numPagesFor(OpBuilder &b, Operation *op, Value indptr, Value indices, Value last,
                  Value cache, NumPagesCache *known) {
  return sharedDim0(b, op, std::make_tuple(indptr, indices, last), cache, known);
}

/// The row bound of a plan made on the device over `indptr` (kind 0: max_qo_rows, dim 0 of
/// q; 1: max_kv_rows, dim 0 of k). It shares the page-count cache under the keys
/// (indptr, indptr, indptr) and (indptr, indptr, null), which no page table has.
Value rowsFor(OpBuilder &b, Operation *op, Value indptr, Value rows, unsigned kind,
              NumPagesCache *known) {
  Value marker = kind == 0 ? indptr : Value();
  return sharedDim0(b, op, std::make_tuple(indptr, indptr, marker), rows, known);
}

} // namespace

Value mlir::fi::materializePlan(OpBuilder &b, Operation *op, NumPagesCache *known,
                                bool onDevice) {
  UnitAttr device = onDevice ? b.getUnitAttr() : UnitAttr();
  OpBuilder::InsertionGuard guard(b);
  Location loc = op->getLoc();
  MLIRContext *ctx = op->getContext();
  if (auto append = dyn_cast<AppendPagedKvOp>(op)) {
    if (append.getPlan())
      return append.getPlan();
    Value numPages = numPagesFor(b, op, append.getKvIndptr(), append.getKvIndices(),
                                 append.getKvLastPageLen(), append.getKCache(), known);
    setEarliestInsertionPoint(b, op,
                              {append.getAppendIndptr(), append.getKvIndptr(),
                               append.getKvIndices(), append.getKvLastPageLen(), numPages});
    auto plan = AppendPlanOp::create(b, loc, PlanType::get(ctx, PlanFamily::append),
                                     append.getAppendIndptr(), append.getKvIndptr(),
                                     append.getKvIndices(), append.getKvLastPageLen(),
                                     numPages, append.getBsr(), device);
    append.getPlanMutable().assign(plan);
    return plan;
  }

  std::optional<AttentionInfo> info = getAttentionInfo(op);
  if (!info)
    return {};
  if (info->plan)
    return info->plan;
  TypeAttr qType = TypeAttr::get(info->qType), kvType = TypeAttr::get(info->kvType);
  // fp8 attention's plans say the output type (o_type); other plans have none.
  TypeAttr oType =
      isa<Float8E4M3FNType>(info->qType) ? TypeAttr::get(info->oType) : TypeAttr();
  Value plan;
  if (auto d = dyn_cast<PagedDecodeOp>(op)) {
    Value numPages = numPagesFor(b, op, d.getKvIndptr(), d.getKvIndices(),
                                 d.getKvLastPageLen(), d.getK(), known);
    setEarliestInsertionPoint(b, op,
                              {d.getKvIndptr(), d.getKvIndices(), d.getKvLastPageLen(), numPages});
    plan = DecodePlanOp::create(b, loc, PlanType::get(ctx, PlanFamily::decode),
                                d.getKvIndptr(), d.getKvIndices(), d.getKvLastPageLen(),
                                numPages, d.getBsr(), device, i64(b, info->qoHeads),
                                i64(b, info->kvHeads), i64(b, info->headDim), qType, kvType,
                                info->tiles, d.getKvShardAttr());
    d.getPlanMutable().assign(plan);
  } else if (auto p = dyn_cast<PagedPrefillOp>(op)) {
    Value numPages = numPagesFor(b, op, p.getKvIndptr(), p.getKvIndices(),
                                 p.getKvLastPageLen(), p.getK(), known);
    SmallVector<Value> deps = {p.getQoIndptr(), p.getKvIndptr(), p.getKvIndices(),
                               p.getKvLastPageLen(), numPages};
    if (p.getMaskIndptr())
      deps.push_back(p.getMaskIndptr());
    // A custom mask is checked on the host: such a plan stays a host plan.
    const bool dev = onDevice && p.getMaskMode() != MaskMode::custom;
    Value maxQo = dev ? rowsFor(b, op, p.getQoIndptr(), p.getQ(), 0, known) : Value();
    if (maxQo)
      deps.push_back(maxQo);
    setEarliestInsertionPoint(b, op, deps);
    plan = PagedPrefillPlanOp::create(
        b, loc, PlanType::get(ctx, PlanFamily::paged_prefill), p.getQoIndptr(),
        p.getKvIndptr(), p.getKvIndices(), p.getKvLastPageLen(), p.getMaskIndptr(), numPages,
        maxQo, p.getBsr(), p.getMaskModeAttr(), dev ? device : UnitAttr(),
        i64(b, info->qoHeads), i64(b, info->kvHeads), i64(b, info->headDim), qType, kvType,
        info->tiles, p.getKvShardAttr(), oType);
    p.getPlanMutable().assign(plan);
  } else if (auto r = dyn_cast<RaggedPrefillOp>(op)) {
    SmallVector<Value> deps = {r.getQoIndptr(), r.getKvIndptr()};
    if (r.getMaskIndptr())
      deps.push_back(r.getMaskIndptr());
    const bool dev = onDevice && r.getMaskMode() != MaskMode::custom;
    Value maxQo = dev ? rowsFor(b, op, r.getQoIndptr(), r.getQ(), 0, known) : Value();
    Value maxKv = dev ? rowsFor(b, op, r.getKvIndptr(), r.getK(), 1, known) : Value();
    if (dev)
      deps.append({maxQo, maxKv});
    setEarliestInsertionPoint(b, op, deps);
    plan = RaggedPrefillPlanOp::create(
        b, loc, PlanType::get(ctx, PlanFamily::ragged_prefill), r.getQoIndptr(),
        r.getKvIndptr(), r.getMaskIndptr(), maxQo, maxKv, r.getMaskModeAttr(),
        dev ? device : UnitAttr(), i64(b, info->qoHeads), i64(b, info->kvHeads),
        i64(b, info->headDim), qType, kvType, info->tiles, oType);
    r.getPlanMutable().assign(plan);
  } else if (auto s = dyn_cast<BlockSparseAttentionOp>(op)) {
    // M and N (paged: the pages of the cache instead): dim 0 of q and k, made just before
    // the op (they depend on nothing else).
    b.setInsertionPoint(op);
    const bool paged = static_cast<bool>(s.getKvIndptr());
    Value m = dim0(b, loc, s.getQ()), n = dim0(b, loc, s.getK());
    SmallVector<Value> deps = {s.getBsrIndptr(), s.getBsrIndices(), m, n};
    if (s.getRowOffsets())
      deps.append({s.getRowOffsets(), s.getColOffsets()});
    if (paged)
      deps.append({s.getKvIndptr(), s.getKvIndices(), s.getKvLastPageLen()});
    setEarliestInsertionPoint(b, op, deps);
    plan = BlockSparsePlanOp::create(
        b, loc, PlanType::get(ctx, PlanFamily::block_sparse), s.getBsrIndptr(),
        s.getBsrIndices(), s.getRowOffsets(), s.getColOffsets(), s.getKvIndptr(),
        s.getKvIndices(), s.getKvLastPageLen(), paged ? n : Value(), m,
        paged ? Value() : n, s.getBsr(), s.getMaskModeAttr(), i64(b, info->qoHeads),
        i64(b, info->kvHeads), i64(b, info->headDim), qType, kvType, info->tiles);
    s.getPlanMutable().assign(plan);
  }
  // An op whose tiles are left to plan time says so on its plan as well; an op in a lane
  // plans in it (the plan is made for that lane's SMs).
  if (plan && op->hasAttr("fi.tiles_at_plan_time"))
    plan.getDefiningOp()->setAttr("fi.tiles_at_plan_time", UnitAttr::get(ctx));
  if (plan)
    if (Attribute lane = op->getAttr("fi.lane"))
      plan.getDefiningOp()->setAttr("fi.lane", lane);
  return plan;
}

namespace {
struct FiMaterializePlansPass
    : public mlir::fi::impl::FiMaterializePlansBase<FiMaterializePlansPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<PagedDecodeOp, PagedPrefillOp, RaggedPrefillOp, AppendPagedKvOp,
              BlockSparseAttentionOp>(op))
        ops.push_back(op);
    });
    OpBuilder b(&getContext());
    NumPagesCache numPages;
    for (Operation *op : ops)
      materializePlan(b, op, &numPages, onDevice);
  }
};
} // namespace
