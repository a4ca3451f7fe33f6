"""The sync-free block step (``inner="direct"``, joker/direct_step.py; issue 25).

Counts: a ``TorchDispatchMode`` counts the aten calls of every block step
(:mod:`joker.dispatch_count`) on a fixed problem at the issue's setting
(random features M = 2,048, blocks of 2,048, float32): no host sync in any
block step, and at most the issue's number of operations per block step
(40 for KRR and squared hinge, 80 for the logistic loss). The counts do not
depend on the data (the step has no data-dependent branch), so a small
problem measures them exactly.

Results: on fixed problems (two closed forms; four problems and two
weighted ones against the CG block step, the path of the code before this
step existed) the direct step reaches the same solution: both certified to
a relative gap of 1e-8, their primal values agree to 1e-6 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

from joker import JokerClassifier, JokerRegressor
from joker.direct_step import direct_applies
from joker.dispatch_count import count_block_steps, count_fit
from joker.losses import make_loss

COUNTED = ("squared", "squared_hinge", "logistic")
ISSUE_TARGET = {"squared": 40, "squared_hinge": 40, "logistic": 80}
# The most operations one block step of this implementation issues on that problem (measured: 28, 39,
# 77): a regression guard below the issue's targets.
CEILING = {"squared": 28, "squared_hinge": 39, "logistic": 77}


@pytest.fixture(scope="module")
def counts():
    """Counts of a 4,096-row fit (two blocks per epoch, two epochs: the second feeds the lagged certificate)."""
    return {loss: count_fit(loss, "direct", n_components=2048, block_size=2048, n=4096, epochs=2)
            for loss in COUNTED}


@pytest.mark.parametrize("loss", COUNTED)
def test_block_step_has_no_host_sync_and_few_operations(counts, loss):
    c = counts[loss]
    assert c.blocks == 4
    assert c.max_syncs == 0, c.top
    assert c.max_ops <= CEILING[loss], c.top


@pytest.mark.parametrize("loss", COUNTED)
def test_block_step_meets_the_issue_target(counts, loss):
    assert counts[loss].max_ops <= ISSUE_TARGET[loss]


def test_counts_do_not_depend_on_the_sizes(counts):
    small = count_fit("squared_hinge", "direct", n_components=64, block_size=128, n=256, epochs=2)
    assert small.max_ops == counts["squared_hinge"].max_ops
    assert small.max_syncs == 0


@pytest.mark.parametrize("loss", COUNTED)
def test_exact_kernel_block_step_has_no_host_sync(loss):
    c = count_fit(loss, "direct", n_components=None, block_size=128, n=512, epochs=2)
    assert c.blocks >= 5  # 4 blocks in the first epoch; shrinking may leave rows out of the second
    assert c.max_syncs == 0, c.top


# --------------------------------------------------------------------------- results


def _fit(Est, X, y, inner, **kw):
    est = Est(sigma=2.0, lam=0.5, tol=1e-8, max_epochs=400, block_size=64, random_state=0, dtype="float64",
              solver_options={"inner": inner}, **kw).fit(X, y)
    assert est.converged_ and est.dual_gap_ <= 1e-8
    return est


def test_rff_krr_is_the_ridge_solution(refs):
    X, y = refs.regression_data(n=400, d=5, seed=3)
    est = _fit(JokerRegressor, X, y, "direct", loss="squared", n_components=96)
    Psi = np.asarray(est.feature_map_.transform(X), dtype=np.float64)
    theta = np.linalg.solve(Psi.T @ Psi + 0.5 * np.eye(96), Psi.T @ y)
    P = 0.25 * theta @ theta + refs.primal_loss("squared", y, Psi @ theta)
    assert est.primal_ == pytest.approx(P, rel=1e-6)
    assert refs.rel_err(est.coef_, theta) <= 1e-4


def test_exact_krr_is_the_linear_solve(refs):
    X, y = refs.regression_data(n=400, d=5, seed=4)
    est = _fit(JokerRegressor, X, y, "direct", loss="squared")
    K = refs.gaussian_kernel(X, X, 2.0)
    alpha = np.linalg.solve(K + 0.5 * np.eye(len(y)), y)
    assert est.primal_ == pytest.approx(refs.certificates("squared", K, y, alpha, 0.5).primal, rel=1e-6)
    assert refs.rel_err(est.alpha_, alpha) <= 1e-4


@pytest.mark.parametrize("loss,n_components,kw", [
    ("squared_hinge", 96, {}),
    ("logistic", 96, {}),
    ("squared_hinge", None, {"fit_intercept": True}),  # the constant offset couples every block
    ("logistic", None, {"n_classes": 3}),  # one model per class, each with its own trust region
], ids=["rff-l2svc", "rff-klr", "exact-l2svc-intercept", "exact-klr-3-classes"])
def test_same_solution_as_the_cg_step(refs, loss, n_components, kw):
    kw = dict(kw)
    n_classes = kw.pop("n_classes", 2)
    X, y = refs.classification_data(n=400, d=5, seed=5)
    if n_classes == 3:
        y = np.where(X[:, 0] > 0.5, 2.0, y)
    cg = _fit(JokerClassifier, X, y, "cg", loss=loss, n_components=n_components, **kw)
    direct = _fit(JokerClassifier, X, y, "direct", loss=loss, n_components=n_components, **kw)
    assert direct.primal_ == pytest.approx(cg.primal_, rel=1e-6)
    assert "direct_visits" in direct.solver_stats_ and "direct_visits" not in cg.solver_stats_


@pytest.mark.parametrize("Est,loss,n_components", [
    (JokerRegressor, "squared", 96),
    (JokerClassifier, "logistic", None),
], ids=["rff-krr", "exact-klr"])
def test_weighted_rows_same_solution_as_the_cg_step(refs, Est, loss, n_components):
    data = refs.regression_data if Est is JokerRegressor else refs.classification_data
    X, y = data(n=400, d=5, seed=7)
    w = np.random.default_rng(7).uniform(0.2, 3.0, len(y))
    w[:30] = 0.0  # rows held at alpha = 0 (joker.weighted_loss)
    cg, direct = (Est(loss=loss, n_components=n_components, sigma=2.0, lam=0.5, tol=1e-8, max_epochs=400,
                      block_size=64, random_state=0, dtype="float64", solver_options={"inner": inner}
                      ).fit(X, y, sample_weight=w) for inner in ("cg", "direct"))
    assert cg.converged_ and direct.converged_
    assert direct.primal_ == pytest.approx(cg.primal_, rel=1e-6)
    assert np.all(np.asarray(direct.dual_alpha_)[:30] == 0.0)


def test_accepted_steps_never_increase_the_dual(refs):
    X, y = refs.classification_data(n=300, d=5, seed=6, flip_y=0.1)
    est = JokerClassifier(loss="logistic", n_components=64, sigma=1.5, lam=0.5, block_size=64, tol=1e-8,
                          max_epochs=400, random_state=0, solver_options={"inner": "direct", "trace_steps": True})
    est.fit(X, y)
    J = np.asarray(est.step_duals_, dtype=np.float64)
    assert len(J) >= 10 and np.max(np.diff(J)) <= 1e-12 * max(1.0, np.max(np.abs(J)))
    assert est.converged_


# --------------------------------------------------------------------------- choice of the step


@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive"])
def test_direct_refuses_a_piecewise_linear_loss(loss):
    with pytest.raises(ValueError, match="inner='direct' needs a strongly convex h"):
        direct_applies("direct", make_loss(loss), "cpu")
    est_cls = JokerRegressor if loss == "epsilon_insensitive" else JokerClassifier
    X = np.random.default_rng(0).standard_normal((40, 3))
    y = np.sign(X[:, 0]) + (X[:, 1] if loss == "epsilon_insensitive" else 0.0)
    with pytest.raises(ValueError, match="piecewise-linear h"):
        est_cls(loss=loss, solver_options={"inner": "direct"}).fit(X, y)


@pytest.mark.parametrize("loss", ["squared", "huber", "squared_hinge", "logistic", "odm"])
def test_auto_takes_it_on_cuda_only(loss):
    lo = make_loss(loss)
    assert direct_applies("auto", lo, "cuda:0")
    assert not direct_applies("auto", lo, "cpu")  # a CG iteration costs 4 b M flops there, the direct solve 2 b^2 M
    assert not direct_applies("auto", lo, "cuda", coordinate=True)
    assert not direct_applies("cg", lo, "cuda")


@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive"])
def test_auto_keeps_cg_for_a_piecewise_linear_loss(loss):
    assert not direct_applies("auto", make_loss(loss), "cuda")


def test_blocks_after_a_slow_epoch_get_more_newton_iterations(refs):
    X, y = refs.classification_data(n=400, d=5, seed=5)
    est = _fit(JokerClassifier, X, y, "direct", loss="squared_hinge", fit_intercept=True)
    stats = est.solver_stats_
    assert 2 <= stats["direct_iters"] <= 20  # doubled from one, up to max_tr_iter
    assert stats["accepted"] > stats["blocks"] - stats["skipped"]  # some visits accepted more than one iteration


def test_count_block_steps_needs_a_block_step():
    with pytest.raises(ValueError, match="no block step"):
        count_block_steps(lambda: None)



def test_a_radius_shrunk_to_zero_leaves_the_iterate_finite(refs, monkeypatch):
    # The radius shrinks on every visit with no predicted decrease (the CG rule too) and can reach 0 (seen
    # after ~200 epochs at lam 1e-3): the cut of the zero-step candidate, 0 / 0, must not make the step NaN
    # (it crashed the logistic's BCE). Here every radius starts at 0: nothing moves, nothing breaks.
    from joker import direct_step

    init = direct_step.DirectStep.__init__

    def zero_radius(self, run):
        init(self, run)
        self.radius.zero_()

    monkeypatch.setattr(direct_step.DirectStep, "__init__", zero_radius)
    X, y = refs.classification_data(n=300, d=5, seed=6)
    est = JokerClassifier(loss="logistic", n_components=64, sigma=1.5, lam=0.5, block_size=64, tol=1e-8,
                          max_epochs=2, random_state=0, dtype="float64", solver_options={"inner": "direct"})
    with pytest.warns(Warning):  # not converged
        est.fit(X, y)
    alpha = np.asarray(est.dual_alpha_)
    assert np.all(np.isfinite(alpha)) and np.isfinite(est.dual_gap_)
    assert est.solver_stats_["accepted"] == 0


@pytest.mark.parametrize("seed", [2, 3, pytest.param(4, marks=pytest.mark.xfail(
    reason="known, open: with one torch thread (this suite's fixture) seed 4 stalls at KKT 4.1e-2 > 3.2e-2 in "
           "float32 (gap 1.9e-4); it converges with torch's default threads. Seen on a fresh venv of 2026-12-05 "
           "(numpy 2.4.6) at the last landed commit ca02660 too", strict=False)), 5])
def test_float32_logistic_direct_step_converges_as_cg_does(seed):
    """A fresh-user find: rho from the difference of the two block sums of BCE lost ~1e-5 in float32 and the
    fits stalled near the optimum (4 of these 4 seeds unconverged, KKT 4-7e-2 > 3.2e-2); row by row they converge."""
    import warnings

    from joker import JokerClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 5))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(1500) > 0.4, 1, -1)
    fits = {}
    for inner in ("direct", "cg"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[inner] = JokerClassifier(loss="logistic", sigma=2.0, n_components=256, dtype="float32",
                                          solver_options={"inner": inner}, random_state=seed).fit(X, y)
    assert fits["direct"].converged_ and fits["cg"].converged_
    assert not fits["direct"].solver_stats_.get("stalled", False)
    agree = np.mean(fits["direct"].predict(X) == fits["cg"].predict(X))
    assert agree > 0.99, agree
