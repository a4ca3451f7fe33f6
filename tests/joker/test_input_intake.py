"""One input intake (joker.inputs) for the four estimators: offsets, tiny and huge scales, byte order.

Every estimator centres in float64 before any cast to float32 and frames the
exact kernel's inputs by a power of two near sigma, so a float32 fit of data
offset by 1e8, or on a scale of 1e-20 or 1e20, reaches the float64 fit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import make_moons

from joker import JokerClassifier, JokerRegressor
from joker.bandwidth import median_sigma, resolve_sigma
from joker.features import RandomFourierFeatures
from joker.ipm import LowRankIPMClassifier
from joker.ipm.factors import NystroemFactor
from joker.sodm import SODMClassifier


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(600, noise=0.2, random_state=0)
    Xt, yt = make_moons(600, noise=0.2, random_state=1)
    return X, y, Xt, yt


def _quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.mark.parametrize("factor", ["rff", "nystroem"])
def test_ipm_float32_with_a_large_offset_matches_float64(moons, factor):
    X, y, Xt, yt = moons
    kw = dict(n_components=60, factor=factor, random_state=0, sigma=0.5)
    f64 = _quiet_fit(LowRankIPMClassifier(**kw), X + 1e8, y)
    f32 = _quiet_fit(LowRankIPMClassifier(dtype="float32", **kw), X + 1e8, y)
    acc64 = (f64.predict(Xt + 1e8) == yt).mean()
    acc32 = (f32.predict(Xt + 1e8) == yt).mean()
    assert acc64 > 0.94 and abs(acc32 - acc64) <= 0.01
    d64, d32 = f64.decision_function(Xt + 1e8), f32.decision_function(Xt + 1e8)
    assert np.corrcoef(d64, d32)[0, 1] > 0.999


def test_sodm_landmarks_do_not_see_an_offset(moons):
    X, y, _, _ = moons
    kw = dict(levels=1, n_landmarks=8, n_jobs=1, lam=1.0, sigma=0.5, tol=1e-3)
    plain = SODMClassifier(**kw).fit(X, y)
    shifted = SODMClassifier(**kw).fit(X + 1e8, y)
    np.testing.assert_array_equal(shifted.landmarks_, plain.landmarks_)


def _tiny_estimators():
    return [
        ("joker exact", lambda dt: JokerClassifier(dtype=dt, random_state=0)),
        ("joker laplacian", lambda dt: JokerClassifier(kernel="laplacian", dtype=dt, random_state=0)),
        ("joker rff", lambda dt: JokerClassifier(n_components=100, dtype=dt, random_state=0)),
        ("ipm nystroem", lambda dt: LowRankIPMClassifier(n_components=60, factor="nystroem", dtype=dt,
                                                         random_state=0)),
        ("ipm rff", lambda dt: LowRankIPMClassifier(n_components=60, dtype=dt, random_state=0)),
        ("sodm", lambda dt: SODMClassifier(levels=1, n_landmarks=8, n_jobs=1, dtype=dt, tol=1e-3)),
    ]


@pytest.mark.parametrize("scale", [1e-20, 1e20])
@pytest.mark.parametrize("name, make", _tiny_estimators(), ids=[n for n, _ in _tiny_estimators()])
def test_float32_on_a_tiny_or_huge_scale_reaches_float64(moons, name, make, scale):
    X, y, Xt, yt = moons
    ref = _quiet_fit(make("float64"), X, y)
    m = _quiet_fit(make("float32"), X * scale, y)
    d = m.decision_function(Xt * scale)
    assert np.isfinite(d).all()
    assert m.sigma_ == pytest.approx(scale * ref.sigma_, rel=1e-6)
    acc, acc_ref = (m.predict(Xt * scale) == yt).mean(), (ref.predict(Xt) == yt).mean()
    assert acc_ref > 0.94 and abs(acc - acc_ref) <= 0.01


def test_float64_on_an_extreme_scale_fits_as_at_scale_one(moons):
    X, y, Xt, _ = moons
    ref = JokerRegressor(random_state=0).fit(X, y)
    for scale in (2.0 ** -660, 2.0 ** 660):  # 2e-199, 5e198: exact factors, so the same fit to the bit
        m = JokerRegressor(random_state=0).fit(X * scale, y)
        assert m.sigma_ == ref.sigma_ * scale
        np.testing.assert_array_equal(m.predict(Xt * scale), ref.predict(Xt))


def test_kernel_range_error_names_sigma_too_small(moons):
    X, y, _, _ = moons
    with pytest.raises(ValueError, match="sigma is far too small for the scale of X"):
        JokerClassifier(sigma=1.0, dtype="float32").fit(X * 1e20, y)


def test_inputs_too_large_to_centre_get_a_clear_error():
    X = np.full((20, 2), 1.7e308)
    X[::2] *= -1
    X[0, 0] = 1.0  # not all rows the same
    with pytest.raises(ValueError, match="too large"):
        JokerRegressor(sigma=1.0).fit(X, np.arange(20.0))


# ---------------------------------------------------------------- median heuristic on repeated rows

def _repeated_rows(scale):
    rng = np.random.default_rng(0)
    X = np.vstack([np.zeros((80, 2)), rng.standard_normal((20, 2))]) * scale
    return X, (np.arange(100) % 2)


def _median_of_nonzero(X):
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(len(X), 1)]
    D = np.sort(D[D > 0])
    return D[(len(D) - 1) // 2]


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_median_on_mostly_repeated_rows_is_the_median_of_distinct_pairs(scale):
    X, y = _repeated_rows(scale)
    ref = _median_of_nonzero(X)
    with pytest.warns(UserWarning, match=r"64 % of the sampled pairwise distances are 0"):
        assert median_sigma(X) == pytest.approx(ref, rel=1e-12)
    with pytest.warns(UserWarning, match="repeated rows"):
        m = JokerClassifier().fit(X, y)
    assert m.sigma_ == pytest.approx(ref, rel=1e-12)


def test_median_of_identical_rows_is_one_in_the_estimators_only():
    X = np.ones((10, 3))
    assert resolve_sigma("median", X) == 1.0
    with pytest.raises(ValueError, match="every sampled row is the same"):
        median_sigma(X)


def test_median_with_few_repeats_is_the_plain_median():
    X, _ = _repeated_rows(1.0)
    X = X[60:]  # 20 zeros and 20 distinct rows: 190 of 780 pairs repeated
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(len(X), 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert median_sigma(X) == pytest.approx(np.sort(D)[(len(D) - 1) // 2], rel=1e-12)


# ---------------------------------------------------------------- byte order

def _big_endian(A):
    return np.asarray(A).astype(np.asarray(A).dtype.newbyteorder(">"))


def test_median_sigma_on_big_endian_arrays(moons):
    X = moons[0]
    assert median_sigma(_big_endian(X)) == median_sigma(X)
    assert resolve_sigma("median", _big_endian(X)) == median_sigma(X)


def test_feature_maps_on_big_endian_arrays(moons):
    X = moons[0]
    rff = RandomFourierFeatures(20, sigma=0.5, random_state=0).fit(_big_endian(X))
    np.testing.assert_array_equal(rff.transform(_big_endian(X)), rff.transform(X))
    ny = NystroemFactor(20, sigma=0.5, random_state=0).fit(_big_endian(X))
    ny2 = NystroemFactor(20, sigma=0.5, random_state=0).fit(X)
    assert torch.equal(ny.transform(_big_endian(X)), ny2.transform(X))


@pytest.mark.parametrize("make", [lambda: JokerClassifier(random_state=0),
                                  lambda: LowRankIPMClassifier(n_components=30, random_state=0),
                                  lambda: SODMClassifier(levels=1, n_jobs=1, tol=1e-3)],
                         ids=["joker", "ipm", "sodm"])
def test_estimators_on_big_endian_arrays(moons, make):
    X, y, Xt, _ = moons
    a = _quiet_fit(make(), _big_endian(X), _big_endian(y))
    b = _quiet_fit(make(), X, y)
    np.testing.assert_array_equal(a.decision_function(_big_endian(Xt)), b.decision_function(Xt))


def test_tensor_inputs_with_big_endian_targets_and_warm_start(moons):
    X, y, Xt, _ = moons
    a = JokerRegressor(random_state=0).fit(torch.as_tensor(X), _big_endian(y))
    b = JokerRegressor(random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict(torch.as_tensor(Xt)).numpy(), b.predict(Xt))
    c = JokerRegressor(random_state=0).fit(X, y, alpha0=_big_endian(b.dual_alpha_))
    np.testing.assert_allclose(c.predict(Xt), b.predict(Xt), rtol=1e-6, atol=1e-6)
