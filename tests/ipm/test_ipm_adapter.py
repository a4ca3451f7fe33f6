"""The ipm-lowrank adapter: its plan bounds the n x k factor by the budget; its signal is the IPM's gap."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.base import AdapterError, Budget
from baselines.ipm_lowrank import IPMLowRankAdapter, ipm_lowrank_bytes
from joker.bench.methods import get_adapter
from joker.ipm import LowRankIPMClassifier

MIB = 1 << 20


def _adapter(**options):
    return IPMLowRankAdapter(task="binary", loss="hinge", sigma=3.0, lam=1.0, seed=5, **options)


def test_memory_model():
    # 8 bytes x (2 n d + 5 n k + 30 n + 4 k^2 + k d)
    assert ipm_lowrank_bytes(1000, 10, 100, 8) == 8 * (20_000 + 500_000 + 30_000 + 40_000 + 1_000)


@pytest.mark.parametrize("budget_mib, expected_k", [(4096, 1024), (64, 128), (16, 16)])
def test_plan_takes_the_largest_rank_within_the_budget(budget_mib, expected_k):
    n, d = 10_000, 10
    plan = _adapter().plan(Budget.from_mib("b", budget_mib), n, d)
    assert plan["n_components"] == expected_k
    assert plan["est_bytes"] == ipm_lowrank_bytes(n, d, expected_k, 8) <= budget_mib * MIB
    if expected_k < 1024:  # the next size up would not fit
        assert ipm_lowrank_bytes(n, d, 2 * expected_k, 8) > budget_mib * MIB


def test_plan_caps_rank_at_rows_and_refuses_an_impossible_budget():
    assert _adapter().plan(Budget.from_mib("b", 4096), 300, 5)["n_components"] == 300
    assert _adapter(n_components=64).plan(Budget.from_mib("b", 4096), 10_000, 5)["n_components"] == 64
    with pytest.raises(AdapterError, match="cannot hold the smallest setting"):
        _adapter().plan(Budget.from_mib("b", 1), 100_000, 10)


def test_fit_matches_the_estimator_and_reports_its_gap(data):
    X, y = data(600, seed=8)
    adapter = get_adapter("ipm-lowrank", task="binary", loss="hinge", sigma=3.0, lam=0.5, seed=5,
                          n_components=40)
    adapter.plan(Budget.from_mib("b", 1024), *X.shape)
    adapter.fit(X, np.where(y > 0, "b", "a"))
    est = LowRankIPMClassifier(lam=0.5, sigma=3.0, n_components=40, fit_intercept=False, random_state=5).fit(X, y)
    np.testing.assert_allclose(adapter.decision_function(X), est.decision_function(X), rtol=1e-12, atol=1e-12)
    report = adapter.convergence()
    assert report["signal"] == IPMLowRankAdapter.signal and report["converged"] is True
    assert report["final"] == report["dual_gap"] == est.dual_gap_ <= 1e-8
    assert len(report["history"]) == est.n_iter_ + 1
    assert report["history"][-1]["gap"] == est.dual_gap_ and "met tol=1e-08" in report["reason"]  # tol="auto": 1e-8 in float64
    assert adapter.describe()["conversions"]["C"] == 2.0


def test_binary_hinge_only():
    assert not IPMLowRankAdapter.supports("regression", None)[0]
    assert not IPMLowRankAdapter.supports("multiclass", 3)[0]
    with pytest.raises(ValueError, match="supports losses"):
        IPMLowRankAdapter(task="binary", loss="squared_hinge", sigma=1.0, lam=1.0)


def test_rank_above_rows_is_capped_with_a_warning_and_recorded(data):
    X, y = data(60, seed=3)
    adapter = _adapter(n_components=512)
    assert adapter.plan(Budget.from_mib("b", 1024), *X.shape)["n_components"] == 60
    with pytest.warns(UserWarning, match="n_components=512 exceeds the 60 training rows.*rank 60 is used"):
        adapter.fit(X, y)
    conv = adapter.describe()["conversions"]
    assert conv["n_components"] == adapter.model_.n_components == 60
    assert conv["n_components_requested"] == 512
    # the cap is the estimator at k = n: the same model
    est = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=60, fit_intercept=False, random_state=5).fit(X, y)
    np.testing.assert_allclose(adapter.decision_function(X), est.decision_function(X), rtol=1e-12, atol=1e-12)


def test_rank_within_rows_fits_silently(data):
    import warnings

    X, y = data(60, seed=3)
    adapter = _adapter(n_components=32)
    adapter.plan(Budget.from_mib("b", 1024), *X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        adapter.fit(X, y)
    conv = adapter.describe()["conversions"]
    assert conv["n_components"] == 32 and conv["n_components_requested"] == 32
