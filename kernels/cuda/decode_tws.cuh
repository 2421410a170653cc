// kernels/cuda/decode_tws.cuh -- the warp-specialised tensor-core decode kernel
// (decode_tws_kernel, sm_90: TMA tensor copies from a producer warp into a ring of slots
// with mbarriers, the heads-on-N math of decode_heads_n.cuh in consumer warps). Its work
// split and memory traffic are stated above the kernel.
#ifndef FI_CUDA_DECODE_TWS_CUH
#define FI_CUDA_DECODE_TWS_CUH

#include "decode_tcw.cuh"

namespace fi {

// decode_tws_kernel's ring: R slots of one 16-token sub-tile (K then V, each in the copy
// engine's 128-byte-swizzled layout: 4 KiB each at head_dim 128 in 16 bits, 2 KiB in fp8,
// kvb bytes per element), at least the bytes of the warps' final merge (which reuses it);
// then the padded Q tile (with `split`, bf16 RoPE, also its residues) and 2 R mbarriers.
constexpr __host__ __device__ int decode_tws_slot_bytes(int D, int kvb) {
  return 2 * 16 * kvb * D;
}
static inline __host__ __device__ int decode_tws_ring_bytes(int D, int kvb, int nw, int slots) {
  const int ring = slots * decode_tws_slot_bytes(D, kvb);
  const int epi = decode_merge_bytes(D, nw);
  return ring > epi ? ring : epi;
}
// A variant kernel also keeps a unit's sub-tile classes behind the mbarriers: a live and a
// partial bit per sub-tile for the first kTwsClassWords x 32 (sub-tiles past them count as
// live and partial), and the count of live ones.
constexpr int kTwsClassWords = 64;
static inline size_t decode_tws_smem(int D, int kvb, int nw, int slots, bool split,
                                     bool variant = false) {
  return (size_t)decode_tws_ring_bytes(D, kvb, nw, slots) +
         (split ? 2 : 1) * 16 * (2 * (size_t)D + 16) + 2 * (size_t)slots * sizeof(uint64_t) +
         (variant ? (2 * kTwsClassWords + 1) * sizeof(uint32_t) : 0);
}

// The K and V caches as 4-D tensor maps for the copy engine (decode.cu encodes them per
// run): dims (innermost first) head_dim, kv head, position in page, page, with the cache's
// strides (NHD and HND alike); box 64 x 1 x 16 x 1 (16 rows of one head's 64-dim half;
// fp8: 128 x 1 x 16 x 1, a whole 128-dim row; pages of fewer than 16 tokens: a page's
// rows), 128-byte swizzle. Pages outside
// [0, num_pages) read as zeros instead of faulting.
struct TwsMaps {
  CUtensorMap k, v;
};

// ----------------------------------- tensor cores, warp-specialised (sm_90 TMA) -------
// decode_tws_kernel: the heads-on-N math of decode_tcw_kernel (tcn_scores / tcn_pv), fed
// by a producer warp instead of each warp's own copies. Work split: a CTA of NW warps
// takes a unit (request, KV chunk) of one (kv head, head chunk) like the other kernels;
// warps 0 .. NW - 2 are consumers (sub-tile j of the unit goes to consumer j % (NW - 1)),
// the last warp is the producer. The producer walks the unit's 16-token sub-tiles in order
// into a ring of R slots: per sub-tile one lane issues 2 x D / 64 tensor copies (K and V,
// 2 KiB boxes; pages of fewer than 16 tokens: each of the sub-tile's pages by its own
// lane) counted on the slot's `full` mbarrier; a consumer waits on `full`,
// computes, and arrives on `empty`, which the producer waits on before refilling the slot.
// Why: with per-warp copies (decode_tcw_kernel) a warp requests sub-tile i + 1 only when its
// own math reaches that point, so its bytes in flight follow its instruction chain and the
// full-batch rows read at 94-95 % of copy where the bare gather reads at 100 %
// (bench/NOTES.md, v10-v13); here the ring (all of a CTA's share of shared memory) is
// refilled as soon as any slot frees, whatever each consumer's chain, the consumers issue
// no copies and the producer 4 instructions per 8 KiB (16-byte cp.async from one producer
// warp, 16 per lane per sub-tile, could not keep up: bench/NOTES.md v14).
// Page sizes a multiple of 16 (each sub-tile is one box of one page), else a multiple of 8
// or 4 (boxes of 8 or 4 rows, fi_decode_page_box_rows, each inside one page: 2 or 4 per
// sub-tile, issued by as many producer lanes; the planner's chunks then start on 16-token
// boundaries that are page boundaries, lcm(page_size, 16); pages of 1 or 2 tokens would take
// 16 or 8 boxes of 128-byte rows per 4 KiB, which the copy engine moved at about 55 % / 90 %
// of copy). Chunks start on page boundaries; a sliding window's start is masked inside its
// first sub-tile. The producer's lanes load the page ids of 32 boxes at once, one batch ahead.
// The rows of a box outside the unit's range (past its end, before a window's start) hold
// whatever the page holds: K rows are masked, and the consumer zeroes those V rows before
// P V (0 x NaN would be NaN).
// ROPE: the consumers rotate K in registers between ldmatrix and mma (tcn_scores), so RoPE
// costs instructions under the copies, not a staging pass with a block barrier (as in
// decode_tc_kernel); Q is RoPE'd when staged.
// KVT e4m3 / e5m2 (fp8 KV; head_dim 128): the copy engine moves the cache's bytes (one box
// per sub-tile and tensor) and the consumers widen them in registers to f16
// (decode_heads_n.cuh, KV8; RoPE rotates the widened K): the ring holds twice the tokens
// per byte of shared memory. The math is f16 for a bf16 q too (its Q tile staged in f16,
// scaled down by a power of two when it would come near f16's range; stage_q_tile_kv8).
// VARIANT (a program's variant kernel, variant/variant_kernels.cu): the score_mod on every
// logit, and with a mask_mod the producer's lanes first classify the unit's sub-tiles, 32
// at a time (the program's tile classifier over the CTA's heads and a sub-tile's keys),
// into bits that every warp reads after the unit's block barrier: EMPTY sub-tiles are
// neither copied nor computed (producer and consumers walk the live ones), FULL ones need
// no mask call, PARTIAL ones call the mask per pair.
// Memory traffic: as decode_tcw_kernel (q once per unit, K/V rows of the chunk once, o or
// a partial row once). At the end of a unit every warp (the producer with an empty state)
// merges through shared memory over the ring, then the next unit starts.
template <typename T, int D, bool ROPE, typename KVT = T, bool VARIANT = false>
__device__ __forceinline__ void decode_tws_body(const DecodeParams &p, const TwsMaps &maps,
                                                const DecodeVariant &var) {
  constexpr bool KV8 = sizeof(KVT) == 1;
  using KV8T = typename std::conditional<KV8, KVT, void>::type;
  static_assert(!KV8 || D == 128, "fp8 KV: head_dim 128");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Its own name: the 1024-byte alignment the swizzle needs would be dropped in favour of
  // the 16 bytes the other kernels declare for `smem` (one PTX symbol).
  extern __shared__ __align__(1024) uint8_t tws_smem[];
  uint8_t *const smem = tws_smem;
  pdl_enter();
  constexpr int RC = 2 * D + 16;                     // padded row of the Q tile
  constexpr int SLOT = decode_tws_slot_bytes(D, KV8 ? 1 : 2);  // K then V of one sub-tile
  constexpr int V_OFF = SLOT / 2;
  const int NW = blockDim.x / 32, NC = NW - 1, R = p.stages;
  const int tid = threadIdx.x, warp = fi::warp_index(), lane = tid % 32;
  const bool producer = warp == NC;
  const BlockCoords bc = block_coords(p);
  const CtaHeads ch = cta_heads(p, bc);
  const int kv_head = ch.kv_head, head0 = ch.head0;
  float slope0, slope1;
  cta_head_slopes(p, head0, 2 * (lane % 4), 2 * (lane % 4) + 1, &slope0, &slope1);

  uint8_t *ring = smem;  // 1024-byte aligned (tws_smem): the swizzle's pattern is absolute
  constexpr bool SPLIT = ROPE && is_bf16<T>::value && !KV8;  // (fp8: f16 math)
  uint8_t *qs = smem + decode_tws_ring_bytes(D, KV8 ? 1 : 2, NW, R);
  uint8_t *qs_lo = qs + 16 * RC;  // SPLIT only
  uint64_t *full = reinterpret_cast<uint64_t *>(qs + (SPLIT ? 2 : 1) * 16 * RC);
  uint64_t *empty = full + R;
  // VARIANT with a mask_mod: the unit's live and partial sub-tile bits and live count
  uint32_t *live_bits = reinterpret_cast<uint32_t *>(empty + R);
  uint32_t *partial_bits = live_bits + kTwsClassWords, *live_count = partial_bits + kTwsClassWords;
  const bool var_mask = VARIANT && var.mask;
  if (tid == 0) {
    for (int i = 0; i < R; ++i) {
      mbar_init(&full[i], 1);   // the producer's arrive.expect_tx
      mbar_init(&empty[i], 1);  // one lane of the consuming warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  float kfreq[ROPE ? D / 8 : 1];
  if constexpr (ROPE && KV8)
    tcn_rope_freqs_kv8<D>(p, lane, kfreq);
  else if constexpr (ROPE)
    tcn_rope_freqs<D>(p, lane, kfreq);

  uint32_t seq = 0;  // sub-tiles of earlier units: slot and phase run on across units
  const int n_units = unit_count(p);
  for (int w = bc.unit0; w < n_units; w += bc.unit_stride) {
    const fi_work_unit u = p.work[w];
    if (u.request < 0) continue;
    const UnitSpan us = unit_span(p, u);
    // Sub-tiles from the multiple of 16 at or below the range's start (a window's start is
    // anywhere; the unit's chunk start is a page boundary, so base >= it): positions below
    // us.lo are masked.
    const int lo = us.lo / 16 * 16, hi = us.hi;
    const int num_sub = hi > us.lo ? (hi - lo + 15) / 16 : 0;
    const int P = p.page_size;
    if (P % 4 != 0 || u.kv_start % 16 != 0) __trap();  // the launcher's and planner's
    TcnState<D> st;
    tcn_state_init(st);

    // Producer: sub-tile s into the next slot as NB boxes of BR rows (pages a multiple of
    // 16: one box from the sub-tile's row in its page; else boxes of 8 or 4 rows, the
    // largest that divides the page size, so that none crosses a page), box b issued by
    // lane b; every lane takes part in the page-id batches, 32 boxes each.
    // (NB = 2^LG_NB: shifts and masks on the producer's path per sub-tile; a division per
    // batch of page ids, and the page's row per box for pages larger than a box that are
    // not a multiple of 16)
    const int LG_NB = P % 16 == 0 ? 0 : P % 8 == 0 ? 1 : 2, NB = 1 << LG_NB, BR = 16 >> LG_NB;
    const int SB = 32 >> LG_NB;  // sub-tiles per batch of page ids
    const int32_t *pages = p.kv_indices + us.page_begin;
    auto page_batch = [&](int s0) {  // lane i: page of box i % NB of sub-tile s0 + i / NB
      const int sub = s0 + (lane >> LG_NB), pos = lo + 16 * sub + BR * (lane & (NB - 1));
      return sub < num_sub && pos < hi ? pages[pos / P] : 0;  // (0: past the end)
    };
    int cur = 0, next = 0, cur_batch = -2;
    uint32_t pslot = seq % R, pphase = (seq / R) & 1;
    auto copy_box = [&](uint8_t *dst, int in_page, int page) {  // K and V of one box
      if constexpr (KV8) {  // 128-byte rows (2 KiB per 16)
        tma_load_4d(dst, &maps.k, 0, kv_head, in_page, page, &full[pslot]);
        tma_load_4d(dst + V_OFF, &maps.v, 0, kv_head, in_page, page, &full[pslot]);
      } else {
#pragma unroll
        for (int h = 0; h < D / 64; ++h) {
          tma_load_4d(dst + h * 2048, &maps.k, 64 * h, kv_head, in_page, page, &full[pslot]);
          tma_load_4d(dst + V_OFF + h * 2048, &maps.v, 64 * h, kv_head, in_page, page,
                      &full[pslot]);
        }
      }
    };
    auto issue = [&](int s) {
      if (var_mask) {  // (sub-tiles come with gaps: the batch of s, loaded unless at hand)
        const int b = s >> (5 - LG_NB);
        if (b != cur_batch) {
          cur = b == cur_batch + 1 ? next : page_batch(b * SB);
          next = page_batch((b + 1) * SB);
          cur_batch = b;
        }
      } else if ((s & (SB - 1)) == 0) {
        cur = s == 0 ? page_batch(0) : next;
        next = page_batch(s + SB);
      }
      uint8_t *const dst = ring + pslot * SLOT;
      // (two paths: in the one-wave plans the producer's few instructions per sub-tile are
      // on the critical path; the single-box one is the page-of-16 kernel's as measured)
      if (NB == 1) {  // one box from the sub-tile's row of its page, by lane 0
        const int page = __shfl_sync(0xffffffffu, cur, s & 31);
        if (lane == 0) {
          const int in_page = (lo + 16 * s) % P;
          mbar_wait(&empty[pslot], pphase ^ 1);  // consumed (a fresh slot passes at once)
          mbar_arrive_expect_tx(&full[pslot], SLOT);
          copy_box(dst, in_page, page);
        }
      } else {  // boxes of BR rows, box b by lane b
        const int page =
            __shfl_sync(0xffffffffu, cur, ((s & (SB - 1)) << LG_NB) + (lane & (NB - 1)));
        if (lane == 0) {
          mbar_wait(&empty[pslot], pphase ^ 1);
          mbar_arrive_expect_tx(&full[pslot], SLOT);
        }
        __syncwarp();  // (the slot free and its bytes expected before any box)
        // Box rows land at row BR * lane of the slot: the 128-byte swizzle follows the
        // shared-memory address, so the slot reads as one 16-row box. (pages of 4 or 8:
        // the box is the page; larger ones: its rows' place in the page)
        if (lane < NB)
          copy_box(dst + BR * lane * 128, P == BR ? 0 : (lo + 16 * s + BR * lane) % P, page);
      }
      if (++pslot == (uint32_t)R) {
        pslot = 0;
        pphase ^= 1;
      }
    };
    // The first ring's worth of copies goes out while the consumers stage Q (every slot
    // was released in the previous unit: no wait), then one block barrier for both.
    // VARIANT with a mask_mod: the producer's lanes classify the sub-tiles (bits read by
    // every warp after the block barrier below); both sides then walk the live ones.
    int n_live = num_sub;
    if (var_mask && producer) {
      const int words = min(kTwsClassWords, (num_sub + 31) / 32);
      n_live = max(num_sub - 32 * kTwsClassWords, 0);
      for (int wd = 0; wd < words; ++wd) {
        const int sub = 32 * wd + lane, k0 = lo + 16 * sub;
        int cls = FI_MASK_TILE_EMPTY;
        if constexpr (VARIANT)
          if (sub < num_sub)
            cls = fi_variant_mask_tile(u.request, head0, head0 + p.heads_per_cta - 1,
                                       us.q_pos, us.q_pos, max(k0, us.lo),
                                       min(k0 + 15, hi - 1), var.captures);
        const uint32_t live = __ballot_sync(0xffffffffu, cls != FI_MASK_TILE_EMPTY);
        const uint32_t part = __ballot_sync(0xffffffffu, cls == FI_MASK_TILE_PARTIAL);
        if (lane == 0) {
          live_bits[wd] = live;
          partial_bits[wd] = part;
        }
        n_live += __popc(live);
      }
      if (lane == 0) *live_count = n_live;
      __syncwarp();
    }
    // The first live sub-tile at or after s (past the bits: every one is live).
    auto next_live = [&](int s) {
      if (!var_mask) return s;
      while (s < num_sub && s < 32 * kTwsClassWords) {
        const uint32_t w = live_bits[s >> 5] >> (s & 31);
        if (w) return s + __ffs(w) - 1;
        s = (s | 31) + 1;
      }
      return s;
    };
    const int first = n_live < R ? n_live : R;
    float q_unscale = 1.f;
    int s_next = 0;  // the producer's next sub-tile
    if (producer) {
      s_next = next_live(0);
      for (int i = 0; i < first; ++i, s_next = next_live(s_next + 1)) issue(s_next);
    } else if constexpr (KV8) {
      q_unscale = stage_q_tile_kv8<T, D, RC>(p, u.request, head0, us.q_pos, qs, tid, NC * 32);
    } else {
      stage_q_tile<T, D, RC>(p, u.request, head0, us.q_pos, qs, qs_lo, SPLIT, tid, NC * 32);
    }
    __syncthreads();
    if (var_mask) n_live = *live_count;
    if (producer) {
      for (; s_next < num_sub; s_next = next_live(s_next + 1)) issue(s_next);
    } else {
      uint32_t qb[D / 16][2], qb_lo[SPLIT ? D / 16 : 1][2];
      if constexpr (KV8)
        ldq_kv8<RC, D>(qb, qs, lane);
      else
        ldsm_qt<RC, D>(qb, qs, lane);
      if constexpr (SPLIT) ldsm_qt<RC, D>(qb_lo, qs_lo, lane);
      uint32_t slot = (seq + warp) % R, phase = ((seq + warp) / R) & 1;
      // Sub-tile j, the next in this warp's slot (partial: a PARTIAL one of a mask_mod)
      auto consume = [&](int j, bool partial) {
        mbar_wait(&full[slot], phase);
        uint8_t *kb = ring + slot * SLOT, *vb = kb + V_OFF;
        const int pos0 = lo + 16 * j;
        // Rows of the box outside [us.lo, hi) (a window's start, the unit's end) hold
        // whatever the page holds there: their K is masked, their V zeroed (P = 0 times a
        // NaN would be NaN).
        const int r_lo = us.lo - pos0 > 0 ? us.lo - pos0 : 0;
        const int r_hi = hi - pos0 < 16 ? hi - pos0 : 16;
        uint32_t pb[2];
        tcn_scores<T, D, RC, true, ROPE, KV8T, VARIANT>(
            p, st, qb, kb, pos0, hi, us.q_pos, slope0, slope1, lane, pb, us.lo, kfreq, qb_lo,
            q_unscale, &var, u.request, head0, kv_head, partial);
        if (r_lo > 0 || r_hi < 16) {
          constexpr int CH = D * (KV8 ? 1 : 2) / 16;  // 16-byte chunks per V row
          for (int c = lane; c < 16 * CH; c += 32) {  // whole 128-byte rows of each half
            const int r = c / CH, cc = c % CH;
            if (r < r_lo || r >= r_hi)
              *reinterpret_cast<uint4 *>(vb + (cc / 8) * 2048 + r * 128 + (cc % 8) * 16) =
                  make_uint4(0u, 0u, 0u, 0u);
          }
          fence_proxy_async_smem();  // before the copy engine refills the slot
          __syncwarp();
        }
        tcn_pv<T, D, RC, true, KV8T>(st, vb, pb, lane);
        // Every lane's reads of the slot (ldmatrix: the generic proxy) performed before the
        // slot goes back to the copy engine (the async proxy). Without the fence ptxas
        // issued the arrive while the last two V loads were in flight (their MMAs came after
        // it), and a refill that landed first replaced a 16-dim block of V now and then
        // (one CTA in ~10^3 runs beside other kernels; bench/NOTES.md, session 47).
        fence_proxy_async_smem();
        __syncwarp();  // every lane has read the slot
        if (lane == 0) mbar_arrive(&empty[slot]);
        slot += NC;
        while (slot >= (uint32_t)R) {
          slot -= R;
          phase ^= 1;
        }
      };
      if (var_mask) {  // the live sub-tiles in order, every NC-th from this warp's turn on
        int turn = warp;
        for (int j = next_live(0); j < num_sub; j = next_live(j + 1)) {
          if (turn-- > 0) continue;
          turn = NC - 1;
          consume(j, j >= 32 * kTwsClassWords || ((partial_bits[j >> 5] >> (j & 31)) & 1));
        }
      } else {
        for (int j = warp; j < num_sub; j += NC) consume(j, false);
      }
    }
    seq += n_live;
    __syncthreads();  // every slot of the unit consumed (so every copy landed)
    tcn_merge_warps<T, D, KV8>(p, u, smem, st, head0);
    fence_proxy_async_smem();  // the merge's stores precede the next unit's tensor copies
    __syncthreads();
  }
#else
  __trap();  // launched only on sm_90 devices with sm_90 code (decode.cu)
#endif
}

template <typename T, int D, bool ROPE, typename KVT = T>
__global__ void __launch_bounds__(kTcw1MaxWarps * 32, 1)
    decode_tws_kernel(const __grid_constant__ DecodeParams p,
                      const __grid_constant__ TwsMaps maps) {
  const DecodeVariant none = {};
  decode_tws_body<T, D, ROPE, KVT, false>(p, maps, none);
}

}  // namespace fi

#endif  // FI_CUDA_DECODE_TWS_CUH
