"""LowRankIPMClassifier against a generic QP solver (Clarabel through qpsolvers) on the same factor,
and its certificate recomputed from the returned solution."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.sparse import csc_matrix

from joker.ipm import LowRankIPMClassifier

qpsolvers = pytest.importorskip("qpsolvers")
pytest.importorskip("clarabel")

CLARABEL = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, tol_ktratio=1e-9, max_iter=500)


def _clarabel_dual(U, y, lam, bias):
    """min 1/2 a^T Q a - e^T a, 0 <= a <= 1/lam, [y^T a = 0]; Q = diag(y) U U^T diag(y). Returns the objective."""
    V = U * y[:, None]
    P = V @ V.T
    n = len(y)
    eq = dict(A=csc_matrix(y[None, :]), b=np.zeros(1)) if bias else {}
    a = qpsolvers.solve_qp(csc_matrix(P), -np.ones(n), lb=np.zeros(n), ub=np.full(n, 1.0 / lam),
                           solver="clarabel", **eq, **CLARABEL)
    assert a is not None, "reference QP failed"
    return float(0.5 * a @ P @ a - a.sum())


def _factor(est, X):
    return est.feature_map_.transform(torch.as_tensor(X)).numpy()


@pytest.mark.parametrize("factor", ["rff", "nystroem"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("lam", [1.0, 0.1])
def test_objective_equals_clarabel(data, factor, bias, lam):
    X, y = data(700, seed=1, imbalance=0.4)
    est = LowRankIPMClassifier(lam=lam, sigma=3.0, n_components=40, factor=factor, fit_intercept=bias,
                               random_state=0).fit(X, y)
    assert est.converged_ and est.dual_gap_ <= 1e-8
    U = _factor(est, X)
    V = U * y[:, None]
    a = est.alpha_
    ours = 0.5 * np.sum((V.T @ a) ** 2) - a.sum()
    ref = _clarabel_dual(U, y, lam, bias)
    assert abs(ours - ref) <= 1e-8 * abs(ref)


@pytest.mark.parametrize("bias", [False, True])
def test_certificate_recomputed_from_solution(data, bias):
    X, y = data(600, seed=2, imbalance=0.4)
    lam = 0.5
    est = LowRankIPMClassifier(lam=lam, sigma=2.5, n_components=30, fit_intercept=bias, random_state=3).fit(X, y)
    C = 1.0 / lam
    a = est.alpha_
    U = _factor(est, X)
    w = U.T @ (a * y)
    np.testing.assert_allclose(est.coef_, w, rtol=1e-12, atol=1e-12)
    assert np.all(a > 0) and np.all(a < C)  # an interior iterate
    f = est.decision_function(X)
    np.testing.assert_allclose(f, U @ w + est.intercept_, rtol=1e-10, atol=1e-10)
    if bias:
        assert abs(y @ a) <= 1e-8 * a.sum()
    else:
        assert est.intercept_ == 0.0
    primal = 0.5 * lam * w @ w + np.maximum(0.0, 1.0 - y * f).sum()
    dual = lam * (a.sum() - 0.5 * w @ w)
    gap = (primal - dual) / max(1.0, abs(primal))
    assert est.primal_ == pytest.approx(primal, rel=1e-12)
    assert est.dual_ == pytest.approx(dual, rel=1e-12)
    assert est.dual_gap_ == pytest.approx(gap, rel=1e-6, abs=1e-14)
    assert 0.0 <= gap <= 1e-8
    h = est.history_
    assert [r["iteration"] for r in h] == list(range(est.n_iter_ + 1))
    assert h[-1]["gap"] == est.dual_gap_ and h[0]["gap"] > 1e-2


def test_predict_uses_classes_and_sign(data):
    X, y = data(400, seed=4)
    labels = np.where(y > 0, "pos", "neg")
    est = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=30, random_state=0).fit(X, labels)
    assert list(est.classes_) == ["neg", "pos"]
    f = est.decision_function(X[:50])
    assert list(est.predict(X[:50])) == list(np.where(f > 0, "pos", "neg"))
    numeric = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=30, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X), numeric.decision_function(X))


def test_float32_and_tensor_input(data):
    X, y = data(400, seed=5)
    e64 = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=30, random_state=0).fit(X, y)
    e32 = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=30, random_state=0, dtype="float32",
                               tol=1e-4).fit(torch.as_tensor(X), torch.as_tensor(y))
    assert e32.converged_
    assert np.abs(e32.decision_function(X) - e64.decision_function(X)).max() <= 1e-2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_equals_cpu(data):
    X, y = data(1000, seed=6)
    cpu = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=50, random_state=0).fit(X, y)
    gpu = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=50, random_state=0, device="cuda").fit(X, y)
    assert gpu.converged_
    assert np.abs(gpu.decision_function(X) - cpu.decision_function(X)).max() <= 1e-6


@pytest.mark.parametrize("bias", [False, True])
def test_end_game_fallback_still_equals_clarabel(data, bias):
    # C = 1000 on a rank-10 factor: the Newton diagonal spans > 20 orders of magnitude at the end and
    # Woodbury plus refinement misses its backward-error target, so the partitioned solve takes over.
    X, y = data(1000, seed=3, imbalance=0.8)
    lam = 1e-3
    est = LowRankIPMClassifier(lam=lam, sigma=1.5, n_components=10, fit_intercept=bias, random_state=1).fit(X, y)
    assert est.converged_ and est.used_fallback_
    U = _factor(est, X)
    a = est.alpha_
    ours = 0.5 * np.sum(((U * y[:, None]).T @ a) ** 2) - a.sum()
    ref = _clarabel_dual(U, y, lam, bias)
    assert abs(ours - ref) <= 1e-8 * abs(ref)


def test_float32_below_its_rounding_floor_stops_early_not_converged(data):
    from joker import ConvergenceWarning

    X, y = data(1000, seed=3)
    with pytest.warns(ConvergenceWarning, match="stopped after"):
        est = LowRankIPMClassifier(lam=1.0, sigma=1.5, n_components=100, dtype="float32", tol=1e-8,
                                   random_state=1).fit(X, y)
    assert not est.converged_ and est.n_iter_ < 40  # stalled, not the 200-iteration cap
    assert np.all(np.isfinite(est.coef_)) and est.dual_gap_ <= 1e-6
