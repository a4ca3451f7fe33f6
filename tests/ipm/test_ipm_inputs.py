"""Bad input to LowRankIPMClassifier gives one clear error."""

from __future__ import annotations

import numpy as np
import pytest

from joker.ipm import LowRankIPMClassifier, lowrank_svm_ipm


def _fit(X, y, **kw):
    params = dict(lam=1.0, sigma=2.0, n_components=10, random_state=0)
    params.update(kw)
    return LowRankIPMClassifier(**params).fit(X, y)


def test_one_class(data):
    X, _ = data(50)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        _fit(X, np.ones(50))


def test_three_classes(data):
    X, _ = data(60)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        _fit(X, np.arange(60) % 3)


@pytest.mark.parametrize("lam", [0.0, -1.0, float("nan"), float("inf")])
def test_lam_not_positive(data, lam):
    X, y = data(50)
    with pytest.raises(ValueError, match="lam must be > 0"):
        _fit(X, y, lam=lam)


def test_lam_not_a_number(data):
    X, y = data(50)
    with pytest.raises(TypeError, match="lam must be a number"):
        _fit(X, y, lam="1")


def test_rank_above_rows(data):
    X, y = data(50)
    with pytest.raises(ValueError, match="n_components=51 > n_samples=50"):
        _fit(X, y, n_components=51)


def test_nan_input(data):
    X, y = data(50)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _fit(X, y)


@pytest.mark.parametrize("kw, match", [(dict(factor="svd"), "factor='svd'"), (dict(kernel="poly"), "kernel='poly'"),
                                       (dict(sigma=-1.0), "sigma must be"), (dict(dtype="float16"), "dtype"),
                                       (dict(tol=0.0), "tol must be > 0"), (dict(max_iter=0), "max_iter")])
def test_bad_parameters(data, kw, match):
    X, y = data(50)
    with pytest.raises(ValueError, match=match):
        _fit(X, y, **kw)


def test_wrong_feature_count_at_predict(data):
    X, y = data(60)
    est = _fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.decision_function(X[:, :3])


def test_solver_bias_needs_both_classes():
    import torch
    U = torch.ones((5, 2), dtype=torch.float64)
    with pytest.raises(ValueError, match="both classes"):
        lowrank_svm_ipm(U, torch.ones(5, dtype=torch.float64), 1.0, bias=True)


def test_not_converged_warns(data):
    from joker import ConvergenceWarning
    X, y = data(200)
    with pytest.warns(ConvergenceWarning, match="stopped after 2 iterations"):
        est = _fit(X, y, max_iter=2)
    assert est.converged_ is False and est.dual_gap_ > 1e-8
