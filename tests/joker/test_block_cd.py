"""The coordinate-descent block solver (joker.block_cd) and shrinking (issue 13).

References: a QP solver on the same box QP; the CG solver of the same solve
(inner="cg", no shrinking) for the whole fit; exact counts of the rows
shrinking leaves out.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from joker import JokerClassifier, JokerRegressor, block_cd
from joker.losses import make_loss
from joker.operators import ExactKernelOperator
from joker.solver import SolverOptions, dbcd_tr

pytestmark = pytest.mark.skipif(not block_cd.available("cpu"), reason="numba is not installed")


def _box_qp(b, seed, bounded=True):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, 3))
    Q = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2.0) + 0.01 * np.eye(b)
    g = rng.standard_normal(b)
    lo = -rng.uniform(0, 0.5, b) if bounded else np.full(b, -np.inf)
    hi = rng.uniform(0, 0.5, b) if bounded else np.full(b, np.inf)
    return Q, g, lo, hi


def _t(v):
    return torch.from_numpy(np.asarray(v, dtype=np.float64)).reshape(-1, 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cd_matches_a_qp_solver_on_a_box_qp(seed):
    qpsolvers = pytest.importorskip("qpsolvers")
    Q, g, lo, hi = _box_qp(60, seed)
    from scipy.sparse import csc_matrix

    ref = qpsolvers.solve_qp(csc_matrix(Q), g, lb=lo, ub=hi, solver="clarabel", tol_gap_abs=1e-12, tol_gap_rel=1e-12,
                             tol_feas=1e-12)
    S, pred, sweeps = block_cd.box_qp_cd(_t(g), torch.from_numpy(Q), _t(lo), _t(hi), max_sweeps=5000, rtol=1e-12)
    s = S.numpy().ravel()
    assert np.all(s >= lo) and np.all(s <= hi)  # feasible, exactly
    assert np.sum((s <= lo) | (s >= hi)) >= 5  # the box is active: the test exercises the bounds
    assert pred == pytest.approx(g @ s + 0.5 * s @ Q @ s, rel=1e-10)  # the maintained Qs is exact
    m_ref = g @ ref + 0.5 * ref @ Q @ ref
    assert pred <= m_ref + 1e-9 * abs(m_ref)
    assert np.max(np.abs(s - ref)) < 1e-5
    assert 1 < sweeps < 5000


def test_cd_unbounded_is_the_newton_step():
    Q, g, lo, hi = _box_qp(40, 3, bounded=False)
    S, pred, _ = block_cd.box_qp_cd(_t(g), torch.from_numpy(Q), _t(lo), _t(hi), max_sweeps=100000, rtol=1e-13)
    np.testing.assert_allclose(S.numpy().ravel(), -np.linalg.solve(Q, g), rtol=1e-6, atol=1e-9)


def test_cd_stops_on_rtol_and_on_the_sweep_cap():
    Q, g, lo, hi = _box_qp(50, 4, bounded=False)
    _, p1, n1 = block_cd.box_qp_cd(_t(g), torch.from_numpy(Q), _t(lo), _t(hi), max_sweeps=3, rtol=1e-12)
    _, p2, n2 = block_cd.box_qp_cd(_t(g), torch.from_numpy(Q), _t(lo), _t(hi), max_sweeps=10000, rtol=1e-3)
    assert n1 == 3 and p1 < 0
    assert 3 < n2 < 10000 and p2 < p1  # more sweeps, lower model value


def test_cd_zero_gradient_or_blocked_step_returns_zero():
    Q, g, lo, hi = _box_qp(10, 5)
    S, pred, _ = block_cd.box_qp_cd(_t(np.zeros(10)), torch.from_numpy(Q), _t(lo), _t(hi))
    assert pred == 0.0 and not S.any()
    # every variable at a bound with the gradient pointing out of the box: nothing can move
    S, pred, n = block_cd.box_qp_cd(_t(np.abs(g)), torch.from_numpy(Q), _t(np.zeros(10)), _t(hi))
    assert pred == 0.0 and not S.any() and n == 1


def _hinge_problem(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return torch.from_numpy(X), torch.from_numpy(y).reshape(-1, 1)


@pytest.mark.parametrize("loss_name", ["hinge", "squared_hinge", "epsilon_insensitive"])
def test_cd_and_shrinking_reach_the_cg_optimum(loss_name):
    X, Y = _hinge_problem()
    loss = make_loss(loss_name, epsilon=0.1) if loss_name == "epsilon_insensitive" else make_loss(loss_name)
    tol = 1e-7 if loss.kinked else 1e-9  # SVR's float64 gap floor is near 1e-9 (docs/certificates.md)
    out = {}
    for name, kw in {"cd+shrinking": {}, "cg": {"inner": "cg", "shrinking": False}}.items():
        op = ExactKernelOperator(X, "gaussian", 1.0, 1)
        out[name] = dbcd_tr(op, loss, Y, 0.1, SolverOptions(block_size=64, tol=tol, max_epochs=3000, **kw), seed=0)
    a, b = out["cd+shrinking"], out["cg"]
    assert a.converged and b.converged
    J_a, J_b = a.certificate.dual_objective, b.certificate.dual_objective
    assert J_a == pytest.approx(J_b, rel=10 * tol)
    if loss_name != "squared_hinge":  # box losses: variables held at a bound were left out of epochs
        assert a.stats["active_rows"] < a.n_epochs * 300
    else:  # squared hinge: box [0, inf), rows held at 0 are left out too
        assert a.stats["active_rows"] <= a.n_epochs * 300


def test_shrinking_never_leaves_out_rows_of_an_unbounded_loss():
    # squared loss: no bound, no kink; every row is in every epoch (scale invariance relies on it)
    rng = np.random.default_rng(1)
    X = torch.from_numpy(rng.standard_normal((200, 3)))
    Y = torch.from_numpy(rng.standard_normal((200, 1)))
    op = ExactKernelOperator(X, "gaussian", 1.0, 1)
    r = dbcd_tr(op, make_loss("squared"), Y, 0.5, SolverOptions(block_size=64, tol=1e-8), seed=0)
    assert r.converged and r.stats["active_rows"] == 200 * r.n_epochs


def test_inner_option_is_checked():
    with pytest.raises(ValueError, match="inner='newton'"):
        SolverOptions(inner="newton")


@pytest.mark.parametrize("loss_name", ["hinge", "squared_hinge", "logistic"])
def test_random_feature_blocks_solved_by_cd_reach_the_cg_optimum(loss_name):
    # random features: the block's K_BB = Psi_B Psi_B^T is formed and solved by the coordinate solver;
    # the same features (same seed) give the same dual problem, so both inner solvers reach one optimum
    from joker.estimators import JokerClassifier

    X, Y = _hinge_problem(300)
    fits = {inner: JokerClassifier(loss=loss_name, sigma=1.0, lam=0.1, n_components=64, block_size=64, tol=1e-8,
                                   max_epochs=2000, random_state=0, solver_options={"inner": inner}
                                   ).fit(X.numpy(), Y.numpy().ravel())
            for inner in ("cg", "cd")}
    assert all(f.converged_ for f in fits.values())
    assert fits["cd"].dual_gap_ <= 1e-8 and fits["cg"].dual_gap_ <= 1e-8
    rel = abs(fits["cd"].dual_objective_ - fits["cg"].dual_objective_) / abs(fits["cg"].dual_objective_)
    assert rel < 1e-6
    np.testing.assert_allclose(fits["cd"].coef_, fits["cg"].coef_, rtol=0, atol=1e-3 * np.abs(fits["cg"].coef_).max())


def test_estimators_accept_the_options():
    X, Y = _hinge_problem(120)
    y = Y.numpy().ravel()
    a = JokerClassifier(sigma=1.0, lam=0.1, tol=1e-8, random_state=0).fit(X.numpy(), y)
    b = JokerClassifier(sigma=1.0, lam=0.1, tol=1e-8, random_state=0,
                        solver_options={"inner": "cg", "shrinking": False}).fit(X.numpy(), y)
    assert a.converged_ and b.converged_
    np.testing.assert_allclose(a.decision_function(X.numpy()), b.decision_function(X.numpy()), atol=1e-3)
    r = JokerRegressor(sigma=1.0, lam=0.1, solver_options={"inner": "cd"}).fit(X.numpy(), y)
    assert r.converged_


def test_klr_digits_small_lambda_converges_within_the_default_budget():
    # issue 12: CG inner solves left the gap at 1.08 after 100 epochs (105 s); CD with the
    # trust region as a box converges in about 10 epochs
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    m = JokerClassifier(loss="logistic", sigma=2.5, lam=1e-3, random_state=0).fit(X[:1400] / 16, y[:1400])
    assert m.converged_ and m.n_epochs_ <= 30
    assert m.dual_gap_ <= 1e-3 and m.kkt_residual_ <= np.sqrt(1e-3)
    assert np.mean(m.predict(X[1400:] / 16) == y[1400:]) > 0.9


def test_svr_small_lambda_converges_within_the_default_budget():
    # issue 12: gap 0.37 (CG) / 1.4e-2 (CD capped at 100 sweeps) after 100 epochs; 26 epochs now
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (800, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(800)
    m = JokerRegressor(loss="epsilon_insensitive", epsilon=0.1, sigma=1.0, lam=0.01, random_state=0).fit(X, y)
    assert m.converged_ and m.n_epochs_ <= 60
    assert m.solver_stats_["cg_budget"] > 100  # past max_cg_iter: one or two blocks hold every active row


def test_duplicated_rows_hinge_converges_like_cg():
    # fresh-user tester: 600 rows of 6 distinct points, hinge, lam=1e-5: CD alone crawled
    # (100 epochs, gap 0.88) where CG took 7 epochs; CG now continues when the sweeps run out
    rng = np.random.default_rng(8)
    base = rng.uniform(-1, 1, (6, 2))
    idx = rng.integers(0, 6, 600)
    X = base[idx]
    y = np.where(rng.random(600) < np.where(base[idx, 0] > 0, 0.8, 0.3), 1.0, -1.0)
    m = JokerClassifier(loss="hinge", sigma=1.0, lam=1e-5, tol=1e-6, random_state=0).fit(X, y)
    ref = JokerClassifier(loss="hinge", sigma=1.0, lam=1e-5, tol=1e-6, random_state=0,
                          solver_options={"inner": "cg", "shrinking": False}).fit(X, y)
    assert m.converged_ and m.n_epochs_ <= 20 and m.solver_stats_.get("cd_polish", 0) > 0
    assert m.dual_objective_ == pytest.approx(ref.dual_objective_, rel=1e-5)


def test_bad_values_of_the_new_options_are_refused():
    with pytest.raises(TypeError, match="shrinking must be a bool or None"):
        SolverOptions(shrinking="no")
    with pytest.raises(TypeError, match="max_cd_sweeps must be an int"):
        SolverOptions(max_cd_sweeps="many")
    with pytest.raises(ValueError, match="tol must be < 1"):
        SolverOptions(tol=1.0)


def test_huge_inputs_fit_on_the_exact_path_and_a_tiny_sigma_gets_a_clear_error():
    X = np.random.default_rng(0).standard_normal((50, 3))
    ref = JokerRegressor(sigma="median").fit(X, X[:, 0])
    for scale in (1e20, 1e200):  # framed by a power of two near sigma: fits as X itself would
        m = JokerRegressor(sigma="median").fit(X * scale, X[:, 0])
        assert m.sigma_ == pytest.approx(scale * ref.sigma_, rel=1e-12)
        np.testing.assert_allclose(m.predict(X * scale), ref.predict(X), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="too large for torch.float64 kernel arithmetic"):
        JokerRegressor(sigma=1.0).fit(X * 1e200, X[:, 0])


def _split_qp_reference(K, c, pieces, lo, hi):
    """min_x x.K x/2 + c.x + h(x), lo <= x <= hi, as a QP in x = u - v, u, v >= 0 (Clarabel).

    h(x) = l+ x + q+ x^2/2 for x >= 0 and l- x + q- x^2/2 for x <= 0 with l- <= l+
    (convex, kink at 0): h(u - v) is replaced by l+ u + q+ u^2/2 - l- v + q- v^2/2,
    equal at every optimum since there u v = 0.
    """
    qpsolvers = pytest.importorskip("qpsolvers")
    from scipy.sparse import csc_matrix

    lp, qp, lm, qm = pieces
    P = np.block([[K + np.diag(qp), -K], [-K, K + np.diag(qm)]])
    q = np.concatenate([c + lp, -c - lm])
    ub = np.concatenate([np.maximum(hi, 0.0), np.maximum(-lo, 0.0)])
    ub = np.where(np.isfinite(ub), ub, 1e20)
    z = qpsolvers.solve_qp(csc_matrix(P + 1e-13 * np.eye(len(q))), q, lb=np.zeros(len(q)), ub=ub, solver="clarabel",
                           tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return z[:len(c)] - z[len(c):]


@pytest.mark.parametrize("loss_name", ["hinge", "squared_hinge", "epsilon_insensitive", "odm", "huber"])
def test_block_solve_in_alpha_matches_a_qp_solver(loss_name):
    # one block of 40 rows, two outputs, a non-zero start and a coupling to rows outside the block
    rng = np.random.default_rng(7)
    b, lam = 40, 0.5
    X = rng.standard_normal((b, 3))
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2.0)
    Y = np.where(rng.standard_normal((b, 2)) > 0, 1.0, -1.0)
    if loss_name in ("epsilon_insensitive", "huber"):
        Y = rng.standard_normal((b, 2))
    loss = make_loss(loss_name, epsilon=0.3) if loss_name == "epsilon_insensitive" else make_loss(loss_name)
    Yt = torch.from_numpy(Y)
    lo, hi = (torch.as_tensor(v, dtype=torch.float64) * torch.ones_like(Yt) for v in loss.box(Yt, lam))
    pieces = [torch.as_tensor(v, dtype=torch.float64) * torch.ones_like(Yt) for v in loss.pieces(Yt, lam)]
    a0 = torch.clamp(torch.from_numpy(rng.uniform(-0.5, 0.5, (b, 2))), lo, hi)
    outside = torch.from_numpy(rng.standard_normal((b, 2)))  # (K alpha)_B from the rows outside the block
    f0 = torch.from_numpy(K) @ a0 + outside
    a, res0, sweeps, starved = block_cd.solve_block_pq(torch.from_numpy(K), f0, a0, pieces, lo, hi, loss.kinked,
                                                        max_sweeps=20000, rtol=1e-13)
    assert starved == [0.0, 0.0] and all(r > 0 for r in res0) and all(1 <= n < 20000 for n in sweeps)
    assert torch.all(a >= lo) and torch.all(a <= hi)
    for c in range(2):
        ref = _split_qp_reference(K, outside[:, c].numpy(), [p[:, c].numpy() for p in pieces],
                                  lo[:, c].numpy(), hi[:, c].numpy())

        def J(x):
            h = loss.h(torch.from_numpy(x).reshape(-1, 1), Yt[:, c:c + 1], lam).sum()
            return 0.5 * x @ K @ x + outside[:, c].numpy() @ x + float(h)
        assert J(a[:, c].numpy()) <= J(ref) + 1e-9 * max(1.0, abs(J(ref)))
        assert np.max(np.abs(a[:, c].numpy() - ref)) < 1e-5
    # the caller's tensors are left alone
    assert torch.equal(f0, torch.from_numpy(K) @ a0 + outside)


def test_block_solve_in_alpha_skips_what_the_rule_says():
    rng = np.random.default_rng(8)
    K = torch.eye(5, dtype=torch.float64)
    y = torch.ones(5, 1, dtype=torch.float64)
    lo, hi = torch.zeros(5, 1, dtype=torch.float64), torch.full((5, 1), 2.0, dtype=torch.float64)
    pieces = (-y, 0.0, -y, 0.0)  # hinge: J = |a|^2/2 - sum a, optimum a = 1
    a0 = torch.ones(5, 1, dtype=torch.float64)
    a, res0, sweeps, _ = block_cd.solve_block_pq(K, K @ a0, a0, pieces, lo, hi, False, 10, 1e-6)
    assert res0 == [0.0] and sweeps == [0] and torch.equal(a, a0)  # at the optimum: not visited
    a0 = torch.from_numpy(rng.uniform(0.9, 1.1, (5, 1)))
    a, res0, sweeps, _ = block_cd.solve_block_pq(K, K @ a0, a0, pieces, lo, hi, False, 10, 1e-6, skip=0.2)
    assert sweeps == [0] and torch.equal(a, a0)  # residual <= 0.1 <= skip
    a, res0, sweeps, _ = block_cd.solve_block_pq(K, K @ a0, a0, pieces, lo, hi, False, 10, 1e-6)
    assert sweeps == [2]  # the second sweep finds nothing to move
    torch.testing.assert_close(a, torch.ones(5, 1, dtype=torch.float64))  # identity K: one sweep is exact


def test_a_rejected_newton_face_is_retried_once_the_face_changes():
    # L2-SVC block of 3 near-duplicate points (K ~ all 2s, an intercept): the first Newton try is
    # on all 3 variables and is cut short; once a_0 reaches its bound 0 the face {1, 2} is new, and
    # its step finishes the block (one rejected try used to switch Newton off: 8,867 sweeps).
    K = torch.tensor([[2.0, 1.99951122, 1.99993811], [1.99951122, 2.0, 1.99910908],
                      [1.99993811, 1.99910908, 2.0]], dtype=torch.float64)
    f0 = torch.tensor([[0.72260083], [-0.86034964], [-1.04582898]], dtype=torch.float64)
    y = torch.tensor([[1.0], [1.0], [-1.0]], dtype=torch.float64)
    lam = 1.434e-4
    loss = make_loss("squared_hinge")
    lo, hi = loss.box(y, lam)
    a, _, used, starved = block_cd.solve_block_pq(K, f0, torch.zeros(3, 1, dtype=torch.float64),
                                                  loss.pieces(y, lam), lo, hi, False, 3000, 1e-4)
    assert starved == [0.0] and used[0] < 3000
    # the exact minimiser: a_0 = 0, (K_FF + lam I) a_F = y_F - f0_F on F = {1, 2}
    F = [1, 2]
    a_F = torch.linalg.solve(K[F][:, F] + lam * torch.eye(2, dtype=torch.float64), y[F] - f0[F])
    assert float(a[0]) == 0.0
    torch.testing.assert_close(a[F], a_F, rtol=1e-5, atol=0)


def test_the_coordinate_visit_honours_block_rtol_and_a_loose_cg_rtol():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=400)

    def fit(**so):
        return JokerRegressor(loss="huber", sigma=0.7, lam=1e-3, random_state=0, solver_options=so).fit(X, y)
    loose = fit(cg_rtol=0.99)  # the visit still ends on block_rtol (1e-3), not after two sweeps
    assert loose.converged_ and loose.n_epochs_ < 60
    tight, default = fit(block_rtol=1e-12), fit()
    assert tight.solver_stats_["cg_iter"] > 5 * default.solver_stats_["cg_iter"]


def test_newton_waits_for_a_settled_face(monkeypatch):
    # issue 13: a face Newton step is tried at a crawling chunk end only when the free face is the one the
    # previous chunk ended on. Squared loss (no bound: the face is every variable from the start) on an
    # ill-conditioned block: no try after the first chunk, one exact step after the second, then one sweep
    # that finds nothing to move.
    calls = []
    real = block_cd._pq_face_newton
    monkeypatch.setattr(block_cd, "_pq_face_newton", lambda *a: calls.append(len(a[-1])) or real(*a))
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 1, 30))
    K = torch.tensor(np.exp(-(x[:, None] - x[None, :]) ** 2 / (2 * 0.3 ** 2)))
    y = torch.tensor(rng.normal(size=(30, 1)))
    lam = 1e-3
    loss = make_loss("squared")
    lo, hi = loss.box(y, lam)
    zero = torch.zeros(30, 1, dtype=torch.float64)
    a, _, used, starved = block_cd.solve_block_pq(K, zero, zero.clone(), loss.pieces(y, lam), lo, hi, False, 3000,
                                                  1e-8)
    assert calls == [30] and used == [2 * block_cd.CHUNK + 2] and starved == [0.0]
    ref = torch.linalg.solve(K + lam * torch.eye(30, dtype=torch.float64), y)  # (K + lam I) a = y
    torch.testing.assert_close(a, ref, rtol=1e-8, atol=1e-8 * float(ref.abs().max()))

