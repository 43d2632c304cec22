"""Regions, plots, percolation studies and Monte Carlo chains from Python."""

import numpy as np
import pytest

import clusterlab

PNG = b"\x89PNG\r\n\x1a\n"


def test_region_from_seeds():
    field = np.zeros((20, 20), np.uint8)
    field[5:10, 5:10] = 100
    mask = clusterlab.region_from_seeds(field, [(6, 6)], 10)
    assert mask.dtype == np.uint8 and mask.sum() == 25
    mask = clusterlab.region_from_seeds(field.astype(np.float32), [(0, 0)], 10)
    assert mask.sum() == 400 - 25
    with pytest.raises(ValueError):
        clusterlab.region_from_seeds(field, [(30, 30)], 10)


def test_plots(tmp_path):
    rng = np.random.default_rng(1)
    a = rng.random((64, 64)) < 0.5927
    labels, _ = clusterlab.label(a)
    png = clusterlab.plot_labels(labels, scale=2)
    assert png.startswith(PNG)
    path = tmp_path / "labels.png"
    assert clusterlab.plot_labels(labels, path) is None
    assert path.read_bytes().startswith(PNG)
    png = clusterlab.plot_size_distribution([a, ~a], width=400, height=300)
    assert png.startswith(PNG)
    with pytest.raises(ValueError):
        clusterlab.plot_size_distribution(a, width=0)


def test_percolation_study():
    r = clusterlab.percolation_study([16, 32], 200, seed=3)
    assert r["samples"] == 400 and r["backend"] == "cpu"
    assert r["p_c"] is not None and abs(r["p_c"]["value"] - 0.5927) < 0.05
    size = r["sizes"][0]
    assert size["width"] == 16 and len(size["p"]) == len(size["R_h"]["value"])
    with pytest.raises(ValueError):
        clusterlab.percolation_study([16], 10, model="triangle")


def test_monte_carlo():
    chain = clusterlab.MonteCarlo((16, 16), 2.269185, seed=42, backend="cpu")
    chain.run(100)
    out = chain.run(500)
    assert len(out["energy"]) == 500
    assert -2.0 <= out["summary"]["energy"]["mean"] <= 0.0
    assert chain.sweeps == 600 and chain.spins.shape == (16, 16)
    same = clusterlab.MonteCarlo((16, 16), 2.269185, seed=42, backend="cpu", threads=1)
    same.run(600)
    np.testing.assert_array_equal(same.spins, chain.spins)
    with pytest.raises(ValueError):
        clusterlab.MonteCarlo((16, 16), 2.0, model="xy")


def test_docstrings():
    assert "scipy.ndimage.label" in clusterlab.label.__doc__
    assert "Parameters" in clusterlab.analyze.__doc__
