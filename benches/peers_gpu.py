#!/usr/bin/env python3
"""Times the GPU machine's peers on lattices stored as .npy files, for benches/gpu_vs_peers.rs.

    python3 benches/peers_gpu.py --dir DIR --out OUT.json --repeats 20 --warmup 3 CASE...

Each CASE is `FILE:CONNS`, e.g. `pc_16384.npy:4,8`. For each file and connectivity:

- cupyx: `cupyx.scipy.ndimage.label(a, structure=s, output=out)` on a lattice already on the GPU
  with a preallocated int32 output, timed with CUDA events (device-resident, like ours): `warmup`
  untimed calls, then the median of `repeats` timed calls.
- cupyx host-to-host (only for files named in --host): upload, label, download, timed on the wall
  clock (`time.perf_counter`) around the whole round trip.
- OpenCV: `cv2.connectedComponents(img, labels=out, connectivity=c, ltype=cv2.CV_32S)` (the
  default algorithm, Spaghetti; parallel), with `cv2.setNumThreads(os.cpu_count())`, wall-clock
  median of max(5, repeats // 4) calls after one warm-up. Its count includes label 0; the count
  written here does not.

Writes one JSON object: {"versions": {...}, "cases": [{"file", "conn", "cupyx_ms", "cupyx_count",
"cupyx_host_ms", "opencv_ms", "opencv_threads", "opencv_count"}]}.
"""

import argparse
import json
import os
import statistics
import sys
import time

import cupy as cp
import cupyx.scipy.ndimage as cnd
import cv2
import numpy as np


def structure(conn):
    if conn == 4:
        return None
    if conn == 8:
        return cp.ones((3, 3), dtype=bool)
    raise ValueError(f"connectivity must be 4 or 8, not {conn}")


def cupyx_ms(a_dev, conn, warmup, repeats):
    out = cp.empty(a_dev.shape, dtype=cp.int32)
    s = structure(conn)
    count = 0
    for _ in range(warmup):
        count = int(cnd.label(a_dev, structure=s, output=out))
    times = []
    for _ in range(repeats):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        cnd.label(a_dev, structure=s, output=out)
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(times), count


def cupyx_host_ms(a, conn, repeats):
    s = structure(conn)
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        d = cp.asarray(a)
        out = cp.empty(a.shape, dtype=cp.int32)
        cnd.label(d, structure=s, output=out)
        h = cp.asnumpy(out)
        cp.cuda.Stream.null.synchronize()
        if i > 0:
            times.append(time.perf_counter() - t0)
        del d, out, h
    return statistics.median(times) * 1e3


def opencv_ms(a, conn, repeats):
    out = np.empty(a.shape, dtype=np.int32)
    n = cv2.connectedComponents(a, labels=out, connectivity=conn, ltype=cv2.CV_32S)[0]
    times = []
    for _ in range(max(5, repeats // 4)):
        t0 = time.perf_counter()
        cv2.connectedComponents(a, labels=out, connectivity=conn, ltype=cv2.CV_32S)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, int(n) - 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--host", default="", help="comma-separated files also timed host-to-host")
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    threads = os.cpu_count() or 1
    cv2.setNumThreads(threads)
    host = set(filter(None, args.host.split(",")))
    rows = []
    for case in args.cases:
        name, _, conns = case.partition(":")
        a = np.ascontiguousarray(np.load(os.path.join(args.dir, name)))
        a_dev = cp.asarray(a)
        for conn in [int(c) for c in conns.split(",")]:
            ms, count = cupyx_ms(a_dev, conn, args.warmup, args.repeats)
            ocv, ocount = opencv_ms(a, conn, args.repeats)
            row = {
                "file": name,
                "conn": conn,
                "cupyx_ms": ms,
                "cupyx_count": count,
                "cupyx_host_ms": cupyx_host_ms(a, conn, 5) if name in host else None,
                "opencv_ms": ocv,
                "opencv_threads": threads,
                "opencv_count": ocount,
            }
            rows.append(row)
            print(f"  peers {name} {conn}-conn: cupyx {ms:.3f} ms, OpenCV/{threads} {ocv:.3f} ms",
                  file=sys.stderr, flush=True)
        del a_dev
        cp.get_default_memory_pool().free_all_blocks()
    versions = {
        "cupy": cp.__version__,
        "opencv": cv2.__version__,
        "numpy": np.__version__,
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "python": sys.version.split()[0],
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"versions": versions, "cases": rows}, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
