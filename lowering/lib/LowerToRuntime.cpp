//===- LowerToRuntime.cpp - fi-lower-to-runtime ---------------------------===//
//
// fi ops on memrefs -> func.call of the C adapters in kernels/src/mlir_adapters.c
// (declared llvm.emit_c_interface; see that file for the ABI). Memref operands are cast
// to fully dynamic strided memrefs, so one declaration serves every static shape; the
// element types are part of the adapter's name (fi_rt_decode_run_f16_f16).
//
//===----------------------------------------------------------------------===//
#include "fi/Lowering/Passes.h"

#include "FiOpInfo.h"
#include "fi/cuda_variants.h"
#include "fi/heuristics.h"
#include "fi/runtime.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FILOWERTORUNTIME
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

using namespace mlir;
using namespace mlir::fi;

namespace {

class Lowerer {
public:
  Lowerer(ModuleOp module, StringRef backend)
      : module(module), ctx(module.getContext()), b(module.getContext()),
        symbols(module), backend(backend) {}

  LogicalResult run();

private:
  LogicalResult lowerCopies();

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder b;
  SymbolTable symbols;
  std::string backend;
  DenseMap<Value, Value> planSlots; // !fi.plan value -> its slot memref
  DenseMap<Value, std::string> planVariants;
  unsigned numSlots = 0;

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

  func::CallOp call(Location loc, StringRef name, ArrayRef<Value> args) {
    SmallVector<Type> types;
    for (Value a : args)
      types.push_back(a.getType());
    auto fnType = FunctionType::get(ctx, types, {});
    auto fn = symbols.lookup<func::FuncOp>(name);
    if (!fn) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      fn = func::FuncOp::create(b, loc, name, fnType);
      fn.setPrivate();
      fn->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
      symbols.insert(fn);
    }
    return func::CallOp::create(b, loc, fn, args);
  }

  /// A module-level slot in which the adapters keep one plan op's runtime plan and
  /// workspace across calls.
  Value newSlot(Location loc) {
    auto type = MemRefType::get({1}, b.getI64Type());
    memref::GlobalOp global;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto init = DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                                         b.getI64IntegerAttr(0).getValue());
      std::string name = "__fi_plan_slot_" + std::to_string(numSlots++);
      global = memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"),
                                        type, init, /*constant=*/false,
                                        /*alignment=*/b.getI64IntegerAttr(8));
      symbols.insert(global); // renames it if the name is taken
    }
    return memref::GetGlobalOp::create(b, loc, type, global.getSymName());
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
  void pushShape(Location loc, SmallVectorImpl<Value> &args, int64_t qoHeads, int64_t kvHeads,
                 int64_t headDim, int64_t pageSize, Type qType, Type kvType, MaskMode mask,
                 TilesAttr tiles) {
    for (int64_t v : {qoHeads, kvHeads, headDim, pageSize,
                      static_cast<int64_t>(fiDtypeCode(qType)),
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

  LogicalResult lowerPlan(Operation *op) {
    Location loc = op->getLoc();
    for (Value operand : op->getOperands())
      if (isa<TensorType>(operand.getType()))
        return op->emitOpError() << "is in tensor form; fi-lower-to-runtime needs memrefs: "
                                    "run one-shot-bufferize first (or use fi-to-llvm)";
    b.setInsertionPoint(op);
    Value slot = newSlot(loc);
    SmallVector<Value> args = {slot};
    std::string callee, variant;
    if (auto d = dyn_cast<DecodePlanOp>(op)) {
      if (failed(checkBackend(op, d.getHeadDim(), d.getQType(), d.getKvType(), MaskMode::none,
                              d.getTilesAttr(), true)))
        return failure();
      for (Value v : {d.getKvIndptr(), d.getKvIndices(), d.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i64FromIndex(loc, d.getNumPages()));
      args.push_back(i32(loc, static_cast<int64_t>(d.getBsr().getLayout())));
      pushShape(loc, args, d.getNumQoHeads(), d.getNumKvHeads(), d.getHeadDim(),
                d.getBsr().getBlockCols(), d.getQType(), d.getKvType(), MaskMode::none,
                d.getTilesAttr());
      callee = d.getOnDevice() ? "fi_rt_decode_plan_device" : "fi_rt_decode_plan";
      if (d.getOnDevice() && !d.getTilesAttr())
        return op->emitOpError()
               << "is `on_device` but has no tiles: a plan made on the GPU cannot choose "
                  "them from lengths the host never sees; run --fi-select-tiles first "
                  "(fi-to-llvm does) or set `tiles`";
      variant = variantName(d.getTilesAttr(), true);
    } else if (auto p = dyn_cast<PagedPrefillPlanOp>(op)) {
      if (failed(checkBackend(op, p.getHeadDim(), p.getQType(), p.getKvType(),
                              p.getMaskMode(), p.getTilesAttr(), false)))
        return failure();
      for (Value v : {p.getQoIndptr(), p.getKvIndptr(), p.getKvIndices(), p.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(p.getMaskIndptr() ? canonical(loc, p.getMaskIndptr())
                                       : absent(loc, b.getI32Type(), 1));
      args.push_back(i64FromIndex(loc, p.getNumPages()));
      args.push_back(i32(loc, static_cast<int64_t>(p.getBsr().getLayout())));
      pushShape(loc, args, p.getNumQoHeads(), p.getNumKvHeads(), p.getHeadDim(),
                p.getBsr().getBlockCols(), p.getQType(), p.getKvType(), p.getMaskMode(),
                p.getTilesAttr());
      callee = "fi_rt_paged_prefill_plan";
      variant = variantName(p.getTilesAttr(), false);
    } else if (auto r = dyn_cast<RaggedPrefillPlanOp>(op)) {
      if (failed(checkBackend(op, r.getHeadDim(), r.getQType(), r.getKvType(),
                              r.getMaskMode(), r.getTilesAttr(), false)))
        return failure();
      for (Value v : {r.getQoIndptr(), r.getKvIndptr()})
        args.push_back(canonical(loc, v));
      args.push_back(r.getMaskIndptr() ? canonical(loc, r.getMaskIndptr())
                                       : absent(loc, b.getI32Type(), 1));
      pushShape(loc, args, r.getNumQoHeads(), r.getNumKvHeads(), r.getHeadDim(), 0,
                r.getQType(), r.getKvType(), r.getMaskMode(), r.getTilesAttr());
      callee = "fi_rt_ragged_prefill_plan";
      variant = variantName(r.getTilesAttr(), false);
    } else if (auto a = dyn_cast<AppendPlanOp>(op)) {
      for (Value v : {a.getAppendIndptr(), a.getKvIndptr(), a.getKvIndices(),
                      a.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i64FromIndex(loc, a.getNumPages()));
      args.push_back(i32(loc, a.getBsr().getBlockCols()));
      callee = a.getOnDevice() ? "fi_rt_append_plan_device" : "fi_rt_append_plan";
    } else {
      return success();
    }
    func::CallOp c = call(loc, callee, args);
    if (!variant.empty()) {
      c->setAttr("fi.variant", b.getStringAttr(variant));
      planVariants[op->getResult(0)] = variant;
    }
    planSlots[op->getResult(0)] = slot;
    return success();
  }

  // ------------------------------------------------------------------- runs ---
  LogicalResult slotOf(Operation *op, Value plan, Value &slot, std::string &variant) {
    auto it = planSlots.find(plan);
    if (it == planSlots.end())
      return op->emitOpError()
             << "takes a plan that does not come from an fi plan op of this module (a "
                "function argument or a value passed through control flow); make the plan "
                "in the function that runs the op";
    slot = it->second;
    variant = planVariants.lookup(plan);
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

  LogicalResult lowerRun(Operation *op) {
    Location loc = op->getLoc();
    if (op->getNumResults() != 0)
      return op->emitOpError() << "is in tensor form; fi-lower-to-runtime needs memrefs: "
                                  "run one-shot-bufferize first (or use fi-to-llvm)";
    b.setInsertionPoint(op);
    SmallVector<Value> args;
    std::string callee, variant;
    Value slot;
    if (auto d = dyn_cast<PagedDecodeOp>(op)) {
      if (failed(slotOf(op, d.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, d.getQ()));
      pushKv(loc, args, d.getK(), d.getV());
      for (Value v : {d.getKvIndptr(), d.getKvIndices(), d.getKvLastPageLen(), d.getO()})
        args.push_back(canonical(loc, v));
      pushLse(loc, args, d.getLse());
      args.push_back(i32(loc, static_cast<int64_t>(d.getBsr().getLayout())));
      pushAttention(loc, args, op, d.getQ());
      callee = "fi_rt_decode_run" + suffix({d.getQ(), d.getK()});
    } else if (auto p = dyn_cast<PagedPrefillOp>(op)) {
      if (failed(slotOf(op, p.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, p.getQ()));
      args.push_back(canonical(loc, p.getQoIndptr()));
      pushKv(loc, args, p.getK(), p.getV());
      for (Value v : {p.getKvIndptr(), p.getKvIndices(), p.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      pushMask(loc, args, p.getMask(), p.getMaskIndptr());
      args.push_back(canonical(loc, p.getO()));
      pushLse(loc, args, p.getLse());
      args.push_back(i32(loc, static_cast<int64_t>(p.getBsr().getLayout())));
      args.push_back(i32(loc, static_cast<int64_t>(p.getMaskMode())));
      pushAttention(loc, args, op, p.getQ());
      callee = "fi_rt_paged_prefill_run" + suffix({p.getQ(), p.getK()}) + maskSuffix(p.getMask());
    } else if (auto r = dyn_cast<RaggedPrefillOp>(op)) {
      if (failed(slotOf(op, r.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, r.getQ()));
      if (r.getV()) {
        args.push_back(canonical(loc, r.getK()));
        args.push_back(canonical(loc, r.getV()));
      } else {
        // Combined [nnz_kv, 2, kv_heads, head_dim]: K and V are index 0 and 1 of dim 1.
        for (int64_t part = 0; part < 2; ++part) {
          auto t = cast<MemRefType>(r.getK().getType());
          SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
          offsets[1] = b.getIndexAttr(part);
          SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, r.getK());
          sizes[1] = b.getIndexAttr(1);
          SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
          SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(2), t.getDimSize(3)};
          MemRefType viewType = memref::SubViewOp::inferRankReducedResultType(
              shape, t, offsets, sizes, strides);
          args.push_back(canonical(
              loc, memref::SubViewOp::create(b, loc, viewType, r.getK(), offsets, sizes,
                                             strides)));
        }
      }
      args.push_back(canonical(loc, r.getQoIndptr()));
      args.push_back(canonical(loc, r.getKvIndptr()));
      pushMask(loc, args, r.getMask(), r.getMaskIndptr());
      args.push_back(canonical(loc, r.getO()));
      pushLse(loc, args, r.getLse());
      args.push_back(i32(loc, static_cast<int64_t>(r.getMaskMode())));
      pushAttention(loc, args, op, r.getQ());
      callee = "fi_rt_ragged_prefill_run" + suffix({r.getQ(), r.getK()}) + maskSuffix(r.getMask());
    } else if (auto m = dyn_cast<MergeStateOp>(op)) {
      for (Value v : {m.getVA(), m.getSA(), m.getVB(), m.getSB(), m.getVOut()})
        args.push_back(canonical(loc, v));
      pushLse(loc, args, m.getSOut());
      callee = "fi_rt_merge_state" + suffix({m.getVA()});
    } else if (auto m = dyn_cast<MergeStatesOp>(op)) {
      for (Value v : {m.getV(), m.getS(), m.getVOut()})
        args.push_back(canonical(loc, v));
      pushLse(loc, args, m.getSOut());
      callee = "fi_rt_merge_states" + suffix({m.getV()});
    } else if (auto a = dyn_cast<AppendPagedKvOp>(op)) {
      if (failed(slotOf(op, a.getPlan(), slot, variant)))
        return failure();
      args.push_back(slot);
      args.push_back(canonical(loc, a.getKNew()));
      args.push_back(canonical(loc, a.getVNew()));
      args.push_back(canonical(loc, a.getAppendIndptr()));
      pushKv(loc, args, a.getKCache(), a.getVCache());
      for (Value v : {a.getKvIndptr(), a.getKvIndices(), a.getKvLastPageLen()})
        args.push_back(canonical(loc, v));
      args.push_back(i32(loc, static_cast<int64_t>(a.getBsr().getLayout())));
      callee = "fi_rt_append_run" + suffix({a.getKNew()});
    } else {
      return success();
    }
    func::CallOp c = call(loc, callee, args);
    if (!variant.empty())
      c->setAttr("fi.variant", b.getStringAttr(variant));
    op->erase();
    return success();
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
LogicalResult Lowerer::lowerCopies() {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp c) { copies.push_back(c); });
  for (memref::CopyOp c : copies) {
    if (c.getSource() == c.getTarget()) {
      c.erase();
      continue;
    }
    auto src = cast<MemRefType>(c.getSource().getType());
    std::string suffix = copySuffix(src.getElementType());
    if (suffix.empty())
      return c.emitOpError() << "copies elements of type " << src.getElementType()
                             << ", for which the fi runtime has no copy; copy f16, bf16, "
                                "f32, f64, fp8, i1-i64 or index";
    Location loc = c.getLoc();
    b.setInsertionPoint(c);
    auto unranked = [&](Value v) -> Value {
      auto t = cast<MemRefType>(v.getType());
      return memref::CastOp::create(
          b, loc, UnrankedMemRefType::get(t.getElementType(), t.getMemorySpace()), v);
    };
    unsigned bits = src.getElementType().isIndex() ? 64
                                                   : src.getElementType().getIntOrFloatBitWidth();
    Value elemBytes =
        arith::ConstantIntOp::create(b, loc, b.getI64Type(), std::max(1u, (bits + 7) / 8));
    call(loc, "fi_rt_memref_copy_" + suffix,
         {elemBytes, unranked(c.getSource()), unranked(c.getTarget())});
    c.erase();
  }
  return success();
}

LogicalResult Lowerer::run() {
  if (backend != "any" && backend != "host" && backend != "cuda")
    return module.emitError() << "fi-lower-to-runtime: backend=" << backend
                              << " is unknown; use any, host or cuda";
  eraseMemorySpaces(module);
  if (failed(lowerCopies()))
    return failure();
  // Ops without a plan get their own first (as fi-materialize-plans would).
  SmallVector<Operation *> needPlan;
  module.walk([&](Operation *op) {
    if (isa<PagedDecodeOp, PagedPrefillOp, RaggedPrefillOp, AppendPagedKvOp>(op))
      needPlan.push_back(op);
  });
  NumPagesCache numPages;
  for (Operation *op : needPlan) {
    if (op->getNumResults() != 0)
      return op->emitOpError() << "is in tensor form; fi-lower-to-runtime needs memrefs: "
                                  "run one-shot-bufferize first (or use fi-to-llvm)";
    materializePlan(b, op, &numPages);
  }

  SmallVector<Operation *> plans, runs;
  module.walk([&](Operation *op) {
    if (isa<DecodePlanOp, PagedPrefillPlanOp, RaggedPrefillPlanOp, AppendPlanOp>(op))
      plans.push_back(op);
    else if (op->getDialect() && isa<FiDialect>(op->getDialect()))
      runs.push_back(op);
  });
  for (Operation *op : plans)
    if (failed(lowerPlan(op)))
      return failure();
  // Attention ops are checked against the backend too: their tiles may have been set by
  // hand, and the plan op's check does not see ops that took no plan attributes.
  for (Operation *op : runs) {
    if (std::optional<AttentionInfo> info = getAttentionInfo(op))
      if (failed(checkBackend(op, info->headDim, info->qType, info->kvType, info->mask,
                              info->tiles, info->family == PlanFamily::decode)))
        return failure();
    if (failed(lowerRun(op)))
      return failure();
  }
  for (Operation *op : llvm::reverse(plans)) {
    if (!op->use_empty())
      return op->emitOpError() << "result is still used after lowering (by "
                               << (*op->getUsers().begin())->getName()
                               << "); plans may only feed fi ops";
    op->erase();
  }
  return success();
}

struct FiLowerToRuntimePass : public mlir::fi::impl::FiLowerToRuntimeBase<FiLowerToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    Lowerer lowerer(getOperation(), backend);
    if (failed(lowerer.run()))
      signalPassFailure();
  }
};

} // namespace
