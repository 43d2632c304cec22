"""clusterlab.analyze against skimage.measure.regionprops_table on the columns both have."""

import numpy as np
import pytest
from scipy import ndimage

import clusterlab

skimage_measure = pytest.importorskip("skimage.measure")

STRUCTURE = {4: ndimage.generate_binary_structure(2, 1), 8: np.ones((3, 3), bool)}


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.parametrize("shape,p", [((1, 1), 1.0), ((7, 9), 0.5), ((64, 64), 0.5927),
                                     ((50, 71), 0.8), ((33, 40), 0.3)])
def test_analyze_matches_regionprops(connectivity, shape, p):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    a = rng.random(shape) < p
    table = clusterlab.analyze(a, connectivity=connectivity, return_labels=True)
    labels, n = ndimage.label(a, structure=STRUCTURE[connectivity])
    np.testing.assert_array_equal(table.labels, labels)
    props = skimage_measure.regionprops_table(
        labels, properties=("label", "area", "bbox", "centroid", "area_filled"))
    assert len(table["label"]) == n
    np.testing.assert_array_equal(table["label"], props["label"])
    np.testing.assert_array_equal(table["size"], props["area"])
    np.testing.assert_array_equal(table["y_min"], props["bbox-0"])
    np.testing.assert_array_equal(table["x_min"], props["bbox-1"])
    np.testing.assert_array_equal(table["y_max"] + 1, props["bbox-2"])
    np.testing.assert_array_equal(table["x_max"] + 1, props["bbox-3"])
    np.testing.assert_allclose(table["centroid_y"], props["centroid-0"], rtol=1e-12)
    np.testing.assert_allclose(table["centroid_x"], props["centroid-1"], rtol=1e-12)
    if connectivity == 4:
        # scikit-image fills a region's holes with binary_fill_holes and an 8-connected
        # structure: holes are the background not 8-connected to the outside, which is the dual
        # connectivity of 4-connected clusters, as clusterlab's filled_area defines it. (For
        # 8-connected clusters the dual is 4-connectivity: the two definitions differ.)
        np.testing.assert_array_equal(table["filled_area"], props["area_filled"])


def test_pandas_dataframe_and_stats():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    a = rng.random((128, 128)) < 0.5927
    table = clusterlab.analyze(a, boundary="periodic")
    df = pd.DataFrame(table)
    assert len(df) == table.stats["clusters"]
    assert list(df.columns)[:2] == ["label", "size"]
    assert df["size"].sum() == a.sum() == table.stats["occupied"]
    assert table.stats["largest"] == df["size"].max()
    s, ns = table.ns
    assert len(s) == len(ns)


def test_shape_measures_and_segments():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, size=(40, 40)).astype(np.uint8)
    t = clusterlab.analyze(a, segments=True, measures="shape")
    assert "site_perimeter" not in t and "size" in t
    assert t["size"].sum() == np.count_nonzero(a)


def test_wrapping_strip():
    a = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0]], np.uint8)
    t = clusterlab.analyze(a, boundary="periodic")
    assert bool(t["wraps_x"][0]) and not bool(t["wraps_y"][0])
    assert t.stats["wraps_x"] and not t.stats["wraps_y"]


def test_measure_labels_from_scipy():
    rng = np.random.default_rng(3)
    a = rng.random((60, 60)) < 0.55
    labels, n = ndimage.label(a)
    t = clusterlab.measure(labels)
    ref = clusterlab.analyze(a)
    for column in ("size", "x_min", "y_max", "centroid_x", "site_perimeter"):
        np.testing.assert_array_equal(t[column], ref[column])
