#!/usr/bin/env bash
# ThreadSanitizer check of the concurrent runtime tests: builds tierjit_runtime_tests (and the
# libraries it links) with -fsanitize=thread in its own build folder, checks that TSan reports a
# deliberate race (TsanCanary: the build really is instrumented), then runs the tests where many
# threads use one Session or runtime structure at once (8 threads calling Session::run with mixed
# shapes in interpret-only, pinned-tier and adaptive mode with background compiles; the compile
# queue; the version tables). Suppressions: tests/tsan.supp (third-party libraries only, each with
# its reason). CI runs this as the CTest test `tsan_concurrent` (scripts/test.sh, docs/testing.md).
# Usage: scripts/test-tsan.sh [gtest filter]
# Build folder: $TIERJIT_TSAN_BUILD_DIR (default: ${TIERJIT_BUILD_DIR:-./build}/tsan).
# Exit status: non-zero on a build failure, a failed test or any TSan report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_TSAN_BUILD_DIR:-${TIERJIT_BUILD_DIR:-$root/build}/tsan}"
filter="${1:-*Concurrent*:*InFlight*:CompileQueue.*:VersionTable.*}"
start=$(date +%s)
echo "test-tsan.sh: building tierjit_runtime_tests with -fsanitize=thread in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIERJIT_SANITIZE=thread \
  -DTIERJIT_BUILD_PYTHON=OFF -DTIERJIT_BUILD_BENCH=OFF -DTIERJIT_TSAN_TEST=OFF \
  -DTIERJIT_SHARED_DIR="${TIERJIT_SHARED_DIR:-$root/../shared}" >/dev/null
cmake --build "$build" -j "${TIERJIT_JOBS:-2}" --target tierjit_runtime_tests
echo "test-tsan.sh: build done in $(( $(date +%s) - start )) s"
bin="$build/tests/tierjit_runtime_tests"

# Sessions run their kernels with SessionOptions::intra_op_threads (1 in these tests, so no
# OpenMP teams: Debian's libgomp is not instrumented and TSan cannot see its barriers). One thread
# for OpenMP/oneDNN code outside a Session too. halt_on_error=0: every race of the run is printed
# (the exit status is still 66 when there was one); history_size=4 keeps more of the earlier
# access's stack.
export OMP_NUM_THREADS=1
export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp halt_on_error=0 history_size=4 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"

canary_log="$(mktemp)"
trap 'rm -f "$canary_log"' EXIT
if "$bin" --gtest_also_run_disabled_tests --gtest_filter='TsanCanary.*' >"$canary_log" 2>&1 ||
   ! grep -q "WARNING: ThreadSanitizer: data race" "$canary_log"; then
  cat "$canary_log"
  echo "test-tsan.sh: ERROR: ThreadSanitizer did not report the deliberate race of TsanCanary:" \
       "$bin is not instrumented (TIERJIT_SANITIZE=thread ignored?)" >&2
  exit 1
fi
echo "test-tsan.sh: canary ok (TSan reports a deliberate race)"

echo "test-tsan.sh: running tierjit_runtime_tests --gtest_filter='$filter' under ThreadSanitizer"
status=0
"$bin" --gtest_filter="$filter" || status=$?
if [ $status -ne 0 ]; then
  echo "test-tsan.sh: FAILED (status $status; 66 = ThreadSanitizer reports above)" >&2
else
  echo "test-tsan.sh: clean: no ThreadSanitizer report, all tests passed"
fi
echo "test-tsan.sh: finished in $(( $(date +%s) - start )) s"
exit $status
