#!/usr/bin/env bash
# Runs ON the GPU machine with .device-bin/ carried: `clusterlab analyze` (every column) of a
# 16384² p_c lattice with open boundaries as a user runs it, a new process per run, --backend cpu
# then cuda twice (the first cuda run compiles the kernels, the second reads them from the disk
# cache), 4- and 8-connectivity, ROUNDS times (default 2). Prints time_ms (the subcommand's own
# timer) and the process's wall time; logs to $OUT/analyze-timings.log. ANALYZE_ARGS (default
# none: every column) adds flags, e.g. "--shape --no-labels" for the shape table alone; BIN
# (default .device-bin/clusterlab) names the binary.
set -uo pipefail
source "$(dirname "$0")/device-cli-setup.sh"
{
    nvidia-smi -L
    for c in 4 8; do
        for round in $(seq 1 "${ROUNDS:-2}"); do
            for b in cpu cuda cuda; do
                # shellcheck disable=SC2086 # ANALYZE_ARGS is a list of flags
                /usr/bin/time -f "wall %e s" "${BIN:-.device-bin/clusterlab}" analyze /tmp/in.npy \
                    -c $c --boundary open --backend $b ${ANALYZE_ARGS:-} --json 2>&1 | python3 -c "
import json, sys
t = sys.stdin.read()
j = json.loads(t[t.index('{'):t.rindex('}') + 1])
print('conn $c round $round --backend $b ${ANALYZE_ARGS:-}:', j['backend'], j['clusters'], 'clusters, time_ms',
      round(j['time_ms'], 1), t[t.rindex('}') + 1:].strip())"
            done
        done
    done
} 2>&1 | tee "$OUT/analyze-timings.log"
