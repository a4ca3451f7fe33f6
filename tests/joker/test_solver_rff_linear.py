"""Inexact (random-feature) Joker is linear learning on psi(X) (joker-math.md s.5).

With the fitted feature map held fixed, ``coef_`` (theta = Psi^T alpha)
must equal the coefficients of the matching linear model on psi(X), with no
intercept and C = 1/lambda:

- KRR: ridge closed form ``(Psi^T Psi + lam I)^-1 Psi^T y``;
- L1-SVC: ``LinearSVC(loss="hinge")``;
- L2-SVC: ``LinearSVC(loss="squared_hinge")``.  LIBLINEAR's squared hinge
  has no 1/2 while joker-math.md's has one (loss = max(0, 1 - yu)^2 / 2,
  h = lam a^2/2 - y a), so the matching LIBLINEAR constant is
  C = 1/(2 lam).  The anchors' L2-SVC optimum (838.649) is the one of the
  1/2 convention, which was checked independently;
- SVR: ``LinearSVR(loss="epsilon_insensitive")``;
- KLR: ``LogisticRegression``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC, LinearSVR

from joker import JokerClassifier, JokerRegressor

M = 64
SIGMA = 2.0
LAM = 0.5
# A relative gap of 1e-8 bounds ||theta - theta*|| / ||theta*|| to about 1e-4 at worst
# (lam/2 ||theta - theta*||^2 <= P(theta) - P* <= gap |P|); measured here: <= 1e-6.
TIGHT = dict(tol=1e-8, max_epochs=3000, block_size=64, random_state=0)


def _fit_rff(est_cls, X, y, **kw):
    est = est_cls(n_components=M, sigma=SIGMA, lam=LAM, **TIGHT, **kw).fit(X, y)
    Psi = est.feature_map_.transform(X)
    assert Psi.shape == (len(X), M)
    assert est.coef_.shape == (M,)
    return est, np.asarray(Psi, dtype=np.float64)


def _liblinear(model, Psi, y):
    # LIBLINEAR's tol=1e-12 hits its rounding floor and never stops; at tol=1e-10 it converges
    # and agrees with a Clarabel primal QP of the same problem to 2e-10 (checked on these data).
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a reference that did not converge is no reference
        model.fit(Psi, y)
    return np.ravel(model.coef_)


def test_rff_krr_is_ridge_on_features(refs):
    X, y = refs.regression_data(n=300, d=5, seed=10)
    est, Psi = _fit_rff(JokerRegressor, X, y, loss="squared")
    theta = np.linalg.solve(Psi.T @ Psi + LAM * np.eye(M), Psi.T @ y)
    assert refs.rel_err(est.coef_, theta) <= 1e-4
    assert refs.rel_err(est.predict(X), Psi @ theta) <= 1e-4
    # certificates refer to the problem actually solved (kernel Psi Psi^T)
    P = 0.5 * LAM * theta @ theta + refs.primal_loss("squared", y, Psi @ theta)
    assert est.primal_ == pytest.approx(P, rel=1e-8)
    assert est.dual_gap_ <= 1e-8


def test_rff_l2svc_is_linearsvc_squared_hinge(refs):
    X, y = refs.classification_data(n=300, d=5, seed=11)
    est, Psi = _fit_rff(JokerClassifier, X, y, loss="squared_hinge")
    ref = LinearSVC(loss="squared_hinge", dual=True, fit_intercept=False, C=1.0 / (2.0 * LAM), tol=1e-10,
                    max_iter=1_000_000)
    w = _liblinear(ref, Psi, y)
    assert refs.rel_err(est.coef_, w) <= 1e-4
    P = 0.5 * LAM * w @ w + refs.primal_loss("squared_hinge", y, Psi @ w)
    assert est.primal_ == pytest.approx(P, rel=1e-7)


def test_rff_l1svc_is_linearsvc_hinge(refs):
    X, y = refs.classification_data(n=300, d=5, seed=12)
    est, Psi = _fit_rff(JokerClassifier, X, y, loss="hinge")
    ref = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0 / LAM, tol=1e-10, max_iter=1_000_000)
    w = _liblinear(ref, Psi, y)
    assert refs.rel_err(est.coef_, w) <= 1e-4
    P = 0.5 * LAM * w @ w + refs.primal_loss("hinge", y, Psi @ w)
    assert est.primal_ == pytest.approx(P, rel=1e-7)


def test_rff_svr_is_linearsvr(refs):
    X, y = refs.regression_data(n=300, d=5, seed=13, outliers=10)
    eps = 0.2
    est, Psi = _fit_rff(JokerRegressor, X, y, loss="epsilon_insensitive", epsilon=eps)
    ref = LinearSVR(loss="epsilon_insensitive", epsilon=eps, dual=True, fit_intercept=False, C=1.0 / LAM,
                    tol=1e-10, max_iter=1_000_000)
    w = _liblinear(ref, Psi, y)
    assert refs.rel_err(est.coef_, w) <= 1e-4
    P = 0.5 * LAM * w @ w + refs.primal_loss("epsilon_insensitive", y, Psi @ w, epsilon=eps)
    assert est.primal_ == pytest.approx(P, rel=1e-7)


@pytest.mark.parametrize("labels", [(-1.0, 1.0), ("no", "yes")])
def test_rff_klr_is_logistic_regression(refs, labels):
    X, ypm = refs.classification_data(n=300, d=5, seed=14)
    y = np.where(ypm > 0, labels[1], labels[0])
    est, Psi = _fit_rff(JokerClassifier, X, y, loss="logistic")
    ref = LogisticRegression(fit_intercept=False, C=1.0 / LAM, tol=1e-12, max_iter=10_000,
                             solver="newton-cholesky")
    ref.fit(Psi, y)
    w = np.ravel(ref.coef_)  # sklearn: positive side is classes_[1], like Joker's decision_function
    assert list(est.classes_) == list(ref.classes_)
    assert refs.rel_err(est.coef_, w) <= 1e-4
    assert refs.rel_err(est.decision_function(X), Psi @ w) <= 1e-4
    assert np.allclose(est.predict_proba(X), ref.predict_proba(Psi), atol=1e-4)  # |dp| <= |df| / 4
