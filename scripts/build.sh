#!/usr/bin/env bash
# Configures (once) and builds fi into ${FI_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FI_BUILD_DIR:-build}
jobs=${FI_JOBS:-$(nproc)}
if [ ! -f "$build/build.ninja" ]; then
  cuda_flag=()
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_flag=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  cmake -G Ninja -S . -B "$build" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    "${cuda_flag[@]}" "$@"
fi
start=$(date +%s)
ninja -C "$build" -j "$jobs"
echo "== built in $(( $(date +%s) - start )) s"
