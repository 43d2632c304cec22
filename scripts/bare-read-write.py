"""The bare cost that `clusterlab label in.npy -o out.npy` is measured against (issue 20, part 4):
reading the lattice with numpy and writing a label image of its shape (uint32, allocated and
filled beforehand, not timed) with numpy, flushed to disk and renamed, as clusterlab's output is.

    python3 scripts/bare-read-write.py in.npy out.npy      # prints "bare read R write W total T ms"
"""
import os
import sys
import time

import numpy as np

src, dst = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
lattice = np.load(src)
t1 = time.perf_counter()
labels = np.ones(lattice.shape, dtype=np.uint32)
t2 = time.perf_counter()
tmp = dst + ".bare.tmp"
with open(tmp, "wb") as f:
    np.save(f, labels)
    f.flush()
    os.fsync(f.fileno())
os.rename(tmp, dst)
t3 = time.perf_counter()
read, write = 1e3 * (t1 - t0), 1e3 * (t3 - t2)
print(f"bare read {read:.1f} write {write:.1f} total {read + write:.1f} ms")
