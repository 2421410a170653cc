#!/usr/bin/env bash
# Builds bsr_vs_fi (FlashInfer's block-sparse path on Hopper -- its FA3 sm90 paged prefill as
# flashinfer/sparse.py plans it -- against fi's block-sparse attention, one binary) with the
# FlashInfer, CUTLASS and CCCL sources that ../shared/anchor/build.sh extracts into
# OUT_DIR/src (run that first, with the same OUT_DIR).
#   FI_SRC   the fi source tree;  FI_LIB  the directory of libfi_runtime.so (sm_90a)
# Run on the GPU machine: LD_LIBRARY_PATH=$FI_LIB OUT_DIR/bsr_vs_fi [block,sparsity ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${FI_SRC:?set FI_SRC}" "${FI_LIB:?set FI_LIB}"
OUT_DIR=${OUT_DIR:-anchor-build}
src=$OUT_DIR/src
[ -d "$src/flashinfer/include" ] || { echo "run ../shared/anchor/build.sh first (OUT_DIR=$OUT_DIR)" >&2; exit 1; }
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr --expt-extended-lambda \
  -DNDEBUG -DFLASHINFER_ENABLE_F16 -DCUTLASS_ENABLE_GDC_FOR_SM90 \
  -I"$src/cccl/libcudacxx/include" -I"$src/cccl/cub" -I"$src/cccl/thrust" -I"$src/flashinfer/include" \
  -I"$src/cutlass/include" -I"$src/cutlass/tools/util/include" -I"$FI_SRC/kernels/include" \
  "$here/bsr_vs_fi.cu" -o "$OUT_DIR/bsr_vs_fi" -L"$FI_LIB" -lfi_runtime
echo "built $OUT_DIR/bsr_vs_fi"
