#!/bin/bash
# Device-machine script for the memory-bound family (issue 4): runs the carried binaries
# (.gpu-carry: libfi_runtime.so, GPU tests, fi_bench built on the dev machine), the GPU
# tests, compute-sanitizer memcheck/racecheck on small configurations, and the benchmark.
# Logs go to $OUT. Usage: bash bench/run_gpu.sh [tests|sanitize|bench]...
set -o pipefail
cd "$(dirname "$0")/../.gpu-carry" || exit 1
export LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
what=${*:-tests sanitize bench}
nvidia-smi -L
for w in $what; do
  case $w in
    tests)
      for t in test_merge_gpu test_append_gpu test_decode_gpu; do
        start=$(date +%s)
        ./$t > "$OUT/$t.log" 2>&1
        echo "$t: rc $? ($(( $(date +%s) - start )) s)"
        grep -E "configs|graph|plan hd|passed|FAILED|FAIL" "$OUT/$t.log" | head -30
      done ;;
    sanitize)
      for tool in memcheck racecheck; do
        for t in test_merge_gpu test_append_gpu test_decode_gpu; do
          start=$(date +%s)
          FI_TEST_SMALL=1 FI_TEST_CONFIGS=${SAN_CONFIGS:-12} compute-sanitizer --tool $tool \
            --error-exitcode 9 ./$t > "$OUT/san_${tool}_$t.log" 2>&1
          echo "$tool $t: rc $? ($(( $(date +%s) - start )) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_$t.log" | tail -1)"
        done
      done ;;
    bench)
      ./fi_bench decode 2>&1 | tee "$OUT/bench.log" ;;
  esac
done
