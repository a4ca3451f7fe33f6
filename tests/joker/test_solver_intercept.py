"""fit_intercept: a regularised bias through a constant added to the kernel (or a constant feature)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from joker import JokerClassifier, JokerRegressor


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, 5.0 + np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)  # a large mean: the intercept matters


@pytest.mark.parametrize("s", [1.0, 3.0])
def test_exact_krr_intercept_matches_closed_form(s):
    X, y = _data()
    lam = 0.5
    m = JokerRegressor(sigma=1.0, lam=lam, fit_intercept=True, intercept_scaling=s, tol=1e-10,
                       max_epochs=1000, random_state=0).fit(X, y)
    K = rbf_kernel(X, X, gamma=0.5) + s * s  # the constant s^2 added to the kernel
    a = np.linalg.solve(K + lam * np.eye(len(X)), y)
    assert m.intercept_ == pytest.approx(s * s * a.sum(), rel=1e-6)
    Xq = np.random.default_rng(1).standard_normal((50, 3))
    ref = (rbf_kernel(Xq, X, gamma=0.5) + s * s) @ a
    assert np.max(np.abs(m.predict(Xq) - ref)) < 1e-6 * np.max(np.abs(ref))


def test_rff_krr_intercept_matches_ridge_on_features_plus_constant():
    X, y = _data()
    lam, s = 0.5, 2.0
    m = JokerRegressor(sigma=1.0, lam=lam, n_components=64, fit_intercept=True, intercept_scaling=s,
                       tol=1e-10, max_epochs=2000, random_state=0).fit(X, y)
    Psi = np.column_stack([m.feature_map_.transform(X), np.full(len(X), s)])
    w = np.linalg.solve(Psi.T @ Psi + lam * np.eye(Psi.shape[1]), Psi.T @ y)
    assert m.coef_.shape == (64,)
    assert m.intercept_ == pytest.approx(s * w[-1], rel=1e-6)
    assert np.max(np.abs(m.predict(X) - Psi @ w)) < 1e-6 * np.max(np.abs(Psi @ w))


def test_intercept_helps_an_offset_target_and_default_is_off():
    X, y = _data()
    off = JokerRegressor(sigma=1.0, lam=1.0, random_state=0).fit(X, y)
    on = JokerRegressor(sigma=1.0, lam=1.0, fit_intercept=True, intercept_scaling=10.0, random_state=0).fit(X, y)
    assert off.intercept_ == 0.0
    rmse_off = np.sqrt(np.mean((off.predict(X) - y) ** 2))
    rmse_on = np.sqrt(np.mean((on.predict(X) - y) ** 2))
    assert rmse_on < 0.5 * rmse_off
    assert on.intercept_ == pytest.approx(5.0, abs=0.5)


def test_classifier_intercept_shape_and_bad_scaling():
    X, y = _data()
    labels = np.digitize(y, [4.8, 5.2])
    c = JokerClassifier(sigma=1.0, fit_intercept=True, random_state=0).fit(X, labels)
    assert np.shape(c.intercept_) == (3,)
    with pytest.raises(ValueError, match="intercept_scaling"):
        JokerClassifier(sigma=1.0, fit_intercept=True, intercept_scaling=0.0).fit(X, labels)
