/* test/runtime/test_heuristics.c -- the decision table of kernels/src/heuristics.c. */
#include "fi/heuristics.h"
#include "test_util.h"

static fi_tile_problem prob(int batch, int hq, int hkv, int hd, int qb, int kb, int64_t qo, int64_t kv) {
  fi_tile_problem p = {batch, hq, hkv, hd, qb, kb, qo, kv, 0};
  return p;
}

int main(void) {
  fi_target h100 = fi_target_default();
  EXPECT(h100.sm_version == 90 && h100.sm_count == 132 && h100.smem_per_block == 232448 &&
             h100.dram_gbps_per_sm == 25 && fi_target_low_dram_per_sm(&h100),
         "default target is not an H100 SXM");
  fi_target h200 = h100;
  h200.dram_gbps_per_sm = 36;
  EXPECT(!fi_target_low_dram_per_sm(&h200), "36 GB/s per SM counts as low bandwidth");
  fi_target unknown_dram = h100;
  unknown_dram.dram_gbps_per_sm = 0;
  EXPECT(fi_target_low_dram_per_sm(&unknown_dram), "an unknown bandwidth is not taken as an H100's");

  /* 1. q tile: smallest of 1/16/32/64/128 covering avg_qo_len * group */
  struct { int64_t qo; int hq, hkv, hd; int want; } qt[] = {
      {1, 8, 8, 128, 1},    {1, 32, 8, 128, 16},  {4, 8, 8, 128, 16},   {16, 8, 8, 128, 16},
      {17, 8, 8, 128, 32},  {8, 32, 8, 128, 32},  {33, 8, 8, 128, 64},  {64, 8, 8, 128, 64},
      {65, 8, 8, 128, 128}, {20, 32, 4, 128, 128}, {1000, 8, 8, 64, 128}, {1000, 8, 8, 256, 64},
      {0, 8, 8, 128, 128},  {0, 8, 8, 256, 64}};
  for (size_t i = 0; i < sizeof qt / sizeof qt[0]; ++i) {
    fi_tile_problem p = prob(4, qt[i].hq, qt[i].hkv, qt[i].hd, 2, 2, qt[i].qo, 1000);
    int got = fi_select_q_tile(&p);
    EXPECT(got == qt[i].want, "q tile for qo %lld group %d hd %d: %d, want %d", (long long)qt[i].qo,
           qt[i].hq / qt[i].hkv, qt[i].hd, got, qt[i].want);
  }

  /* 2. decode cores: tensor cores from GQA group 4 */
  for (int g = 1; g <= 16; g *= 2) {
    fi_tile_problem p = prob(8, 8 * g, 8, 128, 2, 2, 1, 1000);
    fi_core_kind want = g >= 4 ? FI_CORES_TENSOR : FI_CORES_CUDA;
    EXPECT(fi_select_decode_cores(&p) == want, "decode cores for group %d", g);
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == want && t.q_tile == (g >= 4 ? (g <= 16 ? 16 : g) : 1),
           "decode tiles for group %d: q_tile %d", g, t.q_tile);
  }

  /* 2b. decode on the fast path (the warp-specialised kernel's scope) at head_dim 64 and
   * 128: tensor cores for every group on Hopper; other targets or off the fast path: the
   * group rule above */
  for (int g = 1; g <= 2; ++g) {
    fi_tile_problem p = prob(8, 8 * g, 8, 128, 2, 2, 1, 1000);
    p.fast_path = 1;
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.q_tile == 16,
           "fast-path decode, group %d, hd 128, sm 90: cores %d q_tile %d", g, (int)t.cores,
           t.q_tile);
    fi_target ampere = h100;
    ampere.sm_version = 80;
    t = fi_select_decode_tiles(&ampere, &p);
    EXPECT(t.cores == FI_CORES_CUDA && t.q_tile == 1, "fast-path decode, group %d, sm 80", g);
    p.head_dim = 64;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.q_tile == 16,
           "fast-path decode, group %d, hd 64, sm 90: cores %d q_tile %d", g, (int)t.cores,
           t.q_tile);
    p.head_dim = 256;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_CUDA, "fast-path decode, group %d, hd 256 (group rule)", g);
  }

  /* 3. KV tile: the occupancy model (values worked out by hand in heuristics.c's table) */
  {
    /* prefill q128 hd128 f16: kv32 -> regs 192, 2 blocks x 4 warps; kv64 -> regs 224,
     * 2 x 4; kv128 -> regs 288 > 255: tie 8 = 8 goes to the larger: 64 */
    fi_tile_problem p = prob(4, 8, 8, 128, 2, 2, 1000, 1000);
    EXPECT(fi_select_kv_tile(&h100, &p, 128) == 64, "kv tile q128 hd128 f16: %d",
           fi_select_kv_tile(&h100, &p, 128));
    /* q16 hd128 f16: kv32 -> smem 36 KiB, 6 blocks; kv64 -> 68 KiB, 3; kv128 -> 1: 32 */
    EXPECT(fi_select_kv_tile(&h100, &p, 16) == 32, "kv tile q16 hd128: %d", fi_select_kv_tile(&h100, &p, 16));
    /* q64 hd64 f16: 2 warps... every candidate feasible; check it is a candidate and that
     * larger head_dim never gets a larger tile */
    int prev = 1 << 30;
    for (int hd = 64; hd <= 256; hd *= 2) {
      fi_tile_problem ph = prob(4, 8, 8, hd, 2, 2, 1000, 1000);
      int kv = fi_select_kv_tile(&h100, &ph, 64);
      EXPECT(kv == 32 || kv == 64 || kv == 128, "kv tile %d not a candidate", kv);
      EXPECT(kv <= prev, "hd %d got a larger kv tile (%d) than a smaller head_dim (%d)", hd, kv, prev);
      prev = kv;
    }
    /* fp32 KV never gets a larger tile than fp8 KV */
    fi_tile_problem p8 = prob(4, 8, 8, 128, 2, 1, 1000, 1000), p32 = prob(4, 8, 8, 128, 4, 4, 1000, 1000);
    EXPECT(fi_select_kv_tile(&h100, &p32, 64) <= fi_select_kv_tile(&h100, &p8, 64), "fp32 vs fp8 kv tile");
    /* less shared memory (sm_80, 164 KiB) never gives a larger tile */
    fi_target a100 = {80, 108, 166912};
    EXPECT(fi_select_kv_tile(&a100, &p, 128) <= fi_select_kv_tile(&h100, &p, 128), "a100 kv tile");
    /* CUDA-core decode hd128 f16: kv16 -> 16 KiB, 14 blocks x 4 warps = 56 warps: the best */
    fi_tile_problem pd = prob(64, 8, 8, 128, 2, 2, 1, 1000);
    EXPECT(fi_select_kv_tile(&h100, &pd, 1) == 16, "decode kv tile %d", fi_select_kv_tile(&h100, &pd, 1));
  }

  /* 4. split-KV: on iff ctas < sm_count and avg_kv_len >= 512; unknown -> on */
  {
    fi_tile_problem p = prob(1, 32, 8, 128, 2, 2, 1, 4096); /* 8 ctas, long kv */
    EXPECT(fi_select_split_kv(&h100, &p, 16) == 1, "batch 1 long kv should split");
    p.avg_kv_len = 256;
    EXPECT(fi_select_split_kv(&h100, &p, 16) == 0, "short kv should not split");
    p = prob(64, 32, 8, 128, 2, 2, 1, 4096); /* 512 ctas fill the SMs */
    EXPECT(fi_select_split_kv(&h100, &p, 16) == 0, "a full machine should not split");
    p = prob(16, 8, 8, 128, 2, 2, 1, 4096);    /* 128 ctas < 132 */
    EXPECT(fi_select_split_kv(&h100, &p, 1) == 1, "128 ctas < 132 SMs should split");
    p = prob(17, 8, 8, 128, 2, 2, 1, 4096);    /* 136 ctas */
    EXPECT(fi_select_split_kv(&h100, &p, 1) == 0, "136 ctas should not split");
    p = prob(2, 8, 8, 128, 2, 2, 512, 4096);   /* prefill: 2*8*ceil(512/128) = 64 ctas */
    EXPECT(fi_select_split_kv(&h100, &p, 128) == 1, "small prefill batch with long kv should split");
    p = prob(0, 8, 8, 128, 2, 2, 0, 0);
    EXPECT(fi_select_split_kv(&h100, &p, 128) == 1, "unknown shape leaves the split to the planner");
  }

  /* 4b. decode on the Hopper fast path also splits sparse grids: 16-bit KV at head_dim 128
   * up to 1.5 unsplit CTAs per SM (below 2 with pages of 4, fp8 KV; below 2 for groups
   * under 4 with pages of 8 or at head_dim 64) */
  {
    struct { int batch, hq, hkv, hd, kvb, page, want; const char *why; } dt[] = {
        {20, 32, 8, 128, 2, 16, 1, "160 ctas (1.2 per SM)"},
        {24, 32, 8, 128, 2, 16, 1, "192 ctas (1.45 per SM)"},
        {99, 8, 2, 128, 2, 16, 1, "198 ctas (1.5 per SM)"},
        {100, 8, 2, 128, 2, 16, 0, "200 ctas"},
        {28, 32, 8, 128, 2, 16, 0, "224 ctas (1.7 per SM)"},
        {28, 32, 8, 128, 2, 8, 0, "224 ctas, pages of 8, group 4"},
        {7, 32, 32, 128, 2, 8, 1, "MHA, 224 ctas, pages of 8"},
        {20, 32, 8, 128, 2, 8, 1, "160 ctas, pages of 8, group 4"},
        {28, 32, 8, 128, 2, 4, 1, "224 ctas, pages of 4"},
        {28, 32, 8, 128, 2, 24, 0, "224 ctas, pages of 24 (boxes of 8), group 4"},
        {20, 32, 8, 128, 2, 40, 1, "160 ctas, pages of 40 (boxes of 8), group 4"},
        {7, 32, 32, 128, 2, 24, 1, "MHA, 224 ctas, pages of 24 (boxes of 8)"},
        {28, 32, 8, 128, 2, 12, 1, "224 ctas, pages of 12 (boxes of 4)"},
        {33, 32, 8, 128, 2, 8, 0, "264 ctas (two per SM), pages of 8"},
        {28, 32, 8, 128, 1, 16, 1, "224 ctas of fp8 KV"},
        {5, 32, 32, 128, 2, 16, 1, "MHA, 160 ctas"},
        {20, 32, 8, 64, 2, 16, 1, "head_dim 64, 160 ctas"},
        {8, 32, 32, 64, 2, 16, 1, "head_dim 64, MHA, 256 ctas (1.9 per SM)"},
        {64, 32, 4, 64, 2, 16, 0, "head_dim 64, group 8, 256 ctas (1.9 per SM)"},
        {33, 32, 32, 64, 2, 16, 0, "head_dim 64, MHA, 264 ctas (two per SM)"},
        {64, 32, 8, 128, 2, 16, 0, "512 ctas"},
        {20, 32, 32, 128, 2, 16, 0, "MHA, 640 ctas (CUDA cores)"},
        {20, 32, 32, 64, 2, 16, 0, "head_dim 64, MHA, 640 ctas (tensor cores)"}};
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; ++i) {
      fi_tile_problem p = prob(dt[i].batch, dt[i].hq, dt[i].hkv, dt[i].hd, 2, dt[i].kvb, 1, 8192);
      p.fast_path = 1;
      p.page_size = dt[i].page;
      fi_tiles t = fi_select_decode_tiles(&h100, &p);
      EXPECT(t.split_kv == dt[i].want, "hopper decode %s: split_kv %d, want %d", dt[i].why,
             t.split_kv, dt[i].want);
      /* tensor cores on the fast path at head_dim 64 and 128 but for MHA over a 16-bit
       * cache at 4-5 unsplit CTAs per SM at head_dim 128 (a second wave of the
       * warp-specialised kernel) */
      const long long ctas = (long long)dt[i].batch * dt[i].hkv;
      const int want_cc = dt[i].hd == 128 && dt[i].hq == dt[i].hkv && dt[i].kvb == 2 &&
                          ctas > 4 * 132 && ctas <= 5 * 132;
      if (dt[i].hd == 64 || dt[i].hd == 128)
        EXPECT(t.cores == (want_cc ? FI_CORES_CUDA : FI_CORES_TENSOR),
               "hopper decode %s: cores %d", dt[i].why, (int)t.cores);
      p.fast_path = 0; /* off the fast path: fi_select_split_kv's rule alone */
      t = fi_select_decode_tiles(&h100, &p);
      EXPECT(t.split_kv == 0, "decode off the fast path %s: split_kv %d", dt[i].why, t.split_kv);
      p.fast_path = 1;
      p.avg_kv_len = 256; /* short KV never splits */
      t = fi_select_decode_tiles(&h100, &p);
      EXPECT(t.split_kv == 0, "decode of 256 keys %s: split_kv %d", dt[i].why, t.split_kv);
    }
  }

  /* 4c. head_dim 256 on Hopper: CUDA cores (MHA) take KV tiles of 16 and split below two
   * CTAs per SM; split tensor-core plans take KV tiles of 64 where the split grid holds at
   * most one CTA per SM (4 CTAs per SM, chunks >= 128 tokens) or >= 512 tokens per CTA.
   * 4d. fp8 KV (kb 1) at head_dim 64 and 256: no warp-specialised decode kernel there, so
   * the group decides the cores; KV tiles and splits as the e4m3 sweeps measured
   * (bench/sweeps/decode_h200_e4m3_hd64.csv, _hd256.csv) */
  {
    struct { int batch, hq, hkv, hd, kb, kv, cores, kv_tile, split; const char *why; } dt[] = {
        {8, 32, 32, 256, 2, 16384, FI_CORES_CUDA, 16, 1, "head_dim 256, MHA, 256 ctas"},
        {64, 32, 32, 256, 2, 2048, FI_CORES_CUDA, 32, 0,
         "head_dim 256, MHA, 2048 ctas (an H100's bandwidth per SM; 16 at 36 GB/s, below)"},
        {1, 32, 8, 256, 2, 2048, FI_CORES_TENSOR, 64, 1,
         "head_dim 256, 1 x 2048, 8 kv heads: 128 split ctas"},
        {1, 32, 8, 256, 2, 16384, FI_CORES_TENSOR, 32, 1,
         "head_dim 256, 1 x 16384: 528 ctas of 248 tokens"},
        {8, 32, 4, 256, 2, 2048, FI_CORES_TENSOR, 32, 1,
         "head_dim 256, 8 x 2048: 528 ctas of 124 tokens"},
        {8, 32, 4, 256, 2, 16384, FI_CORES_TENSOR, 64, 1,
         "head_dim 256, 8 x 16384: 528 ctas of 993 tokens"},
        {64, 32, 8, 256, 2, 2048, FI_CORES_TENSOR, 32, 0, "head_dim 256, 64 x 2048: 512 ctas unsplit"},
        {8, 32, 32, 64, 1, 16384, FI_CORES_CUDA, 64, 1, "fp8 KV, hd 64, MHA, 256 ctas"},
        {64, 32, 32, 64, 1, 2048, FI_CORES_CUDA, 64, 0, "fp8 KV, hd 64, MHA, 2048 ctas"},
        {1, 32, 8, 64, 1, 2048, FI_CORES_TENSOR, 128, 1, "fp8 KV, hd 64, 1 x 2048: 128 split ctas"},
        {8, 32, 4, 64, 1, 16384, FI_CORES_TENSOR, 32, 1, "fp8 KV, hd 64, 8 x 16384: 528 split ctas"},
        {64, 32, 8, 64, 1, 16384, FI_CORES_TENSOR, 128, 0,
         "fp8 KV, hd 64, 64 x 16384: 512 ctas unsplit"},
        {8, 32, 32, 256, 1, 2048, FI_CORES_CUDA, 32, 1, "fp8 KV, hd 256, MHA, 256 ctas"},
        {1, 32, 32, 256, 1, 16384, FI_CORES_CUDA, 64, 1, "fp8 KV, hd 256, MHA, one long request"},
        {1, 32, 8, 256, 1, 2048, FI_CORES_TENSOR, 64, 1, "fp8 KV, hd 256, 1 x 2048: 128 split ctas"},
        {8, 32, 4, 256, 1, 16384, FI_CORES_TENSOR, 32, 1, "fp8 KV, hd 256, 8 x 16384: 528 ctas"},
        {64, 32, 8, 256, 1, 2048, FI_CORES_TENSOR, 32, 0, "fp8 KV, hd 256, 64 x 2048 unsplit"}};
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; ++i) {
      fi_tile_problem p =
          prob(dt[i].batch, dt[i].hq, dt[i].hkv, dt[i].hd, 2, dt[i].kb, 1, dt[i].kv);
      p.fast_path = 1;
      p.page_size = 16;
      const fi_tiles t = fi_select_decode_tiles(&h100, &p);
      EXPECT(t.cores == (fi_core_kind)dt[i].cores && t.kv_tile == dt[i].kv_tile &&
                 t.split_kv == dt[i].split,
             "hopper decode, %s: cores %d kv_tile %d split %d", dt[i].why, (int)t.cores,
             t.kv_tile, t.split_kv);
    }
  }

  /* 4c'. RoPE over a 16-bit cache at head_dim 256 keeps KV tiles of 32 on tensor cores (at
   * 64 the rotated K tiles and a bf16 q's halves would not fit an SM); fp8 KV keeps 64.
   * 4b'. pages in boxes of 8 rows (8, 24): the 1.5-2 per SM band splits MHA from 4096 keys
   * (H100 pages-of-24 sweep: (8, 2048, 32, 32) faster unsplit) */
  {
    fi_tile_problem p = prob(1, 32, 8, 256, 2, 2, 1, 2048);
    p.fast_path = 1;
    p.page_size = 16;
    p.rope = 1;
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.kv_tile == 32 && t.split_kv == 1,
           "hopper decode, head_dim 256 with RoPE: cores %d kv_tile %d split %d", (int)t.cores,
           t.kv_tile, t.split_kv);
    p.kv_dtype_bytes = 1;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.kv_tile == 64, "hopper decode, head_dim 256 with RoPE over fp8 KV: kv_tile %d",
           t.kv_tile);
    static const int pages[] = {8, 24};
    for (int i = 0; i < 2; ++i) {
      fi_tile_problem b = prob(8, 32, 32, 128, 2, 2, 1, 2048);
      b.fast_path = 1;
      b.page_size = pages[i];
      t = fi_select_decode_tiles(&h100, &b);
      EXPECT(t.split_kv == 0, "hopper decode, MHA 8 x 2048, pages of %d: split %d", pages[i],
             t.split_kv);
      b.avg_kv_len = 16384;
      t = fi_select_decode_tiles(&h100, &b);
      EXPECT(t.split_kv == 1, "hopper decode, MHA 8 x 16384, pages of %d: split %d", pages[i],
             t.split_kv);
    }
  }

  /* 4d'. the warp-specialised decode kernel's boxes per page size: 16 rows for multiples of
   * 16, else 8 or 4 rows where they divide the page, 0 (the per-warp kernels) otherwise */
  {
    static const struct { int64_t page; int rows; } br[] = {
        {16, 16}, {32, 16}, {48, 16}, {8, 8}, {24, 8}, {40, 8}, {4, 4}, {12, 4}, {20, 4},
        {1, 0}, {2, 0}, {3, 0}, {6, 0}, {10, 0}, {0, 0}, {-8, 0}};
    for (size_t i = 0; i < sizeof br / sizeof br[0]; ++i)
      EXPECT(fi_decode_page_box_rows(br[i].page) == br[i].rows,
             "fi_decode_page_box_rows(%lld) = %d, want %d", (long long)br[i].page,
             fi_decode_page_box_rows(br[i].page), br[i].rows);
  }

  /* 4e. 16-bit KV in pages of 2 at head_dim 128 on Hopper: MHA on tensor cores too (pages
   * of 1 as well, but for one request) */
  {
    fi_tile_problem p = prob(8, 32, 32, 128, 2, 2, 1, 2048);
    p.page_size = 2;
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.q_tile == 16 && t.kv_tile == 32 && t.split_kv == 0,
           "hopper decode, MHA, pages of 2: cores %d q %d kv %d split %d", (int)t.cores,
           t.q_tile, t.kv_tile, t.split_kv);
    p.page_size = 1; /* pages of 1 alike, but for one request's MHA grid: CUDA cores */
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR, "hopper decode, MHA, 8 requests in pages of 1: %d",
           (int)t.cores);
    p.batch = 1;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_CUDA, "hopper decode, MHA, one request in pages of 1: %d",
           (int)t.cores);
    p.batch = 8;
    p.page_size = 16; /* (pages of 16 off the fast path keep the group rule) */
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_CUDA, "hopper decode, MHA, pages of 16 off the fast path: %d",
           (int)t.cores);
  }

  /* 4f. The rules fitted to the H100 grids of session 61 (bench/sweeps/decode_h100_hd64.csv,
   * _hd256.csv). head_dim 64, 16-bit KV on the fast path, GQA between 1 and 1.5 CTAs per
   * SM: not split below 4096 keys (pages of 16, or of a size not known yet), split from
   * 4096; MHA in that band still split. At 36 GB/s per SM (the H200 band grid,
   * decode_h200_hd64_band.csv) the short GQA rows split too. */
  {
    fi_tile_problem p = prob(24, 64, 8, 64, 2, 2, 1, 2048); /* 192 CTAs: 1.45 per SM */
    p.fast_path = 1;
    p.page_size = 16;
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.split_kv == 0,
           "hd 64, (24, 2048, 64, 8), pages of 16: cores %d split %d", (int)t.cores, t.split_kv);
    p.page_size = 0; /* (a compiled op before its pages are known: the same choice) */
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.split_kv == 0, "hd 64, (24, 2048, 64, 8), unknown pages: split %d", t.split_kv);
    p.page_size = 16;
    t = fi_select_decode_tiles(&h200, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.split_kv == 1,
           "hd 64, (24, 2048, 64, 8) at 36 GB/s per SM: cores %d split %d", (int)t.cores,
           t.split_kv);
    p.avg_kv_len = 16384;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.split_kv == 1, "hd 64, (24, 16384, 64, 8): split %d", t.split_kv);
    fi_tile_problem m = prob(6, 32, 32, 64, 2, 2, 1, 2048); /* MHA, 1.45 per SM */
    m.fast_path = 1;
    m.page_size = 16;
    t = fi_select_decode_tiles(&h100, &m);
    EXPECT(t.split_kv == 1, "hd 64 MHA (6, 2048, 32, 32): split %d", t.split_kv);
  }
  /* head_dim 256, 16-bit KV, GQA on tensor cores: 0.9-1 CTA per SM unsplit on KV tiles of
   * 64, 1-1.5 per SM split on 64, below 0.9 split as before; with RoPE the old rule
   * (split below one CTA per SM, tiles of 32). MHA on CUDA cores: unsplit grids of more
   * than 4 CTAs per SM on tiles of 32 (beyond 6 per SM only at low bandwidth per SM: 16 on
   * an H200, decode_h200_hd256_band.csv), of 16 elsewhere. */
  {
    fi_tile_problem p = prob(16, 32, 8, 256, 2, 2, 1, 2048); /* 128 CTAs: 0.97 per SM */
    p.fast_path = 1;
    p.page_size = 16;
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.cores == FI_CORES_TENSOR && t.split_kv == 0 && t.kv_tile == 64,
           "hd 256 (16, 2048, 32, 8): cores %d split %d kv %d", (int)t.cores, t.split_kv,
           t.kv_tile);
    p.rope = 1;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.split_kv == 1 && t.kv_tile == 32, "hd 256 (16, 2048, 32, 8) RoPE: split %d kv %d",
           t.split_kv, t.kv_tile);
    p.rope = 0;
    p.batch = 24; /* 1.45 per SM */
    p.avg_kv_len = 16384;
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.split_kv == 1 && t.kv_tile == 64, "hd 256 (24, 16384, 32, 8): split %d kv %d",
           t.split_kv, t.kv_tile);
    p.batch = 8; /* 0.48 per SM: split, as before */
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.split_kv == 1, "hd 256 (8, 16384, 32, 8): split %d", t.split_kv);
    p.batch = 32; /* 1.94 per SM: unsplit, as before */
    t = fi_select_decode_tiles(&h100, &p);
    EXPECT(t.split_kv == 0 && t.kv_tile == 32, "hd 256 (32, 16384, 32, 8): split %d kv %d",
           t.split_kv, t.kv_tile);
    static const struct { int batch, kv, kv_h200; } mha[] = {
        {16, 16, 16}, {24, 32, 32}, {32, 32, 16}, {64, 32, 16}, {128, 32, 16}};
    for (size_t i = 0; i < sizeof mha / sizeof mha[0]; ++i) {
      fi_tile_problem m = prob(mha[i].batch, 32, 32, 256, 2, 2, 1, 2048);
      m.fast_path = 1;
      m.page_size = 16;
      t = fi_select_decode_tiles(&h100, &m);
      EXPECT(t.cores == FI_CORES_CUDA && t.split_kv == 0 && t.kv_tile == mha[i].kv,
             "hd 256 MHA (%d, 2048, 32, 32): cores %d split %d kv %d, want kv %d",
             mha[i].batch, (int)t.cores, t.split_kv, t.kv_tile, mha[i].kv);
      t = fi_select_decode_tiles(&h200, &m);
      EXPECT(t.cores == FI_CORES_CUDA && t.split_kv == 0 && t.kv_tile == mha[i].kv_h200,
             "hd 256 MHA (%d, 2048, 32, 32) at 36 GB/s per SM: cores %d split %d kv %d, want "
             "kv %d", mha[i].batch, (int)t.cores, t.split_kv, t.kv_tile, mha[i].kv_h200);
    }
  }

  /* whole choices and names */
  {
    fi_tile_problem p = prob(1, 32, 8, 128, 2, 2, 1, 8192);
    fi_tiles t = fi_select_decode_tiles(&h100, &p);
    char buf[64];
    EXPECT(strcmp(fi_tiles_name(t, 1, buf, sizeof buf), "decode_tc_q16_kv32_split") == 0 ||
               strncmp(buf, "decode_tc_q16_kv", 16) == 0,
           "decode name %s", buf);
    EXPECT(strstr(buf, "_split") != NULL, "decode batch 1 long kv name lacks _split: %s", buf);
    fi_tile_problem pp = prob(8, 8, 8, 128, 2, 2, 3, 200);
    fi_tiles tp = fi_select_prefill_tiles(&h100, &pp);
    EXPECT(tp.q_tile == 16 && tp.cores == FI_CORES_TENSOR && tp.split_kv == 0,
           "prefill of 3 rows: q_tile %d split %d", tp.q_tile, tp.split_kv);
    EXPECT(strcmp(fi_tiles_name(tp, 0, buf, sizeof buf), "prefill_q16_kv32") == 0, "prefill name %s", buf);
    /* long prefill on Hopper, head_dim 64 / 128: the wgmma tier, 64 x 128 */
    for (int hd = 64; hd <= 256; hd *= 2) {
      fi_tile_problem pl = prob(4, 32, 8, hd, 2, 2, 4096, 4096);
      fi_tiles tl = fi_select_prefill_tiles(&h100, &pl);
      if (hd <= 128) {
        EXPECT(tl.q_tile == 64 && tl.kv_tile == 128 && tl.cores == FI_CORES_WGMMA,
               "hopper prefill hd %d: q %d kv %d cores %d", hd, tl.q_tile, tl.kv_tile, tl.cores);
        EXPECT(strcmp(fi_tiles_name(tl, 0, buf, sizeof buf), "prefill_wg_q64_kv128") == 0,
               "wgmma prefill name %s", buf);
      } else { /* (off the fast path: the mma.sync kernel) */
        EXPECT(tl.q_tile == 64 && tl.cores == FI_CORES_TENSOR, "hd 256 prefill: q %d cores %d",
               tl.q_tile, tl.cores);
      }
      /* Ampere never gets wgmma */
      fi_target a100t = {80, 108, 166912};
      fi_tiles ta = fi_select_prefill_tiles(&a100t, &pl);
      EXPECT(ta.cores == FI_CORES_TENSOR, "a100 prefill hd %d cores %d", hd, ta.cores);
    }
    /* short KV (known, <= 2048): the 64 x 64 wgmma variant (three CTAs per SM) */
    {
      fi_tile_problem ps = prob(32, 32, 8, 128, 2, 2, 512, 512);
      fi_tiles ts = fi_select_prefill_tiles(&h100, &ps);
      EXPECT(ts.q_tile == 64 && ts.kv_tile == 64 && ts.cores == FI_CORES_WGMMA,
             "short-kv hopper prefill: q %d kv %d cores %d", ts.q_tile, ts.kv_tile, ts.cores);
      ps.avg_kv_len = 0; /* unknown at compile time: the long-KV choice */
      ts = fi_select_prefill_tiles(&h100, &ps);
      EXPECT(ts.kv_tile == 128, "unknown-kv hopper prefill kv %d", ts.kv_tile);
    }
    /* the fast path (16-bit KV of q's type, no RoPE): the warp-specialised kernel's
     * 128 x 128 tiles on Hopper at every KV length */
    {
      fi_tile_problem pf = prob(32, 32, 8, 128, 2, 2, 512, 512);
      pf.fast_path = 1;
      fi_tiles tf = fi_select_prefill_tiles(&h100, &pf);
      EXPECT(tf.q_tile == 128 && tf.kv_tile == 128 && tf.cores == FI_CORES_WGMMA,
             "fast-path hopper prefill: q %d kv %d cores %d", tf.q_tile, tf.kv_tile, tf.cores);
      EXPECT(strcmp(fi_tiles_name(tf, 0, buf, sizeof buf), "prefill_wg_q128_kv128") == 0,
             "fast-path prefill name %s", buf);
      pf.avg_kv_len = 8192;
      tf = fi_select_prefill_tiles(&h100, &pf);
      EXPECT(tf.q_tile == 128 && tf.kv_tile == 128, "fast-path long kv: q %d kv %d", tf.q_tile,
             tf.kv_tile);
      /* a group that does not divide 128 runs on that kernel too (126 of its 128 rows) */
      fi_tile_problem pg = prob(4, 24, 8, 128, 2, 2, 4096, 4096); /* group 3 */
      pg.fast_path = 1;
      fi_tiles tg = fi_select_prefill_tiles(&h100, &pg);
      EXPECT(tg.q_tile == 128 && tg.kv_tile == 128 && tg.cores == FI_CORES_WGMMA,
             "group 3 fast path: q %d kv %d cores %d", tg.q_tile, tg.kv_tile, tg.cores);
      pg.fast_path = 0; /* RoPE or fp8 KV: the one-warpgroup wgmma kernel */
      tg = fi_select_prefill_tiles(&h100, &pg);
      EXPECT(tg.q_tile == 64 && tg.cores == FI_CORES_WGMMA, "group 3 off the fast path: q %d cores %d",
             tg.q_tile, tg.cores);
      fi_target a100t = {80, 108, 166912};
      fi_tiles ta = fi_select_prefill_tiles(&a100t, &pf);
      EXPECT(ta.cores == FI_CORES_TENSOR, "a100 fast-path prefill cores %d", ta.cores);
      /* head_dim 256: the same kernel with KV tiles of 64 keys; off the fast path, on
       * another device or with fp8 queries (head_dim 128 only), not */
      pf.head_dim = 256;
      tf = fi_select_prefill_tiles(&h100, &pf);
      EXPECT(tf.q_tile == 128 && tf.kv_tile == 64 && tf.cores == FI_CORES_WGMMA,
             "hd 256 fast-path prefill: q %d kv %d cores %d", tf.q_tile, tf.kv_tile, tf.cores);
      EXPECT(strcmp(fi_tiles_name(tf, 0, buf, sizeof buf), "prefill_wg_q128_kv64") == 0,
             "hd 256 fast-path prefill name %s", buf);
      ta = fi_select_prefill_tiles(&a100t, &pf);
      EXPECT(ta.cores == FI_CORES_TENSOR, "a100 hd 256 prefill cores %d", ta.cores);
      pf.fast_path = 0;
      tf = fi_select_prefill_tiles(&h100, &pf);
      EXPECT(tf.cores == FI_CORES_TENSOR, "hd 256 prefill off the fast path: cores %d",
             tf.cores);
    }
    /* short packed queries stay on the mma.sync kernel on Hopper too */
    EXPECT(tp.cores == FI_CORES_TENSOR, "q16 prefill cores %d", tp.cores);
  }
  return test_finish("test_heuristics");
}
