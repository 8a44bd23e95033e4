#!/usr/bin/env bash
# Builds everything (installing dependencies first) and runs the whole test suite with CTest, in
# stages: the unit tests (label unit), the conformance tests (label conformance: ONNX backend
# suites, the model zoo), the ThreadSanitizer run of the concurrent runtime tests (label tsan,
# tsan_concurrent) and the sanitizer + fuzz run (label asan, asan_fuzz: the unit tests under
# ASan/UBSan and each fuzz target for a short time; docs/testing.md). Prints the time of each
# stage at the end. Conformance tests need the shared data folder beside the clone (../shared, or
# TIERJIT_SHARED_DIR=...); without it they are skipped with a message, except under CI=true,
# where they fail. TIERJIT_TSAN=OFF / TIERJIT_ASAN=OFF leave the sanitizer stages out.
# Extra arguments go to one ctest call instead of the stages, e.g. scripts/test.sh -L unit  or
# scripts/test.sh -R Npy
# Exit status: non-zero when a test of any stage fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_BUILD_DIR:-$root/build}"
start=$(date +%s)
stages=()
stage_done() {  # NAME START: records "NAME: N s"
  stages+=("$1: $(( $(date +%s) - $2 )) s")
}
t=$start
"$root/scripts/build.sh"
stage_done build "$t"
# The Python module (python/, docs/python.md): a venv outside the clone, then the module in the same
# build folder. If that fails, CTest's python_tests (label unit) is still registered and fails.
t=$(date +%s)
if ! "$root/scripts/python-dev.sh"; then
  echo "test.sh: ERROR: the Python module could not be set up (above); python_tests will fail" >&2
  cmake -S "$root" -B "$build" -DTIERJIT_BUILD_PYTHON=ON >/dev/null
fi
stage_done python-build "$t"
echo "test.sh: build done in $(( $(date +%s) - start )) s"
shared="${TIERJIT_SHARED_DIR:-$root/../shared}"
if [ ! -d "$shared/onnx-tests" ]; then
  echo "test.sh: NOTE: no shared test data at $shared: the conformance tests (ONNX backend suites," \
       "model zoo) will be SKIPPED. Set TIERJIT_SHARED_DIR=/path/to/shared to run them." >&2
fi
# The ThreadSanitizer run (CTest test tsan_concurrent, label tsan: its own TSan build in
# $build/tsan) and the sanitizer + fuzz run (asan_fuzz, label asan: its own clang build in
# $build/asan); docs/testing.md.
cmake -S "$root" -B "$build" -DTIERJIT_TSAN_TEST="${TIERJIT_TSAN:-ON}" \
  -DTIERJIT_ASAN_TEST="${TIERJIT_ASAN:-ON}" >/dev/null
status=0
ctest_args=(--test-dir "$build" -j "${TIERJIT_JOBS:-2}" --output-on-failure --timeout 1800)
if [ $# -gt 0 ]; then
  ctest "${ctest_args[@]}" "$@" || status=$?
else
  # One ctest call per label so that each stage's wall time can be printed (conformance_models_demo_mlp
  # is labelled unit too: it runs with the unit tests). Then anything without these labels.
  for stage in "unit:-L unit" "conformance:-L conformance -LE unit" "tsan:-L tsan" "asan:-L asan" \
               "other:-LE unit|conformance|tsan|asan"; do
    t=$(date +%s)
    # shellcheck disable=SC2086
    ctest "${ctest_args[@]}" --no-tests=ignore ${stage#*:} || status=$?
    stage_done "${stage%%:*}" "$t"
  done
fi
echo "test.sh: time per stage:"
printf 'test.sh:   %s\n' "${stages[@]}"
echo "test.sh: finished in $(( $(date +%s) - start )) s with status $status"
exit $status
