// kernels/cuda/decode_tcw.cuh -- the tensor-core decode kernel with per-warp pipelines
// (decode_tcw_kernel; the default for 16-bit KV without RoPE, head_dim <= 128, where the
// warp-specialised kernel does not apply).
//
// Work split: as every decode kernel (decode_common.cuh); each warp streams its own
// 16-token sub-tiles through its own cp.async ring with __syncwarp only, no block barrier
// per tile. With <= 8 heads per CTA the heads go on the mma N side (decode_heads_n.cuh);
// page-aligned units copy each sub-tile from one page id with a fixed stride per lane.
// Memory traffic per unit: q once, the K/V rows of the chunk once, o or a partial row once.
#ifndef FI_CUDA_DECODE_TCW_CUH
#define FI_CUDA_DECODE_TCW_CUH

#include "decode_heads_n.cuh"

namespace fi {

// Variant of the tensor-core kernel for 16-bit KV without RoPE (no transform pass), with
// NW = blockDim.x / 32 warps (2..12, tcw_warps_for picks them per grid): every
// warp runs its own cp.async pipeline over its own 16-token sub-tiles (w, w + NW, ... of
// the unit's range), `stages` deep, synchronised with __syncwarp only. No block barrier
// per tile: a warp that waits for memory never holds the others back, and each warp keeps
// stages - 1 sub-tiles (8.5 KiB each at D = 128) in flight. The warps merge their
// online-softmax states through shared memory at the end, as in decode_tc_kernel.
// Shared memory: [NW][stages][K | V][16][RC] stage ring (the Q tile [16][RC] is staged at
// its start before each unit's pipeline), then [NW][stages + 1][16] token offset slots.
__device__ __forceinline__ TokenOffsets warp_lookup(const DecodeParams &p, int page_begin,
                                                    int lo, int hi, int kv_head, int sub,
                                                    int num_sub, int lane) {
  if (sub >= num_sub || lane >= 16) return no_token();
  return token_offsets(p, page_begin, lo + sub * 16 + lane, hi, kv_head);
}

// Up to 12 warps per CTA: 168 registers x 384 threads fit one SM's register file, so a
// decode whose (request, kv head) CTAs about fill the SMs runs unsplit at 12 warps per SM
// (planner.c, decode_target_units).
constexpr int kTcwMaxWarps = 12;
// ONE (single K and V slots per warp) halves the shared memory per warp, and caps the
// registers at 128 (16 warps x 32 threads x 128 = the register file): up to 16 warps per SM.
constexpr int kTcw1MaxWarps = 16;
// Ring slots of decode_tws_kernel at most (27 of 8 KiB fit one CTA per SM at head_dim 128).
constexpr int kTwsMaxSlots = 32;

// tcw_warps_for's occupancy answers for one decode_tcw_kernel variant, per device (ordinals
// below kTcwKnownDevices; others ask every time).
constexpr int kTcwKnownDevices = 16;
struct TcwOccupancy {
  std::atomic<int> per_sm[kTcwKnownDevices][kTcw1MaxWarps + 1];
};

// HN: the heads on the mma N side (tcn_scores / tcn_pv; CTAs of hg <= 8 heads), else as
// mma rows. ONE (with HN, page-aligned units only; the launcher guarantees it): one K and
// one V slot per warp instead of a ring of (K, V) stages; K(i + 1) is copied into the K slot
// as soon as S(i) has read it, V(i + 1) once P V(i) has read V(i), so each copy still has
// about one sub-tile's math to land.
template <typename T, typename KVT, int D, bool HN, bool ONE>
__global__ void __launch_bounds__(ONE ? kTcw1MaxWarps * 32 : kTcwMaxWarps * 32, 1)
    decode_tcw_kernel(const DecodeParams p) {
  static_assert(!ONE || HN, "single slots need the heads-on-N form");
  extern __shared__ __align__(16) uint8_t smem[];
  pdl_enter();
  constexpr int RC = 2 * D + 16;
  constexpr int CPT = D * 2 / 16;  // 16-byte chunks per token row
  const int NW = blockDim.x / 32;
  const int S = p.stages, nslot = S + 1;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4;
  const BlockCoords bc = block_coords(p);
  const CtaHeads ch = cta_heads(p, bc);
  const int kv_head = ch.kv_head, head0 = ch.head0;
  // ALiBi slopes of the lane's mma rows g, g + 8 (HN: of its columns 2 t4, 2 t4 + 1).
  const int r0 = HN ? 2 * (lane % 4) : g, r1 = HN ? r0 + 1 : g + 8;
  float slope0, slope1;
  cta_head_slopes(p, head0, r0, r1, &slope0, &slope1);

  const int stage_bytes = 2 * 16 * RC;  // K then V of 16 tokens
  const int warp_bytes = ONE ? stage_bytes : S * stage_bytes;
  const int raw_bytes = NW * warp_bytes;
  const int epi_bytes = decode_merge_bytes(D, NW);
  uint8_t *ring = smem + warp * warp_bytes;
  uint8_t *after = smem + (raw_bytes > epi_bytes ? raw_bytes : epi_bytes);
  TokenOffsets *slots = (TokenOffsets *)after + warp * nslot * 16;
  // The Q tile is staged in the (still idle) ring before each unit's pipeline starts: its
  // own 4.3 KiB would cost the sixth CTA per SM (bench/NOTES.md, v6).
  uint8_t *qs = smem;

  const int n_units = unit_count(p);
  for (int w = bc.unit0; w < n_units; w += bc.unit_stride) {
    const fi_work_unit u = p.work[w];
    if (u.request < 0) continue;
    const UnitSpan us = unit_span(p, u);
    const int q_pos = us.q_pos, lo = us.lo, hi = us.hi, page_begin = us.page_begin;
    const int num_sub = (hi - lo + 15) / 16;
    const int my_tiles = num_sub > warp ? (num_sub - warp + NW - 1) / NW : 0;

    // Page-aligned units (page size a multiple of 16, range start a multiple of 16): each
    // sub-tile lies in one page, so a warp step needs one page id (a broadcast load, one
    // step ahead) and each lane's 8 K and 8 V chunks are a fixed stride apart from one base:
    // no per-token offset slots, divisions or shared-memory reads on the copy path.
    const bool aligned = p.page_size % 16 == 0 && lo % 16 == 0;
    stage_q_tile<T, D, RC>(p, u.request, head0, q_pos, qs, nullptr, false);
    // Local tile j of this warp = global sub-tile warp + j * NW.
    if (!aligned)
      for (int j = 0; j < S; ++j)
        if (lane < 16)
          slots[j * 16 + lane] =
              warp_lookup(p, page_begin, lo, hi, kv_head, warp + j * NW, num_sub, lane);
    __syncthreads();  // Q tile and slots
    // Q as the A operand (heads as rows) or as Q^T B fragments (HN).
    uint32_t qf[HN ? 1 : D / 16][4], qb[HN ? D / 16 : 1][2];
    if constexpr (HN) {
      ldsm_qt<RC, D>(qb, qs, lane);
    } else {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) ldsm_q<RC>(qf[kk], qs, kk, lane);
    }
    __syncthreads();  // every warp holds Q before the ring is overwritten

    auto issue = [&](int j) {
      if (j < my_tiles) {
        const TokenOffsets *offs = slots + (j % nslot) * 16;
        uint8_t *kd = ring + (j % S) * stage_bytes;
        uint8_t *vd = kd + 16 * RC;
#pragma unroll
        for (int i = 0; i < 16 * CPT / 32; ++i) {
          int c = lane + 32 * i;
          int tok = c / CPT, part = c % CPT;
          cp_async_kv_chunk<KVT>(p, kd, vd, RC, offs[tok], tok, part);
        }
      }
      cp_async_commit();
    };
    auto page_of = [&](int j) {  // page id of local tile j (aligned units; 0 past the end)
      return j < my_tiles ? p.kv_indices[page_begin + (lo + (warp + j * NW) * 16) / p.page_size]
                          : 0;
    };
    // Lane chunks: tokens TPI i + lane / CPT (i < 16 / TPI) of the sub-tile, bytes
    // [16 (lane % CPT), +16) of each row (TPI = 32 / CPT tokens per warp instruction).
    constexpr int TPI = 32 / CPT;
    const long long k_step = TPI * p.k_sn * (long long)sizeof(KVT);
    const long long v_step = TPI * p.v_sn * (long long)sizeof(KVT);
    // The 16 K (or V) rows of local tile j, page `page`, into the 16-row tile at dst.
    auto copy_rows = [&](int j, int page, const uint8_t *base, int64_t sp, int64_t sn,
                         int64_t sh, long long step, uint8_t *dst) {
      if (j < my_tiles) {
        const int pos0 = lo + (warp + j * NW) * 16;
        const long long in_page = pos0 % p.page_size + lane / CPT;
        const long long row = (long long)page * sp + in_page * sn + (long long)kv_head * sh;
        const uint8_t *src = base + row * (long long)sizeof(KVT) + (lane % CPT) * 16;
        uint8_t *d = dst + (lane / CPT) * RC + (lane % CPT) * 16;
        const int valid = hi - pos0 - lane / CPT;  // this lane's tokens TPI i < valid are real
#pragma unroll
        for (int i = 0; i < 16 / TPI; ++i)
          cp_async16(d + TPI * i * RC, src + i * step, TPI * i < valid);
      }
    };
    auto issue_aligned = [&](int j, int page) {  // ring stage j % S
      uint8_t *kd = ring + (j % S) * stage_bytes;
      copy_rows(j, page, p.k, p.k_sp, p.k_sn, p.k_sh, k_step, kd);
      copy_rows(j, page, p.v, p.v_sp, p.v_sn, p.v_sh, v_step, kd + 16 * RC);
      cp_async_commit();
    };
    TokenOffsets pref = no_token();
    int next_page = 0;
    if constexpr (ONE) {
      if (!aligned) __trap();  // unreachable: the launcher runs ONE on page-aligned plans only
      const int page0 = page_of(0);
      copy_rows(0, page0, p.k, p.k_sp, p.k_sn, p.k_sh, k_step, ring);
      cp_async_commit();
      copy_rows(0, page0, p.v, p.v_sp, p.v_sn, p.v_sh, v_step, ring + 16 * RC);
      cp_async_commit();
      next_page = page_of(1);
    } else if (aligned) {
      for (int j = 0; j < S - 1; ++j) issue_aligned(j, page_of(j));
      next_page = page_of(S - 1);
    } else {
      for (int j = 0; j < S - 1; ++j) issue(j);
      pref = warp_lookup(p, page_begin, lo, hi, kv_head, warp + S * NW, num_sub, lane);
    }

    TcState<D> st;    // heads as rows
    TcnState<D> stn;  // HN
    if constexpr (HN) tcn_state_init(stn);
    else tc_state_init(st);

    if constexpr (ONE) {
      for (int it = 0; it < my_tiles; ++it) {
        // Pending copy groups at the top: K(it), V(it).
        cp_async_wait<1>();  // K(it)
        __syncwarp();
        uint32_t pb[2];
        const int tile_pos = lo + (warp + it * NW) * 16;
        tcn_scores<T, D, RC>(p, stn, qb, ring, tile_pos, hi, q_pos, slope0, slope1, lane, pb);
        __syncwarp();  // every lane has read K(it)
        copy_rows(it + 1, next_page, p.k, p.k_sp, p.k_sn, p.k_sh, k_step, ring);
        cp_async_commit();
        cp_async_wait<1>();  // V(it)
        __syncwarp();
        tcn_pv<T, D, RC>(stn, ring + 16 * RC, pb, lane);
        __syncwarp();  // every lane has read V(it)
        copy_rows(it + 1, next_page, p.v, p.v_sp, p.v_sn, p.v_sh, v_step, ring + 16 * RC);
        cp_async_commit();
        next_page = page_of(it + 2);
      }
    } else {
      for (int it = 0; it < my_tiles; ++it) {
        if (aligned) {
          cp_async_wait_dyn(S - 2);
          __syncwarp();
          issue_aligned(it + S - 1, next_page);
          next_page = page_of(it + S);
        } else {
          if (lane < 16) slots[((it + S) % nslot) * 16 + lane] = pref;
          cp_async_wait_dyn(S - 2);
          __syncwarp();
          issue(it + S - 1);
          pref = warp_lookup(p, page_begin, lo, hi, kv_head, warp + (it + S + 1) * NW, num_sub,
                             lane);
        }
        const uint8_t *kb = ring + (it % S) * stage_bytes;
        const uint8_t *vb = kb + 16 * RC;
        const int tile_pos = lo + (warp + it * NW) * 16;
        if constexpr (HN) {
          uint32_t pb[2];
          tcn_scores<T, D, RC>(p, stn, qb, kb, tile_pos, hi, q_pos, slope0, slope1, lane, pb);
          tcn_pv<T, D, RC>(stn, vb, pb, lane);
        } else {
          float s[2][4];
#pragma unroll
          for (int n = 0; n < 2; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t b[4];
            ldsm_k<RC>(b, kb, 0, kk, lane);
            mma_n16<T>(s[0], s[1], qf[kk], b);
          }
          tc_softmax_pv<T, D, RC>(p, st, s, tile_pos, hi, q_pos, slope0, slope1, vb, 0, lane);
        }
      }
    }
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (HN) tcn_merge_warps<T, D>(p, u, smem, stn, head0);
    else tc_merge_warps<T, D>(p, u, smem, st, head0);
  }
}

}  // namespace fi

#endif  // FI_CUDA_DECODE_TCW_CUH
