#!/usr/bin/env bash
# Runs ON the GPU machine from the repository root, with .whl/ carried (built here by
# scripts/build-python-wheel.sh): installs the wheel (and pytest, where missing) offline into a
# folder on PYTHONPATH beside the machine's NumPy, SciPy, CuPy and scikit-image, runs the Python tests
# (the CuPy ones included) and benches/python_vs_peers.py on 1 and all cores. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/device-python-out}
mkdir -p "$OUT"
# The image's plain python3 is the one with NumPy, SciPy, CuPy and scikit-image (a python3.12
# beside it may have none of them: seen on an H100 machine, 2026-11-26).
PY=${PYTHON:-python3}
nvrtc=$(ls -d /usr/local/cuda*/lib64 2>/dev/null | while read -r d; do ls "$d"/libnvrtc.so* >/dev/null 2>&1 && echo "$d"; done | head -1)
if [ -z "$nvrtc" ]; then
    nvrtc=$(dirname "$(find / -name 'libnvrtc.so*' -not -path '*/proc/*' 2>/dev/null | head -1)")
fi
export LD_LIBRARY_PATH="${nvrtc}:${LD_LIBRARY_PATH:-}"
# The wheel (and pytest's wheels, where the image lacks pytest) into a folder of their own on
# PYTHONPATH: the image's packages stay as they are.
site=/tmp/clusterlab-site
rm -rf "$site"
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/clusterlab-*.whl
if ! "$PY" -c 'import pytest' 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-compile --target "$site" --find-links .whl/deps pytest
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
py=$PY
status=0
echo "== Python tests (CuPy ones included)"
(cd /tmp && "$py" -m pytest -q -rs "$OLDPWD/python/tests") 2>&1 | tee "$OUT/pytest.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
for t in 1 $(nproc); do
    echo "== benches/python_vs_peers.py, $t thread(s)"
    timeout ${BENCH_TIMEOUT:-280} "$py" benches/python_vs_peers.py --threads "$t" \
        --json "$OUT/python_vs_peers_t$t.json" 2>&1 | tee "$OUT/python_vs_peers_t$t.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit $status
