#!/usr/bin/env bash
# Installs the build into a fresh prefix and builds and runs the out-of-tree consumer
# (test/install/consumer) against it with find_package(FiMLIR CONFIG).
#   run-consumer.sh <build dir> <work dir> [MLIR_DIR]
set -euo pipefail
build=$1 work=$2 mlir_dir=${3:-/usr/lib/llvm-22/lib/cmake/mlir}
src=$(cd "$(dirname "$0")" && pwd)/consumer
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work.install.log" 2>&1 || { cat "$work.install.log"; exit 1; }
gen=(); command -v ninja > /dev/null && gen=(-G Ninja)
cmake "${gen[@]}" -S "$src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DMLIR_DIR="$mlir_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/build"
"$work/build/consumer_runtime"
if [ -x "$work/build/consumer_capi" ]; then "$work/build/consumer_capi"; fi
# The installed fi-opt runs the installed passes.
if [ -x "$work/prefix/bin/fi-opt" ]; then
  "$work/prefix/bin/fi-opt" --help | grep -q "fi-to-llvm" && echo "installed fi-opt knows fi-to-llvm"
fi
echo "out-of-tree consumer: PASS"
