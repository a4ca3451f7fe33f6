"""The median heuristic (joker.bandwidth) against a direct computation of every pairwise distance."""

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist

from joker.kernels import median_sigma


def _direct(X, n=5000, seed=0):
    """Lower median of all pairwise distances of the same subsample (scipy's pdist)."""
    X = np.asarray(X, dtype=np.float64)
    idx = np.random.default_rng(seed).choice(X.shape[0], size=min(n, X.shape[0]), replace=False)
    d = np.sort(pdist(X[idx]))
    return float(d[(d.size - 1) // 2])


@pytest.mark.parametrize("shape", [(2, 3), (3, 1), (50, 4), (1001, 7), (1500, 30)])
@pytest.mark.parametrize("max_gather", [2**20, 7])
def test_median_sigma_equals_direct_median(shape, max_gather):
    X = np.random.default_rng(sum(shape)).standard_normal(shape) * np.linspace(0.1, 3, shape[1])
    assert median_sigma(X, max_gather=max_gather) == pytest.approx(_direct(X), rel=1e-12)


def test_median_sigma_ties_and_binary_features():
    rng = np.random.default_rng(3)
    binary = rng.integers(0, 2, (800, 12)).astype(float)  # few distinct distances: many exact ties
    assert median_sigma(binary, max_gather=50) == pytest.approx(_direct(binary), rel=1e-12)
    dups = np.repeat(rng.standard_normal((10, 3)), 60, axis=0)
    assert median_sigma(dups, max_gather=50) == pytest.approx(_direct(dups), rel=1e-12)


def test_median_sigma_subsample_and_inputs():
    X = np.random.default_rng(5).standard_normal((3000, 5))
    assert median_sigma(X, n=700, seed=4) == pytest.approx(_direct(X, n=700, seed=4), rel=1e-12)
    # float32, Fortran order, negative strides and torch tensors give the same subsample and value
    ref = median_sigma(X, n=700, seed=4)
    assert median_sigma(np.asfortranarray(X), n=700, seed=4) == pytest.approx(ref, rel=1e-12)
    assert median_sigma(torch.from_numpy(X), n=700, seed=4) == pytest.approx(ref, rel=1e-12)
    assert median_sigma(X.astype(np.float32), n=700, seed=4) == pytest.approx(ref, rel=1e-6)
    flipped = X[::-1]
    assert median_sigma(flipped, n=700, seed=4) == pytest.approx(_direct(flipped, n=700, seed=4), rel=1e-12)


def test_median_sigma_far_from_origin_is_translation_invariant():
    X = np.random.default_rng(6).uniform(-1, 1, (400, 2))
    assert median_sigma(X + 1e7) == pytest.approx(median_sigma(X), rel=1e-6)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((1, 3)), "n_samples >= 2"),
    (np.zeros(5), "n_samples >= 2"),
    (np.array([[0.0, np.nan], [1.0, 2.0]]), "NaN"),
    (np.ones((10, 2)), "duplicate"),
])
def test_median_sigma_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        median_sigma(bad)


def test_median_sigma_of_huge_inputs_scales_exactly():
    # fresh-user tester: data near 1e200 overflowed the squared norms (raw torch.histc error)
    from joker.bandwidth import median_sigma as _median

    X = np.random.default_rng(0).standard_normal((300, 3))
    assert _median(X * 1e200) == pytest.approx(1e200 * _median(X), rel=1e-12)
    assert _median(X + 1e6) == pytest.approx(_median(X), rel=1e-9)
