#!/usr/bin/env bash
# Cluster-table benchmark: clusterlab's analyze (shape-only and full table) against OpenCV's
# connectedComponentsWithStats, same lattices, same thread counts.
#
#   scripts/bench-analysis.sh           # full run (2048² and 4096² at p_c; a few minutes)
#   scripts/bench-analysis.sh --quick   # small smoke run (also: CLUSTERLAB_BENCH_QUICK=1)
#
# Idempotent: installs cmake >= 3.26 (for the bundled HDF5 build) and numpy and
# opencv-python-headless with pip only where they are missing, then runs
# `cargo bench --bench analysis_vs_peers`. The table is printed and written to
# bench-out/analysis.json.
#
# Environment: PYTHON (default python3), CLUSTERLAB_BENCH_QUICK, CLUSTERLAB_BENCH_THREADS (the
# "all threads" count; default: available parallelism).
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"
bench_main analysis_vs_peers "numpy:numpy cv2:opencv-python-headless" "$@"
