#!/usr/bin/env bash
# Builds (release) what runs on the GPU machine and copies it to .device-bin/ with stable names:
#   .device-bin/test-<name>      every integration test binary that has GPU tests (those that
#                                say "needs a CUDA device"), run there with --ignored
#   .device-bin/clusterlab       the command-line tool
#   .device-bin/gpu_timing       benches/gpu_timing.rs (per-algorithm timings at 16384²)
#   .device-bin/gpu_analysis_timing  benches/gpu_analysis.rs
#   .device-bin/cpu_vs_peers     the CPU benchmark against OpenCV and scipy
#   .device-bin/gpu_vs_peers     the GPU benchmark against cupyx and OpenCV (all cores)
#   .device-bin/multi_gpu        benches/multi_gpu.rs (strips over 1..N GPUs and loopback)
#   .device-bin/labels64_gpu     benches/labels64_gpu.rs (64-bit against 32-bit labels, up to 70000²)
#   .device-bin/labels64         benches/labels64.rs (the same on the CPU, or through Labeler)
# Then: run scripts/device-bench.sh on the device with carry [".device-bin"].
# Honours CARGO_TARGET_DIR; fails (non-zero, with cargo's errors) when anything does not build.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
rm -rf .device-bin && mkdir -p .device-bin
# Prints "name path" for each executable artifact of a cargo --message-format=json build.
artifacts() {
    python3 -c 'import json,sys
for line in sys.stdin:
    if not line.startswith("{"): continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])'
}
# Builds with cargo's diagnostics on stderr and copies the named executables: copy NAME DEST ARGS...
copy() {
    local want=$1 dest=$2
    shift 2
    local out
    out=$(cargo "$@" --message-format=json-render-diagnostics | artifacts | awk -v w="$want" '$1 == w {print $2}' | tail -1)
    if [ -z "$out" ]; then
        echo "build-device: cargo $* built no executable named $want" >&2
        exit 1
    fi
    cp "$out" ".device-bin/$dest"
}
# Every integration test with GPU tests (they carry #[ignore = "needs a CUDA device"]).
for f in tests/*.rs; do
    t=$(basename "$f" .rs)
    if grep -q 'needs a CUDA device' "$f"; then
        copy "$t" "test-$t" test --release --features cuda --test "$t" --no-run
    fi
done
copy clusterlab clusterlab build --release
# Bench targets, by the names scripts/gpu-run.sh and scripts/device-bench.sh run them under.
for pair in cpu_vs_peers:cpu_vs_peers gpu_vs_peers:gpu_vs_peers gpu_timing:gpu_timing \
    gpu_analysis:gpu_analysis_timing swendsen_wang_gpu:swendsen_wang_gpu fixed_p:fixed_p multi_gpu:multi_gpu \
    labels64_gpu:labels64_gpu labels64:labels64; do
    if [ -f "benches/${pair%%:*}.rs" ]; then
        copy "${pair%%:*}" "${pair##*:}" bench --bench "${pair%%:*}" --no-run
    fi
done
cp scripts/gpu-run.sh .device-bin/
pwd > .device-bin/built-in
echo "copied to .device-bin/:"
ls -l .device-bin/
