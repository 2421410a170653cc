#!/bin/bash
# Device-machine script for the compute-bound family (issue 5): runs the binaries built on
# the dev machine and carried in $CARRY (default .gpu-carry-prefill/: libfi_runtime.so,
# test_prefill_gpu, fi_bench, wgmma_layout_probe from bench/probes/ with FI_CARRY_PROBES=1),
# in the order asked:
#   probe     the wgmma layout / descriptor probe (bench/probes/wgmma_layout_probe.cu)
#   sass      counts of HGMMA / HMMA instructions in the runtime library
#   tests     test_prefill_gpu (240 random configurations vs the host backend, then 200 on the
#             warp-specialised kernel's path: FI_TEST_PREFILL_WS=1), and test_block_sparse_gpu
#             with the V lag from a chunk's first tile (FI_PREFILL_V_LAG=1; block-sparse runs
#             lag from the second by default) where carried
#   sanitize  compute-sanitizer memcheck + racecheck on small configurations (empty requests
#             and empty batches among them); an error of a CUDA or driver API call counts
#   bench     fi_bench prefill (ceilings, the table, the tile sweep)
#   ab        the knob FI_PREFILL_Q_AHEAD (default: on for block-sparse runs only) on and
#             off in alternating processes, two rounds: fa3_vs_fi (FI_PEERS=1 carry; FA3
#             in the same process) on the plain rows and fi_bench sparse's random rows
#   vlag      the producer's V lag (FI_PREFILL_V_LAG=0, 1 and 2: off, on, on from a chunk's
#             second tile; prefill_params.h) in alternating processes, three rounds:
#             fa3_vs_fi's plain, soft-cap and window rows, fp8_vs_fi, fi_bench prefill's
#             paged rows, prefill_extras' head_dim 256 rows and sparse's shared prefix
#   kernels   every kernel of prefill_extras' rows by ncu (clocks locked, caches flushed),
#             summed per run by bench/ncu_sums.py against the plain row of the same shape:
#             issue 14's "every extra within 10 % of plain" read from kernel times (a time
#             ratio: the window row keeps fewer pairs, its TFLOP/s are fi_bench's)
#   peers     issue 14's plain rows in one step: PyTorch SDPA (cuDNN and flash backends,
#             bench/peers/torch_sdpa.py, GQA through enable_gqa and with K / V expanded to
#             the query heads) and fa3_vs_fi (FA3 and fi in
#             one process), twice each, alternating -- the (32, 512) row against cuDNN
# Logs under $OUT; a short summary on stdout.
set -o pipefail
CARRY=${CARRY:-.gpu-carry-prefill}
cd "$(dirname "$0")/../$CARRY" || exit 1
[ -f libfi_runtime.so.xz ] && [ ! -f libfi_runtime.so ] && xz -d -k libfi_runtime.so.xz
export LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi -L
for w in ${*:-probe sass tests bench}; do
  start=$(date +%s)
  case $w in
    probe) ./wgmma_layout_probe 2>&1 | tee "$OUT/probe.log" ;;
    sass)
      cuobjdump -sass libfi_runtime.so > "$OUT/sass.txt" 2>&1
      echo "HGMMA $(grep -c HGMMA "$OUT/sass.txt")  HMMA $(grep -c 'HMMA\.' "$OUT/sass.txt")"
      gzip -f "$OUT/sass.txt" ;;
    tests)
      # The random configurations, then (Hopper) 200 on the warp-specialised kernel's path.
      for knobs in "" "FI_TEST_PREFILL_WS=1 FI_TEST_CONFIGS=200 FI_TEST_SEED=9"; do
        env $knobs ./test_prefill_gpu > "$OUT/prefill_tests.log" 2>&1
        echo "test_prefill_gpu [$knobs] rc $?"
        grep -E "configs|refused|FAIL" "$OUT/prefill_tests.log" | head -30
      done
      if [ -x ./test_block_sparse_gpu ]; then
        FI_PREFILL_V_LAG=1 FI_TEST_CONFIGS=60 ./test_block_sparse_gpu > "$OUT/bsr_lag_tests.log" 2>&1
        echo "test_block_sparse_gpu [FI_PREFILL_V_LAG=1] rc $?"
        grep -E "configs|FAIL" "$OUT/bsr_lag_tests.log" | head -10
      fi ;;
    sanitize)
      for tool in memcheck racecheck; do
        for knobs in "" "FI_TEST_PREFILL_WS=1" "FI_TEST_PREFILL_WS=1 FI_TEST_SEED=11"; do
          env $knobs FI_TEST_CONFIGS=${SAN_CONFIGS:-16} FI_TEST_MAXLEN=300 compute-sanitizer \
            --tool $tool --report-api-errors all --error-exitcode 9 ./test_prefill_gpu > "$OUT/san_$tool.log" 2>&1
          echo "$tool [$knobs] rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.log" | tail -1)"
        done
      done ;;
    kernels)
      for L in "b8 L2048" "b1 L8192"; do
        base=
        for x in plain "soft cap 30" "window 1024" alibi "custom mask" rope "fp8 e4m3 kv"; do
          n=kernels_$(echo "$L $x" | tr -c 'a-zA-Z0-9\n' '_')
          timeout 90 ncu -k 'regex:prefill|mask|stage|merge' -c 7 --print-units base \
            --metrics gpu__time_duration.sum ./fi_bench prefill_extras \
            --filter "causal $L h32/8 $x" > "$OUT/$n.log" 2>&1
          python3 ../bench/ncu_sums.py "$OUT/$n.log" ${base:+--base "$base"}
          [ -z "$base" ] && base=$OUT/$n.log
        done
      done ;;
    ab)
      for r in 1 2; do for k in 1 0; do
        if [ -x ./fa3_vs_fi ]; then
          FI_PREFILL_Q_AHEAD=$k timeout 90 ./fa3_vs_fi 1,8192,32,8 8,2048,32,8 32,512,32,8 \
            4,4096,32,32 > "$OUT/ab_fa3_q${k}_$r.log" 2>&1
          echo "fa3_vs_fi FI_PREFILL_Q_AHEAD=$k round $r rc $?"; grep -E "^\| prefill" "$OUT/ab_fa3_q${k}_$r.log"
        fi
        FI_PREFILL_Q_AHEAD=$k timeout 100 ./fi_bench sparse --filter random > "$OUT/ab_sparse_q${k}_$r.log" 2>&1
        echo "fi_bench sparse FI_PREFILL_Q_AHEAD=$k round $r rc $?"
        grep -E "^\| sparse" "$OUT/ab_sparse_q${k}_$r.log" | grep -v paged | cut -c1-150
      done; done ;;
    vlag)  # FI_PREFILL_V_LAG=0 (K then V of each tile), 1 (the lag), 2 (from the second tile)
      for r in 1 2 3; do for k in 0 1 2; do
        for peer in fa3_vs_fi fp8_vs_fi; do
          [ -x ./$peer ] || continue
          rows=; [ $peer = fa3_vs_fi ] && rows="1,8192,32,8 8,2048,32,8 32,512,32,8 4,4096,32,32 \
            1,16384,32,8 1,8192,32,8,cap=30 8,2048,32,8,win=1024 4,4096,32,32,win=4000"
          FI_PREFILL_V_LAG=$k timeout 90 ./$peer $rows > "$OUT/vlag_${peer}_$k.log" 2>&1
          echo "$peer FI_PREFILL_V_LAG=$k round $r rc $?"
          grep -E "^\| (prefill|\()" "$OUT/vlag_${peer}_$k.log" | cut -c1-120
        done
        # paged K / V, head_dim 256 and the shared prefix's deep ring (no lag: the same both
        # ways)
        FI_PREFILL_V_LAG=$k timeout 60 ./fi_bench prefill --filter paged > "$OUT/vlag_paged_$k.log" 2>&1
        echo "prefill paged FI_PREFILL_V_LAG=$k round $r rc $?"
        grep -E "^\| prefill" "$OUT/vlag_paged_$k.log" | head -2 | cut -c1-120
        FI_PREFILL_V_LAG=$k FI_BENCH_EXTRAS=hd256 timeout 60 ./fi_bench prefill_extras \
          > "$OUT/vlag_hd256_$k.log" 2>&1
        echo "prefill_extras hd256 FI_PREFILL_V_LAG=$k round $r rc $?"
        grep -E "^\| prefill" "$OUT/vlag_hd256_$k.log" | cut -c1-120
        FI_PREFILL_V_LAG=$k timeout 90 ./fi_bench sparse --filter "shared prefix" \
          > "$OUT/vlag_sp_$k.log" 2>&1
        echo "sparse shared prefix FI_PREFILL_V_LAG=$k round $r rc $?"
        grep -E "^\| sparse" "$OUT/vlag_sp_$k.log" | cut -c1-150
      done; done ;;
    peers)
      for r in 1 2; do
        for gqa in 1 0; do  # K / V as 8 KV heads (enable_gqa), or expanded to the 32 query heads
          GQA=$gqa timeout 120 python3 ../bench/peers/torch_sdpa.py > "$OUT/peers_sdpa_g${gqa}_$r.log" 2>&1
          echo "torch_sdpa GQA=$gqa round $r rc $?"; head -8 "$OUT/peers_sdpa_g${gqa}_$r.log"
        done
        if [ -x ./fa3_vs_fi ]; then
          timeout 90 ./fa3_vs_fi 1,8192,32,8 8,2048,32,8 32,512,32,8 4,4096,32,32 \
            > "$OUT/peers_fa3_$r.log" 2>&1
          echo "fa3_vs_fi round $r rc $?"; grep -E "^\| prefill" "$OUT/peers_fa3_$r.log"
        fi
      done ;;
    bench)
      ./fi_bench prefill ${BENCH_ARGS:-} > "$OUT/prefill_bench.log" 2>&1
      echo "fi_bench rc $?"
      grep -E "ceiling|copy|GEMM|^\| prefill" "$OUT/prefill_bench.log" | grep -v "sweep" | head -30
      grep -E "sweep|chosen" "$OUT/prefill_bench.log" | awk -F'|' '{print $3 "|" $4 "|" $5 "|" $8 "|" $9}' | tr -s ' ' | head -90 ;;
  esac
  echo "[$w: $(( $(date +%s) - start )) s]"
done
