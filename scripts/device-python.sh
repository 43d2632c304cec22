#!/usr/bin/env bash
# Runs ON the GPU machine from the repository root, with .whl/ carried (built here by
# scripts/build-python-wheel.sh): installs the wheel and pytest offline into a virtual
# environment that sees the machine's NumPy, SciPy, CuPy and scikit-image, runs the Python tests
# (the CuPy ones included) and benches/python_vs_peers.py on 1 and all cores. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/device-python-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3.12}
command -v "$PY" >/dev/null || PY=python3
nvrtc=$(ls -d /usr/local/cuda*/lib64 2>/dev/null | while read -r d; do ls "$d"/libnvrtc.so* >/dev/null 2>&1 && echo "$d"; done | head -1)
if [ -z "$nvrtc" ]; then
    nvrtc=$(dirname "$(find / -name 'libnvrtc.so*' -not -path '*/proc/*' 2>/dev/null | head -1)")
fi
export LD_LIBRARY_PATH="${nvrtc}:${LD_LIBRARY_PATH:-}"
venv=/tmp/clusterlab-venv
if "$PY" -m venv --system-site-packages "$venv" 2>/dev/null; then
    "$venv/bin/python" -m pip install -q --no-index --find-links .whl/deps pytest
    "$venv/bin/python" -m pip install -q --no-index --no-deps --force-reinstall .whl/clusterlab-*.whl
    py="$venv/bin/python"
else
    # No venv module: the wheels are zip files; unpacked onto PYTHONPATH they import as well.
    site=/tmp/clusterlab-site
    rm -rf "$site" && mkdir -p "$site"
    for w in .whl/clusterlab-*.whl .whl/deps/*.whl; do "$PY" -m zipfile -e "$w" "$site"; done
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    py=$PY
fi
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
