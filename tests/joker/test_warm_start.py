"""Warm starts (``alpha0``) of DBCD-TR and the estimators."""

import numpy as np
import pytest

from joker import JokerClassifier, JokerRegressor


def _binary(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(n) > 0.4, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("n_components", [None, 128])
def test_warm_start_at_the_optimum_converges_at_once(n_components):
    X, y = _binary()
    kw = dict(loss="odm", sigma=1.5, lam=0.5, tol=1e-10, max_epochs=500, random_state=0, n_components=n_components)
    cold = JokerClassifier(**kw).fit(X, y)
    assert cold.converged_ and cold.n_epochs_ > 1
    warm = JokerClassifier(**kw).fit(X, y, alpha0=cold.dual_alpha_)
    assert warm.converged_ and warm.n_epochs_ == 0  # the certificate of the start already meets tol
    np.testing.assert_allclose(warm.decision_function(X), cold.decision_function(X), rtol=0, atol=1e-12)


def test_warm_start_near_the_optimum_takes_fewer_epochs():
    X, y = _binary(seed=1)
    kw = dict(loss="odm", sigma=1.5, lam=0.5, tol=1e-8, max_epochs=500, random_state=0)
    cold = JokerClassifier(**kw).fit(X, y)
    rough = JokerClassifier(**{**kw, "tol": 1e-2}).fit(X, y)
    warm = JokerClassifier(**kw).fit(X, y, alpha0=rough.alpha_)
    assert warm.converged_ and warm.n_epochs_ < cold.n_epochs_
    assert np.max(np.abs(warm.decision_function(X) - cold.decision_function(X))) <= 1e-3


def test_warm_start_is_projected_onto_the_box():
    X, y = _binary(n=120)
    lam = 1.0
    # L1-SVC box: 0 <= y alpha <= 1/lam; a start far outside must be clipped, not trusted.
    m = JokerClassifier(loss="hinge", sigma=1.5, lam=lam, tol=1e-6, max_epochs=300, random_state=0)
    m.fit(X, y, alpha0=10.0 * y)
    assert np.all(y * m.alpha_ >= -1e-12) and np.all(y * m.alpha_ <= 1.0 / lam + 1e-12)
    ref = JokerClassifier(loss="hinge", sigma=1.5, lam=lam, tol=1e-6, max_epochs=300, random_state=0).fit(X, y)
    assert abs(m.primal_ - ref.primal_) <= 1e-4 * ref.primal_


def test_bad_warm_start_is_a_one_line_error():
    X, y = _binary(n=50)
    with pytest.raises(ValueError, match=r"alpha0 must have shape \(50, 1\)"):
        JokerClassifier(loss="odm", sigma=1.0).fit(X, y, alpha0=np.zeros(49))
    with pytest.raises(ValueError, match="alpha0 must be finite"):
        JokerRegressor(loss="squared", sigma=1.0).fit(X, y, alpha0=np.full(50, np.nan))
