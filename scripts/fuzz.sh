#!/usr/bin/env bash
# Runs one libFuzzer target (tests/fuzz/, docs/testing.md "Fuzzing") for SECONDS (default 60;
# 0 = until stopped), building the sanitizer build first when needed (scripts/build-asan.sh).
# Targets: loader (model bytes -> load -> passes -> partition -> tier-0 plan and run), npy, pb
# (tensor files), trace (bench traces), shapes (--shapes and the other option parsers).
# Seeds: the committed corpus tests/fuzz/corpus/TARGET (read only); inputs the run finds go to
# <asan build>/fuzz/corpus-TARGET, crashes to <asan build>/fuzz/artifacts-TARGET/.
# Extra arguments go to libFuzzer, e.g. scripts/fuzz.sh loader 600 -jobs=2  or, to rerun a crash,
# scripts/fuzz.sh loader 0 path/to/crash-file (libFuzzer runs the named files only).
# Exit status: libFuzzer's (0: no finding; non-zero: a crash, sanitizer report, leak or timeout).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TIERJIT_ASAN_BUILD_DIR:-${TIERJIT_BUILD_DIR:-$root/build}/asan}"
if [ $# -lt 1 ]; then
  echo "usage: scripts/fuzz.sh TARGET [SECONDS] [libFuzzer options or files]" >&2
  echo "targets: loader npy pb trace shapes" >&2
  exit 2
fi
target="$1"
seconds="${2:-60}"
shift $(( $# >= 2 ? 2 : 1 ))
case "$target" in
  loader|npy|pb|trace|shapes) ;;
  *) echo "scripts/fuzz.sh: unknown target '$target' (loader npy pb trace shapes)" >&2; exit 2 ;;
esac
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "scripts/fuzz.sh: SECONDS must be a whole number of seconds (0 = until stopped), got '$seconds'" >&2
  exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
  echo "scripts/fuzz.sh: configuring and building the sanitizer build in $build first (clang," \
       "ASan + UBSan; 15-45 minutes from clean on 2 cores)" >&2
fi
"$root/scripts/build-asan.sh" "tierjit_fuzz_$target" >/dev/null
source "$root/tests/fuzz/sanitizer_options.sh"

seeds="$root/tests/fuzz/corpus/$target"
found="$build/fuzz/corpus-$target"
artifacts="$build/fuzz/artifacts-$target/"
mkdir -p "$found" "$artifacts"
# -timeout: one input taking 30 s is a finding (a hang); -rss_limit_mb: the loader target's
# tensors are capped at 16 MiB each (loader_fuzz.cc), so 2.5 GB means something leaks or explodes.
args=(-timeout=30 -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$artifacts")
[ "$seconds" != 0 ] && args+=(-max_total_time="$seconds")
files=()
for a in "$@"; do
  if [ -f "$a" ]; then files+=("$a"); else args+=("$a"); fi
done
bin="$build/fuzz/tierjit_fuzz_$target"
if [ ${#files[@]} -gt 0 ]; then
  exec "$bin" "${args[@]}" "${files[@]}"
fi
echo "scripts/fuzz.sh: $target for ${seconds} s from $seeds (new inputs: $found)"
exec "$bin" "${args[@]}" "$found" "$seeds"
