#!/usr/bin/env bash
# Builds fp8_vs_fi (FlashInfer's fp8 sm90 ragged prefill against fi's fp8 attention, one
# binary) with peer_nvcc.sh (FI_SRC, FI_LIB and OUT_DIR as there).
# Run on the GPU machine: LD_LIBRARY_PATH=$FI_LIB OUT_DIR/fp8_vs_fi [b,len,qo_h,kv_h ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/peer_nvcc.sh" "$here/fp8_vs_fi.cu" "${OUT_DIR:-anchor-build}/fp8_vs_fi" -DFLASHINFER_ENABLE_FP8_E4M3
