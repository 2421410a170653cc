#!/usr/bin/env bash
# Device-machine script (no MLIR there): builds the runtime with the CUDA backend, links
# the objects that fi-opt --fi-to-llvm | mlir-translate | llc made on the dev machine
# (scripts/gpu-e2e.sh --prepare <build> writes them to <build>/gpu-carry) with their C
# drivers, and runs every program on the CUDA backend (FI_BACKEND=cuda) and, for
# comparison, on the host backend. Logs go to $OUT.
#   on the dev machine:  scripts/gpu-e2e.sh --prepare build-lower
#   on the GPU machine:  scripts/gpu-e2e.sh build-lower/gpu-carry
# With FI_RUNTIME_LIB_DIR=<dir holding libfi_runtime.so>, the GPU machine builds nothing.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --prepare ]; then
  build=${2:-build}
  carry="$build/gpu-carry"
  llvm=/usr/lib/llvm-22/bin
  rm -rf "$carry" && mkdir -p "$carry"
  compile() { "$build/bin/fi-opt" "$1" --fi-to-llvm | "$llvm/mlir-translate" --mlir-to-llvmir |
              "$llvm/llc" -O2 -filetype=obj --relocation-model=pic -o "$carry/$2.o"; }
  for t in decode prefill merge_append block_sparse fp8; do compile "test/E2E/$t.mlir" "$t"; done
  # On CUDA the split writes device memory, which only plans made on the device read.
  "$build/bin/fi-opt" test/E2E/shared_prefix.mlir --fi-to-llvm=plans-on-device=1 |
    "$llvm/mlir-translate" --mlir-to-llvmir |
    "$llvm/llc" -O2 -filetype=obj --relocation-model=pic -o "$carry/shared_prefix.o"
  for e in decode_step prefill_step cascade; do compile "examples/$e.mlir" "$e"; done
  # Variants for the CUDA backend: their device code through NVPTX and ptxas, here.
  "$build/bin/fi-opt" test/E2E/variants_cuda.mlir --fi-to-llvm=backend=cuda |
    "$llvm/mlir-translate" --mlir-to-llvmir |
    "$llvm/llc" -O2 -filetype=obj --relocation-model=pic -o "$carry/variants_cuda.o"
  "$build/bin/fi-opt" test/E2E/variants_cuda_decode_bench.mlir --fi-to-llvm="backend=cuda plans-on-device=1" |
    "$llvm/mlir-translate" --mlir-to-llvmir |
    "$llvm/llc" -O2 -filetype=obj --relocation-model=pic -o "$carry/variants_cuda_decode_bench.o"
  "$build/bin/fi-opt" examples/variants.mlir --fi-to-llvm=backend=cuda |
    "$llvm/mlir-translate" --mlir-to-llvmir |
    "$llvm/llc" -O2 -filetype=obj --relocation-model=pic -o "$carry/variants_examples.o"
  "$build/bin/fi-embed-decode-step" "$carry/embed.ll" 2 2> /dev/null &&
    "$llvm/llc" -O2 -filetype=obj --relocation-model=pic "$carry/embed.ll" -o "$carry/embed_decode.o"
  # The 32-layer step examples/embed/serve_decode_step.c serves (plans on the device).
  "$build/bin/fi-embed-decode-step" "$carry/embed32.ll" 32 device 2> /dev/null &&
    "$llvm/llc" -O2 -filetype=obj --relocation-model=pic "$carry/embed32.ll" -o "$carry/embed32_decode.o"
  rm -f "$carry/embed.ll" "$carry/embed32.ll"
  ls -la "$carry"
  exit 0
fi

carry=${1:-build-lower/gpu-carry}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi -L
if [ -n "${FI_RUNTIME_LIB_DIR:-}" ]; then
  # A libfi_runtime.so with the CUDA backend built on the dev machine and carried along.
  lib=$(cd "$FI_RUNTIME_LIB_DIR" && pwd)
else
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  t0=$(date +%s)
  cmake -G Ninja -S . -B /tmp/fi-gpu -DFI_ENABLE_MLIR=OFF -DFI_CUDA_ARCHITECTURES=90a \
    -DCMAKE_CUDA_COMPILER="$nvcc" > "$OUT/build.log" 2>&1 &&
    ninja -C /tmp/fi-gpu fi_runtime >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  echo "== runtime with the CUDA backend built in $(( $(date +%s) - t0 )) s"
  lib=/tmp/fi-gpu/kernels
fi
flags=(-std=c11 -O2 -w -Ikernels/include -Ikernels/src -Itest/runtime -Itest/E2E/drivers)
cuda_home=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
link() { cc "${flags[@]}" "$1" "$carry/$2.o" -L$lib -lfi_runtime -Wl,-rpath,$lib -lm -o "/tmp/$2" "${@:3}"; }
link test/E2E/drivers/decode.c decode
link test/E2E/drivers/prefill.c prefill
link test/E2E/drivers/merge_append.c merge_append
link test/E2E/drivers/block_sparse.c block_sparse
link test/E2E/drivers/fp8.c fp8
link test/E2E/drivers/shared_prefix.c shared_prefix
link test/E2E/drivers/embed_decode.c embed_decode
link test/E2E/drivers/variants_cuda.c variants_cuda "$carry/variants_cuda_decode_bench.o"
link examples/drivers/variants.c variants_examples -Iexamples/drivers
# The decode step driver owns a CUDA stream and captures the step in a graph.
link examples/drivers/decode_step.c decode_step -DFI_DRIVER_CUDA -I"$cuda_home/include" \
  -L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64"
# The serving example owns its stream, allocator and graph (CUDA only).
link examples/embed/serve_decode_step.c embed32_decode -I"$cuda_home/include" \
  -L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64"
mv /tmp/embed32_decode /tmp/serve_decode_step
# The prefill step driver owns a CUDA stream and captures the step in a graph too.
link examples/drivers/prefill_step.c prefill_step -DFI_DRIVER_CUDA -I"$cuda_home/include" \
  -L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64"
link examples/drivers/cascade.c cascade -DFI_DRIVER_CUDA -I"$cuda_home/include" \
  -L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64"
status=0; runs=0
run() { # name backend args...  (FI_E2E_ONLY=<name>: run only that program)
  local name=$1 backend=$2; shift 2
  [ -z "${FI_E2E_ONLY:-}" ] || [ "$FI_E2E_ONLY" = "$name" ] || return 0
  local t=$(date +%s%N)
  runs=$((runs + 1))
  FI_BACKEND=$backend timeout 300 "/tmp/$name" "$@" > "$OUT/$name.$backend.$runs.log" 2>&1
  local rc=$?
  echo "== $name on $backend: rc $rc, $(( ($(date +%s%N) - t) / 1000000 )) ms"
  grep -vE "^  +(o|lse|v|s|k cache|v cache|kv cache|layer [0-9]+ [a-z]+|o \(layer 2\)|replay [0-9]+ layer [0-9]+ o|graph layer [0-9]+ cache): " "$OUT/$name.$backend.$runs.log" | head -60
  [ $rc = 0 ] || status=1
}
for name in decode prefill merge_append block_sparse fp8 shared_prefix embed_decode; do run $name cuda; done
run decode_step cuda --batch=32 --max-kv=4096 --steps=20 --replays=50
run decode_step cuda --batch=128 --max-kv=4096 --steps=20 --replays=10
run decode_step cuda --batch=1 --max-kv=32768 --steps=20 --replays=50
run decode_step host --batch=8 --max-kv=512 --steps=1 --replays=0
run serve_decode_step cuda --batch=32 --max-kv=2048 --steps=100
run serve_decode_step cuda --batch=128 --max-kv=1024 --steps=100
run prefill_step cuda --batch=8 --max-kv=1024 --max-q=256 --steps=10 --replays=20
run prefill_step host --batch=8 --max-kv=1024 --max-q=256 --steps=1 --replays=0
run cascade cuda --prefix-pages=256 --max-suffix=256 --steps=10 --replays=20
run cascade host --prefix-pages=256 --max-suffix=256 --steps=1 --replays=0
run variants_cuda cuda --configs=40
run variants_examples cuda --configs=100
exit $status
