//===- VariantCalls.cpp - score_mod / mask_mod as runtime hooks -----------===//
//
// The captures block: one 8-byte slot per scalar (stored with its own type; index as
// i64), and 2 + 2 * rank slots per memref: aligned pointer, offset, sizes, strides. A
// hook reads them back, rebuilds each memref's descriptor and calls the clamped copy of
// the user's function, so the runtime needs to know nothing about the captured types.
//
//===----------------------------------------------------------------------===//
#include "VariantCalls.h"

#include "fi/Dialect/FiDialect.h"
#include "fi/Lowering/Passes.h"

#include "FiOpInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"

#include "fi/runtime.h"

using namespace mlir;
using namespace mlir::fi;

static constexpr StringLiteral kScoreHook = "fi.score_mod_hook";
static constexpr StringLiteral kMaskHook = "fi.mask_mod_hook";
static constexpr StringLiteral kTileHook = "fi.mask_tile_hook";
static constexpr StringLiteral kImage = "fi.variant_image";

namespace {

int64_t slotsOf(Type t) {
  if (auto m = dyn_cast<MemRefType>(t))
    return 2 + 2 * m.getRank();
  return 1;
}

enum class HookKind { Score, Mask, MaskTile, ScoreScale, ScoreSlope };

/// The runtime's hook signatures: fi_score_mod_fn (score, batch, qo_head, kv_head, q_pos,
/// kv_pos, captures) -> f32, fi_mask_mod_fn (batch, qo_head, q_pos, kv_pos, captures)
/// -> i32 and fi_mask_tile_fn (batch, qo_head first / last, q_pos first / last, kv_pos
/// first / last, captures) -> i32; and on the device only, the score_mod's factors
/// (captures) -> f32 (variant_hooks.cuh, fi_variant_score_in / fi_variant_score_out) and
/// its slope in the key's distance (qo_head, captures) -> f32 (fi_variant_score_slope).
FunctionType hookType(Builder &b, HookKind kind) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  SmallVector<Type> inputs;
  if (kind == HookKind::Score)
    inputs = {f32, i32, i32, i32, i32, i32, ptr};
  else if (kind == HookKind::Mask)
    inputs = {i32, i32, i32, i32, ptr};
  else if (kind == HookKind::MaskTile)
    inputs = {i32, i32, i32, i32, i32, i32, i32, ptr};
  else if (kind == HookKind::ScoreSlope)
    inputs = {i32, ptr};
  else
    inputs = {ptr};
  bool floatResult = kind == HookKind::Score || kind == HookKind::ScoreScale ||
                     kind == HookKind::ScoreSlope;
  return FunctionType::get(b.getContext(), inputs, {floatResult ? f32 : i32});
}

StringRef hookBaseName(HookKind kind) {
  return kind == HookKind::Score      ? "__fi_score_mod_hook"
         : kind == HookKind::Mask     ? "__fi_mask_mod_hook"
         : kind == HookKind::MaskTile ? "__fi_mask_tile_hook"
         : kind == HookKind::ScoreSlope ? "__fi_score_slope_hook"
                                        : "__fi_score_scale_hook";
}

/// Slot `index` (8 bytes each) of the captures block at `block`.
Value captureSlot(OpBuilder &b, Location loc, Value block, int64_t index) {
  return LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()),
                             b.getI64Type(), block,
                             ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
}

std::string freshName(ModuleOp module, StringRef base) {
  for (unsigned n = 0;; ++n) {
    std::string name = (base + "_" + Twine(n)).str();
    if (!SymbolTable::lookupSymbolIn(module, name))
      return name;
  }
}

/// memref<?x...x?xT, strided<[?, ...], offset: ?>> in t's memory space: what a captured
/// memref is inside the variant's copy, whatever its static type (its real sizes, offset
/// and strides come from the descriptor; the clamps read the real sizes).
MemRefType dynamicStrided(MemRefType t) {
  SmallVector<int64_t> dyn(t.getRank(), ShapedType::kDynamic);
  return MemRefType::get(dyn, t.getElementType(),
                         StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic, dyn),
                         t.getMemorySpace());
}

/// Internal linkage: objects of several compiled modules link without clashes.
void internal(func::FuncOp fn) {
  fn->setAttr("llvm.linkage",
              LLVM::LinkageAttr::get(fn.getContext(), LLVM::linkage::Linkage::Internal));
}

/// A view of type `type` (fully dynamic, as clampedCopy's parameters) of a one-element
/// zero constant of its element type (a memref.global in the symbol table of `into`, made
/// once per element type): every index of the view reads the zero.
Value zeroConstantView(OpBuilder &b, Block *into, MemRefType type, Location loc) {
  Type elem = type.getElementType();
  auto scalar = MemRefType::get({1}, elem, MemRefLayoutAttrInterface(), type.getMemorySpace());
  auto init = DenseElementsAttr::get(RankedTensorType::get({1}, elem), b.getZeroAttr(elem));
  std::string base;
  {
    llvm::raw_string_ostream os(base);
    os << "__fi_zero_" << elem;
  }
  // (a symbol of that name that is not this constant, e.g. the program's own: the next name)
  Operation *table = into->getParentOp();
  std::string name = base;
  for (unsigned n = 1;; ++n) {
    Operation *found = SymbolTable::lookupSymbolIn(table, name);
    auto global = dyn_cast_or_null<memref::GlobalOp>(found);
    if (global && global.getConstant() && global.getType() == scalar &&
        global.getInitialValue() == std::optional<Attribute>(init))
      break;
    if (!found) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(into);
      memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), scalar, init,
                               /*constant=*/true, /*alignment=*/IntegerAttr());
      break;
    }
    name = (base + "_" + Twine(n)).str();
  }
  Value global = memref::GetGlobalOp::create(b, loc, scalar, name);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<OpFoldResult> sizes(type.getRank(), one), strides(type.getRank(), zero);
  return memref::ReinterpretCastOp::create(b, loc, type, global, OpFoldResult(zero), sizes,
                                           strides);
}

/// A private copy of the user's function whose memref.load ops clamp every index into
/// the memref's bounds, and read zero from an empty memref: a variant never reads outside
/// a captured tensor, whatever positions it computes.
func::FuncOp clampedCopy(OpBuilder &b, ModuleOp module, Block *into, func::FuncOp user) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(into);
  auto copy = cast<func::FuncOp>(b.clone(*user));
  copy.setSymName(freshName(module, ("__fi_variant_" + user.getSymName()).str()));
  copy.setPrivate();
  copy->removeAttr("llvm.emit_c_interface");
  internal(copy);
  // Captured memrefs as the descriptors they are (a slice keeps its offset and strides, a
  // dynamic size its real extent).
  Block &entryBlock = copy.getBody().front();
  for (BlockArgument arg : entryBlock.getArguments())
    if (auto m = dyn_cast<MemRefType>(arg.getType()))
      arg.setType(dynamicStrided(m));
  copy.setFunctionType(FunctionType::get(copy.getContext(), entryBlock.getArgumentTypes(),
                                         copy.getResultTypes()));
  SmallVector<memref::LoadOp> loads;
  copy.walk([&](memref::LoadOp l) { loads.push_back(l); });
  for (memref::LoadOp load : loads) {
    b.setInsertionPoint(load);
    Location loc = load.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value nonEmpty = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    SmallVector<Value> indices;
    for (auto [d, index] : llvm::enumerate(load.getIndices())) {
      Value dim = memref::DimOp::create(b, loc, load.getMemRef(), d);
      Value last = arith::SubIOp::create(b, loc, dim, one);
      Value low = arith::MaxSIOp::create(b, loc, index, zero);
      indices.push_back(arith::MinSIOp::create(b, loc, low, last));
      Value has = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, dim, zero);
      nonEmpty = arith::AndIOp::create(b, loc, nonEmpty, has);
    }
    // An empty memref reads its zero from a one-element constant: a select of the two
    // descriptors, no branch (a branch per read kept the kernels' per-pair values live
    // across it, and ptxas spilled: 500 bytes for ALiBi from a slopes table).
    auto type = cast<MemRefType>(load.getMemRef().getType());
    Value zeroView = zeroConstantView(b, into, type, loc);
    Value source = arith::SelectOp::create(b, loc, nonEmpty, load.getMemRef(), zeroView);
    for (Value &index : indices)
      index = arith::SelectOp::create(b, loc, nonEmpty, index, zero);
    Value read = memref::LoadOp::create(b, loc, source, indices);
    load.replaceAllUsesWith(read);
    load.erase();
  }
  return copy;
}

/// The tile classifier of mask_mod `user` (MaskTiles.cpp) in `into`, internal, with the
/// capture types of its hook's clamped copy `copy`.
func::FuncOp makeTileClassifier(OpBuilder &b, ModuleOp module, Block *into,
                                func::FuncOp user, func::FuncOp copy) {
  func::FuncOp tiles = buildMaskTileFunction(
      b, into, user, copy.getArgumentTypes().drop_front(4),
      freshName(module, ("__fi_mask_tiles_" + user.getSymName()).str()));
  internal(tiles);
  return tiles;
}

/// The hook of `kind` for a user function copy and the op's capture types, in `into`
/// (named `name`, or a fresh internal name when empty).
func::FuncOp makeHook(OpBuilder &b, ModuleOp module, Block *into, StringRef name,
                      func::FuncOp callee, HookKind kind, TypeRange captureTypes,
                      Location loc) {
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  FunctionType type = hookType(b, kind);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(into);
  auto hook = func::FuncOp::create(
      b, loc, name.empty() ? freshName(module, hookBaseName(kind)) : name.str(), type);
  if (name.empty()) {
    hook.setPrivate();
    internal(hook);
  }
  Block *entry = hook.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value block = entry->getArguments().back();
  SmallVector<Value> callArgs(entry->getArguments().drop_back());
  auto slot = [&](int64_t index) { return captureSlot(b, loc, block, index); };
  ArrayRef<Type> params = callee.getArgumentTypes();
  int64_t next = 0;
  for (auto [i, t] : llvm::enumerate(captureTypes)) {
    Type param = params[callArgs.size()];
    if (auto m = dyn_cast<MemRefType>(t)) {
      int64_t rank = m.getRank();
      Value aligned = LLVM::LoadOp::create(b, loc, ptr, slot(next));
      Value offset = LLVM::LoadOp::create(b, loc, i64, slot(next + 1));
      SmallVector<Type> fields = {ptr, ptr, i64};
      if (rank > 0)
        fields.append(2, LLVM::LLVMArrayType::get(i64, rank));
      auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
      Value desc = LLVM::PoisonOp::create(b, loc, descType);
      desc = LLVM::InsertValueOp::create(b, loc, desc, aligned, ArrayRef<int64_t>{0});
      desc = LLVM::InsertValueOp::create(b, loc, desc, aligned, ArrayRef<int64_t>{1});
      desc = LLVM::InsertValueOp::create(b, loc, desc, offset, ArrayRef<int64_t>{2});
      for (int64_t d = 0; d < rank; ++d) {
        Value size = LLVM::LoadOp::create(b, loc, i64, slot(next + 2 + d));
        Value stride = LLVM::LoadOp::create(b, loc, i64, slot(next + 2 + rank + d));
        desc = LLVM::InsertValueOp::create(b, loc, desc, size, ArrayRef<int64_t>{3, d});
        desc = LLVM::InsertValueOp::create(b, loc, desc, stride, ArrayRef<int64_t>{4, d});
      }
      // The descriptor as the fully dynamic strided memref it describes: the copy's
      // parameter type (clampedCopy).
      (void)param;
      Value view =
          UnrealizedConversionCastOp::create(b, loc, dynamicStrided(m), desc).getResult(0);
      callArgs.push_back(view);
    } else if (t.isIndex()) {
      Value wide = LLVM::LoadOp::create(b, loc, i64, slot(next));
      callArgs.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), wide));
    } else {
      callArgs.push_back(LLVM::LoadOp::create(b, loc, t, slot(next)));
    }
    next += slotsOf(t);
  }
  Value result = func::CallOp::create(b, loc, callee, callArgs).getResult(0);
  if (kind == HookKind::Mask)
    result = arith::ExtUIOp::create(b, loc, i32, result);
  func::ReturnOp::create(b, loc, result);
  return hook;
}

/// The device hook name of each kind (variant_hooks.cuh).
StringRef deviceHookName(HookKind kind) {
  return kind == HookKind::Score  ? "fi_variant_score_mod"
         : kind == HookKind::Mask ? "fi_variant_mask_mod"
                                  : "fi_variant_mask_tile";
}

/// The hooks a device module needs but the op does not use (the kernel calls them all;
/// the run turns the unused ones off): the score unchanged, every pair kept, every tile
/// full.
void identityHook(OpBuilder &b, Block *into, HookKind kind, Location loc) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(into);
  auto hook = func::FuncOp::create(b, loc, deviceHookName(kind), hookType(b, kind));
  Block *entry = hook.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Type i32 = b.getI32Type();
  Value result = kind == HookKind::Score ? entry->getArgument(0)
                 : kind == HookKind::Mask
                     ? arith::ConstantIntOp::create(b, loc, i32, 1).getResult()
                     : arith::ConstantIntOp::create(b, loc, i32, FI_MASK_TILE_FULL).getResult();
  func::ReturnOp::create(b, loc, result);
}

/// A device hook `name` of `type` that returns `value` whatever its arguments: the score's
/// factors of an op without a score_mod (1.0), whether the mask reads a captured table.
void constantHook(OpBuilder &b, Block *into, StringRef name, FunctionType type,
                  TypedAttr value, Location loc) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(into);
  auto hook = func::FuncOp::create(b, loc, name, type);
  b.setInsertionPointToStart(hook.addEntryBlock());
  func::ReturnOp::create(b, loc, ValueRange{arith::ConstantOp::create(b, loc, value)});
}


/// `@__fi_variant_device_<n>`: the op's variant functions as the kernels' hooks, compiled
/// with the variant kernels' bitcode by gpu-module-to-binary; its image global
/// `@__fi_variant_image_<n>` (a placeholder until fi-embed-variant-images fills it).
/// On the GPU, an f32 `math.tanh` that allows approximate functions (fastmath `afn`) is the
/// SFU's tanh.approx, as the built-in soft cap's (libdevice's tanhf costs the kernel
/// registers and spills).
void useApproxTanh(OpBuilder &b, func::FuncOp fn) {
  SmallVector<math::TanhOp> tanhs;
  fn.walk([&](math::TanhOp t) {
    if (t.getType().isF32() &&
        bitEnumContainsAll(t.getFastmath(), arith::FastMathFlags::afn))
      tanhs.push_back(t);
  });
  for (math::TanhOp t : tanhs) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(t);
    // (llvm.tanh with `afn` is what NVPTX selects tanh.approx.f32 for)
    auto approx = LLVM::TanhOp::create(
        b, t.getLoc(), t.getType(), t.getOperand(),
        LLVM::FastmathFlagsAttr::get(b.getContext(), LLVM::FastmathFlags::afn));
    t.replaceAllUsesWith(approx.getResult());
    t.erase();
  }
}

/// Whether `v` depends on nothing but constants and the captures of a score_mod (its
/// arguments from `firstCapture` on) through side-effect-free ops without regions: the same
/// for every pair. `perHead` also admits the query head (argument 2), captured tables and
/// their (clamped) reads: the same for every key a row of one head meets. Appends the ops it
/// takes, operands first, to `slice`.
bool invariantSlice(Value v, unsigned firstCapture, bool perHead,
                    SmallVectorImpl<Operation *> &slice, unsigned depth = 0) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner()->isEntryBlock() &&
           isa<FunctionOpInterface>(arg.getOwner()->getParentOp()) &&
           ((arg.getArgNumber() >= firstCapture && (perHead || !isa<MemRefType>(arg.getType()))) ||
            (perHead && arg.getArgNumber() == 2));
  Operation *def = v.getDefiningOp();
  if (!def || depth > 32 || def->getNumRegions() != 0 ||
      !(isMemoryEffectFree(def) || (perHead && isa<memref::LoadOp>(def))) ||
      !(isa<arith::ArithDialect, math::MathDialect>(def->getDialect()) ||
        (perHead && isa<memref::MemRefDialect>(def->getDialect()))))
    return false;
  if (llvm::is_contained(slice, def))
    return true;
  for (Value operand : def->getOperands())
    if (!invariantSlice(operand, firstCapture, perHead, slice, depth + 1))
      return false;
  slice.push_back(def);
  return true;
}

enum class SliceResult { Value, Reciprocal, Negated };

/// A function of the score_mod `fn`'s captures (after its arguments `leading`, e.g. the
/// query head) that computes `value` by the ops `slice` (or its reciprocal or negation); 1.0
/// when `value` is null. The factors and the slope the kernels compute once per CTA or row.
func::FuncOp makeSliceFunction(OpBuilder &b, ModuleOp module, Block *into, func::FuncOp fn,
                               unsigned firstCapture, ArrayRef<unsigned> leading, Value value,
                               ArrayRef<Operation *> slice, SliceResult form, StringRef base) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(into);
  Location loc = fn.getLoc();
  SmallVector<unsigned> args(leading);
  for (unsigned i = firstCapture; i < fn.getNumArguments(); ++i)
    args.push_back(i);
  SmallVector<Type> inputs;
  for (unsigned i : args)
    inputs.push_back(fn.getArgument(i).getType());
  auto type = FunctionType::get(b.getContext(), inputs, {b.getF32Type()});
  auto made = func::FuncOp::create(b, loc, freshName(module, base), type);
  made.setPrivate();
  internal(made);
  Block *entry = made.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [i, arg] : llvm::enumerate(args))
    map.map(fn.getArgument(arg), entry->getArgument(i));
  for (Operation *op : slice)
    b.clone(*op, map);
  auto one = [&]() -> Value { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f)); };
  Value result = value ? map.lookupOrDefault(value) : one();
  if (form == SliceResult::Reciprocal)
    result = arith::DivFOp::create(b, loc, one(), result);
  else if (form == SliceResult::Negated)
    result = arith::NegFOp::create(b, loc, result);
  func::ReturnOp::create(b, loc, result);
  return made;
}

/// A factor of the score_mod computed once per kernel: `factor` (or its reciprocal) as a
/// function of the captures of `fn`; 1.0 when `factor` is null.
func::FuncOp makeScaleFunction(OpBuilder &b, ModuleOp module, Block *into, func::FuncOp fn,
                               unsigned firstCapture, Value factor,
                               ArrayRef<Operation *> slice, bool reciprocal, StringRef base) {
  return makeSliceFunction(b, module, into, fn, firstCapture, {}, factor, slice,
                           reciprocal ? SliceResult::Reciprocal : SliceResult::Value, base);
}

/// The factors of a score_mod the kernel applies itself (variant_hooks.cuh), so that a
/// variant equal to a built-in does the built-in's work per pair: the score's one use, a
/// multiply by (or a division by) a pair-invariant value, becomes part of the kernel's
/// scale (`in`); a returned product with (or quotient by) one becomes part of the
/// softmax's factor (`out`). Rewrites the device copy `fn` (score in, logit / out back) and
/// returns the two factors' functions of the captures (1.0 where nothing folds; named after
/// the `user` function). Soft cap cap * tanh(s / cap): one multiply and the tanh per pair,
/// as the built-in.
std::pair<func::FuncOp, func::FuncOp> foldScoreScales(OpBuilder &b, ModuleOp module,
                                                      Block *into, func::FuncOp fn,
                                                      StringRef user) {
  constexpr unsigned firstCapture = 6;  // (score, batch, qo_head, kv_head, q_pos, kv_pos)
  Value score = fn.getArgument(0);
  // A product or quotient with a pair-invariant factor: (the other operand, the factor,
  // whether it divides), or nothing.
  auto scaled = [&](Operation *op, SmallVectorImpl<Operation *> &slice)
      -> std::optional<std::tuple<Value, Value, bool>> {
    if (auto mul = dyn_cast_or_null<arith::MulFOp>(op)) {
      for (auto [x, factor] : {std::make_pair(mul.getLhs(), mul.getRhs()),
                               std::make_pair(mul.getRhs(), mul.getLhs())}) {
        slice.clear();
        if (invariantSlice(factor, firstCapture, false, slice))
          return std::make_tuple(x, factor, false);
      }
    } else if (auto div = dyn_cast_or_null<arith::DivFOp>(op)) {
      slice.clear();
      if (invariantSlice(div.getRhs(), firstCapture, false, slice))
        return std::make_tuple(div.getLhs(), div.getRhs(), true);
    }
    slice.clear();
    return std::nullopt;
  };
  SmallVector<Operation *> slice;
  func::FuncOp in, out;
  if (score.hasOneUse()) {
    Operation *use = *score.getUsers().begin();
    if (auto found = scaled(use, slice); found && std::get<0>(*found) == score) {
      in = makeScaleFunction(b, module, into, fn, firstCapture, std::get<1>(*found), slice,
                             std::get<2>(*found), ("__fi_score_in_" + user).str());
      use->getResult(0).replaceAllUsesWith(score);
      use->erase();
    }
  }
  if (!in)
    in = makeScaleFunction(b, module, into, fn, firstCapture, nullptr, {}, false,
                           ("__fi_score_in_" + user).str());
  auto ret = dyn_cast<func::ReturnOp>(fn.getBody().back().getTerminator());
  if (fn.getBody().hasOneBlock() && ret) {
    Operation *def = ret.getOperand(0).getDefiningOp();
    if (auto found = scaled(def, slice)) {
      out = makeScaleFunction(b, module, into, fn, firstCapture, std::get<1>(*found), slice,
                              std::get<2>(*found), ("__fi_score_out_" + user).str());
      ret->setOperand(0, std::get<0>(*found));
      if (def->use_empty())
        def->erase();
    }
  }
  if (!out)
    out = makeScaleFunction(b, module, into, fn, firstCapture, nullptr, {}, false,
                            ("__fi_score_out_" + user).str());
  return {in, out};
}

/// +1 when `v` is kv_pos - q_pos as an f32 (the i32 difference converted, or the
/// difference of the two converted; arguments 5 and 4 of a score_mod), -1 when it is
/// q_pos - kv_pos, 0 otherwise.
int keyDistanceSign(Value v) {
  auto isArg = [](Value x, unsigned n) {
    auto arg = dyn_cast<BlockArgument>(x);
    return arg && arg.getOwner()->isEntryBlock() && arg.getArgNumber() == n;
  };
  auto signOf = [&](Value lhs, Value rhs) {
    return isArg(lhs, 5) && isArg(rhs, 4) ? 1 : isArg(lhs, 4) && isArg(rhs, 5) ? -1 : 0;
  };
  if (!v.getType().isF32())
    return 0;
  if (auto cvt = v.getDefiningOp<arith::SIToFPOp>()) {
    auto sub = cvt.getIn().getDefiningOp<arith::SubIOp>();
    return sub ? signOf(sub.getLhs(), sub.getRhs()) : 0;
  }
  if (auto sub = v.getDefiningOp<arith::SubFOp>()) {
    auto lhs = sub.getLhs().getDefiningOp<arith::SIToFPOp>();
    auto rhs = sub.getRhs().getDefiningOp<arith::SIToFPOp>();
    return lhs && rhs ? signOf(lhs.getIn(), rhs.getIn()) : 0;
  }
  return 0;
}

/// A score_mod's returned term linear in the key's distance: `rest + slope * (kv_pos -
/// q_pos)` (either order; `rest - slope * (q_pos - kv_pos)` and the like) where the slope
/// depends on the query head and the captures alone, as ALiBi's.
struct KeyLinearTerm {
  Value rest, slope;
  bool negate;  // the returned term is -slope * (kv_pos - q_pos)
  SmallVector<Operation *> slice;  // the slope's ops, operands first
};

std::optional<KeyLinearTerm> keyLinearTerm(func::FuncOp fn) {
  constexpr unsigned firstCapture = 6;  // (score, batch, qo_head, kv_head, q_pos, kv_pos)
  auto ret = dyn_cast<func::ReturnOp>(fn.getBody().back().getTerminator());
  if (!fn.getBody().hasOneBlock() || !ret)
    return std::nullopt;
  auto term = [&](Value t, Value rest, bool subtracted) -> std::optional<KeyLinearTerm> {
    auto mul = t.getDefiningOp<arith::MulFOp>();
    if (!mul)
      return std::nullopt;
    for (auto [slope, distance] : {std::make_pair(mul.getLhs(), mul.getRhs()),
                                   std::make_pair(mul.getRhs(), mul.getLhs())}) {
      int sign = keyDistanceSign(distance);
      SmallVector<Operation *> slice;
      if (sign != 0 && invariantSlice(slope, firstCapture, true, slice))
        return KeyLinearTerm{rest, slope, (sign < 0) != subtracted, std::move(slice)};
    }
    return std::nullopt;
  };
  Value r = ret.getOperand(0);
  if (auto add = r.getDefiningOp<arith::AddFOp>()) {
    if (auto found = term(add.getRhs(), add.getLhs(), false))
      return found;
    return term(add.getLhs(), add.getRhs(), false);
  }
  if (auto sub = r.getDefiningOp<arith::SubFOp>())
    return term(sub.getRhs(), sub.getLhs(), true);
  return std::nullopt;
}

/// Erases what a rewritten function body no longer uses (users before what they use).
void eraseDeadOps(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// Splits the key-linear term off the device copy `fn` of a score_mod (ALiBi's bias): `fn`
/// returns the rest, and the returned function of (qo_head, captures) gives the slope, which
/// the prefill kernel applies as its built-in ALiBi does (variant_hooks.cuh,
/// fi_variant_score_slope): one FMA per pair instead of a conversion, a multiply and an add.
/// Null when the score has no such term.
func::FuncOp splitKeyLinearTerm(OpBuilder &b, ModuleOp module, Block *into, func::FuncOp fn,
                                StringRef user) {
  constexpr unsigned firstCapture = 6;
  std::optional<KeyLinearTerm> term = keyLinearTerm(fn);
  if (!term)
    return {};
  func::FuncOp slope = makeSliceFunction(
      b, module, into, fn, firstCapture, {2}, term->slope, term->slice,
      term->negate ? SliceResult::Negated : SliceResult::Value, ("__fi_score_slope_" + user).str());
  // The copy returns the rest; what computed the term alone goes.
  Block &body = fn.getBody().front();
  body.getTerminator()->setOperand(0, term->rest);
  eraseDeadOps(body);
  return slope;
}

/// Splits the causal term off the device copy `fn` of a prefill's mask_mod: where it
/// returns `kv_pos <= q_pos` (as `cmpi sle %kv_pos, %q_pos` or `cmpi sge %q_pos, %kv_pos`),
/// alone or as one side of an `arith.andi`, `fn` returns the rest (true when nothing is
/// left) and the prefill kernel applies the term as its built-in causal mask does
/// (variant_hooks.cuh, fi_variant_mask_causal): chunks end at the diagonal, one bound per
/// row, instead of a classifier call per tile past it and the mask per pair on the
/// diagonal's tiles. Returns whether it split one. (q_pos is bottom-right aligned, as the
/// built-in causal mask's rows: FiOps.td.)
bool splitCausalTerm(OpBuilder &b, func::FuncOp fn) {
  if (!llvm::hasSingleElement(fn.getBody()))
    return false;
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value qPos = fn.getArgument(2), kvPos = fn.getArgument(3);
  auto isCausal = [&](Value v) {
    auto cmp = v.getDefiningOp<arith::CmpIOp>();
    if (!cmp)
      return false;
    return (cmp.getPredicate() == arith::CmpIPredicate::sle && cmp.getLhs() == kvPos &&
            cmp.getRhs() == qPos) ||
           (cmp.getPredicate() == arith::CmpIPredicate::sge && cmp.getLhs() == qPos &&
            cmp.getRhs() == kvPos);
  };
  Value result = ret.getOperand(0), rest;
  if (isCausal(result)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ret);
    rest = arith::ConstantIntOp::create(b, ret.getLoc(), b.getI1Type(), 1);
  } else if (auto both = result.getDefiningOp<arith::AndIOp>()) {
    if (isCausal(both.getLhs()))
      rest = both.getRhs();
    else if (isCausal(both.getRhs()))
      rest = both.getLhs();
  }
  if (!rest)
    return false;
  ret.setOperand(0, rest);
  eraseDeadOps(body);
  return true;
}

FailureOr<FlatSymbolRefAttr> makeDeviceModule(OpBuilder &b, ModuleOp module, Operation *op,
                                              ValueRange captures,
                                              const VariantDeviceOptions &device,
                                              llvm::StringMap<FlatSymbolRefAttr> &images) {
  MLIRContext *ctx = b.getContext();
  Location loc = op->getLoc();
  if (device.bitcode.empty() || !llvm::sys::fs::exists(device.bitcode))
    return op->emitOpError()
           << "has a score_mod/mask_mod for the CUDA backend, which links it with the "
              "runtime's variant kernels, but their bitcode "
           << (device.bitcode.empty() ? std::string("was not built")
                                      : "'" + device.bitcode + "' does not exist")
           << "; build the runtime with the CUDA backend and clang-22 (kernels/CMakeLists.txt "
              "makes fi_variant_kernels_sm90a.bc) or pass variant-bitcode=<path>";
  // The one kernel of the runtime's bitcode (kernels/cuda/variant/variant_kernels.cu) the
  // op runs: the warp-specialised prefill (block-sparse: its block-sparse instance) or
  // decode kernel of its head_dim and q dtype (decode: and RoPE or not).
  const bool decode = isa<PagedDecodeOp>(op), blockSparse = isa<BlockSparseAttentionOp>(op);
  std::optional<AttentionInfo> info = getAttentionInfo(op);
  if (!info || (info->headDim != 64 && info->headDim != 128) ||
      !(info->qType.isF16() || info->qType.isBF16()) || info->kvType != info->qType)
    return op->emitOpError()
           << "has a score_mod/mask_mod for the CUDA backend, whose variant kernels (the "
              "warp-specialised Hopper "
           << (decode ? "decode" : "prefill")
           << " kernel) take head_dim 64 or 128 with f16 or bf16 q and the same KV type; "
              "lower with backend=host for other shapes";
  if (!decode && info->tiles &&
      !(info->tiles.getQTile() == 128 && info->tiles.getKvTile() == 128 &&
        info->tiles.getCores() == Cores::wgmma))
    return op->emitOpError()
           << "has a score_mod/mask_mod for the CUDA backend, which runs in the wgmma 128 x "
              "128 kernel, but its tiles (its own or its plan's, shared with another op) are "
           << info->tiles << "; give the variant op its own plan, or wgmma 128 x 128 tiles";
  if (decode && info->tiles && info->tiles.getCores() != Cores::tensor)
    return op->emitOpError()
           << "has a score_mod/mask_mod for the CUDA backend, which runs in the "
              "warp-specialised tensor-core decode kernel, but its tiles (its own or its "
              "plan's, shared with another op) are "
           << info->tiles << "; give the variant op its own plan, or tensor-core tiles";
  if (info->kvHeads > 0 && info->qoHeads / info->kvHeads > 128)
    return op->emitOpError() << "has a score_mod/mask_mod for the CUDA backend, whose kernel "
                                "takes a GQA group of at most 128; this op's is "
                             << info->qoHeads / info->kvHeads;
  auto softCap = op->getAttrOfType<FloatAttr>("logits_soft_cap");
  auto window = op->getAttrOfType<IntegerAttr>("window_left");
  auto pos = op->getAttrOfType<PosEncodingAttr>("pos_encoding");
  if ((softCap && softCap.getValueAsDouble() > 0) || (window && window.getInt() >= 0) ||
      (pos && pos.getValue() == PosEncoding::alibi) || info->mask == MaskMode::custom)
    return op->emitOpError()
           << "has a score_mod/mask_mod and a built-in soft cap, sliding window, ALiBi or "
              "custom mask: on the CUDA backend the variant kernel has none of those built "
              "in (they would crowd its registers); express them in the score_mod / mask_mod "
              "(causal and RoPE stay built in)";
  const bool rope = pos && pos.getValue() == PosEncoding::rope_llama;
  std::string kernelName =
      std::string(decode        ? FI_VARIANT_DECODE_KERNEL_PREFIX
                  : blockSparse ? FI_VARIANT_BLOCK_SPARSE_KERNEL_PREFIX
                                : FI_VARIANT_KERNEL_PREFIX) +
      std::to_string(info->headDim) + (info->qType.isBF16() ? "_bf16" : "_f16") +
      (decode && rope ? "_rope" : "");
  int64_t slots = 0;
  for (Value v : captures)
    slots += slotsOf(v.getType());
  if (slots * 8 > FI_VARIANT_MAX_CAPTURE_BYTES)
    return op->emitOpError() << "captures " << slots * 8
                             << " bytes of values, more than the CUDA kernels take ("
                             << FI_VARIANT_MAX_CAPTURE_BYTES
                             << "); pack scalars into a tensor (one pointer)";
  // Ops with the same functions, capture types and kernel (the layers of a step) share one
  // device image: one NVPTX and ptxas compile per variant, not per op.
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    os << kernelName;
    for (StringRef attrName : {"score_mod", "mask_mod"}) {
      os << "|";
      if (auto ref = op->getAttrOfType<FlatSymbolRefAttr>(attrName))
        os << ref.getValue();
    }
    for (Value v : captures)
      os << "|" << v.getType();
  }
  if (auto it = images.find(key); it != images.end())
    return it->second;
  std::string suffix;
  for (unsigned n = 0;; ++n) {
    suffix = std::to_string(n);
    if (!SymbolTable::lookupSymbolIn(module, "__fi_variant_device_" + suffix) &&
        !SymbolTable::lookupSymbolIn(module, "__fi_variant_image_" + suffix))
      break;
  }
  module->setAttr("gpu.container_module", UnitAttr::get(ctx));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto target = NVVM::NVVMTargetAttr::get(
      ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", device.chip, "+ptx86", DictionaryAttr(),
      b.getStrArrayAttr({device.bitcode}));
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, "__fi_variant_device_" + suffix,
                                            b.getArrayAttr({target}));
  Block *body = gpuModule.getBody();
  // Each function once (a score_mod that is also the mask_mod's is still two functions),
  // and the mask's tile classifier.
  // (variant_hooks.cuh: whether the mask_mod reads a captured table, a program constant)
  constexpr StringLiteral kMaskReadsTables = "fi_variant_mask_reads_tables";
  constexpr StringLiteral kMaskCausal = "fi_variant_mask_causal";
  auto flagType = FunctionType::get(ctx, {}, {b.getI32Type()});  // () -> i32 constants
  // The score_mod's form as the prefill kernel reads it (variant_hooks.cuh): its slope in
  // the key's distance (a hook of the query head, or zero) and whether one exists, and
  // whether what is left of it is the score itself (the kernel then calls nothing per pair).
  auto scoreForm = [&](func::FuncOp slope, bool identity) {
    if (slope)
      makeHook(b, module, body, "fi_variant_score_slope", slope, HookKind::ScoreSlope,
               TypeRange(captures), loc);
    else
      constantHook(b, body, "fi_variant_score_slope", hookType(b, HookKind::ScoreSlope),
                   b.getF32FloatAttr(0.0f), loc);
    constantHook(b, body, "fi_variant_score_has_slope", flagType,
                 b.getI32IntegerAttr(slope ? 1 : 0), loc);
    constantHook(b, body, "fi_variant_score_is_identity", flagType,
                 b.getI32IntegerAttr(identity ? 1 : 0), loc);
  };
  for (auto [attrName, kind] : {std::make_pair(StringRef("score_mod"), HookKind::Score),
                                std::make_pair(StringRef("mask_mod"), HookKind::Mask)}) {
    auto ref = op->getAttrOfType<FlatSymbolRefAttr>(attrName);
    if (!ref) {
      identityHook(b, body, kind, loc);
      if (kind == HookKind::Mask) {
        identityHook(b, body, HookKind::MaskTile, loc);
        constantHook(b, body, kMaskReadsTables, flagType, b.getI32IntegerAttr(0), loc);
        constantHook(b, body, kMaskCausal, flagType, b.getI32IntegerAttr(0), loc);
      }
      if (kind == HookKind::Score) {
        for (StringRef name : {"fi_variant_score_in", "fi_variant_score_out"})
          constantHook(b, body, name, hookType(b, HookKind::ScoreScale),
                       b.getF32FloatAttr(1.0f), loc);
        scoreForm(nullptr, false);
      }
      continue;
    }
    auto user = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op, ref);
    func::FuncOp copy = clampedCopy(b, module, body, user);
    copy.setPrivate();
    useApproxTanh(b, copy);
    if (kind == HookKind::Score) {
      // (the decode kernel adds no slope: its score_mod keeps the whole score)
      func::FuncOp slope =
          decode ? func::FuncOp() : splitKeyLinearTerm(b, module, body, copy, user.getSymName());
      auto [in, out] = foldScoreScales(b, module, body, copy, user.getSymName());
      auto ret = cast<func::ReturnOp>(copy.getBody().back().getTerminator());
      scoreForm(slope, ret.getOperand(0) == copy.getArgument(0));
      makeHook(b, module, body, "fi_variant_score_in", in, HookKind::ScoreScale,
               TypeRange(captures), loc);
      makeHook(b, module, body, "fi_variant_score_out", out, HookKind::ScoreScale,
               TypeRange(captures), loc);
    }
    // (the classifier below is the whole mask's: sound for the rest under the causal bound)
    const bool causal =
        kind == HookKind::Mask && !decode && !blockSparse && splitCausalTerm(b, copy);
    makeHook(b, module, body, deviceHookName(kind), copy, kind, TypeRange(captures), loc);
    if (kind == HookKind::Mask) {
      constantHook(b, body, kMaskCausal, flagType, b.getI32IntegerAttr(causal), loc);
      bool reads = false;
      copy.walk([&](memref::LoadOp) { reads = true; });
      constantHook(b, body, kMaskReadsTables, flagType, b.getI32IntegerAttr(reads), loc);
      func::FuncOp tiles = makeTileClassifier(b, module, body, user, copy);
      makeHook(b, module, body, deviceHookName(HookKind::MaskTile), tiles, HookKind::MaskTile,
               TypeRange(captures), loc);
    }
  }
  // The kernels' bitcode flushes f32 denormals (kernels/CMakeLists.txt: clang's
  // -fcuda-flush-denormals-to-zero, as nvcc's --use_fast_math for the runtime's own
  // kernels: ex2.approx.ftz in the softmax); functions of another denormal mode would not
  // be inlined into them.
  auto ftz = b.getArrayAttr({b.getArrayAttr(
      {b.getStringAttr("denormal-fp-math-f32"), b.getStringAttr("preserve-sign,preserve-sign")})});
  for (auto fn : body->getOps<func::FuncOp>())
    fn->setAttr("passthrough", ftz);
  // The kernel, declared and kept (llvm.used): the link takes only what the module needs
  // from the bitcode.
  b.setInsertionPointToEnd(body);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // (the kernel's parameters: PrefillParams and WsMaps; DecodeParams, TwsMaps and
  // DecodeVariant; each byval)
  SmallVector<Type> params(decode ? 3 : 2, ptr);
  auto kernelType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  LLVM::LLVMFuncOp::create(b, loc, kernelName, kernelType);
  auto usedType = LLVM::LLVMArrayType::get(ptr, 1);
  auto used = LLVM::GlobalOp::create(b, loc, usedType, /*isConstant=*/false,
                                     LLVM::Linkage::Appending, "llvm.used", Attribute());
  used.setSection(StringRef("llvm.metadata"));
  Block *init = b.createBlock(&used.getInitializerRegion());
  b.setInsertionPointToStart(init);
  Value array = LLVM::UndefOp::create(b, loc, usedType);
  Value address = LLVM::AddressOfOp::create(b, loc, ptr, kernelName);
  array = LLVM::InsertValueOp::create(b, loc, array, address, ArrayRef<int64_t>{0});
  LLVM::ReturnOp::create(b, loc, array);
  // The image: filled by fi-embed-variant-images.
  b.setInsertionPointToStart(module.getBody());
  std::string imageName = "__fi_variant_image_" + suffix;
  auto imageType = LLVM::LLVMArrayType::get(b.getI8Type(), 8);
  auto image = LLVM::GlobalOp::create(b, loc, imageType, /*isConstant=*/true,
                                      LLVM::Linkage::Internal, imageName,
                                      b.getStringAttr(std::string(8, '\0')));
  image.setAlignment(8);
  auto ref = FlatSymbolRefAttr::get(ctx, imageName);
  images[key] = ref;
  return ref;
}

} // namespace

LogicalResult mlir::fi::generateVariantHooks(ModuleOp module,
                                             const VariantDeviceOptions *device) {
  OpBuilder b(module.getContext());
  SymbolTableCollection symbols;
  llvm::DenseMap<Operation *, func::FuncOp> copies, tileFunctions;
  llvm::StringMap<FlatSymbolRefAttr> images;
  WalkResult walk = module.walk([&](Operation *op) {
    if (!isa<PagedDecodeOp, PagedPrefillOp, RaggedPrefillOp, BlockSparseAttentionOp>(op))
      return WalkResult::advance();
    auto variantArgs = [&]() -> ValueRange {
      if (auto d = dyn_cast<PagedDecodeOp>(op)) return d.getVariantArgs();
      if (auto p = dyn_cast<PagedPrefillOp>(op)) return p.getVariantArgs();
      if (auto r = dyn_cast<RaggedPrefillOp>(op)) return r.getVariantArgs();
      return cast<BlockSparseAttentionOp>(op).getVariantArgs();
    }();
    for (auto [attrName, hookName, kind] :
         {std::make_tuple(StringRef("score_mod"), kScoreHook, HookKind::Score),
          std::make_tuple(StringRef("mask_mod"), kMaskHook, HookKind::Mask)}) {
      auto ref = op->getAttrOfType<FlatSymbolRefAttr>(attrName);
      if (!ref)
        continue;
      auto user = symbols.lookupNearestSymbolFrom<func::FuncOp>(op, ref);
      if (!user) {
        op->emitOpError() << attrName << " " << ref
                          << " must be a func.func to be lowered (the verifier checks it is a "
                             "function; fi-lower-to-runtime compiles func.func)";
        return WalkResult::interrupt();
      }
      for (Type t : user.getArgumentTypes())
        if (isa<TensorType>(t)) {
          op->emitOpError() << attrName << " " << ref
                            << " still takes tensors; fi-lower-to-runtime needs memrefs: run "
                               "one-shot-bufferize with bufferize-function-boundaries first "
                               "(fi-to-llvm does)";
          return WalkResult::interrupt();
        }
      func::FuncOp &copy = copies[user];
      if (!copy)
        copy = clampedCopy(b, module, module.getBody(), user);
      func::FuncOp hook = makeHook(b, module, module.getBody(), "", copy, kind,
                                   TypeRange(variantArgs), op->getLoc());
      op->setAttr(hookName, FlatSymbolRefAttr::get(hook.getSymNameAttr()));
      if (kind == HookKind::Mask) {  // and the mask's tile classifier (MaskTiles.cpp)
        func::FuncOp &tiles = tileFunctions[user];
        if (!tiles)
          tiles = makeTileClassifier(b, module, module.getBody(), user, copy);
        func::FuncOp tileHook = makeHook(b, module, module.getBody(), "", tiles,
                                         HookKind::MaskTile, TypeRange(variantArgs),
                                         op->getLoc());
        op->setAttr(kTileHook, FlatSymbolRefAttr::get(tileHook.getSymNameAttr()));
      }
    }
    if (device && (op->hasAttr("score_mod") || op->hasAttr("mask_mod"))) {
      FailureOr<FlatSymbolRefAttr> image =
          makeDeviceModule(b, module, op, variantArgs, *device, images);
      if (failed(image))
        return WalkResult::interrupt();
      op->setAttr(kImage, *image);
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult mlir::fi::pushVariantArgs(OpBuilder &b, Operation *op, ValueRange captures,
                                        SmallVectorImpl<Value> &args) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type();
  auto scoreHook = op->getAttrOfType<FlatSymbolRefAttr>(kScoreHook);
  auto maskHook = op->getAttrOfType<FlatSymbolRefAttr>(kMaskHook);
  auto tileHook = op->getAttrOfType<FlatSymbolRefAttr>(kTileHook);
  if ((op->hasAttr("score_mod") && !scoreHook) ||
      (op->hasAttr("mask_mod") && (!maskHook || !tileHook)))
    return op->emitOpError() << "has a score_mod/mask_mod without its generated hook; run "
                                "fi-lower-to-runtime (it generates the hooks before the "
                                "fi-to-runtime patterns)";
  auto module = op->getParentOfType<ModuleOp>();
  auto hookPtr = [&](FlatSymbolRefAttr hook) -> Value {
    if (!hook)
      return LLVM::ZeroOp::create(b, loc, ptr);
    auto fn = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(module, hook.getAttr()));
    if (!fn)
      return Value();
    auto type = fn.getFunctionType();
    Value f = func::ConstantOp::create(b, loc, type, hook);
    return UnrealizedConversionCastOp::create(b, loc, ptr, f).getResult(0);
  };
  Value scorePtr = hookPtr(scoreHook), maskPtr = hookPtr(maskHook),
        tilePtr = hookPtr(tileHook);
  if (!scorePtr || !maskPtr || !tilePtr)
    return op->emitOpError() << "names a variant hook that is not a function of the module "
                                "(a stale fi.score_mod_hook / fi.mask_mod_hook / "
                                "fi.mask_tile_hook attribute); drop it and let "
                                "fi-lower-to-runtime generate the hooks";
  args.push_back(scorePtr);
  args.push_back(maskPtr);
  args.push_back(tilePtr);
  int64_t slots = 0;
  for (Value v : captures)
    slots += slotsOf(v.getType());
  // The captures' bytes and the device image (null: host only) follow the block.
  auto tail = [&]() {
    args.push_back(LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(8 * slots)));
    auto image = op->getAttrOfType<FlatSymbolRefAttr>(kImage);
    args.push_back(image ? LLVM::AddressOfOp::create(b, loc, ptr, image.getValue()).getResult()
                         : LLVM::ZeroOp::create(b, loc, ptr).getResult());
  };
  if (captures.empty() || (!scoreHook && !maskHook)) {
    slots = 0;
    args.push_back(LLVM::ZeroOp::create(b, loc, ptr));
    tail();
    return success();
  }
  // The block lives in the entry block of the enclosing function: one per op, not one
  // per loop iteration.
  auto fn = op->getParentOfType<FunctionOpInterface>();
  Value block;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&fn.getFunctionBody().front());
    Value count = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(slots));
    block = LLVM::AllocaOp::create(b, loc, ptr, i64, count, /*alignment=*/8);
  }
  auto slot = [&](int64_t index) { return captureSlot(b, loc, block, index); };
  auto asI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  int64_t next = 0;
  for (Value v : captures) {
    if (auto m = dyn_cast<MemRefType>(v.getType())) {
      int64_t rank = m.getRank();
      Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, v);
      Value aligned = LLVM::IntToPtrOp::create(b, loc, ptr, asI64(address));
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, v);
      LLVM::StoreOp::create(b, loc, aligned, slot(next));
      LLVM::StoreOp::create(b, loc, asI64(meta.getOffset()), slot(next + 1));
      for (int64_t d = 0; d < rank; ++d) {
        LLVM::StoreOp::create(b, loc, asI64(meta.getSizes()[d]), slot(next + 2 + d));
        LLVM::StoreOp::create(b, loc, asI64(meta.getStrides()[d]), slot(next + 2 + rank + d));
      }
    } else if (v.getType().isIndex()) {
      LLVM::StoreOp::create(b, loc, asI64(v), slot(next));
    } else {
      LLVM::StoreOp::create(b, loc, v, slot(next));
    }
    next += slotsOf(v.getType());
  }
  args.push_back(block);
  tail();
  return success();
}
