#!/usr/bin/env bash
# Builds bsr_vs_fi (FlashInfer's block-sparse path on Hopper -- its FA3 sm90 paged prefill as
# flashinfer/sparse.py plans it -- against fi's block-sparse attention, one binary) with
# peer_nvcc.sh (FI_SRC, FI_LIB and OUT_DIR as there).
# Run on the GPU machine: LD_LIBRARY_PATH=$FI_LIB OUT_DIR/bsr_vs_fi [block,sparsity ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/peer_nvcc.sh" "$here/bsr_vs_fi.cu" "${OUT_DIR:-anchor-build}/bsr_vs_fi"
