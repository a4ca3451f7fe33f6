"""The D + V V^T solves of the low-rank IPM against a dense solve."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from joker.ipm.newton import LowRankNewtonSolver


def _problem(n=300, k=12, spread=0.0, seed=0):
    rng = np.random.default_rng(seed)
    V = torch.from_numpy(rng.standard_normal((n, k)) / np.sqrt(k))
    d = torch.from_numpy(10.0 ** rng.uniform(-spread, spread, n))
    g = torch.from_numpy(rng.standard_normal((n, 3)))
    H = torch.diag(d) + V @ V.T
    return V, d, g, H


def _backward_error(H, x, g):
    return float(torch.linalg.norm(g - H @ x) / (torch.linalg.norm(g) + torch.linalg.norm(H) * torch.linalg.norm(x)))


# spread 6: D in [1e-6, 1e6], cond(H) ~ 1e12, so the dense reference itself is good to ~1e-4 only:
# the forward bound is loose there and the backward error is the sharp check.
@pytest.mark.parametrize("spread, forward", [(0.0, 1e-12), (6.0, 1e-8)])
def test_woodbury_solve_matches_dense(spread, forward):
    V, d, g, H = _problem(spread=spread)
    x_ref = torch.linalg.solve(H, g)
    x = LowRankNewtonSolver(V, d).solve(g)
    assert torch.linalg.norm(x - x_ref) / torch.linalg.norm(x_ref) <= forward
    assert _backward_error(H, x, g) <= 1e-15
    x1 = LowRankNewtonSolver(V, d).solve(g[:, 0])
    assert x1.shape == (300,)
    assert torch.linalg.norm(x1 - x_ref[:, 0]) / torch.linalg.norm(x_ref[:, 0]) <= forward


def test_ill_conditioned_end_game_uses_fallback_and_stays_accurate():
    # The IPM's end game: a few free rows with D ~ 1e-14, all others ~ 1e+10.
    # cond(H) ~ 1e24, so the reference is a known solution, not a dense solve.
    V, _, x_ref, _ = _problem(n=400, k=10, seed=1)
    d = torch.full((400,), 1e10, dtype=torch.float64)
    d[:8] = 1e-14
    H = torch.diag(d) + V @ V.T
    g = d[:, None] * x_ref + V @ (V.T @ x_ref)
    solver = LowRankNewtonSolver(V, d, refine_tol=1e-14)
    x = solver.solve(g)
    assert _backward_error(H, x, g) <= 1e-14
    assert torch.linalg.norm(x - x_ref) / torch.linalg.norm(x_ref) <= 1e-6
    assert solver.used_fallback is True


def test_fallback_alone_matches_dense():
    # the regime it is built for: fewer free rows (D tiny) than k (an SVM optimum on a rank-k
    # factor has at most about k free support vectors), bound rows with D large
    V, _, x_ref, _ = _problem(seed=2)
    rng = np.random.default_rng(3)
    d = torch.from_numpy(10.0 ** rng.uniform(2, 10, 300))
    d[rng.choice(300, 8, replace=False)] = torch.from_numpy(10.0 ** rng.uniform(-12, -6, 8))
    g = d[:, None] * x_ref + V @ (V.T @ x_ref)
    solver = LowRankNewtonSolver(V, d, max_free=50)
    x = solver._partitioned(g)
    assert torch.linalg.norm(x - x_ref) / torch.linalg.norm(x_ref) <= 1e-8


def test_bad_diagonal_rejected():
    V, d, _, _ = _problem()
    d[3] = 0.0
    with pytest.raises(ValueError, match="positive and finite"):
        LowRankNewtonSolver(V, d)
    with pytest.raises(ValueError, match=r"V must be \(n, k\)"):
        LowRankNewtonSolver(V, d[:10])


def test_gram_is_the_symmetric_product():
    from joker.ipm.newton import gram

    W = torch.from_numpy(np.random.default_rng(4).standard_normal((500, 7)))
    G = gram(W)
    torch.testing.assert_close(G, W.T @ W, rtol=1e-13, atol=1e-12)
    assert torch.equal(G, G.T)
    G32 = gram(W.float())
    assert G32.dtype == torch.float32
    torch.testing.assert_close(G32, (W.T @ W).float(), rtol=1e-5, atol=1e-4)
