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

cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
for arg in "$@"; do
    case "$arg" in
        --quick) export CLUSTERLAB_BENCH_QUICK=1 ;;
        -h | --help)
            sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "bench-cpu.sh: unknown argument $arg (use --quick)" >&2
            exit 2
            ;;
    esac
done

if ! command -v "$PYTHON" >/dev/null; then
    echo "bench-cpu.sh: $PYTHON not found (set PYTHON=...)" >&2
    exit 1
fi

# cmake >= 3.26 for the bundled HDF5 build, installed only when missing (shared with the
# README's commands).
source scripts/setup.sh

# The peers, through pip only if one does not import.
missing=()
for pair in numpy:numpy scipy:scipy cv2:opencv-python-headless; do
    module=${pair%%:*}
    package=${pair#*:}
    "$PYTHON" -c "import $module" 2>/dev/null || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bench-cpu.sh: installing ${missing[*]} with pip" >&2
    "$PYTHON" -m pip install -q "${missing[@]}"
fi

# The bench runs the same interpreter.
CLUSTERLAB_PYTHON=$(command -v "$PYTHON")
export CLUSTERLAB_PYTHON

exec cargo bench --bench cpu_vs_peers
