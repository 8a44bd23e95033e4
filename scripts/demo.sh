#!/usr/bin/env bash
# Builds the `tierjit` binary (installing dependencies first) and runs the bundled demo model,
# a small MLP with a dynamic batch: `tierjit run models/demo_mlp.onnx` on random inputs.
# Extra arguments go to `tierjit run`, e.g. scripts/demo.sh --dim N=4 --output-dir out
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" tierjit_bin
echo "+ tierjit run models/demo_mlp.onnx $*"
"$build/bin/tierjit" run "$root/models/demo_mlp.onnx" "$@"
