#!/usr/bin/env python3
"""Recomputes every row of expected.csv without clusterlab and exits non-zero on any mismatch.

Open boundary: scipy.ndimage.label (cross structure for 4-connectivity, 3x3 ones for 8).
Periodic boundary (torus): two independent methods that must agree --
  1. a breadth-first search over the literal neighbour list, wrapping both axes;
  2. scipy.ndimage.label on the open lattice, then a union-find over the open clusters that
     joins every pair of joined sites that are neighbours across a wrapping edge.
Segment rows (segments=1): neighbours join only when they hold the same nonzero value; with
scipy each value is labeled on its own and the counts summed, the largest size maximised.
The BFS is also run on the open rows, as a check of the BFS itself against scipy.

Usage: python3 datasets/check_scipy.py [DATASETS_DIR]
"""

import csv
import sys
from collections import deque
from pathlib import Path

import numpy as np
from scipy import ndimage

FOUR = [(-1, 0), (1, 0), (0, -1), (0, 1)]
EIGHT = FOUR + [(-1, -1), (-1, 1), (1, -1), (1, 1)]


def structure(conn):
    return ndimage.generate_binary_structure(2, 1 if conn == 4 else 2)


def scipy_open(a, conn, segments):
    """(count, largest) on the open lattice with scipy."""
    masks = [a == v for v in np.unique(a[a != 0])] if segments else [a != 0]
    count, largest = 0, 0
    for m in masks:
        labels, n = ndimage.label(m, structure(conn))
        count += n
        if n:
            largest = max(largest, int(np.bincount(labels.ravel())[1:].max()))
    return count, largest


def joined(a, p, q, segments):
    u, v = a[p], a[q]
    return u != 0 and v != 0 and (not segments or u == v)


def bfs(a, conn, periodic, segments):
    """(count, largest) by breadth-first search, wrapping both axes when periodic."""
    h, w = a.shape
    seen = np.zeros((h, w), dtype=bool)
    offsets = FOUR if conn == 4 else EIGHT
    count, largest = 0, 0
    for y in range(h):
        for x in range(w):
            if a[y, x] == 0 or seen[y, x]:
                continue
            count += 1
            size = 0
            seen[y, x] = True
            queue = deque([(y, x)])
            while queue:
                cy, cx = queue.popleft()
                size += 1
                for dy, dx in offsets:
                    ny, nx = cy + dy, cx + dx
                    if periodic:
                        ny, nx = ny % h, nx % w
                    elif not (0 <= ny < h and 0 <= nx < w):
                        continue
                    if not seen[ny, nx] and joined(a, (cy, cx), (ny, nx), segments):
                        seen[ny, nx] = True
                        queue.append((ny, nx))
            largest = max(largest, size)
    return count, largest


def scipy_periodic(a, conn, segments):
    """(count, largest) on the torus: scipy's open clusters merged across the wrapping edges."""
    h, w = a.shape
    labels = np.zeros((h, w), dtype=np.int64)
    total = 0
    masks = [a == v for v in np.unique(a[a != 0])] if segments else [a != 0]
    for m in masks:
        lab, n = ndimage.label(m, structure(conn))
        labels[m] = lab[m] + total
        total += n
    parent = list(range(total + 1))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    offsets = FOUR if conn == 4 else EIGHT
    edge = {(y, x) for y in range(h) for x in (0, w - 1)}
    edge |= {(y, x) for y in (0, h - 1) for x in range(w)}
    for y, x in edge:
        for dy, dx in offsets:
            ny, nx = y + dy, x + dx
            if 0 <= ny < h and 0 <= nx < w:
                continue  # an open-lattice neighbour: scipy has joined it already
            ny, nx = ny % h, nx % w
            if joined(a, (y, x), (ny, nx), segments):
                ra, rb = find(labels[y, x]), find(labels[ny, nx])
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    sizes = np.bincount(labels.ravel(), minlength=total + 1)
    merged = {}
    for k in range(1, total + 1):
        r = find(k)
        merged[r] = merged.get(r, 0) + int(sizes[k])
    return len(merged), max(merged.values(), default=0)


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    failures, rows = 0, 0
    with open(root / "expected.csv", newline="") as f:
        for row in csv.DictReader(f):
            rows += 1
            a = np.load(root / row["file"])
            assert a.ndim == 2, row["file"]
            conn = int(row["connectivity"])
            segments = row["segments"] == "1"
            want = (int(row["count"]), int(row["largest"]))
            if row["boundary"] == "open":
                got = {
                    "scipy": scipy_open(a, conn, segments),
                    "bfs": bfs(a, conn, False, segments),
                }
            elif row["boundary"] == "periodic":
                got = {
                    "bfs": bfs(a, conn, True, segments),
                    "scipy+edges": scipy_periodic(a, conn, segments),
                }
            else:
                print(f"unknown boundary in {row}")
                failures += 1
                continue
            for method, value in got.items():
                if value != want:
                    failures += 1
                    print(
                        f"MISMATCH {row['file']} conn={conn} {row['boundary']} "
                        f"segments={int(segments)}: expected.csv says {want}, {method} gives {value}"
                    )
    print(f"checked {rows} rows, {failures} mismatches")
    return 1 if failures or rows == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
