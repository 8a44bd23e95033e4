#!/usr/bin/env bash
# Runs a conformance command only if its shared data exists.
# Usage: run_if_shared.sh REQUIRED_PATH COMMAND [ARGS...]
# Absent REQUIRED_PATH: exit 77 (CTest SKIP_RETURN_CODE) with a message, or exit 1 when CI=true.
set -u
required=$1
shift
if [ ! -e "$required" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: $required is missing and CI=true (set TIERJIT_SHARED_DIR to the shared data folder)"
    exit 1
  fi
  echo "SKIP: $required not found (shared test data is absent; set -DTIERJIT_SHARED_DIR=...)"
  exit 77
fi
exec "$@"
