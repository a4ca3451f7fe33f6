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


@pytest.mark.parametrize("as_matrix", [True, False])
@pytest.mark.parametrize("radius", [math.inf, 0.3])
def test_with_product_returns_q_times_the_step(as_matrix, radius):
    """The solver takes K_BB S from the inner solve's last product instead of a product of its own."""
    Q, g, lo, hi = _problem(40, 2, 7)
    Qt = torch.from_numpy(Q)
    op = Qt if as_matrix else (lambda P: Qt @ P)
    args = (torch.from_numpy(g), op, torch.from_numpy(lo), torch.from_numpy(hi))
    S, pred, n_iter, QS = box_tr_cg(*args, radius=radius, max_iter=30, with_product=True)
    np.testing.assert_allclose(QS.numpy(), Q @ S.numpy(), rtol=0, atol=1e-12)
    assert pred == pytest.approx(float((g * S.numpy()).sum() + 0.5 * (S.numpy() * (Q @ S.numpy())).sum()), abs=1e-12)
    S2, pred2, n2 = box_tr_cg(*args, radius=radius, max_iter=30)
    assert torch.equal(S, S2) and pred == pred2 and n_iter == n2
    # a zero gradient: the zero step, with its (zero) product
    S0, p0, _, QS0 = box_tr_cg(torch.zeros((40, 2), dtype=torch.float64), op, *args[2:], with_product=True)
    assert p0 == 0.0 and not bool(S0.any()) and not bool(QS0.any())


@pytest.mark.parametrize("dtype, atol", [(torch.float64, 1e-11), (torch.float32, 2e-4)])
def test_unbounded_steps_take_q_s_from_the_cg_products(dtype, atol):
    """No box and no radius (KRR): Q S is the sum of the CG steps' products (no product at the end),
    equal to Q @ S to rounding, and the model value and step are those of the exact-product path."""
    Q, g, _, _ = _problem(50, 1, 11)
    Qt = torch.from_numpy(Q).to(dtype)
    calls = []

    def op(P):
        calls.append(1)
        return Qt @ P

    inf = torch.full((50, 1), math.inf, dtype=dtype)
    S, pred, n_iter, QS = box_tr_cg(torch.from_numpy(g).to(dtype), op, -inf, inf, max_iter=8, with_product=True)
    assert n_iter == 8 and len(calls) == 8  # eight CG products, none for the model value
    np.testing.assert_allclose(QS.double().numpy(), Q @ S.double().numpy(), rtol=0, atol=atol)
    exact = float((g * S.double().numpy()).sum() + 0.5 * (S.double().numpy() * (Q @ S.double().numpy())).sum())
    assert pred == pytest.approx(exact, rel=1e-9 if dtype == torch.float64 else 1e-4)
