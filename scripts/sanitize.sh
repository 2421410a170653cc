#!/usr/bin/env bash
# The sanitizer stage of CI: builds fi without CUDA with AddressSanitizer + UBSan (every
# report fatal) into ${FI_SAN_BUILD:-build-san} -- the runtime, its tests, and the C++ of
# the dialect, passes and C API -- then runs the runtime tests (leak checking on) and the
# lit suite (fi-opt, the C API test and the end-to-end programs all instrumented), then
# ThreadSanitizer on a compiled step called from several threads (test/E2E/threads.mlir).
#   ASAN_OPTIONS allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs from the
#   headers fi inlines, while Debian's libMLIR.so (not instrumented) allocates from the same
#   slabs without unpoisoning: false "use-after-poison" reports, not fi's.
#   Leak checking is off for lit (its programs hand memory to the MLIR runtime's allocator).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FI_SAN_BUILD:-build-san}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
link="-fsanitize=address,undefined"
FI_BUILD_DIR=$build scripts/build.sh -DFI_ENABLE_CUDA=OFF "-DCMAKE_C_FLAGS=$san" \
  "-DCMAKE_CXX_FLAGS=$san -fno-sanitize=vptr" "-DCMAKE_EXE_LINKER_FLAGS=$link" \
  "-DCMAKE_SHARED_LINKER_FLAGS=$link" "-DCMAKE_MODULE_LINKER_FLAGS=$link"
libasan=$(gcc -print-file-name=libasan.so)
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The install test builds a consumer without the sanitizers (a packaging test).
ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0 \
  ctest --test-dir "$build" --output-on-failure -j "${FI_JOBS:-$(nproc)}" -E 'install_consumer|^lit$'
# lit: programs that are not instrumented (FileCheck, llc, stock mlir-opt, the linked E2E
# drivers) load the instrumented runtime or plugin, so the ASan runtime is preloaded.
LD_PRELOAD=$libasan ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 \
  ctest --test-dir "$build" --output-on-failure -R '^lit$'
# ThreadSanitizer on compiled code run from several threads at once (test/E2E/threads.mlir:
# 4 threads, each on its own context): the runtime and adapters built with TSan, the step
# compiled by the sanitizer build's fi-opt, the driver linked with TSan.
tsan=${build}-tsan
FI_BUILD_DIR=$tsan scripts/build.sh -DFI_ENABLE_MLIR=OFF -DFI_ENABLE_CUDA=OFF \
  "-DCMAKE_C_FLAGS=-fsanitize=thread -g -O1" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread"
llvm=/usr/lib/llvm-22/bin
ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 "$build/bin/fi-opt" test/E2E/threads.mlir \
  --fi-to-llvm | "$llvm/mlir-translate" --mlir-to-llvmir |
  "$llvm/llc" -O2 -filetype=obj --relocation-model=pic -o "$tsan/threads.o"
cc -std=c11 -O1 -g -fsanitize=thread -w -Ikernels/include -Ikernels/src -Itest/runtime \
  -Itest/E2E/drivers test/E2E/drivers/threads.c "$tsan/threads.o" -L"$tsan/kernels" \
  -lfi_runtime -Wl,-rpath,"$PWD/$tsan/kernels" -lm -lpthread -o "$tsan/threads"
TSAN_OPTIONS=halt_on_error=1 "$tsan/threads" | tee "$tsan/threads.log"
grep -q "E2E threads: PASS" "$tsan/threads.log"
