#!/usr/bin/env bash
# Builds fa3_hd256_vs_fi: ../shared/anchor/fa3_vs_fi.cu at head_dim 256 (FlashInfer's FA3
# sm90 ragged prefill instantiated for 256 / 256, and fi on the same buffers), generated
# from the anchor's source by substituting its head dim (nothing of it is committed here),
# built by peer_nvcc.sh with the FlashInfer, CUTLASS and CCCL sources that
# ../shared/anchor/build.sh extracts into OUT_DIR/src (run that first, with the same OUT_DIR).
#   FI_SRC   the fi source tree;  FI_LIB  the directory of libfi_runtime.so (sm_90a)
#   ANCHOR   the anchor's fa3_vs_fi.cu (default: FI_SRC/../shared/anchor/fa3_vs_fi.cu)
# Run on the GPU machine: LD_LIBRARY_PATH=$FI_LIB OUT_DIR/fa3_hd256_vs_fi 1,8192,16,8 ...
# (rows b,len,qo_heads,kv_heads[,cap=C][,win=W] as the anchor's; fp16, causal).
set -euo pipefail
: "${FI_SRC:?set FI_SRC}" "${FI_LIB:?set FI_LIB}"
export OUT_DIR=${OUT_DIR:-anchor-build}
ANCHOR=${ANCHOR:-$FI_SRC/../shared/anchor/fa3_vs_fi.cu}
src=$OUT_DIR/src
[ -d "$src/flashinfer/include" ] || { echo "run ../shared/anchor/build.sh first (OUT_DIR=$OUT_DIR)" >&2; exit 1; }
gen=$OUT_DIR/fa3_hd256_vs_fi.cu
sed -e 's/Dispatched<128, 128, MaskMode/Dispatched<256, 256, MaskMode/g' \
    -e 's/const int D = 128;/const int D = 256;/' "$ANCHOR" > "$gen"
[ "$(grep -c 'Dispatched<256, 256' "$gen")" = 2 ] && grep -q 'const int D = 256;' "$gen" ||
  { echo "the anchor's source changed: its head dim was not substituted" >&2; exit 1; }
"$(dirname "$0")/peer_nvcc.sh" "$gen" "$OUT_DIR/fa3_hd256_vs_fi"
