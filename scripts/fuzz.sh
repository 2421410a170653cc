#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-22, AddressSanitizer and UBSan into
# ${FI_FUZZ_BUILD:-build-fuzz} and runs each for FI_FUZZ_SECONDS (default 60) from its
# corpus in fuzz/corpus/<target> (the IR target also reads test/ and examples/ as seeds),
# libFuzzer's seed FI_FUZZ_SEED (default 1; another seed explores other inputs in long runs).
# A crash, a sanitizer report or a leak fails the script; libFuzzer leaves the input in
# the build directory (crash-*), to be turned into a regression test (fuzz/regressions/).
#   scripts/fuzz.sh [runtime] [ir]      (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${FI_FUZZ_BUILD:-build-fuzz}
seed=${FI_FUZZ_SEED:-1}
seconds=${FI_FUZZ_SECONDS:-60}
targets=("$@")
((${#targets[@]})) || targets=(runtime ir)
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -g -O1"
if [ ! -f "$build/build.ninja" ]; then
  mlir=OFF
  for t in "${targets[@]}"; do [ "$t" = ir ] && mlir=ON; done
  mkdir -p "$build"
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$build" -DFI_BUILD_FUZZERS=ON \
    -DFI_ENABLE_CUDA=OFF -DFI_ENABLE_MLIR=$mlir -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    "-DCMAKE_C_FLAGS=$san" "-DCMAKE_CXX_FLAGS=$san -fno-sanitize=vptr" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" > "$build/configure.log" 2>&1 ||
    { tail -30 "$build/configure.log"; exit 1; }
fi
status=0
for t in "${targets[@]}"; do
  ninja -C "$build" "fuzz_$t" > /dev/null
  mkdir -p "fuzz/corpus/$t"
  seeds=()
  [ "$t" = ir ] && seeds=(test/Dialect test/Lowering test/E2E examples)
  echo "== fuzz_$t for ${seconds} s"
  # Regressions first: every input that once failed must pass.
  if [ -d "fuzz/regressions/$t" ] && [ -n "$(ls -A "fuzz/regressions/$t")" ]; then
    ASAN_OPTIONS=allow_user_poisoning=0 "$build/fuzz/fuzz_$t" -runs=0 "$root/fuzz/regressions/$t" > "$build/fuzz_$t.regressions.log" 2>&1 ||
      { tail -40 "$build/fuzz_$t.regressions.log"; status=1; continue; }
  fi
  # New units go to a scratch corpus in the build (libFuzzer writes into its first
  # directory): the committed corpus stays the minimized one and is only read.
  mkdir -p "$build/corpus-$t"
  (cd "$build" && ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0 ./fuzz/fuzz_$t -seed="$seed" -max_total_time="$seconds" \
     -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 "corpus-$t" "$root/fuzz/corpus/$t" \
     "${seeds[@]/#/$root/}") > "$build/fuzz_$t.log" 2>&1 ||
    { tail -60 "$build/fuzz_$t.log"; status=1; continue; }
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$build/fuzz_$t.log" | tr '\n' ' '
  echo
done
exit $status
