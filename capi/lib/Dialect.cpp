//===- Dialect.cpp - C API of the fi dialect ------------------------------===//
#include "fi-c/Dialect.h"

#include "fi/Dialect/FiDialect.h"

#include "mlir/CAPI/Registration.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::fi;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Fi, fi, mlir::fi::FiDialect)

namespace {
/// Emits a message on the context's diagnostic engine (unknown location).
auto emitOnContext(MLIRContext *ctx) {
  return [ctx] { return emitError(UnknownLoc::get(ctx)); };
}

/// The C enums carry the dialect's enum values; a value outside the enum gets a
/// diagnostic and std::nullopt instead of an invalid C++ enum.
template <typename CppEnum, typename CEnum>
std::optional<CppEnum> toCpp(MLIRContext *ctx, CEnum value, const char *what,
                             std::optional<CppEnum> (*symbolize)(uint32_t)) {
  std::optional<CppEnum> result = symbolize(static_cast<uint32_t>(value));
  if (!result)
    emitOnContext(ctx)() << "invalid " << what << " value " << static_cast<int>(value);
  return result;
}
#define FI_TO_CPP(ctx, Enum, value, what) toCpp<Enum>(ctx, value, what, &symbolize##Enum)
} // namespace

//===----------------------------------------------------------------------===//
// #fi.bsr
//===----------------------------------------------------------------------===//

MlirAttribute mlirFiBsrAttrGet(MlirContext ctx, int64_t blockRows, int64_t blockCols,
                               MlirFiKvLayout layout) {
  MLIRContext *context = unwrap(ctx);
  std::optional<KvLayout> kvLayout = FI_TO_CPP(context, KvLayout, layout, "MlirFiKvLayout");
  if (!kvLayout)
    return MlirAttribute{nullptr};
  return wrap(BsrAttr::getChecked(emitOnContext(context), context, blockRows, blockCols,
                                  *kvLayout));
}
bool mlirAttributeIsAFiBsr(MlirAttribute attr) { return isa<BsrAttr>(unwrap(attr)); }

MlirAttribute mlirFiKvShardAttrGet(MlirContext ctx, int64_t ranks, int64_t splitSize) {
  MLIRContext *context = unwrap(ctx);
  return wrap(KvShardAttr::getChecked(emitOnContext(context), context, ranks, splitSize));
}
bool mlirAttributeIsAFiKvShard(MlirAttribute attr) { return isa<KvShardAttr>(unwrap(attr)); }
int64_t mlirFiKvShardAttrGetRanks(MlirAttribute attr) {
  return cast<KvShardAttr>(unwrap(attr)).getRanks();
}
int64_t mlirFiKvShardAttrGetSplitSize(MlirAttribute attr) {
  return cast<KvShardAttr>(unwrap(attr)).getSplitSize();
}
int64_t mlirFiBsrAttrGetBlockRows(MlirAttribute attr) {
  return cast<BsrAttr>(unwrap(attr)).getBlockRows();
}
int64_t mlirFiBsrAttrGetBlockCols(MlirAttribute attr) {
  return cast<BsrAttr>(unwrap(attr)).getBlockCols();
}
MlirFiKvLayout mlirFiBsrAttrGetLayout(MlirAttribute attr) {
  return static_cast<MlirFiKvLayout>(cast<BsrAttr>(unwrap(attr)).getLayout());
}

//===----------------------------------------------------------------------===//
// #fi.tiles
//===----------------------------------------------------------------------===//

MlirAttribute mlirFiTilesAttrGet(MlirContext ctx, int64_t qTile, int64_t kvTile,
                                 bool splitKv, MlirFiCores cores) {
  MLIRContext *context = unwrap(ctx);
  std::optional<Cores> coreKind = FI_TO_CPP(context, Cores, cores, "MlirFiCores");
  if (!coreKind)
    return MlirAttribute{nullptr};
  return wrap(TilesAttr::getChecked(emitOnContext(context), context, qTile, kvTile, splitKv,
                                    *coreKind));
}
bool mlirAttributeIsAFiTiles(MlirAttribute attr) { return isa<TilesAttr>(unwrap(attr)); }
int64_t mlirFiTilesAttrGetQTile(MlirAttribute attr) {
  return cast<TilesAttr>(unwrap(attr)).getQTile();
}
int64_t mlirFiTilesAttrGetKvTile(MlirAttribute attr) {
  return cast<TilesAttr>(unwrap(attr)).getKvTile();
}
bool mlirFiTilesAttrGetSplitKv(MlirAttribute attr) {
  return cast<TilesAttr>(unwrap(attr)).getSplitKv();
}
MlirFiCores mlirFiTilesAttrGetCores(MlirAttribute attr) {
  return static_cast<MlirFiCores>(cast<TilesAttr>(unwrap(attr)).getCores());
}

//===----------------------------------------------------------------------===//
// #fi.target
//===----------------------------------------------------------------------===//

MlirAttribute mlirFiTargetAttrGet(MlirContext ctx, int64_t smVersion, int64_t smCount,
                                  int64_t smemPerBlock) {
  return mlirFiTargetAttrGetWithDramBandwidth(ctx, smVersion, smCount, smemPerBlock, 0);
}
MlirAttribute mlirFiTargetAttrGetWithDramBandwidth(MlirContext ctx, int64_t smVersion,
                                                   int64_t smCount, int64_t smemPerBlock,
                                                   int64_t dramGbpsPerSm) {
  MLIRContext *context = unwrap(ctx);
  return wrap(TargetAttr::getChecked(emitOnContext(context), context, smVersion, smCount,
                                     smemPerBlock, dramGbpsPerSm));
}
bool mlirAttributeIsAFiTarget(MlirAttribute attr) { return isa<TargetAttr>(unwrap(attr)); }
int64_t mlirFiTargetAttrGetSmVersion(MlirAttribute attr) {
  return cast<TargetAttr>(unwrap(attr)).getSmVersion();
}
int64_t mlirFiTargetAttrGetSmCount(MlirAttribute attr) {
  return cast<TargetAttr>(unwrap(attr)).getSmCount();
}
int64_t mlirFiTargetAttrGetSmemPerBlock(MlirAttribute attr) {
  return cast<TargetAttr>(unwrap(attr)).getSmemPerBlock();
}
int64_t mlirFiTargetAttrGetDramGbpsPerSm(MlirAttribute attr) {
  return cast<TargetAttr>(unwrap(attr)).getDramGbpsPerSm();
}

//===----------------------------------------------------------------------===//
// Enum attributes
//===----------------------------------------------------------------------===//

#define FI_DEFINE_ENUM_ATTR(Name, CType)                                              \
  MlirAttribute mlirFi##Name##AttrGet(MlirContext ctx, CType value) {                 \
    std::optional<Name> v = FI_TO_CPP(unwrap(ctx), Name, value, #CType);              \
    return v ? wrap(Name##Attr::get(unwrap(ctx), *v)) : MlirAttribute{nullptr};       \
  }                                                                                   \
  bool mlirAttributeIsAFi##Name(MlirAttribute attr) {                                 \
    return isa<Name##Attr>(unwrap(attr));                                             \
  }                                                                                   \
  CType mlirFi##Name##AttrGetValue(MlirAttribute attr) {                              \
    return static_cast<CType>(cast<Name##Attr>(unwrap(attr)).getValue());             \
  }

FI_DEFINE_ENUM_ATTR(MaskMode, MlirFiMaskMode)
FI_DEFINE_ENUM_ATTR(PosEncoding, MlirFiPosEncoding)
FI_DEFINE_ENUM_ATTR(KvLayout, MlirFiKvLayout)
FI_DEFINE_ENUM_ATTR(Cores, MlirFiCores)
FI_DEFINE_ENUM_ATTR(PlanFamily, MlirFiPlanFamily)

//===----------------------------------------------------------------------===//
// !fi.plan
//===----------------------------------------------------------------------===//

MlirType mlirFiPlanTypeGet(MlirContext ctx, MlirFiPlanFamily family) {
  std::optional<PlanFamily> f = FI_TO_CPP(unwrap(ctx), PlanFamily, family, "MlirFiPlanFamily");
  return f ? wrap(PlanType::get(unwrap(ctx), *f)) : MlirType{nullptr};
}
bool mlirTypeIsAFiPlan(MlirType type) { return isa<PlanType>(unwrap(type)); }
MlirFiPlanFamily mlirFiPlanTypeGetFamily(MlirType type) {
  return static_cast<MlirFiPlanFamily>(cast<PlanType>(unwrap(type)).getFamily());
}
