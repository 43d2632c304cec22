"""CuPy arrays labeled on their GPU: labels equal to the CPU's, input and output stay on the
device. Skipped without CuPy or a usable GPU (run on the GPU machine: see the README)."""

import numpy as np
import pytest
from scipy import ndimage

import clusterlab

cupy = pytest.importorskip("cupy")

try:
    _gpu = cupy.cuda.runtime.getDeviceCount() > 0 and clusterlab.cuda_available()
except Exception:  # no driver
    _gpu = False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _gpu, reason="needs a CUDA GPU")]

STRUCTURE = {4: ndimage.generate_binary_structure(2, 1), 8: np.ones((3, 3), bool)}


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.parametrize("boundary", ["open", "periodic", "periodic-x", "periodic-y"])
@pytest.mark.parametrize("dtype", [cupy.bool_, cupy.uint8, cupy.int16, cupy.uint32, cupy.int64,
                                   cupy.float32])
def test_cupy_matches_cpu(connectivity, boundary, dtype):
    rng = np.random.default_rng(1)
    for shape in [(1, 1), (7, 9), (64, 64), (100, 1030), (513, 257)]:
        host = (rng.random(shape) < 0.5927).astype(dtype)
        dev = cupy.asarray(host)
        labels, n = clusterlab.label(dev, connectivity=connectivity, boundary=boundary)
        assert isinstance(labels, cupy.ndarray) and labels.dtype == cupy.uint32
        assert labels.device.id == dev.device.id
        expected, n_expected = clusterlab.label(host, connectivity=connectivity,
                                                boundary=boundary)
        assert n == n_expected
        np.testing.assert_array_equal(cupy.asnumpy(labels), expected)


def test_cupy_matches_scipy_and_layouts():
    rng = np.random.default_rng(2)
    host = rng.random((300, 200)) < 0.6
    expected, n_expected = ndimage.label(host, structure=STRUCTURE[8])
    dev = cupy.asarray(host)
    for view, ref in [(dev, expected), (cupy.asfortranarray(dev), expected),
                      (dev[::-1, ::2], ndimage.label(host[::-1, ::2], structure=STRUCTURE[8])[0])]:
        labels, n = clusterlab.label(view, connectivity=8)
        np.testing.assert_array_equal(cupy.asnumpy(labels), ref)


def test_no_host_round_trip_and_out_pointer():
    """The labels are written into the caller's device array; no host array appears."""
    rng = np.random.default_rng(3)
    dev = cupy.asarray(rng.random((1024, 1024)) < 0.5927)
    out = cupy.empty((1024, 1024), cupy.uint32)
    ptr = out.data.ptr
    clusterlab.label(dev, out=out)  # warm-up: kernels compiled, scratch allocated
    pool = cupy.get_default_memory_pool()
    used = pool.used_bytes()
    pinned = cupy.get_default_pinned_memory_pool().n_free_blocks()
    labels, n = clusterlab.label(dev, out=out)
    assert labels is out and labels.data.ptr == ptr
    assert pool.used_bytes() == used  # nothing new on CuPy's pool: no copy of input or labels
    assert cupy.get_default_pinned_memory_pool().n_free_blocks() == pinned
    expected, n_expected = clusterlab.label(cupy.asnumpy(dev))
    assert n == n_expected
    np.testing.assert_array_equal(cupy.asnumpy(labels), expected)


def test_non_default_stream():
    rng = np.random.default_rng(4)
    host = rng.random((2048, 2048)) < 0.5927
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        dev = cupy.asarray(host)
        dev = ~(~dev)  # queued on the stream before the labeling
        labels, n = clusterlab.label(dev)
        total = int(labels.max())
    assert total == n == clusterlab.label(host)[1]


def test_batch_on_device():
    rng = np.random.default_rng(5)
    host = rng.random((5, 64, 96)) < 0.55
    labels, counts = clusterlab.label_batch(cupy.asarray(host), boundary="periodic")
    assert isinstance(labels, cupy.ndarray)
    ref, ref_counts = clusterlab.label_batch(host, boundary="periodic")
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_array_equal(cupy.asnumpy(labels), ref)


def test_host_array_on_cuda_backend():
    rng = np.random.default_rng(6)
    host = rng.random((200, 300)) < 0.6
    labels, n = clusterlab.label(host, backend="cuda")
    expected, n_expected = ndimage.label(host)
    assert isinstance(labels, np.ndarray) and n == n_expected
    np.testing.assert_array_equal(labels, expected)
    lab = clusterlab.Labeler(backend="cuda")
    assert lab.backend.startswith("cuda")


def test_device_errors():
    with pytest.raises(ValueError, match="2-D"):
        clusterlab.label(cupy.zeros((2, 3, 4), cupy.uint8))
    with pytest.raises(ValueError, match="no sites"):
        clusterlab.label(cupy.zeros((0, 4), cupy.uint8))
    with pytest.raises(ValueError, match="dtype"):
        clusterlab.label(cupy.zeros((4, 4), cupy.complex64))
    with pytest.raises(ValueError):
        clusterlab.label(cupy.zeros((4, 4), cupy.uint8), backend="cpu")


def test_torch_tensor_if_available():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA torch")
    t = torch.rand(128, 128, device="cuda") < 0.6
    labels, n = clusterlab.label(t)
    assert n == clusterlab.label(t.cpu().numpy())[1]
