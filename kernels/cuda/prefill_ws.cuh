// prefill_ws.cuh -- the warp-specialised Hopper prefill kernel (sm_90a): a producer warp
// that moves every tile with the copy engine (TMA) and two consumer warpgroups that only
// compute, on persistent CTAs that run ahead into their next work unit.
//
// Work split. Grid = min(work items, SMs), one CTA of 3 warpgroups per SM; a work item is one
// (KV head, plan work unit), numbered head-major (the CTAs resident at one time work on one
// or two heads, so the K/V they stream is shared in L2; unit-major order measured up to 30 %
// slower on the many-head rows, bench/NOTES.md), the units of a head in the plan's order
// (longest first). CTA b starts with item b, then takes the next item from a counter in the
// workspace (atomicAdd; the last CTA to finish resets it), so the longest-first order holds
// across CTAs whatever each item costs. The scheduler makes the workspace one run's at a
// time (as split-KV partial rows already did). In a CUDA graph the tensor maps (kernel
// parameters) keep the tensors' extents as captured; rows, pages and work come from the
// plan in the workspace at replay. Per item the CTA walks the unit's GQA-packed query rows
// (packed row = token * group + head_in_group, as in prefill_kernel.cuh) in chunks of
// CTA_Q = 128 rows: whole tokens, or, for a group of at most 32 that does not divide 128,
// rows across tokens (PrefillParams.rows_across: each chunk of such a unit its own item; a larger
// group that does not divide 128 leaves the tile's last 128 % group rows unused) and each chunk's KV range in tiles of
// CTA_KV = 128 tokens (head_dim 256: 64; plans with wgmma 128 x 176 tiles, head_dim 128 without
// extras or with a soft cap, ALiBi or a custom mask of one run of keys per row alone: 176,
// prefill_ws_wide_kernel; causal: tiles wholly above
// the bottom-right diagonal are skipped;
// sliding window: tiles wholly left of every row's window are never loaded). Block-sparse
// attention (BSR, p.bsr_tiles) walks the unit's own list of KV tiles instead: each tile is
// two halves of 64 keys, each loaded from its own first key and kept up to its own length
// (a run of adjacent listed blocks fills both halves; the 64-key halves and the shorter
// pieces that runs leave are each paired with their kind, so a tile is never mostly
// empty), with causal and window already applied by the planner and masked here where a
// half crosses them; over a paged cache each half is loaded as TMA boxes of one page.
//   - Warp 8 (producer, PrefillWs::produce; lane 0 issues, the lanes look up page ids;
//     warps 9-11 lend their registers to the consumers, and with a variant's mask_mod help
//     it classify each chunk's tiles, WsClassify) walks the items and chunks and hands each chunk's
//     descriptor (WsChunk) to the consumers through the workspace's chunk ring, ordered by
//     the chunk's Q slot mbarrier (ws_chunk_slot); per chunk one Q tile,
//     HD / 64 boxes of (64 dims, group heads, 128 / group tokens) into one of two Q slots
//     (rows across tokens: boxes of 8 whole tokens, of 1 and of single rows, lane b box b);
//     per KV tile the K tile and the V tile (boxes of (64 dims, 1 head, 128 tokens) for the
//     ragged form, (64 dims, 1 head, BOX tokens, 1 page) for the paged one, or one box
//     over all of a tile's pages where they are consecutive page ids, WsMaps.k_run) into one of
//     STAGES ring stages, K and V each on its own `full` mbarrier (transaction bytes); V a
//     tile behind K (V_LAG_RULE, PrefillParams.v_lag: FA3's order; paged and block-sparse runs from
//     a chunk's second tile) where the consumers release V late. It waits only for a slot to be
//     released, so the next chunk's Q and first K/V tiles land while the consumers finish the
//     current chunk -- the prologue that the short units of the one-CTA-per-unit kernel paid in
//     full. With two Q slots and PrefillParams.q_ahead the next chunk's Q goes out between the
//     current chunk's tiles, as soon as the consumers have released the chunk before's slot (at its
//     last S unless its epilogue stages rows there), so that it lands under the current chunk; else
//     after the chunk's last tile.
//   - Warps 0-7 (PrefillWs::consume; two consumer warpgroups, 64 query rows each, sharing
//     every K/V tile): S = Q K^T with wgmma from shared memory, the logits transform (XF: soft cap with
//     the SFU's tanh, ALiBi), masks (range end, causal diagonal, window edge: only the
//     tiles that cross them; a custom mask: every tile of the chunk's kept-key extent (the
//     plan's, per query row: no tile outside it is loaded), its bits read as 32-bit words) and
//     online softmax in registers (the accumulator layout of prefill_kernel.cuh), O += P V
//     with P from registers, issued one tile late: at head_dim <= 128 (not the variant
//     kernels) right behind the next S and waited for with it, the two warpgroups taking
//     turns at issuing on named barriers 5 and 6 so that one's softmax runs under the
//     other's GEMMs (FA3's inter-warpgroup overlap); otherwise after the next S's wait, under
//     that tile's softmax. Each warp releases a stage's K (`k_empty`, 8 arrivals) once its S
//     has landed and its V (`v_empty`) once its P V has: where the warpgroups take turns
//     over 16-bit Q (not fp8 attention), with the next tile's K at that S's wait (with a soft
//     cap but no ALiBi, or 176-key tiles: once the row maxima, taken while P V runs, are
//     done), so that the producer (K then V of each stage in turn, unless V lags) runs a
//     whole tile ahead.
// Memory traffic: Q read once per chunk, K/V once per (chunk, KV tile) from L2/HBM (half the
// one-warpgroup kernel's, two warpgroups share each tile), O written once: a whole chunk of a
// unit's rows staged in the output buffer and stored by the copy engine (a box of o per
// warpgroup, WsMaps.o; the consumers go on to the next chunk at once; one Q slot: staged
// in the last tile's K stage (warpgroup 0) and V stage (1), which go back to the producer
// once the copy engine has read them), a unit's last partial
// chunk (or a group not dividing 64) staged in the warpgroup's own Q rows and copied out by
// its threads in 16-byte stores (one Q slot: stored from the accumulators in 4-byte
// stores, the slot holding the next Q); split-KV units write fp32 partial rows +
// LSE for the merge kernel. Rows a box reads past a unit's end (other tokens, or zeros past
// the tensor) are computed and never stored; K rows past the request's end are masked and
// V rows past it zeroed in shared memory before P V (0 x NaN would be NaN).
// The copy engine's transfers carry L2 eviction priorities (PrefillParams.l2_hints, all
// three by default): K/V tiles evicted last (the KV head's other query tiles, running on
// other SMs at about the same time, read them again), Q tiles (read once per chunk; a split
// unit's chunks each read the same Q again, measured faster so as well) and O boxes first.
//
// Scope (prefill.cu checks it and otherwise runs prefill_kernel.cuh): head_dim 64, 128 or
// 256 (KV tiles of 64 keys and one Q slot, WsShape; not block-sparse), f16/bf16 queries, a
// GQA group of at most 128, tensors the driver can map. Q, K and V come
// straight from the run's tensors (16-bit KV of q's type, paged page sizes a multiple of 16)
// or from the stage pass (prefill_stage.cu: RoPE-rotated K, fp8 K/V widened, pages of any
// size as token rows; k_staged / v_staged), which needs the context's prefill stage; with
// RoPE the consumers rotate each Q tile in shared memory as it lands (rope_q).
// XF (WsExtras) says which extras an instance compiles in: none is the plain kernel; the
// masks (window, custom mask), the soft cap, the soft cap with the masks, and all of them
// (ALiBi's runs; and BSR = true, the block-sparse one, without custom masks: an instance
// with the masks alone measured the same) are the others, so that an instance carries only
// the registers and code of the extras it runs (the one kernel with every extra ran a run
// that uses none of them at 0.82-0.95x the plain one).
#ifndef FI_CUDA_PREFILL_WS_CUH
#define FI_CUDA_PREFILL_WS_CUH

#include <cuda.h>

#include <climits>
#include <cstddef>
#include <type_traits>

#include "common.cuh"
#include "prefill_kernel.cuh"
#include "variant_hooks.cuh"

namespace fi_prefill {

// The tensor maps of one run (encoded by prefill.cu): q as (D, qo heads, tokens); k and v
// ragged as (D, kv heads, tokens) or paged as (D, kv heads, position in page, page).
struct WsMaps {
  CUtensorMap q, k, v;
  // For the chunks that pack rows across tokens (rows_across; q's boxes are then one whole
  // token): q_run, boxes of 8 whole tokens, and q_row, of one row (one head of one token).
  CUtensorMap q_run, q_row;
  // o (D, qo heads, tokens) of the output's 16-bit type with boxes of (64 dims, group heads,
  // 64 / group tokens): one warpgroup's rows, stored by the copy engine from where the
  // epilogue stages them (o_store = 1; a group dividing 64, output rows the driver maps).
  CUtensorMap o;
  // Paged k and v again with boxes of a whole KV tile over consecutive pages (64 dims, 1
  // head, page_size, CTA_KV / page_size pages): a tile whose pages are consecutive page ids
  // (a prefix stored at once, a fresh pool) is one copy per 64 dims instead of one per page
  // (kv_run_pages = CTA_KV / page_size, 0 where the page size is not a divisor of the tile).
  CUtensorMap k_run, v_run;
  int32_t kv_box_rows;  // paged: tokens per K/V box (16 .. 128, divides the page size)
  int32_t kv_run_pages;
  int32_t o_store;
};
// (maps in CUtensorMaps from k to k_run, and from v to v_run)
constexpr int kRunMapOffset = 5;
static_assert(offsetof(WsMaps, k_run) - offsetof(WsMaps, k) == kRunMapOffset * sizeof(CUtensorMap) &&
                  offsetof(WsMaps, v_run) - offsetof(WsMaps, v) == kRunMapOffset * sizeof(CUtensorMap),
              "k_run / v_run: kRunMapOffset maps past k / v");

// Q tiles that pack rows across tokens (PrefillParams.rows_across; internal.h,
// fi_prefill_rows_across): a group that does not divide 128 fills whole tokens up to 128 -
// 128 % group rows (a group of 12: 120, 6 % of every tile idle); a group of at most 32 fills
// all 128 rows instead, a chunk starting and ending inside a token (its first and last
// token's rows as single-row boxes). The planner gives such groups units of 128 / (the
// largest power of two dividing the group) tokens, so that every chunk but a request's last
// is full (planner.c, fi_prefill_rows_per_unit), and each chunk of a unit is its own work
// item (PrefillParams.unit_chunks).

// One chunk of query rows as the producer hands it to the consumers (in the workspace's
// chunk ring, ws_chunk_slot): its unit, KV head and ranges, and the number of K/V tiles it
// loads for them (a variant's EMPTY tiles are not loaded); chunk < 0 ends the walk.
struct WsChunk {
  fi_work_unit wu;
  int kv_head, q_tok_begin, kv_len, kv_page_begin, kv_tok_begin, q_pos_shift;
  int packed_end, chunk, t_lo, t_hi, kv_lo, kv_hi, num_tiles;
  // The first key the chunk keeps: kv_lo, or (fp8) past kv_lo, which is then moved back to
  // the 32-key group of the staged V^T (keys before kv_first are masked).
  int kv_first;
  // A custom mask with extents: every row of the chunk keeps one run of keys (dense), and
  // the keys every row keeps [in_lo, in_hi) (tiles inside need no masking).
  int dense, in_lo, in_hi;
};

// Whether a chunk's output rows go out as boxes of o through the copy engine (WsMaps.o):
// a whole chunk of the unit's rows, written whole (not split-KV's partial rows).
template <int CTA_Q>
__device__ __forceinline__ bool ws_store_box(const WsMaps &maps, const WsChunk &c) {
  return maps.o_store && c.wu.partial_row < 0 && c.chunk + CTA_Q <= c.packed_end;
}

// The extras compiled into an instance of the kernel (its XF, a set of these bits).
enum WsExtras : int { WS_X_MASKS = 1, WS_X_CAP = 2, WS_X_ALIBI = 4, WS_X_ALL = 7 };

// tanh on the special-function unit (max relative error 2^-11): soft-capped logits cost
// one MUFU op beside the softmax's exp2, not tanhf's dozen instructions (the softmax is
// already near the SFU's rate at head_dim 128, FA3's paper).
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 32 * WORDS bits of a custom mask from bit b0 on (one row's bits of one K/V tile): WORDS
// + 1 aligned 32-bit loads and WORDS funnel shifts instead of a byte load per pair. Only
// bytes in [lo_byte, hi_byte] (the request's own) are read: a word that crosses them is
// gathered byte by byte, the bytes outside reading as zero (their bits belong to no pair
// used).
template <int WORDS>
__device__ __forceinline__ void load_mask_bits(const uint8_t *bits, int64_t b0,
                                               int64_t lo_byte, int64_t hi_byte,
                                               uint32_t (&out)[WORDS]) {
  const int mis = (int)((uintptr_t)bits & 3);  // the mask may start off a word boundary
  const uint32_t *words = reinterpret_cast<const uint32_t *>(bits - mis);
  const int64_t a0 = b0 + 8 * mis, w0 = a0 >> 5;
  const uint32_t sh = (uint32_t)(a0 & 31);
  uint32_t w[WORDS + 1];
#pragma unroll
  for (int k = 0; k < WORDS + 1; ++k) {
    const int64_t byte0 = (w0 + k) * 4 - mis;  // relative to bits
    if (byte0 >= lo_byte && byte0 + 3 <= hi_byte) {
      w[k] = __ldg(words + w0 + k);
    } else {
      w[k] = 0;
      for (int b = 0; b < 4; ++b)
        if (byte0 + b >= lo_byte && byte0 + b <= hi_byte)
          w[k] |= (uint32_t)__ldg(bits + byte0 + b) << (8 * b);
    }
  }
#pragma unroll
  for (int k = 0; k < WORDS; ++k) out[k] = __funnelshift_r(w[k], w[k + 1], sh);
}

// LLaMA RoPE of one consumer warpgroup's 64 rows of a Q tile in place (the wgmma layout of
// tile_off), before its first S = Q K^T: row r holds packed row chunk + r, at position
// q_pos_shift + its token. Each thread takes one pair of 8-dim chunks (c, c + HD / 16) of
// ROWS consecutive rows (4 at head_dim 128, 8 at 256), and so 8 frequencies; the rows of a
// GQA group share their token, so the sines and cosines are computed once per token the
// thread meets (a quarter of them at group 4; bench/NOTES.md), and the loads, math and
// stores of up to 4 rows are unrolled side by side (8 rows' 16-byte chunks would hold 64
// registers beside head_dim 256's 128 accumulators).
// The math is the stage pass's (prefill_stage.cu), rounded to DT.
template <int HD, typename DT>
__device__ __forceinline__ void ws_rope_q(unsigned char *q_tile, int wg, int tid_wg, int chunk,
                                          int packed_end, int q_pos_shift,
                                          const PrefillParams &p) {
  constexpr int PAIRS = HD / 16, ROWS = 64 * PAIRS / 128, BATCH = ROWS < 4 ? ROWS : 4;
  DT *const q = reinterpret_cast<DT *>(q_tile);
  const int c = tid_wg % PAIRS, row0 = wg * 64 + (tid_wg / PAIRS) * ROWS;
  float freq[8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
    freq[i] = p.rope_rcp_scale * exp2f(-(2.f * (c * 8 + i) / HD) * p.rope_log2_theta);
  float sn[8], cs[8];
  // (a request with more query rows than keys has rows at negative positions: bottom-right
  // alignment)
  int last_pos = INT_MIN;
#pragma unroll
  for (int b0 = 0; b0 < ROWS; b0 += BATCH) {
    uint4 a4[BATCH], b4[BATCH];
    int pos[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; ++j) {
      const int r = row0 + b0 + j, pr = min(chunk + r, packed_end - 1);
      pos[j] = q_pos_shift + (int)p.group_div.div((uint32_t)pr);
      a4[j] = *reinterpret_cast<const uint4 *>(q + tile_off<HD, 128, true>(r, c));
      b4[j] = *reinterpret_cast<const uint4 *>(q + tile_off<HD, 128, true>(r, c + PAIRS));
    }
#pragma unroll
    for (int j = 0; j < BATCH; ++j) {
      if (pos[j] != last_pos) {
        last_pos = pos[j];
#pragma unroll
        for (int i = 0; i < 8; ++i) fi::sincos_reduced((float)pos[j] * freq[i], &sn[i], &cs[i]);
      }
      uint32_t *const a = reinterpret_cast<uint32_t *>(&a4[j]);
      uint32_t *const b = reinterpret_cast<uint32_t *>(&b4[j]);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 av = fi::unpack2<DT>(a[k]), bv = fi::unpack2<DT>(b[k]);
        const float s0 = sn[2 * k], c0 = cs[2 * k], s1 = sn[2 * k + 1], c1 = cs[2 * k + 1];
        a[k] = fi::pack2<DT>(av.x * c0 - bv.x * s0, av.y * c1 - bv.y * s1);
        b[k] = fi::pack2<DT>(bv.x * c0 + av.x * s0, bv.y * c1 + av.y * s1);
      }
      const int r = row0 + b0 + j;
      *reinterpret_cast<uint4 *>(q + tile_off<HD, 128, true>(r, c)) = a4[j];
      *reinterpret_cast<uint4 *>(q + tile_off<HD, 128, true>(r, c + PAIRS)) = b4[j];
    }
  }
}

// VARIANT with a mask_mod: what the program's mask does on the KV tiles of a chunk
// (runtime.h, fi_mask_tile). The producer skips EMPTY tiles (never loaded nor computed) and
// hands each loaded tile's first key and class to the consumers in the tile's ring stage
// (stage_info): the consumers follow the producer's walk rather than repeat it, and call
// the mask only on PARTIAL tiles.
// Lane i of a classifying warp asks about tile 32 g + i. Where the mask reads a captured
// table (fi_variant_mask_reads_tables), its classifier reads every entry its ranges cover
// (MaskTiles.cpp: a dependent round trip per 16 entries), so the producer warpgroup's four
// warps share each chunk: warp w asks about keys [32 w, 32 w + 32) of each tile, a quarter
// of a whole tile's scan. The producer warp posts the chunk (WsClassify) on mbarrier
// `posted`, the three others hand their ballots back on `done` (one phase per chunk); a
// tile is kept where some quarter is, FULL where every quarter that holds a pair is. Only
// lane 0 of each warp touches the ballots in shared memory. Other masks are classified by
// the producer warp alone, whole tiles (the hand-offs would cost more than their
// classifier). Past WS_KEPT_GROUPS * 32 tiles (a span of 128 K keys) no tile is classified:
// every one loads as PARTIAL and the mask decides per pair.
constexpr int WS_KEPT_GROUPS = 32, WS_CLASSIFY_PARTS = 4;
struct WsClassifyChunk {  // (span_tiles < 0: the producer is done)
  int request, h0, q_first, q_last, kv_lo, kv_hi, span_tiles;
};
struct WsClassify {
  uint64_t posted, done;  // mbarriers: 1 arrival (the producer's lane 0), 3 (the others')
  WsClassifyChunk chunk;
  uint32_t kept[WS_CLASSIFY_PARTS][WS_KEPT_GROUPS], full[WS_CLASSIFY_PARTS][WS_KEPT_GROUPS];
};
// The program's facts the variant kernels read from it (variant_hooks.cuh): constants once
// its hooks are inlined; none in the runtime's own instances, which never reference them.
struct WsVariantForm {
  bool mask_reads_tables, mask_causal, score_has_slope, score_is_identity;
};
template <bool VARIANT>
__device__ __forceinline__ WsVariantForm ws_variant_form() {
  if constexpr (VARIANT)
    return {fi_variant_mask_reads_tables() != 0, fi_variant_mask_causal() != 0,
            fi_variant_score_has_slope() != 0, fi_variant_score_is_identity() != 0};
  else
    return {false, false, false, false};
}
// The L2 policies of the kernel's copy-engine transfers (PrefillParams.l2_hints).
__device__ __forceinline__ uint64_t ws_kv_policy(const PrefillParams &p) {
  return p.l2_hints & FI_PREFILL_L2_KV_LAST ? fi::l2_policy<fi::L2Evict::last>()
                                            : fi::l2_policy<fi::L2Evict::normal>();
}
__device__ __forceinline__ uint64_t ws_q_policy(const PrefillParams &p) {
  return p.l2_hints & FI_PREFILL_L2_Q_FIRST ? fi::l2_policy<fi::L2Evict::first>()
                                            : fi::l2_policy<fi::L2Evict::normal>();
}
__device__ __forceinline__ uint64_t ws_o_policy(const PrefillParams &p) {
  return p.l2_hints & FI_PREFILL_L2_O_FIRST ? fi::l2_policy<fi::L2Evict::first>()
                                            : fi::l2_policy<fi::L2Evict::normal>();
}

// Whether the run is causal: the call's mask, or (a variant kernel) the causal term the
// lowering split off the program's mask_mod (fi_variant_mask_causal), which then runs as
// the built-in causal mask does: chunks end at the diagonal, one bound per row.
template <bool VARIANT>
__device__ __forceinline__ bool ws_causal(const PrefillParams &p) {
  return p.causal || ws_variant_form<VARIANT>().mask_causal;
}

// Part `part` (of `parts`) of every classified tile of chunk `ch`, as ballots in `job`
// (lane 0 writes them). Causal pairs past the chunk's last row stay out of the rectangle
// (they are masked anyway). Not inlined: one copy for the four warps, where two inlined
// copies of the program's classifier made ptxas spill twice as much in their 40 registers.
template <bool VARIANT, int CTA_KV>
__device__ __noinline__ void ws_classify_part(const PrefillParams &p, const WsClassifyChunk ch,
                                              WsClassify *job, int part, int parts, int lane) {
  if constexpr (VARIANT) {  // (the runtime's own instances never reference the hooks)
    const int width = CTA_KV / parts;
    const int groups = min((ch.span_tiles + 31) / 32, WS_KEPT_GROUPS);
    for (int g = 0; g < groups; ++g) {
      const int t = 32 * g + lane, kv0 = ch.kv_lo + t * CTA_KV + part * width;
      int kv_last = min(kv0 + width, ch.kv_hi) - 1;
      if (ws_causal<VARIANT>(p)) kv_last = min(kv_last, ch.q_last);
      const bool pairs = t < ch.span_tiles && kv_last >= kv0;
      const int cls = pairs ? fi_variant_mask_tile(ch.request, ch.h0, ch.h0 + p.group - 1,
                                                   ch.q_first, ch.q_last, kv0, kv_last,
                                                   p.variant_captures)
                            : FI_MASK_TILE_EMPTY;
      const uint32_t kept = __ballot_sync(0xffffffffu, cls != FI_MASK_TILE_EMPTY);
      const uint32_t full = __ballot_sync(0xffffffffu, !pairs || cls == FI_MASK_TILE_FULL);
      if (lane == 0) job->kept[part][g] = kept, job->full[part][g] = full;
    }
  }
}

// The key of accumulator column nb * 8 + col of a KV tile from key kv0; block-sparse: of
// the tile's half (keys 0-63 from half.x, 64-127 from half.z).
template <bool BSR, int NB_KV>
__device__ __forceinline__ int ws_key(int kv0, int4 half, int nb, int col) {
  if constexpr (BSR)
    return (nb < NB_KV / 2 ? half.x + nb * 8 : half.z + (nb - NB_KV / 2) * 8) + col;
  else
    return kv0 + nb * 8 + col;
}

// The variant hooks' arguments of pair (nb, e) of this lane's tile: x its key (ws_key), y its
// query position, z its query head (row e / 2, chosen by a select, so that a rolled loop over
// the pairs keeps the two rows in registers).
template <bool BSR, int NB_KV>
__device__ __forceinline__ int3 ws_pair(int kv0, int4 half, int nb, int e, int t4,
                                        int q_pos_shift, const int (&row_tok)[2],
                                        const int (&row_head)[2]) {
  const int r = e >> 1;
  return make_int3(ws_key<BSR, NB_KV>(kv0, half, nb, 2 * t4 + (e & 1)),
                   q_pos_shift + (r ? row_tok[1] : row_tok[0]), r ? row_head[1] : row_head[0]);
}

// The hand-off of chunk descriptors. Chunk k's descriptor goes into slot k % 2 of this
// CTA's two in the workspace's chunk ring (backend.h, FI_PLAN_HEADER_BYTES): the producer
// writes it once chunk k's Q slot is free and before its arrive on the slot's `full`
// mbarrier (release), the consumers read it after their wait on that mbarrier (acquire),
// and the producer writes the slot again (chunk k + 2) only after every consumer warp has
// released Q slot k % Q_SLOTS, which follows its read. So each consumer warpgroup starts a
// chunk as soon as its Q has landed. (A named barrier of the producer warp and both
// warpgroups per chunk, which this replaced, held all three at every chunk's start: b32
// L512 and block-sparse 98 % 7-10 % slower, bench/NOTES.md.) In global memory, not shared:
// compute-sanitizer's racecheck checks shared memory and does not follow mbarriers.
__device__ __forceinline__ WsChunk *ws_chunk_slot(const PrefillParams &p, uint32_t seq) {
  static_assert(sizeof(WsChunk) <= FI_WS_CHUNK_SLOT_BYTES, "a chunk descriptor fits its slot");
  char *const ring = reinterpret_cast<char *>(p.sched - 2) + FI_PLAN_COUNTS_BYTES;
  return reinterpret_cast<WsChunk *>(ring + ((size_t)blockIdx.x * 2 + (seq & 1)) *
                                                FI_WS_CHUNK_SLOT_BYTES);
}

// A chunk descriptor copied by the producer warp, a 4-byte word per lane (the caller's
// __syncwarp orders the lanes' words).
__device__ __forceinline__ void ws_copy_chunk(WsChunk *dst, const WsChunk *src, int lane) {
  static_assert(sizeof(WsChunk) % 4 == 0 && sizeof(WsChunk) <= 128, "a word per lane");
  if (lane < (int)(sizeof(WsChunk) / 4))
    reinterpret_cast<int *>(dst)[lane] = reinterpret_cast<const int *>(src)[lane];
}

// ES: bytes per Q/K/V element (2; fp8 1). A Q slot always holds 2-byte rows: the epilogue
// stages O there.
// head_dim 256 (Gemma's): KV tiles of 64 keys, one Q slot and no output buffer, so that Q
// (64 KB) and two ring stages of K and V (128 KB) fit. The slot is released at a chunk's
// last S (the next Q lands under the last softmax and P V), and the output rows go out
// through the last tile's K and V stages (stage_out).
// WIDE (prefill_ws_wide_kernel, for plans with wgmma 128 x 176 tiles: head_dim 128 without
// extras or with a soft cap, ALiBi or a custom mask of one run of keys per row alone (the
// plan's extents, no bits); host plans take them on long units, api.c
// choose_ws_layout): KV tiles of 176 keys,
// FA3's non-causal tile, in head_dim 256's layout (one Q slot, no output buffer, two stages
// of 44 KB each for K and V).
// Measured on H200s (bench/NOTES.md, session 43): 3.5-5 % faster than 128 keys on
// non-causal rows of 8192 and 16384 keys; 11 % slower on 512-key rows and 3 % on 2048 (the
// second Q slot lands the next chunk's Q early); with a causal mask 3 % faster on one long
// sequence, 1-15 % slower on batches of shorter ones (hence the units' length rule).
// DEEP (prefill_ws_deep_kernel, for host plans flagged FI_PLAN_FLAG_WS_DEEP: head_dim 128
// without extras, a few query tiles per request over units of at least 4096 keys and K/V
// larger than twice the L2 cache, over token rows or pages the 176-key tile does not take;
// api.c choose_ws_layout): 128-key tiles in head_dim 256's layout with three stages instead
// of two, so that a tile streamed from DRAM has two tiles' time to land (the shared prefix's
// consumers waited on K's `full` barrier for 16 % of their samples, session 43). The same
// arithmetic in the same order as the two-slot layout: the same numbers, bit for bit.
// Measured (bench/NOTES.md): that prefix 12 % faster than 176 keys on an H200 (session 45);
// on H100s since the 176-key tile's new order, 5 % slower over its pages of 16 and 5-8 %
// faster over token rows (session 71); rows whose K/V is re-read from L2 the same or
// slower, units of 512 keys 2-6 % slower.
template <int HD, int ES = 2, bool WIDE = false, bool DEEP = false>
struct WsShape {
  static constexpr bool ONE_SLOT = HD > 128 || WIDE || DEEP;
  static constexpr int CTA_Q = 128, CTA_KV = WIDE ? 176 : HD > 128 ? 64 : 128;
  static constexpr int CONSUMER_WARPS = 8, THREADS = 32 * (CONSUMER_WARPS + 4);
  static constexpr int Q_BYTES = CTA_Q * HD * 2, KV_BYTES = CTA_KV * HD * ES;
  // Q tiles in flight.
  static constexpr int Q_SLOTS = ONE_SLOT ? 1 : 2;
  // As many ring stages as fit next to the Q slots (head_dim 256 and 128: 2, 64: 4).
  static constexpr int STAGES = WIDE ? 2 : DEEP ? 3
                                : (200 * 1024 - Q_SLOTS * Q_BYTES) / (2 * KV_BYTES) > 4
                                    ? 4
                                    : (200 * 1024 - Q_SLOTS * Q_BYTES) / (2 * KV_BYTES);
  // The output rows of a chunk staged for the copy engine's stores (WsMaps.o_store): their
  // own buffer, so that neither a Q slot nor the next chunk waits for the stores to read it
  // (head_dim 256: none, the last tile's stages instead).
  static constexpr int O_BYTES = ONE_SLOT ? 0 : CTA_Q * HD * 2;
  static constexpr int BARRIERS = 2 * Q_SLOTS + 4 * STAGES;
  // Where the producer's lanes keep the lagging V's source (PrefillWs::produce): a TileSrc
  // per lane, field-major (a struct per lane, lag_src[lane] = src, raised the instances'
  // spills: plain 84 / 76 -> 92 / 112 bytes of stores / loads).
  static constexpr int LAG_SRC_BYTES = 4 * 32 * sizeof(int);
  // After the barriers: per ring stage, the first key and mask class of the tile in it,
  // the chunk the producer warpgroup classifies (VARIANT with a mask_mod: the producer's
  // walk skips tiles, see WsClassify), two chunks of the producer's walk and the lagging
  // V's source.
  static constexpr int SMEM = Q_SLOTS * Q_BYTES + STAGES * 2 * KV_BYTES + O_BYTES +
                              BARRIERS * 8 + STAGES * sizeof(int2) +
                              sizeof(WsClassify) + 2 * sizeof(WsChunk) + LAG_SRC_BYTES;
  static_assert(SMEM <= 227 * 1024, "a layout fits a Hopper block's shared memory");
};

// The kernel: its compile-time shape, the two roles (produce: warp 8 walks the work and
// moves every tile with the copy engine; consume: warps 0-7 compute, see the header) and
// run, which carves shared memory, initialises the barriers and hands each warp its role.
// Shared by prefill_ws_kernel (nvcc, the runtime's own instances) and the variant kernels
// (variant_kernels.cu: VARIANT = true, built by clang as LLVM bitcode and linked at compile
// time with a program's score_mod / mask_mod, variant_hooks.cuh).
// FP8: Q, K and V in e4m3 on fp8 wgmma (DT is then the output's type), V^T staged by
// prefill_stage.cu with each 32-key group in pack_p_e4m3's order; KV tiles of 128 keys
// (FlashInfer's 192 measured the same on long rows and 3-15 % slower on short, causal-cut
// ones: the per-logit work bounds fp8, not the per-tile costs; bench/NOTES.md, session 72).
template <int HD, typename DT, int XF, bool BSR, bool VARIANT, bool FP8 = false,
          bool WIDE = false, bool DEEP = false>
struct PrefillWs {
  static constexpr bool EXTRAS = XF != 0, X_MASKS = (XF & WS_X_MASKS) != 0,
                        X_CAP = (XF & WS_X_CAP) != 0, X_ALIBI = (XF & WS_X_ALIBI) != 0;
  static_assert(!VARIANT || XF == (BSR ? WS_X_MASKS : 0),
                "variants run in the kernel without the built-in extras (block-sparse: with "
                "the masks, which hold its halves' bounds)");
  static_assert(!BSR || XF == WS_X_ALL || (VARIANT && XF == WS_X_MASKS),
                "block-sparse runs the instance with every extra");
  static_assert(!FP8 || (HD == 128 && !BSR && !VARIANT),
                "fp8 runs head_dim 128, not block-sparse or variants");
  static_assert(!WIDE || (HD == 128 &&
                          (XF == 0 || XF == WS_X_CAP || XF == WS_X_ALIBI || XF == WS_X_MASKS) &&
                          !BSR && !VARIANT && !FP8),
                "wide tiles run head_dim 128 without extras or with a soft cap, ALiBi or the "
                "masks alone");
  static_assert(HD <= 128 || (HD == 256 && !BSR && !VARIANT),
                "head_dim 256 runs the built-in extras, not block-sparse tiles or variants");
  static constexpr int ES = FP8 ? 1 : 2;  // bytes per Q/K/V element
  using MT = std::conditional_t<FP8, fi_wgmma::e4m3, DT>;  // the wgmma operand type
  using W = WsShape<HD, ES, WIDE, DEEP>;
  static constexpr int CTA_Q = W::CTA_Q, CTA_KV = W::CTA_KV, STAGES = W::STAGES;
  // The consumers' order (consume says why): TURNS, the warpgroups take turns issuing their
  // GEMMs; RELEASE_V, V(tile-1)'s stage goes back with K(tile)'s; MAX_FIRST, S waited for
  // alone, the row maxima under P V, then V(tile)'s wait.
  static constexpr bool TURNS = !VARIANT && HD <= 128, RELEASE_V = TURNS && !FP8,
                        MAX_FIRST = RELEASE_V && ((X_CAP && !X_ALIBI) || WIDE);
  // The instances whose producer lags V a tile behind K (PrefillParams.v_lag; produce):
  // those whose consumers release V(tile) or wait for it at the end of the tile's softmax,
  // 1-3 % faster with the lag on an H100 (the 128-key plain, mask and fp8 attention rows;
  // head_dim 256 ~4 %); not MAX_FIRST's, which wait for V(tile) right after the row maxima
  // (0-2 % slower with it), nor the deep ring's (the shared prefix's prefix 5 % slower),
  // nor the variant kernels (not measured). Elsewhere the lag is compiled out; paged and
  // block-sparse runs lag from a chunk's second tile by default (prefill.cu).
  // (bench/NOTES.md, sessions 67, 69 and 70)
  static constexpr bool V_LAG_RULE = !VARIANT && !MAX_FIRST && !DEEP && STAGES >= 2;
  static constexpr int NB_KV = CTA_KV / 8, NB_D = HD / 8, CH = HD / 8;
  // Where a paged range that a window or a mask's extents cut may start: on a tile boundary
  // (128 keys: whole boxes of any page size up to 128), or for 176-key tiles, whose boxes are
  // 16 keys (176's largest power-of-two divisor; pages a multiple of 16, others staged as
  // token rows), on a box boundary: each box stays inside one page.
  static constexpr int PAGED_ALIGN = WIDE ? ~15 : ~(CTA_KV - 1);
  static constexpr int SLAB = 128 / ES;        // elements per 128-byte swizzled row
  static constexpr int KB = CTA_KV * ES / 32;  // P V steps per tile (16 keys; fp8 32)
  // V's descriptors: 16 key rows of V per step, MN-major (LBO the next 64 head dims); fp8: 32
  // key bytes along V^T's rows per step, K-major (LBO unused).
  static constexpr uint32_t V_STEP = FP8 ? 32 : 16 * 128, V_LBO = FP8 ? 16 : CTA_KV * 128;
  // fp8: P is kept as P * 2^8 (e4m3 has 3 bits of mantissa and normals from 2^-6: scaled,
  // the softmax's small probabilities keep their bits; the largest, 2^8 times the slack's
  // 2^0.75 below, stays under e4m3's 448).
  static constexpr float P_LOG2 = FP8 ? 8.f : 0.f;
  // The softmax's lazy-rescale slack (log2, online_softmax_row): P up to 2^8 in 16 bits
  // (O is rescaled only where a row's max grows past that); fp8's P * 2^8 up to 2^8.75 =
  // 431, below e4m3's largest (448).
  static constexpr float SLACK = FP8 ? 0.75f : SOFTMAX_SLACK_16BIT;

  // Shared memory (WsShape's layout): the Q slots, the K/V ring, the output buffer, the
  // barriers, the ring stages' mask classes, the classifiers' job and the producer's walk.
  struct Smem {
    unsigned char *q_slots, *kv_ring;  // ring stage s: K then V
    DT *o_rows;
    uint64_t *q_full, *q_empty, *k_full, *v_full, *k_empty, *v_empty;
    int2 *stage_info;  // per ring stage
    WsClassify *job;
    // the producer's own: [1] the walk's last chunk, [0] the one whose tiles go out
    WsChunk *walk;
    int *lag_src;  // the producer's own: the lagging V's source (produce)
  };

  static __device__ __forceinline__ void run(const PrefillParams &p, const WsMaps &maps) {
    fi::pdl_enter();
#if FI_WGMMA_AVAILABLE
    extern __shared__ __align__(1024) unsigned char ws_smem[];
    Smem sm;
    sm.q_slots = ws_smem;
    sm.kv_ring = ws_smem + W::Q_SLOTS * W::Q_BYTES;
    sm.o_rows = reinterpret_cast<DT *>(sm.kv_ring + STAGES * 2 * W::KV_BYTES);
    uint64_t *const bars = reinterpret_cast<uint64_t *>(sm.kv_ring + STAGES * 2 * W::KV_BYTES +
                                                        W::O_BYTES);
    sm.q_full = bars, sm.q_empty = bars + W::Q_SLOTS;
    sm.k_full = bars + 2 * W::Q_SLOTS, sm.v_full = sm.k_full + STAGES;
    sm.k_empty = sm.v_full + STAGES, sm.v_empty = sm.k_empty + STAGES;
    sm.stage_info = reinterpret_cast<int2 *>(sm.v_empty + STAGES);
    sm.job = reinterpret_cast<WsClassify *>(sm.stage_info + STAGES);
    sm.walk = reinterpret_cast<WsChunk *>(sm.job + 1);
    sm.lag_src = reinterpret_cast<int *>(sm.walk + 2);

    const int tid = threadIdx.x, lane = tid & 31;
    const int warp = fi::warp_index();  // (uniform: the wgmma descriptors in uniform registers)
    // GQA-packed rows of a chunk: CTA_Q (rows_across), or the whole tokens that fit (a
    // larger group that does not divide CTA_Q leaves the tile's last rows computed but never
    // stored).
    const bool rows_across = p.rows_across != 0;
    const int chunk_rows = rows_across ? CTA_Q : CTA_Q - CTA_Q % p.group;
    if (tid == 0) {
      for (int i = 0; i < W::Q_SLOTS; ++i) {
        fi::mbar_init(&sm.q_full[i], 1);                   // the producer's arrive.expect_tx
        fi::mbar_init(&sm.q_empty[i], W::CONSUMER_WARPS);  // lane 0 of every consumer warp
      }
      for (int i = 0; i < STAGES; ++i) {
        fi::mbar_init(&sm.k_full[i], 1);
        fi::mbar_init(&sm.v_full[i], 1);
        fi::mbar_init(&sm.k_empty[i], W::CONSUMER_WARPS);  // after S = Q K^T
        fi::mbar_init(&sm.v_empty[i], W::CONSUMER_WARPS);  // after O += P V
      }
      fi::mbar_init(&sm.job->posted, 1);
      fi::mbar_init(&sm.job->done, WS_CLASSIFY_PARTS - 1);
      fi::mbar_init_fence();
    }
    __syncthreads();  // the only block barrier: the roles never meet again

    // Registers: the producer warpgroup gives most of its share to the consumers (FA3's
    // split; 40 x 128 + 232 x 256 = 168 x 384, all of the register file; 24 / 240 made
    // ptxas spill more at head_dim 256).
    if (warp >= W::CONSUMER_WARPS) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      produce(p, maps, sm, warp, lane, chunk_rows, rows_across);
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    consume(p, maps, sm, tid, warp, lane, chunk_rows);
#else
    __trap();  // launched only on sm_90a builds (prefill.cu)
#endif
  }

  // Warp 8 (and warps 9-11, which lend their registers and with a variant's mask help
  // classify): the walk over items and chunks, the chunk ring, and every Q, K and V copy.
  static __device__ __forceinline__ void produce(const PrefillParams &p, const WsMaps &maps,
                                                 const Smem &sm, int warp, int lane,
                                                 int chunk_rows, bool rows_across) {
    unsigned char *const q_slots = sm.q_slots, *const kv_ring = sm.kv_ring;
    uint64_t *const q_full = sm.q_full, *const q_empty = sm.q_empty;
    uint64_t *const k_full = sm.k_full, *const v_full = sm.v_full;
    uint64_t *const k_empty = sm.k_empty, *const v_empty = sm.v_empty;
    int2 *const stage_info = sm.stage_info;
    WsClassify *const job = sm.job;
    WsChunk *const walk = sm.walk;
    int *const lag_src = sm.lag_src;
    // (block-sparse: the plan's tiles are the blocks; every one loads, PARTIAL)
    const bool classify = VARIANT && !BSR && p.variant_mask;
    // (the four warps share the classifying where the mask reads tables, WsClassify)
    const int parts =
        classify && ws_variant_form<VARIANT>().mask_reads_tables ? WS_CLASSIFY_PARTS : 1;
    if (warp != W::CONSUMER_WARPS) {  // warps 9-11 lend their registers, and classify
      if constexpr (VARIANT && !BSR)
        for (uint32_t round = 0; parts > 1; ++round) {
          fi::mbar_wait(&job->posted, round & 1);
          const WsClassifyChunk ch = job->chunk;
          if (ch.span_tiles < 0) break;  // (the producer is done)
          ws_classify_part<VARIANT, CTA_KV>(p, ch, job, warp - W::CONSUMER_WARPS, parts, lane);
          __syncwarp();
          if (lane == 0) fi::mbar_arrive(&job->done);
        }
      return;
    }
    // The producer walks the work: items from the scheduler (see the header), each
    // item's chunks in order, one descriptor per chunk in the chunk ring (ws_chunk_slot).
    const int kvh = p.num_kv_heads;
    const int q_bytes = chunk_rows * HD * ES;
    const int num_units = *p.device_num_units;
    // (a unit's chunks as their own items where its rows pack across tokens: unit_chunks)
    const int uc = p.unit_chunks > 1 ? p.unit_chunks : 1;
    const int num_items = num_units * kvh * uc;
    // the plan's lead units go first for every head, then the rest (planner.c lead_units)
    const int lead = min(max(p.device_num_units[9], 0), num_units);
    const int lead_items = lead * uc * kvh, rest_items = (num_units - lead) * uc;
    uint32_t q_seq = 0, kv_seq = 0, cls_round = 0;
    // The tiles over keys [lo, hi).
    auto tiles_over = [](int lo, int hi) { return hi > lo ? (hi - lo + CTA_KV - 1) / CTA_KV : 0; };
    // A variant's mask: which of a range's span tiles the classifiers kept (bit i of `kept` /
    // `full` for tile 32 g + i, WsClassify).
    auto group_bits = [&](int g, int span_tiles, uint32_t &kept, uint32_t &full) {
      if (g < WS_KEPT_GROUPS) {
        kept = 0, full = ~0u;
        if (lane == 0)
  #pragma unroll
          for (int w = 0; w < WS_CLASSIFY_PARTS; ++w)
            if (w < parts) kept |= job->kept[w][g], full &= job->full[w][g];
        kept = __shfl_sync(0xffffffffu, kept, 0), full = __shfl_sync(0xffffffffu, full, 0);
      } else {  // (no classifier call past WS_KEPT_GROUPS)
        const int rest = span_tiles - 32 * g;
        kept = rest >= 32 ? 0xffffffffu : (1u << rest) - 1u, full = 0;
      }
    };
    // The walk's state: the last chunk generated (`walk`, in shared memory: the producer's
    // 40 registers hold the current chunk's fields while the next one is generated), whether
    // its item has more chunks, and (lane 0) the scheduler's answer for the item after it.
    bool in_item = false;
    int next_item = blockIdx.x;
    // The walk's next chunk: its descriptor (into `walk` and the chunk ring) and its Q, into
    // the next Q slot once that is free; past the last item, the end: a descriptor without
    // a chunk (its Q slot's `full` phase completed by a plain arrive). Whether there was one.
    auto advance = [&]() -> bool {
      const int group = p.group;
      // (built in place: every lane writes each field once, the same value, so that no
      // lane's write can overtake another's, and the producer's registers need not hold
      // the descriptor whole)
      WsChunk &c = walk[1];
      int chunk;
      for (;;) {
        if (in_item) {  // the item's next chunk (a unit's chunks as items, unit_chunks: one)
          chunk = c.chunk + chunk_rows;
          if (uc == 1 && chunk < c.packed_end) break;
          in_item = false;
        }
        const int item = __shfl_sync(0xffffffffu, next_item, 0);
        if (item >= num_items) {
          if (lane == 0) {
            const uint32_t qs = q_seq % W::Q_SLOTS, q_par = (q_seq / W::Q_SLOTS) & 1;
            fi::mbar_wait(&q_empty[qs], q_par ^ 1);
            ws_chunk_slot(p, q_seq)->chunk = -1;
            fi::mbar_arrive(&q_full[qs]);
          }
          return false;
        }
        // lane 0 asks for the item after this one now; the answer is needed at its end
        if (lane == 0) next_item = atomicAdd(p.sched, 1) + (int)gridDim.x;
        // head-major: resident CTAs share one head's K/V in L2; then unit, then chunk (the
        // lead units of every head first)
        int kv_head, unit_item;
        if (item < lead_items) {
          kv_head = item / (lead * uc);
          unit_item = item - kv_head * lead * uc;
        } else {
          kv_head = (item - lead_items) / rest_items;
          unit_item = lead * uc + (item - lead_items) - kv_head * rest_items;
        }
        const int unit = unit_item / uc, unit_chunk = unit_item - unit * uc;
        const fi_work_unit wu = p.work[unit];
        const int req = wu.request, q_tok_begin = p.qo_indptr[req];
        const int qo_len = p.qo_indptr[req + 1] - q_tok_begin;
        int kv_page_begin = 0, kv_tok_begin = 0, kv_len;
        if (p.paged) {
          kv_page_begin = p.kv_indptr[req];
          const int pages = p.kv_indptr[req + 1] - kv_page_begin;
          kv_len = pages > 0 ? (pages - 1) * p.page_size + p.kv_last_page_len[req] : 0;
        } else {
          kv_tok_begin = p.kv_indptr[req];
          kv_len = p.kv_indptr[req + 1] - kv_tok_begin;
        }
        const int packed_end = (wu.qo_start + wu.qo_len) * group;
        __syncwarp();  // (every lane has read the last chunk's fields)
        c.wu = wu;
        c.kv_head = kv_head;
        c.q_tok_begin = q_tok_begin;
        c.kv_page_begin = kv_page_begin;
        c.kv_tok_begin = kv_tok_begin;
        c.kv_len = kv_len;
        c.q_pos_shift = kv_len - qo_len;  // bottom-right alignment
        c.packed_end = packed_end;
        chunk = wu.qo_start * group + unit_chunk * chunk_rows;
        if (chunk < packed_end) {
          in_item = true;
          break;
        }
      }
      __syncwarp();  // (every lane has read the last chunk's first row)
      c.chunk = chunk;
      const int last_pr = min(chunk + chunk_rows, c.packed_end) - 1;
      const int t_lo = (int)p.group_div.div((uint32_t)chunk);
      const int t_hi = (int)p.group_div.div((uint32_t)last_pr);
      c.t_lo = t_lo;
      c.t_hi = t_hi;
      int kv_lo = c.wu.kv_start, kv_hi = c.wu.kv_end, num_tiles, dense = 0, in_lo = 0, in_hi = 0;
      if (BSR) {  // block-sparse: kv_lo .. kv_hi index the plan's tiles
        c.kv_first = kv_lo;
        num_tiles = kv_hi - kv_lo;
      } else {
        const int q_pos_shift = c.q_pos_shift;
        if (ws_causal<VARIANT>(p)) kv_hi = min(kv_hi, q_pos_shift + t_hi + 1);
        // Sliding window: tiles wholly left of every row's window are never loaded (paged:
        // the range starts on a tile boundary, so each box stays inside one page).
        if (X_MASKS && p.window_left >= 0) {
          int lo = q_pos_shift + t_lo - p.window_left;
          if (p.paged) lo &= PAGED_ALIGN;
          kv_lo = max(kv_lo, lo);
        }
        // A custom mask: only the keys some row of the chunk keeps (the plan's extents of
        // its rows, reduced over the warp; the start on a tile boundary as above).
        if (X_MASKS && !BSR && p.mask_extent) {
          int lo = INT_MAX, hi = 0;
          in_lo = 0, in_hi = INT_MAX, dense = 1;
          for (int t = t_lo + lane; t <= t_hi; t += 32) {
            const int2 e = reinterpret_cast<const int2 *>(p.mask_extent)[c.q_tok_begin + t];
            const int e_hi = e.y < 0 ? -e.y : e.y;  // negative: the run has holes
            dense &= e.y >= 0;
            lo = min(lo, e.x);
            hi = max(hi, e_hi);
            in_lo = max(in_lo, e.x);
            in_hi = min(in_hi, e_hi);
          }
          for (int off = 16; off > 0; off >>= 1) {
            lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, off));
            hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, off));
            in_lo = max(in_lo, __shfl_xor_sync(0xffffffffu, in_lo, off));
            in_hi = min(in_hi, __shfl_xor_sync(0xffffffffu, in_hi, off));
            dense &= __shfl_xor_sync(0xffffffffu, dense, off);
          }
          if (lo < hi) {
            if (p.paged) lo &= PAGED_ALIGN;
            kv_lo = max(kv_lo, lo);
            kv_hi = min(kv_hi, hi);
          } else {
            kv_hi = kv_lo;  // no row of the chunk keeps a key: no tile
          }
        }
        c.kv_first = kv_lo;
        // fp8: tiles start on a 32-key group of the staged rows (V^T's key order is
        // permuted within those groups); the keys before kv_first are masked.
        if (FP8 && kv_hi > kv_lo)
          kv_lo -= ((p.paged ? c.kv_page_begin * p.page_size : c.kv_tok_begin) + kv_lo) & 31;
        num_tiles = tiles_over(kv_lo, kv_hi);
      }
      c.kv_lo = kv_lo;
      c.kv_hi = kv_hi;
      c.dense = dense;
      c.in_lo = in_lo;
      c.in_hi = in_hi;
      const int span_tiles = num_tiles;
      if (classify && span_tiles > 0) {
        const WsClassifyChunk ch = {c.wu.request, c.kv_head * group, c.q_pos_shift + t_lo,
                                    c.q_pos_shift + t_hi, kv_lo, kv_hi, span_tiles};
        if (parts > 1 && lane == 0) {
          job->chunk = ch;
          fi::mbar_arrive(&job->posted);
        }
        ws_classify_part<VARIANT, CTA_KV>(p, ch, job, 0, parts, lane);
        if (parts > 1) fi::mbar_wait(&job->done, cls_round++ & 1);
        int loads = 0;
        for (int g = 0; 32 * g < span_tiles; ++g) {
          uint32_t kept, full;
          group_bits(g, span_tiles, kept, full);
          loads += __popc(kept);
        }
        num_tiles = loads;
      }
      c.num_tiles = num_tiles;
      // The descriptor (the lanes copy it into the chunk ring once Q slot qs is free), and Q.
      __syncwarp();
      const uint32_t seq = q_seq, qs = q_seq % W::Q_SLOTS, q_par = (q_seq / W::Q_SLOTS) & 1;
      ++q_seq;
      const int kv_head = c.kv_head;
      unsigned char *const q_tile = q_slots + qs * W::Q_BYTES;
      if (lane == 0) fi::mbar_wait(&q_empty[qs], q_par ^ 1);  // (a fresh slot passes at once)
      __syncwarp();
      ws_copy_chunk(ws_chunk_slot(p, seq), &walk[1], lane);
      __syncwarp();  // (lane 0's arrive below releases every lane's word)
      if (lane == 0) {
        fi::mbar_arrive_expect_tx(&q_full[qs], q_bytes);
        if (!rows_across)
  #pragma unroll
          for (int h = 0; h < HD / SLAB; ++h)
            fi::tma_load_3d(q_tile + h * (CTA_Q * 128), &maps.q, SLAB * h, kv_head * group,
                            c.q_tok_begin + c.t_lo, &q_full[qs], ws_q_policy(p));
      }
      if (rows_across) {  // CTA_Q rows from head h0 of token t_lo: box b by lane b % 32
        __syncwarp();     // (the bytes expected before any box lands)
        const int h0 = c.chunk - c.t_lo * group;
        const int first = h0 > 0 ? group - h0 : 0;  // rows of the first, partial token
        const int whole = (CTA_Q - first) / group, last = CTA_Q - first - whole * group;
        const int runs = whole / 8, singles = whole % 8;  // whole tokens: 8 per box, then 1
        const int t1 = c.t_lo + (h0 > 0);  // the first whole token
        for (int b = lane; b < first + runs + singles + last; b += 32) {
          int row, head = 0, tok;
          const CUtensorMap *map = &maps.q_row;
          if (b < first) {
            row = b, head = h0 + b, tok = c.t_lo;
          } else if (b < first + runs) {
            tok = t1 + 8 * (b - first), row = first + (tok - t1) * group;
            map = &maps.q_run;
          } else if (b < first + runs + singles) {
            tok = t1 + 8 * runs + (b - first - runs), row = first + (tok - t1) * group;
            map = &maps.q;
          } else {
            row = first + whole * group + (b - first - runs - singles);
            head = b - first - runs - singles, tok = t1 + whole;
          }
          // (a row lands at its own place of the slot: the swizzle follows the address)
  #pragma unroll
          for (int h = 0; h < HD / SLAB; ++h)
            fi::tma_load_3d(q_tile + h * (CTA_Q * 128) + row * 128, map, SLAB * h,
                            kv_head * group + head, c.q_tok_begin + tok, &q_full[qs],
                            ws_q_policy(p));
        }
      }
      __syncwarp();  // (`walk` written before any lane reads it)
      return true;
    };
    // Each chunk's K and V tiles as ring stages free up. With two Q slots and p.q_ahead
    // (and tiles not classified, whose bits the next chunk's classifying would overwrite)
    // the next chunk's descriptor and Q go out after the first of the chunk's tiles by
    // which the chunk before has released its slot, so that they land under this chunk (a
    // chunk of few tiles, as block-sparse rows and short units have, waited for its Q,
    // bench/NOTES.md session 50); else, and with one Q slot (released at this chunk's last
    // S), after the chunk's last tile.
    const bool q_ahead = W::Q_SLOTS > 1 && !classify && p.q_ahead;
    bool more = advance();
    while (more) {
      // The chunk's fields its tiles need, read from shared memory at each use rather than
      // held in the producer's 40 registers across the next chunk's walk (advance).
      __syncwarp();  // (every lane is done with the last chunk's fields)
      ws_copy_chunk(&walk[0], &walk[1], lane);
      __syncwarp();
      const volatile WsChunk &c = walk[0];
      // (classify: the range's tiles; c.num_tiles counts the kept ones)
      const int span_tiles = !classify ? c.num_tiles : tiles_over(c.kv_lo, c.kv_hi);
      // Tile `tile` of the range into the next ring stage (cls: its mask class, for the
      // consumers).
      // Where tile `tile`'s keys are. Block-sparse: the first keys of its two halves.
      // Paged: lane b copies box b (BOX tokens of one page; block-sparse: box b % (64 /
      // BOX) of half b / (64 / BOX), BOX <= 64 and halves starting on boxes by the plan's
      // rule); boxes past the request's last page read its last page again (rows past
      // kv_len or a half's kept keys: masked, and V zeroed; a second half that keeps
      // nothing is not loaded at all: masked, and P V skips it).
      const int box = maps.kv_box_rows, boxes = CTA_KV / box;
      const bool page_boxes = p.paged && !(p.k_staged && p.v_staged);
      // (block-sparse: a second half that keeps nothing has its key's sign bit set and
      // is not loaded -- the consumers skip its P V steps -- keys being < 2^31; a field
      // of its own cost the producer's 40 registers a spill per tile)
      struct TileSrc {
        int half_key[2], page, in_page;
      };
      auto lookup = [&](int tile) {
        TileSrc t = {{0, 0}, 0, 0};
        if (BSR) {
          const int32_t *const bt = p.bsr_tiles + 4 * (c.kv_lo + tile);
          t.half_key[0] = bt[0];
          t.half_key[1] = p.bsr_half_skip && bt[3] == 0 ? bt[2] | INT_MIN : bt[2];
        }
        if (page_boxes && lane < boxes) {
          const int j = BSR ? (t.half_key[lane / (64 / box)] & INT_MAX) + lane % (64 / box) * box
                            : c.kv_lo + tile * CTA_KV + lane * box;
          const int pg = (int)p.page_div.div((uint32_t)j);
          t.page = p.kv_indices[c.kv_page_begin + min(pg, (c.kv_len - 1) / p.page_size)];
          t.in_page = j - pg * p.page_size;
        }
        return t;
      };
      // Looked up one tile ahead (after the previous tile's copies): the loads' latency
      // then runs under the wait for the next free stage instead of after it.
      int ahead_tile = -1;
      TileSrc ahead = {{0, 0}, 0, 0};
      // One part of tile `tile` (0: K, 1: V) into ring stage seq % STAGES (cls: the tile's
      // mask class, for the consumers; src: where its keys are).
      auto issue_part = [&](int part, uint32_t seq, int tile, int cls, const TileSrc &src) {
        const uint32_t st = seq % STAGES, par = (seq / STAGES) & 1;
        const int kv0 = c.kv_lo + tile * CTA_KV;
        const bool one_half = BSR && src.half_key[1] < 0;
        // Token rows (ragged, or staged): the request's first row.
        const int row0 = p.paged ? c.kv_page_begin * p.page_size : c.kv_tok_begin;
        // A tile of consecutive pages goes as one box over them (checked once the stage is
        // free, so that the page ids' loads stay under that wait; pages past the request's
        // last read it again, so a tile reaching past its end is never a run and a run box
        // reads only the request's pages; checked per part: carrying K's answer over to V
        // cost the producer spills).
        int issuers = boxes;  // (paged: lanes issuing a box each; a run: lane 0 alone)
        uint64_t *const full = part == 0 ? &k_full[st] : &v_full[st];
        unsigned char *const dst = kv_ring + st * 2 * W::KV_BYTES + part * W::KV_BYTES;
        if (lane == 0) {
          fi::mbar_wait(part == 0 ? &k_empty[st] : &v_empty[st], par ^ 1);
          // (the consumers read it once K has landed, before they release the stage)
          if (classify && part == 0) stage_info[st] = make_int2(kv0, cls);
          fi::mbar_arrive_expect_tx(full, one_half ? W::KV_BYTES / 2 : W::KV_BYTES);
        }
        __syncwarp();  // the expected bytes are set before any lane's copy lands
        // (the boxes' lanes: page - lane all equal, each box at its page's start)
        if (!BSR && page_boxes && maps.kv_run_pages == boxes && lane < boxes) {
          int all_equal = 0;
          __match_all_sync((1u << boxes) - 1u,
                           src.in_page == 0 ? src.page - lane : INT_MIN + lane, &all_equal);
          if (all_equal) issuers = 1;
        }
        // (k_run and v_run lie as far past k and v: kRunMapOffset)
        const CUtensorMap *const map =
            (part == 0 ? &maps.k : &maps.v) + (issuers < boxes ? kRunMapOffset : 0);
        const bool staged = part == 0 ? p.k_staged : p.v_staged;
        if (BSR && (!p.paged || staged)) {  // lane h copies half h (64 token rows)
          if (lane < (one_half ? 1 : 2))
  #pragma unroll
            for (int h = 0; h < HD / 64; ++h)
              fi::tma_load_3d(dst + h * (CTA_KV * 128) + lane * 64 * 128, map, 64 * h,
                              c.kv_head, row0 + src.half_key[lane], full, ws_kv_policy(p));
        } else if (!p.paged || staged) {  // token rows (ragged, or staged)
          if (lane == 0 && FP8 && part == 1)  // V^T: (keys, head dims, kv heads) boxes
            fi::tma_load_3d(dst, map, row0 + kv0, 0, c.kv_head, full, ws_kv_policy(p));
          else if (lane == 0)
  #pragma unroll
            for (int h = 0; h < HD / SLAB; ++h)
              fi::tma_load_3d(dst + h * (CTA_KV * 128), map, SLAB * h, c.kv_head, row0 + kv0,
                              full, ws_kv_policy(p));
        } else if (lane < issuers && !(one_half && lane >= boxes / 2)) {
          // a box per page, or (a run) one box over all (block-sparse: half 0's alone
          // where half 1 keeps nothing)
  #pragma unroll
          for (int h = 0; h < HD / 64; ++h)
            fi::tma_load_4d(dst + h * (CTA_KV * 128) + lane * box * 128, map, 64 * h,
                            c.kv_head, src.in_page, src.page, full, ws_kv_policy(p));
        }
      };
      // V lag (V_LAG_RULE and p.v_lag, FA3's producer order): V(tile) goes out after
      // K(tile + 1), so that a V stage released late (after the consumers' softmax) never
      // holds back the next K; the chunk's last V before the next chunk's first K (with
      // q_ahead its Q may go out between the tiles, ahead of a lagging V). Else K, then V,
      // of each tile. (flush_v's seq: the lagging V's ring position. Its source -- pages,
      // block-sparse halves -- is K's, kept by each lane in shared memory: held in the
      // producer's 40 registers it spilled, and looked up again its dependent loads held
      // the producer back, 3-15 % on paged and block-sparse runs.)
      const bool v_lag = V_LAG_RULE && p.v_lag != 0;
      int lag_tile = -1;
      // This lane's share of the lagging V's source, field-major (WsShape::LAG_SRC_BYTES).
      auto keep_lag_src = [&](const TileSrc &src) {
        lag_src[lane] = src.page, lag_src[32 + lane] = src.in_page;
        if (BSR) lag_src[64 + lane] = src.half_key[0], lag_src[96 + lane] = src.half_key[1];
      };
      auto kept_lag_src = [&]() {
        return TileSrc{{BSR ? lag_src[64 + lane] : 0, BSR ? lag_src[96 + lane] : 0},
                       lag_src[lane], lag_src[32 + lane]};
      };
      auto flush_v = [&](uint32_t seq) {
        if (lag_tile >= 0) issue_part(1, seq, lag_tile, 0, kept_lag_src());
        lag_tile = -1;
      };
      // FI_PREFILL_V_LAG_AFTER_FIRST: a chunk's first tile K then V (its consumers wait for
      // V(0) before any later tile's copy is of use), the lag from its second tile on.
      const bool lag_after_first = v_lag && p.v_lag == FI_PREFILL_V_LAG_AFTER_FIRST;
      auto issue_tile = [&](int tile, int cls, bool first) {
        const uint32_t seq = kv_seq++;
        const TileSrc src = ahead_tile == tile ? ahead : lookup(tile);
        const bool lag = v_lag && !(first && lag_after_first);
        // K (its stage is released after S = Q K^T), then, without the lag, V (after
        // O += P V). (Not unrolled: the producer's 40 registers.)
  #pragma unroll 1
        for (int part = 0; part < (lag ? 1 : 2); ++part) issue_part(part, seq, tile, cls, src);
        if (lag) {
          flush_v(seq - 1);  // (the tile before this one)
          lag_tile = tile;
          keep_lag_src(src);
        }
        if ((BSR || page_boxes) && tile + 1 < span_tiles) {
          ahead = lookup(tile + 1);
          ahead_tile = tile + 1;
        }
      };
      // The tiles in order (a variant's mask: the kept ones), the next chunk in between as
      // soon as its Q slot is free (q_ahead) or after the last.
      auto next_slot_free = [&]() {
        uint32_t free = 0;
        if (lane == 0)
          free = fi::mbar_test(&q_empty[q_seq % W::Q_SLOTS], ((q_seq / W::Q_SLOTS) & 1) ^ 1);
        return __shfl_sync(0xffffffffu, free, 0) != 0;
      };
      bool next_out = false;
      int g = -1;
      uint32_t kept = 0, full = 0;  // (classify: group g's bits not yet issued)
      for (int i = 0;; ++i) {
        if (!next_out && (i == c.num_tiles || (q_ahead && i > 0 && next_slot_free()))) {
          if (i == c.num_tiles) flush_v(kv_seq - 1);  // (the consumers' end of chunk needs it)
          more = advance();
          next_out = true;
        }
        if (i >= c.num_tiles) break;
        if (classify) {
          while (kept == 0) group_bits(++g, span_tiles, kept, full);
          const int b = __ffs(kept) - 1;
          kept &= kept - 1;
          issue_tile(32 * g + b, (full >> b) & 1 ? FI_MASK_TILE_FULL : FI_MASK_TILE_PARTIAL,
                     i == 0);
        } else {
          issue_tile(i, FI_MASK_TILE_FULL, i == 0);
        }
      }
      flush_v(kv_seq - 1);  // (the next chunk went out between the tiles: the last V)
    }
    if (parts > 1) {  // the classifying warps' end
      if (lane == 0) {
        job->chunk.span_tiles = -1;
        fi::mbar_arrive(&job->posted);
      }
    }
    if (lane == 0) {
      __threadfence();
      if (atomicAdd(p.sched + 1, 1) == (int)gridDim.x - 1) {
        p.sched[0] = 0;
        p.sched[1] = 0;
      }
    }
  }

  // Warps 0-7, two consumer warpgroups of 64 query rows each: per chunk S, masks, softmax
  // and P V of every tile, then the chunk's output rows.
  static __device__ __forceinline__ void consume(const PrefillParams &p, const WsMaps &maps,
                                                 const Smem &sm, int tid, int warp, int lane,
                                                 int chunk_rows) {
    unsigned char *const q_slots = sm.q_slots, *const kv_ring = sm.kv_ring;
    DT *const o_rows = sm.o_rows;
    uint64_t *const q_full = sm.q_full, *const q_empty = sm.q_empty;
    uint64_t *const k_full = sm.k_full, *const v_full = sm.v_full;
    uint64_t *const k_empty = sm.k_empty, *const v_empty = sm.v_empty;
    int2 *const stage_info = sm.stage_info;
    // Barrier of one consumer warpgroup's 128 threads (named barriers 1 and 2).
    auto wg_sync = [](int wg) {
      if (wg == 0)
        asm volatile("bar.sync 1, 128;\n" ::: "memory");
      else
        asm volatile("bar.sync 2, 128;\n" ::: "memory");
    };
    // The turns (TURNS, below): warpgroup wg waits for its turn on named barrier 5 + wg and
    // passes the turn to the other on 6 - wg (256: both warpgroups' threads).
    auto turn_wait = [](int wg) { asm volatile("bar.sync %0, 256;\n" ::"r"(5 + wg) : "memory"); };
    auto turn_pass = [](int wg) { asm volatile("bar.arrive %0, 256;\n" ::"r"(6 - wg) : "memory"); };
    uint32_t q_seq = 0, kv_seq = 0;
    // One Q slot (head_dim 256, WIDE): the slot is released at the chunk's last S, and the output
    // rows go out through the last tile's K and V stages (stage_out) or straight from the
    // accumulators.
    constexpr bool Q_EARLY = W::Q_SLOTS == 1;
    // Chunk `seq`'s descriptor, once its Q has landed: read at the end of the previous chunk
    // (fp8: before its epilogue, NEXT_EARLY), and the loop's head is a barrier of the
    // warpgroup (register-numbered). Without both (the wait at the head, or no barrier
    // there, or wg_sync's two branches) ptxas serialised the fp8 kernel's wgmma (C7520, "WG.AR
    // in divergent path"): the named barrier of all three roles that this hand-off replaced
    // had been that head.
    auto next_chunk = [&](uint32_t seq) {
      fi::mbar_wait(&q_full[seq % W::Q_SLOTS], (seq / W::Q_SLOTS) & 1);
      return *ws_chunk_slot(p, seq);
    };
    WsChunk c = next_chunk(0);
    // TURNS: the warpgroups take turns issuing their GEMMs (below; head_dim <= 128, not the
    // variant kernels); warpgroup 1 lets warpgroup 0 go first.
    if (TURNS && warp >= 4) turn_pass(1);
    for (;;) {
      // S, masks, softmax and P V of each tile of the chunk; then its output.
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + (warp >> 2)) : "memory");
      if (c.chunk < 0) break;
      const uint32_t qs = q_seq % W::Q_SLOTS;
      ++q_seq;
      const int kv_head = c.kv_head, group = p.group, q_tok_begin = c.q_tok_begin;
      const int kv_len = c.kv_len, q_pos_shift = c.q_pos_shift, packed_end = c.packed_end;
      const int chunk = c.chunk, t_lo = c.t_lo, kv_lo = c.kv_lo, kv_hi = c.kv_hi;
      const int kv_first = c.kv_first;
      const int num_tiles = c.num_tiles;
      const fi_work_unit &wu = c.wu;
      // One Q slot: a whole chunk of the unit's rows goes out through the last tile's K and V
      // stages as boxes of o (WsMaps.o), else straight from the accumulators.
      const bool stage_out = Q_EARLY && num_tiles > 0 && ws_store_box<CTA_Q>(maps, c);
      // The Q slot is released at the chunk's last S where the epilogue does not stage its
      // rows there (one Q slot; with p.q_ahead also boxes of o, staged in the output buffer,
      // and split-KV's partial rows, stored from the accumulators), so that the producer's
      // copy of the chunk after next lands under this one's last softmax, P V and stores;
      // else at the chunk's end.
      const bool q_free_at_last_s =
          num_tiles > 0 &&
          (Q_EARLY || (p.q_ahead && (ws_store_box<CTA_Q>(maps, c) || c.wu.partial_row >= 0)));
      unsigned char *const q_tile = q_slots + qs * W::Q_BYTES;
      const int wg = warp >> 2;  // warpgroup: rows 64 wg .. 64 wg + 63 of the chunk
      const int g = lane >> 2, t4 = lane & 3;
      if constexpr (!FP8) {
        if (p.rope_q) {  // this warpgroup's rows, then the async proxy (wgmma) may read them
          ws_rope_q<HD, DT>(q_tile, wg, tid & 127, chunk, packed_end, q_pos_shift, p);
          fi::fence_proxy_async_smem();
          wg_sync(wg);
        }
      }
      int row_tok[2], row_head[2] = {0, 0};
      float row_slope[2] = {0.f, 0.f};
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int pr = chunk + warp * 16 + g + hh * 8;
        row_tok[hh] = (int)p.group_div.div((uint32_t)(pr < packed_end ? pr : packed_end - 1));
        if (VARIANT || FP8 || (X_ALIBI && p.pos_encoding == FI_POS_ALIBI))  // the row's query head
          row_head[hh] = kv_head * group + pr - (int)p.group_div.div((uint32_t)pr) * group;
      }
      // fp8 attention's per-head scales: q's of each row's head times k's of the KV head
      // scale the logits (with the per-tensor ones in sm_scale), v's the output.
      float row_qk[2] = {1.f, 1.f}, out_scale = p.v_scale;
      if constexpr (FP8) {
        const float k_head = p.k_scale_heads ? __ldg(p.k_scale_heads + kv_head) : 1.f;
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
          row_qk[hh] = k_head * (p.q_scale_heads ? __ldg(p.q_scale_heads + row_head[hh]) : 1.f);
        if (p.v_scale_heads) out_scale *= __ldg(p.v_scale_heads + kv_head);
      }
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        if (X_ALIBI && p.pos_encoding == FI_POS_ALIBI)
          // in raw-logit units: bias / sm_scale joins S before the scale (validated non-zero)
          row_slope[hh] = fi::alibi_slope(row_head[hh], p.num_qo_heads) / (p.sm_scale * row_qk[hh]);
      // The softmax's factor to the log2 domain: the scale folded in, or the soft cap's cap
      // (S holds tanh(scaled / cap)).
      float c_log2 = p.sm_scale_log2;
      if (X_CAP && p.logits_soft_cap > 0.f) c_log2 = p.logits_soft_cap * 1.4426950408889634f;
      const float cap_in = p.sm_scale * p.soft_cap_rcp;
      // (fp8: per row, with the per-head scales; the soft cap's factor stays the cap's)
      float row_c_log2[2] = {c_log2, c_log2}, row_cap_in[2] = {cap_in, cap_in};
      if constexpr (FP8) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          row_cap_in[hh] = cap_in * row_qk[hh];
          if (!(X_CAP && p.logits_soft_cap > 0.f)) row_c_log2[hh] = c_log2 * row_qk[hh];
        }
      }
      // A score_mod sees the logit itself (S times the scale; its `in` factor folded in) and
      // returns the logit to use (over its `out` factor, which joins the softmax's factor):
      // S then holds those (a mask_mod alone keeps S raw).
      // A core that is the score itself is not called: S stays raw and the logit's unit
      // joins the factor.
      ScoreModScales score_scales = {1.f, 1.f, 1.f};
      bool score_call = false;
      if constexpr (VARIANT) {
        if (p.variant_score) {
          score_scales = score_mod_scales(p.variant_captures);
          c_log2 = score_scales.log2;
          score_call = !ws_variant_form<VARIANT>().score_is_identity;
          if (!score_call) c_log2 *= p.sm_scale * score_scales.in;
        }
      }
      const float logit_unit = p.sm_scale * score_scales.in;
      // A score_mod's slope in the key's distance (ALiBi written in IR): per row, in S's
      // units, added as the built-in ALiBi's bias (the variant kernels have no X_ALIBI).
      const bool score_slope = ws_variant_form<VARIANT>().score_has_slope;
      if constexpr (VARIANT) {
        if (score_slope) {
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
            row_slope[hh] = fi_variant_score_slope(row_head[hh], p.variant_captures) *
                            (1.4426950408889634f / c_log2);
        }
      }
      float o[NB_D][4];
      float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
#pragma unroll
      for (int nb = 0; nb < NB_D; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[nb][e] = 0.f;

      // OVERLAP (FA3's intra-warpgroup pipelining): P(tile-1) V(tile-1) is issued once
      // S(tile) has landed and runs on the tensor cores while this warpgroup computes the
      // softmax of tile (AHEAD: right behind S(tile)'s issue, waited for with S or, with
      // MAX_FIRST, after the row maxima, the other warpgroup's softmax under them); every
      // path waits (ptxas serialises every wgmma when it cannot match a wait to an issue).
      // The wait for P V and the work behind it (O rescaled; V's stage released, except with
      // RELEASE_V) appear twice below, once per order: a shared helper changed the code
      // clang emits for the variant kernels, whose speed was measured with this form.
      const uint32_t q_lo = fi_wgmma::desc_lo(fi::smem_addr(q_tile) + wg * 64 * 128, 16);
      uint32_t pa_prev[KB][4];
      uint32_t v_prev_lo = 0, st_prev = 0;
      // Block-sparse: the previous tile was one half (its keys 64-127 not loaded: P V skips
      // their steps, whose V rows are stale, not zeroed).
      bool one_half_prev = false;
      // A custom mask: each row's first bit, and the request's bytes of the packed mask.
      int64_t mask_row_bit[2] = {0, 0}, mask_lo_byte = 0, mask_hi_byte = -1;
      // A dense chunk (every row keeps one run of keys): each row's run from the plan's
      // extents replaces the bits (a range test per pair, no loads per tile). The 176-key
      // tile runs only plans whose every row is such a run (FI_PLAN_FLAG_MASK_RUNS): its
      // extents are the mask, and it has no code for the bits (which spilled ~750 bytes).
      const bool dense = X_MASKS && !BSR && p.custom_mask && (WIDE || c.dense);
      // Otherwise a custom mask is read as bits, every tile (mask_bits).
      const bool mask_bits = X_MASKS && !BSR && !WIDE && p.custom_mask && !dense;
      int row_first[2] = {0, 0}, row_end[2] = {0, 0};
      if (dense) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int2 e = reinterpret_cast<const int2 *>(p.mask_extent)[q_tok_begin + row_tok[hh]];
          row_first[hh] = e.x;
          row_end[hh] = e.y;
        }
      }
      if (mask_bits) {
        const int64_t req_lo = p.mask_indptr[wu.request], req_hi = p.mask_indptr[wu.request + 1];
        mask_lo_byte = req_lo >> 3;
        mask_hi_byte = (req_hi - 1) >> 3;
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) mask_row_bit[hh] = req_lo + (int64_t)row_tok[hh] * kv_len;
      }
      for (int tile = 0; tile < num_tiles; ++tile, ++kv_seq) {
        if constexpr (VARIANT) {
          // (clang builds the variant kernels: with the ring position made warp-uniform by a
          // shuffle and P V's stage derived from it instead of carried over from the last
          // step, ptxas keeps the K and V descriptors in uniform registers as it does in
          // nvcc's build, not in vector registers moved over per wgmma; bench/NOTES.md)
          kv_seq = __shfl_sync(0xffffffffu, kv_seq, 0);
          v_prev_lo = fi_wgmma::desc_lo(
              fi::smem_addr(kv_ring + ((kv_seq + STAGES - 1) % STAGES) * 2 * W::KV_BYTES +
                            W::KV_BYTES),
              V_LBO);
        }
        const uint32_t st = kv_seq % STAGES, par = (kv_seq / STAGES) & 1;
        unsigned char *const k_cur = kv_ring + st * 2 * W::KV_BYTES;
        unsigned char *const v_cur = k_cur + W::KV_BYTES;
        // (a variant's mask: the producer's walk skips tiles; the tile's first key and class
        // come with it, below)
        int kv0 = kv_lo + tile * CTA_KV;
        // Block-sparse: the halves' {first key, keys kept} (x, y: keys 0-63 of the tile; z, w:
        // keys 64-127).
        int4 bsr_half = make_int4(0, 0, 0, 0);
        if (BSR)
          bsr_half = reinterpret_cast<const int4 *>(p.bsr_tiles)[kv_lo + tile];
        // Its second half keeps nothing: not loaded, its V rows neither zeroed nor multiplied.
        const bool half_empty = BSR && p.bsr_half_skip && bsr_half.w == 0;
        // A custom mask's bits of this tile, loaded before the K wait so that the loads run
        // under it and under S = Q K^T.
        uint32_t mask_w[2][CTA_KV / 32];
        if (mask_bits) {
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
            load_mask_bits(p.mask_bits, mask_row_bit[hh] + kv0, mask_lo_byte, mask_hi_byte,
                           mask_w[hh]);
        }

        // The descriptors of P(tile-1) V(tile-1), defined before the fence.
        uint64_t v_prev_desc[KB];
#pragma unroll
        for (int kb = 0; kb < KB; ++kb)
          v_prev_desc[kb] = fi_wgmma::desc_at(v_prev_lo, kb * V_STEP, 1024);
#pragma unroll
        for (int kb = 0; kb < KB; ++kb) asm volatile("" : "+l"(v_prev_desc[kb])::"memory");

        // S = Q K^T: one m64 x CTA_KV x 16 wgmma per 16 head dims (both K-major, swizzled slabs).
        float s[NB_KV][4];
        const uint32_t k_lo = fi_wgmma::desc_lo(fi::smem_addr(k_cur), 16);
        fi::mbar_wait(&k_full[st], par);
        int tile_class = FI_MASK_TILE_FULL;
        if constexpr (VARIANT && BSR) {
          if (p.variant_mask) tile_class = FI_MASK_TILE_PARTIAL;
        } else if constexpr (VARIANT) {
          if (p.variant_mask) {
            const int2 info = stage_info[st];
            kv0 = info.x;
            tile_class = info.y;
          }
        }
        // AHEAD: P(tile-1) V(tile-1) issued right behind S(tile) (FA3's order: the tensor
        // cores go on to P V while this warpgroup waits), and waited for with S (a wait for
        // S alone with nothing behind it measured no faster: ptxas had made it cover P V
        // anyway; MAX_FIRST below puts the row maxima behind it). TURNS: besides, the two
        // warpgroups take turns issuing (FA3's scheduler barriers, named barriers 5 and 6),
        // so that one's softmax runs while the other's GEMMs hold the tensor cores (1-9 %
        // faster at head_dim 128). RELEASE_V: V(tile-1)'s stage goes back with K(tile)'s
        // (MAX_FIRST: after the maxima), since the producer (without the V lag) refills each
        // stage's K, then its V, and a V released after the softmax held back the next K too
        // (6-7 % on the long 16-bit rows; fp8 attention measured no gain and keeps the later
        // release).
        // MAX_FIRST (the soft cap's instances but ALiBi's and block-sparse ones, and the
        // 176-key one): S is waited for alone, the row maxima run under P V and P V's wait
        // follows them (FA3's order; 2-4 % faster there on an H100, where the plain 128-key
        // instance and fp8 attention measured 0-1 % slower). The variant kernels and head_dim
        // 256 keep P V behind S's wait. (bench/NOTES.md, sessions 42, 56 and 57.)
        constexpr bool AHEAD = FP8 || TURNS;
        // (MAX_FIRST waits for V(tile) before releasing V(tile-1): one stage would deadlock)
        static_assert(!MAX_FIRST || STAGES >= 2, "MAX_FIRST needs two ring stages");
        if constexpr (TURNS) turn_wait(wg);
        fi_wgmma::fence();
        wg_qk_issue<MT, HD, CTA_Q, CTA_KV>(s, q_lo, k_lo);
        fi_wgmma::commit();
        if constexpr (AHEAD) {
          // (P V committed inside the branch: no empty group on tile 0. The waits sit in
          // each branch for MAX_FIRST and after them otherwise: the SASS that was measured; a
          // flat form moves ptxas's code for the MAX_FIRST instances.)
          if (tile > 0) {
#pragma unroll
            for (int kb = 0; kb < KB; ++kb)
              if (!(BSR && one_half_prev && kb >= KB / 2))
                fi_wgmma::Wgmma<MT, HD>::rs(o, pa_prev[kb], v_prev_desc[kb]);
            fi_wgmma::commit();
            if constexpr (MAX_FIRST) {
              turn_pass(wg);
              fi_wgmma::wait<1>();  // S alone: P V runs on under the row maxima
            }
          } else if constexpr (MAX_FIRST) {
            turn_pass(wg);
            fi_wgmma::wait<0>();
          }
          if constexpr (TURNS && !MAX_FIRST) turn_pass(wg);
        }
        if constexpr (!MAX_FIRST) fi_wgmma::wait<0>();
        fi_wgmma::fence_regs(s);
        __syncwarp();
        // (stage_out: warpgroup 0 keeps the last tile's K stage for its output rows)
        if (lane == 0 && !(stage_out && wg == 0 && tile == num_tiles - 1))
          fi::mbar_arrive(&k_empty[st]);  // this warp is done with K(tile)
        if (RELEASE_V && !MAX_FIRST && tile > 0 && lane == 0)
          fi::mbar_arrive(&v_empty[st_prev]);  // and with V(tile - 1): its P V has landed
        if (q_free_at_last_s && tile == num_tiles - 1 && lane == 0) fi::mbar_arrive(&q_empty[qs]);
        if (!AHEAD && tile > 0) {
          fi_wgmma::fence();
#pragma unroll
          for (int kb = 0; kb < KB; ++kb)
            if (!(BSR && one_half_prev && kb >= KB / 2))
              fi_wgmma::Wgmma<MT, HD>::rs(o, pa_prev[kb], v_prev_desc[kb]);
          fi_wgmma::commit();
        }
        // VARIANT with a score_mod: the program's logit for every pair, before any mask (the
        // masks below then drop what they drop, so tiles no mask cuts need no per-pair test).
        if constexpr (VARIANT) {
          if (p.variant_score) {
            if (score_call) {
#pragma unroll
              for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                  const int3 pr = ws_pair<BSR, NB_KV>(kv0, bsr_half, nb, e, t4, q_pos_shift,
                                                      row_tok, row_head);
                  s[nb][e] = fi_variant_score_mod(s[nb][e] * logit_unit, wu.request, pr.z,
                                                  kv_head, pr.y, pr.x, p.variant_captures);
                }
            }
            if (score_scales.fix != 1.f) {  // (rare: an `out` factor that is not positive)
#pragma unroll
              for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[nb][e] *= score_scales.fix;
            }
          }
        }

        // Masks: only tiles that cross the range's end, the causal diagonal or the window's
        // left edge (a custom mask: every tile of its extent but those every row keeps whole).
        // (fp8: the first tile may start before the chunk's first key)
        const bool tile_partial = kv0 + CTA_KV > kv_hi || (FP8 && kv0 < kv_first);
        const bool tile_diag =
            ws_causal<VARIANT>(p) && (kv0 + CTA_KV - 1 > q_pos_shift + t_lo);
        // ALiBi without a soft cap: the bias enters S as slope * (column in the tile), one
        // FMA per pair; the rest, slope * (this lane's first key - the row's position), is the
        // same for the lane's pairs of a row and enters the softmax (alibi_off).
        const bool alibi_split = X_ALIBI && !BSR && p.pos_encoding == FI_POS_ALIBI &&
                                 !(X_CAP && p.logits_soft_cap > 0.f);
        float alibi_off[2] = {0.f, 0.f};
        if constexpr (VARIANT) {
          if (score_slope) {  // (a block-sparse tile: each half from its own first key)
            const int key0 = BSR ? bsr_half.x : kv0;
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
              alibi_off[hh] = row_slope[hh] * (float)(key0 + 2 * t4 - q_pos_shift - row_tok[hh]);
            const float half_step[2] = {row_slope[0] * (float)(bsr_half.z - 64 - bsr_half.x),
                                        row_slope[1] * (float)(bsr_half.z - 64 - bsr_half.x)};
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const float col = (float)(nb * 8 + (e & 1));
                s[nb][e] = BSR && nb >= NB_KV / 2
                               ? s[nb][e] + fmaf(row_slope[e >> 1], col, half_step[e >> 1])
                               : fmaf(row_slope[e >> 1], col, s[nb][e]);
              }
          }
        }
        bool tile_general = false;  // a tile that needs the general per-pair test below
        if constexpr (EXTRAS) {
          const bool tile_window = X_MASKS && p.window_left >= 0 &&
                                   kv0 < q_pos_shift + c.t_hi - p.window_left;
          if (alibi_split) {
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
              alibi_off[hh] = row_slope[hh] * (float)(kv0 + 2 * t4 - q_pos_shift - row_tok[hh]);
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                s[nb][e] = fmaf(row_slope[e >> 1], (float)(nb * 8 + (e & 1)), s[nb][e]);
          } else if (X_ALIBI && p.pos_encoding == FI_POS_ALIBI) {
            // with the soft cap (the bias goes inside its tanh) or block-sparse halves (each
            // from its own first key): slope * (key - query position) per pair
            float row_bias[2][2];
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
              const int key0 = BSR ? bsr_half.x : kv0, key1 = BSR ? bsr_half.z - 64 : kv0;
              row_bias[0][hh] = row_slope[hh] * (float)(key0 + 2 * t4 - q_pos_shift - row_tok[hh]);
              row_bias[1][hh] = row_slope[hh] * (float)(key1 + 2 * t4 - q_pos_shift - row_tok[hh]);
            }
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                s[nb][e] += fmaf(row_slope[e >> 1], (float)(nb * 8 + (e & 1)),
                                 row_bias[BSR && nb >= NB_KV / 2][e >> 1]);
          }
          if (X_CAP && p.logits_soft_cap > 0.f) {
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                s[nb][e] = tanh_approx(s[nb][e] * (FP8 ? row_cap_in[e >> 1] : cap_in));
          }
          // A dense chunk's tiles inside the keys every row keeps need no masking.
          const bool tile_custom = X_MASKS && p.custom_mask &&
                                   !(dense && kv0 >= c.in_lo && kv0 + CTA_KV <= c.in_hi);
          tile_general = tile_window || tile_custom;
          if constexpr (BSR) {  // a short half, or keys past the diagonal or left of the window
            const int lo = min(bsr_half.x, bsr_half.z);
            const int hi = max(bsr_half.x + bsr_half.y, bsr_half.z + bsr_half.w);
            tile_general = bsr_half.y < 64 || bsr_half.w < 64 ||
                           (ws_causal<VARIANT>(p) && hi - 1 > q_pos_shift + t_lo) ||
                           (p.window_left >= 0 && lo < q_pos_shift + c.t_hi - p.window_left);
          }
          if (tile_general && !mask_bits) {
            // Every rule here keeps an interval of keys per row (the range's end, the causal
            // diagonal, the window, a dense chunk's run; block-sparse: per half, its kept
            // length too): its bounds once per row and tile, relative to this lane's first
            // column, then two compares with immediates per pair, no branch (the per-pair
            // rules with their branches cost a custom-mask run 27 % more instructions,
            // bench/NOTES.md v19).
            constexpr int HALVES = BSR ? 2 : 1, HALF_NB = NB_KV / HALVES;
            int lo_r[HALVES][2], hi_r[HALVES][2];
#pragma unroll
            for (int hf = 0; hf < HALVES; ++hf)
#pragma unroll
              for (int hh = 0; hh < 2; ++hh) {
                const int qpos = q_pos_shift + row_tok[hh];
                // (keys from `first` on: the tile's, or the half's own first key)
                const int first = BSR ? (hf ? bsr_half.z : bsr_half.x) : kv0;
                int lo = FP8 ? kv_first : first,
                    hi = BSR ? first + (hf ? bsr_half.w : bsr_half.y) : kv_hi;
                if (ws_causal<VARIANT>(p)) hi = min(hi, qpos + 1);
                if (X_MASKS && p.window_left >= 0) lo = max(lo, qpos - p.window_left);
                if (dense) {
                  lo = max(lo, row_first[hh]);
                  hi = min(hi, row_end[hh]);
                }
                lo_r[hf][hh] = lo - (first + 2 * t4);
                hi_r[hf][hh] = hi - (first + 2 * t4);
              }
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int col = (nb % HALF_NB) * 8 + (e & 1), hf = nb / HALF_NB;  // (+ 2 t4)
                s[nb][e] =
                    col >= lo_r[hf][e >> 1] && col < hi_r[hf][e >> 1] ? s[nb][e] : -INFINITY;
              }
          } else if (!WIDE && tile_general) {  // a custom mask's bits
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int j = kv0 + nb * 8 + 2 * t4 + (e & 1);
                const int qpos = q_pos_shift + row_tok[e >> 1];
                bool keep = j < kv_hi;
                if (FP8) keep = keep && j >= kv_first;
                if (ws_causal<VARIANT>(p)) keep = keep && j <= qpos;
                if (X_MASKS && p.window_left >= 0) keep = keep && j >= qpos - p.window_left;
                if constexpr (X_MASKS && !BSR)  // pair column nb * 8 + 2 t4 + (e & 1) of the tile
                  keep = keep &&
                         ((mask_w[e >> 1][nb >> 2] >> ((nb & 3) * 8 + 2 * t4 + (e & 1))) & 1);
                s[nb][e] = keep ? s[nb][e] : -INFINITY;
              }
          }
        }
        // The range's end and the causal diagonal alone (the window's edge and a custom mask
        // cannot cut this tile): one bound per row.
        if (!BSR && !tile_general && (tile_partial || tile_diag)) {
#pragma unroll
          for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int j = kv0 + nb * 8 + 2 * t4 + (e & 1);
              const int lim = ws_causal<VARIANT>(p)
                                  ? min(kv_hi - 1, q_pos_shift + row_tok[e >> 1])
                                  : kv_hi - 1;
              s[nb][e] = j <= lim && (!FP8 || j >= kv_first) ? s[nb][e] : -INFINITY;
            }
        }
        if constexpr (VARIANT) {  // the program's mask, on the pairs causal and the range keep
          // Only on PARTIAL tiles (on FULL ones it keeps every pair). A mask that reads a
          // captured table: its verdicts first, a pair per step of a loop kept rolled, then
          // applied to S (inlined into every pair, its clamped loads, each under a branch for
          // an empty table, made ptxas spill 832 bytes against 284). Other masks: inlined
          // into every pair, straight-line under this one uniform branch.
          if (p.variant_mask && tile_class == FI_MASK_TILE_PARTIAL &&
              fi_variant_mask_reads_tables()) {
            uint64_t keep = 0;  // bit nb * 4 + e
#pragma unroll 1
            for (int i = 0; i < NB_KV * 4; ++i) {
              const int3 pr = ws_pair<BSR, NB_KV>(kv0, bsr_half, i >> 2, i & 3, t4, q_pos_shift,
                                                  row_tok, row_head);
              if (fi_variant_mask_mod(wu.request, pr.z, pr.y, pr.x, p.variant_captures))
                keep |= 1ull << i;
            }
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e)
                if (!((keep >> (nb * 4 + e)) & 1)) s[nb][e] = -INFINITY;
          } else if (p.variant_mask && tile_class == FI_MASK_TILE_PARTIAL) {
#pragma unroll
            for (int nb = 0; nb < NB_KV; ++nb)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int3 pr = ws_pair<BSR, NB_KV>(kv0, bsr_half, nb, e, t4, q_pos_shift,
                                                    row_tok, row_head);
                if (!fi_variant_mask_mod(wu.request, pr.z, pr.y, pr.x, p.variant_captures))
                  s[nb][e] = -INFINITY;
              }
          }
        }

        // Online softmax (log2 domain; c_log2 folded into the FFMA).
        float row_scale[2];
        bool any_rescale = false;
        if constexpr (MAX_FIRST) {
          // Both rows' maxima while P V(tile-1) still runs, then its wait and V(tile-1)'s
          // release, then the exponentials (the same operations as online_softmax_row: the
          // same bits; no variant or fp8 scale reaches these instances, ALiBi only the 176-key
          // one without a soft cap: its per-row part, alibi_off, as online_softmax_row takes it).
          SoftmaxRowMax rm[2];
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
            rm[hh] = softmax_row_max<X_ALIBI>(s, hh, m_run[hh], c_log2, P_LOG2, alibi_off[hh],
                                              SLACK);
          // (the maxima as the next statement's inputs: computed before P V's wait)
          asm volatile("" ::"f"(rm[0].sub), "f"(rm[1].sub), "f"(rm[0].scale), "f"(rm[1].scale)
                       : "memory");
          // V(tile)'s wait here (a loop: its own basic block), so that ptxas keeps P V's wait
          // behind the maxima instead of at the top of their block.
          fi::mbar_wait(&v_full[st], par);
          fi_wgmma::wait<0>();
          fi_wgmma::fence_regs(o);
          __syncwarp();
          if (tile > 0 && lane == 0) fi::mbar_arrive(&v_empty[st_prev]);
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            softmax_row_exp(s, hh, l_run[hh], c_log2, rm[hh]);
            row_scale[hh] = rm[hh].scale;
            any_rescale |= row_scale[hh] != 1.f;
          }
        } else {
          // (row by row, as before: one loop over softmax_row_max for both forms changed the
          // SASS of the fp8 and block-sparse instances, which this order was not measured on)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            if (score_slope)
              row_scale[hh] = online_softmax_row<true>(s, hh, m_run[hh], l_run[hh], c_log2,
                                                       P_LOG2, alibi_off[hh], SLACK);
            else
              row_scale[hh] = online_softmax_row<X_ALIBI>(s, hh, m_run[hh], l_run[hh],
                                                          FP8 ? row_c_log2[hh] : c_log2, P_LOG2,
                                                          alibi_off[hh], SLACK);
            any_rescale |= row_scale[hh] != 1.f;
          }
        }
        // P(tile-1) V(tile-1) has landed in O (and no longer reads pa_prev or its V stage).
        // nvcc's instances wait after V(tile)'s wait below (a branch: its own basic block; at
        // head_dim <= 128 a wait with nothing left: P V was waited for with S or after the
        // maxima) and pack P after it, straight into the registers P V reads: where P V runs
        // under the softmax (head_dim 256 now), P packed before the wait put P(tile) in
        // P(tile-1)'s registers and the wait at the top of the softmax's block, so P V never
        // ran under the softmax (SASS, bench/NOTES.md). clang's builds (the variant kernels)
        // keep P packed before the wait: they measured 10 % slower the other way.
        uint32_t pa[VARIANT ? KB : 1][4];
        if constexpr (VARIANT) {
          pack_p<DT>(s, pa);
          fi_wgmma::wait<0>();
          fi_wgmma::fence_regs(o);
#pragma unroll
          for (int kb = 0; kb < KB; ++kb)
#pragma unroll
            for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(pa_prev[kb][e])::"memory");
          if (tile > 0) {
            __syncwarp();
            if (lane == 0) fi::mbar_arrive(&v_empty[st_prev]);
          }
          if (__any_sync(0xffffffffu, any_rescale)) rescale_o(o, row_scale);
        }
        // V(tile) for the next step's P V. Rows at or past the request's end hold other
        // tokens, another page's rows or zeros: both warpgroups zero them together (generic
        // writes, the proxy fence, one barrier of the 256 consumer threads) before either
        // issues a read of the stage.
        if constexpr (!MAX_FIRST) fi::mbar_wait(&v_full[st], par);
        const int v_rows = kv_len - kv0;
        if constexpr (FP8) {
          // V^T columns of keys outside [kv_first, kv_len) (another request's rows, or zeros):
          // P is 0 there, but 0 x NaN would be NaN. A 32-bit word is 4 logical columns.
          const int z_lo = kv_first - kv0;
          if (z_lo > 0 || v_rows < CTA_KV) {
            for (int idx = tid; idx < HD * (CTA_KV / 4); idx += 32 * W::CONSUMER_WARPS) {
              const int d = idx / (CTA_KV / 4), col = 4 * (idx % (CTA_KV / 4));
              uint32_t keep = 0;
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                const int key = ((col + i) & ~31) + perm32_key((col + i) & 31);
                keep |= (key >= z_lo && key < v_rows) ? 0xffu << (8 * i) : 0u;
              }
              if (keep != 0xffffffffu) {
                uint32_t *const w = reinterpret_cast<uint32_t *>(
                    v_cur + d * 128 + ((((col >> 4) ^ (d & 7))) << 4) + (col & 15));
                *w &= keep;
              }
            }
            fi::fence_proxy_async_smem();
            asm volatile("bar.sync 3, %0;\n" ::"n"(32 * W::CONSUMER_WARPS) : "memory");
          }
        } else if (BSR) {
          // Block-sparse: each half's rows past its kept keys (other keys, or zeros past the
          // tensor) are zeroed: P is 0 there, but an unlisted row may hold anything.
          // (an empty second half: half_empty)
          if (bsr_half.y < 64 || (!half_empty && bsr_half.w < 64)) {
            for (int idx = tid; idx < CTA_KV * CH; idx += 32 * W::CONSUMER_WARPS) {
              const int row = idx / CH, ch = idx % CH;
              if (row < 64 ? row >= bsr_half.y : !half_empty && row - 64 >= bsr_half.w)
                *reinterpret_cast<uint4 *>(v_cur + 2 * tile_off<HD, CTA_KV, true>(row, ch)) =
                    make_uint4(0, 0, 0, 0);
            }
            fi::fence_proxy_async_smem();
            asm volatile("bar.sync 3, %0;\n" ::"n"(32 * W::CONSUMER_WARPS) : "memory");
          }
        } else if (v_rows < CTA_KV) {
          for (int idx = tid; idx < (CTA_KV - v_rows) * CH; idx += 32 * W::CONSUMER_WARPS) {
            const int row = v_rows + idx / CH, ch = idx % CH;
            *reinterpret_cast<uint4 *>(v_cur + 2 * tile_off<HD, CTA_KV, true>(row, ch)) =
                make_uint4(0, 0, 0, 0);
          }
          fi::fence_proxy_async_smem();
          asm volatile("bar.sync 3, %0;\n" ::"n"(32 * W::CONSUMER_WARPS) : "memory");
        }
        if constexpr (!VARIANT) {
          fi_wgmma::wait<0>();
          fi_wgmma::fence_regs(o);
          if (!RELEASE_V && tile > 0) {
            __syncwarp();
            if (lane == 0) fi::mbar_arrive(&v_empty[st_prev]);
          }
          if (__any_sync(0xffffffffu, any_rescale)) rescale_o(o, row_scale);
          if constexpr (FP8)
            pack_p_e4m3(s, pa_prev);
          else
            pack_p<DT>(s, pa_prev);
        } else {
#pragma unroll
          for (int kb = 0; kb < KB; ++kb)
#pragma unroll
            for (int e = 0; e < 4; ++e) pa_prev[kb][e] = pa[kb][e];
        }
        v_prev_lo = fi_wgmma::desc_lo(fi::smem_addr(v_cur), V_LBO);
        st_prev = st;
        one_half_prev = half_empty;
      }
      if (num_tiles > 0) {  // the last tile's P V
        fi_wgmma::fence_regs(o);
        fi_wgmma::fence();
#pragma unroll
        for (int kb = 0; kb < KB; ++kb)
          if (!(BSR && one_half_prev && kb >= KB / 2))
            fi_wgmma::Wgmma<MT, HD>::rs(o, pa_prev[kb],
                                        fi_wgmma::desc_at(v_prev_lo, kb * V_STEP, 1024));
        fi_wgmma::commit();
        fi_wgmma::wait<0>();
        fi_wgmma::fence_regs(o);
        __syncwarp();
        // (stage_out: warpgroup 1 keeps the last tile's V stage for its output rows)
        if (lane == 0 && !(stage_out && wg == 1)) fi::mbar_arrive(&v_empty[st_prev]);
      }
      // fp8: the next chunk's descriptor is read here, before the epilogue (its Q has as a
      // rule landed during this chunk's tiles): 3 % faster on fp8's rows; the same read made
      // the 16-bit (32, 512) row 3 % slower, so those instances read it at the end
      // (bench/NOTES.md).
      constexpr bool NEXT_EARLY = FP8 && !Q_EARLY;
      const WsChunk c_next = NEXT_EARLY ? next_chunk(q_seq) : WsChunk{};

      // ---- epilogue: row sums, normalise, write; then release the Q slot.
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float l = l_run[hh];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        l_run[hh] = l;
      }
      // Per accumulator row hh (0: row g, 1: g + 8): O's factor (v's scale over l) and the
      // natural-log LSE; per packed row pr: its token (x) and query head (y).
      float row_inv[2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) row_inv[hh] = l_run[hh] > 0.f ? out_scale / l_run[hh] : 0.f;
      auto row_lse = [&](int hh) {
        return l_run[hh] > 0.f ? (m_run[hh] + __log2f(l_run[hh]) - P_LOG2) * 0.6931471805599453f
                               : -INFINITY;
      };
      auto tok_head = [&](int pr) {
        const int tok = (int)p.group_div.div((uint32_t)pr);
        return make_int2(tok, kv_head * group + pr - tok * group);
      };
      auto store_lse = [&](int2 th, int hh) {
        p.lse[(int64_t)(q_tok_begin + th.x) * p.lse_stride_n + (int64_t)th.y * p.lse_stride_h] =
            row_lse(hh);
      };
      const bool store_box = W::O_BYTES > 0 && ws_store_box<CTA_Q>(maps, c);
      // Rows for the copy engine go to the output buffer, once this warpgroup's last stores
      // from it have read it; the others to the warpgroup's own Q rows (its last Q K^T has
      // completed), which its threads copy out.
      DT *const stage_rows = store_box ? o_rows : reinterpret_cast<DT *>(q_tile);
      if (store_box) {
        if ((tid & 127) == 0) fi::tma_store_wait_read();
        wg_sync(wg);
      }
      if (stage_out) {
        // One Q slot, a whole chunk of whole rows: each warpgroup stages its 64 rows in a stage
        // of the last tile (0: K's, 1: V's; held back from the producer until the copy engine
        // has read them) once both warpgroups' last P V is done, and stores them as boxes of o.
        asm volatile("bar.sync 3, %0;\n" ::"n"(32 * W::CONSUMER_WARPS) : "memory");
        DT *const rows = reinterpret_cast<DT *>(kv_ring + st_prev * 2 * W::KV_BYTES +
                                                wg * W::KV_BYTES);
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const float inv = row_inv[hh];
          const int row = (warp & 3) * 16 + g + hh * 8;
#pragma unroll
          for (int nb = 0; nb < NB_D; ++nb)
            *reinterpret_cast<uint32_t *>(rows + tile_off<HD, 64, true>(row, nb) + 2 * t4) =
                MmaOp<DT>::pack(o[nb][2 * hh] * inv, o[nb][2 * hh + 1] * inv);
          if (p.lse != nullptr && t4 == 0) store_lse(tok_head(chunk + wg * 64 + row), hh);
        }
        fi::fence_proxy_async_smem();
        wg_sync(wg);
        if ((tid & 127) == 0) {
          const int tok = (int)p.group_div.div((uint32_t)(chunk + wg * 64));
#pragma unroll
          for (int slab = 0; slab < HD / 64; ++slab)
            fi::tma_store_3d(&maps.o, rows + slab * (64 * 64), slab * 64, kv_head * group,
                             q_tok_begin + tok, ws_o_policy(p));
          fi::tma_store_commit();
          fi::tma_store_wait_read();
        }
        wg_sync(wg);
        if (lane == 0) fi::mbar_arrive(wg == 0 ? &k_empty[st_prev] : &v_empty[st_prev]);
      } else if (Q_EARLY && wu.partial_row < 0) {
        // One Q slot: no staging (the slot holds the next chunk's Q), whole rows in 4-byte
        // stores straight from the accumulators.
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const float inv = row_inv[hh];
          const int row = warp * 16 + g + hh * 8, pr = chunk + row;
          if (row >= chunk_rows || pr >= packed_end) continue;
          const int2 th = tok_head(pr);
          DT *const dst = reinterpret_cast<DT *>(p.o) + (int64_t)(q_tok_begin + th.x) * p.o_stride_n +
                          (int64_t)th.y * p.o_stride_h;
#pragma unroll
          for (int nb = 0; nb < NB_D; ++nb)
            *reinterpret_cast<uint32_t *>(dst + nb * 8 + 2 * t4) =
                MmaOp<DT>::pack(o[nb][2 * hh] * inv, o[nb][2 * hh + 1] * inv);
          if (p.lse != nullptr && t4 == 0) store_lse(th, hh);
        }
      } else if (wu.partial_row < 0) {
        // Stage O / l in stage_rows (the Q tiles' swizzled layout).
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const float inv = row_inv[hh];
          const int row = warp * 16 + g + hh * 8;
#pragma unroll
          for (int nb = 0; nb < NB_D; ++nb) {
            const uint32_t v2 = MmaOp<DT>::pack(o[nb][2 * hh] * inv, o[nb][2 * hh + 1] * inv);
            *reinterpret_cast<uint32_t *>(stage_rows + tile_off<HD, CTA_Q, true>(row, nb) +
                                          2 * t4) = v2;
          }
          const int pr = chunk + row;
          if (p.lse != nullptr && t4 == 0 && row < chunk_rows && pr < packed_end)
            store_lse(tok_head(pr), hh);
        }
        // A chunk of whole rows of the unit (every chunk but a unit's last, as a rule): each
        // warpgroup's 64 rows are one box of o (whose layout in shared memory is the staged
        // one), stored by the copy engine, so the consumers go on at once.
        if (store_box) fi::fence_proxy_async_smem();
        wg_sync(wg);
        if (store_box) {
          if ((tid & 127) == 0) {
            const int tok = (int)p.group_div.div((uint32_t)(chunk + wg * 64));
#pragma unroll
            for (int slab = 0; slab < HD / 64; ++slab)
              fi::tma_store_3d(&maps.o, stage_rows + slab * (CTA_Q * 64) + wg * (64 * 64),
                               slab * 64, kv_head * group, q_tok_begin + tok, ws_o_policy(p));
            fi::tma_store_commit();
          }
        } else {
#pragma unroll
          for (int it = 0; it < 64 * CH / 128; ++it) {
            const int idx = (tid & 127) + it * 128;
            const int row = wg * 64 + idx / CH, c = idx % CH;
            const int pr = chunk + row;
            if (row < chunk_rows && pr < packed_end) {
              const int2 th = tok_head(pr);
              DT *dst = reinterpret_cast<DT *>(p.o) + (int64_t)(q_tok_begin + th.x) * p.o_stride_n +
                        (int64_t)th.y * p.o_stride_h + c * 8;
              *reinterpret_cast<uint4 *>(dst) =
                  *reinterpret_cast<const uint4 *>(stage_rows + tile_off<HD, CTA_Q, true>(row, c));
            }
          }
        }
      } else {
        // Split-KV: fp32 partial rows + natural-log LSE for the merge.
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int row = warp * 16 + g + hh * 8, pr = chunk + row;
          if (row >= chunk_rows || pr >= packed_end) continue;
          const int2 th = tok_head(pr);
          const int64_t prow = (int64_t)wu.partial_row + (th.x - wu.qo_start);
          const float inv = row_inv[hh];
          float *dst = p.partial_o + (prow * p.num_qo_heads + th.y) * HD;
#pragma unroll
          for (int nb = 0; nb < NB_D; ++nb)
            *reinterpret_cast<float2 *>(dst + nb * 8 + 2 * t4) =
                make_float2(o[nb][2 * hh] * inv, o[nb][2 * hh + 1] * inv);
          if (t4 == 0) p.partial_lse[prow * p.num_qo_heads + th.y] = row_lse(hh);
        }
      }
      // Every generic access to the slot precedes the producer's next copy into it (unless
      // released at the last S).
      if (!q_free_at_last_s) {
        fi::fence_proxy_async_smem();
        wg_sync(wg);
        if (lane == 0) fi::mbar_arrive(&q_empty[qs]);
      }
      c = NEXT_EARLY ? c_next : next_chunk(q_seq);
    }
    if ((tid & 127) == 0) fi::tma_store_wait_read();  // (shared memory outlives the last stores)
  }
};

template <int HD, typename DT, int XF, bool BSR, bool VARIANT, bool FP8 = false,
          bool WIDE = false, bool DEEP = false>
__device__ __forceinline__ void prefill_ws_body(const PrefillParams &p, const WsMaps &maps) {
  PrefillWs<HD, DT, XF, BSR, VARIANT, FP8, WIDE, DEEP>::run(p, maps);
}


template <int HD, typename DT, int XF, bool BSR>
__global__ void __launch_bounds__(WsShape<HD>::THREADS, 1)
    prefill_ws_kernel(const __grid_constant__ PrefillParams p,
                      const __grid_constant__ WsMaps maps) {
  prefill_ws_body<HD, DT, XF, BSR, false>(p, maps);
}

// head_dim 128 over KV tiles of 176 keys (WsShape WIDE): no extras (XF 0), a soft cap alone
// (WS_X_CAP), ALiBi alone (WS_X_ALIBI: one FFMA per pair) or a custom mask alone whose rows
// are each one run of keys (WS_X_MASKS: the plan's extents, no bits), not block-sparse or a
// variant (a plan with wgmma 128 x 176 tiles, PrefillParams.ws_wide).
template <typename DT, int XF>
__global__ void __launch_bounds__(WsShape<128>::THREADS, 1)
    prefill_ws_wide_kernel(const __grid_constant__ PrefillParams p,
                           const __grid_constant__ WsMaps maps) {
  prefill_ws_body<128, DT, XF, false, false, false, true>(p, maps);
}

// head_dim 128 over KV tiles of 128 keys with the deep ring (WsShape DEEP): no extras, not
// block-sparse or a variant (a plan flagged FI_PLAN_FLAG_WS_DEEP, PrefillParams.ws_deep).
template <typename DT>
__global__ void __launch_bounds__(WsShape<128>::THREADS, 1)
    prefill_ws_deep_kernel(const __grid_constant__ PrefillParams p,
                           const __grid_constant__ WsMaps maps) {
  prefill_ws_body<128, DT, 0, false, false, false, false, true>(p, maps);
}

// fp8 attention: Q, K, V in e4m3 (V^T staged), output of type DT.
template <typename DT, bool EXTRAS>
__global__ void __launch_bounds__(WsShape<128, 1>::THREADS, 1)
    prefill_ws_fp8_kernel(const __grid_constant__ PrefillParams p,
                          const __grid_constant__ WsMaps maps) {
  prefill_ws_body<128, DT, EXTRAS ? WS_X_ALL : 0, false, false, true>(p, maps);
}

template <typename DT>
cudaError_t prepare_prefill_ws_fp8() {
  cudaError_t e = cudaFuncSetAttribute(prefill_ws_fp8_kernel<DT, false>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       WsShape<128, 1>::SMEM);
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(prefill_ws_fp8_kernel<DT, true>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              WsShape<128, 1>::SMEM);
}

// The persistent grid: one CTA per work item (unit x KV head x chunk item), at most one per SM.
inline int ws_grid(const PrefillParams &p, int num_work_units, int sm_count) {
  const long long items = (long long)(num_work_units > 0 ? num_work_units : 1) *
                          p.num_kv_heads * (p.unit_chunks > 1 ? p.unit_chunks : 1);
  const int ctas = sm_count < FI_WS_RING_CTAS ? sm_count : FI_WS_RING_CTAS;  // (ws_chunk_slot)
  return (int)(items < ctas ? items : ctas);
}

template <typename DT>
cudaError_t launch_prefill_ws_fp8(const PrefillParams &p, const WsMaps &maps, bool extras,
                                  int num_work_units, int sm_count, cudaStream_t stream) {
  using W = WsShape<128, 1>;
  const int grid = ws_grid(p, num_work_units, sm_count);
  return fi::launch_on(stream, p.pdl != 0, dim3(grid), dim3(W::THREADS), W::SMEM,
                       extras ? prefill_ws_fp8_kernel<DT, true> : prefill_ws_fp8_kernel<DT, false>,
                       p, maps);
}

// Sets the kernel's dynamic shared-memory limit (at context creation, for the device).
// (head_dim 256 has no block-sparse instance: prefill.cu runs those on the mma.sync kernel)
template <int HD, typename DT>
cudaError_t prepare_prefill_ws() {
  constexpr bool BSR_OK = HD <= 128;
  const void *const kernels[] = {
      (const void *)prefill_ws_kernel<HD, DT, 0, false>,
      (const void *)prefill_ws_kernel<HD, DT, WS_X_MASKS, false>,
      (const void *)prefill_ws_kernel<HD, DT, WS_X_CAP, false>,
      (const void *)prefill_ws_kernel<HD, DT, WS_X_CAP | WS_X_MASKS, false>,
      (const void *)prefill_ws_kernel<HD, DT, WS_X_ALL, false>,
      (const void *)prefill_ws_kernel<HD, DT, WS_X_ALL, BSR_OK>};
  for (const void *k : kernels) {
    const cudaError_t e =
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, WsShape<HD>::SMEM);
    if (e != cudaSuccess) return e;
  }
  if constexpr (HD == 128) {
    const cudaError_t e = cudaFuncSetAttribute((const void *)prefill_ws_deep_kernel<DT>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               WsShape<128, 2, false, true>::SMEM);
    if (e != cudaSuccess) return e;
    for (const void *k : {(const void *)prefill_ws_wide_kernel<DT, 0>,
                          (const void *)prefill_ws_wide_kernel<DT, WS_X_CAP>,
                          (const void *)prefill_ws_wide_kernel<DT, WS_X_ALIBI>,
                          (const void *)prefill_ws_wide_kernel<DT, WS_X_MASKS>}) {
      const cudaError_t w = cudaFuncSetAttribute(
          k, cudaFuncAttributeMaxDynamicSharedMemorySize, WsShape<128, 2, true>::SMEM);
      if (w != cudaSuccess) return w;
    }
    return cudaSuccess;
  }
  return cudaSuccess;
}

// Launches prefill_ws_kernel on min(items, SMs) persistent CTAs (prepared by context.cu).
// extras: soft cap, ALiBi, custom mask or sliding window in use (1: the instance follows
// the ones `p` asks for; 2: the one with every extra); p.bsr_tiles: block-sparse;
// variant_kernel: a program's variant kernel (variant_kernels.cu, loaded by
// variant_images.cu) in place of the runtime's own, with the same grid and shared memory.
template <int HD, typename DT>
cudaError_t launch_prefill_ws(const PrefillParams &p, const WsMaps &maps, int extras,
                              int num_work_units, int sm_count, cudaStream_t stream,
                              const void *variant_kernel) {
  using W = WsShape<HD>;
  using Entry = void (*)(PrefillParams, WsMaps);
  const int grid = ws_grid(p, num_work_units, sm_count);
  const bool all = extras == 2, masks = p.window_left >= 0 || p.custom_mask != 0;
  const bool cap = all || p.logits_soft_cap > 0.f, alibi = all || p.pos_encoding == FI_POS_ALIBI;
  // (a cudaKernel_t launches through the runtime's launch calls as a function pointer)
  const Entry entry =
      variant_kernel         ? reinterpret_cast<Entry>(const_cast<void *>(variant_kernel))
      : p.bsr_tiles          ? prefill_ws_kernel<HD, DT, WS_X_ALL, (HD <= 128)>
      : !extras              ? prefill_ws_kernel<HD, DT, 0, false>
      : alibi                ? prefill_ws_kernel<HD, DT, WS_X_ALL, false>
      : cap && masks         ? prefill_ws_kernel<HD, DT, WS_X_CAP | WS_X_MASKS, false>
      : cap                  ? prefill_ws_kernel<HD, DT, WS_X_CAP, false>
                             : prefill_ws_kernel<HD, DT, WS_X_MASKS, false>;
  // (run_prefill sets ws_wide only for runs without extras but a soft cap, ALiBi or a
  // custom mask of one run per row, one of them, and ws_deep only for runs without extras;
  // neither with a variant or block-sparse tiles)
  if constexpr (HD == 128) {
    if (p.ws_wide)
      return fi::launch_on(stream, p.pdl != 0, dim3(grid), dim3(W::THREADS),
                           WsShape<128, 2, true>::SMEM,
                           p.pos_encoding == FI_POS_ALIBI ? prefill_ws_wide_kernel<DT, WS_X_ALIBI>
                           : p.logits_soft_cap > 0.f      ? prefill_ws_wide_kernel<DT, WS_X_CAP>
                           : p.custom_mask                ? prefill_ws_wide_kernel<DT, WS_X_MASKS>
                                                          : prefill_ws_wide_kernel<DT, 0>,
                           p, maps);
    if (p.ws_deep)
      return fi::launch_on(stream, p.pdl != 0, dim3(grid), dim3(W::THREADS),
                           WsShape<128, 2, false, true>::SMEM, prefill_ws_deep_kernel<DT>, p,
                           maps);
  }
  return fi::launch_on(stream, p.pdl != 0, dim3(grid), dim3(W::THREADS), W::SMEM, entry, p,
                       maps);
}

}  // namespace fi_prefill

#endif
