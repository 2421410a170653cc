#!/usr/bin/env bash
# Installs the build into a fresh prefix and builds and runs the out-of-tree consumer
# (test/install/consumer) against it with find_package(FiMLIR CONFIG).
#   run-consumer.sh <build dir> <work dir> [MLIR_DIR] [ON|OFF: the build has MLIR]
# With MLIR, the C API consumer and the installed fi-opt must exist: a missing one fails.
set -euo pipefail
build=$1 work=$2 mlir_dir=${3:-/usr/lib/llvm-22/lib/cmake/mlir}
case "${4:-OFF}" in ON|on|1|TRUE|true) with_mlir=1 ;; *) with_mlir=0 ;; esac
src=$(cd "$(dirname "$0")" && pwd)/consumer
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work.install.log" 2>&1 || { cat "$work.install.log"; exit 1; }
gen=(); command -v ninja > /dev/null && gen=(-G Ninja)
cmake "${gen[@]}" -S "$src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DMLIR_DIR="$mlir_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/build"
"$work/build/consumer_runtime"
if [ $with_mlir = 1 ]; then
  [ -x "$work/build/consumer_capi" ] || { echo "FAIL: consumer_capi was not built (FiMLIR_HAS_MLIR off?)"; exit 1; }
  "$work/build/consumer_capi"
  # The installed fi-opt runs the installed passes.
  [ -x "$work/prefix/bin/fi-opt" ] || { echo "FAIL: fi-opt is not installed in $work/prefix/bin"; exit 1; }
  help=$("$work/prefix/bin/fi-opt" --help)  # captured: grep -q in a pipe can SIGPIPE fi-opt
  case "$help" in *fi-to-llvm*) ;; *) echo "FAIL: the installed fi-opt lacks fi-to-llvm"; exit 1 ;; esac
  echo "installed fi-opt knows fi-to-llvm"
fi
echo "out-of-tree consumer: PASS"
