#!/usr/bin/env bash
# Fills one carry directory for the device scripts (bench/run_gpu.sh, run_gpu_prefill.sh,
# run_gpu_sparse.sh: CARRY=<dir>) from this machine's CUDA build, so that a device call
# builds nothing: the runtime (stripped, xz: the scripts unpack it), the GPU tests, the
# block-sparse test's PyTorch shim, fi_bench, the programs scripts/gpu-e2e.sh runs (e2e/),
# with FI_CARRY_PROBES=1 the probes, and with FI_PEERS=1 the peers built against FlashInfer
# (../shared/anchor's fa3_vs_fi and decode_vs_fi, and bsr_vs_fi, fp8_vs_fi from
# bench/peers). The directory must be named in the device call's `carry` (64 MB with the
# working tree, checked at the end; the runtime alone is ~46 MB compressed). A fresh
# checkout has no carry: run this after scripts/setup.sh (the CUDA build takes ~25 minutes
# on 2 cores).
#   bench/prepare_gpu_carry.sh [DIR]              (default .gpu-carry)
#   FI_BUILD_DIR   the build with the CUDA backend (default build)
#   FI_CARRY_PROBES=1  also decode_read_probe, wgmma_layout_probe and cluster_probe
#   FI_PEERS=1     also the peers; FI_MIRROR, CUTLASS_MIRROR, CCCL_MIRROR: the git
#                  directories `fetch` returned for flashinfer-ai/flashinfer, NVIDIA/cutlass,
#                  NVIDIA/cccl; ANCHOR_OUT (default /tmp/anchor-build) their sources and objects
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
carry=${1:-.gpu-carry}
build=${FI_BUILD_DIR:-build}
lib=$build/kernels/libfi_runtime.so
[ -f "$lib" ] || { echo "no $lib: build with the CUDA backend first (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$carry"
cp "$lib" "$carry/libfi_runtime.so"
strip "$carry/libfi_runtime.so"
rm -f "$carry/libfi_runtime.so.xz"
xz -T2 -6 "$carry/libfi_runtime.so"  # (leaves libfi_runtime.so.xz only)
for t in "$build"/test/gpu/test_*_gpu "$build"/test/gpu/libfi_bsr_torch_shim.so \
         "$build"/bench/fi_bench; do
  [ -f "$t" ] && cp "$t" "$carry/"
done
# (the probes, ~3 MB, only when asked: the carry is near the call's limit without them)
if [ "${FI_CARRY_PROBES:-0}" = 1 ]; then
  for t in "$build"/bench/decode_read_probe "$build"/bench/wgmma_layout_probe \
           "$build"/bench/cluster_probe; do
    [ -f "$t" ] && cp "$t" "$carry/"
  done
fi
# The compiled programs of scripts/gpu-e2e.sh (needs fi-opt: a build with MLIR), in e2e/:
# on the device, `FI_RUNTIME_LIB_DIR=$CARRY scripts/gpu-e2e.sh $CARRY/e2e` once the
# runtime is unpacked (any of the bench/run_gpu*.sh scripts does that).
if [ -x "$build/bin/fi-opt" ]; then
  scripts/gpu-e2e.sh --prepare "$build" > /dev/null
  rm -rf "$carry/e2e" && cp -r "$build/gpu-carry" "$carry/e2e"
fi
if [ "${FI_PEERS:-0}" = 1 ]; then
  : "${FI_MIRROR:?set FI_MIRROR}" "${CUTLASS_MIRROR:?set CUTLASS_MIRROR}" "${CCCL_MIRROR:?set CCCL_MIRROR}"
  out=${ANCHOR_OUT:-/tmp/anchor-build}
  mkdir -p "$out"
  export FI_SRC=$root FI_LIB=$root/$build/kernels OUT_DIR=$out
  export FI_MIRROR CUTLASS_MIRROR CCCL_MIRROR
  "$root/../shared/anchor/build.sh"
  "$root/bench/peers/build_bsr_vs_fi.sh"
  "$root/bench/peers/build_fp8_vs_fi.sh"
  for b in fa3_vs_fi decode_vs_fi bsr_vs_fi fp8_vs_fi; do cp "$out/$b" "$carry/"; done
fi
du -sh "$carry"
ls "$carry"
# A device call carries the working tree (tracked and untracked-not-ignored files) and the
# carry together, at most 64 MB: say so here rather than at the call.
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) |
        du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
carried=$(du -sb "$carry" | cut -f1)
# (session 72: 65.3 MB in all was refused, 59 MB taken: the limit reads as 64 MB, not MiB)
total_mb=$(( (tree + carried) / 1000000 ))
echo "working tree + $carry: $total_mb MB (a device call takes at most 64)"
if [ "$total_mb" -ge 63 ]; then
  echo "at or near the limit: move what the call does not run out of $carry (largest first):" >&2
  ls -S "$carry" | grep -v '^libfi_runtime' | head -8 >&2
fi
