#!/usr/bin/env bash
# Installs every Debian package that tierjit's build, tests and benchmarks need (clang 14 with its
# sanitizer and libFuzzer runtimes and OpenMP: the sanitizer and fuzz build, scripts/build-asan.sh).
# Idempotent: packages already present are skipped; `apt-get update` runs at most once.
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  build-essential g++ cmake ninja-build pkg-config git
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libsleef-dev
  llvm-16-dev libzstd-dev zlib1g-dev libedit-dev libffi-dev libxml2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev
  libxxhash-dev libhiredis-dev
  python3 python3-numpy
  pybind11-dev python3-dev python3-venv
  clang libclang-rt-14-dev libomp-14-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
