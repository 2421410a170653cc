//===- FiOpInfo.h - facts about an fi op that the passes share --*- C++ -*-===//
//
// The problem shape of an fi attention op (heads, head_dim, element types, layout)
// read off its operand types, which the verifiers have already checked.
//
//===----------------------------------------------------------------------===//
#ifndef FI_LOWERING_FIOPINFO_H
#define FI_LOWERING_FIOPINFO_H

#include "fi/Dialect/FiDialect.h"

#include <optional>

namespace mlir {
namespace fi {

struct AttentionInfo {
  PlanFamily family;
  int64_t qoHeads = 0, kvHeads = 0, headDim = 0;
  Type qType, kvType;
  Type oType; // o's element type (q's, except for fp8 attention)
  BsrAttr bsr;          // null for ragged prefill
  bool combinedKv = false;
  MaskMode mask = MaskMode::none;
  TilesAttr tiles;      // null when none chosen yet
  Value plan;           // the op's plan operand, or null
  /// The static batch (indptr length - 1, or q's first dim for decode); -1 if dynamic.
  int64_t staticBatch = -1;
  /// Static number of query rows (nnz_qo); -1 if dynamic.
  int64_t staticQoRows = -1;
  /// Static number of KV rows (ragged prefill nnz_kv); -1 if dynamic or paged.
  int64_t staticKvRows = -1;
};

/// Facts of fi.paged_decode / fi.paged_prefill / fi.ragged_prefill; nullopt otherwise.
std::optional<AttentionInfo> getAttentionInfo(Operation *op);

/// The element type name used in adapter names: f16, bf16, f32, e4m3, e5m2, i8, ui8.
std::string elementTypeName(Type type);
/// The runtime's fi_dtype code of an element type, or -1.
int fiDtypeCode(Type type);

} // namespace fi
} // namespace mlir

#endif
