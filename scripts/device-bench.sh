#!/usr/bin/env bash
# Runs ON the GPU machine from the repository root, with .device-bin/ carried (built here by
# scripts/build-device.sh): the GPU tests, the device-resident GPU timings against cupyx, and the
# CPU benchmark against OpenCV and scipy on that machine's cores. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
# The CPU bench finds benches/peers_cpu.py through the path it was built in.
built_in=$(cat .device-bin/built-in 2>/dev/null || true)
if [ -n "$built_in" ] && [ ! -e "$built_in" ]; then
    mkdir -p "$(dirname "$built_in")" && ln -s "$PWD" "$built_in"
fi
bash .device-bin/gpu-run.sh ${GPU_PARTS:-tests timing check cupy}
status=$?
if [ -x .device-bin/cpu_vs_peers ]; then
    echo "== CPU benchmark, 1 and $(nproc) threads"
    CLUSTERLAB_BENCH_THREADS=$(nproc) timeout ${CPU_TIMEOUT:-240} .device-bin/cpu_vs_peers --bench 2>&1 | tee "$OUT/cpu.log"
    cp bench-out/cpu.json "$OUT/cpu-device.json" 2>/dev/null || true
fi
exit $status
