"""The inner solver: box- and radius-constrained quadratic models, against L-BFGS-B."""

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from joker.trust_region import box_tr_cg


def _problem(b, C, seed, rank=None):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((b, rank or b))
    Q = G @ G.T / b + (1e-3 if rank is None else 0.0) * np.eye(b)
    g = rng.standard_normal((b, C))
    lo = -rng.uniform(0.0, 0.5, (b, C))
    hi = rng.uniform(0.0, 0.5, (b, C))
    lo[: b // 4] = -np.inf  # some unbounded sides
    return Q, g, lo, hi


def _lbfgsb(Q, g, lo, hi):
    vals = []
    for c in range(g.shape[1]):
        res = minimize(lambda s: (g[:, c] @ s + 0.5 * s @ Q @ s, g[:, c] + Q @ s), np.zeros(len(Q)), jac=True,
                       method="L-BFGS-B", bounds=list(zip(lo[:, c], hi[:, c])),
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000})
        vals.append(res.fun)
    return sum(vals)


@pytest.mark.parametrize("as_matrix", [True, False])
@pytest.mark.parametrize("C", [1, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_box_minimum_matches_lbfgsb(as_matrix, C, seed):
    Q, g, lo, hi = _problem(60, C, seed)
    Qt = torch.from_numpy(Q)
    op = Qt if as_matrix else (lambda P: Qt @ P)
    S, pred, n_iter = box_tr_cg(torch.from_numpy(g), op, torch.from_numpy(lo), torch.from_numpy(hi),
                                max_iter=5000, rtol=1e-12, max_restarts=5000)
    S = S.numpy()
    assert S.shape == g.shape
    assert np.all(S >= lo - 1e-12) and np.all(S <= hi + 1e-12)
    m = float((g * S).sum() + 0.5 * np.einsum("ic,ij,jc->", S, Q, S))
    assert pred == pytest.approx(m, rel=1e-10, abs=1e-12)
    assert m == pytest.approx(_lbfgsb(Q, g, lo, hi), rel=1e-7)
    assert n_iter <= 5000


def test_radius_is_respected_and_step_descends():
    Q, g, lo, hi = _problem(40, 1, 3, rank=10)  # singular Q: directions of zero curvature
    for radius in (1e-3, 0.1, 1.0):
        S, pred, _ = box_tr_cg(torch.from_numpy(g), torch.from_numpy(Q), torch.from_numpy(lo), torch.from_numpy(hi),
                               radius=radius, max_iter=500, rtol=1e-10, max_restarts=500)
        assert float(torch.linalg.vector_norm(S)) <= radius * (1 + 1e-9)
        assert pred < 0.0


def test_zero_gradient_gives_zero_step():
    Q, g, lo, hi = _problem(10, 1, 4)
    S, pred, n_iter = box_tr_cg(torch.zeros((10, 1), dtype=torch.float64), torch.from_numpy(Q),
                                torch.from_numpy(lo), torch.from_numpy(hi))
    assert pred == 0.0 and n_iter == 0 and float(S.abs().sum()) == 0.0


def test_iteration_cap_is_a_hard_cap():
    Q, g, lo, hi = _problem(80, 1, 5)
    _, pred, n_iter = box_tr_cg(torch.from_numpy(g), torch.from_numpy(Q), torch.from_numpy(lo), torch.from_numpy(hi),
                                max_iter=3, rtol=0.0)
    assert n_iter == 3 and pred < 0.0 and math.isfinite(pred)
