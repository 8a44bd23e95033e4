#!/usr/bin/env bash
# ThreadSanitizer check of the concurrent Session tests: builds tierjit_runtime_tests with
# -fsanitize=thread in its own build folder and runs the tests where many threads call
# Session::run at once (mixed shapes, tier 0, pinned tiers, adaptive with background compiles).
# Suppressions (tests/tsan.supp) cover third-party libraries only, each with its reason.
# Usage: scripts/test-tsan.sh [gtest filter]     Exit status: the tests' (non-zero on a race).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_TSAN_BUILD_DIR:-$root/build-tsan}"
filter="${1:-*Concurrent*}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIERJIT_SANITIZE=thread \
  -DTIERJIT_BUILD_PYTHON=OFF -DTIERJIT_SHARED_DIR="${TIERJIT_SHARED_DIR:-$root/../shared}" >/dev/null
ninja -C "$build" -j "${TIERJIT_JOBS:-2}" tierjit_runtime_tests
# OpenMP (libgomp) is not built with TSan: its barriers look like races to TSan, so kernels run
# single-threaded here (the race-prone part is tierjit's own dispatch, not the kernels' loops).
export OMP_NUM_THREADS=1
export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
echo "test-tsan.sh: running tierjit_runtime_tests --gtest_filter='$filter' under ThreadSanitizer"
"$build/tests/tierjit_runtime_tests" --gtest_filter="$filter"
