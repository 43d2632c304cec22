#!/usr/bin/env bash
# Sourced by scripts/bench-cpu.sh and scripts/bench-analysis.sh, which differ only in their bench
# and the Python peers it imports:
#
#   bench_main BENCH "MODULE:PACKAGE ..." "$@"
#
# parses --quick / --help, sets up cmake (scripts/setup.sh) and, through pip only when one does
# not import, the peers, then execs `cargo bench --bench BENCH` with CLUSTERLAB_PYTHON naming the
# interpreter the bench must run. The calling script's leading comment is its --help.
set -euo pipefail

# The calling script's leading comment block, without the #! line.
bench_usage() {
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$1"
}

bench_main() {
    local bench=$1 peers=$2
    shift 2
    local script
    script=$(basename "$0")
    cd "$(dirname "$0")/.."

    PYTHON=${PYTHON:-python3}
    local arg
    for arg in "$@"; do
        case "$arg" in
            --quick) export CLUSTERLAB_BENCH_QUICK=1 ;;
            -h | --help)
                bench_usage "scripts/$script"
                exit 0
                ;;
            *)
                echo "$script: unknown argument $arg (use --quick)" >&2
                exit 2
                ;;
        esac
    done

    if ! command -v "$PYTHON" >/dev/null; then
        echo "$script: $PYTHON not found (set PYTHON=...)" >&2
        exit 1
    fi

    # cmake >= 3.26 for the bundled HDF5 build, installed only when missing (shared with the
    # README's commands).
    source scripts/setup.sh

    local missing=() pair
    for pair in $peers; do
        "$PYTHON" -c "import ${pair%%:*}" 2>/dev/null || missing+=("${pair#*:}")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "$script: installing ${missing[*]} with pip" >&2
        "$PYTHON" -m pip install -q "${missing[@]}"
    fi

    # The bench runs the same interpreter.
    CLUSTERLAB_PYTHON=$(command -v "$PYTHON")
    export CLUSTERLAB_PYTHON

    exec cargo bench --bench "$bench"
}
