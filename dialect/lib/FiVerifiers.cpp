//===- FiVerifiers.cpp - verifiers of the fi ops --------------------------===//
//
// Every message names the operand at fault and says how to fix it. Sizes that are
// dynamic (`?`) are runtime values and pass; only static sizes can disagree. Head
// counts, head_dim and the page size must be static: the kernels are compiled for them.
//
//===----------------------------------------------------------------------===//
#include "fi/Dialect/FiDialect.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::fi;

namespace {

ShapedType shapedOf(Value v) { return cast<ShapedType>(v.getType()); }

/// A float as a person writes it: -3, 0.5, 1e-06.
std::string floatStr(const llvm::APFloat &value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value.convertToDouble());
  return buf;
}

std::string sizeStr(int64_t size) {
  return ShapedType::isDynamic(size) ? std::string("?") : std::to_string(size);
}

bool bothStaticAndDiffer(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// A dimension of a named operand, used to phrase messages.
struct Dim {
  Value value;
  StringRef operand;
  unsigned index;
  int64_t size() const { return shapedOf(value).getDimSize(index); }
};

class Checker {
public:
  explicit Checker(Operation *op) : op(op) {}

  InFlightDiagnostic error() { return op->emitOpError(); }

  LogicalResult rank(Value v, StringRef name, int64_t expected, StringRef dims) {
    if (shapedOf(v).getRank() == expected)
      return success();
    return error() << "operand '" << name << "' must be rank " << expected << " " << dims
                   << ", got " << v.getType() << "; reshape it to " << dims;
  }

  /// q/o/merge states: f16, bf16, f32. KV cache: also fp8 e4m3/e5m2.
  LogicalResult floatElement(Value v, StringRef name, bool kvCache) {
    Type t = shapedOf(v).getElementType();
    if (t.isF16() || t.isBF16() || t.isF32())
      return success();
    bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(t);
    if (kvCache && fp8)
      return success();
    if (fp8)
      return error() << "operand '" << name << "' has element type " << t
                     << ": fp8 is supported for the KV cache only; use f16, bf16 or f32";
    return error() << "operand '" << name << "' has element type " << t << "; use f16, bf16"
                   << (kvCache ? ", f32, f8E4M3FN or f8E5M2" : " or f32");
  }

  LogicalResult f32Element(Value v, StringRef name) {
    Type t = shapedOf(v).getElementType();
    if (t.isF32())
      return success();
    return error() << "operand '" << name << "' has element type " << t
                   << " but log-sum-exp values are f32; make it f32";
  }

  /// A CSR/ragged index array: rank 1, i32.
  LogicalResult indexArray(Value v, StringRef name, StringRef dims) {
    if (failed(rank(v, name, 1, dims)))
      return failure();
    Type t = shapedOf(v).getElementType();
    if (t.isSignlessInteger(32))
      return success();
    InFlightDiagnostic diag = error() << "operand '" << name << "' has element type " << t
                                      << " but index arrays must be i32";
    if (t.isInteger(64) || t.isIndex())
      diag << " (64-bit indptr/indices silently break the attention kernels)";
    diag << "; convert it to i32 (e.g. arith.index_cast / arith.trunci)";
    return diag;
  }

  LogicalResult isStatic(Dim d, StringRef what) {
    if (!ShapedType::isDynamic(d.size()))
      return success();
    return error() << what << " (dim " << d.index << " of '" << d.operand
                   << "') must be static: the kernels are compiled for it; give '"
                   << d.operand << "' a static size there";
  }

  LogicalResult same(StringRef what, Dim a, Dim b, StringRef fix) {
    if (!bothStaticAndDiffer(a.size(), b.size()))
      return success();
    return error() << what << " of '" << a.operand << "' (" << a.size()
                   << ") does not match " << what << " of '" << b.operand << "' ("
                   << b.size() << "); " << fix;
  }

  /// `array` has one more entry than `ref` has rows (an indptr of `batch + 1`).
  LogicalResult indptrOf(Value array, StringRef name, Dim ref, StringRef what) {
    int64_t len = shapedOf(array).getDimSize(0), n = ref.size();
    if (ShapedType::isDynamic(len) || ShapedType::isDynamic(n) || len == n + 1)
      return success();
    return error() << "operand '" << name << "' has " << len << " entries but '"
                   << ref.operand << "' has " << what << " " << n << "; '" << name
                   << "' needs " << what << " + 1 = " << n + 1 << " entries";
  }

  LogicalResult sameLength(Value a, StringRef an, Value b, StringRef bn, StringRef why) {
    int64_t la = shapedOf(a).getDimSize(0), lb = shapedOf(b).getDimSize(0);
    if (!bothStaticAndDiffer(la, lb))
      return success();
    return error() << "operand '" << an << "' has " << la << " entries but '" << bn
                   << "' has " << lb << "; " << why;
  }

  /// All shaped operands are tensors (tensor form) or all are memrefs (memref form);
  /// the tensor form returns one tensor per destination, of the destination's type.
  LogicalResult form(ArrayRef<StringRef> operandNames) {
    Value firstTensor, firstMemref;
    unsigned i = 0, tensorIdx = 0, memrefIdx = 0;
    for (Value v : op->getOperands()) {
      if (isa<TensorType>(v.getType()) && !firstTensor)
        firstTensor = v, tensorIdx = i;
      if (isa<MemRefType>(v.getType()) && !firstMemref)
        firstMemref = v, memrefIdx = i;
      ++i;
    }
    if (firstTensor && firstMemref)
      return error() << "mixes tensors and memrefs (operand '"
                     << operandName(operandNames, tensorIdx) << "' is a tensor, '"
                     << operandName(operandNames, memrefIdx)
                     << "' a memref); use tensors everywhere (destination-passing style) "
                        "or memrefs everywhere";
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    if (!dps)
      return success();
    if (firstMemref) {
      if (op->getNumResults() != 0)
        return error() << "the memref form writes into its 'outs' buffers and has no "
                          "results; drop the '->' result types";
      return success();
    }
    if (op->getNumResults() != static_cast<unsigned>(dps.getNumDpsInits()))
      return error() << "has " << op->getNumResults() << " results but "
                     << dps.getNumDpsInits()
                     << " destinations; the tensor form returns one tensor per "
                        "destination in 'outs', of the same type";
    for (OpOperand &init : dps.getDpsInitsMutable()) {
      OpResult result = dps.getTiedOpResult(&init);
      if (result.getType() != init.get().getType())
        return error() << "result #" << result.getResultNumber() << " has type "
                       << result.getType() << " but its destination '"
                       << operandName(operandNames, init.getOperandNumber())
                       << "' has type " << init.get().getType()
                       << "; give the result the destination's type";
    }
    return success();
  }

  /// Attributes shared by the attention ops.
  template <typename OpTy>
  LogicalResult attentionAttrs(OpTy attn) {
    // I64Attr accessors return uint64_t; the window is signed.
    int64_t windowLeft = static_cast<int64_t>(attn.getWindowLeft());
    if (windowLeft < -1)
      return error() << "window_left = " << windowLeft
                     << " is invalid; use -1 for no sliding window or a window >= 0";
    if (attn.getLogitsSoftCap().isNegative())
      return error() << "logits_soft_cap = "
                     << floatStr(attn.getLogitsSoftCap())
                     << " must be >= 0 (0 turns the soft cap off)";
    if (auto scale = attn.getSmScale(); scale && !(scale->convertToDouble() > 0))
      return error() << "sm_scale = " << floatStr(*scale)
                     << " must be > 0; omit it to get 1/sqrt(head_dim)";
    auto positive = [&](StringRef name, llvm::APFloat value) -> LogicalResult {
      if (value.convertToDouble() > 0)
        return success();
      return error() << name << " = " << floatStr(value) << " must be > 0";
    };
    if (failed(positive("rope_scale", attn.getRopeScale())) ||
        failed(positive("rope_theta", attn.getRopeTheta())) ||
        failed(positive("k_scale", attn.getKScale())) ||
        failed(positive("v_scale", attn.getVScale())) ||
        failed(positive("q_scale", attn.getQScale())))
      return failure();
    if (!attn.getVariantArgs().empty() && !attn.getScoreModAttr() && !attn.getMaskModAttr())
      return error() << "has variant_args but neither score_mod nor mask_mod reads them; "
                        "add the function (score_mod = @f / mask_mod = @m) or drop them";
    return success();
  }

  /// Context parallelism (`kv_shard`): each rank numbers the keys of its own segment from
  /// 0, so nothing that depends on a key's position in the whole sequence can run.
  template <typename OpTy>
  LogicalResult kvShard(OpTy attn, MaskMode mask, bool sharedPrefix) {
    if (!attn.getKvShardAttr())
      return success();
    switch (attn.getPosEncoding()) {
    case PosEncoding::rope_llama:
      return error() << "has kv_shard and pos_encoding = rope_llama: key positions are per "
                        "shard (each rank's segment starts at 0), so the kernel cannot rotate "
                        "K by its true position; apply RoPE to K before appending it to the "
                        "cache (and to q) and drop pos_encoding, or drop kv_shard";
    case PosEncoding::alibi:
      return error() << "has kv_shard and pos_encoding = alibi: ALiBi biases depend on key "
                        "positions, which are per shard; drop pos_encoding or kv_shard";
    case PosEncoding::none:
      break;
    }
    int64_t windowLeft = static_cast<int64_t>(attn.getWindowLeft());
    if (windowLeft != -1)
      return error() << "has kv_shard and window_left = " << windowLeft
                     << ": a sliding window needs the true key positions, which are per "
                        "shard; drop window_left (no window) or kv_shard";
    if (mask == MaskMode::custom)
      return error() << "has kv_shard and mask_mode = custom: a custom mask covers the whole "
                        "KV of each request, which no rank holds; use none or causal, or drop "
                        "kv_shard";
    if (attn.getScoreModAttr() || attn.getMaskModAttr())
      return error() << "has kv_shard and a score_mod/mask_mod: a variant sees key positions, "
                        "which are per shard; drop the variant or kv_shard";
    if (sharedPrefix)
      return error() << "has kv_shard and shared_prefix: the shared-prefix decomposition "
                        "splits one rank's page table as if it were the whole KV; drop "
                        "shared_prefix or kv_shard";
    return success();
  }

  LogicalResult customMask(MaskMode mode, Value mask, Value maskIndptr,
                           StringRef batchIndptrName, Value batchIndptr) {
    if (mode == MaskMode::custom && !mask)
      return error() << "mask_mode = custom needs a 'mask' operand: add "
                        "mask(%bits, %mask_indptr : ...) or choose another mask_mode";
    if (mode != MaskMode::custom && mask)
      return error() << "a 'mask' operand is given but mask_mode is "
                     << stringifyMaskMode(mode)
                     << "; set mask_mode = #fi.mask_mode<custom> or drop the mask";
    if (!mask)
      return success();
    if (!maskIndptr)
      return error() << "'mask' needs its 'mask_indptr' operand: add it after the mask";
    ShapedType maskType = shapedOf(mask);
    if (maskType.getRank() != 1 || !maskType.getElementType().isInteger(8))
      return error() << "operand 'mask' must be a rank-1 bit-packed array of i8 or ui8 "
                        "(little bit order, 1 = attend), got "
                     << mask.getType();
    if (failed(indexArray(maskIndptr, "mask_indptr", "[batch + 1]")))
      return failure();
    return sameLength(maskIndptr, "mask_indptr", batchIndptr, batchIndptrName,
                      "both have batch + 1 entries");
  }

  /// A plan operand must come from the right plan op; if its plan op is visible, the
  /// problem it was made for must be this op's.
  LogicalResult plan(Value planValue, PlanFamily family, StringRef planOp) {
    if (!planValue)
      return success();
    auto planType = cast<PlanType>(planValue.getType());
    if (planType.getFamily() != family)
      return error() << "operand 'plan' is a !fi.plan<"
                     << stringifyPlanFamily(planType.getFamily())
                     << "> but this op needs a !fi.plan<" << stringifyPlanFamily(family)
                     << ">; make it with fi." << planOp;
    return success();
  }

  template <typename PlanOpTy>
  LogicalResult planShape(Value planValue, Value q, Value kvSample, int64_t qoHeads,
                          int64_t kvHeads, int64_t headDim, BsrAttr bsr,
                          MaskMode maskMode = MaskMode::none, KvShardAttr kvShard = {}) {
    auto planOp = planValue ? planValue.getDefiningOp<PlanOpTy>() : PlanOpTy();
    if (!planOp)
      return success();
    auto mismatch = [&](StringRef what, auto planHas, auto opHas) {
      return error() << "operand 'plan' was made for " << what << " " << planHas
                     << " but this op has " << what << " " << opHas
                     << "; make the plan with the op's shape (or use the op's own plan)";
    };
    int64_t planQoHeads = planOp.getNumQoHeads(), planKvHeads = planOp.getNumKvHeads(),
            planHeadDim = planOp.getHeadDim();
    if (planQoHeads != qoHeads)
      return mismatch("num_qo_heads", planQoHeads, qoHeads);
    if (planKvHeads != kvHeads)
      return mismatch("num_kv_heads", planKvHeads, kvHeads);
    if (planHeadDim != headDim)
      return mismatch("head_dim", planHeadDim, headDim);
    if (planOp.getQType() != shapedOf(q).getElementType())
      return mismatch("q_type", planOp.getQType(), shapedOf(q).getElementType());
    if (planOp.getKvType() != shapedOf(kvSample).getElementType())
      return mismatch("kv_type", planOp.getKvType(), shapedOf(kvSample).getElementType());
    if constexpr (!std::is_same_v<PlanOpTy, RaggedPrefillPlanOp>) {
      if (planOp.getBsr() != bsr)
        return mismatch("bsr", planOp.getBsr(), bsr);
    }
    if constexpr (!std::is_same_v<PlanOpTy, DecodePlanOp>) {
      // The work partition of a causal or custom mask differs from an unmasked one.
      if (planOp.getMaskMode() != maskMode)
        return mismatch("mask_mode", stringifyMaskMode(planOp.getMaskMode()),
                        stringifyMaskMode(maskMode));
    }
    if constexpr (std::is_same_v<PlanOpTy, DecodePlanOp> ||
                  std::is_same_v<PlanOpTy, PagedPrefillPlanOp>) {
      // A sharded plan sizes its workspace for all ranks' states and exchanges them; an
      // unsharded one does neither. Checked where the plan operand comes from a plan op,
      // as the shape is (a plan passed in as a block argument is not seen here; the
      // lowering needs a plan op anyway).
      if (planOp.getKvShardAttr() != kvShard) {
        auto str = [](KvShardAttr a) {
          std::string s;
          llvm::raw_string_ostream os(s);
          if (a)
            os << a;
          else
            os << "none";
          return s;
        };
        return error() << "operand 'plan' was made for kv_shard "
                       << str(planOp.getKvShardAttr()) << " but this op has kv_shard "
                       << str(kvShard)
                       << "; give the plan op the op's kv_shard (fi-materialize-plans copies "
                          "it) or use the op's own plan";
      }
    }
    return success();
  }

  Operation *op;

private:
  static StringRef operandName(ArrayRef<StringRef> names, unsigned idx) {
    return idx < names.size() ? names[idx] : StringRef("?");
  }
};

/// Names of the operands actually present, in operand order (for messages).
template <typename OpTy>
SmallVector<StringRef> presentOperandNames(OpTy op, ArrayRef<StringRef> odsNames) {
  SmallVector<StringRef> names;
  for (auto [i, name] : llvm::enumerate(odsNames))
    names.append(op.getODSOperandIndexAndLength(i).second, name);
  return names;
}

/// The dims of a paged KV cache given as `k` (+ `v`) in `bsr.layout`.
struct PagedCache {
  Dim pageSize, kvHeads, headDim;
};

FailureOr<PagedCache> checkPagedCache(Checker &c, Value k, StringRef kName, Value v,
                                      StringRef vName, BsrAttr bsr) {
  bool nhd = bsr.getLayout() == KvLayout::nhd;
  StringRef dims = nhd ? "[pages, page_size, kv_heads, head_dim] (nhd layout)"
                       : "[pages, kv_heads, page_size, head_dim] (hnd layout)";
  StringRef combinedDims = nhd ? "[pages, 2, page_size, kv_heads, head_dim] (nhd layout)"
                               : "[pages, 2, kv_heads, page_size, head_dim] (hnd layout)";
  unsigned offset = v ? 0 : 1;
  if (v) {
    if (failed(c.rank(k, kName, 4, dims)))
      return failure();
    if (v.getType() != k.getType())
      return c.error() << "operand '" << vName << "' has type " << v.getType()
                       << " but '" << kName << "' has type " << k.getType()
                       << "; K and V must have the same shape and element type";
  } else {
    if (shapedOf(k).getRank() != 5)
      return c.error() << "operand '" << kName << "' without '" << vName
                       << "' is a combined K/V cache and must be rank 5 " << combinedDims
                       << ", got " << k.getType() << "; pass '" << vName
                       << "' separately or add the K/V dimension";
    int64_t kvDim = shapedOf(k).getDimSize(1);
    if (kvDim != 2)
      return c.error() << "operand '" << kName
                       << "' is a combined K/V cache whose dim 1 (the K/V dimension) must "
                          "be 2, got "
                       << sizeStr(kvDim) << "; K is at index 0, V at index 1";
  }
  if (failed(c.floatElement(k, kName, /*kvCache=*/true)))
    return failure();
  PagedCache cache{Dim{k, kName, (nhd ? 1u : 2u) + offset},
                   Dim{k, kName, (nhd ? 2u : 1u) + offset}, Dim{k, kName, 3u + offset}};
  if (failed(c.isStatic(cache.pageSize, "the page size")) ||
      failed(c.isStatic(cache.kvHeads, "kv_heads")) ||
      failed(c.isStatic(cache.headDim, "head_dim")))
    return failure();
  if (cache.pageSize.size() != bsr.getBlockCols())
    return c.error() << "the page size of '" << kName << "' (" << cache.pageSize.size()
                     << ", dim " << cache.pageSize.index << " in "
                     << stringifyKvLayout(bsr.getLayout())
                     << " layout) does not match #fi.bsr block_cols ("
                     << bsr.getBlockCols()
                     << "); set block_cols to the page size or fix the layout";
  return cache;
}

LogicalResult checkPageTable(Checker &c, Value indptr, Value indices, Value lastPageLen) {
  if (failed(c.indexArray(indptr, "kv_indptr", "[batch + 1]")) ||
      failed(c.indexArray(indices, "kv_indices", "[num_used_pages]")) ||
      failed(c.indexArray(lastPageLen, "kv_last_page_len", "[batch]")))
    return failure();
  int64_t n = shapedOf(indptr).getDimSize(0), m = shapedOf(lastPageLen).getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(m) && n != m + 1)
    return c.error() << "operand 'kv_indptr' has " << n << " entries but 'kv_last_page_len' has "
                     << m << "; kv_indptr needs batch + 1 entries and kv_last_page_len batch";
  return success();
}

/// q [rows, qo_heads, head_dim] against the KV heads/head_dim; o like q; lse [rows,
/// qo_heads] f32. `k` (prefill ops): fp8 attention is allowed -- q of f8E4M3FN with k/v of
/// f8E4M3FN and o of f16 or bf16.
LogicalResult checkQueryAndOutputs(Checker &c, Value q, Dim kvHeads, Dim kvHeadDim,
                                   Value o, Value lse, StringRef rows, Value k = {}) {
  std::string qDims = ("[" + rows + ", qo_heads, head_dim]").str();
  const bool fp8Query = isa<Float8E4M3FNType>(shapedOf(q).getElementType());
  if (fp8Query && !k)
    return c.error() << "operand 'q' has element type " << shapedOf(q).getElementType()
                     << ": fp8 queries (fp8 attention) are for ragged_prefill and "
                        "paged_prefill; this op takes f16, bf16 or f32";
  if (failed(c.rank(q, "q", 3, qDims)) ||
      (!fp8Query && failed(c.floatElement(q, "q", false))))
    return failure();
  if (fp8Query && !isa<Float8E4M3FNType>(shapedOf(k).getElementType()))
    return c.error() << "operand 'q' is f8E4M3FN but 'k' has element type "
                     << shapedOf(k).getElementType()
                     << ": fp8 attention takes f8E4M3FN K and V too (or use a 16-bit q "
                        "with an fp8 KV cache)";
  Dim qoHeads{q, "q", 1}, headDim{q, "q", 2};
  if (failed(c.isStatic(qoHeads, "qo_heads")) || failed(c.isStatic(headDim, "head_dim")))
    return failure();
  if (qoHeads.size() < 1 || kvHeads.size() < 1 || headDim.size() < 1)
    return c.error() << "qo_heads of 'q' (" << qoHeads.size() << "), kv_heads of '"
                     << kvHeads.operand << "' (" << kvHeads.size() << ") and head_dim of 'q' ("
                     << headDim.size() << ") must all be >= 1; an empty head dimension "
                     << "has nothing to attend with";
  if (qoHeads.size() % kvHeads.size() != 0)
    return c.error() << "qo_heads of 'q' (" << qoHeads.size()
                     << ") is not a multiple of kv_heads of '" << kvHeads.operand << "' ("
                     << kvHeads.size()
                     << "); the query heads must be a multiple of the KV heads (GQA/MQA)";
  if (failed(c.same("head_dim", kvHeadDim, headDim,
                    "q, k, v and o must have the same head_dim")))
    return failure();
  ShapedType qType = shapedOf(q), oType = shapedOf(o);
  if (fp8Query) {
    Type oe = oType.getElementType();
    if (!(oe.isF16() || oe.isBF16()) ||
        failed(verifyCompatibleShape(oType.getShape(), qType.getShape())))
      return c.error() << "destination 'o' has type " << o.getType()
                       << " but fp8 attention writes the shape of 'q' (" << q.getType()
                       << ") in f16 or bf16";
  } else if (oType.getElementType() != qType.getElementType() ||
             failed(verifyCompatibleShape(oType.getShape(), qType.getShape()))) {
    return c.error() << "destination 'o' has type " << o.getType()
                     << " but must have the shape and element type of 'q' ("
                     << q.getType() << "); allocate o like q";
  }
  if (!lse)
    return success();
  std::string lseDims = ("[" + rows + ", qo_heads]").str();
  if (failed(c.rank(lse, "lse", 2, lseDims)) || failed(c.f32Element(lse, "lse")))
    return failure();
  Dim lseRows{lse, "lse", 0}, lseHeads{lse, "lse", 1};
  if (bothStaticAndDiffer(lseRows.size(), qType.getDimSize(0)) ||
      bothStaticAndDiffer(lseHeads.size(), qoHeads.size()))
    return c.error() << "destination 'lse' has type " << lse.getType() << " but must be "
                     << lseDims << " = [" << sizeStr(qType.getDimSize(0)) << ", "
                     << qoHeads.size() << "] to match 'q'";
  return success();
}

/// fp8 attention's per-head scales: all three or none, only with an f8E4M3FN q, rank-1
/// f32 of [qo_heads], [kv_heads], [kv_heads].
LogicalResult checkHeadScales(Checker &c, Value q, int64_t kvHeads, Value qs, Value ks,
                              Value vs) {
  if (!qs && !ks && !vs)
    return success();
  if (!qs || !ks || !vs)
    return c.error() << "has only some of q_scale_heads, k_scale_heads, v_scale_heads: pass "
                        "all three (head_scales(...)) or none";
  if (!isa<Float8E4M3FNType>(shapedOf(q).getElementType()))
    return c.error() << "has head_scales but 'q' is " << shapedOf(q).getElementType()
                     << ": per-head scales are for fp8 attention (f8E4M3FN q, k and v); use "
                        "k_scale / v_scale";
  const int64_t qoHeads = shapedOf(q).getDimSize(1);
  const std::pair<Value, const char *> all[3] = {
      {qs, "q_scale_heads"}, {ks, "k_scale_heads"}, {vs, "v_scale_heads"}};
  for (int i = 0; i < 3; ++i) {
    ShapedType t = shapedOf(all[i].first);
    const int64_t want = i == 0 ? qoHeads : kvHeads;
    if (t.getRank() != 1 || !t.getElementType().isF32() ||
        bothStaticAndDiffer(t.getDimSize(0), want))
      return c.error() << "operand '" << all[i].second << "' has type "
                       << all[i].first.getType() << " but must be [" << want
                       << "] f32 (one scale per " << (i == 0 ? "query" : "KV") << " head)";
  }
  return success();
}

/// fp8 attention: the output type a prefill op's plan was made for (o_type) is its o's.
template <typename PlanOpTy>
LogicalResult checkPlanOutputType(Checker &c, Value plan, Value o) {
  auto planOp = plan ? plan.getDefiningOp<PlanOpTy>() : PlanOpTy();
  if (!planOp || !planOp.getOTypeAttr())
    return success();
  Type oe = shapedOf(o).getElementType();
  if (*planOp.getOType() != oe)
    return c.error() << "operand 'plan' was made for o_type " << *planOp.getOType()
                     << " but this op's 'o' has element type " << oe
                     << "; make the plan with the op's shape (or use the op's own plan)";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Attention ops
//===----------------------------------------------------------------------===//

LogicalResult PagedDecodeOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"q", "k", "v", "kv_indptr", "kv_indices", "kv_last_page_len", "variant_args",
                  "plan", "o", "lse"}))))
    return failure();
  FailureOr<PagedCache> cache = checkPagedCache(c, getK(), "k", getV(), "v", getBsr());
  if (failed(cache) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(checkQueryAndOutputs(c, getQ(), cache->kvHeads, cache->headDim, getO(),
                                  getLse(), "batch")) ||
      failed(c.indptrOf(getKvIndptr(), "kv_indptr", Dim{getQ(), "q", 0}, "batch")) ||
      failed(c.attentionAttrs(*this)) ||
      failed(c.plan(getPlan(), PlanFamily::decode, "decode_plan")))
    return failure();
  if (getSharedPrefix() && (getScoreModAttr() || getMaskModAttr()))
    return c.error() << "has shared_prefix and a score_mod/mask_mod: the decomposition runs "
                        "the prefix and the rest as separate ops whose positions differ from "
                        "the decode's; drop shared_prefix or the variant";
  if (failed(c.kvShard(*this, MaskMode::none, getSharedPrefix())))
    return failure();
  return c.planShape<DecodePlanOp>(getPlan(), getQ(), getK(), getQ().getType().getDimSize(1),
                                   cache->kvHeads.size(), cache->headDim.size(), getBsr(),
                                   MaskMode::none, getKvShardAttr());
}

LogicalResult PagedPrefillOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"q", "qo_indptr", "k", "v", "kv_indptr", "kv_indices",
                  "kv_last_page_len", "mask", "mask_indptr", "q_scale_heads", "k_scale_heads",
                  "v_scale_heads", "variant_args", "merge_v", "merge_s", "plan", "o",
                  "lse"}))))
    return failure();
  if (getMergeV() || getMergeS()) {
    if (!getMergeV() || !getMergeS())
      return c.error() << "has '" << (getMergeV() ? "merge_v" : "merge_s") << "' without '"
                       << (getMergeV() ? "merge_s" : "merge_v")
                       << "': the other state is both its o and its lse";
    if (!getLse())
      return c.error() << "merges another state ('merge_v', 'merge_s') but has no 'lse' "
                          "destination: the merge needs the attention's own lse; add one";
    if (getMergeV().getType() != getO().getType())
      return c.error() << "operand 'merge_v' has type " << getMergeV().getType()
                       << " but 'o' has type " << getO().getType()
                       << "; the other state's o must have o's type";
    if (getMergeS().getType() != getLse().getType())
      return c.error() << "operand 'merge_s' has type " << getMergeS().getType()
                       << " but 'lse' has type " << getLse().getType()
                       << "; the other state's lse must have lse's type";
    if (getKvShardAttr())
      return c.error() << "merges another state but has 'kv_shard': a KV-sharded prefill "
                          "merges across ranks inside its run; merge with fi.merge_state "
                          "after it";
  }
  FailureOr<PagedCache> cache = checkPagedCache(c, getK(), "k", getV(), "v", getBsr());
  if (failed(cache) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(c.indexArray(getQoIndptr(), "qo_indptr", "[batch + 1]")) ||
      failed(c.sameLength(getQoIndptr(), "qo_indptr", getKvIndptr(), "kv_indptr",
                          "both have batch + 1 entries")) ||
      failed(checkQueryAndOutputs(c, getQ(), cache->kvHeads, cache->headDim, getO(),
                                  getLse(), "nnz_qo", getK())) ||
      failed(checkHeadScales(c, getQ(), cache->kvHeads.size(), getQScaleHeads(),
                             getKScaleHeads(), getVScaleHeads())) ||
      failed(c.customMask(getMaskMode(), getMask(), getMaskIndptr(), "qo_indptr",
                          getQoIndptr())) ||
      failed(c.attentionAttrs(*this)) ||
      failed(c.plan(getPlan(), PlanFamily::paged_prefill, "paged_prefill_plan")) ||
      failed(c.kvShard(*this, getMaskMode(), /*sharedPrefix=*/false)))
    return failure();
  if (failed(c.planShape<PagedPrefillPlanOp>(getPlan(), getQ(), getK(),
                                         getQ().getType().getDimSize(1),
                                         cache->kvHeads.size(), cache->headDim.size(),
                                         getBsr(), getMaskMode(), getKvShardAttr())))
    return failure();
  return checkPlanOutputType<PagedPrefillPlanOp>(c, getPlan(), getO());
}

LogicalResult RaggedPrefillOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"q", "k", "v", "qo_indptr", "kv_indptr", "mask", "mask_indptr",
                  "q_scale_heads", "k_scale_heads", "v_scale_heads", "variant_args", "plan",
                  "o", "lse"}))))
    return failure();
  Value k = getK(), v = getV();
  unsigned offset = v ? 0 : 1;
  if (v) {
    if (failed(c.rank(k, "k", 3, "[nnz_kv, kv_heads, head_dim]")))
      return failure();
    if (v.getType() != k.getType())
      return c.error() << "operand 'v' has type " << v.getType() << " but 'k' has type "
                       << k.getType()
                       << "; K and V must have the same shape and element type";
  } else {
    if (failed(c.rank(k, "k", 4, "[nnz_kv, 2, kv_heads, head_dim] (combined K/V, no 'v')")))
      return failure();
    if (shapedOf(k).getDimSize(1) != 2)
      return c.error() << "operand 'k' is a combined K/V tensor whose dim 1 (the K/V "
                          "dimension) must be 2, got "
                       << sizeStr(shapedOf(k).getDimSize(1))
                       << "; K is at index 0, V at index 1";
  }
  Dim kvHeads{k, "k", 1 + offset}, headDim{k, "k", 2 + offset};
  if (failed(c.floatElement(k, "k", /*kvCache=*/true)) ||
      failed(c.isStatic(kvHeads, "kv_heads")) || failed(c.isStatic(headDim, "head_dim")) ||
      failed(c.indexArray(getQoIndptr(), "qo_indptr", "[batch + 1]")) ||
      failed(c.indexArray(getKvIndptr(), "kv_indptr", "[batch + 1]")) ||
      failed(c.sameLength(getQoIndptr(), "qo_indptr", getKvIndptr(), "kv_indptr",
                          "both have batch + 1 entries")) ||
      failed(checkQueryAndOutputs(c, getQ(), kvHeads, headDim, getO(), getLse(),
                                  "nnz_qo", k)) ||
      failed(checkHeadScales(c, getQ(), kvHeads.size(), getQScaleHeads(), getKScaleHeads(),
                             getVScaleHeads())) ||
      failed(c.customMask(getMaskMode(), getMask(), getMaskIndptr(), "qo_indptr",
                          getQoIndptr())) ||
      failed(c.attentionAttrs(*this)) ||
      failed(c.plan(getPlan(), PlanFamily::ragged_prefill, "ragged_prefill_plan")))
    return failure();
  if (failed(c.planShape<RaggedPrefillPlanOp>(getPlan(), getQ(), k,
                                              getQ().getType().getDimSize(1), kvHeads.size(),
                                              headDim.size(), BsrAttr(), getMaskMode())))
    return failure();
  return checkPlanOutputType<RaggedPrefillPlanOp>(c, getPlan(), getO());
}

namespace {
/// What block-sparse attention and its plan share: the block shape and the mask mode.
LogicalResult checkBlockSparseAttrs(Checker &c, BsrAttr bsr, MaskMode mode) {
  if (bsr.getBlockRows() < 1 || bsr.getBlockCols() < 1)
    return c.error() << "bsr has block_rows = " << bsr.getBlockRows()
                     << " and block_cols = " << bsr.getBlockCols()
                     << "; both must be >= 1 (the R x C blocks of the BSR matrix)";
  if (mode == MaskMode::custom)
    return c.error() << "mask_mode = custom: the BSR matrix is the mask of block-sparse "
                        "attention; use none or causal";
  return success();
}

/// Variable blocks: `row_offsets` / `col_offsets` are i32 arrays of one element per block
/// plus one; with static sizes, row_offsets has as many elements as bsr_indptr, and at most
/// M / block_rows + 1 (N / block_cols + 1) when M (N) is static: `bsr` names the smallest
/// block.
LogicalResult checkBlockOffsets(Checker &c, Value rowOffsets, Value colOffsets, Value indptr,
                                int64_t m, int64_t n, BsrAttr bsr) {
  if (static_cast<bool>(rowOffsets) != static_cast<bool>(colOffsets))
    return c.error() << "has " << (rowOffsets ? "row_offsets without col_offsets"
                                              : "col_offsets without row_offsets")
                     << "; block_offsets takes both (uniform blocks: neither)";
  if (!rowOffsets)
    return success();
  if (failed(c.indexArray(rowOffsets, "row_offsets", "[block rows + 1]")) ||
      failed(c.indexArray(colOffsets, "col_offsets", "[column blocks + 1]")))
    return failure();
  int64_t rows = shapedOf(rowOffsets).getDimSize(0), cols = shapedOf(colOffsets).getDimSize(0);
  int64_t ptrs = shapedOf(indptr).getDimSize(0);
  if (bothStaticAndDiffer(rows, ptrs))
    return c.error() << "operand 'bsr_indptr' has " << ptrs << " elements but 'row_offsets' has "
                     << rows << "; both are [block rows + 1]";
  for (auto [len, total, least, name, what, dim] :
       {std::tuple{rows, m, bsr.getBlockRows(), "row_offsets", "block_rows", "M"},
        std::tuple{cols, n, bsr.getBlockCols(), "col_offsets", "block_cols", "N"}}) {
    if (ShapedType::isDynamic(len))
      continue;
    if (len < 1)
      return c.error() << "operand '" << name << "' is empty; it needs one element per block "
                       << "plus one (from 0 to " << dim << ")";
    if (!ShapedType::isDynamic(total) && least >= 1 && len - 1 > total / least)
      return c.error() << "operand '" << name << "' has " << len << " elements (" << len - 1
                       << " blocks) but " << dim << " = " << total << " holds at most "
                       << total / least << " blocks of at least " << what << " = " << least
                       << "; " << what << " names the smallest block";
  }
  return success();
}
} // namespace

/// The page table of a paged block-sparse op or plan: all three arrays or none.
static LogicalResult checkPagesTogether(Checker &c, Value indptr, Value indices, Value last) {
  const int present = (indptr ? 1 : 0) + (indices ? 1 : 0) + (last ? 1 : 0);
  if (present == 0 || present == 3)
    return success();
  return c.error() << "has " << present << " of the page table's 3 arrays (kv_indptr, "
                   << "kv_indices, kv_last_page_len); pages takes all three";
}

LogicalResult BlockSparseAttentionOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"q", "k", "v", "bsr_indptr", "bsr_indices", "row_offsets", "col_offsets",
                  "kv_indptr", "kv_indices", "kv_last_page_len", "variant_args", "plan", "o",
                  "lse"}))))
    return failure();
  if (failed(checkPagesTogether(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())))
    return failure();
  Value k = getK(), v = getV();
  const bool paged = static_cast<bool>(getKvIndptr());
  Dim kvHeads{k, "k", 1}, headDim{k, "k", 2};
  int64_t numKeys = ShapedType::kDynamic;
  if (paged) {  // the paper's view: column blocks of a paged cache
    FailureOr<PagedCache> cache = checkPagedCache(c, k, "k", v, "v", getBsr());
    if (failed(cache) ||
        failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())))
      return failure();
    int64_t ptrs = shapedOf(getKvIndptr()).getDimSize(0);
    if (!ShapedType::isDynamic(ptrs) && ptrs != 2)
      return c.error() << "operand 'kv_indptr' has " << ptrs
                       << " entries but block-sparse attention pages one sequence: it needs "
                          "2 ({0, pages})";
    kvHeads = cache->kvHeads, headDim = cache->headDim;
  } else {
    if (failed(c.rank(k, "k", 3, "[N, kv_heads, head_dim]")))
      return failure();
    if (v.getType() != k.getType())
      return c.error() << "operand 'v' has type " << v.getType() << " but 'k' has type "
                       << k.getType() << "; K and V must have the same shape and element type";
    if (failed(c.floatElement(k, "k", /*kvCache=*/true)) ||
        failed(c.isStatic(kvHeads, "kv_heads")) || failed(c.isStatic(headDim, "head_dim")))
      return failure();
    numKeys = cast<ShapedType>(k.getType()).getDimSize(0);
  }
  if (failed(c.indexArray(getBsrIndptr(), "bsr_indptr", "[ceil(M / block_rows) + 1]")) ||
      failed(c.indexArray(getBsrIndices(), "bsr_indices", "[nnz blocks]")) ||
      failed(checkQueryAndOutputs(c, getQ(), kvHeads, headDim, getO(), getLse(), "M")) ||
      failed(checkBlockSparseAttrs(c, getBsr(), getMaskMode())) ||
      failed(checkBlockOffsets(c, getRowOffsets(), getColOffsets(), getBsrIndptr(),
                               getQ().getType().getDimSize(0), numKeys, getBsr())) ||
      failed(c.attentionAttrs(*this)) ||
      failed(c.plan(getPlan(), PlanFamily::block_sparse, "block_sparse_plan")))
    return failure();
  if (Operation *def = getPlan() ? getPlan().getDefiningOp() : nullptr)
    if (auto planOp = dyn_cast<BlockSparsePlanOp>(def)) {
      if (static_cast<bool>(planOp.getRowOffsets()) != static_cast<bool>(getRowOffsets()))
        return c.error() << (getRowOffsets() ? "has block_offsets but its plan has none"
                                             : "has no block_offsets but its plan has")
                         << ": give the plan the op's block_offsets (variable blocks) or "
                            "neither";
      if (static_cast<bool>(planOp.getKvIndptr()) != paged)
        return c.error() << (paged ? "has pages (a paged cache) but its plan has none"
                                   : "has no pages but its plan has (a paged cache)")
                         << ": give the plan the op's pages and num_pages, or neither";
    }
  return c.planShape<BlockSparsePlanOp>(getPlan(), getQ(), k, getQ().getType().getDimSize(1),
                                        kvHeads.size(), headDim.size(), getBsr(),
                                        getMaskMode());
}

//===----------------------------------------------------------------------===//
// Merge ops
//===----------------------------------------------------------------------===//

LogicalResult MergeStateOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(*this, {"v_a", "s_a", "v_b", "s_b", "v_out",
                                                "s_out"}))))
    return failure();
  StringRef vDims = "[rows, heads, head_dim]", sDims = "[rows, heads]";
  if (failed(c.rank(getVA(), "v_a", 3, vDims)) ||
      failed(c.floatElement(getVA(), "v_a", false)) ||
      failed(c.rank(getSA(), "s_a", 2, sDims)) || failed(c.f32Element(getSA(), "s_a")))
    return failure();
  ShapedType va = getVA().getType();
  if (getVB().getType().getElementType() != va.getElementType() ||
      failed(verifyCompatibleShape(getVB().getType().getShape(), va.getShape())))
    return c.error() << "operand 'v_b' has type " << getVB().getType()
                     << " but 'v_a' has type " << getVA().getType()
                     << "; both states must cover the same rows, heads and head_dim";
  auto checkS = [&](Value s, StringRef name, StringRef of) -> LogicalResult {
    if (failed(c.rank(s, name, 2, sDims)) || failed(c.f32Element(s, name)))
      return failure();
    if (bothStaticAndDiffer(shapedOf(s).getDimSize(0), va.getDimSize(0)) ||
        bothStaticAndDiffer(shapedOf(s).getDimSize(1), va.getDimSize(1)))
      return c.error() << "operand '" << name << "' has type " << s.getType()
                       << " but must be [rows, heads] = [" << sizeStr(va.getDimSize(0))
                       << ", " << sizeStr(va.getDimSize(1)) << "] to match '" << of << "'";
    return success();
  };
  if (failed(checkS(getSA(), "s_a", "v_a")) || failed(checkS(getSB(), "s_b", "v_a")))
    return failure();
  ShapedType out = getVOut().getType();
  if (out.getElementType() != va.getElementType() ||
      failed(verifyCompatibleShape(out.getShape(), va.getShape())))
    return c.error() << "destination 'v_out' has type " << getVOut().getType()
                     << " but must have the shape and element type of 'v_a' ("
                     << getVA().getType() << ")";
  if (getSOut() && failed(checkS(getSOut(), "s_out", "v_a")))
    return failure();
  return success();
}

LogicalResult MergeStatesOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(*this, {"v", "s", "v_out", "s_out"}))))
    return failure();
  if (failed(c.rank(getV(), "v", 4, "[rows, n, heads, head_dim]")) ||
      failed(c.floatElement(getV(), "v", false)) ||
      failed(c.rank(getS(), "s", 3, "[rows, n, heads]")) ||
      failed(c.f32Element(getS(), "s")))
    return failure();
  ArrayRef<int64_t> v = getV().getType().getShape(), s = getS().getType().getShape();
  for (unsigned i = 0; i < 3; ++i)
    if (bothStaticAndDiffer(s[i], v[i]))
      return c.error() << "operand 's' has type " << getS().getType()
                       << " but must be [rows, n, heads] = [" << sizeStr(v[0]) << ", "
                       << sizeStr(v[1]) << ", " << sizeStr(v[2]) << "] to match 'v'";
  SmallVector<int64_t> outShape = {v[0], v[2], v[3]};
  ShapedType out = getVOut().getType();
  if (out.getElementType() != getV().getType().getElementType() ||
      failed(verifyCompatibleShape(out.getShape(), outShape)))
    return c.error() << "destination 'v_out' has type " << getVOut().getType()
                     << " but must be [rows, heads, head_dim] = [" << sizeStr(v[0]) << ", "
                     << sizeStr(v[2]) << ", " << sizeStr(v[3])
                     << "] with the element type of 'v'";
  if (Value sOut = getSOut()) {
    if (failed(c.rank(sOut, "s_out", 2, "[rows, heads]")) ||
        failed(c.f32Element(sOut, "s_out")))
      return failure();
    ArrayRef<int64_t> so = shapedOf(sOut).getShape();
    if (bothStaticAndDiffer(so[0], v[0]) || bothStaticAndDiffer(so[1], v[2]))
      return c.error() << "destination 's_out' has type " << sOut.getType()
                       << " but must be [rows, heads] = [" << sizeStr(v[0]) << ", "
                       << sizeStr(v[2]) << "] to match 'v'";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Append
//===----------------------------------------------------------------------===//

LogicalResult AppendPagedKvOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"k_new", "v_new", "append_indptr", "kv_indptr", "kv_indices",
                  "kv_last_page_len", "plan", "k_cache", "v_cache"}))))
    return failure();
  FailureOr<PagedCache> cache =
      checkPagedCache(c, getKCache(), "k_cache", getVCache(), "v_cache", getBsr());
  if (failed(cache) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(c.indexArray(getAppendIndptr(), "append_indptr", "[batch + 1]")) ||
      failed(c.sameLength(getAppendIndptr(), "append_indptr", getKvIndptr(), "kv_indptr",
                          "both have batch + 1 entries")) ||
      failed(c.rank(getKNew(), "k_new", 3, "[nnz_append, kv_heads, head_dim]")))
    return failure();
  if (getVNew().getType() != getKNew().getType())
    return c.error() << "operand 'v_new' has type " << getVNew().getType()
                     << " but 'k_new' has type " << getKNew().getType()
                     << "; new K and V must have the same shape and element type";
  Type cacheElement = getKCache().getType().getElementType();
  if (getKNew().getType().getElementType() != cacheElement)
    return c.error() << "operand 'k_new' has element type "
                     << getKNew().getType().getElementType() << " but the cache holds "
                     << cacheElement
                     << "; convert the new keys and values to the cache's element type";
  if (failed(c.same("kv_heads", Dim{getKNew(), "k_new", 1}, cache->kvHeads,
                    "the new keys/values must have the cache's kv_heads")) ||
      failed(c.same("head_dim", Dim{getKNew(), "k_new", 2}, cache->headDim,
                    "the new keys/values must have the cache's head_dim")) ||
      failed(c.plan(getPlan(), PlanFamily::append, "append_plan")))
    return failure();
  auto planOp = getPlan() ? getPlan().getDefiningOp<AppendPlanOp>() : AppendPlanOp();
  if (planOp && planOp.getBsr() != getBsr())
    return c.error() << "operand 'plan' was made for bsr " << planOp.getBsr()
                     << " but this op has bsr " << getBsr()
                     << "; make the plan with the op's #fi.bsr";
  return success();
}

//===----------------------------------------------------------------------===//
// Plan ops
//===----------------------------------------------------------------------===//

namespace {
template <typename PlanOpTy>
LogicalResult checkPlanShape(Checker &c, PlanOpTy op) {
  int64_t qoHeads = op.getNumQoHeads(), kvHeads = op.getNumKvHeads(),
          headDim = op.getHeadDim();
  if (qoHeads < 1 || kvHeads < 1 || headDim < 1)
    return c.error() << "num_qo_heads, num_kv_heads and head_dim must be >= 1, got "
                     << qoHeads << ", " << kvHeads << ", " << headDim;
  if (qoHeads % kvHeads != 0)
    return c.error() << "num_qo_heads (" << qoHeads
                     << ") is not a multiple of num_kv_heads (" << kvHeads
                     << "); the query heads must be a multiple of the KV heads (GQA/MQA)";
  auto isFloat = [](Type t, bool kv) {
    return t.isF16() || t.isBF16() || t.isF32() ||
           (kv && isa<Float8E4M3FNType, Float8E5M2Type>(t));
  };
  constexpr bool prefill = std::is_same_v<PlanOpTy, RaggedPrefillPlanOp> ||
                           std::is_same_v<PlanOpTy, PagedPrefillPlanOp>;
  const bool fp8Query = isa<Float8E4M3FNType>(op.getQType());
  if (!isFloat(op.getQType(), false) && !(prefill && fp8Query))
    return c.error() << "q_type = " << op.getQType() << " is not supported; use f16, bf16 "
                     << "or f32" << (prefill ? " (or f8E4M3FN: fp8 attention)" : "");
  if constexpr (prefill) {
    if (fp8Query && !isa<Float8E4M3FNType>(op.getKvType()))
      return c.error() << "q_type = f8E4M3FN with kv_type = " << op.getKvType()
                       << ": fp8 attention takes f8E4M3FN K and V";
    if (fp8Query && !(op.getOTypeAttr() && (op.getOType()->isF16() || op.getOType()->isBF16())))
      return c.error() << "q_type = f8E4M3FN needs o_type = f16 or bf16 (the output of fp8 "
                          "attention)";
    if (!fp8Query && op.getOTypeAttr())
      return c.error() << "has o_type but q_type = " << op.getQType()
                       << ": o_type is for fp8 attention (q_type = f8E4M3FN); drop it";
  }
  if (!isFloat(op.getKvType(), true))
    return c.error() << "kv_type = " << op.getKvType()
                     << " is not supported; use f16, bf16, f32, f8E4M3FN or f8E5M2";
  return success();
}

LogicalResult checkPlanMaskIndptr(Checker &c, MaskMode mode, Value maskIndptr,
                                  Value qoIndptr) {
  if (mode == MaskMode::custom && !maskIndptr)
    return c.error() << "mask_mode = custom needs a 'mask_indptr' operand: add "
                        "mask_indptr(%mask_indptr : ...)";
  if (mode != MaskMode::custom && maskIndptr)
    return c.error() << "a 'mask_indptr' operand is given but mask_mode is "
                     << stringifyMaskMode(mode)
                     << "; set mask_mode = #fi.mask_mode<custom> or drop it";
  if (!maskIndptr)
    return success();
  if (failed(c.indexArray(maskIndptr, "mask_indptr", "[batch + 1]")))
    return failure();
  return c.sameLength(maskIndptr, "mask_indptr", qoIndptr, "qo_indptr",
                      "both have batch + 1 entries");
}
} // namespace

/// Where a plan reads its index arrays must match where they live, when the IR says it
/// (a memref in #fi.memory<...>).
static LogicalResult checkPlanMemory(Checker &c, bool onDevice,
                              ArrayRef<std::pair<Value, StringRef>> arrays) {
  for (auto [value, name] : arrays) {
    if (!value)  // an absent optional operand
      continue;
    auto memref = dyn_cast<MemRefType>(value.getType());
    auto space = memref ? dyn_cast_or_null<MemoryKindAttr>(memref.getMemorySpace()) : nullptr;
    if (!space)
      continue;
    if (space.getValue() == MemoryKind::device && !onDevice)
      return c.error() << "operand '" << name
                       << "' is device memory (#fi.memory<device>) but this plan reads it on "
                          "the host; add the `on_device` attribute to plan on the GPU, or "
                          "pass a host copy (#fi.memory<host>)";
    if (space.getValue() == MemoryKind::host && onDevice)
      return c.error() << "operand '" << name
                       << "' is host memory (#fi.memory<host>) but an `on_device` plan reads "
                          "it on the GPU; pass it in device memory (#fi.memory<device>) or "
                          "drop `on_device`";
  }
  return success();
}

/// A prefill plan made on the device knows the row bounds it checks the indptrs against
/// (`max_qo_rows`, ragged also `max_kv_rows`); a host plan reads the lengths themselves.
static LogicalResult checkPrefillDevicePlan(Checker &c, bool onDevice, MaskMode mask,
                                            Value maxQoRows, Value maxKvRows, bool ragged) {
  StringRef form = ragged ? "`max_rows(%q_rows, %kv_rows)`" : "`max_qo_rows(%q_rows)`";
  if (onDevice && (!maxQoRows || (ragged && !maxKvRows)))
    return c.error() << "is `on_device` but has no " << form
                     << ": a plan made on the GPU checks qo_indptr" << (ragged ? " and kv_indptr" : "")
                     << " against the rows of the tensors its ops run on; pass them "
                        "(tensor.dim of q" << (ragged ? " and k" : "") << ")";
  if (!onDevice && maxQoRows)
    return c.error() << "has " << form << " but is not `on_device`: only a plan made on the "
                        "GPU takes row bounds; add `on_device` or drop them";
  if (onDevice && mask == MaskMode::custom)
    return c.error() << "is `on_device` with mask_mode = custom: a custom mask is checked "
                        "against the query and KV lengths on the host; drop `on_device`";
  return success();
}

LogicalResult DecodePlanOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"kv_indptr", "kv_indices", "kv_last_page_len", "num_pages"}))) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(checkPlanMemory(c, getOnDevice(),
                             {{getKvIndptr(), "kv_indptr"},
                              {getKvIndices(), "kv_indices"},
                              {getKvLastPageLen(), "kv_last_page_len"}})))
    return failure();
  return checkPlanShape(c, *this);
}

LogicalResult PagedPrefillPlanOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"qo_indptr", "kv_indptr", "kv_indices", "kv_last_page_len",
                  "mask_indptr", "num_pages", "max_qo_rows"}))) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(c.indexArray(getQoIndptr(), "qo_indptr", "[batch + 1]")) ||
      failed(c.sameLength(getQoIndptr(), "qo_indptr", getKvIndptr(), "kv_indptr",
                          "both have batch + 1 entries")) ||
      failed(checkPlanMaskIndptr(c, getMaskMode(), getMaskIndptr(), getQoIndptr())) ||
      failed(checkPrefillDevicePlan(c, getOnDevice(), getMaskMode(), getMaxQoRows(),
                                    Value(), false)) ||
      failed(checkPlanMemory(c, getOnDevice(),
                             {{getQoIndptr(), "qo_indptr"},
                              {getKvIndptr(), "kv_indptr"},
                              {getKvIndices(), "kv_indices"},
                              {getKvLastPageLen(), "kv_last_page_len"}})))
    return failure();
  if (getKvShardAttr() && getMaskMode() == MaskMode::custom)
    return c.error() << "has kv_shard and mask_mode = custom: a custom mask covers the whole "
                        "KV of each request, which no rank holds; use none or causal, or drop "
                        "kv_shard";
  return checkPlanShape(c, *this);
}

LogicalResult RaggedPrefillPlanOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(*this, {"qo_indptr", "kv_indptr", "mask_indptr",
                                                "max_qo_rows", "max_kv_rows"}))) ||
      failed(c.indexArray(getQoIndptr(), "qo_indptr", "[batch + 1]")) ||
      failed(c.indexArray(getKvIndptr(), "kv_indptr", "[batch + 1]")) ||
      failed(c.sameLength(getQoIndptr(), "qo_indptr", getKvIndptr(), "kv_indptr",
                          "both have batch + 1 entries")) ||
      failed(checkPlanMaskIndptr(c, getMaskMode(), getMaskIndptr(), getQoIndptr())) ||
      failed(checkPrefillDevicePlan(c, getOnDevice(), getMaskMode(), getMaxQoRows(),
                                    getMaxKvRows(), true)) ||
      failed(checkPlanMemory(c, getOnDevice(),
                             {{getQoIndptr(), "qo_indptr"}, {getKvIndptr(), "kv_indptr"}})))
    return failure();
  return checkPlanShape(c, *this);
}

LogicalResult BlockSparsePlanOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"bsr_indptr", "bsr_indices", "row_offsets", "col_offsets", "kv_indptr",
                  "kv_indices", "kv_last_page_len", "num_pages", "num_qo_rows",
                  "num_kv_rows"}))) ||
      failed(c.indexArray(getBsrIndptr(), "bsr_indptr", "[ceil(M / block_rows) + 1]")) ||
      failed(c.indexArray(getBsrIndices(), "bsr_indices", "[nnz blocks]")) ||
      failed(checkBlockSparseAttrs(c, getBsr(), getMaskMode())) ||
      failed(checkBlockOffsets(c, getRowOffsets(), getColOffsets(), getBsrIndptr(),
                               ShapedType::kDynamic, ShapedType::kDynamic, getBsr())) ||
      failed(checkPlanMemory(c, false,
                             {{getBsrIndptr(), "bsr_indptr"}, {getBsrIndices(), "bsr_indices"},
                              {getRowOffsets(), "row_offsets"}, {getColOffsets(), "col_offsets"},
                              {getKvIndptr(), "kv_indptr"}, {getKvIndices(), "kv_indices"},
                              {getKvLastPageLen(), "kv_last_page_len"}})))
    return failure();
  if (failed(checkPagesTogether(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())))
    return failure();
  if (static_cast<bool>(getKvIndptr()) != static_cast<bool>(getNumPages()))
    return c.error() << (getKvIndptr() ? "has pages without num_pages"
                                       : "has num_pages without pages")
                     << "; a paged plan takes both";
  if (getKvIndptr()) {
    if (getNumKvRows())
      return c.error() << "has pages and num_kv_rows: with a paged cache N is the page "
                          "table's; write rows(%m) only";
    if (failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())))
      return failure();
  } else if (!getNumKvRows()) {
    return c.error() << "has no num_kv_rows: write rows(%m, %n) (N keys), or give the pages "
                        "of a paged cache";
  }
  return checkPlanShape(c, *this);
}

LogicalResult AppendPlanOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"append_indptr", "kv_indptr", "kv_indices", "kv_last_page_len",
                  "num_pages"}))) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(c.indexArray(getAppendIndptr(), "append_indptr", "[batch + 1]")) ||
      failed(checkPlanMemory(c, getOnDevice(),
                             {{getAppendIndptr(), "append_indptr"},
                              {getKvIndptr(), "kv_indptr"},
                              {getKvIndices(), "kv_indices"},
                              {getKvLastPageLen(), "kv_last_page_len"}})))
    return failure();
  return c.sameLength(getAppendIndptr(), "append_indptr", getKvIndptr(), "kv_indptr",
                      "both have batch + 1 entries");
}

LogicalResult SplitSharedPrefixOp::verify() {
  Checker c(*this);
  if (failed(c.form(presentOperandNames(
          *this, {"kv_indptr", "kv_indices", "kv_last_page_len", "num_pages",
                  "prefix_qo_indptr", "prefix_indptr",
                  "prefix_indices", "prefix_last_page_len", "suffix_indptr",
                  "suffix_indices", "suffix_last_page_len"}))) ||
      failed(checkPageTable(c, getKvIndptr(), getKvIndices(), getKvLastPageLen())) ||
      failed(c.indexArray(getPrefixQoIndptr(), "prefix_qo_indptr", "[2]")) ||
      failed(c.indexArray(getPrefixIndptr(), "prefix_indptr", "[2]")) ||
      failed(c.indexArray(getPrefixIndices(), "prefix_indices", "[>= P]")) ||
      failed(c.indexArray(getPrefixLastPageLen(), "prefix_last_page_len", "[1]")) ||
      failed(c.indexArray(getSuffixIndptr(), "suffix_indptr", "[batch + 1]")) ||
      failed(c.indexArray(getSuffixIndices(), "suffix_indices", "[>= the suffixes' pages]")) ||
      failed(c.indexArray(getSuffixLastPageLen(), "suffix_last_page_len", "[batch]")) ||
      failed(c.sameLength(getSuffixIndptr(), "suffix_indptr", getKvIndptr(), "kv_indptr",
                          "both have batch + 1 entries")) ||
      failed(c.sameLength(getSuffixLastPageLen(), "suffix_last_page_len", getKvLastPageLen(),
                          "kv_last_page_len", "both have batch entries")))
    return failure();
  auto fixed = [&](Value v, StringRef name, int64_t n) -> LogicalResult {
    int64_t len = shapedOf(v).getDimSize(0);
    if (ShapedType::isDynamic(len) || len == n)
      return success();
    return c.error() << "operand '" << name << "' has " << len << " entries but needs " << n;
  };
  if (failed(fixed(getPrefixQoIndptr(), "prefix_qo_indptr", 2)) ||
      failed(fixed(getPrefixIndptr(), "prefix_indptr", 2)) ||
      failed(fixed(getPrefixLastPageLen(), "prefix_last_page_len", 1)))
    return failure();
  if (getPageSize() < 1)
    return c.error() << "page_size = " << getPageSize() << " must be >= 1 (the cache's page size)";
  return success();
}

//===----------------------------------------------------------------------===//
// Attention variants (score_mod / mask_mod)
//===----------------------------------------------------------------------===//

namespace {
/// A captured value's type and the function parameter it binds to agree: scalars exactly;
/// tensors (and memrefs) by element type, rank and static sizes -- memref layouts may
/// differ (the lowering casts), the function's own layout decides how it indexes.
bool captureMatches(Type arg, Type param) {
  if (arg == param)
    return true;
  auto a = dyn_cast<ShapedType>(arg), p = dyn_cast<ShapedType>(param);
  if (!a || !p || isa<TensorType>(a) != isa<TensorType>(p) ||
      a.getElementType() != p.getElementType() || a.getRank() != p.getRank())
    return false;
  return succeeded(verifyCompatibleShape(a.getShape(), p.getShape()));
}

/// What a variant function may contain: operations without side effects (scalar
/// arithmetic, control flow) and reads of its captured tensors (tensor.extract /
/// memref.load, which the lowering clamps); no calls, no other reads. The buffer
/// deallocation pipeline briefly adds `bufferization.dealloc` of buffers the function
/// does not own (folded away at once), so that one is let through.
bool allowedInVariant(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (isa<CallOpInterface>(op))
    return false;
  // Views that could reach past a captured buffer (the lowering clamps reads into the
  // bounds of the memref they read).
  if (name == "memref.reinterpret_cast" || name == "memref.view")
    return false;
  // Module globals are host data the device code cannot see: capture a tensor instead.
  if (name == "memref.get_global" || name == "llvm.mlir.addressof")
    return false;
  // Reads: the two the lowering clamps, and bufferization's own.
  if (llvm::is_contained({"memref.load", "tensor.extract", "bufferization.to_tensor",
                          "bufferization.to_buffer", "bufferization.dealloc"},
                         name))
    return true;
  return isMemoryEffectFree(op);
}

LogicalResult verifyVariantFunction(Operation *op, SymbolTableCollection &symbols,
                                    FlatSymbolRefAttr ref, StringRef kind,
                                    ArrayRef<Type> fixed, Type result,
                                    StringRef fixedDoc, ValueRange captures) {
  if (!ref)
    return success();
  Operation *target = symbols.lookupNearestSymbolFrom(op, ref);
  auto fn = dyn_cast_or_null<FunctionOpInterface>(target);
  if (!fn)
    return op->emitOpError() << kind << " refers to " << ref << ", which is not a function "
                             << "of this module; define func.func " << ref << "(" << fixedDoc
                             << ", <captures>)";
  if (fn.isExternal())
    return op->emitOpError() << kind << " " << ref << " is only declared; the variant is "
                             << "compiled with the program, so give the function a body";
  ArrayRef<Type> params = fn.getArgumentTypes();
  auto signature = [&]() {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "(" << fixedDoc;
    for (Value v : captures)
      os << ", " << v.getType();
    os << ") -> " << result;
    return s;
  };
  if (params.size() != fixed.size() + captures.size() || fn.getResultTypes().size() != 1 ||
      fn.getResultTypes()[0] != result)
    return op->emitOpError() << kind << " " << ref << " has type " << fn.getFunctionType()
                             << " but must be " << signature()
                             << " (the fixed arguments, then one parameter per value in "
                                "variant_args)";
  for (auto [i, type] : llvm::enumerate(fixed))
    if (params[i] != type)
      return op->emitOpError() << kind << " " << ref << " parameter #" << i << " has type "
                               << params[i] << " but must be " << type << ": the signature is "
                               << signature();
  for (auto [i, v] : llvm::enumerate(captures))
    if (!captureMatches(v.getType(), params[fixed.size() + i]))
      return op->emitOpError() << kind << " " << ref << " parameter #" << fixed.size() + i
                               << " has type " << params[fixed.size() + i]
                               << " but variant_args #" << i << " is " << v.getType()
                               << "; make them agree";
  WalkResult walk = fn->walk([&](Operation *inner) {
    if (inner == fn.getOperation() || allowedInVariant(inner))
      return WalkResult::advance();
    InFlightDiagnostic d = op->emitOpError()
                           << kind << " " << ref << " contains '" << inner->getName()
                           << "', which a variant function may not use: variants are pure "
                              "functions of their arguments (arith, math, scf, cf, index ops "
                              "and reads of captured tensors; no calls, no side effects)";
    d.attachNote(inner->getLoc()) << "the offending operation";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

template <typename OpTy>
LogicalResult verifyVariants(OpTy op, SymbolTableCollection &symbols) {
  Builder b(op.getContext());
  Type i32 = b.getI32Type();
  if (failed(verifyVariantFunction(
          op, symbols, op.getScoreModAttr(), "score_mod", {b.getF32Type(), i32, i32, i32, i32, i32},
          b.getF32Type(),
          "%score: f32, %batch: i32, %qo_head: i32, %kv_head: i32, %q_pos: i32, %kv_pos: i32",
          op.getVariantArgs())))
    return failure();
  return verifyVariantFunction(op, symbols, op.getMaskModAttr(), "mask_mod",
                               {i32, i32, i32, i32}, b.getI1Type(),
                               "%batch: i32, %qo_head: i32, %q_pos: i32, %kv_pos: i32",
                               op.getVariantArgs());
}
} // namespace

LogicalResult PagedDecodeOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyVariants(*this, symbols);
}
LogicalResult PagedPrefillOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyVariants(*this, symbols);
}
LogicalResult RaggedPrefillOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyVariants(*this, symbols);
}
LogicalResult BlockSparseAttentionOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyVariants(*this, symbols);
}
