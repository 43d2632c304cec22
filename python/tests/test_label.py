"""clusterlab.label against scipy.ndimage.label (exact), and periodic boundaries against a BFS
oracle written here."""

from collections import deque

import numpy as np
import pytest
from scipy import ndimage

import clusterlab

STRUCTURE = {4: ndimage.generate_binary_structure(2, 1), 8: np.ones((3, 3), bool)}
SHAPES = [(1, 1), (1, 17), (17, 1), (2, 2), (5, 7), (31, 33), (64, 64), (63, 65), (100, 129),
          (257, 40)]
DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64,
          np.int64, np.float16, np.float32, np.float64]


def random_lattice(rng, shape, p, dtype):
    occupied = rng.random(shape) < p
    if dtype == np.bool_:
        return occupied
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    values = rng.integers(1, 100, size=shape) if info is not None else rng.random(shape) + 0.5
    if info is not None and info.min < 0:
        values = values * rng.choice([-1, 1], size=shape)
    return np.where(occupied, values, 0).astype(dtype)


def layouts(a):
    """The same lattice in several memory layouts: C, Fortran, strided, negative strides."""
    yield "C", np.ascontiguousarray(a)
    yield "F", np.asfortranarray(a)
    big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
    big[::2, ::3] = a
    yield "strided", big[::2, ::3]
    yield "reversed", np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]
    yield "transposed", np.ascontiguousarray(a.T).T


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_label_matches_scipy(connectivity, dtype):
    rng = np.random.default_rng(hash((connectivity, np.dtype(dtype).name)) % 2**32)
    for shape in SHAPES:
        for p in (0.0, 0.3, 0.5927, 0.8, 1.0):
            a = random_lattice(rng, shape, p, dtype)
            expected, n_expected = ndimage.label(a != 0, structure=STRUCTURE[connectivity])
            for name, view in layouts(a):
                labels, n = clusterlab.label(view, connectivity=connectivity)
                assert n == n_expected, (shape, p, name)
                assert labels.dtype == np.uint32
                np.testing.assert_array_equal(labels, expected, err_msg=f"{shape} {p} {name}")


def test_negative_zero_and_nan():
    a = np.array([[-0.0, 0.0, np.nan], [1e-30, -2.0, 0.0]], np.float32)
    labels, n = clusterlab.label(a)
    expected, n_expected = ndimage.label(a != 0)
    assert n == n_expected
    np.testing.assert_array_equal(labels, expected)


def test_lists_and_tuples():
    labels, n = clusterlab.label([[1, 0, 1], [1, 0, 0]])
    assert n == 2
    np.testing.assert_array_equal(labels, [[1, 0, 2], [1, 0, 0]])


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_out(dtype, order):
    rng = np.random.default_rng(7)
    a = rng.random((37, 45)) < 0.6
    if order == "strided":
        out = np.zeros((74, 90), dtype)[::2, ::2]
    else:
        out = np.zeros(a.shape, dtype, order=order)
    labels, n = clusterlab.label(a, out=out)
    assert labels is out
    expected, n_expected = ndimage.label(a)
    assert n == n_expected
    np.testing.assert_array_equal(out, expected)


def test_segments():
    rng = np.random.default_rng(3)
    for dtype in (np.uint8, np.int16, np.uint32, np.int64):
        a = rng.integers(0, 4, size=(40, 50)).astype(dtype)
        labels, n = clusterlab.label(a, segments=True)
        # Oracle: scipy per value, renumbered in raster order of first sites.
        expected = np.zeros(a.shape, np.int64)
        offset = 0
        for v in np.unique(a[a != 0]):
            lab, k = ndimage.label(a == v)
            expected[lab > 0] = lab[lab > 0] + offset
            offset += k
        _, first = np.unique(expected.ravel(), return_index=True)
        order = np.argsort(first[1:]) if offset else []
        remap = np.zeros(offset + 1, np.int64)
        remap[np.asarray(order, int) + 1] = np.arange(1, offset + 1)
        assert n == offset
        np.testing.assert_array_equal(labels, remap[expected])


def torus_bfs(a, connectivity, wrap_y, wrap_x):
    """Independent oracle: breadth-first search, numbering clusters in raster order."""
    h, w = a.shape
    steps = [(0, 1), (1, 0), (0, -1), (-1, 0)]
    if connectivity == 8:
        steps += [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    labels = np.zeros((h, w), np.int64)
    n = 0
    for y in range(h):
        for x in range(w):
            if a[y, x] and not labels[y, x]:
                n += 1
                labels[y, x] = n
                queue = deque([(y, x)])
                while queue:
                    cy, cx = queue.popleft()
                    for dy, dx in steps:
                        ny, nx = cy + dy, cx + dx
                        if wrap_y:
                            ny %= h
                        if wrap_x:
                            nx %= w
                        if 0 <= ny < h and 0 <= nx < w and a[ny, nx] and not labels[ny, nx]:
                            labels[ny, nx] = n
                            queue.append((ny, nx))
    return labels, n


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.parametrize("boundary,wrap_y,wrap_x", [("periodic", True, True),
                                                   ("periodic-x", False, True),
                                                   ("periodic-y", True, False),
                                                   ("open", False, False)])
def test_periodic_against_bfs(connectivity, boundary, wrap_y, wrap_x):
    rng = np.random.default_rng(11)
    for shape in [(1, 1), (1, 5), (5, 1), (2, 2), (3, 7), (8, 8), (13, 21), (32, 33)]:
        for p in (0.3, 0.55, 0.75):
            a = rng.random(shape) < p
            expected, n_expected = torus_bfs(a, connectivity, wrap_y, wrap_x)
            labels, n = clusterlab.label(a, connectivity=connectivity, boundary=boundary)
            assert n == n_expected, (shape, p)
            np.testing.assert_array_equal(labels, expected)


def test_large_lattice_releases_gil_and_matches():
    rng = np.random.default_rng(5)
    a = rng.random((700, 600)) < 0.5927
    expected, n_expected = ndimage.label(a)
    labels, n = clusterlab.label(a)
    assert n == n_expected
    np.testing.assert_array_equal(labels, expected)


def test_threads_in_parallel_agree():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(9)
    lattices = [rng.random((300, 300)) < 0.6 for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda a: clusterlab.label(a, connectivity=8), lattices))
    for a, (labels, n) in zip(lattices, results):
        expected, n_expected = ndimage.label(a, structure=STRUCTURE[8])
        assert n == n_expected
        np.testing.assert_array_equal(labels, expected)


def test_labeler_reuse_and_batch():
    rng = np.random.default_rng(2)
    labeler = clusterlab.Labeler(connectivity=8, boundary="open")
    out = np.empty((50, 60), np.uint32)
    for _ in range(5):
        a = rng.random((50, 60)) < 0.45
        labels, n = labeler.label(a, out=out)
        assert labels is out
        expected, n_expected = ndimage.label(a, structure=STRUCTURE[8])
        assert n == n_expected
        np.testing.assert_array_equal(out, expected)
    assert labeler.backend == "cpu"
    assert labeler.connectivity == 8 and labeler.boundary == "open"

    for dtype in (np.bool_, np.uint16, np.float64):
        for k, h, w in [(1, 1, 1), (3, 20, 30), (40, 16, 16)]:
            stack = (rng.random((k, h, w)) < 0.5).astype(dtype)
            for conn in (4, 8):
                if conn == 8:
                    labels, counts = labeler.label_batch(stack)
                else:
                    labels, counts = clusterlab.label_batch(stack, connectivity=4)
                structure = STRUCTURE[conn]
                assert labels.shape == (k, h, w) and counts.shape == (k,)
                for i in range(k):
                    expected, n_expected = ndimage.label(stack[i] != 0, structure=structure)
                    assert counts[i] == n_expected
                    np.testing.assert_array_equal(labels[i], expected)


def test_label_batch_out_and_threads():
    rng = np.random.default_rng(4)
    stack = rng.random((6, 33, 47)) < 0.6
    out = np.zeros(stack.shape, np.int32)
    labels, counts = clusterlab.label_batch(stack[:, ::-1, :], out=out, threads=1)
    assert labels is out
    for i in range(6):
        expected, n = ndimage.label(stack[i, ::-1, :])
        assert counts[i] == n
        np.testing.assert_array_equal(out[i], expected)


def test_size_counts():
    rng = np.random.default_rng(6)
    a = rng.random((64, 64)) < 0.5927
    labeler = clusterlab.Labeler(boundary="periodic")
    c = labeler.size_counts(a)
    t = clusterlab.analyze(a, boundary="periodic")
    assert c["clusters"] == t.stats["clusters"] and c["largest"] == t.stats["largest"]
    assert c["occupied"] == int(a.sum())
    sizes, counts = np.unique(t["size"], return_counts=True)
    np.testing.assert_array_equal(c["sizes"], sizes)
    np.testing.assert_array_equal(c["counts"], counts)


@pytest.mark.parametrize("algorithm", ["strips", "hoshen-kopelman", "bfs"])
def test_cpu_algorithms_agree(algorithm):
    rng = np.random.default_rng(12)
    a = rng.random((45, 70)) < 0.6
    for boundary in ("open", "periodic"):
        ref, n_ref = clusterlab.label(a, boundary=boundary)
        labels, n = clusterlab.label(a, boundary=boundary, algorithm=algorithm)
        assert n == n_ref
        np.testing.assert_array_equal(labels, ref)
    with pytest.raises(ValueError):
        clusterlab.label(a, algorithm="quantum")
