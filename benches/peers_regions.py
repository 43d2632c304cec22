#!/usr/bin/env python3
"""Times seeded regions in scikit-image, OpenCV and CuPy for benches/regions.rs.

    python3 benches/peers_regions.py --dir DIR --repeats R

prints one line with the library versions, then answers each request line on stdin

    FILE TOL CONN ABSORB Y,X;Y,X;...

(FILE a 2-D .npy field in DIR, CONN 4 or 8, ABSORB 0 or 1) with one line per peer,
`NAME MEDIAN_MS SITES`, and a line `done`. Each region is the union over the seeds of the sites
connected to the seed through sites within TOL of that seed's value (inclusive); ABSORB fills the
enclosed holes with scipy's (or cupyx's) binary_fill_holes and the dual structure.

- skimage: `skimage.segmentation.flood(img, (y, x), tolerance=TOL, connectivity=1|2)` per seed, OR-ed.
- opencv: `cv2.floodFill(img, mask, (x, y), 0, TOL, TOL, CONN | FLOODFILL_FIXED_RANGE |
  FLOODFILL_MASK_ONLY | 1 << 8)` per seed into a fresh zeroed (h+2)x(w+2) mask, OR-ed.
- cupy (device-resident field): per distinct seed value `abs(f - v) <= TOL`,
  `cupyx.scipy.ndimage.label`, keep the seeds' labels with `isin`; timed with CUDA events.

Timing: 2 untimed calls, then REPEATS timed calls (perf_counter, or CUDA events), median in ms.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import scipy.ndimage as ndi
import skimage
from skimage.segmentation import flood

try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None
try:
    import cupy as cp
    import cupyx.scipy.ndimage as cndi

    cp.cuda.runtime.getDeviceCount()
except Exception:  # no CuPy or no GPU
    cp = None


def med(fn, reps):
    fn()
    r = fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t), r


def med_gpu(fn, reps):
    fn()
    r = fn()
    t = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        r = fn()
        b.record()
        b.synchronize()
        t.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(t), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    print(
        f"numpy {np.__version__} skimage {skimage.__version__} "
        f"opencv {cv2.__version__ if cv2 else None} cupy {cp.__version__ if cp else None} "
        f"threads(opencv) {cv2.getNumThreads() if cv2 else None}",
        flush=True,
    )
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        fname, tol, conn, absorb, seeds = parts
        tol, conn, absorb = float(tol), int(conn), absorb == "1"
        seeds = [tuple(int(v) for v in s.split(",")) for s in seeds.split(";")]
        img = np.load(os.path.join(a.dir, fname))
        h, w = img.shape
        dual = np.ones((3, 3), bool) if conn == 4 else ndi.generate_binary_structure(2, 1)

        def sk():
            m = np.zeros(img.shape, bool)
            for y, x in seeds:
                m |= flood(img, (y, x), tolerance=tol, connectivity=1 if conn == 4 else 2)
            return ndi.binary_fill_holes(m, structure=dual) if absorb else m

        ms, m = med(sk, a.repeats)
        print(f"peer-skimage-flood {ms:.3f} {int(m.sum())}", flush=True)
        if cv2 is not None:
            flags = conn | cv2.FLOODFILL_FIXED_RANGE | cv2.FLOODFILL_MASK_ONLY | (1 << 8)

            def cvf():
                # A fresh mask per seed: a filled mask stops later fills, whose references differ.
                m = np.zeros(img.shape, bool)
                for y, x in seeds:
                    mask = np.zeros((h + 2, w + 2), np.uint8)
                    cv2.floodFill(img, mask, (x, y), 0, tol, tol, flags)
                    m |= mask[1:-1, 1:-1] != 0
                return ndi.binary_fill_holes(m, structure=dual) if absorb else m

            ms, m = med(cvf, a.repeats)
            print(f"peer-opencv-floodFill {ms:.3f} {int(m.sum())}", flush=True)
        if cp is not None:
            f = cp.asarray(img).astype(cp.float32)
            st = cp.asarray(np.ones((3, 3), bool) if conn == 8 else ndi.generate_binary_structure(2, 1))
            cdual = cp.asarray(dual)
            # The seeds of each distinct value: a seed's labels count only for its own value.
            by_val = {}
            for y, x in seeds:
                by_val.setdefault(float(img[y, x]), []).append((y, x))
            groups = [
                (v, cp.asarray([y for y, _ in s]), cp.asarray([x for _, x in s]))
                for v, s in sorted(by_val.items())
            ]

            def cu():
                m = cp.zeros(f.shape, bool)
                for v, ys, xs in groups:
                    lab, _ = cndi.label(cp.abs(f - v) <= tol, structure=st)
                    keep = lab[ys, xs]
                    keep = keep[keep != 0]
                    m |= cp.isin(lab, keep)
                return cndi.binary_fill_holes(m, structure=cdual) if absorb else m

            ms, m = med_gpu(cu, a.repeats)
            print(f"peer-cupy-label {ms:.3f} {int(m.sum())}", flush=True)
        print("done", flush=True)


if __name__ == "__main__":
    main()
