#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .device-bin/ carried:
# finds libnvrtc, runs the ignored GPU tests and the timing example, logs to $OUT.
#   scripts/gpu-run.sh [tests] [timing] [check] [analysis] [cupy] [ncu] [labels64]
#   (default: tests timing; labels64: the 64-bit against 32-bit labels bench, to 70000²)
set -uo pipefail
OUT=${OUT:-/tmp/gpu-run-out}
mkdir -p "$OUT"
what=${*:-tests timing}
has() { [[ " $what " == *" $1 "* ]]; }
nvrtc=$(ls -d /usr/local/cuda*/lib64 2>/dev/null | while read -r d; do ls "$d"/libnvrtc.so* >/dev/null 2>&1 && echo "$d"; done | head -1)
if [ -z "$nvrtc" ]; then
    nvrtc=$(dirname "$(find / -name 'libnvrtc.so*' -not -path '*/proc/*' 2>/dev/null | head -1)")
fi
export LD_LIBRARY_PATH="${nvrtc}:${LD_LIBRARY_PATH:-}"
echo "libnvrtc from: $nvrtc" | tee "$OUT/env.log"
nvidia-smi -L | tee -a "$OUT/env.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,memory.total --format=csv | tee -a "$OUT/env.log"
status=0
if has tests; then
    for t in .device-bin/test-*; do
        echo "== $(basename "$t") --ignored"
        ( time timeout ${TEST_TIMEOUT:-330} "$t" --ignored --test-threads=1 --nocapture ) 2>&1 | tee "$OUT/$(basename "$t").log"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    ( .device-bin/test-gpu --test-threads=1 missing_driver ) 2>&1 | tail -3 | tee -a "$OUT/test-gpu.log"
fi
if has analysis && [ -x .device-bin/gpu_analysis_timing ]; then
    echo "== analysis timing"
    timeout ${ANALYSIS_TIMEOUT:-200} .device-bin/gpu_analysis_timing --reps 20 --check 2>&1 | tee "$OUT/analysis-timing.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if has timing; then
    echo "== timing"
    flags=""; has check && flags="--check"
    timeout ${TIMING_TIMEOUT:-150} .device-bin/gpu_timing $flags 2>&1 | tee "$OUT/timing.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if has labels64 && [ -x .device-bin/labels64_gpu ]; then
    echo "== 64-bit against 32-bit labels"
    timeout ${LABELS64_TIMEOUT:-400} .device-bin/labels64_gpu 2>&1 | tee "$OUT/labels64.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if has cupy; then
    echo "== cupyx.scipy.ndimage.label, same lattice size and density"
    timeout 120 python3 - <<'PY' 2>&1 | tee "$OUT/cupy.log"
import cupy as cp, cupyx.scipy.ndimage as nd, numpy as np
n = 16384
rng = cp.random.default_rng(1)
a = (rng.random((n, n), dtype=cp.float32) < 0.592746).astype(cp.uint8)
for name, s in (("4", None), ("8", cp.ones((3, 3), dtype=bool))):
    out = cp.empty((n, n), dtype=cp.int32)
    for _ in range(3): nd.label(a, structure=s, output=out)
    ts = []
    for _ in range(20):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); nd.label(a, structure=s, output=out); e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    print(f"cupyx label {name}-conn {n}x{n}: median {sorted(ts)[10]:.3f} ms, min {min(ts):.3f} ms")
PY
fi
if has ncu && command -v ncu >/dev/null; then
    echo "== ncu kernel durations (one run of each configuration)"
    timeout ${NCU_TIMEOUT:-120} ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        --csv .device-bin/gpu_timing --once > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
    python3 - "$OUT/ncu.csv" <<'PY' 2>&1 | tee "$OUT/ncu.log"
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
ki, mi, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
idi = hdr.index("ID")
per = collections.OrderedDict()
for r in rows:
    per.setdefault(int(r[idi]), {"k": r[ki]})[r[mi]] = (r[vi], r[ui])
for i, d in per.items():
    print(i, d["k"], *(f"{m}={v[0]}{v[1]}" for m, v in d.items() if m != "k"))
PY
fi
echo "== done, status $status"
exit $status
