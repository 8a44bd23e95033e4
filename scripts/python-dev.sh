#!/usr/bin/env bash
# Sets up the Python module `tierjit` (python/, docs/python.md) for development and tests:
#   1. creates a virtual environment OUTSIDE the clone (default ${XDG_CACHE_HOME:-~/.cache}/tierjit/venv,
#      or $TIERJIT_VENV) from $TIERJIT_PYTHON (default python3) and pip-installs numpy and pytest;
#   2. unless --venv-only, configures the build folder ($TIERJIT_BUILD_DIR, default ./build) with
#      -DTIERJIT_BUILD_PYTHON=ON against the venv's interpreter, builds the module and writes a
#      tierjit.pth into the venv so `$venv/bin/python -c "import tierjit"` finds it.
# Usage: scripts/python-dev.sh [--venv-only]     Prints the venv's python on its last line.
# Never touches the system Python: everything is installed into the venv.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TIERJIT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tierjit/venv}"
base_python="${TIERJIT_PYTHON:-python3}"
build="${TIERJIT_BUILD_DIR:-$root/build}"
jobs="${TIERJIT_JOBS:-2}"

case "$venv" in
  "$root"|"$root"/*) echo "python-dev: the venv must live outside the clone ($venv)" >&2; exit 2 ;;
esac

"$root/scripts/install-deps.sh"  # python3-venv, python3-dev, pybind11-dev among others

# 1. The venv (re-created if broken), with numpy and pytest.
if ! "$venv/bin/python" -c "import numpy, pytest" >/dev/null 2>&1; then
  echo "python-dev: creating $venv from $(command -v "$base_python") ($("$base_python" --version 2>&1))"
  mkdir -p "$(dirname "$venv")"
  rm -rf "$venv"
  if ! "$base_python" -m venv "$venv"; then
    echo "python-dev: ERROR: '$base_python -m venv' failed (Debian needs python3-venv: scripts/install-deps.sh)" >&2
    exit 1
  fi
  if ! "$venv/bin/python" -m pip install -q numpy pytest; then
    echo "python-dev: ERROR: pip could not install numpy and pytest into $venv" >&2
    exit 1
  fi
fi
"$venv/bin/python" -c "import numpy, pytest; print('python-dev: venv ok: numpy', numpy.__version__, 'pytest', pytest.__version__)"
if [ "${1:-}" = "--venv-only" ]; then
  echo "$venv/bin/python"
  exit 0
fi

# 2. The module, built in the regular build folder against the venv's interpreter.
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG"
fi
cmake -S "$root" -B "$build" -DTIERJIT_BUILD_PYTHON=ON -DTIERJIT_PYTHON_VENV="$venv" >/dev/null
cmake --build "$build" -j "$jobs" --target tierjit_python
site="$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
echo "$build/python" > "$site/tierjit.pth"
"$venv/bin/python" -c "import tierjit; print('python-dev: import tierjit ok from', tierjit.__file__)"
echo "$venv/bin/python"
