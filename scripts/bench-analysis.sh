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

cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
for arg in "$@"; do
    case "$arg" in
        --quick) export CLUSTERLAB_BENCH_QUICK=1 ;;
        -h | --help)
            sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "bench-analysis.sh: unknown argument $arg (use --quick)" >&2
            exit 2
            ;;
    esac
done

if ! command -v "$PYTHON" >/dev/null; then
    echo "bench-analysis.sh: $PYTHON not found (set PYTHON=...)" >&2
    exit 1
fi

# cmake >= 3.26 for the bundled HDF5 build, installed only when missing (shared with the
# README's commands).
source scripts/setup.sh

# OpenCV and numpy, through pip only when they do not import.
missing=()
for pair in numpy:numpy cv2:opencv-python-headless; do
    "$PYTHON" -c "import ${pair%%:*}" 2>/dev/null || missing+=("${pair#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bench-analysis.sh: installing ${missing[*]} with pip" >&2
    "$PYTHON" -m pip install -q "${missing[@]}"
fi

CLUSTERLAB_PYTHON=$(command -v "$PYTHON")
export CLUSTERLAB_PYTHON

exec cargo bench --bench analysis_vs_peers
