"""SolverOptions reject bad values with an error naming the option; refits keep no stale attributes."""

import warnings

import numpy as np
import pytest

from joker import ConvergenceWarning, JokerRegressor
from joker.solver import SolverOptions


@pytest.mark.parametrize("opts,exc,name", [
    ({"check_every": 0}, ValueError, "check_every"),
    ({"block_size": 0}, ValueError, "block_size"),
    ({"block_size": -5}, ValueError, "block_size"),
    ({"block_size": 2.5}, TypeError, "block_size"),
    ({"tol": "x"}, TypeError, "tol"),
    ({"tol": -1.0}, ValueError, "tol"),
    ({"kkt_tol": float("nan")}, ValueError, "kkt_tol"),
    ({"eta": 2.0}, ValueError, "eta"),
    ({"cg_rtol": -1.0}, ValueError, "cg_rtol"),
    ({"radius0": 0.0}, ValueError, "radius0"),
    ({"max_tr_iter": 0}, ValueError, "max_tr_iter"),
    ({"skip_ratio": 2.0}, ValueError, "skip_ratio"),
    ({"shrink": 1.0}, ValueError, "shrink"),
    ({"selection": "best"}, ValueError, "selection"),
])
def test_bad_solver_options_are_named(opts, exc, name):
    with pytest.raises(exc, match=name):
        SolverOptions.from_dict(opts)
    X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(exc, match=name):
        JokerRegressor(sigma=1.0, solver_options=opts).fit(X, X[:, 0])


@pytest.mark.parametrize("kkt_tol", [-1.0, float("nan"), "x"])
def test_bad_kkt_tol(kkt_tol):
    X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(ValueError, match="kkt_tol"):
        JokerRegressor(sigma=1.0, kkt_tol=kkt_tol).fit(X, X[:, 0])


def test_warning_names_the_unmet_criterion():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 3))  # several blocks: a KKT residual of 1e-15 is out of reach
    y = np.sin(X[:, 0])
    with pytest.warns(ConvergenceWarning, match="KKT residual .* > kkt_tol=1e-15") as rec:
        m = JokerRegressor(sigma=1.0, tol=1e-3, kkt_tol=1e-15, max_epochs=10, random_state=0).fit(X, y)
    assert m.dual_gap_ <= 1e-3 and not m.converged_
    assert not any("> tol=" in str(w.message) for w in rec)


def test_refit_drops_attributes_of_the_other_path():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = JokerRegressor(sigma=1.0).fit(X, y)
        assert hasattr(m, "alpha_")
        m.set_params(n_components=8).fit(X, y)
        assert hasattr(m, "coef_") and not hasattr(m, "alpha_")
        m.set_params(n_components=None).fit(X, y)
        assert hasattr(m, "alpha_") and not hasattr(m, "coef_") and not hasattr(m, "feature_map_")


def test_float32_exact_fit_centres_before_the_cast():
    # an offset of 1e6 would round float32 inputs to a 0.0625 grid if cast first
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 1))
    y = np.sin(3 * X[:, 0])
    kw = dict(sigma=0.3, lam=0.01, tol=1e-8, max_epochs=500, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p64 = JokerRegressor(dtype="float64", **kw).fit(X + 1e6, y).predict(X + 1e6)
        p32 = JokerRegressor(dtype="float32", **kw).fit(X + 1e6, y).predict(X + 1e6)
    assert np.max(np.abs(p32 - p64)) < 1e-2 * np.max(np.abs(p64))
