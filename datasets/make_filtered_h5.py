"""Writes datasets/filtered_*.h5: the lattice of percolation_128_pc.npy as h5py writes
compressed simulation output (chunked, with HDF5's filters), so that the tests read files made by
the tool physicists use, not by clusterlab itself.

    python3 datasets/make_filtered_h5.py      # needs numpy, h5py; hdf5plugin for Blosc

Each file holds `/lattice` (uint8, 128 x 128, chunks of 32 rows).
"""
import os

import h5py
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
lattice = np.load(os.path.join(here, "percolation_128_pc.npy"))
assert lattice.dtype == np.uint8 and lattice.shape == (128, 128)

variants = {
    "gzip": dict(compression="gzip", compression_opts=4),
    "shuffle_gzip": dict(compression="gzip", compression_opts=9, shuffle=True),
    "fletcher32": dict(fletcher32=True),
    "lzf": dict(compression="lzf"),
}
try:
    import hdf5plugin

    variants["blosc_lz4"] = dict(**hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
    variants["blosc_zstd"] = dict(**hdf5plugin.Blosc(cname="zstd", clevel=3))
except ImportError:
    print("hdf5plugin not installed: no Blosc files")

for name, opts in variants.items():
    path = os.path.join(here, f"filtered_{name}.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("lattice", data=lattice, chunks=(32, 128), **opts)
    with h5py.File(path, "r") as f:
        assert (f["lattice"][...] == lattice).all()
    print(path, os.path.getsize(path), "bytes")
