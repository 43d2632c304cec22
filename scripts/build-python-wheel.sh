#!/usr/bin/env bash
# Builds (release) the Python package as one abi3 wheel (CPython >= 3.9) into .whl/ (git-ignored),
# with pytest's own wheels beside it, for the GPU machine, which has Python, NumPy, SciPy, CuPy
# and scikit-image but no Rust, no pytest and no network. Then run scripts/device-python.sh on
# the device with carry [".whl"].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
bash scripts/python-setup.sh >/dev/null # the venv with maturin
rm -rf .whl && mkdir -p .whl
export PYO3_PYTHON="$PWD/.venv-py/bin/python"
# "linux": a plain linux_x86_64 tag, which pip installs whatever the glibc of the GPU machine.
(cd python && ../.venv-py/bin/maturin build -q --release --locked --compatibility linux -o ../.whl)
# pytest and its dependencies as pure-Python wheels for the device's Python 3.12.
.venv-py/bin/python -m pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version 3.12 -d .whl/deps pytest
ls -l .whl .whl/deps
