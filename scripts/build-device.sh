#!/usr/bin/env bash
# Builds (release) what runs on the GPU machine and copies it to .device-bin/ with stable names:
#   .device-bin/test-<name>      every integration test binary that has GPU tests (tests/gpu*.rs,
#                                tests/regions.rs), run there with --ignored
#   .device-bin/gpu_timing       examples/gpu_timing.rs (per-algorithm timings at 16384²)
#   .device-bin/gpu_analysis_timing  examples/gpu_analysis_timing.rs
#   .device-bin/cpu_vs_peers     the CPU benchmark against OpenCV and scipy
#   .device-bin/gpu_vs_peers     the GPU benchmark against cupyx and OpenCV (all cores)
# Then: run scripts/device-bench.sh on the device with carry [".device-bin"].
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d "$HOME/.pyenv/versions/3.11.7/bin" ]; then export PATH="$HOME/.pyenv/versions/3.11.7/bin:$PATH"; fi
rm -rf .device-bin && mkdir -p .device-bin
# Prints "name path" for each executable artifact of a cargo --message-format=json build.
artifacts() {
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])'
}
tests=(gpu)
for t in gpu_analysis regions; do [ -f "tests/$t.rs" ] && tests+=("$t"); done
args=(); for t in "${tests[@]}"; do args+=(--test "$t"); done
cargo test --release --features cuda "${args[@]}" --no-run --message-format=json 2>/dev/null | artifacts |
    while read -r name exe; do
        # (an if, not `&&`: a false last test would fail the pipeline under set -e)
        if [[ " ${tests[*]} " == *" $name "* ]]; then cp "$exe" ".device-bin/test-$name"; fi
    done
for ex in gpu_timing gpu_analysis_timing; do
    if [ -f "examples/$ex.rs" ]; then
        cargo build --release --features cuda --example "$ex"
        cp "target/release/examples/$ex" .device-bin/
    fi
done
cp scripts/gpu-run.sh .device-bin/
for b in cpu_vs_peers gpu_vs_peers; do
    cargo bench --bench "$b" --no-run --message-format=json 2>/dev/null | artifacts |
        while read -r name exe; do if [ "$name" = "$b" ]; then cp "$exe" ".device-bin/$b"; fi; done
done
pwd > .device-bin/built-in
echo "copied to .device-bin/:"
ls -l .device-bin/
