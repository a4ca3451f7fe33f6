"""Issue 12: every output is certified on its own (multi-output regression, one-vs-rest)."""

from __future__ import annotations

import numpy as np
import pytest

from joker import JokerClassifier, JokerRegressor
from joker.certificates import certify
from joker.losses import SquaredLoss

import torch


def _smooth(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    return X, y / np.sqrt(np.mean(y ** 2))


def test_small_column_is_not_hidden_by_a_large_one():
    # issue 12 item 2: [1e4 y, y] left column 2 at 0 with converged_=True
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = _smooth()
    m = JokerRegressor(sigma=1.0, lam=1.0, random_state=0).fit(X, np.column_stack([1e4 * y, y]))
    K = rbf_kernel(X, X, gamma=0.5)
    ref = K @ np.linalg.solve(K + np.eye(len(X)), y)
    pred = m.predict(X)[:, 1]
    assert m.converged_
    assert np.linalg.norm(pred - ref) / np.linalg.norm(ref) < 1e-2
    gaps = m.history_[-1]["gaps"]
    assert len(gaps) == 2 and m.dual_gap_ == max(gaps) and max(gaps) <= 1e-3
    assert len(m.history_[-1]["kkts"]) == 2 and m.kkt_residual_ == max(m.history_[-1]["kkts"])


def test_worst_output_is_reported():
    # a solved column and an untouched one: the worst is 1, whatever the scales
    y = torch.tensor([[1e4, 1.0], [-2e4, 2.0]], dtype=torch.float64)
    K = torch.eye(2, dtype=torch.float64)
    alpha = torch.zeros_like(y)
    alpha[:, 0] = y[:, 0] / 2.0  # KRR with K = I, lam = 1: alpha* = y / 2
    cert = certify(SquaredLoss(), alpha, K @ alpha, y, 1.0)
    assert cert.gaps == pytest.approx([0.0, 1.0], abs=1e-12)
    assert cert.kkts == pytest.approx([0.0, 1.0], abs=1e-12)
    assert cert.gap == pytest.approx(1.0) and cert.kkt == pytest.approx(1.0)


def test_zero_primal_is_certified_optimal():
    # P = 0 happens only at theta = 0 with zero loss: theta is optimal, gap 0 by rule
    y = torch.zeros((3, 1), dtype=torch.float64)
    alpha = torch.zeros_like(y)
    cert = certify(SquaredLoss(), alpha, alpha, y, 1.0)
    assert cert.gap == 0.0 and cert.kkt == 0.0


def test_rare_class_is_certified_separately():
    rng = np.random.default_rng(0)
    n = 400
    X = rng.standard_normal((n, 2))
    labels = np.where(X[:, 0] > 0, 0, 1)
    labels[np.argsort(-X[:, 1])[:4]] = 2  # 1% of the rows
    # the CG inner solver on every sample: a path on which the rare class lags (the point of the test)
    m = JokerClassifier(sigma=1.0, lam=0.1, tol=1e-4, random_state=0,
                        solver_options={"inner": "cg", "shrinking": False}).fit(X, labels)
    assert m.converged_
    gaps = [h["gaps"] for h in m.history_]
    assert all(len(g) == 3 for g in gaps)
    assert max(gaps[-1]) <= 1e-4 and m.dual_gap_ == max(gaps[-1])
    # the summed gap met tol one epoch earlier, while the rare class did not:
    # one-vs-rest with a summed gap would have stopped with class 2 uncertified
    summed = [(h["primal"] - h["dual"]) / h["primal"] for h in m.history_]
    early = [k for k, (s, g) in enumerate(zip(summed, gaps)) if s <= 1e-4 < g[2]]
    assert early, (summed, gaps)
    k = early[0]
    assert gaps[k][2] == max(gaps[k]) and m.history_[-1]["epoch"] > m.history_[k]["epoch"]
