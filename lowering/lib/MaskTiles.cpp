//===- MaskTiles.cpp - what a mask_mod proves about a tile of pairs --------===//
//
// From a user's mask_mod (batch, qo_head, q_pos, kv_pos, captures...) -> i1 this builds
// its tile classifier: a function of the same captures that, given one request and ranges
// of query heads, query positions and key positions, returns FI_MASK_TILE_EMPTY when the
// mask provably drops every pair of the rectangle, FI_MASK_TILE_FULL when it provably
// keeps every pair, and FI_MASK_TILE_PARTIAL otherwise. Kernels skip empty tiles (neither
// loaded nor computed: the block sparsity a mask implies, FlexAttention's BlockMask
// without a pass over every pair) and call the mask per pair only on partial ones.
//
// The proof is an interval abstract interpretation of the mask's body, emitted as code
// (the ranges and captured scalars are known only at run time):
//  - an integer value is a signed interval [lo, hi] held in i64, sound for its own width
//    (a result that may leave its type's range -- where the concrete op would wrap -- is
//    widened to the whole range; i64 / index arithmetic is computed only from bounds small
//    enough that the i64 arithmetic cannot overflow, else the whole range);
//  - an i1 is a pair (may be false, may be true);
//  - an integer read from a captured 1-D table is the [min, max] of the entries its index
//    range covers (clamped as the variant's reads are; up to kTableScan entries), so a
//    document-id table gives packed-document masks their block sparsity;
//  - anything else (floats, other loads, ops with regions, unknown ops) is unknown: the
//    whole range, or both truth values.
// Every rule over-approximates the values the op can produce from values in its operands'
// ranges, so EMPTY and FULL are proofs; PARTIAL only says "not proven".
//
//===----------------------------------------------------------------------===//
#include "VariantCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#include "fi/runtime.h"

using namespace mlir;

namespace {

/// The most entries of a captured table a classifier reads for one index range, and how
/// many it reads per loop step (kFastScan: unit-stride tables, ranges of at least that many).
constexpr int64_t kTableScan = 512, kScanStep = 8, kFastScan = 16;

/// The abstract value of one SSA value: for integers (and index) [a, b] = [lo, hi] as i64;
/// for i1 a = may be false, b = may be true.
struct Abs {
  Value a, b;
};

class TileBuilder {
public:
  TileBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value i64(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); }
  Value i1(bool v) { return arith::ConstantIntOp::create(b, loc, b.getI1Type(), v); }

  static unsigned widthOf(Type t) {
    if (t.isIndex())
      return 64;
    return cast<IntegerType>(t).getWidth();
  }
  static int64_t minOf(unsigned w) { return w >= 64 ? INT64_MIN : -(int64_t(1) << (w - 1)); }
  static int64_t maxOf(unsigned w) { return w >= 64 ? INT64_MAX : (int64_t(1) << (w - 1)) - 1; }

  Abs full(Type t) {
    if (t.isInteger(1))
      return {i1(true), i1(true)};
    unsigned w = widthOf(t);
    return {i64(minOf(w)), i64(maxOf(w))};
  }
  Abs exact(Value v64) { return {v64, v64}; }
  /// A signless integer of at most 64 bits or an index, sign-extended to i64.
  Value toI64(Value v) {
    Type i64 = b.getI64Type();
    if (v.getType().isIndex())
      return arith::IndexCastOp::create(b, loc, i64, v);
    return v.getType() == i64 ? v : arith::ExtSIOp::create(b, loc, i64, v).getResult();
  }

  Value slt(Value x, Value y) { return cmp(arith::CmpIPredicate::slt, x, y); }
  Value sle(Value x, Value y) { return cmp(arith::CmpIPredicate::sle, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value noti(Value x) { return arith::XOrIOp::create(b, loc, x, i1(true)); }
  Value sel(Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }
  Value smin(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value smax(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }

  /// [lo, hi], or type t's whole range where `ok` fails or the result leaves t's range.
  Abs fit(Value ok, Value lo, Value hi, Type t) {
    unsigned w = widthOf(t);
    if (w < 64) {
      ok = andi(ok, sle(i64(minOf(w)), lo));
      ok = andi(ok, sle(hi, i64(maxOf(w))));
    }
    return {sel(ok, lo, i64(minOf(w))), sel(ok, hi, i64(maxOf(w)))};
  }
  /// Every bound of the operands within [-limit, limit].
  Value within(ArrayRef<Abs> xs, int64_t limit) {
    Value ok = i1(true);
    for (const Abs &x : xs)
      ok = andi(ok, andi(sle(i64(-limit), x.a), sle(x.b, i64(limit))));
    return ok;
  }
  Value nonNegative(const Abs &x) { return sle(i64(0), x.a); }

  /// The i1 pair of an i1 value as a signed interval (true is -1).
  Abs boolAsSigned(const Abs &x) {
    return {sel(x.b, i64(-1), i64(0)), sel(x.a, i64(0), i64(-1))};
  }
  Abs boolAsUnsigned(const Abs &x) {
    return {sel(x.a, i64(0), i64(1)), sel(x.b, i64(1), i64(0))};
  }

  /// (may be false, may be true) of `lhs pred rhs` over the intervals.
  Abs compare(arith::CmpIPredicate pred, Abs l, Abs r) {
    using P = arith::CmpIPredicate;
    Value both = andi(nonNegative(l), nonNegative(r));
    bool isUnsigned = false;
    switch (pred) {
    case P::ult: pred = P::slt; isUnsigned = true; break;
    case P::ule: pred = P::sle; isUnsigned = true; break;
    case P::ugt: pred = P::sgt; isUnsigned = true; break;
    case P::uge: pred = P::sge; isUnsigned = true; break;
    default: break;
    }
    if (pred == P::sgt || pred == P::sge) {  // x > y is y < x
      std::swap(l, r);
      pred = pred == P::sgt ? P::slt : P::sle;
    }
    Abs res;
    switch (pred) {
    case P::slt:  // true somewhere: l.lo < r.hi; false somewhere: l.hi >= r.lo
      res = {sle(r.a, l.b), slt(l.a, r.b)};
      break;
    case P::sle:
      res = {slt(r.a, l.b), sle(l.a, r.b)};
      break;
    case P::eq:
    case P::ne: {
      Value overlap = andi(sle(l.a, r.b), sle(r.a, l.b));
      Value single = andi(cmp(P::eq, l.a, l.b), andi(cmp(P::eq, r.a, r.b),
                                                    cmp(P::eq, l.a, r.a)));
      res = pred == P::eq ? Abs{noti(single), overlap} : Abs{overlap, noti(single)};
      break;
    }
    default:
      llvm_unreachable("predicate mapped above");
    }
    if (isUnsigned)  // the signed answer holds where both sides are non-negative
      res = {ori(res.a, noti(both)), ori(res.b, noti(both))};
    return res;
  }

  OpBuilder &b;
  Location loc;
};

} // namespace

func::FuncOp mlir::fi::buildMaskTileFunction(OpBuilder &b, Block *into, func::FuncOp user,
                                             TypeRange captureTypes, StringRef name) {
  MLIRContext *ctx = b.getContext();
  Location loc = user.getLoc();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  ArrayRef<Type> userParams = user.getArgumentTypes();
  // (batch, qo_head first/last, q_pos first/last, kv_pos first/last, captures...) -> i32
  SmallVector<Type> params(7, i32);
  params.append(captureTypes.begin(), captureTypes.end());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(into);
  auto fn = func::FuncOp::create(b, loc, name, FunctionType::get(ctx, params, {i32}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  TileBuilder t(b, loc);
  auto classOf = [&](int32_t c) { return arith::ConstantIntOp::create(b, loc, i32, c); };

  Region &body = user.getBody();
  if (!body.hasOneBlock()) {  // control flow between blocks: not analysed
    func::ReturnOp::create(b, loc, ValueRange{classOf(FI_MASK_TILE_PARTIAL)});
    return fn;
  }
  Block &userEntry = body.front();
  llvm::DenseMap<Value, Abs> abs;
  llvm::DenseMap<Value, Value> memrefs;  // the user's captured memrefs -> the classifier's
  // Signless integers of at most 64 bits (wider or signed / unsigned ones, rare in a mask,
  // stay unknown).
  auto isInt = [](Type ty) {
    auto it = dyn_cast<IntegerType>(ty);
    return ty.isIndex() || (it && it.isSignless() && it.getWidth() <= 64);
  };
  // The position parameters as ranges; the captures exactly, when they are scalars.
  abs[userEntry.getArgument(0)] = t.exact(t.toI64(entry->getArgument(0)));
  for (unsigned k = 1; k < 4; ++k)
    abs[userEntry.getArgument(k)] = {t.toI64(entry->getArgument(2 * k - 1)),
                                     t.toI64(entry->getArgument(2 * k))};
  for (unsigned k = 4; k < userParams.size(); ++k) {
    Type ty = userParams[k];
    Value v = entry->getArgument(k + 3);
    if (isa<MemRefType>(ty))
      memrefs[userEntry.getArgument(k)] = v;
    else if (ty.isInteger(1))
      abs[userEntry.getArgument(k)] = {t.noti(v), v};
    else if (isInt(ty))
      abs[userEntry.getArgument(k)] = t.exact(t.toI64(v));
  }
  // The abstract value of an integer or i1 operand (unknown values: the whole range).
  auto get = [&](Value v) -> Abs {
    auto it = abs.find(v);
    if (it != abs.end() && it->second.a)
      return it->second;
    return t.full(v.getType());
  };
  auto asSigned = [&](Value v) -> Abs {
    Abs x = get(v);
    return v.getType().isInteger(1) ? t.boolAsSigned(x) : x;
  };

  for (Operation &op : userEntry.without_terminator()) {
    if (op.getNumResults() != 1 || !isInt(op.getResult(0).getType()))
      continue;  // floats, tensors: unknown when used
    if (llvm::any_of(op.getOperandTypes(), [&](Type ty) {
          return isa<IntegerType>(ty) && !isInt(ty);
        }))
      continue;
    Value res = op.getResult(0);
    Type ty = res.getType();
    bool isBool = ty.isInteger(1);
    std::optional<Abs> r;
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (auto ia = dyn_cast<IntegerAttr>(c.getValue())) {
        if (isBool)
          r = Abs{t.i1(!ia.getValue().getBoolValue()), t.i1(ia.getValue().getBoolValue())};
        else if (ia.getValue().getBitWidth() <= 64)
          r = t.exact(t.i64(ia.getValue().getSExtValue()));
      }
    } else if (isBool && isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op)) {
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      if (isa<arith::AndIOp>(op))
        r = Abs{t.ori(x.a, y.a), t.andi(x.b, y.b)};
      else if (isa<arith::OrIOp>(op))
        r = Abs{t.andi(x.a, y.a), t.ori(x.b, y.b)};
      else
        r = Abs{t.ori(t.andi(x.a, y.a), t.andi(x.b, y.b)),
                t.ori(t.andi(x.a, y.b), t.andi(x.b, y.a))};
    } else if (auto c = dyn_cast<arith::CmpIOp>(op)) {
      Value lhs = c.getLhs(), rhs = c.getRhs();
      r = t.compare(c.getPredicate(), asSigned(lhs), asSigned(rhs));
    } else if (auto s = dyn_cast<arith::SelectOp>(op)) {
      if (s.getCondition().getType().isInteger(1)) {  // (a vector condition: unknown)
        Abs c = get(s.getCondition()), x = get(s.getTrueValue()), y = get(s.getFalseValue());
        Value onlyTrue = t.andi(c.b, t.noti(c.a)), onlyFalse = t.andi(c.a, t.noti(c.b));
        if (isBool)
          r = Abs{t.sel(onlyTrue, x.a, t.sel(onlyFalse, y.a, t.ori(x.a, y.a))),
                  t.sel(onlyTrue, x.b, t.sel(onlyFalse, y.b, t.ori(x.b, y.b)))};
        else
          r = Abs{t.sel(onlyTrue, x.a, t.sel(onlyFalse, y.a, t.smin(x.a, y.a))),
                  t.sel(onlyTrue, x.b, t.sel(onlyFalse, y.b, t.smax(x.b, y.b)))};
      }
    } else if (!isBool && isa<arith::AddIOp, arith::SubIOp>(op)) {
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      Value ok = t.within({x, y}, int64_t(1) << 40);
      if (isa<arith::AddIOp>(op))
        r = t.fit(ok, arith::AddIOp::create(b, loc, x.a, y.a),
                  arith::AddIOp::create(b, loc, x.b, y.b), ty);
      else
        r = t.fit(ok, arith::SubIOp::create(b, loc, x.a, y.b),
                  arith::SubIOp::create(b, loc, x.b, y.a), ty);
    } else if (!isBool && isa<arith::MulIOp>(op)) {
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      Value ok = t.within({x, y}, int64_t(1) << 31);
      Value p[4] = {arith::MulIOp::create(b, loc, x.a, y.a), arith::MulIOp::create(b, loc, x.a, y.b),
                    arith::MulIOp::create(b, loc, x.b, y.a), arith::MulIOp::create(b, loc, x.b, y.b)};
      r = t.fit(ok, t.smin(t.smin(p[0], p[1]), t.smin(p[2], p[3])),
                t.smax(t.smax(p[0], p[1]), t.smax(p[2], p[3])), ty);
    } else if (!isBool && isa<arith::MinSIOp, arith::MaxSIOp>(op)) {
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      if (isa<arith::MinSIOp>(op))
        r = Abs{t.smin(x.a, y.a), t.smin(x.b, y.b)};
      else
        r = Abs{t.smax(x.a, y.a), t.smax(x.b, y.b)};
    } else if (!isBool && isa<arith::DivSIOp>(op)) {
      // Monotone in each operand for a divisor that stays positive: the corners bound it.
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      Value ok = t.slt(t.i64(0), y.a);
      Value safeY = t.sel(ok, y.a, t.i64(1)), safeYh = t.sel(ok, y.b, t.i64(1));
      auto div = [&](Value n, Value d) -> Value { return arith::DivSIOp::create(b, loc, n, d); };
      Value p[4] = {div(x.a, safeY), div(x.a, safeYh), div(x.b, safeY), div(x.b, safeYh)};
      r = t.fit(ok, t.smin(t.smin(p[0], p[1]), t.smin(p[2], p[3])),
                t.smax(t.smax(p[0], p[1]), t.smax(p[2], p[3])), ty);
    } else if (!isBool && isa<arith::RemSIOp, arith::RemUIOp>(op)) {
      // A positive divisor: x itself where 0 <= x < the divisor, else |result| < divisor
      // with x's sign (unsigned: x non-negative).
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      Value pos = t.slt(t.i64(0), y.a), xNonNeg = t.nonNegative(x);
      Value ok = isa<arith::RemUIOp>(op) ? t.andi(pos, xNonNeg) : pos;
      Value below = t.andi(xNonNeg, t.slt(x.b, y.a));
      Value m = arith::SubIOp::create(b, loc, y.b, t.i64(1));
      Value negM = arith::SubIOp::create(b, loc, t.i64(0), m);
      Value lo = t.sel(below, x.a, t.sel(xNonNeg, t.i64(0), negM));
      Value hi = t.sel(below, x.b, t.sel(t.sle(x.b, t.i64(0)), t.i64(0), t.smin(m, t.smax(x.b, t.i64(0)))));
      r = t.fit(ok, lo, hi, ty);
    } else if (!isBool && isa<arith::AndIOp>(op)) {
      // With a non-negative operand the result lies in [0, that operand's hi].
      Abs x = get(op.getOperand(0)), y = get(op.getOperand(1));
      Value xn = t.nonNegative(x), yn = t.nonNegative(y);
      Value hi = t.sel(t.andi(xn, yn), t.smin(x.b, y.b), t.sel(xn, x.b, y.b));
      r = t.fit(t.ori(xn, yn), t.i64(0), hi, ty);
    } else if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp,
                   arith::IndexCastUIOp>(op) &&
               isInt(op.getOperand(0).getType())) {
      Value src = op.getOperand(0);
      Type srcTy = src.getType();
      unsigned from = TileBuilder::widthOf(srcTy), to = TileBuilder::widthOf(ty);
      bool zext = isa<arith::ExtUIOp, arith::IndexCastUIOp>(op);
      if (isBool) {  // i1 -> i1 (an index_cast cannot produce i1 from wider types soundly)
        if (srcTy.isInteger(1))
          r = get(src);
      } else if (srcTy.isInteger(1)) {
        r = zext ? t.boolAsUnsigned(get(src)) : t.boolAsSigned(get(src));
      } else if (to >= from) {
        Abs x = get(src);
        if (!zext)
          r = x;
        else  // non-negative: unchanged; else any value of the source's unsigned range
          r = t.fit(t.nonNegative(x), x.a, x.b, ty);
      } else {
        Abs x = get(src);  // a truncation: unchanged where it fits the narrower type
        r = t.fit(t.i1(true), x.a, x.b, ty);
      }
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      // A read of a captured 1-D table (the variant's copy clamps the index into bounds and
      // reads 0 from an empty table): over a clamped index range of at most kTableScan
      // entries, the minimum and maximum of those entries (a document-id table: the
      // documents a tile's queries or keys lie in); wider ranges, other ranks or element
      // types: unknown.
      Value m = memrefs.lookup(load.getMemRef());
      auto mt = m ? dyn_cast<MemRefType>(m.getType()) : MemRefType();
      if (mt && mt.getRank() == 1 && !isBool) {
        Abs x = get(load.getIndices()[0]);
        Type idx = b.getIndexType();
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value dim = arith::IndexCastOp::create(b, loc, i64,
                                               memref::DimOp::create(b, loc, m, zero));
        Value last = arith::SubIOp::create(b, loc, dim, t.i64(1));
        Value lo = t.smin(t.smax(x.a, t.i64(0)), last), hi = t.smin(t.smax(x.b, t.i64(0)), last);
        Value empty = t.sle(dim, t.i64(0));
        Value count = arith::SubIOp::create(b, loc, hi, lo);
        Value scan = t.andi(t.noti(empty), t.slt(count, t.i64(kTableScan)));
        Abs whole = t.full(ty);
        auto guarded = scf::IfOp::create(b, loc, TypeRange{i64, i64}, scan, /*withElse=*/true);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(&guarded.getThenRegion().front());
          // The entries' (min, max) in the element's own type (one instruction each for
          // 32-bit ids on the GPU, where i64 takes two or three), from its whole range.
          Type et = mt.getElementType();
          auto elementConst = [&](int64_t v) -> Value {
            if (et.isIndex())
              return arith::ConstantIndexOp::create(b, loc, v);
            return arith::ConstantIntOp::create(b, loc, et, v);
          };
          unsigned ew = TileBuilder::widthOf(et);
          Value none = elementConst(TileBuilder::minOf(ew));
          Value all = elementConst(TileBuilder::maxOf(ew));
          Value from = arith::IndexCastOp::create(b, loc, idx, lo);
          Value hiIndex = arith::IndexCastOp::create(b, loc, idx, hi);
          Value to = arith::IndexCastOp::create(
              b, loc, idx, arith::AddIOp::create(b, loc, hi, t.i64(1)).getResult());
          // `step` entries per loop step from `table` (repeated entries leave min and max as
          // they are): `clamp` keeps indices past `hi` at `hi`; without it, the loop's last
          // step is moved back to end at `hi` (ranges of at least `step` entries). The loads
          // of a step are independent, so they are in flight together.
          auto scanLoop = [&](Value table, int64_t step, bool clamp) {
            Value stepIndex = arith::ConstantIndexOp::create(b, loc, step);
            auto loop = scf::ForOp::create(b, loc, from, to, stepIndex, ValueRange{all, none});
            OpBuilder::InsertionGuard lg(b);
            b.setInsertionPointToStart(loop.getBody());
            Value mn = loop.getRegionIterArg(0), mx = loop.getRegionIterArg(1);
            Value base = loop.getInductionVar();
            if (!clamp)
              base = arith::MinSIOp::create(
                  b, loc, base,
                  arith::SubIOp::create(b, loc, to, stepIndex).getResult());
            for (int64_t k = 0; k < step; ++k) {
              Value i = base;
              if (k > 0)
                i = arith::AddIOp::create(b, loc, base,
                                          arith::ConstantIndexOp::create(b, loc, k));
              if (k > 0 && clamp)
                i = arith::MinSIOp::create(b, loc, i, hiIndex);
              Value e = memref::LoadOp::create(b, loc, table, i);
              mn = arith::MinSIOp::create(b, loc, mn, e);
              mx = arith::MaxSIOp::create(b, loc, mx, e);
            }
            scf::YieldOp::create(b, loc, ValueRange{mn, mx});
            return loop;
          };
          // A unit-stride table and a range of at least kFastScan entries (a tile's keys, a
          // chunk's queries): kFastScan loads per step with neither clamps nor stride
          // products; else kScanStep per step, clamped.
          auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
          Value one = arith::ConstantIndexOp::create(b, loc, 1);
          Value unit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             meta.getStrides()[0], one);
          Value longRange = t.sle(t.i64(kFastScan - 1), count);
          auto fast = scf::IfOp::create(b, loc, TypeRange{et, et}, t.andi(unit, longRange),
                                        /*withElse=*/true);
          {
            OpBuilder::InsertionGuard fg(b);
            b.setInsertionPointToStart(&fast.getThenRegion().front());
            auto unitType = MemRefType::get(
                {ShapedType::kDynamic}, et,
                StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}),
                mt.getMemorySpace());
            Value dense = memref::ReinterpretCastOp::create(
                b, loc, unitType, m, OpFoldResult(meta.getOffset()),
                ArrayRef<OpFoldResult>{OpFoldResult(meta.getSizes()[0])},
                ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
            scf::YieldOp::create(b, loc, scanLoop(dense, kFastScan, false).getResults());
            b.setInsertionPointToStart(&fast.getElseRegion().front());
            scf::YieldOp::create(b, loc, scanLoop(m, kScanStep, true).getResults());
          }
          scf::YieldOp::create(b, loc,
                               ValueRange{t.toI64(fast.getResult(0)), t.toI64(fast.getResult(1))});
          b.setInsertionPointToStart(&guarded.getElseRegion().front());
          scf::YieldOp::create(b, loc, ValueRange{whole.a, whole.b});
        }
        r = Abs{t.sel(empty, t.i64(0), guarded.getResult(0)),
                t.sel(empty, t.i64(0), guarded.getResult(1))};
      }
    }
    if (r)
      abs[res] = *r;
  }
  auto ret = cast<func::ReturnOp>(userEntry.getTerminator());
  Abs keep = get(ret.getOperand(0));
  // EMPTY where no pair can be kept, FULL where none can be dropped, else PARTIAL.
  Value cls = t.sel(keep.b, t.sel(keep.a, classOf(FI_MASK_TILE_PARTIAL), classOf(FI_MASK_TILE_FULL)),
                    classOf(FI_MASK_TILE_EMPTY));
  func::ReturnOp::create(b, loc, cls);
  return fn;
}
