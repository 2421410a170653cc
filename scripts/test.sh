#!/usr/bin/env bash
# Runs every test: builds (scripts/build.sh), then ctest, which runs the runtime tests,
# the GPU tests (reported as skipped without a GPU) and the lit suite (check-fi: dialect,
# passes, C API, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build=${FI_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j "${FI_JOBS:-$(nproc)}"
