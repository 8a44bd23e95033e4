#!/usr/bin/env bash
# Micro-benchmarks (bench/micro): builds tierjit_micro_bench, runs every case single-threaded with
# repetitions interleaved in random order (best and median of 10 by default, at least 5), writes the JSON and updates
# the micro section of docs/performance.md through scripts/micro_report.py.
# Usage: scripts/bench-micro.sh [--build-dir DIR] [--reps N] [--min-time SECONDS] [--filter REGEX]
#                               [--json FILE] [--no-doc]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$root/build-microbench"
reps=10
min_time=0.2
filter=""
json=""
write_doc=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --min-time) min_time="$2"; shift 2 ;;
    --filter) filter="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    --no-doc) write_doc=0; shift ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "bench-micro.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if (( reps < 5 )); then
  echo "bench-micro.sh: --reps must be >= 5 (best and median of at least 5)" >&2
  exit 2
fi
[[ -n "$json" ]] || json="$build_dir/micro.json"

# The command line printed into the report, relative to the repository root.
command="scripts/bench-micro.sh"
[[ "$build_dir" == "$root/build-microbench" ]] || command+=" --build-dir $build_dir"
[[ "$reps" == 10 ]] || command+=" --reps $reps"
[[ "$min_time" == 0.2 ]] || command+=" --min-time $min_time"
[[ -z "$filter" ]] || command+=" --filter '$filter'"

if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTIERJIT_BUILD_TESTS=OFF -DTIERJIT_BUILD_BENCH=ON
fi
ninja -C "$build_dir" -j2 tierjit_micro_bench

loadavg_before="$(cat /proc/loadavg)"
args=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
      --benchmark_min_time="$min_time" --benchmark_out="$json" --benchmark_out_format=json)
[[ -z "$filter" ]] || args+=(--benchmark_filter="$filter")
OMP_NUM_THREADS=1 "$build_dir/bin/tierjit_micro_bench" "${args[@]}"
loadavg_after="$(cat /proc/loadavg)"
echo "loadavg before: $loadavg_before"
echo "loadavg after:  $loadavg_after"
echo "JSON: $json"

if (( write_doc )); then
  python3 "$root/scripts/micro_report.py" --json "$json" --doc "$root/docs/performance.md" \
    --command "$command" --min-time "$min_time" \
    --loadavg-before "$loadavg_before" --loadavg-after "$loadavg_after" \
    --git-rev "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    --cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
fi
