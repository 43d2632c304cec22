#!/usr/bin/env bash
# Installs what the `mpi` feature needs, idempotently: Open MPI (mpicc, mpirun, headers) and
# libclang (rsmpi's build generates its bindings with bindgen). Debian/Ubuntu packages through
# apt-get, as root or with sudo; nothing is done when mpicc and libclang are already there.
# Sourced by scripts/test.sh, or run on its own: bash scripts/setup-mpi.sh
set -euo pipefail

have_libclang() {
  local f
  for f in /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*-linux-gnu/libclang*.so*; do
    [ -e "$f" ] && return 0
  done
  return 1
}

if ! command -v mpicc >/dev/null 2>&1 || ! have_libclang; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: install an MPI library (mpicc, mpirun) and libclang with your package manager" >&2
    exit 1
  fi
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "error: Open MPI and libclang are missing and neither root nor sudo can install them:" >&2
    echo "  apt-get install libopenmpi-dev openmpi-bin libclang-dev" >&2
    exit 1
  fi
  echo "setup-mpi: installing Open MPI and libclang (apt-get)" >&2
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
    libopenmpi-dev openmpi-bin libclang-dev >/dev/null
fi

# Open MPI refuses to run as root without these (CI runs as root), and a 2-core machine needs
# --oversubscribe for 4 ranks (the tests pass it).
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Containers often forbid the cross-memory attach of Open MPI's shared-memory transport.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
