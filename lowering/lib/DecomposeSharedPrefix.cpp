//===- DecomposeSharedPrefix.cpp - fi-decompose-shared-prefix -------------===//
//
// A decode whose requests share leading pages, as the composition of two formats (the
// FlashInfer paper, 3.1.2): the shared prefix as one block row of every query, the
// requests' own suffixes as a decode, merged. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "fi/Lowering/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FIDECOMPOSESHAREDPREFIX
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

using namespace mlir;
using namespace mlir::fi;

namespace {

/// An empty tensor shaped like `like` (its dynamic sizes from tensor.dim).
Value emptyLike(OpBuilder &b, Location loc, Value like, Type element = {}) {
  auto t = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (t.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(b, loc, like, d));
  return tensor::EmptyOp::create(b, loc, t.getShape(), element ? element : t.getElementType(),
                                 dyn);
}

/// An op of `name` with `operands` in ODS segments (an empty segment: an absent optional)
/// and `attrs` (operandSegmentSizes set from the segments).
Operation *createWithSegments(OpBuilder &b, Location loc, StringRef name,
                              ArrayRef<SmallVector<Value, 1>> segments, TypeRange results,
                              NamedAttrList attrs) {
  OperationState state(loc, name);
  SmallVector<int32_t> sizes;
  for (const auto &seg : segments) {
    state.addOperands(seg);
    sizes.push_back(static_cast<int32_t>(seg.size()));
  }
  attrs.set("operandSegmentSizes", b.getDenseI32ArrayAttr(sizes));
  state.addAttributes(attrs);
  state.addTypes(results);
  return b.create(state);
}

/// The splits made so far, by page table: the layers of a step decode over the same page
/// tables (in caches of their own), and share one split of them.
struct SplitCache {
  DominanceInfo &dom;
  SmallVector<SplitSharedPrefixOp> splits;
  SplitSharedPrefixOp find(PagedDecodeOp d) {
    for (SplitSharedPrefixOp s : splits)
      if (s.getKvIndptr() == d.getKvIndptr() && s.getKvIndices() == d.getKvIndices() &&
          s.getKvLastPageLen() == d.getKvLastPageLen() &&
          static_cast<int64_t>(s.getPageSize()) == d.getBsr().getBlockCols() &&
          dom.properlyDominates(s.getOperation(), d.getOperation()))
        return s;
    return nullptr;
  }
};

LogicalResult decompose(PagedDecodeOp d, SplitCache &cache, bool lanes) {
  if (!d.hasTensorForm())
    return d.emitOpError() << "is `shared_prefix` in memref form; run fi-decompose-shared-"
                              "prefix before bufferization (fi-to-llvm does)";
  if (d.getPlan())
    return d.emitOpError() << "is `shared_prefix` but has a plan; drop `plan` (the "
                              "decomposition plans its prefix and suffix parts)";
  if (d.getPosEncoding() != PosEncoding::none || static_cast<int64_t>(d.getWindowLeft()) >= 0)
    return d.emitOpError()
           << "is `shared_prefix` with position-dependent attention (pos_encoding or "
              "window_left): the prefix part sees every query at the prefix's end; apply "
              "RoPE to q and k before the op, or drop `shared_prefix`";
  OpBuilder b(d);
  Location loc = d.getLoc();
  Type i32 = b.getI32Type();
  Value indptr = d.getKvIndptr(), indices = d.getKvIndices(), last = d.getKvLastPageLen();
  auto tensorOf = [&](int64_t n) { return RankedTensorType::get({n}, i32); };
  SplitSharedPrefixOp split = cache.find(d);
  if (!split) {
    Value qo = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{2}, i32);
    Value pi = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{2}, i32);
    Value px = emptyLike(b, loc, indices);
    Value pl = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{1}, i32);
    Value si = emptyLike(b, loc, indptr), sx = emptyLike(b, loc, indices);
    Value sl = emptyLike(b, loc, last);
    Value numPages = tensor::DimOp::create(b, loc, d.getK(), 0);
    split = SplitSharedPrefixOp::create(
        b, loc,
        TypeRange{tensorOf(2), tensorOf(2), px.getType(), tensorOf(1), si.getType(),
                  sx.getType(), sl.getType()},
        indptr, indices, last, numPages, qo, pi, px, pl, si, sx, sl,
        b.getI64IntegerAttr(d.getBsr().getBlockCols()));
    cache.splits.push_back(split);
  }

  // The prefix: one request whose query rows are the whole batch (its qo_indptr
  // {0, batch} written by the split, in the backend's memory like the page tables).
  Value qoIndptr = split.getResult(0);
  Value o = d.getO();
  auto lseType = RankedTensorType::get(
      {cast<RankedTensorType>(o.getType()).getDimSize(0),
       cast<RankedTensorType>(o.getType()).getDimSize(1)},
      b.getF32Type());
  auto emptyLse = [&]() -> Value {
    SmallVector<Value> dyn;
    if (lseType.isDynamicDim(0))
      dyn.push_back(tensor::DimOp::create(b, loc, o, 0));
    return tensor::EmptyOp::create(b, loc, lseType.getShape(), b.getF32Type(), dyn);
  };
  // The attention attributes of the decode (scale, soft cap, fp8 scales; tiles are chosen
  // for each part by fi-select-tiles), not its own operand segments or the marker.
  NamedAttrList attrs;
  for (NamedAttribute a : d->getAttrs())
    if (a.getName() != "operandSegmentSizes" && a.getName() != "shared_prefix" &&
        a.getName() != "tiles")
      attrs.push_back(a);
  SmallVector<Value, 1> none;
  auto one = [](Value v) { return v ? SmallVector<Value, 1>{v} : SmallVector<Value, 1>{}; };
  Value k = d.getK(), v = d.getV();
  // Every destination first: in lanes an allocation between the two parts would come
  // between the lanes' runs.
  Value prefixO = emptyLike(b, loc, o), prefixLse = emptyLse();
  Value suffixO = emptyLike(b, loc, o), suffixLse = emptyLse();
  Value lseDest = d.getLse() ? d.getLse() : emptyLse();
  NamedAttrList prefixAttrs = attrs, suffixAttrs = attrs;
  if (lanes) {
    prefixAttrs.set("fi.lane", b.getStringAttr("main"));
    suffixAttrs.set("fi.lane", b.getStringAttr("side"));
  }
  Operation *prefix = createWithSegments(
      b, loc, PagedPrefillOp::getOperationName(),
      {one(d.getQ()), one(qoIndptr), one(k), one(v), one(split.getResult(1)),
       one(split.getResult(2)), one(split.getResult(3)), /*mask*/ none, none,
       /*head scales*/ none, none, none, /*variant_args*/ none, /*merge*/ none, none,
       /*plan*/ none, one(prefixO), one(prefixLse)},
      TypeRange{o.getType(), lseType}, prefixAttrs);
  Operation *suffix = createWithSegments(
      b, loc, PagedDecodeOp::getOperationName(),
      {one(d.getQ()), one(k), one(v), one(split.getResult(4)), one(split.getResult(5)),
       one(split.getResult(6)), /*variant_args*/ none, /*plan*/ none, one(suffixO),
       one(suffixLse)},
      TypeRange{o.getType(), lseType}, suffixAttrs);
  auto merge = MergeStateOp::create(
      b, loc, TypeRange{o.getType(), lseDest.getType()}, prefix->getResult(0),
      prefix->getResult(1), suffix->getResult(0), suffix->getResult(1), o, lseDest);
  d->getResult(0).replaceAllUsesWith(merge->getResult(0));
  if (d.getLse())
    d->getResult(1).replaceAllUsesWith(merge->getResult(1));
  d->erase();
  return success();
}

struct FiDecomposeSharedPrefixPass
    : public mlir::fi::impl::FiDecomposeSharedPrefixBase<FiDecomposeSharedPrefixPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<PagedDecodeOp> ops;
    getOperation().walk([&](PagedDecodeOp d) {
      if (d.getSharedPrefix())
        ops.push_back(d);
    });
    SplitCache cache{getAnalysis<DominanceInfo>(), {}};
    for (PagedDecodeOp d : ops)
      if (failed(decompose(d, cache, lanes)))
        return signalPassFailure();
  }
};

} // namespace
