#!/bin/bash
# Device-machine script for the memory-bound family (issue 4): runs the carried binaries
# (libfi_runtime.so, GPU tests, fi_bench built on the dev machine), the GPU tests,
# compute-sanitizer memcheck/racecheck on small configurations, the benchmark, and
# optional extras. Logs: $OUT/tests.log, san.log, bench.log, extra.log, ab.log, sweep.log,
# grids.log.
# Usage: [CARRY=.gpu-carry] bash bench/run_gpu.sh [tests|sanitize|bench|ncu|variants|ab|sweep|grids]...
#   ab:    A/B of two builds carried as $CARRY/base and $CARRY/new (each its own
#          libfi_runtime.so, or .so.xz when two runtimes would exceed the carry limit),
#          the decode rows of each timed alternately, two rounds (bench/NOTES.md, v8/v9).
#   sweep: FI_BENCH_SWEEP="$SWEEP" (knob tokens, see bench_decode.c) in one process.
#   grids: the decode grid (every variant on 30 shapes, twice; bench_decode.c decode_grid)
#          for each of GRIDS (default "hd64 hd256 page8 bf16": head_dim 64 / 256 at page
#          16 fp16, page 8 / bf16 at head_dim 128; parts join with -, as e4m3-hd64), into
#          $OUT/sweeps/decode_<gpu>_<grid>.csv;
#          copied into bench/sweeps/, each becomes a replay test (test/runtime/CMakeLists.txt).
#          GRID_SECONDS (default 240) bounds each grid.
set -o pipefail
CARRY=${CARRY:-.gpu-carry}
cd "$(dirname "$0")/../$CARRY" || exit 1
for v in base new; do  # unpack compressed runtimes of an A/B carry
  [ -f $v/libfi_runtime.so.xz ] && (cd $v && xz -d -k -f libfi_runtime.so.xz)
done
[ -f libfi_runtime.so.xz ] && [ ! -f libfi_runtime.so ] && xz -d -k libfi_runtime.so.xz
export LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
what=${*:-tests sanitize bench}
nvidia-smi -L
for w in $what; do
  case $w in
    tests)
      for t in test_merge_gpu test_append_gpu test_decode_gpu test_streams_gpu; do
        start=$(date +%s)
        ./$t > "$OUT/cur.log" 2>&1
        rc=$?
        cat "$OUT/cur.log" >> "$OUT/tests.log"
        echo "$t: rc $rc ($(( $(date +%s) - start )) s)"
        grep -E "configs|graph|plan hd|streams:|passed|FAILED|FAIL|f16:|bf16:" "$OUT/cur.log" | head -40
      done
      # Page-aligned plans (FI_TEST_PAGE16; the warp-specialised kernel on sm_90): default
      # CTA shapes, then 10-warp CTAs with a 9-slot ring (other shapes, ring wrap-around every
      # few tiles); then pages that are not a multiple of 16 (FI_TEST_PAGE_SMALL: 1, 2, 4, 8,
      # 12, 20, 24, 40, the warp-specialised kernel's boxes of 4 or 8 rows and the per-warp
      # kernels).
      for knobs in "FI_TEST_PAGE16=1 FI_TEST_SEED=77 FI_TEST_CONFIGS=160" \
                   "FI_TEST_PAGE16=1 FI_TEST_SEED=5 FI_TEST_CONFIGS=80 FI_DECODE_TCW_WARPS=10 FI_DECODE_TWS_SLOTS=9" \
                   "FI_TEST_PAGE_SMALL=1 FI_TEST_SEED=55 FI_TEST_CONFIGS=160"; do
        env $knobs ./test_decode_gpu > "$OUT/cur.log" 2>&1
        rc=$?
        cat "$OUT/cur.log" >> "$OUT/tests.log"
        echo "test_decode_gpu ($knobs): rc $rc"
        grep -E "configs|graph|FAILED|FAIL|f16:|bf16:" "$OUT/cur.log" | head -20
      done
      rm -f "$OUT/cur.log" ;;
    sanitize)
      for tool in memcheck racecheck; do
        for t in test_merge_gpu test_append_gpu test_decode_gpu; do
          start=$(date +%s)
          FI_TEST_SMALL=1 FI_TEST_CONFIGS=${SAN_CONFIGS:-12} compute-sanitizer --tool $tool \
            --error-exitcode 9 ./$t > "$OUT/cur.log" 2>&1
          rc=$?
          cat "$OUT/cur.log" >> "$OUT/san.log"
          echo "$tool $t: rc $rc ($(( $(date +%s) - start )) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/cur.log" | tail -1)"
        done
        # page-aligned plans, then pages that are not a multiple of 16 (as in tests)
        for pages in FI_TEST_PAGE16=1 FI_TEST_PAGE_SMALL=1; do
          env $pages FI_TEST_SMALL=1 FI_TEST_CONFIGS=${SAN_CONFIGS:-12} \
            compute-sanitizer --tool $tool --error-exitcode 9 ./test_decode_gpu > "$OUT/cur.log" 2>&1
          rc=$?
          cat "$OUT/cur.log" >> "$OUT/san.log"
          echo "$tool test_decode_gpu ($pages): rc $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/cur.log" | tail -1)"
        done
      done
      rm -f "$OUT/cur.log" ;;
    bench)
      ./fi_bench decode 2>&1 | tee -a "$OUT/bench.log" ;;
    variants)
      for v in ${VARIANTS:-tc:32 tc:64 tc:128 cc:32 cc:64 cc:128}; do
        echo "== FI_BENCH_DECODE_TILES=$v"
        FI_BENCH_DECODE_TILES=$v ./fi_bench decode --filter "decode (" --reps 50 2>&1 | grep "^| decode" | grep -v forced | tee -a "$OUT/extra.log"
      done ;;
    ncu2)
      for v in tc:32 tc:64; do
        FI_BENCH_DECODE_TILES=$v ncu --clock-control none -k regex:decode_tc --launch-skip 3 --launch-count 1 \
          --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
          ./fi_bench decode --filter "(64, 4096, 32, 8)" --reps 50 >> "$OUT/ncu.log" 2>&1
      done
      grep -E "decode_tc|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occ|Issued Warp|No Eligible|Warp Cycles Per Issued|stall|Stall|Mem Busy|L2 Hit|Registers|Block Limit" "$OUT/ncu.log" | head -80 ;;
    ab)
      for r in 1 2; do
        for v in base new; do
          echo "== $v (round $r)"
          (cd $v && LD_LIBRARY_PATH=. ./fi_bench decode --filter "decode (") 2>&1 | tee -a "$OUT/ab.log" | grep -E "^\| decode|ceilings" | grep -v forced
        done
      done ;;
    sweep)
      FI_BENCH_SWEEP="${SWEEP:?set SWEEP}" ./fi_bench decode --reps 50 2>&1 | tee -a "$OUT/sweep.log" | grep "^| decode" ;;
    grids)
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H[0-9]+' | tr 'H' 'h')
      mkdir -p "$OUT/sweeps"
      for g in ${GRIDS:-hd64 hd256 page8 bf16}; do
        hd=128 page=16 kv= bad=
        for part in ${g//-/ }; do  # a grid names one or more fixed dimensions: e4m3-hd64
          case $part in
            hd64) hd=64 ;; hd256) hd=256 ;; page[0-9]*) page=${part#page} ;; bf16|e4m3) kv=$part ;;
            *) bad=$part ;;
          esac
        done
        if [ -n "$bad" ]; then
          echo "grids: unknown part $bad of grid $g (hd64, hd256, page<n>, bf16, e4m3, joined by -)"
          continue
        fi
        csv="$OUT/sweeps/decode_${gpu:-gpu}_$g.csv"
        start=$(date +%s)
        FI_BENCH_DECODE_HEAD_DIM=$hd FI_BENCH_DECODE_PAGE=$page FI_BENCH_GRID_KV=$kv \
          FI_BENCH_GRID_OUT="$csv" timeout "${GRID_SECONDS:-240}" ./fi_bench decode \
          >> "$OUT/grids.log" 2>&1
        echo "grid $g: rc $? ($(( $(date +%s) - start )) s), $(grep -c , "$csv" 2>/dev/null) lines"
      done ;;
    ncu)
      ncu --clock-control none -k regex:"decode|merge" --launch-count 4 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        ./fi_bench decode --filter "(1, 32768, 32, 8)" --reps 50 > "$OUT/ncu.log" 2>&1
      grep -E "decode_|merge_|Duration|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Dynamic Shared|Stall" "$OUT/ncu.log" | head -60 ;;
  esac
done
