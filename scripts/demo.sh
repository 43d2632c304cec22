#!/usr/bin/env bash
# The main job (README, first command): set-up, build, label the bundled reference lattices and a
# freshly generated 4096² percolation sample, printing a summary of each.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cargo build --release --locked --bin clusterlab
bin="${CARGO_TARGET_DIR:-target}/release/clusterlab"
out=target/demo
mkdir -p "$out"

$bin label datasets/percolation_128_pc.npy --output "$out/percolation_128_pc.h5" --boundary periodic
$bin label datasets/spiral_64.npy --output "$out/spiral_64.npy" --connectivity 4
$bin generate --size 4096 --p 0.592746 --seed 1 --output "$out/pc_4096.npy"
$bin label "$out/pc_4096.npy" --output "$out/pc_4096_labels.npy" --connectivity 4 --boundary periodic

# The same from Python (the package in python/, built into .venv-py by scripts/python-setup.sh).
bash scripts/python-setup.sh
.venv-py/bin/python -c "import numpy as np, clusterlab; a = np.load('$out/pc_4096.npy'); labels, n = clusterlab.label(a, boundary='periodic'); t = clusterlab.analyze(a[:1024, :1024]); print(f'python: {n} clusters on the 4096² torus; its open 1024² corner: largest {t.stats[\"largest\"]}, P_inf {t.stats[\"p_infinity\"]:.4f}')"
