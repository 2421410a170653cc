/*===- fi-c/Dialect.h - C API of the fi dialect -------------------*- C -*-===*\
|*                                                                            *|
|* The fi dialect's registration, its attributes (#fi.bsr, #fi.tiles,         *|
|* #fi.target, the enum attributes) and the !fi.plan type, in the style of    *|
|* upstream mlir-c: `mlirFi<Thing>AttrGet` builds, `mlirAttributeIsAFi<Thing>`*|
|* checks, `mlirFi<Thing>AttrGet<Field>` reads a field.                       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef FI_C_DIALECT_H
#define FI_C_DIALECT_H

#include <stdbool.h>
#include <stdint.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Fi, fi);

/* Enums: the same values as the dialect's enums and the runtime's C enums. */
typedef enum MlirFiMaskMode {
  MlirFiMaskModeNone = 0,
  MlirFiMaskModeCausal = 1,
  MlirFiMaskModeCustom = 2,
} MlirFiMaskMode;

typedef enum MlirFiPosEncoding {
  MlirFiPosEncodingNone = 0,
  MlirFiPosEncodingRopeLlama = 1,
  MlirFiPosEncodingAlibi = 2,
} MlirFiPosEncoding;

typedef enum MlirFiKvLayout {
  MlirFiKvLayoutNHD = 0, /* [pages, page_size, kv_heads, head_dim] */
  MlirFiKvLayoutHND = 1, /* [pages, kv_heads, page_size, head_dim] */
} MlirFiKvLayout;

typedef enum MlirFiCores {
  MlirFiCoresCuda = 0,   /* CUDA cores */
  MlirFiCoresTensor = 1, /* tensor cores through mma.sync (sm_80 and newer) */
  MlirFiCoresWgmma = 2,  /* the Hopper prefill tier: warpgroup MMA (sm_90a) */
} MlirFiCores;

typedef enum MlirFiPlanFamily {
  MlirFiPlanFamilyDecode = 1,
  MlirFiPlanFamilyPagedPrefill = 2,
  MlirFiPlanFamilyRaggedPrefill = 3,
  MlirFiPlanFamilyAppend = 4,
} MlirFiPlanFamily;

/*===-------------------------------------------------------------------===*
 * #fi.bsr<block_rows = R, block_cols = P, layout = nhd|hnd>
 *===-------------------------------------------------------------------===*/

/* Every builder below (mlirFi...AttrGet, mlirFiPlanTypeGet) returns a null
 * attribute/type (check with mlirAttributeIsNull / mlirTypeIsNull) and emits a
 * diagnostic on the context for an enum value outside its enum. */

/* Returns a null attribute (check with mlirAttributeIsNull) and emits a diagnostic
 * on the context if blockRows < 1 or blockCols < 1. */
MLIR_CAPI_EXPORTED MlirAttribute mlirFiBsrAttrGet(MlirContext ctx, int64_t blockRows,
                                                  int64_t blockCols, MlirFiKvLayout layout);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiBsr(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiBsrAttrGetBlockRows(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiBsrAttrGetBlockCols(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiKvLayout mlirFiBsrAttrGetLayout(MlirAttribute attr);

/* #fi.kv_shard<ranks = N, split_size = S> (context parallelism: the op's paged KV is
 * this rank's segment of a sequence split over N ranks; S = 0: automatic split). Returns a
 * null attribute and emits a diagnostic on the context if ranks is outside 1..1024 or
 * splitSize is negative or past int32. */
MLIR_CAPI_EXPORTED MlirAttribute mlirFiKvShardAttrGet(MlirContext ctx, int64_t ranks,
                                                      int64_t splitSize);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiKvShard(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiKvShardAttrGetRanks(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiKvShardAttrGetSplitSize(MlirAttribute attr);

/*===-------------------------------------------------------------------===*
 * #fi.tiles<q = Q, kv = K, split_kv = true|false, cores = cuda|tensor|wgmma>
 *===-------------------------------------------------------------------===*/

/* Null attribute (and a diagnostic) if qTile < 1 or kvTile < 1. */
MLIR_CAPI_EXPORTED MlirAttribute mlirFiTilesAttrGet(MlirContext ctx, int64_t qTile,
                                                    int64_t kvTile, bool splitKv,
                                                    MlirFiCores cores);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiTiles(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiTilesAttrGetQTile(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiTilesAttrGetKvTile(MlirAttribute attr);
MLIR_CAPI_EXPORTED bool mlirFiTilesAttrGetSplitKv(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiCores mlirFiTilesAttrGetCores(MlirAttribute attr);

/*===-------------------------------------------------------------------===*
 * #fi.target<sm = 90, sm_count = 132, smem = 232448[, dram_gbps_per_sm = 25]>
 *===-------------------------------------------------------------------===*/

/* Null attribute (and a diagnostic) if any value is < 1. The memory bandwidth per SM is
 * left unknown (0). */
MLIR_CAPI_EXPORTED MlirAttribute mlirFiTargetAttrGet(MlirContext ctx, int64_t smVersion,
                                                     int64_t smCount, int64_t smemPerBlock);
/* The same with the device memory's peak bandwidth per SM in GB/s (0: unknown; null and a
 * diagnostic if negative). */
MLIR_CAPI_EXPORTED MlirAttribute mlirFiTargetAttrGetWithDramBandwidth(MlirContext ctx,
                                                                      int64_t smVersion,
                                                                      int64_t smCount,
                                                                      int64_t smemPerBlock,
                                                                      int64_t dramGbpsPerSm);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiTarget(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiTargetAttrGetSmVersion(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiTargetAttrGetSmCount(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiTargetAttrGetSmemPerBlock(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirFiTargetAttrGetDramGbpsPerSm(MlirAttribute attr);

/*===-------------------------------------------------------------------===*
 * Enum attributes: #fi.mask_mode<...>, #fi.pos_encoding<...>,
 * #fi.kv_layout<...>, #fi.cores<...>, #fi.plan_family<...>
 *===-------------------------------------------------------------------===*/

MLIR_CAPI_EXPORTED MlirAttribute mlirFiMaskModeAttrGet(MlirContext ctx, MlirFiMaskMode value);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiMaskMode(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiMaskMode mlirFiMaskModeAttrGetValue(MlirAttribute attr);

MLIR_CAPI_EXPORTED MlirAttribute mlirFiPosEncodingAttrGet(MlirContext ctx,
                                                          MlirFiPosEncoding value);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiPosEncoding(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiPosEncoding mlirFiPosEncodingAttrGetValue(MlirAttribute attr);

MLIR_CAPI_EXPORTED MlirAttribute mlirFiKvLayoutAttrGet(MlirContext ctx, MlirFiKvLayout value);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiKvLayout(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiKvLayout mlirFiKvLayoutAttrGetValue(MlirAttribute attr);

MLIR_CAPI_EXPORTED MlirAttribute mlirFiCoresAttrGet(MlirContext ctx, MlirFiCores value);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiCores(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiCores mlirFiCoresAttrGetValue(MlirAttribute attr);

MLIR_CAPI_EXPORTED MlirAttribute mlirFiPlanFamilyAttrGet(MlirContext ctx,
                                                         MlirFiPlanFamily value);
MLIR_CAPI_EXPORTED bool mlirAttributeIsAFiPlanFamily(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirFiPlanFamily mlirFiPlanFamilyAttrGetValue(MlirAttribute attr);

/*===-------------------------------------------------------------------===*
 * !fi.plan<family>
 *===-------------------------------------------------------------------===*/

MLIR_CAPI_EXPORTED MlirType mlirFiPlanTypeGet(MlirContext ctx, MlirFiPlanFamily family);
MLIR_CAPI_EXPORTED bool mlirTypeIsAFiPlan(MlirType type);
MLIR_CAPI_EXPORTED MlirFiPlanFamily mlirFiPlanTypeGetFamily(MlirType type);

#ifdef __cplusplus
}
#endif

#endif /* FI_C_DIALECT_H */
