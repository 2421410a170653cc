#!/usr/bin/env bash
# The main job: shows what fi does today on the examples in examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FI_BUILD_DIR:-build}
fiopt="$build/bin/fi-opt"
for f in examples/*.mlir; do
  [ -e "$f" ] || continue
  t0=$(date +%s%N)
  "$fiopt" "$f" > /dev/null
  t1=$(date +%s%N)
  echo "== $f: parsed, verified and round-tripped by fi-opt in $(( (t1 - t0) / 1000000 )) ms"
done
