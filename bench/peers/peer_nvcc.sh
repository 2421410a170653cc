#!/usr/bin/env bash
# The nvcc line every peer here shares: sm_90a, FlashInfer, CUTLASS and CCCL from the sources
# that ../shared/anchor/build.sh extracts into OUT_DIR/src (run that first, with the same
# OUT_DIR), fi's headers, linked with libfi_runtime.
#   FI_SRC   the fi source tree;  FI_LIB  the directory of libfi_runtime.so (sm_90a)
# Usage: peer_nvcc.sh SOURCE OUTPUT [nvcc flags ...]
set -euo pipefail
: "${FI_SRC:?set FI_SRC}" "${FI_LIB:?set FI_LIB}"
OUT_DIR=${OUT_DIR:-anchor-build}
src=$OUT_DIR/src
[ -d "$src/flashinfer/include" ] || { echo "run ../shared/anchor/build.sh first (OUT_DIR=$OUT_DIR)" >&2; exit 1; }
source=$1 out=$2
shift 2
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr --expt-extended-lambda \
  -DNDEBUG -DFLASHINFER_ENABLE_F16 -DCUTLASS_ENABLE_GDC_FOR_SM90 "$@" \
  -I"$src/cccl/libcudacxx/include" -I"$src/cccl/cub" -I"$src/cccl/thrust" -I"$src/flashinfer/include" \
  -I"$src/cutlass/include" -I"$src/cutlass/tools/util/include" -I"$FI_SRC/kernels/include" \
  "$source" -o "$out" -L"$FI_LIB" -lfi_runtime
echo "built $out"
