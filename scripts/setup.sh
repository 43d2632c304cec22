#!/usr/bin/env bash
# Sourced by the other scripts: makes sure the tools the build needs are here, idempotently.
# - cargo (the Rust toolchain is expected on the machine)
# - cmake >= 3.26, which the bundled static HDF5 (hdf5-metno-src) needs; the OS may ship an
#   older one, so a newer one comes from PyPI when missing.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found: install Rust (https://rustup.rs) first" >&2
  exit 1
fi

# pip install that also works where the system python is "externally managed" (PEP 668, e.g.
# Debian's own python3 when no pyenv/venv python comes first on PATH): then into the user site.
pip_install() {
  python3 -m pip install -q --disable-pip-version-check "$@" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --user "$@" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --user --break-system-packages "$@"
}

cmake_ok() {
  command -v cmake >/dev/null 2>&1 || return 1
  local v
  v=$(cmake --version | head -n1 | sed -E 's/[^0-9]*([0-9]+)\.([0-9]+).*/\1 \2/')
  set -- $v
  [ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 26 ]; }
}

if ! cmake_ok; then
  # A pip-installed cmake may already be there, just not on PATH.
  if bin=$(python3 -c 'import cmake; print(cmake.CMAKE_BIN_DIR)' 2>/dev/null); then
    export PATH="$bin:$PATH"
  fi
fi
if ! cmake_ok; then
  echo "setup: installing cmake>=3.26 from PyPI (needed to build the bundled HDF5)" >&2
  pip_install 'cmake>=3.26'
  export PATH="$(python3 -c 'import cmake; print(cmake.CMAKE_BIN_DIR)'):$PATH"
fi
cmake_ok || { echo "error: could not provide cmake >= 3.26" >&2; exit 1; }

# NVRTC (the CUDA runtime compiler, a pip wheel of ~100 MB, no GPU needed) lets the tests compile
# every kernel configuration on machines without a GPU, so a kernel that does not compile fails
# CI instead of the first GPU run. Only the test script asks for it (CLUSTERLAB_NVRTC=1).
nvrtc_dir() {
  python3 -c 'import nvidia, os, glob
for p in nvidia.__path__:
    for d in glob.glob(os.path.join(p, "cu*", "lib")):
        if glob.glob(os.path.join(d, "libnvrtc.so*")): print(d); raise SystemExit
raise SystemExit(1)' 2>/dev/null
}
if [ "${CLUSTERLAB_NVRTC:-0}" = 1 ]; then
  if ! d=$(nvrtc_dir); then
    echo "setup: installing NVRTC from PyPI (nvidia-cuda-nvrtc, to compile-check the kernels)" >&2
    pip_install 'nvidia-cuda-nvrtc>=13,<14'
    d=$(nvrtc_dir) || { echo "error: could not provide NVRTC" >&2; exit 1; }
  fi
  export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The kernel compile check fails instead of skipping when NVRTC does not load.
  export CLUSTERLAB_REQUIRE_NVRTC=1
fi
