#!/usr/bin/env bash
# Builds (release) what runs on the GPU machine and copies it to .device-bin/ with stable names:
#   .device-bin/gpu-tests    the tests/gpu.rs test binary
#   .device-bin/gpu_timing   the examples/gpu_timing.rs timing example
#   .device-bin/cpu_vs_peers the CPU benchmark against OpenCV and scipy
#   .device-bin/gpu_vs_peers the GPU benchmark against cupyx and OpenCV (all cores)
# Then: run scripts/gpu-run.sh on the device with carry [".device-bin"].
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d "$HOME/.pyenv/versions/3.11.7/bin" ]; then export PATH="$HOME/.pyenv/versions/3.11.7/bin:$PATH"; fi
mkdir -p .device-bin
exe=$(cargo test --release --features cuda --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "gpu" and m.get("executable"):
        print(m["executable"])')
[ -n "$exe" ] || { echo "could not find the gpu test binary" >&2; exit 1; }
cp "$exe" .device-bin/gpu-tests
cargo build --release --features cuda --example gpu_timing
cp target/release/examples/gpu_timing .device-bin/gpu_timing
cp scripts/gpu-run.sh .device-bin/ 2>/dev/null || true
# The CPU benchmark against OpenCV and scipy, for the GPU machine's cores (scripts/device-bench.sh).
bench=$(cargo bench --bench cpu_vs_peers --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "cpu_vs_peers" and m.get("executable"):
        print(m["executable"])')
[ -n "$bench" ] && cp "$bench" .device-bin/cpu_vs_peers
gbench=$(cargo bench --bench gpu_vs_peers --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "gpu_vs_peers" and m.get("executable"):
        print(m["executable"])')
[ -n "$gbench" ] && cp "$gbench" .device-bin/gpu_vs_peers
pwd > .device-bin/built-in
echo "copied to .device-bin/:"
ls -l .device-bin/
