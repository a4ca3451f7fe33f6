"""LowRankIPMClassifier in float32 with the default tol converges honestly (tol="auto").

At tol=1e-8 a float32 fit stalls at its rounding floor (gap near 1.5e-7 at
C = 1, 1e-4 and more at C = 1,000) and reports converged_=False with a
warning; tol="auto" (max(1e-8, 16 eps max(64, C))) is a target float32 reaches.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from joker.ipm import LowRankIPMClassifier

A9A = "/work/shared/data/libsvm/a9a.bz2"


@pytest.fixture(scope="module")
def a9a():
    X, y = load_svmlight_file(A9A, n_features=123)
    X = X.toarray()
    return X[:1500], y[:1500], X[1500:3000], y[1500:3000]


@pytest.mark.parametrize("lam", [1.0, 1e-2, 1e-3])
@pytest.mark.parametrize("factor", ["rff", "nystroem"])
def test_float32_default_tol_converges_and_matches_float64(a9a, lam, factor):
    X, y, Xt, yt = a9a
    kw = dict(lam=lam, n_components=100, factor=factor, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning
        f32 = LowRankIPMClassifier(dtype="float32", **kw).fit(X, y)
        f64 = LowRankIPMClassifier(**kw).fit(X, y)
    assert f32.converged_ and f64.converged_
    assert f64.tol_ == 1e-8
    assert f32.tol_ == pytest.approx(16 * np.finfo(np.float32).eps * max(64, 1 / lam))
    assert f32.dual_gap_ <= f32.tol_
    agree = (f32.predict(Xt) == f64.predict(Xt)).mean()
    assert agree >= 0.99


def test_an_explicit_tol_is_kept(a9a):
    X, y, _, _ = a9a
    m = LowRankIPMClassifier(n_components=50, dtype="float32", tol=1e-3, random_state=0).fit(X, y)
    assert m.tol_ == 1e-3 and m.converged_ and m.dual_gap_ <= 1e-3
