"""Issue 12 items 5 and 6: one source of solver defaults, no silent override, honest KLR."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from joker import JokerClassifier, JokerRegressor
from joker.solver import DEFAULTS, HINGE_BLOCK, SolverOptions, auto_block_size


@pytest.mark.parametrize("cls", [JokerRegressor, JokerClassifier])
@pytest.mark.parametrize("knob", ["tol", "kkt_tol", "max_epochs", "max_time", "verbose"])
def test_estimator_defaults_are_the_solver_defaults(cls, knob):
    assert inspect.signature(cls).parameters[knob].default == getattr(DEFAULTS, knob)


@pytest.mark.parametrize("cls", [JokerRegressor, JokerClassifier])
def test_block_size_default_is_auto(cls):
    assert inspect.signature(cls).parameters["block_size"].default == "auto"


def test_auto_block_size_rule():
    # issue 13: the hinge loss on the exact kernel (compiled CD on the CPU) gets HINGE_BLOCK, every other case
    # the solver's default; the estimator records the size it used, clipped to n
    assert auto_block_size("hinge", True, "cpu") == HINGE_BLOCK == 1024
    assert auto_block_size("hinge", False, "cpu") == DEFAULTS.block_size == 256
    assert auto_block_size("squared_hinge", True, "cpu") == 256
    assert auto_block_size("hinge", True, "meta") == 256  # no compiled solver off the CPU
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 3))
    y = X[:, 0] > 0
    assert JokerClassifier(sigma=1.0, loss="hinge", max_epochs=1).fit(X, y).block_size_ == 1024
    assert JokerClassifier(sigma=1.0, loss="hinge", max_epochs=1).fit(X[:300], y[:300]).block_size_ == 300
    assert JokerClassifier(sigma=1.0, loss="squared_hinge", max_epochs=1).fit(X, y).block_size_ == 256
    assert JokerClassifier(sigma=1.0, loss="hinge", n_components=20, max_epochs=1).fit(X, y).block_size_ == 256
    assert JokerClassifier(sigma=1.0, loss="hinge", block_size=64, max_epochs=1).fit(X, y).block_size_ == 64
    # an explicit 256 (the solver's default) is given: a different solver_options value is a conflict
    with pytest.raises(ValueError, match="block_size is given both"):
        JokerClassifier(sigma=1.0, loss="hinge", block_size=256, solver_options={"block_size": 64}).fit(X, y)
    # "auto" is not "given": solver_options may set the size
    m = JokerClassifier(sigma=1.0, loss="hinge", max_epochs=1, solver_options={"block_size": 100}).fit(X, y)
    assert m.block_size_ == 100 and m.solver_stats_["blocks"] <= 15


@pytest.mark.parametrize("bad, err", [("big", ValueError), ("AUTO", ValueError), (0, ValueError), (2.5, TypeError),
                                      (True, TypeError), (None, TypeError)])
def test_bad_block_size_is_refused(bad, err):
    X = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(err, match="block_size"):
        JokerClassifier(sigma=1.0, block_size=bad).fit(X, X[:, 0] > 0)


def test_default_kkt_tol_is_sqrt_tol():
    assert DEFAULTS.kkt_tol is None
    assert SolverOptions(tol=1e-6).kkt_target == pytest.approx(1e-3)
    assert SolverOptions(tol=1e-6, kkt_tol=math.inf).kkt_target == math.inf


def test_conflicting_parameter_and_solver_option_is_an_error():
    # issue 12 item 5: solver_options={"tol": 1e-12} silently won over tol=0.1
    X = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(ValueError, match="tol is given both as a parameter"):
        JokerRegressor(sigma=1.0, tol=0.1, solver_options={"tol": 1e-12}).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="block_size"):
        JokerClassifier(sigma=1.0, block_size=16, solver_options={"block_size": 8}).fit(X, X[:, 0] > 0)
    # the same value twice is not a conflict
    m = JokerRegressor(sigma=1.0, tol=0.1, solver_options={"tol": 0.1}).fit(X, X[:, 0])
    assert m.dual_gap_ <= 0.1


def test_a_knob_given_only_in_solver_options_is_used():
    # a parameter left at its default is not "given": solver_options alone sets the knob
    # (make bench-solver --verbose passed solver_options={"verbose": 1} and was refused)
    X = np.random.default_rng(0).standard_normal((600, 2))  # 3 blocks: one epoch cannot reach 1e-14
    m = JokerRegressor(sigma=1.0, lam=1e-2, solver_options={"max_epochs": 1, "tol": 1e-14}).fit(X, X[:, 0])
    assert m.n_epochs_ == 1 and not m.converged_
    m = JokerRegressor(sigma=1.0, solver_options={"tol": 1e-12}).fit(X, X[:, 0])
    assert m.converged_ and m.dual_gap_ <= 1e-12


def test_klr_digits_converges_on_gap_and_kkt():
    # issue 12 item 6: converged_=True with a KKT residual of 0.237 (gap alone decided).
    # The unit-step KKT residual overweighted variables with p near 0, where h'' is
    # huge and one coordinate step barely moves them; the residual is now that step.
    from sklearn.datasets import load_digits

    d = load_digits()
    X, y = d.data[:1400] / 16.0, d.target[:1400]
    m = JokerClassifier(loss="logistic", sigma=2.5, lam=1.0, random_state=0).fit(X[:1000], y[:1000])
    assert m.converged_
    assert m.dual_gap_ <= 1e-3 and m.kkt_residual_ <= math.sqrt(1e-3)
    assert len(m.history_[-1]["gaps"]) == 10
    assert (m.predict(X[1000:]) == y[1000:]).mean() >= 0.9
