#!/usr/bin/env python3
"""Times OpenCV's connectedComponentsWithStats on lattices stored as .npy files.

Called once per run by the `analysis_vs_peers` bench (benches/analysis_vs_peers.rs), which
compares these medians with clusterlab's cluster table on the same lattices:

    python3 benches/peers_stats.py --dir DIR --out OUT.tsv --threads 1,2 \
        --repeats 7 --warmup 2 --min-time 1.0 pc4_2048.npy:4 pc8_2048.npy:8 ...

Each positional argument is a file in DIR followed by `:` and the connectivities to time it with.

The timed call is `cv2.connectedComponentsWithStats(img, labels=out, stats=st, centroids=ce,
connectivity=c, ltype=cv2.CV_32S)` (default algorithm, Spaghetti, which computes the stats while
labeling) after `cv2.setNumThreads(t)`: labels, per component area and bounding box (left, top,
width, height) and centroid, the background as component 0. The outputs are preallocated and
passed in, so nothing is allocated in the timed call that the binding can avoid.

Each timing is `warmup` untimed calls, then timed calls (`time.perf_counter()`) until at least
`repeats` calls and at least `min-time` seconds, and the median, in ms. For the cross-check the
script also records, per case, the number of components without the background and checksums of
the non-background stats (sum of areas, of left + top, of right + bottom edges, of centroids), which
the bench compares with clusterlab's table.

The output is tab-separated, one record per line (easy to read without a JSON parser):

    versions  <opencv> <numpy> <python>
    time      <file> <conn> <threads> <median ms> <timed calls>
    check     <file> <conn> <count> <sum area> <sum left+top> <sum right+bottom> <sum centroids>
"""

import argparse
import os
import platform
import statistics
import sys
import time

import cv2
import numpy as np


def median_ms(fn, warmup, repeats, min_time, max_repeats):
    """Median wall time of fn() in ms after warm-up, the number of timed calls, fn()'s result."""
    result = None
    for _ in range(warmup):
        result = fn()
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if (len(times) >= repeats and time.perf_counter() - start >= min_time) or len(
            times
        ) >= max_repeats:
            break
    return statistics.median(times) * 1e3, len(times), result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="folder holding the .npy lattices")
    ap.add_argument("--out", required=True, help="tab-separated file to write")
    ap.add_argument("--threads", default="1", help="comma-separated OpenCV thread counts")
    ap.add_argument("--repeats", type=int, default=7, help="least number of timed calls")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls first")
    ap.add_argument("--min-time", type=float, default=1.0, help="least timed seconds")
    ap.add_argument("--max-repeats", type=int, default=1000, help="most timed calls")
    ap.add_argument("cases", nargs="+", help="FILE:4,8 in --dir")
    args = ap.parse_args()

    threads = [int(t) for t in args.threads.split(",")]
    timing = (args.warmup, args.repeats, args.min_time, args.max_repeats)
    lines = [f"versions\t{cv2.__version__}\t{np.__version__}\t{platform.python_version()}"]
    for arg in args.cases:
        name, _, conns = arg.partition(":")
        conns = [int(c) for c in conns.split(",")] if conns else [4, 8]
        img = np.ascontiguousarray(np.load(os.path.join(args.dir, name)))
        if img.dtype != np.uint8 or img.ndim != 2:
            sys.exit(f"{name}: expected a 2-D uint8 lattice, got {img.ndim}-D {img.dtype}")
        labels = np.empty(img.shape, dtype=np.int32)
        for conn in conns:
            result = None
            txt = []
            for t in threads:
                cv2.setNumThreads(t)

                def call():
                    return cv2.connectedComponentsWithStats(
                        img, labels=labels, connectivity=conn, ltype=cv2.CV_32S
                    )

                ms, reps, result = median_ms(call, *timing)
                lines.append(f"time\t{name}\t{conn}\t{t}\t{ms:.6f}\t{reps}")
                txt.append(f"t={t}: {ms:.2f} ms")
            n, _, stats, centroids = result
            left, top, width, height, area = stats[1:].astype(np.int64).T
            lines.append(
                "check\t{}\t{}\t{}\t{}\t{}\t{}\t{!r}".format(
                    name,
                    conn,
                    int(n) - 1,
                    int(area.sum()),
                    int(left.sum() + top.sum()),
                    int((left + width - 1).sum() + (top + height - 1).sum()),
                    float(centroids[1:].astype(np.float64).sum()),
                )
            )
            print(f"  OpenCV withStats {name} {conn}-conn: {'  '.join(txt)}", file=sys.stderr)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
