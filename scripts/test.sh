#!/usr/bin/env bash
# Builds everything (installing dependencies first) and runs the whole test suite with CTest:
# unit tests, the conformance tests (ONNX backend suites, the model zoo) and the ThreadSanitizer
# run of the concurrent runtime tests (tsan_concurrent). Conformance tests need the shared data
# folder beside the clone (../shared, or -DTIERJIT_SHARED_DIR=...); without it they are skipped
# with a message, except under CI=true, where they fail.
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit  or  scripts/test.sh -R Npy
# Exit status: ctest's (non-zero when a test fails).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_BUILD_DIR:-$root/build}"
start=$(date +%s)
"$root/scripts/build.sh"
# The Python module (python/, docs/python.md): a venv outside the clone, then the module in the same
# build folder. If that fails, CTest's python_tests (label unit) is still registered and fails.
if ! "$root/scripts/python-dev.sh"; then
  echo "test.sh: ERROR: the Python module could not be set up (above); python_tests will fail" >&2
  cmake -S "$root" -B "$build" -DTIERJIT_BUILD_PYTHON=ON >/dev/null
fi
echo "test.sh: build done in $(( $(date +%s) - start )) s"
shared="${TIERJIT_SHARED_DIR:-$root/../shared}"
if [ ! -d "$shared/onnx-tests" ]; then
  echo "test.sh: NOTE: no shared test data at $shared: the conformance tests (ONNX backend suites," \
       "model zoo) will be SKIPPED. Set TIERJIT_SHARED_DIR=/path/to/shared to run them." >&2
fi
# The ThreadSanitizer run of the concurrent runtime tests (CTest test tsan_concurrent, label tsan:
# its own TSan build in $build/tsan; docs/testing.md). TIERJIT_TSAN=OFF leaves it out.
cmake -S "$root" -B "$build" -DTIERJIT_TSAN_TEST="${TIERJIT_TSAN:-ON}" >/dev/null
status=0
ctest --test-dir "$build" -j "${TIERJIT_JOBS:-2}" --output-on-failure --timeout 1800 "$@" || status=$?
echo "test.sh: finished in $(( $(date +%s) - start )) s with status $status"
exit $status
