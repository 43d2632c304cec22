# Sourced by the device CLI timing scripts (device-cli-timings.sh, device-analyze-timings.sh), ON
# the GPU machine: $OUT made, libnvrtc on LD_LIBRARY_PATH, an empty kernel cache (so that the
# first CUDA run compiles), and the lattice /tmp/in.npy: CLI_SIZE² (default 16384²) sites at
# p_c = 0.592746 from numpy's generator seeded 1; $n holds the side.
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
nvrtc=$(ls -d /usr/local/cuda*/lib64 2>/dev/null | while read -r d; do ls "$d"/libnvrtc.so* >/dev/null 2>&1 && echo "$d"; done | head -1)
export LD_LIBRARY_PATH="${nvrtc}:${LD_LIBRARY_PATH:-}"
export CLUSTERLAB_KERNEL_CACHE=/tmp/clusterlab-kernels
rm -rf "$CLUSTERLAB_KERNEL_CACHE"
n=${CLI_SIZE:-16384}
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('/tmp/in.npy', (r.random(($n,$n), dtype=np.float32) < 0.592746).astype(np.uint8))"
