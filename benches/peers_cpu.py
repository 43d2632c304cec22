#!/usr/bin/env python3
"""Times OpenCV's and scipy's connected-component labeling on lattices stored as .npy files.

The `cpu_vs_peers` bench (benches/cpu_vs_peers.rs) starts this once, in serve mode, and asks for
each lattice's timings just before it times clusterlab on the same lattice, so that both see the
same load on a shared machine:

    python3 benches/peers_cpu.py --dir DIR --serve --repeats 7 --warmup 2 --min-time 1.0

prints one JSON line with the library versions, then answers each request line on stdin with one
JSON line on stdout (`{"ms": median, "reps": timed calls, "count": clusters}`, or
`{"error": ...}`):

    scipy FILE CONN
    opencv FILE CONN THREADS
    opencv_alloc FILE CONN THREADS
    pin CPU        (the timing thread runs on CPU only; the reply is {"pinned": [CPU]})
    unpin          (back to the CPUs it could use at start)

Batch mode times every file at once and writes one JSON report:

    python3 benches/peers_cpu.py --dir DIR --out OUT.json --threads 1,2 \
        --repeats 7 --warmup 2 --min-time 1.0 pc4_2048.npy:4,8 pc8_2048.npy:8 ...

where each positional argument is a file in DIR, optionally followed by `:` and the
connectivities to time it with (default `4,8`).

- OpenCV: `cv2.connectedComponents(img, labels=out, connectivity=c, ltype=cv2.CV_32S)` with the
  default algorithm (CCL_DEFAULT: Spaghetti), after `cv2.setNumThreads(t)`. The binding accepts
  the preallocated int32 `labels` array and writes into it (checked below), so no output is
  allocated inside the timed call. Its count includes the background label 0; the count
  reported here does not. `opencv_alloc` times the call as users make it, without `labels=`:
  OpenCV allocates a new label image each call (the bench's one-shot column).
- scipy: `scipy.ndimage.label(img, structure=s, output=out)` with a preallocated int32 output.
  scipy is single-threaded, so it is timed once per lattice and connectivity, and the bench
  reports that time against every thread count.

Each timing is `warmup` untimed calls, then timed calls (`time.perf_counter()`) until at least
`repeats` calls and at least `min-time` seconds (or `max-repeats` calls), and their median, in ms.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import cv2
import numpy as np
import scipy
import scipy.ndimage as ndimage


def median_ms(fn, warmup, repeats, min_time, max_repeats):
    """Median wall time of fn() in ms after warm-up, and fn()'s last result."""
    result = None
    for _ in range(warmup):
        result = fn()
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        done = len(times) >= repeats and time.perf_counter() - start >= min_time
        if done or len(times) >= max_repeats:
            break
    return statistics.median(times) * 1e3, len(times), result


def structure(conn):
    if conn == 4:
        return ndimage.generate_binary_structure(2, 1)
    if conn == 8:
        return np.ones((3, 3), dtype=bool)
    raise ValueError(f"connectivity must be 4 or 8, not {conn}")


def parse_case(arg):
    name, _, conns = arg.partition(":")
    conns = [int(c) for c in conns.split(",")] if conns else [4, 8]
    return name, conns


def versions():
    return {
        "opencv": cv2.__version__,
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


class Peers:
    """The lattices of one folder (loaded once each) and the timings of both libraries."""

    def __init__(self, folder, timing):
        self.folder = folder
        self.timing = timing
        self.images = {}

    def image(self, name):
        if name not in self.images:
            if os.path.basename(name) != name:
                raise ValueError(f"{name}: a file name in --dir, not a path")
            img = np.ascontiguousarray(np.load(os.path.join(self.folder, name)))
            if img.dtype != np.uint8 or img.ndim != 2:
                got = f"{img.ndim}-D {img.dtype}"
                raise ValueError(f"{name}: expected a 2-D uint8 lattice, got {got}")
            self.images[name] = (img, np.empty(img.shape, dtype=np.int32))
        return self.images[name]

    def scipy(self, name, conn):
        img, out = self.image(name)
        s = structure(conn)
        ms, reps, n = median_ms(lambda: ndimage.label(img, structure=s, output=out), *self.timing)
        return {"ms": ms, "reps": reps, "count": int(n)}

    def opencv(self, name, conn, threads):
        img, out = self.image(name)
        structure(conn)  # checks conn
        cv2.setNumThreads(threads)
        ms, reps, (n, labels) = median_ms(
            lambda: cv2.connectedComponents(img, labels=out, connectivity=conn, ltype=cv2.CV_32S),
            *self.timing,
        )
        if labels is not out:
            print("note: OpenCV did not write into the preallocated output", file=sys.stderr)
        return {"ms": ms, "reps": reps, "count": int(n) - 1}

    def opencv_alloc(self, name, conn, threads):
        """OpenCV as users call it: `connectedComponents` allocating its label image."""
        img, _ = self.image(name)
        structure(conn)  # checks conn
        cv2.setNumThreads(threads)
        ms, reps, (n, _labels) = median_ms(
            lambda: cv2.connectedComponents(img, connectivity=conn, ltype=cv2.CV_32S),
            *self.timing,
        )
        return {"ms": ms, "reps": reps, "count": int(n) - 1}


def serve(peers):
    start_cpus = sorted(os.sched_getaffinity(0))
    print(json.dumps(versions()), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "scipy" and len(words) == 3:
                reply = peers.scipy(words[1], int(words[2]))
            elif words[0] == "opencv" and len(words) == 4:
                reply = peers.opencv(words[1], int(words[2]), int(words[3]))
            elif words[0] == "opencv_alloc" and len(words) == 4:
                reply = peers.opencv_alloc(words[1], int(words[2]), int(words[3]))
            elif words[0] == "pin" and len(words) == 2:
                os.sched_setaffinity(0, {int(words[1])})
                reply = {"pinned": sorted(os.sched_getaffinity(0))}
            elif words[0] == "unpin" and len(words) == 1:
                os.sched_setaffinity(0, start_cpus)
                reply = {"pinned": sorted(os.sched_getaffinity(0))}
            else:
                reply = {"error": f"unknown request {line.strip()!r}"}
        except Exception as e:  # reported to the bench, which stops
            reply = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(reply), flush=True)


def batch(peers, threads, case_args, out_path):
    cases = []
    for arg in case_args:
        name, conns = parse_case(arg)
        for conn in conns:
            sp = peers.scipy(name, conn)
            opencv = {str(t): peers.opencv(name, conn, t) for t in threads}
            cases.append({"file": name, "conn": conn, "scipy": sp, "opencv": opencv})
            cv_txt = "  ".join(f"t={t}: {v['ms']:.2f} ms" for t, v in opencv.items())
            print(
                f"  peers {name} {conn}-conn: scipy {sp['ms']:.2f} ms, OpenCV {cv_txt}",
                file=sys.stderr,
            )
    with open(out_path, "w") as f:
        json.dump({**versions(), "cases": cases}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="folder holding the .npy lattices")
    ap.add_argument("--serve", action="store_true", help="answer requests on stdin")
    ap.add_argument("--out", help="JSON file to write (batch mode)")
    ap.add_argument("--threads", default="1", help="comma-separated OpenCV thread counts (batch)")
    ap.add_argument("--repeats", type=int, default=7, help="least number of timed calls")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls first")
    ap.add_argument("--min-time", type=float, default=1.0, help="least timed seconds")
    ap.add_argument("--max-repeats", type=int, default=1000, help="most timed calls")
    ap.add_argument("cases", nargs="*", help="FILE[:4,8] in --dir (batch)")
    args = ap.parse_args()

    peers = Peers(args.dir, (args.warmup, args.repeats, args.min_time, args.max_repeats))
    if args.serve:
        serve(peers)
    elif args.out and args.cases:
        threads = [int(t) for t in args.threads.split(",")]
        batch(peers, threads, args.cases, args.out)
    else:
        ap.error("give --serve, or --out and at least one case")


if __name__ == "__main__":
    main()
