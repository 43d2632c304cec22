"""clusterlab: find and measure the clusters of 2-D lattices on the CPU and NVIDIA GPUs.

Calls mirror what users of ``scipy.ndimage``, ``skimage.measure``, ``cc3d`` and ``cupyx`` know:

>>> import numpy as np, clusterlab
>>> lattice = np.array([[1, 1, 0, 0], [0, 0, 0, 1], [1, 0, 1, 1]], dtype=np.uint8)
>>> labels, n = clusterlab.label(lattice)           # scipy.ndimage.label's tuple and numbering
>>> n
3
>>> labels, n = clusterlab.label(lattice, boundary="periodic")   # a torus
>>> table = clusterlab.analyze(lattice)              # dict of columns, pandas.DataFrame(table)
>>> table.stats["largest"]
3

NumPy arrays stay NumPy arrays (labels ``uint32``, 0 = empty, clusters ``1..n`` in raster
order of their first site); CuPy arrays (and anything with ``__cuda_array_interface__`` or a
CUDA DLPack capsule) are labeled on their GPU and the labels come back as a CuPy array there.
Errors are ``ValueError`` (shapes, dtypes, arguments), ``RuntimeError`` (CUDA) and
``MemoryError`` (host or device memory), with the Rust library's message.
"""

from __future__ import annotations

import numpy as _np

from . import _clusterlab
from ._clusterlab import (
    MAX_SITES,
    __version__,
    cuda_info,
)
from ._clusterlab import label as _label_host
from ._clusterlab import label_batch as _label_batch_host

__all__ = [
    "label",
    "label_batch",
    "Labeler",
    "analyze",
    "measure",
    "ClusterTable",
    "region_from_seeds",
    "plot_labels",
    "plot_size_distribution",
    "percolation_study",
    "MonteCarlo",
    "cuda_available",
    "cuda_info",
    "MAX_SITES",
    "__version__",
]

_ndarray = _np.ndarray


def _on_device(obj) -> bool:
    """Whether ``obj`` is a GPU array (CUDA array interface or a CUDA DLPack capsule)."""
    if type(obj) is _ndarray:
        return False
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None:
        try:
            return dev()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
        except Exception:
            return False
    return False


def label(input, connectivity=4, boundary="open", segments=False, backend="auto", out=None,
          algorithm="auto"):
    """Label the clusters of a 2-D lattice.

    The same tuple and numbering as ``scipy.ndimage.label`` (with ``structure`` the 4- or
    8-neighbourhood): clusters are numbered ``1..n`` in raster order of their first site and
    empty sites are 0. Periodic boundaries join the clusters that touch across the edges.

    Parameters
    ----------
    input : array_like or GPU array, shape (H, W)
        The lattice; nonzero sites are occupied. ``bool``, ``uint8``, ``uint16``, ``uint32``,
        signed integers and floats, in any memory layout (C, Fortran, strided, negative strides).
        8-, 16- and 32-bit integer and ``bool`` arrays are read in place (no copy); floats and
        64-bit integers are first turned into an occupancy mask. CuPy arrays, objects with
        ``__cuda_array_interface__`` (PyTorch CUDA tensors, Numba device arrays) and CUDA DLPack
        capsules are labeled on their GPU.
    connectivity : {4, 8}, optional
        The neighbourhood: 4 (edges) or 8 (edges and corners). Default 4.
    boundary : {"open", "periodic", "periodic-x", "periodic-y"}, optional
        "periodic" wraps both axes (a torus; with 8-connectivity the corners too),
        "periodic-x" wraps the columns (x, the last axis), "periodic-y" the rows. Default "open".
    segments : bool, optional
        Label same-value segments: neighbours join only when they hold the same nonzero value
        (integer dtypes). Default False.
    backend : {"auto", "cpu", "cuda", "cuda:N"}, optional
        Where NumPy arrays are labeled. "auto" (default) labels host arrays on the CPU, where
        a one-shot call is fastest, and device arrays on their GPU.
    out : ndarray, optional
        A ``uint32`` or ``int32`` array of the input's shape (any strides) to write the labels
        into (a CuPy array for device inputs); no output is allocated then.
    algorithm : str, optional
        "auto" (default: the fastest), or on the CPU "strips", "hoshen-kopelman", "bfs"; on a
        GPU ``backend`` "bit-runs", "block-union-find", "ha4", "tile-merge",
        "label-equivalence". Every algorithm gives the same labels.

    Returns
    -------
    labels : ndarray of uint32 (or ``out``; a CuPy array for device inputs)
        The labels.
    n : int
        The number of clusters.

    Raises
    ------
    ValueError
        Not 2-D, no sites, an unsupported dtype (complex, object, strings), a bad argument, or an
        unusable ``out`` (wrong shape or dtype, read-only, overlapping the input).
    RuntimeError
        ``backend="cuda"`` without a usable GPU, or a CUDA failure.
    MemoryError
        The labels do not fit in host or device memory.

    Examples
    --------
    >>> import numpy as np, clusterlab
    >>> a = np.array([[1, 0, 1], [0, 0, 0], [1, 0, 1]])
    >>> clusterlab.label(a)[1], clusterlab.label(a, boundary="periodic")[1]
    (4, 1)
    """
    if type(input) is not _ndarray and _on_device(input):
        from . import _cuda

        return _cuda.label(input, connectivity, boundary, segments, backend, out)
    return _label_host(input, connectivity, boundary, segments, backend, out, algorithm)


def label_batch(stack, connectivity=4, boundary="open", segments=False, backend="auto", out=None,
                threads=None, algorithm="auto"):
    """Label every frame of a ``K × H × W`` stack.

    Frames are independent lattices; on the CPU many small frames are labeled in parallel, one
    per thread, and few large ones one after the other with every thread.

    Parameters
    ----------
    stack : array_like or GPU array, shape (K, H, W)
        The frames (dtypes as for :func:`label`).
    connectivity, boundary, segments, backend
        As for :func:`label`.
    out : ndarray, optional
        A C-contiguous ``uint32``/``int32`` array of shape (K, H, W) for the labels.
    threads : int, optional
        CPU threads (default: all, or ``RAYON_NUM_THREADS``).
    algorithm : str, optional
        As for :func:`label`.

    Returns
    -------
    labels : ndarray of uint32, shape (K, H, W)
        Each frame's labels, numbered ``1..n_k`` as :func:`label` numbers them.
    counts : ndarray of int64, shape (K,)
        Each frame's number of clusters.
    """
    if _on_device(stack):
        from . import _cuda

        return _cuda.label_batch(stack, connectivity, boundary, segments, backend, out)
    return _label_batch_host(stack, connectivity, boundary, segments, backend, out, threads,
                             algorithm)


class Labeler:
    """A labeling plan reused across the timesteps of a simulation.

    It keeps its buffers between calls: once it has seen the lattice's shape and cluster count,
    ``labeler.label(lattice, out=labels)`` allocates nothing.

    Parameters
    ----------
    connectivity : {4, 8}, optional
        As for :func:`label`.
    boundary : {"open", "periodic", "periodic-x", "periodic-y"}, optional
        As for :func:`label`.
    segments : bool, optional
        As for :func:`label`.
    backend : {"auto", "cpu", "cuda", "cuda:N"}, optional
        As for :func:`label`.
    threads : int, optional
        CPU threads (default: all, or ``RAYON_NUM_THREADS``); 1 labels on the calling thread.
    algorithm : str, optional
        As for :func:`label`.

    Examples
    --------
    >>> import numpy as np, clusterlab
    >>> labeler = clusterlab.Labeler(connectivity=8, boundary="periodic")
    >>> labels = np.empty((64, 64), np.uint32)
    >>> rng = np.random.default_rng(1)
    >>> for step in range(3):
    ...     lattice = rng.random((64, 64)) < 0.4
    ...     _, n = labeler.label(lattice, out=labels)
    """

    def __init__(self, connectivity=4, boundary="open", segments=False, backend="auto",
                 threads=None, algorithm="auto"):
        self._inner = _clusterlab.Labeler(connectivity, boundary, segments, backend, threads,
                                          algorithm)
        self._args = (connectivity, boundary, segments, backend)

    def label(self, input, out=None):
        """Label one lattice; as :func:`label`, with this plan's settings.

        Returns
        -------
        labels : ndarray of uint32 (or ``out``)
        n : int
        """
        if type(input) is not _ndarray and _on_device(input):
            from . import _cuda

            c, b, s, be = self._args
            return _cuda.label(input, c, b, s, be, out)
        return self._inner.label(input, out)

    def label_batch(self, stack, out=None):
        """Label a ``K × H × W`` stack; as :func:`label_batch`.

        Returns
        -------
        labels : ndarray of uint32, shape (K, H, W)
        counts : ndarray of int64, shape (K,)
        """
        if _on_device(stack):
            from . import _cuda

            c, b, s, be = self._args
            return _cuda.label_batch(stack, c, b, s, be, out)
        return self._inner.label_batch(stack, out)

    def size_counts(self, input):
        """Per-step cluster counts without a label image.

        Returns
        -------
        dict
            ``clusters``, ``occupied``, ``largest``, ``mean_size`` (S without the wrapping or
            spanning clusters), ``p_infinity``, ``wraps_x``, ``wraps_y``, ``wraps_both``,
            ``spans_x``, ``spans_y``, and ``sizes``/``counts`` (arrays: n_s as the number of
            clusters of each size that occurs).
        """
        if _on_device(input):
            import cupy

            input = cupy.asnumpy(input)
        return self._inner.size_counts(input)

    @property
    def backend(self) -> str:
        """Where it labels host arrays: ``"cpu"`` or ``"cuda:N"``."""
        return self._inner.backend

    @property
    def connectivity(self) -> int:
        return self._inner.connectivity

    @property
    def boundary(self) -> str:
        return self._inner.boundary

    @property
    def segments(self) -> bool:
        return self._inner.segments

    def __repr__(self) -> str:
        return repr(self._inner)


class ClusterTable(dict):
    """A cluster table: a dict of equal-length NumPy columns, row ``i`` for label ``i + 1``.

    ``pandas.DataFrame(table)`` makes a data frame of it. Columns: ``label``, ``size``,
    ``x_min``, ``x_max``, ``y_min``, ``y_max`` (inclusive; x the column, y the row),
    ``centroid_x``, ``centroid_y``, ``gyration_radius``, ``site_perimeter``,
    ``bond_perimeter``, ``hull_perimeter``, ``filled_area`` (these four with
    ``measures="all"``), ``wraps_x``, ``wraps_y`` (periodic axes, by winding), ``spans_x``,
    ``spans_y`` (open axes). On a periodic axis a cluster that does not wrap has unwrapped
    coordinates (they may lie outside ``0..W``).

    Attributes
    ----------
    stats : dict
        The lattice's statistics: ``sites``, ``occupied``, ``clusters``, ``largest``,
        ``largest_label``, ``percolating``, ``mean_size`` (S without the percolating clusters),
        ``p_infinity``, ``wraps_x``, ``wraps_y``, ``wraps_both``, ``wraps_either``,
        ``spans_x``, ``spans_y``.
    ns : tuple of ndarray
        ``(s, n_s)``: the cluster-size distribution per site, percolating clusters left out.
    labels : ndarray or None
        The labels, with ``return_labels=True``.
    """

    stats: dict
    ns: tuple
    labels: object

    def __init__(self, columns, stats, ns, labels=None):
        super().__init__(columns)
        self.stats = stats
        self.ns = ns
        self.labels = labels

    def __repr__(self) -> str:
        return f"ClusterTable({len(self.get('label', ()))} clusters, columns {list(self)})"


def analyze(input, connectivity=4, boundary="open", segments=False, measures="all",
            backend="auto", threads=None, return_labels=False):
    """Measure every cluster of a 2-D lattice.

    Parameters
    ----------
    input : array_like, shape (H, W)
        The lattice (dtypes and layouts as for :func:`label`; GPU arrays are copied to the
        host).
    connectivity, boundary, segments, backend
        As for :func:`label`.
    measures : {"all", "shape"}, optional
        "shape" skips the perimeters and the filled area (faster). Default "all".
    threads : int, optional
        CPU threads (default: all, or ``RAYON_NUM_THREADS``).
    return_labels : bool, optional
        Also keep the labels in ``table.labels``.

    Returns
    -------
    ClusterTable
        A dict of NumPy columns (as ``skimage.measure.regionprops_table`` returns) with the
        lattice's statistics in ``table.stats`` and ``n_s`` in ``table.ns``.

    Examples
    --------
    >>> import numpy as np, clusterlab
    >>> t = clusterlab.analyze(np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0]]), boundary="periodic")
    >>> bool(t["wraps_x"][0]), bool(t["wraps_y"][0])
    (True, False)
    """
    if _on_device(input):
        import cupy

        input = cupy.asnumpy(input)
    (columns, stats, ns), labels = _clusterlab.analyze(
        input, connectivity, boundary, segments, measures, backend, threads, return_labels)
    return ClusterTable(columns, stats, ns, labels)


def measure(labels, connectivity=4, boundary="open", threads=None):
    """Measure labels made elsewhere (scipy, cc3d, scikit-image, a simulation).

    Parameters
    ----------
    labels : array_like of int, shape (H, W)
        0 = empty, clusters ``1..n`` without gaps, each connected.
    connectivity, boundary
        As for :func:`label`.

    Returns
    -------
    ClusterTable
        Row ``i`` for label ``i + 1`` (as :func:`analyze`).
    """
    columns, stats, ns = _clusterlab.measure(labels, connectivity, boundary, threads)
    return ClusterTable(columns, stats, ns)


def region_from_seeds(field, seeds, tolerance, connectivity=4, boundary="open", absorb=False,
                      reference=None, backend="auto"):
    """Grow the connected region of seeds in a field (PARAFILL; scikit-image's ``flood``).

    Parameters
    ----------
    field : array_like, shape (H, W) or (H, W, C)
        ``uint8`` stays ``uint8``; anything else is compared as ``float32``.
    seeds : sequence of (row, column)
    tolerance : float or sequence of float
        Sites within ``tolerance`` of the reference in every channel join.
    connectivity, boundary
        As for :func:`label`.
    absorb : bool, optional
        Also fill the enclosed regions (holes).
    reference : float or sequence of float, optional
        One reference value (per channel) for every seed; default: each seed's own value.
    backend : {"auto", "cpu", "cuda", "cuda:N"}, optional

    Returns
    -------
    ndarray of uint8, shape (H, W)
        1 in the region, 0 elsewhere.
    """
    tol = [float(t) for t in _np.atleast_1d(tolerance)]
    ref = None if reference is None else [float(r) for r in _np.atleast_1d(reference)]
    seeds = [(int(y), int(x)) for y, x in seeds]
    return _clusterlab.region_from_seeds(field, seeds, tol, connectivity, boundary, absorb, ref,
                                         backend)


def plot_labels(labels, path=None, background="black", max_side=2048, scale=1):
    """Draw a label image (each cluster in a colour hashed from its label) as a PNG.

    Returns
    -------
    bytes or None
        The PNG's bytes when ``path`` is None; else the file is written and None returned.
    """
    if _on_device(labels):
        import cupy

        labels = cupy.asnumpy(labels)
    return _clusterlab.plot_labels(labels, None if path is None else str(path), background,
                                   max_side, scale)


def plot_size_distribution(lattices, path=None, connectivity=4, boundary="open",
                           exclude_percolating=True, title="Cluster-size distribution",
                           width=800, height=600, bins_per_decade=5, guide=187 / 91):
    """Chart n_s of one lattice or averaged over several, log-binned, on log–log axes.

    Parameters
    ----------
    lattices : array_like (H, W) or iterable of them
    guide : float or None
        The exponent τ of a guide line ``n_s ∝ s^-τ`` (default 187/91); None for none.

    Returns
    -------
    bytes or None
        The PNG's bytes when ``path`` is None.
    """
    return _clusterlab.plot_size_distribution(
        lattices, None if path is None else str(path), connectivity, boundary,
        exclude_percolating, title, width, height, bins_per_decade, guide)


def percolation_study(sizes, samples, model="site", connectivity=4, boundary="periodic", seed=1,
                      method="newman-ziff", p=None, backend="auto", threads=None):
    """Estimate the percolation threshold from L × L lattices (``clusterlab::percolation``).

    Newman–Ziff sweeps (every p at once by the binomial convolution) or fixed-p batches (GPU or
    CPU), with wrapping detected by winding; p_c from the crossings of (R_h + R_v)/2 with its
    exact L → ∞ value, extrapolated in L^(-7/4).

    Parameters
    ----------
    sizes : sequence of int
        The lattice sides L.
    samples : int
        Samples per size.
    model : {"site", "bond"}
    connectivity : {4, 8}
        For site percolation.
    boundary : {"periodic", "open", "periodic-x", "periodic-y"}
    seed : int
    method : {"newman-ziff", "fixed-p"}
    p : sequence of float, optional
        The grid of p for the curves (fixed-p: the p sampled).
    backend : {"auto", "cpu", "cuda", "cuda:N"}
    threads : int, optional

    Returns
    -------
    dict
        ``p_c`` (``value``, ``stderr``, ``samples``, or None), ``reference_pc``, ``samples``,
        ``backend`` and ``sizes``: per size a dict with the grid ``p``, the curves ``R_h``,
        ``R_v``, ``R_e``, ``R_b``, ``R_1``, ``R_hv``, ``p_infinity``, ``largest``,
        ``mean_size`` (each ``value`` and ``stderr`` arrays), their values at the reference
        p_c (``R_h_at_pc``, ...), the ``crossing`` and ``tau``.
    """
    return _clusterlab.percolation_study(list(sizes), samples, model, connectivity, boundary,
                                         seed, method, None if p is None else list(p), backend,
                                         threads)


class MonteCarlo(_clusterlab.MonteCarlo):
    """An Ising or q-state Potts chain (``clusterlab::mc``): Swendsen–Wang, Wolff, Metropolis.

    Parameters
    ----------
    size : (int, int)
        Lattice (H, W).
    temperature : float
        In units of J (Ising T_c = 2 / ln(1 + sqrt(2)) ≈ 2.269).
    model : {"ising", "potts"}
    q : int
        Potts states.
    algorithm : {"sw", "wolff", "metropolis"}
    seed : int
        The same seed gives the same spins on any number of threads (and on the GPU).
    boundary : {"periodic", "open"}
    backend : {"auto", "cpu", "cuda", "cuda:N"}
        "auto" runs Swendsen–Wang on a GPU when one is usable.
    threads : int, optional

    Methods
    -------
    run(sweeps, every=1)
        Make ``sweeps`` sweeps, measuring every ``every``-th: returns a dict of arrays
        (``energy``, ``m``, ``abs_m``, ``m2``, ``m4``, per site) and a ``summary`` (means with
        errors from the integrated autocorrelation time: energy, abs_magnetization, m2,
        specific_heat, susceptibility, binder).
    """


def cuda_available() -> bool:
    """Whether a CUDA GPU is usable here (the driver and NVRTC load, device 0 opens)."""
    try:
        cuda_info(0)
        return True
    except RuntimeError:
        return False
