// kernels/cuda/decode.cuh -- the batch paged decode kernels (one query row per request) and
// their launchers. One file per kernel kind, each opening with its work split and memory
// traffic:
//   decode_common.cuh   arguments, work split over the grid, gather pipeline, shared math
//   decode_cc.cuh       CUDA cores (small GQA groups)
//   decode_tc.cuh       tensor cores, block-wide pipeline (fp8 KV; RoPE off sm_90)
//   decode_heads_n.cuh  heads-on-N tensor-core math of the two kernels below
//   decode_tcw.cuh      tensor cores, per-warp pipelines
//   decode_tws.cuh      tensor cores, warp-specialised (sm_90 TMA; the default where it
//                       applies)
// This file chooses and launches one of them per run (decode_dispatch, for decode_f16.cu /
// decode_bf16.cu). Measured on an H200 (bench/NOTES.md, v6): two pipeline stages and as
// many resident CTAs per SM as fit beat deeper pipelines on every row of the pipelined
// kernels.
#ifndef FI_CUDA_DECODE_CUH
#define FI_CUDA_DECODE_CUH

#include "decode_cc.cuh"
#include "decode_tc.cuh"
#include "decode_tws.cuh"

namespace fi {

// Shared-memory bytes of each kernel (kv_bytes: bytes of one KV element; nw: warps of the
// tensor-core kernel; transform: fp8 or RoPE staging buffers).
static inline size_t decode_cc_smem(int D, int kv_bytes, int kv_tile, int stages, int hg) {
  size_t raw = 2 * (size_t)stages * kv_tile * D * kv_bytes;
  size_t slots = (size_t)(stages + 1 + decode_l2_tiles(D, kv_bytes, kv_tile)) * kv_tile *
                 sizeof(TokenOffsets);
  int bdz = 128 / ((D / 8) * hg);
  size_t red = (size_t)bdz * hg * D * 4 + (size_t)bdz * hg * 8;
  return (raw + slots > red ? raw + slots : red);
}
static inline size_t decode_tc_smem(int D, int kv_bytes, int kv_tile, int stages, int nw,
                                    bool transform, bool split) {
  const size_t RC = 2 * (size_t)D + 16;
  size_t row = transform ? (size_t)D * kv_bytes : RC;
  size_t raw = 2 * (size_t)stages * kv_tile * row;
  size_t epi = (size_t)decode_merge_bytes(D, nw);
  size_t s = raw > epi ? raw : epi;
  s += (size_t)(stages + 1 + decode_l2_tiles(D, kv_bytes, kv_tile)) * kv_tile *
       sizeof(TokenOffsets);
  s += 16 * RC;
  if (transform) s += 2 * (size_t)kv_tile * RC;
  if (split) s += 16 * RC + (size_t)kv_tile * RC;
  return s;
}
static inline size_t decode_tcw_smem(int D, int stages, int nw) {
  const size_t RC = 2 * (size_t)D + 16;
  size_t raw = (size_t)nw * stages * 2 * 16 * RC;
  size_t epi = (size_t)decode_merge_bytes(D, nw);
  size_t q = 16 * RC;  // staged in the ring
  size_t ring = raw > epi ? raw : epi;
  if (ring < q) ring = q;
  return ring + (size_t)nw * (stages + 1) * 16 * sizeof(TokenOffsets);
}
// Single K and V slots per warp (decode_tcw_kernel with ONE): no stages, no offset slots.
static inline size_t decode_tcw1_smem(int D, int nw) {
  const size_t RC = 2 * (size_t)D + 16;
  size_t raw = (size_t)nw * 2 * 16 * RC;
  size_t epi = (size_t)decode_merge_bytes(D, nw);
  size_t s = raw > epi ? raw : epi;
  return s > 16 * RC ? s : 16 * RC;
}
static inline int decode_tc_warps(int kv_tile) {
  int nw = kv_tile / 16;
  return nw > 4 ? 4 : (nw < 1 ? 1 : nw);
}

// Warps per CTA of decode_tcw_kernel for a grid of `ctas` CTAs. Each warp streams its own
// sub-tiles and its rate is bounded by its own instruction chain, not by the bytes it has
// in flight (bench/NOTES.md, v8: three stages instead of two changed nothing; more resident
// warps per SM did), so the kernel takes time ~ waves(nw) / nw for a fixed amount of work:
// pick nw in 2..12 minimising ceil(ctas / (resident CTAs per SM(nw) x SMs)) / nw, fewer
// warps on ties. E.g. 512 CTAs on 132 SMs: 2 warps (6 per SM, 1 wave) 0.5, 3 warps (4 per
// SM, 1 wave) 0.33, 4 warps (3 per SM, 2 waves) 0.5, 12 warps (1 per SM, 4 waves) 0.33
// -> 3; 128 CTAs -> 12 warps, one CTA per SM.
//
// The occupancy answers depend only on the kernel, nw and the device, and this runs on every
// launch (up to 15 warp counts), so they are kept in `known` when given: known[nw] = resident
// CTAs per SM, -1 none, 0 not asked yet.
template <typename Kernel, typename SmemOf>
static int tcw_warps_for(Kernel kernel, SmemOf smem_of, long long ctas, int sm_count,
                         int max_warps, std::atomic<int> *known) {
  int best = 2;
  double best_cost = 0.0;
  for (int nw = 2; nw <= max_warps; ++nw) {
    int per_sm = known ? known[nw].load(std::memory_order_relaxed) : 0;
    if (per_sm == 0) {
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * nw,
                                                        smem_of(nw)) != cudaSuccess)
        continue;  // not kept: ask again next time
      if (per_sm < 1) per_sm = -1;
      if (known) known[nw].store(per_sm, std::memory_order_relaxed);
    }
    if (per_sm < 1) continue;
    long long slots = (long long)per_sm * (sm_count > 0 ? sm_count : 1);
    double cost = (double)((ctas + slots - 1) / slots) / nw;
    if (nw == 2 || cost < best_cost - 1e-9) {
      best = nw;
      best_cost = cost;
    }
  }
  return best;
}

// The deepest pipeline, 8 stages down to 2, whose shared memory smem_of(stages) fits
// `budget` (2 when none does: the caller checks the hard limit).
template <typename SmemOf>
static int deepest_stages(SmemOf smem_of, size_t budget) {
  int stages = 8;
  while (stages > 2 && smem_of(stages) > budget) --stages;
  return stages;
}

// Launches decode_tws_kernel for `grid`. CTAs per SM k from the grid: 1 for grids of at
// most one CTA per SM, 2 up to two per SM, else 4 (four CTAs per SM: one CTA's unit
// boundary, when its ring drains for the merge, is covered by the other three). Each CTA
// takes 1/k of the SM's shared memory for its ring and NW warps with NW - 1 consumers: 14
// at k = 1 (a single CTA must consume at the SM's share of the bandwidth), 7 at k = 2 (8 at
// head_dim 128 for grids of at least 1.6 CTAs per SM: H200, 2-5 % more GB/s on such rows
// of 1.7-1.9 per SM, 3 % less at 1.5; bench/NOTES.md, session 48), 4 at k = 4 (16 warps of
// <= 128 registers fill the register file). NW follows the grid alone: host and device
// plans of one problem launch the same grid and so compute the same bits. The ring's slot
// count R is a multiple of the consumers: within a unit a consumer then waits on a slot
// whose previous phase it consumed itself, so the phase it waits for is never two ahead of
// the barrier's (parity waits would alias); across units the block barrier at each unit's
// end orders every earlier fill. FI_DECODE_TCW_WARPS (2..16) and FI_DECODE_TWS_SLOTS
// (p.tws_slots) override NW and cap R for sweeps and tests.
template <typename T, int D, typename KVT>
static cudaError_t launch_tws(DecodeParams p, dim3 grid, size_t smem_limit,
                              cudaStream_t stream) {
  constexpr int kvb = (int)sizeof(KVT);
  const long long ctas = (long long)grid.x * grid.y;
  const long long sms = p.sm_count > 0 ? p.sm_count : 1;
  int per_sm = ctas <= sms ? 1 : (ctas <= 2 * sms ? 2 : 4);
  int nw = per_sm == 1 ? 14 : (per_sm == 2 ? (D == 128 && 5 * ctas >= 8 * sms ? 8 : 7) : 4);
  if (p.tcw_warps >= 2 && p.tcw_warps <= kTcw1MaxWarps) nw = p.tcw_warps;
  if (per_sm > kTcw1MaxWarps / nw) per_sm = kTcw1MaxWarps / nw;  // registers
  const int consumers = nw - 1;
  long long per_cta = (long long)p.smem_per_sm / per_sm - p.smem_reserved;
  if (per_cta > (long long)smem_limit) per_cta = (long long)smem_limit;
  int slots = kTwsMaxSlots / consumers * consumers;
  // (bf16 RoPE keeps residues of its Q tile; the fp8 instance's math is f16: none)
  const bool rope = p.pos_encoding == FI_POS_ROPE_LLAMA,
             split = rope && is_bf16<T>::value && kvb == 2;
  const bool variant = p.variant_kernel != nullptr;
  while (slots > consumers &&
         (long long)decode_tws_smem(D, kvb, nw, slots, split, variant) > per_cta)
    slots -= consumers;
  // The ring's depth: as many slots as fit, except one per consumer for MHA over a 16-bit
  // cache (one head per CTA: little math per slot) where the CTAs with work fill at least
  // 2.5 per SM at four CTAs per SM, or 1.5 at two: on an H200, 3 slots against 6 read
  // 0.4-2.5 % more GB/s on the MHA rows at four per SM, where the deeper ring read below
  // FlashInfer's (GQA rows gained and lost); 6 against 12 at two per SM (7 warps) read 2-5 %
  // more on (7 and 8, 8192, 32, 32) but 6 % less on a grid of 1.45 CTAs per SM (those two
  // rows now run 8 warps: 7 slots against a full ring read the same); and split plans
  // whose units busy 1.7-1.9 CTAs per SM of a four-per-SM launch lost 13-17 % with 3
  // (bench/NOTES.md, sessions 46 and 48). p.tws_slots >= consumers (FI_DECODE_TWS_SLOTS)
  // caps it instead, 0 keeps it full. (The slots never change the bits: a consumer's
  // sub-tiles are the same whatever the ring's depth.)
  const long long busy = p.num_units > 0 && (long long)p.num_units * p.grid_heads < ctas
                             ? (long long)p.num_units * p.grid_heads
                             : ctas;
  const bool shallow = kvb == 2 && p.group == 1 &&
                       ((per_sm == 4 && 2 * busy >= 5 * sms) ||
                        (per_sm == 2 && 2 * busy >= 3 * sms));
  int cap = p.tws_slots;
  if (cap < 0) cap = shallow ? consumers : 0;
  if (cap >= consumers && cap < slots) slots = cap / consumers * consumers;
  const size_t smem = decode_tws_smem(D, kvb, nw, slots, split, variant);
  if (smem > smem_limit) return cudaErrorInvalidConfiguration;
  p.stages = slots;
  if (variant) {  // (a cudaKernel_t launches through the runtime's calls as a function pointer)
    using Entry = void (*)(DecodeParams, TwsMaps, DecodeVariant);
    return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem,
                     reinterpret_cast<Entry>(const_cast<void *>(p.variant_kernel)), p,
                     *p.tws_maps, *p.variant);
  }
  return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem,
                   rope ? decode_tws_kernel<T, D, true, KVT> : decode_tws_kernel<T, D, false, KVT>,
                   p, *p.tws_maps);
}

// The warp-specialised kernel's instances: 16-bit KV of q's type at head_dim 64 and 128,
// and fp8 KV at head_dim 128.
template <typename T, typename KVT, int D>
constexpr bool has_tws() {
  return sizeof(KVT) == 2 ? D <= 128 : D == 128;
}

// Launches the CUDA-core (tc == false) or tensor-core kernel for `p` (p.stages is chosen
// here: the deepest pipeline within `smem_budget` bytes, at least 2 stages).
template <typename T, typename KVT, int D>
static cudaError_t decode_launch(DecodeParams p, bool tc, int grid_x, size_t smem_budget,
                                 size_t smem_limit, cudaStream_t stream) {
  int grid_y = p.num_kv_heads * (p.group / p.heads_per_cta);
  p.grid_heads = grid_y;
  // (a cap below grid_y still launches one unit slot: grid_y CTAs)
  if (p.max_ctas > 0 && (long long)grid_x * grid_y > p.max_ctas)
    grid_x = p.max_ctas / grid_y > 0 ? p.max_ctas / grid_y : 1;
  dim3 grid(grid_x, grid_y);
  if (p.head_fast) {
    long long n = (long long)grid_x * grid_y;
    if (n > 0x7fffffffLL) n = 0x7fffffffLL / grid_y * grid_y;  // whole unit slots
    grid = dim3((unsigned)n, 1);
  }
  if (tc) {
    int nw = decode_tc_warps(p.kv_tile);
    bool transform = sizeof(KVT) == 1 || p.pos_encoding == FI_POS_ROPE_LLAMA;
    // The per-warp kernel exists for 16-bit KV and head_dim <= 128 only (not instantiated
    // for the others: at head_dim 256 its 12-warp register budget would spill).
    // Warp-specialised (sm_90; RoPE too, rotated in registers): decode.cu gives it tensor
    // maps where it applies; a configuration it cannot take falls through.
    if constexpr (has_tws<T, KVT, D>()) if (p.warp_pipe && p.tws_maps) {
      const cudaError_t e = launch_tws<T, D, KVT>(p, grid, smem_limit, stream);
      // else the kernels below (not for a variant: its kernel is this one)
      if (e != cudaErrorInvalidConfiguration || p.variant_kernel) return e;
    }
    if (p.variant_kernel) return cudaErrorInvalidConfiguration;  // (decode.cu checks first)
    if constexpr (D <= 128 && sizeof(KVT) == 2) if (p.warp_pipe && !transform) {
      // Per variant (0 rows form, 1 heads on N with the ring, 2 with single slots) and per
      // (T, KVT, D), this function's instantiation.
      static TcwOccupancy occupancy[3];
      // smem_of(nw, stages): the kernel's shared memory; staged: the ring's depth is chosen
      // (the deepest within the budget), else the kernel has single slots (stages unused).
      auto launch_tcw = [&](auto kernel, int variant, int max_warps, auto smem_of, bool staged) {
        int nw = p.tcw_warps < max_warps ? p.tcw_warps : max_warps;
        if (nw <= 0) {
          int dev = -1;
          std::atomic<int> *known =
              cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < kTcwKnownDevices
                  ? occupancy[variant].per_sm[dev]
                  : nullptr;
          // Two stages per warp, the per-warp ring measured best (v6).
          auto two_stage = [&](int w) { return smem_of(w, 2); };
          nw = tcw_warps_for(kernel, two_stage, (long long)grid.x * grid.y, p.sm_count,
                             max_warps, known);
        }
        auto of_stages = [&](int stages) { return smem_of(nw, stages); };
        int stages = staged ? deepest_stages(of_stages, smem_budget) : 1;
        size_t smem = of_stages(stages);
        if (smem > smem_limit) return cudaErrorInvalidConfiguration;
        p.stages = stages;
        return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem, kernel, p);
      };
      auto ring_smem = [&](int w, int stages) { return decode_tcw_smem(D, stages, w); };
      auto single_smem = [&](int w, int) { return decode_tcw1_smem(D, w); };
      const bool heads_n = p.heads_n && p.heads_per_cta <= 8;
      // Single slots need every unit page-aligned: page size a multiple of 16 and no window
      // (the planner's chunks start on page boundaries).
      if (heads_n && p.single_slots && p.page_size % 16 == 0 && p.window_left < 0)
        return launch_tcw(decode_tcw_kernel<T, KVT, D, true, true>, 2, kTcw1MaxWarps,
                          single_smem, false);
      if (heads_n)
        return launch_tcw(decode_tcw_kernel<T, KVT, D, true, false>, 1, kTcwMaxWarps, ring_smem,
                          true);
      return launch_tcw(decode_tcw_kernel<T, KVT, D, false, false>, 0, kTcwMaxWarps, ring_smem,
                        true);
    }
    bool split = p.pos_encoding == FI_POS_ROPE_LLAMA && is_bf16<T>::value;
    auto smem_of = [&](int stages) {
      return decode_tc_smem(D, (int)sizeof(KVT), p.kv_tile, stages, nw, transform, split);
    };
    int stages = deepest_stages(smem_of, smem_budget);
    size_t smem = smem_of(stages);
    if (smem > smem_limit) return cudaErrorInvalidConfiguration;
    p.stages = stages;
    return launch_on(stream, p.pdl != 0, grid, dim3(32 * nw), smem,
                             decode_tc_kernel<T, KVT, D>, p);
  } else {
    auto smem_of = [&](int stages) {
      return decode_cc_smem(D, (int)sizeof(KVT), p.kv_tile, stages, p.heads_per_cta);
    };
    int stages = deepest_stages(smem_of, smem_budget);
    size_t smem = smem_of(stages);
    if (smem > smem_limit) return cudaErrorInvalidConfiguration;
    p.stages = stages;
    return launch_on(stream, p.pdl != 0, grid, dim3(128), smem, decode_cc_kernel<T, KVT, D>,
                             p);
  }
}

// Raises every decode kernel's dynamic shared-memory limit to the device's opt-in maximum,
// once per context creation (not on the run path: a run may be inside a graph capture).
template <typename T, typename KVT>
static cudaError_t decode_prepare_kv(int limit) {
  cudaError_t e = cudaSuccess;
#define FI_PREP(K)                                                                         \
  if (e == cudaSuccess)                                                                    \
    e = cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, limit);
  FI_PREP((decode_cc_kernel<T, KVT, 64>)) FI_PREP((decode_cc_kernel<T, KVT, 128>))
  FI_PREP((decode_cc_kernel<T, KVT, 256>)) FI_PREP((decode_tc_kernel<T, KVT, 64>))
  FI_PREP((decode_tc_kernel<T, KVT, 128>)) FI_PREP((decode_tc_kernel<T, KVT, 256>))
  if constexpr (sizeof(KVT) == 2) {
    FI_PREP((decode_tcw_kernel<T, KVT, 64, false, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 128, false, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 64, true, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 128, true, false>))
    FI_PREP((decode_tcw_kernel<T, KVT, 64, true, true>))
    FI_PREP((decode_tcw_kernel<T, KVT, 128, true, true>))
    FI_PREP((decode_tws_kernel<T, 64, false>))
    FI_PREP((decode_tws_kernel<T, 128, false>))
    FI_PREP((decode_tws_kernel<T, 64, true>))
    FI_PREP((decode_tws_kernel<T, 128, true>))
  }
  if constexpr (sizeof(KVT) == 1 && has_tws<T, KVT, 128>()) {
    FI_PREP((decode_tws_kernel<T, 128, false, KVT>))
    FI_PREP((decode_tws_kernel<T, 128, true, KVT>))
  }
#undef FI_PREP
  return e;
}
template <typename T>
static cudaError_t decode_prepare(int limit) {
  cudaError_t e = decode_prepare_kv<T, T>(limit);
  if (e == cudaSuccess) e = decode_prepare_kv<T, e4m3>(limit);
  if (e == cudaSuccess) e = decode_prepare_kv<T, e5m2>(limit);
  return e;
}

template <typename T>
static cudaError_t decode_dispatch(const DecodeParams &p, fi_dtype kv_dtype, int head_dim,
                                   bool tc, int grid_x, size_t budget, size_t limit,
                                   cudaStream_t s) {
#define FI_DECODE_D(KVT)                                                              \
  switch (head_dim) {                                                                 \
    case 64: return decode_launch<T, KVT, 64>(p, tc, grid_x, budget, limit, s);       \
    case 128: return decode_launch<T, KVT, 128>(p, tc, grid_x, budget, limit, s);     \
    case 256: return decode_launch<T, KVT, 256>(p, tc, grid_x, budget, limit, s);     \
    default: return cudaErrorInvalidValue;                                            \
  }
  if (kv_dtype == FI_DTYPE_E4M3) { FI_DECODE_D(e4m3) }
  if (kv_dtype == FI_DTYPE_E5M2) { FI_DECODE_D(e5m2) }
  FI_DECODE_D(T)
#undef FI_DECODE_D
}

}  // namespace fi

#endif
