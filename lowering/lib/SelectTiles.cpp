//===- SelectTiles.cpp - fi-select-tiles ----------------------------------===//
//
// Chooses #fi.tiles for every fi attention op with the runtime's own C heuristics
// (fi/heuristics.h): the compiler and the plan step can never disagree about what a
// shape gets, because they run the same code.
//
//===----------------------------------------------------------------------===//
#include "fi/Lowering/Passes.h"

#include "FiOpInfo.h"
#include "fi/heuristics.h"

namespace mlir {
namespace fi {
#define GEN_PASS_DEF_FISELECTTILES
#include "fi/Lowering/Passes.h.inc"
} // namespace fi
} // namespace mlir

using namespace mlir;
using namespace mlir::fi;

namespace {

constexpr llvm::StringLiteral kAvgQoLenHint = "fi.avg_qo_len";
constexpr llvm::StringLiteral kAvgKvLenHint = "fi.avg_kv_len";
constexpr llvm::StringLiteral kPlanTimeMarker = "fi.tiles_at_plan_time";

int32_t dtypeBytes(Type t) {
  if (isa<Float8E4M3FNType, Float8E5M2Type>(t)) return 1;
  return static_cast<int32_t>((t.getIntOrFloatBitWidth() + 7) / 8);
}

int64_t hint(Operation *op, StringRef name) {
  if (auto attr = op->getAttrOfType<IntegerAttr>(name))
    return attr.getInt();
  return 0;
}

fi_target targetOf(ModuleOp module) {
  fi_target t = fi_target_default();
  if (auto attr = module->getAttrOfType<TargetAttr>("fi.target")) {
    t.sm_version = static_cast<int32_t>(attr.getSmVersion());
    t.sm_count = static_cast<int32_t>(attr.getSmCount());
    t.smem_per_block = static_cast<int32_t>(attr.getSmemPerBlock());
    t.dram_gbps_per_sm = static_cast<int32_t>(attr.getDramGbpsPerSm()); // 0: unknown
  }
  return t;
}

static_assert(static_cast<int>(Cores::cuda) == FI_CORES_CUDA &&
                  static_cast<int>(Cores::tensor) == FI_CORES_TENSOR &&
                  static_cast<int>(Cores::wgmma) == FI_CORES_WGMMA,
              "#fi.tiles cores and fi_core_kind must keep one numbering");

TilesAttr toAttr(MLIRContext *ctx, const fi_tiles &t) {
  return TilesAttr::get(ctx, t.q_tile, t.kv_tile, t.split_kv != 0,
                        static_cast<Cores>(t.cores)); // same values as fi_core_kind
}

/// The runtime's fi_tile_problem.fast_path of an op: for a prefill op, the warp-specialised
/// Hopper kernel can run it (KV of q's element type or fp8: every extra runs on that kernel,
/// RoPE, fp8 KV and page sizes that are not a multiple of 16 after the runtime's stage pass,
/// which compiled code always has); for a decode op, the warp-specialised decode kernel can
/// (pages it loads in boxes, fi_decode_page_box_rows, with 16-bit KV of q's type or fp8 KV,
/// RoPE included; an op whose page size is not known, without #fi.bsr, counts as on it).
static bool isFastPath(Operation *op, const AttentionInfo &info) {
  // Decode: the warp-specialised decode kernel's scope.
  if (isa<PagedDecodeOp>(op))
    return (info.kvType == info.qType || isa<Float8E4M3FNType, Float8E5M2Type>(info.kvType)) &&
           (info.qType.isF16() || info.qType.isBF16()) &&
           (!info.bsr || fi_decode_page_box_rows(info.bsr.getBlockCols()) != 0);
  if (!isa<PagedPrefillOp, RaggedPrefillOp>(op))
    return false;
  return (info.qType.isF16() || info.qType.isBF16()) &&
         (info.kvType == info.qType || isa<Float8E4M3FNType, Float8E5M2Type>(info.kvType));
}

/// The query length a prefill op planned on the device is taken to have when nothing
/// says (a prompt's prefill; long enough for the 128-row tiles of the fast kernel).
constexpr int64_t kDevicePlanQoLen = 512;

/// The tiles of one op, or nullopt when the query length is unknown (plan time).
/// `devicePlan`: the op's plan is made on the device, so the choice cannot wait.
std::optional<fi_tiles> choose(Operation *op, const AttentionInfo &info,
                               const fi_target &target, bool devicePlan) {
  // Block-sparse attention: the runtime's plan takes the kernel of the device it runs on
  // (the warp-specialised one with wgmma 128 x 128 tiles on Hopper, else the mma.sync one),
  // so nothing is chosen here; tiles given on the op pass through.
  if (info.family == PlanFamily::block_sparse)
    return std::nullopt;
  fi_tile_problem p{};
  p.batch = info.staticBatch > 0 ? static_cast<int32_t>(info.staticBatch) : 0;
  p.num_qo_heads = static_cast<int32_t>(info.qoHeads);
  p.num_kv_heads = static_cast<int32_t>(info.kvHeads);
  p.head_dim = static_cast<int32_t>(info.headDim);
  p.q_dtype_bytes = dtypeBytes(info.qType);
  p.kv_dtype_bytes = dtypeBytes(info.kvType);
  p.avg_kv_len = hint(op, kAvgKvLenHint);
  p.fast_path = isFastPath(op, info);
  // A variant (score_mod / mask_mod) is compiled into the warp-specialised kernels alone.
  const bool variant = op->hasAttr("score_mod") || op->hasAttr("mask_mod");
  if (info.family == PlanFamily::decode) {
    p.avg_qo_len = 1;
    p.variant = variant;
    p.page_size = info.bsr ? static_cast<int32_t>(info.bsr.getBlockCols()) : 0;
    auto pos = op->getAttrOfType<PosEncodingAttr>("pos_encoding");
    p.rope = pos && pos.getValue() == PosEncoding::rope_llama;
    return fi_select_decode_tiles(&target, &p);
  }
  if (info.staticBatch > 0 && info.staticQoRows >= 0)
    p.avg_qo_len = (info.staticQoRows + info.staticBatch - 1) / info.staticBatch;
  else
    p.avg_qo_len = hint(op, kAvgQoLenHint);
  if (p.avg_qo_len <= 0 && devicePlan)
    p.avg_qo_len = kDevicePlanQoLen;
  if (p.avg_kv_len == 0 && info.staticBatch > 0 && info.staticKvRows >= 0)
    p.avg_kv_len = (info.staticKvRows + info.staticBatch - 1) / info.staticBatch;
  // A variant is compiled into the warp-specialised kernel, and fp8 attention runs only
  // there: its wgmma 128 x 128 tiles whatever the lengths (the host backend ignores the
  // cores; the heuristics give fp8 those tiles).
  if ((variant || p.q_dtype_bytes == 1) && p.avg_qo_len <= 0)
    p.avg_qo_len = kDevicePlanQoLen;
  if (p.avg_qo_len <= 0)
    return std::nullopt;
  fi_tiles tiles = fi_select_prefill_tiles(&target, &p);
  if (variant && p.fast_path && (info.headDim == 64 || info.headDim == 128)) {
    tiles.q_tile = tiles.kv_tile = 128;
    tiles.cores = FI_CORES_WGMMA;
  }
  return tiles;
}

void setTiles(Operation *op, TilesAttr tiles) { op->setAttr("tiles", tiles); }

/// A length hint, when given, is a positive integer: anything else is an error, not a
/// silent fallback to plan time.
LogicalResult checkHints(Operation *op) {
  for (StringRef name : {kAvgQoLenHint, kAvgKvLenHint}) {
    Attribute attr = op->getAttr(name);
    auto value = dyn_cast_or_null<IntegerAttr>(attr);
    if (attr && (!value || value.getInt() < 1))
      return op->emitOpError() << "hint '" << name << "' = " << attr
                               << " must be a positive integer (the average length per "
                                  "request); fix it or drop it to choose tiles at plan time";
  }
  return success();
}

struct FiSelectTilesPass : public mlir::fi::impl::FiSelectTilesBase<FiSelectTilesPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    fi_target target = targetOf(module);
    MLIRContext *ctx = &getContext();

    // Attention ops first: an op whose plan op already carries tiles takes them.
    module.walk([&](Operation *op) {
      std::optional<AttentionInfo> info = getAttentionInfo(op);
      if (!info || info->tiles)
        return;
      if (failed(checkHints(op)))
        return signalPassFailure();
      if (info->plan)
        if (Operation *planOp = info->plan.getDefiningOp())
          if (auto tiles = planOp->getAttrOfType<TilesAttr>("tiles")) {
            setTiles(op, tiles);
            return;
          }
      Operation *planOp = info->plan ? info->plan.getDefiningOp() : nullptr;
      bool devicePlan = devicePlans || (planOp && planOp->hasAttr("on_device"));
      std::optional<fi_tiles> tiles = choose(op, *info, target, devicePlan);
      if (!tiles) {
        op->setAttr(kPlanTimeMarker, UnitAttr::get(ctx));
        return;
      }
      op->removeAttr(kPlanTimeMarker);
      setTiles(op, toAttr(ctx, *tiles));
    });

    // Plan ops without tiles take those of their first user that has them, so that a
    // shared plan and the ops running it agree.
    module.walk([&](Operation *op) {
      if (!isa<DecodePlanOp, PagedPrefillPlanOp, RaggedPrefillPlanOp, BlockSparsePlanOp>(op) ||
          op->getAttr("tiles"))
        return;
      for (Operation *user : op->getResult(0).getUsers())
        if (auto tiles = user->getAttrOfType<TilesAttr>("tiles")) {
          setTiles(op, tiles);
          return;
        }
    });
  }
};

} // namespace
