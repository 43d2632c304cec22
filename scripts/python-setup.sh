#!/usr/bin/env bash
# The Python package's set-up, idempotently: a virtual environment in .venv-py (git-ignored)
# with maturin, pytest, numpy, scipy, scikit-image and pandas (what python/tests needs), and the
# extension built into it by `maturin develop` (a debug build: quick to compile, enough for the
# tests). PROFILE=release builds the optimised extension instead (for benches/python_vs_peers.py).
# Called by scripts/test.sh and scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

venv=.venv-py
py=$venv/bin/python
if [ ! -x "$py" ]; then
  echo "python-setup: creating $venv" >&2
  python3 -m venv "$venv" 2>/dev/null || {
    # Some systems ship python3 without the venv module: virtualenv does the same.
    pip_install virtualenv
    python3 -m virtualenv -q "$venv"
  }
fi
if ! "$py" -c 'import maturin, pytest, numpy, scipy, skimage, pandas' 2>/dev/null ||
  [ ! -x "$venv/bin/maturin" ]; then
  echo "python-setup: installing maturin, pytest, numpy, scipy, scikit-image, pandas" >&2
  "$py" -m pip install -q --disable-pip-version-check 'maturin>=1.5,<2' pytest 'numpy>=1.22' \
    scipy scikit-image pandas
fi

# pyo3 finds the interpreter to build for through PYO3_PYTHON; maturin installs into VIRTUAL_ENV.
export PYO3_PYTHON="$PWD/$py" VIRTUAL_ENV="$PWD/$venv"
args=(--locked)
if [ "${PROFILE:-dev}" = release ]; then
  args+=(--release)
fi
(cd python && "../$venv/bin/maturin" develop -q "${args[@]}")
