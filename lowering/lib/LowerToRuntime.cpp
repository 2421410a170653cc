//===- LowerToRuntime.cpp - fi-lower-to-runtime ---------------------------===//
//
// fi ops on memrefs -> func.call of the C adapters in kernels/src/mlir_adapters.c
// (declared llvm.emit_c_interface; see that file for the ABI). Memref operands are cast
// to fully dynamic strided memrefs, so one declaration serves every static shape; the
// element types are part of the adapter's name (fi_rt_decode_run_f16_f16).
//
// The rewrites are dialect-conversion patterns (populateFiToRuntimeConversionPatterns),
// so that a compiler with its own conversion pipeline adds them to it; the pass applies
// them after the pre-steps a module needs (memory spaces erased, plans materialized).
// A `!fi.plan` value becomes its plan's slot: a module-level memref<1xi64> in which the
// adapters keep the runtime plan and workspace across calls.
//
//===----------------------------------------------------------------------===//
#include "fi/Lowering/Passes.h"

#include "FiOpInfo.h"
#include "VariantCalls.h"
#include "fi/cuda_variants.h"
#include "fi/heuristics.h"
#include "fi/runtime.h"

#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/STLExtras.h"

#include <memory>

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FILOWERTORUNTIME
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

using namespace mlir;
using namespace mlir::fi;

namespace {

/// A verified `fi.lane` value as fi/lanes.h numbers it: 1 "main", 2 "side".
static int laneNumber(StringAttr lane) { return lane.getValue() == "side" ? 2 : 1; }

/// Builds the runtime calls of one op: the helpers every pattern shares. `b` is the
/// pattern's rewriter; ops are created at its insertion point, declarations and slots at
/// the top of the module.
class CallBuilder {
public:
  CallBuilder(OpBuilder &b, Operation *anchor, StringRef backend)
      : module(anchor->getParentOfType<ModuleOp>()), ctx(b.getContext()), b(b),
        backend(backend) {}

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder &b;
  StringRef backend;

  // ---------------------------------------------------------------- helpers --
  Value i32(Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value f32(Location loc, float v) {
    return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), llvm::APFloat(v));
  }
  Value i64FromIndex(Location loc, Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  }

  /// memref<?x...x?xT, strided<[?, ...], offset: ?>>: the type every adapter takes.
  static MemRefType canonicalType(MemRefType t) {
    SmallVector<int64_t> dyn(t.getRank(), ShapedType::kDynamic);
    auto layout = StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic, dyn);
    return MemRefType::get(dyn, t.getElementType(), layout, t.getMemorySpace());
  }
  Value canonical(Location loc, Value v) {
    auto t = cast<MemRefType>(v.getType());
    MemRefType c = canonicalType(t);
    if (t == c)
      return v;
    return memref::CastOp::create(b, loc, c, v);
  }
  /// An empty stand-in for an absent optional memref (the adapter gets a has_x flag).
  Value absent(Location loc, Type element, int64_t rank) {
    SmallVector<int64_t> shape(rank, 0);
    Value empty = memref::AllocaOp::create(b, loc, MemRefType::get(shape, element));
    return canonical(loc, empty);
  }
  /// A BSR matrix's variable block offsets, or two empty arrays (uniform blocks).
  void pushBlockOffsets(Location loc, SmallVectorImpl<Value> &args, Value rows, Value cols) {
    args.push_back(rows ? canonical(loc, rows) : absent(loc, b.getI32Type(), 1));
    args.push_back(cols ? canonical(loc, cols) : absent(loc, b.getI32Type(), 1));
  }
  /// K (index 0) or V (index 1) of a combined cache [P, 2, ...] as a rank-4 view.
  Value combinedPart(Location loc, Value kv, int64_t part) {
    auto t = cast<MemRefType>(kv.getType());
    SmallVector<OpFoldResult> offsets(5, b.getIndexAttr(0));
    offsets[1] = b.getIndexAttr(part);
    SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, kv);
    sizes[1] = b.getIndexAttr(1);
    SmallVector<OpFoldResult> strides(5, b.getIndexAttr(1));
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < 5; ++i)
      if (i != 1)
        shape.push_back(t.getDimSize(i));
    MemRefType viewType =
        memref::SubViewOp::inferRankReducedResultType(shape, t, offsets, sizes, strides);
    Value view = memref::SubViewOp::create(b, loc, viewType, kv, offsets, sizes, strides);
    return canonical(loc, view);
  }

  /// A call of adapter `name`, declared (private, C interface) at the first use. A symbol
  /// of that name that is not a function is an error, not a silent clash.
  FailureOr<func::CallOp> call(Operation *op, StringRef name, ArrayRef<Value> args) {
    Location loc = op->getLoc();
    SmallVector<Type> types;
    for (Value a : args)
      types.push_back(a.getType());
    auto fnType = FunctionType::get(ctx, types, {});
    Operation *existing = SymbolTable::lookupSymbolIn(module, name);
    auto fn = dyn_cast_or_null<func::FuncOp>(existing);
    if (existing && (!fn || fn.getFunctionType() != fnType))
      return op->emitOpError() << "lowers to a call of `" << name << "` " << fnType
                               << ", but the module already has a symbol of that name ("
                               << existing->getName() << "); rename it";
    if (!fn) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      fn = func::FuncOp::create(b, loc, name, fnType);
      fn.setPrivate();
      fn->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
    }
    return func::CallOp::create(b, loc, fn, args);
  }

  /// Lanes (`fi.lane`, fi/lanes.h): the op's calls between fi_rt_lane_enter(1 main, 2
  /// side) and fi_rt_lane_leave; nothing for ops without a lane.
  LogicalResult enterLane(Operation *op) {
    auto lane = op->getAttrOfType<StringAttr>("fi.lane");
    if (!lane)
      return success();
    return call(op, "fi_rt_lane_enter", {i32(op->getLoc(), laneNumber(lane))});
  }
  LogicalResult leaveLane(Operation *op) {
    if (!op->hasAttr("fi.lane"))
      return success();
    return call(op, "fi_rt_lane_leave", {});
  }

  /// A module-level slot in which the adapters keep one plan op's runtime plan and
  /// workspace across calls: `__fi_plan_slot_<n>`, the first free n from `next` on.
  Value newSlot(Location loc, unsigned &next) {
    auto type = MemRefType::get({1}, b.getI64Type());
    std::string name;
    do
      name = "__fi_plan_slot_" + std::to_string(next++);
    while (SymbolTable::lookupSymbolIn(module, name));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto init = DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                                         b.getI64IntegerAttr(0).getValue());
      memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), type, init,
                               /*constant=*/false, /*alignment=*/b.getI64IntegerAttr(8));
    }
    return memref::GetGlobalOp::create(b, loc, type, name);
  }

  /// A call of `callee`, tagged `fi.variant = variant` when the variant is known.
  LogicalResult callWithVariant(Operation *op, StringRef callee, ArrayRef<Value> args,
                                StringRef variant) {
    FailureOr<func::CallOp> c = call(op, callee, args);
    if (failed(c))
      return failure();
    if (!variant.empty())
      (*c)->setAttr("fi.variant", b.getStringAttr(variant));
    return success();
  }

  /// The variant a plan op's tiles name ("plan-time" without tiles; "" for append plans).
  static std::string planVariant(Operation *plan) {
    if (auto d = dyn_cast<DecodePlanOp>(plan))
      return variantName(d.getTilesAttr(), true);
    if (auto p = dyn_cast<PagedPrefillPlanOp>(plan))
      return variantName(p.getTilesAttr(), false);
    if (auto r = dyn_cast<RaggedPrefillPlanOp>(plan))
      return variantName(r.getTilesAttr(), false);
    if (auto s = dyn_cast<BlockSparsePlanOp>(plan))
      return variantName(s.getTilesAttr(), false);
    return "";
  }

  static std::string variantName(TilesAttr tiles, bool decode) {
    if (!tiles)
      return "plan-time";
    fi_tiles t{static_cast<int32_t>(tiles.getQTile()), static_cast<int32_t>(tiles.getKvTile()),
               tiles.getSplitKv() ? 1 : 0,
               static_cast<fi_core_kind>(tiles.getCores())};
    char buf[64];
    return fi_tiles_name(t, decode ? 1 : 0, buf, sizeof(buf));
  }

  // ------------------------------------------------------------ backend check --
  // The CUDA kernels' coverage is the runtime's own list (fi/cuda_variants.h), so this
  // compile-time check and the backend's plan-time check cannot disagree.
  LogicalResult checkBackend(Operation *op, int64_t headDim, Type qType, Type kvType,
                             MaskMode mask, TilesAttr tiles, bool decode) {
    if (backend != "cuda")
      return success();
    fi_op_family family = decode ? FI_OP_DECODE
                          : isa<RaggedPrefillPlanOp, RaggedPrefillOp>(op) ? FI_OP_RAGGED_PREFILL
                          : isa<BlockSparsePlanOp>(op)                    ? FI_OP_BLOCK_SPARSE
                                                                         : FI_OP_PAGED_PREFILL;
    fi_attention_params params = {};
    params.head_dim = static_cast<int32_t>(headDim);
    params.q_dtype = static_cast<fi_dtype>(fiDtypeCode(qType));
    params.kv_dtype = static_cast<fi_dtype>(fiDtypeCode(kvType));
    params.mask_mode = static_cast<fi_mask_mode>(mask);
    fi_tiles chosen = {};
    if (tiles) {
      chosen.q_tile = static_cast<int32_t>(tiles.getQTile());
      chosen.kv_tile = static_cast<int32_t>(tiles.getKvTile());
      chosen.split_kv = tiles.getSplitKv() ? 1 : 0;
      chosen.cores = static_cast<fi_core_kind>(tiles.getCores());
    }
    char why[320];
    if (!fi_cuda_variant_supported(family, &params, tiles ? &chosen : nullptr, why, sizeof why))
      return op->emitOpError() << "cannot run on the CUDA backend: " << why;
    return success();
  }

  // ------------------------------------------------------------------- plans --
  // q's dtype code; fp8 attention's plans (oType set) add o's in bits 8.. (the adapters'
  // shape_params take it apart).
  void pushShape(Location loc, SmallVectorImpl<Value> &args, int64_t qoHeads, int64_t kvHeads,
                 int64_t headDim, int64_t pageSize, Type qType, Type kvType, MaskMode mask,
                 TilesAttr tiles, Type oType = {}) {
    const int64_t qCode = fiDtypeCode(qType) + (oType ? fiDtypeCode(oType) << 8 : 0);
    for (int64_t v : {qoHeads, kvHeads, headDim, pageSize, qCode,
                      static_cast<int64_t>(fiDtypeCode(kvType)),
                      static_cast<int64_t>(mask)})
      args.push_back(i32(loc, v));
    // q_tile = 0: the plan step chooses (the op's query length was not known).
    args.push_back(i32(loc, tiles ? tiles.getQTile() : 0));
    args.push_back(i32(loc, tiles ? tiles.getKvTile() : 0));
    args.push_back(i32(loc, tiles && tiles.getSplitKv() ? 1 : 0));
    // fi_core_kind's value (Cores has the same numbering).
    args.push_back(i32(loc, tiles ? static_cast<int64_t>(tiles.getCores()) : 0));
  }

  /// Context parallelism: a kv-sharded plan (always a host plan, checkPlan) calls the
  /// `_sharded` adapter with the unsharded call's arguments, then ranks and split_size.
  void pushKvShard(Location loc, SmallVectorImpl<Value> &args, KvShardAttr shard,
                   std::string &callee) {
    if (!shard)
      return;
    callee += "_sharded";
    args.push_back(i32(loc, shard.getRanks()));
    args.push_back(i32(loc, shard.getSplitSize()));
  }

  LogicalResult needsTiles(Operation *op) {
    return op->emitOpError()
           << "is `on_device` but has no tiles: a plan made on the GPU cannot choose "
              "them from lengths the host never sees; run --fi-select-tiles first "
              "(fi-to-llvm does) or set `tiles`";
  }

  LogicalResult shardedOnDevice(Operation *op) {
    return op->emitOpError()
           << "is `on_device` and has kv_shard: kv-sharded plans are made on the host (the "
              "plan exchanges a signature between the ranks); drop `on_device` (or lower "
              "without plans-on-device)";
  }

  /// What the plan call of `op` needs that the verifier cannot know: kernels for the
  /// backend, tiles for a plan made on the device, and a host plan where the KV is sharded.
  LogicalResult checkPlan(Operation *op) {
    if (auto d = dyn_cast<DecodePlanOp>(op)) {
      if (d.getOnDevice() && d.getKvShardAttr())
        return shardedOnDevice(op);
      if (failed(checkBackend(op, d.getHeadDim(), d.getQType(), d.getKvType(), MaskMode::none,
                              d.getTilesAttr(), true)))
        return failure();
      if (d.getOnDevice() && !d.getTilesAttr())
        return needsTiles(op);
    } else if (auto p = dyn_cast<PagedPrefillPlanOp>(op)) {
      if (p.getOnDevice() && p.getKvShardAttr())
        return shardedOnDevice(op);
      if (failed(checkBackend(op, p.getHeadDim(), p.getQType(), p.getKvType(), p.getMaskMode(),
                              p.getTilesAttr(), false)))
        return failure();
      if (p.getOnDevice() && !p.getTilesAttr())
        return needsTiles(op);
    } else if (auto r = dyn_cast<RaggedPrefillPlanOp>(op)) {
      if (failed(checkBackend(op, r.getHeadDim(), r.getQType(), r.getKvType(), r.getMaskMode(),
                              r.getTilesAttr(), false)))
        return failure();
      if (r.getOnDevice() && !r.getTilesAttr())
        return needsTiles(op);
    } else if (auto s = dyn_cast<BlockSparsePlanOp>(op)) {
      if (failed(checkBackend(op, s.getHeadDim(), s.getQType(), s.getKvType(), s.getMaskMode(),
                              s.getTilesAttr(), false)))
        return failure();
    } else if (!isa<AppendPlanOp>(op)) {
      return op->emitOpError() << "is not an fi plan op";
    }
    return success();
  }

  /// The plan call of plan op `op` (converted operands `operands`); returns its slot.
  FailureOr<Value> lowerPlan(Operation *op, ValueRange operands, unsigned &nextSlot) {
    Location loc = op->getLoc();
    for (Value operand : operands)
      if (isa<TensorType>(operand.getType()))
        return op->emitOpError() << "is in tensor form; fi-lower-to-runtime needs memrefs: "
                                    "run one-shot-bufferize first (or use fi-to-llvm)";
    // Every check before anything is created: a failing pattern leaves the IR as it was.
    if (failed(checkPlan(op)))
      return failure();
    Value slot = newSlot(loc, nextSlot);
    SmallVector<Value> args = {slot};
    std::string callee;
    if (auto d = dyn_cast<DecodePlanOp>(op)) {
      DecodePlanOp::Adaptor dA(operands, d);
      for (Value v : {dA.getKvIndptr(), dA.getKvIndices(), dA.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i64FromIndex(loc, dA.getNumPages()));
      args.push_back(i32(loc, static_cast<int64_t>(d.getBsr().getLayout())));
      pushShape(loc, args, d.getNumQoHeads(), d.getNumKvHeads(), d.getHeadDim(),
                d.getBsr().getBlockCols(), d.getQType(), d.getKvType(), MaskMode::none,
                d.getTilesAttr());
      callee = d.getOnDevice() ? "fi_rt_decode_plan_device" : "fi_rt_decode_plan";
      pushKvShard(loc, args, d.getKvShardAttr(), callee);
    } else if (auto p = dyn_cast<PagedPrefillPlanOp>(op)) {
      PagedPrefillPlanOp::Adaptor pA(operands, p);
      for (Value v : {pA.getQoIndptr(), pA.getKvIndptr(), pA.getKvIndices(), pA.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      if (p.getOnDevice())  // no custom mask (verifier); the row bound instead
        args.push_back(i64FromIndex(loc, pA.getMaxQoRows()));
      else
        args.push_back(pA.getMaskIndptr() ? canonical(loc, pA.getMaskIndptr())
                                         : absent(loc, b.getI32Type(), 1));
      args.push_back(i64FromIndex(loc, pA.getNumPages()));
      args.push_back(i32(loc, static_cast<int64_t>(p.getBsr().getLayout())));
      pushShape(loc, args, p.getNumQoHeads(), p.getNumKvHeads(), p.getHeadDim(),
                p.getBsr().getBlockCols(), p.getQType(), p.getKvType(), p.getMaskMode(),
                p.getTilesAttr(), p.getOType() ? *p.getOType() : Type());
      callee = p.getOnDevice() ? "fi_rt_paged_prefill_plan_device" : "fi_rt_paged_prefill_plan";
      pushKvShard(loc, args, p.getKvShardAttr(), callee);
    } else if (auto r = dyn_cast<RaggedPrefillPlanOp>(op)) {
      RaggedPrefillPlanOp::Adaptor rA(operands, r);
      for (Value v : {rA.getQoIndptr(), rA.getKvIndptr()})
        args.push_back(canonical(loc, v));
      if (r.getOnDevice()) {  // no custom mask (verifier); the row bounds instead
        args.push_back(i64FromIndex(loc, rA.getMaxQoRows()));
        args.push_back(i64FromIndex(loc, rA.getMaxKvRows()));
      } else {
        args.push_back(rA.getMaskIndptr() ? canonical(loc, rA.getMaskIndptr())
                                         : absent(loc, b.getI32Type(), 1));
      }
      pushShape(loc, args, r.getNumQoHeads(), r.getNumKvHeads(), r.getHeadDim(), 0,
                r.getQType(), r.getKvType(), r.getMaskMode(), r.getTilesAttr(),
                r.getOType() ? *r.getOType() : Type());
      callee = r.getOnDevice() ? "fi_rt_ragged_prefill_plan_device" : "fi_rt_ragged_prefill_plan";
    } else if (auto s = dyn_cast<BlockSparsePlanOp>(op)) {
      BlockSparsePlanOp::Adaptor sA(operands, s);
      for (Value v : {sA.getBsrIndptr(), sA.getBsrIndices()})
        args.push_back(canonical(loc, v));
      pushBlockOffsets(loc, args, sA.getRowOffsets(), sA.getColOffsets());
      const bool paged = static_cast<bool>(sA.getKvIndptr());
      if (paged) {  // the page table and the cache's pages; N is the table's
        for (Value v : {sA.getKvIndptr(), sA.getKvIndices(), sA.getKvLastPageLen()})
          args.push_back(canonical(loc, v));
        args.push_back(i64FromIndex(loc, sA.getNumPages()));
      }
      args.push_back(i64FromIndex(loc, sA.getNumQoRows()));
      if (!paged)
        args.push_back(i64FromIndex(loc, sA.getNumKvRows()));
      args.push_back(i32(loc, s.getBsr().getBlockRows()));
      args.push_back(i32(loc, s.getBsr().getBlockCols()));
      pushShape(loc, args, s.getNumQoHeads(), s.getNumKvHeads(), s.getHeadDim(),
                paged ? s.getBsr().getBlockCols() : 0, s.getQType(), s.getKvType(),
                s.getMaskMode(), s.getTilesAttr());
      callee = paged ? "fi_rt_block_sparse_paged_plan" : "fi_rt_block_sparse_plan";
    } else if (auto a = dyn_cast<AppendPlanOp>(op)) {
      AppendPlanOp::Adaptor aA(operands, a);
      for (Value v : {aA.getAppendIndptr(), aA.getKvIndptr(), aA.getKvIndices(),
                      aA.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i64FromIndex(loc, aA.getNumPages()));
      args.push_back(i32(loc, a.getBsr().getBlockCols()));
      callee = a.getOnDevice() ? "fi_rt_append_plan_device" : "fi_rt_append_plan";
    }
    if (failed(callWithVariant(op, callee, args, planVariant(op))))
      return failure();
    return slot;
  }

  // ------------------------------------------------------------------- runs ---
  /// The slot of run op `op`'s plan: `converted`, the plan operand after conversion; the
  /// original `plan` must come from a plan op, whose tiles name the variant.
  LogicalResult slotOf(Operation *op, Value plan, Value converted, Value &slot,
                       std::string &variant) {
    if (!plan)
      return op->emitOpError() << "has no plan operand; run fi-materialize-plans before "
                                  "the fi-to-runtime patterns (fi-lower-to-runtime does)";
    Operation *def = plan.getDefiningOp();
    if (!isa_and_nonnull<DecodePlanOp, PagedPrefillPlanOp, RaggedPrefillPlanOp, AppendPlanOp,
                         BlockSparsePlanOp>(def))
      return op->emitOpError()
             << "takes a plan that does not come from an fi plan op of this module (a "
                "function argument or a value passed through control flow); make the plan "
                "in the function that runs the op";
    variant = planVariant(def);
    slot = converted;
    return success();
  }

  void pushAttention(Location loc, SmallVectorImpl<Value> &args, Operation *op, Value q) {
    auto pos = op->getAttrOfType<PosEncodingAttr>("pos_encoding");
    auto fval = [&](StringRef name, float dflt) {
      auto a = op->getAttrOfType<FloatAttr>(name);
      return a ? static_cast<float>(a.getValueAsDouble()) : dflt;
    };
    auto window = op->getAttrOfType<IntegerAttr>("window_left");
    float smScale = mlir::fi::detail::effectiveSmScale(
        op->getAttrOfType<FloatAttr>("sm_scale")
            ? std::optional<llvm::APFloat>(op->getAttrOfType<FloatAttr>("sm_scale").getValue())
            : std::nullopt,
        cast<ShapedType>(q.getType()));
    args.push_back(i32(loc, pos ? static_cast<int64_t>(pos.getValue()) : 0));
    args.push_back(f32(loc, smScale));
    args.push_back(f32(loc, fval("logits_soft_cap", 0.0f)));
    args.push_back(i32(loc, window ? window.getInt() : -1));
    args.push_back(f32(loc, fval("rope_scale", 1.0f)));
    args.push_back(f32(loc, fval("rope_theta", 1.0e4f)));
    args.push_back(f32(loc, fval("k_scale", 1.0f)));
    args.push_back(f32(loc, fval("v_scale", 1.0f)));
    args.push_back(f32(loc, fval("q_scale", 1.0f)));
  }

  void pushKv(Location loc, SmallVectorImpl<Value> &args, Value k, Value v) {
    if (v) {
      args.push_back(canonical(loc, k));
      args.push_back(canonical(loc, v));
    } else {
      args.push_back(combinedPart(loc, k, 0));
      args.push_back(combinedPart(loc, k, 1));
    }
  }

  void pushLse(Location loc, SmallVectorImpl<Value> &args, Value lse) {
    args.push_back(lse ? canonical(loc, lse) : absent(loc, b.getF32Type(), 2));
    args.push_back(i32(loc, lse ? 1 : 0));
  }

  void pushMask(Location loc, SmallVectorImpl<Value> &args, Value mask, Value maskIndptr) {
    args.push_back(mask ? canonical(loc, mask) : absent(loc, b.getI8Type(), 1));
    args.push_back(maskIndptr ? canonical(loc, maskIndptr) : absent(loc, b.getI32Type(), 1));
  }

  /// fp8 attention's run entry points (q f8E4M3FN) take the three per-head scale arrays
  /// after lse, absent (empty) when the op has none; the other entry points take none.
  void pushHeadScales(Location loc, SmallVectorImpl<Value> &args, Value q, Value qs, Value ks,
                      Value vs) {
    if (!isa<Float8E4M3FNType>(cast<ShapedType>(q.getType()).getElementType()))
      return;
    for (Value v : {qs, ks, vs})
      args.push_back(v ? canonical(loc, v) : absent(loc, b.getF32Type(), 1));
  }

  static std::string suffix(std::initializer_list<Value> values) {
    std::string s;
    for (Value v : values)
      s += "_" + elementTypeName(cast<ShapedType>(v.getType()).getElementType());
    return s;
  }
  static std::string maskSuffix(Value mask) {
    return mask && cast<ShapedType>(mask.getType()).getElementType().isUnsignedInteger(8)
               ? "_mask_ui8"
               : "";
  }

  /// The run call of fi op `op` (converted operands `operands`).
  LogicalResult lowerRun(Operation *op, ValueRange operands) {
    Location loc = op->getLoc();
    if (op->getNumResults() != 0)
      return op->emitOpError() << "is in tensor form; fi-lower-to-runtime needs memrefs: "
                                  "run one-shot-bufferize first (or use fi-to-llvm)";
    SmallVector<Value> args;
    std::string callee, variant;
    Value slot;
    if (auto d = dyn_cast<PagedDecodeOp>(op)) {
      PagedDecodeOp::Adaptor dA(operands, d);
      if (failed(slotOf(op, d.getPlan(), dA.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, dA.getQ()));
      pushKv(loc, args, dA.getK(), dA.getV());
      for (Value v : {dA.getKvIndptr(), dA.getKvIndices(), dA.getKvLastPageLen(), dA.getO()})
        args.push_back(canonical(loc, v));
      pushLse(loc, args, dA.getLse());
      args.push_back(i32(loc, static_cast<int64_t>(d.getBsr().getLayout())));
      pushAttention(loc, args, op, dA.getQ());
      if (failed(pushVariantArgs(b, op, dA.getVariantArgs(), args)))
        return failure();
      callee = "fi_rt_decode_run" + suffix({dA.getQ(), dA.getK()});
    } else if (auto p = dyn_cast<PagedPrefillOp>(op)) {
      PagedPrefillOp::Adaptor pA(operands, p);
      if (failed(slotOf(op, p.getPlan(), pA.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, pA.getQ()));
      args.push_back(canonical(loc, pA.getQoIndptr()));
      pushKv(loc, args, pA.getK(), pA.getV());
      for (Value v : {pA.getKvIndptr(), pA.getKvIndices(), pA.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      pushMask(loc, args, pA.getMask(), pA.getMaskIndptr());
      args.push_back(canonical(loc, pA.getO()));
      pushLse(loc, args, pA.getLse());
      if (pA.getMergeV()) {  // (the verifier requires both, and lse)
        args.push_back(canonical(loc, pA.getMergeV()));
        args.push_back(canonical(loc, pA.getMergeS()));
      }
      pushHeadScales(loc, args, pA.getQ(), pA.getQScaleHeads(), pA.getKScaleHeads(),
                     pA.getVScaleHeads());
      args.push_back(i32(loc, static_cast<int64_t>(p.getBsr().getLayout())));
      args.push_back(i32(loc, static_cast<int64_t>(p.getMaskMode())));
      pushAttention(loc, args, op, pA.getQ());
      if (failed(pushVariantArgs(b, op, pA.getVariantArgs(), args)))
        return failure();
      callee = "fi_rt_paged_prefill_run" + suffix({pA.getQ(), pA.getK()}) +
               maskSuffix(pA.getMask()) + (pA.getMergeV() ? "_merge" : "");
    } else if (auto r = dyn_cast<RaggedPrefillOp>(op)) {
      RaggedPrefillOp::Adaptor rA(operands, r);
      if (failed(slotOf(op, r.getPlan(), rA.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, rA.getQ()));
      if (rA.getV()) {
        args.push_back(canonical(loc, rA.getK()));
        args.push_back(canonical(loc, rA.getV()));
      } else {
        // Combined [nnz_kv, 2, kv_heads, head_dim]: K and V are index 0 and 1 of dim 1.
        for (int64_t part = 0; part < 2; ++part) {
          auto t = cast<MemRefType>(rA.getK().getType());
          SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
          offsets[1] = b.getIndexAttr(part);
          SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, rA.getK());
          sizes[1] = b.getIndexAttr(1);
          SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
          SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(2), t.getDimSize(3)};
          MemRefType viewType = memref::SubViewOp::inferRankReducedResultType(
              shape, t, offsets, sizes, strides);
          args.push_back(canonical(
              loc, memref::SubViewOp::create(b, loc, viewType, rA.getK(), offsets, sizes,
                                             strides)));
        }
      }
      args.push_back(canonical(loc, rA.getQoIndptr()));
      args.push_back(canonical(loc, rA.getKvIndptr()));
      pushMask(loc, args, rA.getMask(), rA.getMaskIndptr());
      args.push_back(canonical(loc, rA.getO()));
      pushLse(loc, args, rA.getLse());
      pushHeadScales(loc, args, rA.getQ(), rA.getQScaleHeads(), rA.getKScaleHeads(),
                     rA.getVScaleHeads());
      args.push_back(i32(loc, static_cast<int64_t>(r.getMaskMode())));
      pushAttention(loc, args, op, rA.getQ());
      if (failed(pushVariantArgs(b, op, rA.getVariantArgs(), args)))
        return failure();
      callee = "fi_rt_ragged_prefill_run" + suffix({rA.getQ(), rA.getK()}) + maskSuffix(rA.getMask());
    } else if (auto s = dyn_cast<BlockSparseAttentionOp>(op)) {
      BlockSparseAttentionOp::Adaptor sA(operands, s);
      if (failed(slotOf(op, s.getPlan(), sA.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      for (Value v : {sA.getQ(), sA.getK(), sA.getV(), sA.getBsrIndptr(), sA.getBsrIndices()})
        args.push_back(canonical(loc, v));
      pushBlockOffsets(loc, args, sA.getRowOffsets(), sA.getColOffsets());
      const bool paged = static_cast<bool>(sA.getKvIndptr());
      if (paged)  // k, v above are the cache; its page table, then (below) its layout
        for (Value v : {sA.getKvIndptr(), sA.getKvIndices(), sA.getKvLastPageLen()})
          args.push_back(canonical(loc, v));
      args.push_back(canonical(loc, sA.getO()));
      pushLse(loc, args, sA.getLse());
      if (paged)
        args.push_back(i32(loc, static_cast<int64_t>(s.getBsr().getLayout())));
      pushAttention(loc, args, op, sA.getQ());
      if (failed(pushVariantArgs(b, op, sA.getVariantArgs(), args)))
        return failure();
      callee = (paged ? "fi_rt_block_sparse_paged_run" : "fi_rt_block_sparse_run") +
               suffix({sA.getQ(), sA.getK()});
    } else if (auto m = dyn_cast<MergeStateOp>(op)) {
      MergeStateOp::Adaptor mA(operands, m);
      for (Value v : {mA.getVA(), mA.getSA(), mA.getVB(), mA.getSB(), mA.getVOut()})
        args.push_back(canonical(loc, v));
      pushLse(loc, args, mA.getSOut());
      callee = "fi_rt_merge_state" + suffix({mA.getVA()});
    } else if (auto m = dyn_cast<MergeStatesOp>(op)) {
      MergeStatesOp::Adaptor mA(operands, m);
      for (Value v : {mA.getV(), mA.getS(), mA.getVOut()})
        args.push_back(canonical(loc, v));
      pushLse(loc, args, mA.getSOut());
      callee = "fi_rt_merge_states" + suffix({mA.getV()});
    } else if (auto sp = dyn_cast<SplitSharedPrefixOp>(op)) {
      SplitSharedPrefixOp::Adaptor sA(operands, sp);
      for (Value v : {sA.getKvIndptr(), sA.getKvIndices(), sA.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i64FromIndex(loc, sA.getNumPages()));
      for (Value v : {sA.getPrefixQoIndptr(), sA.getPrefixIndptr(), sA.getPrefixIndices(),
                      sA.getPrefixLastPageLen(),
                      sA.getSuffixIndptr(), sA.getSuffixIndices(), sA.getSuffixLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i32(loc, sp.getPageSize()));
      callee = "fi_rt_split_shared_prefix";
    } else if (auto a = dyn_cast<AppendPagedKvOp>(op)) {
      AppendPagedKvOp::Adaptor aA(operands, a);
      if (failed(slotOf(op, a.getPlan(), aA.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, aA.getKNew()));
      args.push_back(canonical(loc, aA.getVNew()));
      args.push_back(canonical(loc, aA.getAppendIndptr()));
      pushKv(loc, args, aA.getKCache(), aA.getVCache());
      for (Value v : {aA.getKvIndptr(), aA.getKvIndices(), aA.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i32(loc, static_cast<int64_t>(a.getBsr().getLayout())));
      callee = "fi_rt_append_run" + suffix({aA.getKNew()});
    } else {
      return op->emitOpError() << "has no runtime adapter";
    }
    return callWithVariant(op, callee, args, variant);
  }
};

/// #fi.memory<...> has done its work (the plan verifiers checked it): the runtime takes
/// plain pointers, so every memref in it becomes a memref in the default memory space.
static void eraseMemorySpaces(ModuleOp module) {
  AttrTypeReplacer replacer;
  replacer.addReplacement([](MemRefType t) -> std::optional<Type> {
    if (!isa_and_nonnull<MemoryKindAttr>(t.getMemorySpace()))
      return std::nullopt;
    return MemRefType::get(t.getShape(), t.getElementType(), t.getLayout(), Attribute());
  });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
}

/// The adapter name suffix of a copy's element type, or "" when the runtime has none.
static std::string copySuffix(Type t) {
  if (t.isIndex())
    return "index";
  if (isa<Float8E4M3FNType>(t))
    return "f8E4M3FN";
  if (isa<Float8E5M2Type>(t))
    return "f8E5M2";
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64() || t.isInteger(1) || t.isInteger(8) ||
      t.isInteger(16) || t.isInteger(32) || t.isInteger(64)) {
    std::string s;
    llvm::raw_string_ostream os(s);
    t.print(os);
    return s;
  }
  return "";
}

/// memref.copy -> fi_rt_memref_copy_<type>(elem_bytes, src, dst): a stream-ordered device
/// copy on CUDA (the default lowering would copy with a host loop or memcpy, reading
/// device memory on the host). A self-copy (bufferization's write-back in place) goes.
/// memref.copy -> fi_rt_memref_copy_<t>(element bytes, unranked source, unranked target):
/// a stream-ordered copy on the CUDA backend (never a host loop over device memory).
struct MemrefCopyToRuntime : public OpConversionPattern<memref::CopyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(memref::CopyOp c, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (adaptor.getSource() == adaptor.getTarget()) {
      rewriter.eraseOp(c);
      return success();
    }
    auto src = cast<MemRefType>(adaptor.getSource().getType());
    std::string suffix = copySuffix(src.getElementType());
    if (suffix.empty())
      return c.emitOpError() << "copies elements of type " << src.getElementType()
                             << ", for which the fi runtime has no copy; copy f16, bf16, "
                                "f32, f64, fp8, i1-i64 or index";
    Location loc = c.getLoc();
    auto unranked = [&](Value v) -> Value {
      auto t = cast<MemRefType>(v.getType());
      return memref::CastOp::create(
          rewriter, loc, UnrankedMemRefType::get(t.getElementType(), t.getMemorySpace()), v);
    };
    unsigned bits = src.getElementType().isIndex() ? 64
                                                   : src.getElementType().getIntOrFloatBitWidth();
    Value elemBytes = arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                                   std::max(1u, (bits + 7) / 8));
    CallBuilder cb(rewriter, c, "any");
    if (failed(cb.call(c, "fi_rt_memref_copy_" + suffix,
                       {elemBytes, unranked(adaptor.getSource()), unranked(adaptor.getTarget())})))
      return failure();
    rewriter.eraseOp(c);
    return success();
  }
};

/// The buffer a memref value views (through views and casts).
static Value bufferRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      v = cast.getSource();
    else
      break;
  }
  return v;
}

/// Ops of the two lanes run at once until the lanes join (the runtime joins them before any
/// other fi op's calls). Where an op of one lane would read a buffer the other lane writes,
/// or write one it reads or writes, since the last join, a join call goes before it: the
/// lanes then run that op after the other lane's work instead of racing it.
static LogicalResult joinDependentLanes(ModuleOp module, StringRef backend) {
  WalkResult result = module.walk([&](Block *block) {
    llvm::DenseSet<Value> reads[2], writes[2];
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      auto lane = op.getAttrOfType<StringAttr>("fi.lane");
      if (!lane) {
        if (op.getDialect() && isa<FiDialect>(op.getDialect()))
          for (int i = 0; i < 2; ++i)
            reads[i].clear(), writes[i].clear();
        continue;
      }
      const int me = laneNumber(lane) - 1, other = 1 - me;
      SmallVector<Value> opReads, opWrites;
      auto dps = dyn_cast<DestinationStyleOpInterface>(&op);
      for (OpOperand &use : op.getOpOperands()) {
        if (!isa<MemRefType>(use.get().getType()))
          continue;
        (dps && dps.isDpsInit(&use) ? opWrites : opReads).push_back(bufferRoot(use.get()));
      }
      bool conflict = false;
      for (Value w : opWrites)
        conflict |= reads[other].contains(w) || writes[other].contains(w);
      for (Value r : opReads)
        conflict |= writes[other].contains(r);
      if (conflict) {
        OpBuilder b(&op);
        CallBuilder cb(b, &op, backend);
        if (failed(cb.call(&op, "fi_rt_lanes_join", {})))
          return WalkResult::interrupt();
        for (int i = 0; i < 2; ++i)
          reads[i].clear(), writes[i].clear();
      }
      reads[me].insert(opReads.begin(), opReads.end());
      writes[me].insert(opWrites.begin(), opWrites.end());
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// A plan op in a lane plans for that lane's SMs: the ops it feeds must run in the same
/// lane (a plan for the main lane's SMs run on every SM would leave SMs idle).
static LogicalResult checkPlanLane(Operation *plan) {
  auto laneOf = [&](Operation *op) -> Attribute {
    Attribute lane = op->getAttr("fi.lane");
    return lane ? lane : StringAttr::get(plan->getContext(), "(none)");
  };
  for (Operation *user : plan->getUsers())
    if (laneOf(user) != laneOf(plan))
      return plan->emitOpError() << "is in lane " << laneOf(plan) << " but feeds "
                                 << user->getName() << " in lane " << laneOf(user)
                                 << "; give a plan and the ops it feeds the same `fi.lane`";
  return success();
}

/// A plan op -> its plan call; the `!fi.plan` result becomes the call's slot.
template <typename PlanOp>
struct PlanToRuntime : public OpConversionPattern<PlanOp> {
  // Arguments by const reference: patterns.add<A, B, ...> passes the same ones to each.
  PlanToRuntime(const TypeConverter &converter, MLIRContext *ctx, StringRef backend,
                const std::shared_ptr<unsigned> &nextSlot)
      : OpConversionPattern<PlanOp>(converter, ctx), backend(backend.str()),
        nextSlot(nextSlot) {}
  LogicalResult matchAndRewrite(PlanOp op, typename PlanOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    CallBuilder cb(rewriter, op, backend);
    if (failed(checkPlanLane(op)))
      return failure();
    if (failed(cb.enterLane(op)))
      return failure();
    FailureOr<Value> slot = cb.lowerPlan(op, adaptor.getOperands(), *nextSlot);
    if (failed(slot) || failed(cb.leaveLane(op)))
      return failure();
    rewriter.replaceOp(op, *slot);
    return success();
  }
  std::string backend;
  std::shared_ptr<unsigned> nextSlot; // slot names, shared by the plan patterns
};

/// An attention, merge or append op -> its run call (the plan operand is its slot).
template <typename RunOp>
struct RunToRuntime : public OpConversionPattern<RunOp> {
  RunToRuntime(const TypeConverter &converter, MLIRContext *ctx, StringRef backend)
      : OpConversionPattern<RunOp>(converter, ctx), backend(backend.str()) {}
  LogicalResult matchAndRewrite(RunOp op, typename RunOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    CallBuilder cb(rewriter, op, backend);
    if (std::optional<AttentionInfo> info = getAttentionInfo(op))
      if (failed(cb.checkBackend(op, info->headDim, info->qType, info->kvType, info->mask,
                                 info->tiles, info->family == PlanFamily::decode)))
        return failure();
    if (failed(cb.enterLane(op)) || failed(cb.lowerRun(op, adaptor.getOperands())) ||
        failed(cb.leaveLane(op)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
  std::string backend;
};

} // namespace

void mlir::fi::populateFiToRuntimeTypeConversions(TypeConverter &converter) {
  converter.addConversion([](PlanType t) -> Type {
    return MemRefType::get({1}, IntegerType::get(t.getContext(), 64));
  });
}

void mlir::fi::populateFiToRuntimeConversionPatterns(const TypeConverter &converter,
                                                     RewritePatternSet &patterns,
                                                     StringRef backend) {
  MLIRContext *ctx = patterns.getContext();
  auto nextSlot = std::make_shared<unsigned>(0);
  patterns.add<PlanToRuntime<DecodePlanOp>, PlanToRuntime<PagedPrefillPlanOp>,
               PlanToRuntime<RaggedPrefillPlanOp>, PlanToRuntime<AppendPlanOp>,
               PlanToRuntime<BlockSparsePlanOp>>(
      converter, ctx, backend, nextSlot);
  patterns.add<RunToRuntime<PagedDecodeOp>, RunToRuntime<PagedPrefillOp>,
               RunToRuntime<RaggedPrefillOp>, RunToRuntime<BlockSparseAttentionOp>,
               RunToRuntime<MergeStateOp>,
               RunToRuntime<MergeStatesOp>, RunToRuntime<AppendPagedKvOp>,
               RunToRuntime<SplitSharedPrefixOp>>(converter, ctx, backend);
}

void mlir::fi::populateMemrefCopyToFiRuntimePatterns(const TypeConverter &converter,
                                                     RewritePatternSet &patterns) {
  patterns.add<MemrefCopyToRuntime>(converter, patterns.getContext());
}

namespace {
struct FiLowerToRuntimePass : public mlir::fi::impl::FiLowerToRuntimeBase<FiLowerToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (backend != "any" && backend != "host" && backend != "cuda") {
      module.emitError() << "fi-lower-to-runtime: backend=" << backend
                         << " is unknown; use any, host or cuda";
      return signalPassFailure();
    }
    // Pre-steps: memory spaces are facts for the verifiers, not for the calls; every op
    // that needs a plan gets one; a plan may feed only fi ops.
    eraseMemorySpaces(module);
    SmallVector<Operation *> needPlan;
    module.walk([&](Operation *op) {
      if (isa<PagedDecodeOp, PagedPrefillOp, RaggedPrefillOp, AppendPagedKvOp,
              BlockSparseAttentionOp>(op))
        needPlan.push_back(op);
    });
    OpBuilder b(module.getContext());
    NumPagesCache numPages;
    for (Operation *op : needPlan) {
      if (op->getNumResults() != 0) {
        op->emitOpError() << "is in tensor form; fi-lower-to-runtime needs memrefs: run "
                             "one-shot-bufferize first (or use fi-to-llvm)";
        return signalPassFailure();
      }
      materializePlan(b, op, &numPages);
    }
    WalkResult users = module.walk([&](Operation *op) {
      if (!isa<DecodePlanOp, PagedPrefillPlanOp, RaggedPrefillPlanOp, AppendPlanOp,
               BlockSparsePlanOp>(op))
        return WalkResult::advance();
      for (Operation *user : op->getUsers())
        if (!user->getDialect() || !isa<FiDialect>(user->getDialect())) {
          op->emitOpError() << "result is used by " << user->getName()
                            << "; plans may only feed fi ops";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (users.wasInterrupted())
      return signalPassFailure();
    if (failed(joinDependentLanes(module, backend)))
      return signalPassFailure();
    // Variant functions become hooks with the runtime's C signatures.
    VariantDeviceOptions device{variantBitcode, variantChip};
    if (failed(generateVariantHooks(module, backend == "cuda" ? &device : nullptr)))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    populateFiToRuntimeTypeConversions(converter);
    RewritePatternSet patterns(ctx);
    populateFiToRuntimeConversionPatterns(converter, patterns, backend);
    populateMemrefCopyToFiRuntimePatterns(converter, patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<FiDialect>();
    target.addIllegalOp<memref::CopyOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    // A pattern that fails has named the op and the fix; the driver's generic "failed to
    // legalize" after it would only repeat the location.
    bool reported = false;
    ScopedDiagnosticHandler quietDriver(ctx, [&](Diagnostic &d) -> LogicalResult {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      if (reported && StringRef(d.str()).starts_with("failed to legalize operation"))
        return success(); // consumed
      reported = true;
      return failure(); // on to the next handler
    });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // A function that ran ops in lanes joins them before it returns: its caller reads the
    // results on the context's stream.
    WalkResult joins = module.walk([&](func::FuncOp fn) {
      bool lanes = false;
      fn.walk([&](func::CallOp c) { lanes |= c.getCallee() == "fi_rt_lane_enter"; });
      if (!lanes)
        return WalkResult::advance();
      return fn.walk([&](func::ReturnOp ret) {
        OpBuilder rb(ret);
        CallBuilder cb(rb, ret, backend);
        return failed(cb.call(ret, "fi_rt_lanes_join", {})) ? WalkResult::interrupt()
                                                            : WalkResult::advance();
      });
    });
    if (joins.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
