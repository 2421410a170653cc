#!/bin/bash
# Device-machine script for block-sparse attention and its peers (issue 16): runs binaries
# built on the dev machine and carried in $CARRY (default .gpu-carry-sparse/:
# libfi_runtime.so or .so.xz, libfi_bsr_torch_shim.so, fi_bench, and bsr_vs_fi from
# bench/peers/build_bsr_vs_fi.sh), in the order asked:
#   oracle  test_block_sparse_torch.py: fi against a dense masked reference PyTorch builds
#           from the same BSR arrays (FI_TEST_CONFIGS, default 200)
#   peer    bsr_vs_fi: FlashInfer's block-sparse path (its FA3 paged prefill) and fi on the
#           same arrays, blocks of 64 and 128 at 0 / 50 / 90 / 98 %
#   bench   fi_bench sparse: the dense row and the random rows (ceilings in the same run)
#   flex    bench/peers/flex_sparse.py: PyTorch FlexAttention on the same rows
#   prefix  the shared-prefix step (issue 16's 10x): test_cascade_gpu and test_shared_prefix_gpu,
#           then `fi_bench sparse --filter "shared prefix"` three times, alternating with the
#           composed prefix given 128 x 128 tiles (the deep ring: FI_BENCH_SP_PRE_TILES), and
#           ncu on the split-KV merges (bench/NOTES.md, session 71)
#   ncu     Nsight Compute on one launch each of the dense row and the 128 x 128 98 % row:
#           the warp-state stalls (details page) and the per-SASS-instruction stall samples
#           (source page, CSV: read offline beside the runtime's SASS) -- where a chunk's
#           fixed cost goes at 3 tiles a chunk (bench/NOTES.md, session 50)
# Logs under $OUT; a short summary on stdout.
set -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CARRY=${CARRY:-.gpu-carry-sparse}
cd "$root/$CARRY" || exit 1
[ -f libfi_runtime.so.xz ] && [ ! -f libfi_runtime.so ] && xz -d -k libfi_runtime.so.xz
export LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi -L
for w in ${*:-oracle peer bench flex}; do
  start=$(date +%s)
  case $w in
    oracle)
      python3 "$root/test/gpu/test_block_sparse_torch.py" --shim ./libfi_bsr_torch_shim.so \
        > "$OUT/oracle.log" 2>&1
      echo "test_block_sparse_torch rc $? (77: skipped)"
      grep -E "FAIL|configurations|skipped|Error" "$OUT/oracle.log" | tail -8 ;;
    peer)
      ./bsr_vs_fi > "$OUT/bsr_vs_fi.log" 2>&1
      echo "bsr_vs_fi rc $?"
      cat "$OUT/bsr_vs_fi.log" ;;
    bench)
      ./fi_bench sparse --filter "dense prefill" > "$OUT/sparse_dense.log" 2>&1
      rc_dense=$?
      ./fi_bench sparse --filter "random" > "$OUT/sparse_random.log" 2>&1
      echo "fi_bench rc $rc_dense (dense) $? (random)"
      grep -E "copy|GEMM|^\| sparse" "$OUT/sparse_dense.log" "$OUT/sparse_random.log" | head -30 ;;
    prefix)
      for t in test_cascade_gpu test_shared_prefix_gpu; do
        [ -x "./$t" ] || { echo "$t: not carried"; continue; }
        FI_TEST_CONFIGS=${FI_TEST_CONFIGS:-40} "./$t" > "$OUT/$t.log" 2>&1
        echo "$t rc $?"; grep -E "FAIL|passed|configurations" "$OUT/$t.log" | head -3
      done
      for r in 1 2 3; do
        ./fi_bench sparse --filter "shared prefix" > "$OUT/prefix_$r.log" 2>&1
        FI_BENCH_SP_PRE_TILES=128x128 ./fi_bench sparse --filter "shared prefix" \
          > "$OUT/prefix_deep_$r.log" 2>&1
        echo "round $r (default / composed prefix on the deep ring), us:"
        grep -hE "plain  |composed   |lanes   |lanes, one|its prefix" "$OUT/prefix_$r.log" \
          "$OUT/prefix_deep_$r.log" | cut -c12-140
      done
      ncu --clock-control none --cache-control none -k regex:merge --launch-count 6 \
        --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread \
        ./fi_bench sparse --filter "shared prefix" --reps 3 > "$OUT/prefix_ncu.log" 2>&1
      echo "ncu (merges) rc $?"
      grep -E "merge.*\(|gpu__time|registers" "$OUT/prefix_ncu.log" | cut -c1-120 | head -18 ;;
    ncu)
      for f in "dense prefill" "bsr 128x128 random 98% sparse"; do
        tag=$(echo "$f" | tr -c 'a-z0-9\n' '_')
        ncu --clock-control none --set full --import-source no -k regex:prefill_ws --launch-skip 3 \
          --launch-count 1 --page details ./fi_bench sparse --filter "$f" --reps 5 \
          > "$OUT/ncu_$tag.log" 2>&1
        echo "ncu [$f] rc $?"
        grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|Stall|No Eligible" \
          "$OUT/ncu_$tag.log" | head -30
        ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:prefill_ws \
          --launch-skip 3 --launch-count 1 --page source --csv --print-source sass \
          ./fi_bench sparse --filter "$f" --reps 5 > "$OUT/ncu_src_$tag.csv" 2>&1
        echo "ncu source [$f] rc $?"; gzip -f "$OUT/ncu_src_$tag.csv"
      done ;;
    flex)
      python3 "$root/bench/peers/flex_sparse.py" > "$OUT/flex.log" 2>&1
      echo "flex_sparse rc $?"
      grep "^|" "$OUT/flex.log" ;;
  esac
  echo "[$w: $(( $(date +%s) - start )) s]"
done
