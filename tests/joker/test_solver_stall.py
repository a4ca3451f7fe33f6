"""An epoch without an accepted step ends the fit (no spinning until max_epochs)."""

import warnings

import numpy as np

from joker import JokerRegressor


def test_fit_stops_when_an_epoch_accepts_no_step():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a zero KKT residual cannot be reached in floating point: only the stall
        # rule can stop the fit before max_epochs.
        m = JokerRegressor(sigma=1.0, lam=1.0, block_size=60, tol=0.0, kkt_tol=0.0, max_epochs=10_000,
                           random_state=0).fit(X, y)
    assert not m.converged_
    assert m.solver_stats_.get("stalled") is True
    assert m.n_epochs_ < 100
    # it stopped at the solution: the gap is at rounding level
    assert abs(m.dual_gap_) < 1e-10
