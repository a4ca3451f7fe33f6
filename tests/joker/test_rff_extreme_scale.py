"""Inputs on extreme scales fit as at scale 1, random features and exact kernel alike (issue 43).

At 1e-40, float32 and ``sigma="median"`` the random-feature fit raised
DivergedError blaming the kernel's positive definiteness: 1 / sigma = 1e40
overflows float32 (the frequencies were infinite) and the inputs were
subnormal. Now the inputs are divided by a power of two near sigma in
float64 before the cast (:func:`joker.features.feature_scale`), as the exact
path always did, so the fit depends on x / sigma only: the decision values
at scale s equal those at scale 1.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from joker import JokerClassifier, JokerRegressor
from joker.features import RandomFourierFeatures, feature_scale

RTOL = {"float64": 1e-6, "float32": 2e-3}


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int), np.sin(X[:, 0]) + X[:, 1]


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def test_feature_scale_is_one_in_range_and_a_power_of_two_outside():
    assert feature_scale(1.0) == feature_scale(2.0**30) == feature_scale(2.0**-30) == 1.0
    assert feature_scale(3e-40) == 2.0 ** round(np.log2(3e-40))
    assert feature_scale(1e38) == 2.0**126


@pytest.mark.parametrize("scale", [1e-40, 1e-30, 1e30, 1e38])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n_components", [256, None])
def test_extreme_scale_fits_as_scale_one(scale, kernel, dtype, n_components):
    X, yc, yr = _data()
    kw = dict(kernel=kernel, dtype=dtype, n_components=n_components, random_state=0, sigma="median")
    ref = _fit(JokerClassifier(**kw), X, yc)
    got = _fit(JokerClassifier(**kw), X * scale, yc)
    assert got.sigma_ == pytest.approx(ref.sigma_ * scale, rel=1e-12)
    f_ref, f_got = ref.decision_function(X), got.decision_function(X * scale)
    assert np.all(np.isfinite(f_got))
    np.testing.assert_allclose(f_got, f_ref, rtol=RTOL[dtype], atol=RTOL[dtype] * np.abs(f_ref).max())
    assert np.mean(got.predict(X * scale) == yc) == np.mean(ref.predict(X) == yc) > 0.9
    reg = _fit(JokerRegressor(**kw), X * scale, yr)
    np.testing.assert_allclose(reg.predict(X * scale), _fit(JokerRegressor(**kw), X, yr).predict(X),
                               rtol=RTOL[dtype], atol=RTOL[dtype] * np.abs(yr).max())


@pytest.mark.parametrize("scale", [1e-40, 1e38])
def test_feature_map_alone_and_sparse_rows(scale):
    X, _, _ = _data(50)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    for A in (X, Xs):
        ref = RandomFourierFeatures(64, sigma=2.0, random_state=1, dtype=torch_float32()).fit(A).transform(A)
        got = RandomFourierFeatures(64, sigma=2.0 * scale, random_state=1, dtype=torch_float32()).fit(A * scale)
        out = got.transform(A * scale)
        assert got.scale_ == feature_scale(2.0 * scale) != 1.0
        assert np.all(np.isfinite(np.asarray(out)))
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref), atol=1e-4)


def torch_float32():
    import torch

    return torch.float32
