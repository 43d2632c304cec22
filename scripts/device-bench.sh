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
if [ "${GPU_BENCH:-1}" = 1 ] && [ -x .device-bin/gpu_vs_peers ]; then
    echo "== GPU benchmark against cupyx and OpenCV ($(nproc) threads)"
    ( export LD_LIBRARY_PATH=$(ls -d /usr/local/cuda*/lib64 | head -1):${LD_LIBRARY_PATH:-}
      timeout ${GPU_BENCH_TIMEOUT:-300} .device-bin/gpu_vs_peers --bench ) 2>&1 | tee "$OUT/gpu-bench.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    cp bench-out/gpu.json "$OUT/gpu.json" 2>/dev/null || true
fi
if [ "${CPU_BENCH:-1}" = 1 ] && [ -x .device-bin/cpu_vs_peers ]; then
    echo "== CPU benchmark, 1 and $(nproc) threads"
    CLUSTERLAB_BENCH_THREADS=$(nproc) timeout ${CPU_TIMEOUT:-240} .device-bin/cpu_vs_peers --bench 2>&1 | tee "$OUT/cpu.log"
    cp bench-out/cpu.json "$OUT/cpu-device.json" 2>/dev/null || true
fi
exit $status
