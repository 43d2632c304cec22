#!/usr/bin/env bash
# The test command (README, second command; .ci/run calls it): set-up, then formatting, lints,
# the whole test suite (GPU tests are listed as ignored without a device; every kernel
# configuration is still compiled with NVRTC from PyPI), the docs, and the Python package's
# tests (pytest; its GPU tests skip without CuPy and a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTERLAB_NVRTC=1 source scripts/setup.sh

cargo fmt --all --check
# The optional features really are optional: the library builds without any of them.
cargo check --locked --no-default-features
cargo check --locked --no-default-features --features plot
cargo check --locked --no-default-features --features cli,hdf5
# Tests and benches too, without the GPU: their CUDA parts must be gated, not just unused.
cargo clippy --locked --no-default-features --features cli,plot,hdf5 --all-targets -- -D warnings
# The workspace: the crate and the Python bindings (python/).
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --locked
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked

# MPI sample farms (feature `mpi`): Open MPI and libclang, the feature's lints, and the farm
# tests (mpirun -np 1, 2, 4, oversubscribed; every output equal to one process's, bit for bit).
source scripts/setup-mpi.sh
cargo clippy --locked --features mpi --all-targets -- -D warnings
cargo test --locked --features mpi --test mpi_farm

# The Python package: its virtual environment, the extension built into it, its tests.
bash scripts/python-setup.sh
.venv-py/bin/python -m pytest -q python/tests
