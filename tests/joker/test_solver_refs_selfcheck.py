"""The test oracle checks itself: the reference certificates of conftest.py vanish at optima
found by generic solvers (Clarabel QP, L-BFGS-B), independently of joker.

If these fail, the references are wrong, not the solver.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix
from scipy.optimize import minimize

qpsolvers = pytest.importorskip("qpsolvers")

LAM, SIGMA = 0.5, 1.5
OPTS = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)


def _qp(P, q, lb, ub):
    return qpsolvers.solve_qp(csc_matrix(P), q, lb=lb, ub=ub, solver="clarabel", **OPTS)


@pytest.mark.parametrize("loss", ["squared", "huber", "epsilon_insensitive", "hinge", "squared_hinge", "logistic"])
def test_reference_certificates_vanish_at_generic_optimum(refs, loss):
    if loss in ("squared", "huber", "epsilon_insensitive"):
        X, y = refs.regression_data(n=150, d=3, seed=40, outliers=10)
    else:
        X, y = refs.classification_data(n=150, d=3, seed=40, flip_y=0.1)
    n = len(y)
    K = refs.gaussian_kernel(X, X, SIGMA)
    kw = {"delta": 0.4} if loss == "huber" else {"epsilon": 0.15} if loss == "epsilon_insensitive" else {}
    lo, hi = refs.dual_box(loss, y, LAM, delta=kw.get("delta", 1.0))
    if loss == "epsilon_insensitive":
        z = _qp(np.block([[K, -K], [-K, K]]), np.concatenate([kw["epsilon"] - y, kw["epsilon"] + y]),
                np.zeros(2 * n), np.full(2 * n, 1.0 / LAM))
        a = z[:n] - z[n:]
    elif loss == "hinge":
        a = _qp(K, -y, lo, hi)
    elif loss == "logistic":
        # p = lam y a in (0, 1); minimise J in b = y a with L-BFGS-B
        Q = y[:, None] * K * y[None, :]

        def fun(b):
            p = np.clip(LAM * b, 1e-300, 1 - 1e-16)
            J = 0.5 * b @ Q @ b + np.sum(p * np.log(p) + (1 - p) * np.log1p(-p)) / LAM
            return J, Q @ b + np.log(p / (1 - p))

        r = minimize(fun, np.full(n, 0.5 / LAM), jac=True, method="L-BFGS-B",
                     bounds=[(1e-12 / LAM, (1 - 1e-12) / LAM)] * n, options=dict(ftol=1e-16, gtol=1e-12, maxiter=10000))
        a = y * r.x
    elif loss == "squared":
        a = np.linalg.solve(K + LAM * np.eye(n), y)
    else:
        lb = np.maximum(lo, -1e6)
        ub = np.minimum(hi, 1e6)
        a = _qp(K + LAM * np.eye(n), -y, lb, ub)
    c = refs.certificates(loss, K, y, a, LAM, **kw)
    assert abs(c.gap) <= 1e-7, c
    assert c.kkt <= 1e-5, c
    # and at a clearly non-optimal feasible point the gap is positive
    c0 = refs.certificates(loss, K, y, 0.5 * a, LAM, **kw)
    assert c0.gap > 1e-4
