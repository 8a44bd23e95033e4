#!/usr/bin/env bash
# The sanitizer build: clang with -fsanitize=address,undefined (UBSan reports fatal), libFuzzer
# coverage (-fsanitize=fuzzer-no-link) on every tierjit target, assertions and the IR verifier
# between passes on (no NDEBUG: TJ_DCHECK, PassContext::verify_between_passes), -O1 -g1. One build
# serves the fuzz targets (tests/fuzz/, scripts/fuzz.sh) and the sanitizer run of the unit tests
# (scripts/test-asan.sh). Configures the folder if needed, then builds the given targets.
# Usage: scripts/build-asan.sh TARGET...
# Build folder: $TIERJIT_ASAN_BUILD_DIR (default: ${TIERJIT_BUILD_DIR:-./build}/asan).
# Parallelism: $TIERJIT_JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_ASAN_BUILD_DIR:-${TIERJIT_BUILD_DIR:-$root/build}/asan}"
if [ ! -f "$build/build.ninja" ]; then
  "$root/scripts/install-deps.sh"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=undefined -Wno-pass-failed -Wno-unknown-warning-option" \
    -DTIERJIT_SANITIZE=address,undefined -DTIERJIT_FUZZ=ON \
    -DTIERJIT_BUILD_PYTHON=OFF -DTIERJIT_BUILD_BENCH=OFF -DTIERJIT_TSAN_TEST=OFF -DTIERJIT_ASAN_TEST=OFF \
    -DTIERJIT_SHARED_DIR="${TIERJIT_SHARED_DIR:-$root/../shared}" >/dev/null
fi
cmake --build "$build" -j "${TIERJIT_JOBS:-2}" --target "$@"
