#!/usr/bin/env python3
"""Markdown tables from the GPU benchmark's JSON (benches/gpu_vs_peers.rs), for BENCHMARKS.md.

    python3 scripts/gpu-table.py bench-out/gpu.json

(scripts/benchmarks-md.py calls `table` to regenerate BENCHMARKS.md.)

Prints the main table (every lattice but the 2048² grid: raw and canonical medians of every
algorithm, cupyx and OpenCV in the same run, the ratio to cupyx of the fastest canonical labeling
and the fraction of the memory floor of the fastest labeling) and the grid (fastest canonical
labeling / cupyx per density and granularity).
"""

import json
import sys


def main():
    table(sys.argv[1])


def table(path):
    """Prints the tables of the GPU benchmark's JSON at `path`."""
    r = json.load(open(path))
    v = r.get("peer_versions", {})
    print(f"Device: {r['device']}; {r['reps']} timed runs after 3 warm-ups, medians in ms; "
          f"CuPy {v.get('cupy')}, OpenCV {v.get('opencv')} on {next((c['peers'].get('opencv_threads') for c in r['cases'] if c['peers']), '?')} threads.\n")
    algs = []
    for c in r["cases"]:
        for o in c["ours"]:
            if o["algorithm"] not in algs:
                algs.append(o["algorithm"])
    head = ["lattice", "conn"] + [f"{a} raw / canon" for a in algs] + ["cupyx", "OpenCV", "cupyx / fastest canon", "floor (fastest)"]
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |")
    grid = {}
    for c in r["cases"]:
        ours = {(o["algorithm"], o["numbering"]): o["median_ms"] for o in c["ours"]}
        canon = [v for (a, n), v in ours.items() if n == "Canonical"]
        best_canon = min(canon) if canon else float("nan")
        best = min(ours.values()) if ours else float("nan")
        cupyx = c["peers"].get("cupyx_ms") if c["peers"] else None
        if c["group"] == "grid":
            name = c["file"]  # grid_dXX_gYY.npy
            d = int(name[6:8]) / 10
            g = int(name[10:12])
            grid[(d, g)] = (best_canon, cupyx)
            continue
        cells = [c["file"].removesuffix(".npy"), str(c["conn"])]
        for a in algs:
            raw, can = ours.get((a, "Raw")), ours.get((a, "Canonical"))
            f = lambda x: "n/a" if x is None else f"{x:.3f}"
            cells.append(f"{f(raw)} / {f(can)}")
        opencv = c["peers"].get("opencv_ms") if c["peers"] else None
        cells += [f"{cupyx:.3f}" if cupyx else "", f"{opencv:.2f}" if opencv else "",
                  f"{cupyx / best_canon:.2f}×" if cupyx else "",
                  f"{100 * c['floor_ms'] / best:.0f}%"]
        print("| " + " | ".join(cells) + " |")
        if c.get("host_to_host_ms"):
            print(f"| {cells[0]} host-to-host | {c['conn']} | Auto canonical {c['host_to_host_ms']:.1f} |"
                  + " |" * (len(algs) - 1) + f" {c['peers'].get('cupyx_host_ms', float('nan')):.1f} | | | |")
    if grid:
        ds = sorted({d for d, _ in grid})
        gs = sorted({g for _, g in grid})
        print("\nGrid, 2048², 4-connectivity: fastest canonical labeling in ms (cupyx / ours)\n")
        print("| g \\ d | " + " | ".join(f"{d:.1f}" for d in ds) + " |")
        print("| --- | " + " | ".join("---:" for _ in ds) + " |")
        for g in gs:
            row = []
            for d in ds:
                ms, cx = grid.get((d, g), (float("nan"), None))
                row.append(f"{ms:.3f} ({cx / ms:.1f}×)" if cx else f"{ms:.3f}")
            print(f"| {g} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
