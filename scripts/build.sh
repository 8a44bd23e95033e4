#!/usr/bin/env bash
# Installs the Debian packages tierjit needs (scripts/install-deps.sh), configures a Release
# build with CMake + Ninja and builds the given targets (all when none are named).
# Usage: scripts/build.sh [TARGET...]      Build folder: $TIERJIT_BUILD_DIR (default ./build).
# Parallelism: $TIERJIT_JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_BUILD_DIR:-$root/build}"
jobs="${TIERJIT_JOBS:-2}"

"$root/scripts/install-deps.sh"
# The ONNX backend suites and model zoo the conformance tests read: $TIERJIT_SHARED_DIR, default
# ../shared beside the clone (re-configured on every call, so changing it takes effect).
shared="${TIERJIT_SHARED_DIR:-$root/../shared}"
if [ ! -f "$build/build.ninja" ]; then
  # Release at -O2: as fast as -O3 for tier 0, quicker to build, and free of gcc 12's -O3 false warnings.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DTIERJIT_SHARED_DIR="$shared"
else
  cmake -S "$root" -B "$build" -DTIERJIT_SHARED_DIR="$shared" > /dev/null
fi
if [ $# -eq 0 ]; then
  cmake --build "$build" -j "$jobs"
else
  cmake --build "$build" -j "$jobs" --target "$@"
fi
