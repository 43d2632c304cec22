"""Bad input raises the documented exceptions, never crashes the interpreter."""

import numpy as np
import pytest

import clusterlab


def test_three_d_to_label():
    with pytest.raises(ValueError, match="2-D"):
        clusterlab.label(np.zeros((2, 3, 4), np.uint8))


def test_one_d_to_label():
    with pytest.raises(ValueError, match="2-D"):
        clusterlab.label(np.zeros(5, np.uint8))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, object, "U3", "S2", "M8[s]"])
def test_unsupported_dtypes(dtype):
    with pytest.raises(ValueError, match="dtype"):
        clusterlab.label(np.zeros((3, 3), dtype))


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (5, 0)])
def test_zero_size(shape):
    with pytest.raises(ValueError, match="no sites"):
        clusterlab.label(np.zeros(shape, np.uint8))
    with pytest.raises(ValueError, match="no sites"):
        clusterlab.analyze(np.zeros(shape, np.uint8))


def test_read_only_out():
    out = np.zeros((4, 4), np.uint32)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        clusterlab.label(np.ones((4, 4), np.uint8), out=out)


@pytest.mark.parametrize("out", [np.zeros((4, 5), np.uint32), np.zeros((4, 4), np.float32),
                                 np.zeros((4, 4), np.uint16), np.zeros((4, 4), ">u4"),
                                 [[0] * 4] * 4])
def test_bad_out(out):
    with pytest.raises(ValueError):
        clusterlab.label(np.ones((4, 4), np.uint8), out=out)


def test_out_overlapping_input():
    a = np.ones((4, 4), np.uint32)
    with pytest.raises(ValueError, match="overlaps"):
        clusterlab.label(a, out=a)


@pytest.mark.parametrize("kwargs", [dict(connectivity=6), dict(boundary="torus"),
                                    dict(backend="tpu"), dict(backend="cuda:x")])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        clusterlab.label(np.ones((4, 4), np.uint8), **kwargs)


def test_segments_of_floats():
    with pytest.raises(ValueError, match="integer"):
        clusterlab.label(np.ones((4, 4), np.float32), segments=True)


def test_batch_needs_three_d():
    with pytest.raises(ValueError, match="3-D"):
        clusterlab.label_batch(np.zeros((4, 4), np.uint8))


def test_cuda_without_gpu_is_runtime_error():
    if clusterlab.cuda_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="CUDA"):
        clusterlab.label(np.ones((4, 4), np.uint8), backend="cuda")


def test_measure_refuses_disconnected_labels():
    with pytest.raises(ValueError):
        clusterlab.measure(np.array([[1, 0, 1]]))
