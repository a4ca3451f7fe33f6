"""A model no better than the trivial predictor is flagged (issue 43): joker.trivial and TrivialModelWarning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from joker import JokerClassifier, JokerRegressor, TrivialModelWarning
from joker.trivial import auc_null_se, is_constant, trivial_reason


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0.5).astype(int), np.sin(X[:, 0]) + X[:, 1]


def _trivial_warnings(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, TrivialModelWarning)]


def test_constant_and_its_rounding():
    assert is_constant(np.full(10, 0.26))
    assert is_constant(0.26 + 1e-13 * np.arange(10))  # float64 rounding of a constant kernel
    assert not is_constant(1e-8 * np.arange(10))  # small but informative (a large lam)
    assert trivial_reason("binary", np.array([0, 1, 1]), np.full(3, 0.26)) == \
        "the decision function is constant (0.26 on every row)"


def test_auc_null_standard_error_closed_form():
    # Hanley & McNeil (1982) eq. 2 at A = 1/2: sqrt((n1 + n0 + 1) / (12 n1 n0))
    assert auc_null_se(50, 50) == pytest.approx(np.sqrt(101 / 30000))


def test_classification_rules():
    y = np.array([0] * 90 + [1] * 10)
    # all one class with random-ish scores: accuracy 0.9 = majority, AUC 0.5 exactly (every score ties)
    s = np.where(np.arange(100) % 2 == 0, -1.0, -2.0)
    assert trivial_reason("binary", y, s).startswith("accuracy 0.9000 is no better than the majority class (0.9000)")
    # imbalanced but informative: predicts the majority at its threshold, ranks perfectly (AUC 1)
    ranked = np.r_[np.linspace(-3, -2, 90), np.linspace(-1, -0.5, 10)]
    assert trivial_reason("binary", y, ranked) == ""
    # better than the majority: never trivial
    assert trivial_reason("binary", y, np.r_[-np.ones(90), np.ones(10)]) == ""


def test_regression_rules():
    y = np.arange(10.0)
    assert trivial_reason("regression", y, y + 0.1) == ""
    assert trivial_reason("regression", y, y[::-1]) == \
        f"RMSE {np.sqrt(np.mean((y[::-1] - y) ** 2)):.4g} is no better than predicting the mean (RMSE {np.std(y):.4g})"
    assert trivial_reason("regression", np.ones(5), np.ones(5) + 1e-3 * np.arange(5)) == ""  # nothing to beat


@pytest.mark.parametrize("n_components", [None, 64])
def test_huge_sigma_warns_both_estimators(n_components):
    X, yc, yr = _data()
    for est, y in ((JokerClassifier(sigma=1e12, n_components=n_components, random_state=0), yc),
                   (JokerRegressor(sigma=1e12, n_components=n_components, random_state=0), yr)):
        msgs = _trivial_warnings(est, X, y)
        assert len(msgs) == 1, (est, msgs)
        assert msgs[0].startswith("the fitted model is no better than the trivial predictor on its training rows "
                                  "(the decision function is constant (")
        assert "sigma_=1e+12" in msgs[0]
        assert np.ptp(est.predict(X) if isinstance(est, JokerRegressor) else est.decision_function(X)) < 1e-9


def test_good_fits_and_multiclass_do_not_warn():
    X, yc, yr = _data()
    assert _trivial_warnings(JokerClassifier(), X, yc) == []
    assert _trivial_warnings(JokerRegressor(), X, yr) == []
    assert _trivial_warnings(JokerClassifier(n_components=64, random_state=0), X, yc) == []
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    assert _trivial_warnings(JokerClassifier(), X, y3) == []
    assert _trivial_warnings(JokerClassifier(multi_class="ovo"), X, y3) == []
    assert len(_trivial_warnings(JokerClassifier(sigma=1e12), X, y3)) == 1


def test_huge_lam_still_ranks_and_does_not_warn():
    # lam = 1e12: decision values of order 1e-12, yet ordered as the data (AUC well above 1/2)
    X, yc, _ = _data()
    est = JokerClassifier(lam=1e12)
    assert _trivial_warnings(est, X, yc) == []
    assert 0 < np.abs(est.decision_function(X)).max() < 1e-9
