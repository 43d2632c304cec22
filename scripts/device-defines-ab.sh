#!/usr/bin/env bash
# Runs ON the GPU machine from the repository root, with .device-bin/ carried (built here by
# scripts/build-device.sh): a kernel's compile-time choice against the default, from the same
# binaries. DEFINES (say "-DNAME=1") goes to NVRTC through CLUSTERLAB_NVRTC_DEFINES:
#   1. the GPU tests named in TESTS (default "size_counts gpu_analysis"), --ignored, with it on;
#   2. gpu_analysis --check at CHECK_SIZE (default 4100) with it on (its check lines);
#   3. ROUNDS (default 2) rounds of gpu_analysis --table-only --reps 10 (ARGS adds flags),
#      default then DEFINES, alternated, their rows.
# Logs go to $OUT/ab.log; the exit status is non-zero when a test or a check failed.
set -uo pipefail
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
DEFINES=${DEFINES:?set DEFINES, say DEFINES=-DNAME=1}
export LD_LIBRARY_PATH=$(ls -d /usr/local/cuda*/lib64 | head -1):${LD_LIBRARY_PATH:-}
log="$OUT/ab.log"
status=0
say() { echo "$@" | tee -a "$log"; }
say "== $(nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader); DEFINES=$DEFINES"
for t in ${TESTS:-size_counts gpu_analysis}; do
    out=$(CLUSTERLAB_NVRTC_DEFINES=$DEFINES timeout 300 .device-bin/test-$t --ignored --test-threads 1 2>&1)
    rc=$?
    say "test $t (rc $rc): $(grep -E '^test result' <<<"$out")"
    grep -E 'FAILED|panicked' <<<"$out" | head -5 | tee -a "$log"
    [ $rc -eq 0 ] || status=1
done
checks=$(CLUSTERLAB_NVRTC_DEFINES=$DEFINES timeout 120 .device-bin/gpu_analysis_timing --table-only --reps 2 \
    --check --size "${CHECK_SIZE:-4100}" 2>&1 | grep -E '^check')
say "$checks"
grep -q 'false' <<<"$checks" && status=1
[ -n "$checks" ] || status=1
for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in default "$DEFINES"; do
        say "== round $r: $v"
        d=""; [ "$v" = default ] || d=$v
        CLUSTERLAB_NVRTC_DEFINES=$d timeout 120 .device-bin/gpu_analysis_timing --table-only --reps 10 \
            ${ARGS:-} 2>&1 | grep -E '^(conn|[48] )' | tee -a "$log"
    done
done
exit $status
