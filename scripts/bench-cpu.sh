#!/usr/bin/env bash
# CPU benchmark: clusterlab against OpenCV connectedComponents and scipy.ndimage.label.
#
#   scripts/bench-cpu.sh           # full run (2048² and 4096² lattices; a few minutes)
#   scripts/bench-cpu.sh --quick   # small smoke run (also: CLUSTERLAB_BENCH_QUICK=1)
#
# Idempotent: installs cmake >= 3.26 (for the bundled HDF5 build) and numpy, scipy and
# opencv-python-headless with pip only where they are missing, then runs
# `cargo bench --bench cpu_vs_peers`. The table is printed and written to bench-out/cpu.json.
#
# Environment: PYTHON (default python3), CLUSTERLAB_BENCH_QUICK, CLUSTERLAB_BENCH_THREADS (the
# "all threads" count; default: available parallelism).
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"
bench_main cpu_vs_peers "numpy:numpy scipy:scipy cv2:opencv-python-headless" "$@"
