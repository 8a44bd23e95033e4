#!/usr/bin/env bash
# Installs the peers that bench/peers/compare.py measures tierjit against, all OUTSIDE the clone:
#   ort venv    ${TIERJIT_PEERS_VENV:-~/.cache/tierjit/peers-venv}: python3 + numpy + onnxruntime
#               (+ with --torch2: PyPI torch >= 2 for torch.compile; the CUDA build, run on CPU)
#   torch venv  ${TIERJIT_PEERS_TORCH_VENV:-~/.cache/tierjit/peers-torch113-venv}: Debian's
#               /usr/bin/python3 with its site packages (python3-torch 1.13, python3-torchvision,
#               python3-onnx) + onnx2torch (ONNX -> torch.nn converter) for torch eager/TorchScript.
# tierjit itself comes from scripts/python-dev.sh (its own venv). Usage: bench/peers/setup.sh [--torch2]
# Idempotent: an existing working venv is kept. Never installs into a system Python.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tierjit"
ort_venv="${TIERJIT_PEERS_VENV:-$cache/peers-venv}"
torch_venv="${TIERJIT_PEERS_TORCH_VENV:-$cache/peers-torch113-venv}"
base_python="${TIERJIT_PYTHON:-python3}"
want_torch2=0
for a in "$@"; do
  case "$a" in
    --torch2) want_torch2=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$ort_venv" "$torch_venv"; do
  case "$v" in
    "$root"|"$root"/*) echo "setup: venvs must live outside the clone ($v)" >&2; exit 2 ;;
  esac
done

# 1. ONNX Runtime (and optionally torch 2) in a venv of the same python3 as tierjit's venv.
if ! "$ort_venv/bin/python" -c "import numpy, onnxruntime" >/dev/null 2>&1; then
  echo "setup: creating $ort_venv from $(command -v "$base_python")"
  mkdir -p "$(dirname "$ort_venv")"
  rm -rf "$ort_venv"
  "$base_python" -m venv "$ort_venv"
  "$ort_venv/bin/python" -m pip install -q numpy onnxruntime
fi
"$ort_venv/bin/python" -c "import onnxruntime, numpy; print('setup: onnxruntime', onnxruntime.__version__, 'numpy', numpy.__version__, 'in $ort_venv')"

# torch >= 2 from PyPI (for torch.compile) is the CUDA build: the torch wheel is ~540 MB and its
# CUDA dependencies add several GB more; it runs on CPU. torchvision is installed first so pip
# picks the torch release it pairs with (onnx2torch imports torchvision).
if [ "$want_torch2" = 1 ]; then
  if ! "$ort_venv/bin/python" -c "import torch, torchvision, onnx2torch; assert int(torch.__version__.split('.')[0]) >= 2" \
      >/dev/null 2>&1; then
    echo "setup: installing torch, torchvision, onnx, onnx2torch into $ort_venv (several GB)"
    "$ort_venv/bin/python" -m pip install -q torchvision onnx onnx2torch
  fi
  "$ort_venv/bin/python" -c "import torch, onnx2torch; print('setup: torch', torch.__version__, 'with onnx2torch in $ort_venv')"
fi

# 2. Debian's torch 1.13 (eager, TorchScript) + onnx2torch.
debs=(python3-torch python3-torchvision python3-onnx python3-numpy python3-venv)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup: apt-get install ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
if ! "$torch_venv/bin/python" -c "import torch, onnx2torch" >/dev/null 2>&1; then
  echo "setup: creating $torch_venv from /usr/bin/python3 (--system-site-packages)"
  rm -rf "$torch_venv"
  /usr/bin/python3 -m venv --system-site-packages "$torch_venv"
  # --no-deps: torch, torchvision, onnx and numpy come from Debian.
  "$torch_venv/bin/python" -m pip install -q --no-deps onnx2torch
fi
"$torch_venv/bin/python" -c "import torch, onnx2torch; print('setup: torch', torch.__version__, 'with onnx2torch in $torch_venv')"
