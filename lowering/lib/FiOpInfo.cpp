//===- FiOpInfo.cpp - facts about an fi op that the passes share ----------===//
#include "FiOpInfo.h"

#include "fi/runtime.h"

using namespace mlir;
using namespace mlir::fi;

static ShapedType shaped(Value v) { return cast<ShapedType>(v.getType()); }

/// kv_heads of a paged cache operand: NHD [P, ps, H, D], HND [P, H, ps, D]; combined
/// caches have a K/V dimension of 2 after the page dimension.
static int64_t pagedKvHeads(Value cache, KvLayout layout, bool combined) {
  int64_t base = combined ? 1 : 0;
  return shaped(cache).getDimSize(base + (layout == KvLayout::nhd ? 2 : 1));
}

static int64_t batchOfIndptr(Value indptr) {
  int64_t n = shaped(indptr).getDimSize(0);
  return ShapedType::isDynamic(n) ? -1 : n - 1;
}

static int64_t staticDim(Value v, unsigned i) {
  int64_t n = shaped(v).getDimSize(i);
  return ShapedType::isDynamic(n) ? -1 : n;
}

std::optional<AttentionInfo> mlir::fi::getAttentionInfo(Operation *op) {
  AttentionInfo info;
  auto common = [&](auto attn) {
    ShapedType q = shaped(attn.getQ());
    info.qoHeads = q.getDimSize(1);
    info.headDim = q.getDimSize(2);
    info.qType = q.getElementType();
    info.oType = shaped(attn.getO()).getElementType();
    info.kvType = shaped(attn.getK()).getElementType();
    info.combinedKv = !attn.getV();
    info.tiles = attn.getTilesAttr();
    info.plan = attn.getPlan();
    info.staticQoRows = staticDim(attn.getQ(), 0);
  };
  if (auto d = dyn_cast<PagedDecodeOp>(op)) {
    common(d);
    info.family = PlanFamily::decode;
    info.bsr = d.getBsr();
    info.kvHeads = pagedKvHeads(d.getK(), info.bsr.getLayout(), info.combinedKv);
    info.staticBatch = staticDim(d.getQ(), 0);
    return info;
  }
  if (auto p = dyn_cast<PagedPrefillOp>(op)) {
    common(p);
    info.family = PlanFamily::paged_prefill;
    info.bsr = p.getBsr();
    info.mask = p.getMaskMode();
    info.kvHeads = pagedKvHeads(p.getK(), info.bsr.getLayout(), info.combinedKv);
    info.staticBatch = batchOfIndptr(p.getQoIndptr());
    return info;
  }
  if (auto b = dyn_cast<BlockSparseAttentionOp>(op)) {
    common(b);
    info.family = PlanFamily::block_sparse;
    info.bsr = b.getBsr();
    info.mask = b.getMaskMode();
    info.staticBatch = 1;
    if (b.getKvIndptr()) {  // a paged cache: N is its page table's
      info.kvHeads = pagedKvHeads(b.getK(), info.bsr.getLayout(), false);
    } else {
      info.kvHeads = shaped(b.getK()).getDimSize(1);
      info.staticKvRows = staticDim(b.getK(), 0);
    }
    return info;
  }
  if (auto r = dyn_cast<RaggedPrefillOp>(op)) {
    common(r);
    info.family = PlanFamily::ragged_prefill;
    info.mask = r.getMaskMode();
    info.kvHeads = shaped(r.getK()).getDimSize(info.combinedKv ? 2 : 1);
    info.staticBatch = batchOfIndptr(r.getQoIndptr());
    info.staticKvRows = staticDim(r.getK(), 0);
    return info;
  }
  return std::nullopt;
}

std::string mlir::fi::elementTypeName(Type t) {
  if (t.isF16()) return "f16";
  if (t.isBF16()) return "bf16";
  if (t.isF32()) return "f32";
  if (isa<Float8E4M3FNType>(t)) return "e4m3";
  if (isa<Float8E5M2Type>(t)) return "e5m2";
  if (t.isUnsignedInteger(8)) return "ui8";
  if (t.isInteger(8)) return "i8";
  if (t.isInteger(32)) return "i32";
  return "unknown";
}

int mlir::fi::fiDtypeCode(Type t) {
  if (t.isF16()) return FI_DTYPE_F16;
  if (t.isBF16()) return FI_DTYPE_BF16;
  if (t.isF32()) return FI_DTYPE_F32;
  if (isa<Float8E4M3FNType>(t)) return FI_DTYPE_E4M3;
  if (isa<Float8E5M2Type>(t)) return FI_DTYPE_E5M2;
  return -1;
}
