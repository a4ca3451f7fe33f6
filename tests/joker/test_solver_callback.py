"""The solver's per-certificate callback (anytime curves, issue 42) and the IPM's per-iterate one.

Inside the callback the estimator is the current iterate: its predictions at the last certificate are the
fitted model's, and the rows it sees are the history's.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from joker import JokerClassifier, JokerRegressor
from joker.ipm import LowRankIPMClassifier


def test_joker_callback_sees_every_certificate_and_the_iterate():
    X, y = make_regression(300, 5, noise=5.0, random_state=0)
    y = y / np.std(y)
    seen, preds = [], []
    model = JokerRegressor(lam=1.0, sigma=3.0, tol=1e-8, max_epochs=50, random_state=0, dtype="float64")

    def cb(row):
        seen.append(dict(row))
        preds.append(model.predict(X[:50]))

    model.epoch_callback = cb
    model.fit(X, y)
    assert [r["epoch"] for r in seen] == [h["epoch"] for h in model.history_]
    assert [r["gap"] for r in seen] == [h["gap"] for h in model.history_]
    np.testing.assert_allclose(preds[-1], model.predict(X[:50]), rtol=1e-12, atol=1e-12)
    assert np.all(preds[0] == 0.0)  # epoch 0: alpha = 0, the zero model
    # the iterates move: the first certified epoch's predictions differ from the last
    assert np.max(np.abs(preds[1] - preds[-1])) > 1e-6


def test_joker_callback_time_is_not_solver_time():
    """The history's seconds (fig3_convergence) and max_time exclude the callback (the checkpoint evaluation)."""
    import time

    X, y = make_regression(300, 5, noise=5.0, random_state=0)
    y = y / np.std(y)
    pause = 0.05

    def slow(row):
        time.sleep(pause)

    model = JokerRegressor(lam=1.0, sigma=3.0, tol=1e-8, max_epochs=12, random_state=0, dtype="float64")
    model.epoch_callback = slow
    model.fit(X, y)
    n = len(model.history_)
    assert n >= 4
    # every certificate's callback slept `pause`: with its time counted, the last row would be >= (n-1) pauses
    assert model.history_[-1]["seconds"] < (n - 1) * pause
    assert model.fit_time_ >= n * pause  # the estimator's wall clock still holds it


def test_joker_classifier_callback_decision_matches_final():
    X, y = make_classification(300, 6, random_state=1)
    model = JokerClassifier(lam=1.0, sigma=3.0, loss="hinge", max_epochs=30, random_state=0, dtype="float64")
    last = {}
    model.epoch_callback = lambda row: last.update(d=model.decision_function(X[:40]), epoch=row["epoch"])
    model.fit(X, y)
    assert last["epoch"] == model.history_[-1]["epoch"]
    np.testing.assert_allclose(last["d"], model.decision_function(X[:40]), rtol=1e-12, atol=1e-12)


def test_ipm_callback_each_iterate():
    X, y = make_classification(300, 6, random_state=2)
    model = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=50, random_state=0, dtype="float64")
    rows, last = [], {}

    def cb(row):
        rows.append(row["iteration"])
        last["d"] = model.decision_function(X[:40])

    model.iteration_callback = cb
    model.fit(X, y)
    assert rows == [h["iteration"] for h in model.history_]
    np.testing.assert_allclose(last["d"], model.decision_function(X[:40]), rtol=1e-10, atol=1e-10)


def test_ipm_failed_fit_leaves_no_iterate():
    X, y = make_classification(100, 4, random_state=3)
    model = LowRankIPMClassifier(lam=1.0, sigma=3.0, n_components=20, random_state=0, dtype="float64")

    def boom(row):
        raise RuntimeError("stop")

    model.iteration_callback = boom
    with pytest.raises(RuntimeError, match="stop"):
        model.fit(X, y)
    assert not hasattr(model, "coef_") and not hasattr(model, "classes_")
