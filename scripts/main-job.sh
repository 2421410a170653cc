#!/usr/bin/env bash
# The main job: compiles the examples (examples/*.mlir: a 4-layer decode step over a paged
# cache, a 4-layer causal prefill step over ragged requests, cascade attention with a
# shared prefix) through the fi-to-llvm pipeline into executables linked with their C
# drivers (examples/drivers/) and libfi_runtime, runs them on the host backend -- and on
# the CUDA backend when a GPU is present -- and prints what it did and how long each step
# took. Every run checks the compiled program against the runtime called directly.
#   FI_BUILD_DIR (default build)   FI_MAIN_ARGS: extra driver options, e.g. --steps=10
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FI_BUILD_DIR:-build}
llvm_bin=${FI_LLVM_BIN:-/usr/lib/llvm-22/bin}
fiopt="$build/bin/fi-opt"
out="$build/main-job"
cc=${CC:-cc}
mkdir -p "$out"

ms() { echo $(( ($2 - $1) / 1000000 )); }
# timed LABEL CMD...: runs CMD, prints LABEL with the time it took.
timed() {
  local label=$1; shift
  local t0 t1; t0=$(date +%s%N)
  "$@"
  t1=$(date +%s%N)
  printf '   %-66s %6s ms\n' "$label" "$(ms "$t0" "$t1")"
}

gpu=0
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then gpu=1; fi
echo "== fi main job: examples/*.mlir -> fi-opt --fi-to-llvm -> mlir-translate -> llc -> executable"
echo "   build: $build; GPU: $([ $gpu = 1 ] && nvidia-smi -L | head -1 || echo none, CUDA runs skipped)"

status=0
for ex in decode_step prefill_step cascade; do
  src="examples/$ex.mlir"
  [ -e "$src" ] || continue
  echo "== $ex ($src)"
  timed "parse + verify (fi-opt)" "$fiopt" "$src" -o /dev/null
  timed "tiles, plans, CSE, bufferize, runtime calls, LLVM (fi-to-llvm)" \
    "$fiopt" "$src" --fi-to-llvm -o "$out/$ex.llvm.mlir"
  timed "LLVM dialect -> LLVM IR (mlir-translate)" \
    "$llvm_bin/mlir-translate" --mlir-to-llvmir "$out/$ex.llvm.mlir" -o "$out/$ex.ll"
  timed "LLVM IR -> object (llc -O2)" \
    "$llvm_bin/llc" -O2 -filetype=obj --relocation-model=pic "$out/$ex.ll" -o "$out/$ex.o"
  timed "link with examples/drivers/$ex.c and libfi_runtime ($cc)" \
    "$cc" -std=c11 -O2 -w -Ikernels/include -Ikernels/src -Itest/runtime -Itest/E2E/drivers \
    "examples/drivers/$ex.c" "$out/$ex.o" -L"$build/kernels" -lfi_runtime \
    -Wl,-rpath,"$(cd "$build/kernels" && pwd)" -lm -o "$out/$ex"
  plans=$(grep -c 'llvm.call @fi_rt_[a-z_]*_plan(' "$out/$ex.llvm.mlir" || true)
  runs=$(grep -c 'llvm.call @fi_rt_[a-z_]*_\(run\|state\|states\)_' "$out/$ex.llvm.mlir" || true)
  echo "   compiled code: $plans plan call(s), $runs run/merge call(s) into the runtime"
  for backend in host cuda; do
    if [ $backend = cuda ] && [ $gpu = 0 ]; then continue; fi
    echo "   -- run on the $backend backend:"
    t0=$(date +%s%N)
    if FI_BACKEND=$backend "$out/$ex" ${FI_MAIN_ARGS:-} > "$out/$ex.$backend.log" 2>&1; then
      sed -e '/^  layer /d' -e '/^  *o: \|^  *lse: /d' "$out/$ex.$backend.log" | sed 's/^/      /'
    else
      sed 's/^/      /' "$out/$ex.$backend.log"; status=1
    fi
    printf '   %-66s %6s ms\n' "whole run ($backend)" "$(ms "$t0" "$(date +%s%N)")"
  done
done
[ $status = 0 ] && echo "== main job: all examples compiled, ran and matched the runtime" \
                || echo "== main job: FAILED (see above)"
exit $status
