#!/usr/bin/env python3
"""`clusterlab label --frames all` of a (T, H, W) stack against scipy.ndimage.label per frame.

Needs numpy, scipy and h5py (the GPU machine has them). Usage:
    python3 scripts/check-frames-scipy.py PATH/TO/clusterlab [--backend cpu|cuda]
Writes stacks in .npy and .h5 (gzip-compressed, as h5py users store them), labels them with the
CLI (4- and 8-connectivity, open boundary: scipy has no torus), and compares every frame's labels
and count with scipy's; exits 1 at the first difference.
"""
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from scipy import ndimage

exe = sys.argv[1]
backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
rng = np.random.default_rng(7)
stack = (rng.random((12, 301, 517)) < 0.5927).astype(np.uint8)
structures = {4: None, 8: np.ones((3, 3), dtype=bool)}
failures = 0
with tempfile.TemporaryDirectory() as d:
    np.save(f"{d}/stack.npy", stack)
    with h5py.File(f"{d}/stack.h5", "w") as f:
        f.create_dataset("lattice", data=stack, compression="gzip", shuffle=True, chunks=(1, 301, 517))
    for src in ("stack.npy", "stack.h5"):
        for conn, structure in structures.items():
            out = f"{d}/labels_{conn}.npy"
            subprocess.run([exe, "label", f"{d}/{src}", "--frames", "all", "--connectivity", str(conn),
                            "--backend", backend, "-o", out, "-q"], check=True)
            labels = np.load(out)
            for t in range(stack.shape[0]):
                want, n = ndimage.label(stack[t], structure=structure)
                if not np.array_equal(labels[t], want):
                    print(f"{src} {conn}-conn frame {t}: labels differ from scipy")
                    failures += 1
            print(f"{src} {conn}-conn {backend}: {stack.shape[0]} frames compared with scipy.ndimage.label")
print("all frames equal" if failures == 0 else f"{failures} frames differ")
sys.exit(1 if failures else 0)
