#!/usr/bin/env bash
# Sets up the real LiteLLM proxy the router tests (tests/router/test_real_litellm.py) run against,
# in its own venv: `litellm[proxy]` pins its own Rich (13.x) and web stack, which would downgrade
# what rigctl's Textual and import-linter need in rigctl's venv. Cached: a second run that finds
# it takes a moment. Prints the environment the tests read, as an `export` line.
#
#   eval "$(scripts/setup_litellm.sh)" && pytest -m slow tests/router
#
# Where: $RIGCTL_LITELLM_HOME, else ${XDG_CACHE_HOME:-~/.cache}/rigctl/litellm.
set -euo pipefail
home="${RIGCTL_LITELLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/rigctl/litellm}"
version="1.108.7"  # the proxy the tests and docs/guide/several-rigs.md were checked against
venv="$home/venv-$version"
log() { echo "setup_litellm: $*" >&2; }

if [ ! -x "$venv/bin/litellm" ] || [ ! -f "$venv/.rigctl-ready" ]; then
  log "installing litellm[proxy]==$version into $venv (about a minute)"
  rm -rf "$venv"
  mkdir -p "$home"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "litellm[proxy]==$version" >&2
  touch "$venv/.rigctl-ready"
fi
echo "export RIGCTL_LITELLM=$venv/bin/litellm"
