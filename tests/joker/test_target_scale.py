"""Targets whose squares leave the float range: scaled for the solve, multiplied back after.

Tester report: JokerRegressor(dtype="float32") on y ~ 1e20 overflowed the
primal (y^2 > 3.4e38), stopped at gap 1.0 and blamed max_epochs; y ~ 1e-25
underflowed to the same. The problem is equivariant in the target scale
(docs/certificates.md, joker/target_scale.py): the fit must match the closed
form / the float64 fit of the same problem at scale 1.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import rbf_kernel

from joker import JokerRegressor
from joker.target_scale import target_scale, unscale


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]


def _fit(c, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning, no overflow warning
        return JokerRegressor(sigma=1.0, random_state=0, **kw).fit(*_scaled(c))


def _scaled(c):
    X, y = _data()
    return X, c * y


@pytest.mark.parametrize("c", [1e20, 1e-25, 1e30])
def test_float32_krr_at_extreme_target_scales_matches_closed_form(c):
    X, y = _data()
    m = _fit(c, lam=0.5, dtype="float32", tol=1e-6)
    alpha = np.linalg.solve(rbf_kernel(X, X, gamma=0.5) + 0.5 * np.eye(len(X)), y)  # (K + lam I)^-1 y
    assert m.converged_
    assert np.linalg.norm(m.alpha_ / c - alpha) / np.linalg.norm(alpha) < 1e-3
    assert np.linalg.norm(m.predict(X) / c - rbf_kernel(X, X, gamma=0.5) @ alpha) < 1e-3 * np.linalg.norm(y)
    # P of the original problem: lam/2 alpha^T K alpha + sum (y - K alpha)^2 / 2, scaling as c^2
    K = rbf_kernel(X, X, gamma=0.5)
    P = 0.25 * alpha @ K @ alpha + 0.5 * np.sum((y - K @ alpha) ** 2)
    assert m.primal_ / c ** 2 == pytest.approx(P, rel=1e-4)
    assert m.history_[-1]["primal"] == m.primal_ and m.dual_ / c ** 2 == pytest.approx(P, rel=1e-4)  # -lam J meets P
    assert math.frexp(m.target_scale_)[0] == 0.5  # a power of two: the division is exact
    assert 0.5 <= np.abs(c * y).max() / m.target_scale_ < 1.0


@pytest.mark.parametrize("loss, kw, lam", [
    ("huber", lambda c: {"delta": 0.3 * c}, lambda c: 0.5),
    ("epsilon_insensitive", lambda c: {"epsilon": 0.1 * c}, lambda c: 0.5 / c),  # lam / c: docs/certificates.md
])
@pytest.mark.parametrize("c", [1e20, 1e-25])
def test_float32_huber_svr_at_extreme_scales_match_the_float64_fit_at_scale_one(loss, kw, lam, c):
    ref = _fit(1.0, loss=loss, lam=lam(1.0), tol=1e-8, **kw(1.0))
    m = _fit(c, loss=loss, lam=lam(c), dtype="float32", tol=1e-5, **kw(c))
    assert m.converged_ and m.dual_gap_ <= 1e-5
    X, _ = _data()
    assert np.linalg.norm(m.predict(X) / c - ref.predict(X)) / np.linalg.norm(ref.predict(X)) < 1e-3
    assert m.primal_ / c ** ref_degree(loss) == pytest.approx(ref.primal_, rel=1e-4)
    assert m.dual_objective_ / c ** 2 == pytest.approx(ref.dual_objective_, rel=1e-3)


def ref_degree(loss):
    return 1 if loss == "epsilon_insensitive" else 2


def test_float64_targets_beyond_its_window_fit():
    X, y = _data()
    ref = _fit(1.0, lam=0.5, tol=1e-8)
    m = _fit(1e100, lam=0.5, tol=1e-8)  # (y - f)^2 ~ 1e200: fine; alpha^T K alpha in the certificate too
    assert m.converged_ and m.target_scale_ > 1e99
    np.testing.assert_allclose(m.alpha_ / 1e100, ref.alpha_, rtol=1e-6, atol=1e-9)
    assert m.primal_ / 1e200 == pytest.approx(ref.primal_, rel=1e-9)


def test_warm_start_and_random_features_at_scale():
    c = 1e20
    m = _fit(c, lam=0.5, dtype="float32", tol=1e-6, n_components=100, fit_intercept=True)
    ref = _fit(1.0, lam=0.5, tol=1e-8, n_components=100, fit_intercept=True)
    np.testing.assert_allclose(m.coef_ / c, ref.coef_, rtol=0, atol=1e-3 * np.abs(ref.coef_).max())
    assert m.intercept_ / c == pytest.approx(ref.intercept_, abs=1e-3)
    X, y = _scaled(c)
    warm = JokerRegressor(sigma=1.0, lam=0.5, dtype="float32", tol=1e-6, n_components=100, fit_intercept=True,
                          random_state=0).fit(X, y, alpha0=m.dual_alpha_)
    assert warm.converged_ and warm.n_epochs_ <= 1  # alpha0 is divided by the same scale as the targets


def test_targets_beyond_the_dtype_are_refused():
    X, y = _data()
    with pytest.raises(ValueError, match="float32.*dtype='float64'"):
        JokerRegressor(sigma=1.0, dtype="float32").fit(X, 1e37 * y)


def test_target_scale_window():
    f32, f64 = torch.float32, torch.float64
    assert target_scale(torch.tensor([3.0, -1e9]), f32) == 1.0  # inside [tiny^1/4, max^1/4] = [3.3e-10, 4.3e9]
    assert target_scale(torch.tensor([1e-9]), f32) == 1.0
    assert target_scale(torch.zeros(3), f32) == 1.0
    assert target_scale(torch.tensor([1e20, 5.0]), f32) == 2.0 ** 67  # 1e20 / 2^67 = 0.68
    assert target_scale(torch.tensor([-1e-25]), f32) == 2.0 ** -83  # 1e-25 / 2^-83 = 0.97
    assert target_scale(torch.tensor([1e20], dtype=f64), f64) == 1.0
    assert target_scale(torch.tensor([1e100], dtype=f64), f64) == 2.0 ** 333  # 1e100 / 2^333 = 0.57
    with pytest.raises(ValueError, match="float32"):
        target_scale(torch.tensor([1e36], dtype=f64), f32)
    with pytest.raises(ValueError, match="overflows float64"):
        target_scale(torch.tensor([1e152], dtype=f64), f64)


def test_unscale_multiplies_back_and_reports_overflow():
    T = torch.tensor([0.75, -1.5], dtype=torch.float32)
    assert unscale(T, 1.0) is T
    out = unscale(T, 2.0 ** 100)
    assert out.dtype == torch.float32 and out.tolist() == [0.75 * 2.0 ** 100, -1.5 * 2.0 ** 100]
    with pytest.raises(ValueError, match="float32 range"):
        unscale(T, 2.0 ** 128)
