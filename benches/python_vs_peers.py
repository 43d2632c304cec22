#!/usr/bin/env python3
"""Per-call wall time of clusterlab.label from Python against its Python peers.

One-shot calls as users make them (each allocates its output), on L x L lattices at p_c and at
density 0.8, 4- and 8-connectivity, open boundaries:

  clusterlab.label                  (CPU; rayon threads = --threads)
  scipy.ndimage.label               (one thread: it has no others)
  cc3d.connected_components         (pip connected-components-3d; one thread)
  cv2.connectedComponents           (OpenCV, cv2.setNumThreads(--threads))
  cupyx.scipy.ndimage.label         (CuPy arrays on the GPU, when CuPy and a GPU are there;
                                     against clusterlab.label on the same CuPy arrays)

Medians over repeats after a warm-up; small lattices are timed in batches of calls so that the
clock's resolution does not matter. Missing peers are skipped. Prints a table (ms per call;
ratio = fastest CPU peer / clusterlab) and writes JSON.

    RAYON_NUM_THREADS is set from --threads before clusterlab is imported.

Usage: python benches/python_vs_peers.py [--threads N] [--sizes 64,256,1024,4096]
       [--json bench-out/python_vs_peers.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", default="64,256,1024,4096")
    ap.add_argument("--json", default=None)
    ap.add_argument("--seconds", type=float, default=0.6,
                    help="target time per case and peer (default 0.6 s)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test)")
    ap.add_argument("--no-gpu", action="store_true")
    return ap.parse_args()


ARGS = parse()
os.environ["RAYON_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402

import clusterlab  # noqa: E402

try:
    from scipy import ndimage
except ImportError:  # pragma: no cover
    ndimage = None
try:
    import cc3d
except ImportError:
    cc3d = None
try:
    import cv2

    cv2.setNumThreads(ARGS.threads)
except ImportError:
    cv2 = None
cupy = cupyx_label = None
if not ARGS.no_gpu:
    try:
        import cupy
        from cupyx.scipy.ndimage import label as cupyx_label

        if cupy.cuda.runtime.getDeviceCount() == 0 or not clusterlab.cuda_available():
            cupy = cupyx_label = None
    except Exception:
        cupy = cupyx_label = None

P_C = 0.592746


def time_call(fn, seconds, sync=None):
    """Median seconds per call: warm-up, then batches of calls sized to ~1/15 of the budget."""
    for _ in range(3):
        fn()
    if sync:
        sync()
    t0 = time.perf_counter()
    fn()
    if sync:
        sync()
    one = max(time.perf_counter() - t0, 1e-7)
    batch = max(1, int(seconds / 15 / one))
    repeats = 5 if ARGS.quick else max(7, min(31, int(seconds / (batch * one))))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        if sync:
            sync()
        samples.append((time.perf_counter() - t0) / batch)
    return statistics.median(samples)


def structure(conn):
    return np.ones((3, 3), bool) if conn == 8 else ndimage.generate_binary_structure(2, 1)


def main():
    sizes = [int(s) for s in ARGS.sizes.split(",")]
    seconds = 0.15 if ARGS.quick else ARGS.seconds
    rng = np.random.default_rng(2026)
    rows = []
    for L in sizes:
        for density, dname in ((P_C, "p_c"), (0.8, "0.8")):
            a = (rng.random((L, L)) < density).astype(np.uint8)
            for conn in (4, 8):
                row = {"L": L, "density": dname, "connectivity": conn, "threads": ARGS.threads}
                labels, n = clusterlab.label(a, connectivity=conn)
                row["clusters"] = n
                row["clusterlab"] = time_call(lambda: clusterlab.label(a, connectivity=conn),
                                              seconds)
                if ndimage is not None:
                    ref, m = ndimage.label(a, structure=structure(conn))
                    assert m == n and np.array_equal(ref, labels), "labels differ from scipy"
                    s = structure(conn)
                    row["scipy"] = time_call(lambda: ndimage.label(a, structure=s), seconds)
                if cc3d is not None:
                    row["cc3d"] = time_call(
                        lambda: cc3d.connected_components(a, connectivity=conn), seconds)
                if cv2 is not None:
                    row["cv2"] = time_call(
                        lambda: cv2.connectedComponents(a, connectivity=conn, ltype=cv2.CV_32S),
                        seconds)
                peers = [row[k] for k in ("scipy", "cc3d", "cv2") if k in row]
                if peers:
                    row["fastest_peer"] = min(peers)
                    row["ratio"] = row["fastest_peer"] / row["clusterlab"]
                if cupy is not None:
                    d = cupy.asarray(a)
                    s = cupy.asarray(structure(conn))
                    sync = cupy.cuda.get_current_stream().synchronize
                    dl, dn = clusterlab.label(d, connectivity=conn)
                    assert dn == n and bool((dl == cupy.asarray(labels)).all()), "GPU labels"
                    row["clusterlab_cupy"] = time_call(
                        lambda: clusterlab.label(d, connectivity=conn), seconds, sync)
                    row["cupyx"] = time_call(lambda: cupyx_label(d, s), seconds, sync)
                    row["ratio_cupyx"] = row["cupyx"] / row["clusterlab_cupy"]
                rows.append(row)
                print_row(row, header=len(rows) == 1)
                sys.stdout.flush()
    meta = {
        "machine": platform.processor() or platform.machine(),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": ARGS.threads,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "clusterlab": clusterlab.__version__,
        "scipy": getattr(sys.modules.get("scipy"), "__version__", None),
        "cc3d": version("connected-components-3d") if cc3d is not None else None,
        "cv2": getattr(cv2, "__version__", None),
        "cupy": getattr(cupy, "__version__", None),
        "date": time.strftime("%Y-%m-%d"),
    }
    if ARGS.json:
        os.makedirs(os.path.dirname(ARGS.json) or ".", exist_ok=True)
        with open(ARGS.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print(json.dumps(meta))


def version(dist):
    try:
        from importlib.metadata import version as v

        return v(dist)
    except Exception:
        return None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def ms(x):
    return "-" if x is None else (f"{x * 1e3:.4f}" if x < 1e-3 else f"{x * 1e3:.3f}")


def print_row(r, header):
    cols = ["L", "density", "conn", "threads", "clusters", "clusterlab", "scipy", "cc3d", "cv2",
            "ratio", "clusterlab(cupy)", "cupyx", "ratio(cupyx)"]
    if header:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    vals = [f"{r['L']}²", r["density"], r["connectivity"], r["threads"], r["clusters"],
            ms(r["clusterlab"]), ms(r.get("scipy")), ms(r.get("cc3d")), ms(r.get("cv2")),
            f"{r['ratio']:.2f}" if "ratio" in r else "-", ms(r.get("clusterlab_cupy")),
            ms(r.get("cupyx")), f"{r['ratio_cupyx']:.2f}" if "ratio_cupyx" in r else "-"]
    print("| " + " | ".join(str(v) for v in vals) + " |")


if __name__ == "__main__":
    main()
