"""GPU arrays: labeled on their device through CuPy, without a host round trip.

Any object with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba) or a CUDA DLPack capsule is
viewed as a CuPy array (no copy), made C-contiguous on the device if it is not, and its raw
device pointer handed to ``clusterlab::cuda::CudaLabeler::label_device_ptr``, ordered after
CuPy's current stream. The labels are a CuPy ``uint32`` array on the same device; only the
cluster count comes to the host.
"""

from __future__ import annotations

from . import _clusterlab


def _cupy():
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "labeling a GPU array needs CuPy (pip install cupy-cuda12x): " + str(e)) from e
    return cupy


def _as_cupy(obj):
    cupy = _cupy()
    if isinstance(obj, cupy.ndarray):
        return obj
    if hasattr(obj, "__cuda_array_interface__"):
        return cupy.asarray(obj)
    return cupy.from_dlpack(obj)


def _device_index(backend, array) -> int:
    if backend == "cpu":
        raise ValueError(
            "backend='cpu' with a GPU array: copy it to the host first (cupy.asnumpy)")
    if backend in ("auto", "cuda"):
        return array.device.id
    if isinstance(backend, str) and backend.startswith("cuda:"):
        n = int(backend[5:])
        if n != array.device.id:
            raise ValueError(f"backend={backend!r} but the array is on GPU {array.device.id}")
        return n
    raise ValueError(
        f'backend must be "auto", "cpu", "cuda" or "cuda:N", not {backend!r}')


def _sites(a, segments: bool):
    """The array as C-contiguous 1-, 2- or 4-byte sites on its device (CuPy kernels only)."""
    cupy = _cupy()
    kind, size = a.dtype.kind, a.dtype.itemsize
    if kind in "biu" and size in (1, 2, 4):
        return cupy.ascontiguousarray(a)
    if kind in "iu" and size == 8:
        if segments:
            lo, hi = int(a.min()), int(a.max())
            if lo >= -(2**31) and hi < 2**31:
                return cupy.ascontiguousarray(a.astype(cupy.int32))
            if lo >= 0 and hi < 2**32:
                return cupy.ascontiguousarray(a.astype(cupy.uint32))
            raise ValueError("segments of 64-bit integers need values that fit in 32 bits")
        return (a != 0).view(cupy.uint8)
    if kind == "f" and size in (2, 4, 8):
        if segments:
            raise ValueError("segments need integer values; the input holds floats")
        return (a != 0).view(cupy.uint8)
    raise ValueError(
        f"unsupported dtype {a.dtype}: lattices are bool, integer or float arrays")


def _output(out, shape, device):
    cupy = _cupy()
    if out is None:
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=cupy.uint32)
    if not isinstance(out, cupy.ndarray):
        out = _as_cupy(out)
    if out.dtype not in (cupy.uint32, cupy.int32) or out.shape != shape:
        raise ValueError(f"out must be a uint32/int32 device array of shape {shape}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if out.device.id != device:
        raise ValueError("out must be on the input's GPU")
    return out


def _label_one(sites, out, device, connectivity, boundary, segments) -> int:
    cupy = _cupy()
    h, w = sites.shape
    with cupy.cuda.Device(device):
        stream = cupy.cuda.get_current_stream().ptr
        return _clusterlab.label_device(
            sites.data.ptr, sites.dtype.itemsize, h, w, out.data.ptr, device, stream,
            connectivity, boundary, segments)


def label(input, connectivity, boundary, segments, backend, out):
    a = _as_cupy(input)
    if a.ndim != 2:
        raise ValueError(
            f"input must be 2-D, got {a.ndim} dimensions (shape {a.shape}); stacks go to "
            "label_batch")
    if a.size == 0:
        raise ValueError(f"input has no sites (shape {a.shape})")
    device = _device_index(backend, a)
    with _cupy().cuda.Device(device):
        sites = _sites(a, segments)
        out = _output(out, a.shape, device)
        n = _label_one(sites, out, device, connectivity, boundary, segments)
    return out, n


def label_batch(stack, connectivity, boundary, segments, backend, out):
    cupy = _cupy()
    a = _as_cupy(stack)
    if a.ndim != 3:
        raise ValueError(f"the stack must be 3-D (K, H, W), got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"the stack has no sites (shape {a.shape})")
    device = _device_index(backend, a)
    import numpy as np

    with cupy.cuda.Device(device):
        sites = _sites(a, segments)
        out = _output(out, a.shape, device)
        counts = np.empty(a.shape[0], dtype=np.int64)
        for k in range(a.shape[0]):
            counts[k] = _label_one(sites[k], out[k], device, connectivity, boundary, segments)
    return out, counts
