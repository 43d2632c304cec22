#!/usr/bin/env bash
# Runs ON the GPU machine with .device-bin/ carried: `clusterlab label` of a 16384² lattice as a
# user runs it, in new processes, --backend cpu / auto / cuda (twice: the second run's kernels
# come from the on-disk cache), with --timings, each round beside the bare cost of reading the
# lattice and writing a label image with numpy (scripts/bare-read-write.py), ROUNDS times
# (default 3). Logs to $OUT/cli-timings.log.
set -uo pipefail
source "$(dirname "$0")/device-cli-setup.sh"
{
    nvidia-smi -L
    for round in $(seq 1 "${ROUNDS:-3}"); do
        for boundary in open periodic; do
            echo "== round $round: bare numpy read + write"
            /usr/bin/time -f "wall %e s, max RSS %M KiB" python3 scripts/bare-read-write.py /tmp/in.npy /tmp/labels.npy
            echo "== round $round: label ${n}² --boundary $boundary --backend cpu, no output (summary only)"
            /usr/bin/time -f "wall %e s, max RSS %M KiB" .device-bin/clusterlab label /tmp/in.npy \
                --boundary $boundary --backend cpu --timings -q
            for b in cpu auto cuda cuda; do
                echo "== round $round: label ${n}² --boundary $boundary --backend $b"
                /usr/bin/time -f "wall %e s, max RSS %M KiB" .device-bin/clusterlab label /tmp/in.npy \
                    -o /tmp/labels.npy --boundary $boundary --backend $b --timings -q
            done
        done
    done
    # The outputs themselves: every backend writes the same file.
    for b in cpu auto cuda; do
        .device-bin/clusterlab label /tmp/in.npy -o /tmp/labels-$b.npy --backend $b -q
    done
    python3 -c "import numpy as np; a = [np.load(f'/tmp/labels-{b}.npy') for b in ('cpu', 'auto', 'cuda')]; \
print('outputs equal (cpu, auto, cuda):', all(np.array_equal(a[0], x) for x in a[1:]), a[0].dtype, a[0].max())"
    rm -f /tmp/labels-*.npy
} 2>&1 | tee "$OUT/cli-timings.log"
