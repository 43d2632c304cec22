"""Type stubs of the compiled module (the documented calls are in clusterlab/__init__.py)."""

from os import PathLike
from typing import Any, Literal, Optional, Sequence

import numpy as np
import numpy.typing as npt

__version__: str
MAX_SITES: int

_Boundary = Literal["open", "periodic", "periodic-x", "periodic-y"]
_Conn = Literal[4, 8]
_Table = tuple[dict[str, np.ndarray], dict[str, Any], tuple[np.ndarray, np.ndarray]]

def label(
    input: npt.ArrayLike,
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    segments: bool = False,
    backend: str = "auto",
    out: Optional[np.ndarray] = None,
    algorithm: str = "auto",
) -> tuple[np.ndarray, int]: ...
def label_batch(
    stack: npt.ArrayLike,
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    segments: bool = False,
    backend: str = "auto",
    out: Optional[np.ndarray] = None,
    threads: Optional[int] = None,
    algorithm: str = "auto",
) -> tuple[np.ndarray, np.ndarray]: ...

class Labeler:
    def __init__(
        self,
        connectivity: _Conn = 4,
        boundary: _Boundary = "open",
        segments: bool = False,
        backend: str = "auto",
        threads: Optional[int] = None,
        algorithm: str = "auto",
    ) -> None: ...
    def label(
        self, input: npt.ArrayLike, out: Optional[np.ndarray] = None
    ) -> tuple[np.ndarray, int]: ...
    def label_batch(
        self, stack: npt.ArrayLike, out: Optional[np.ndarray] = None
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def size_counts(self, input: npt.ArrayLike) -> dict[str, Any]: ...
    @property
    def backend(self) -> str: ...
    @property
    def connectivity(self) -> int: ...
    @property
    def boundary(self) -> str: ...
    @property
    def segments(self) -> bool: ...

def analyze(
    input: npt.ArrayLike,
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    segments: bool = False,
    measures: Literal["all", "shape"] = "all",
    backend: str = "auto",
    threads: Optional[int] = None,
    return_labels: bool = False,
) -> tuple[_Table, Optional[np.ndarray]]: ...
def measure(
    labels: npt.ArrayLike,
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    threads: Optional[int] = None,
) -> _Table: ...
def label_device(
    input: int,
    site_bytes: int,
    height: int,
    width: int,
    output: int,
    device: int,
    stream: int,
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    segments: bool = False,
) -> int: ...
def cuda_info(device: int = 0) -> dict[str, Any]: ...
def region_from_seeds(
    field: npt.ArrayLike,
    seeds: Sequence[tuple[int, int]],
    tolerance: Sequence[float],
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    absorb: bool = False,
    reference: Optional[Sequence[float]] = None,
    backend: str = "auto",
) -> np.ndarray: ...
def plot_labels(
    labels: npt.ArrayLike,
    path: Optional[str | PathLike[str]] = None,
    background: Literal["black", "white"] = "black",
    max_side: Optional[int] = 2048,
    scale: int = 1,
) -> Optional[bytes]: ...
def plot_size_distribution(
    lattices: Any,
    path: Optional[str | PathLike[str]] = None,
    connectivity: _Conn = 4,
    boundary: _Boundary = "open",
    exclude_percolating: bool = True,
    title: str = "Cluster-size distribution",
    width: int = 800,
    height: int = 600,
    bins_per_decade: int = 5,
    guide: Optional[float] = ...,
) -> Optional[bytes]: ...
def percolation_study(
    sizes: Sequence[int],
    samples: int,
    model: Literal["site", "bond"] = "site",
    connectivity: _Conn = 4,
    boundary: _Boundary = "periodic",
    seed: int = 1,
    method: Literal["newman-ziff", "fixed-p"] = "newman-ziff",
    p: Optional[Sequence[float]] = None,
    backend: str = "auto",
    threads: Optional[int] = None,
) -> dict[str, Any]: ...

class MonteCarlo:
    def __init__(
        self,
        size: tuple[int, int],
        temperature: float,
        model: Literal["ising", "potts"] = "ising",
        q: int = 2,
        algorithm: Literal["sw", "wolff", "metropolis"] = "sw",
        seed: int = 1,
        boundary: _Boundary = "periodic",
        backend: str = "auto",
        threads: Optional[int] = None,
    ) -> None: ...
    def run(self, sweeps: int, every: int = 1) -> dict[str, Any]: ...
    @property
    def spins(self) -> np.ndarray: ...
    @property
    def sweeps(self) -> int: ...
    @property
    def on_gpu(self) -> bool: ...
