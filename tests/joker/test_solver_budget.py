"""Issue 12 item 4: the inner CG budget grows on ill-conditioned blocks without hand-tuned options."""

from __future__ import annotations

import numpy as np

from joker import JokerRegressor
from joker.solver import DEFAULTS


def test_rff_krr_small_lambda_converges_within_the_default_budget():
    # gap 0.77 after 100 epochs with the fixed budget; 17 epochs with min_cg_iter=50
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(500)
    m = JokerRegressor(sigma=1.0, lam=1e-3, n_components=256, random_state=0).fit(X, y)
    assert m.converged_ and m.n_epochs_ < DEFAULTS.max_epochs
    assert m.solver_stats_["cg_budget"] > 10  # the rule, not luck, got it there
    Psi = m.feature_map_.transform(X)
    theta = np.linalg.solve(Psi.T @ Psi + 1e-3 * np.eye(256), Psi.T @ y)  # ridge on the same features
    ref = Psi @ theta
    assert np.linalg.norm(m.predict(X) - ref) / np.linalg.norm(ref) < 1e-2
