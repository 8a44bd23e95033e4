#!/usr/bin/env bash
# Side-by-side per-shape latency of tierjit configurations on one model: runs `tierjit bench` for
# each configuration in turn (alternating, so load bursts hit all of them), REPS times, and prints
# the lowest p50 (ms) each configuration reached per shape. For comparisons on a shared, noisy
# machine (docs/performance.md: best of N, alternated, same thread count).
# Usage: scripts/bench-alternate.sh MODEL.onnx "SHAPE SHAPE ..." "CONFIG" "CONFIG" ...
#   e.g. scripts/bench-alternate.sh ../shared/models/mlp.onnx "x=1x256 x=8x256" \
#          "--tier 0 --threads 2" "--tier 2 --threads 2"
# Env: TIERJIT (default build/bin/tierjit), REPS (3), REQUESTS (600, cycling through the shapes).
set -euo pipefail
if [ $# -lt 3 ]; then sed -n 2,9p "$0" >&2; exit 2; fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${TIERJIT:-$root/build/bin/tierjit}"
model=$1; shift
shapes=$1; shift
args=()
for s in $shapes; do args+=(--shapes "$s"); done
for ((rep = 1; rep <= ${REPS:-3}; ++rep)); do
  for cfg in "$@"; do
    # shellcheck disable=SC2086  # a config is a list of bench options
    "$bin" bench "$model" "${args[@]}" --requests "${REQUESTS:-600}" $cfg 2>&1 |
      awk -v c="$cfg" '$1 ~ /^[A-Za-z_]+=/ {print c "|" $1 "|" $4}'
  done
done | awk -F'|' '{k = $1 "|" $2; if (!(k in m) || $3 + 0 < m[k] + 0) m[k] = $3}
                  END {for (k in m) print k, m[k]}' | sort
