#!/usr/bin/env bash
# Sets fi up on a fresh Debian 12 machine and runs the main job:
#   1. installs the Debian packages (MLIR/LLVM 22, clang-22, ninja, psutil) with apt-get,
#   2. configures and builds everything into build/ (CUDA backend too when nvcc exists),
#   3. runs the main job (scripts/main-job.sh).
# Pass --no-main to stop after the build (CI does, then runs scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 libclang-rt-22-dev ninja-build
          python3-psutil cmake g++)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

scripts/build.sh

if [ "${1:-}" != "--no-main" ]; then
  scripts/main-job.sh
fi
