"""scikit-learn's estimator checks for all four estimators: JokerRegressor and JokerClassifier (exact
and RFF), LowRankIPMClassifier and SODMClassifier (binary-only, declared in their tags).

Every check must pass; none is marked as an expected failure here.  A
failing check is a bug to report, not a check to skip.

sigma=3 rather than 1: sklearn's regression check data are 10-dimensional and
standardised, and at sigma=1 a 40-feature RFF model scores R^2 = 0.24 there
(scikit-learn's own RBFSampler + Ridge: 0.24 too), below the check's 0.5.
The IPM's rank (10) and SODM's levels (1) fit the checks' smallest data sets.
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from joker import JokerClassifier, JokerRegressor
from joker.ipm import LowRankIPMClassifier
from joker.sodm import SODMClassifier

ESTIMATORS = [
    JokerRegressor(sigma=3.0, random_state=0),
    JokerRegressor(sigma=3.0, n_components=40, random_state=0),
    JokerRegressor(loss="epsilon_insensitive", sigma=3.0, random_state=0),
    JokerClassifier(sigma=3.0, random_state=0),
    JokerClassifier(sigma=3.0, n_components=40, random_state=0),
    JokerClassifier(loss="logistic", sigma=3.0, random_state=0),
    LowRankIPMClassifier(n_components=10, random_state=0),
    LowRankIPMClassifier(n_components=10, factor="nystroem", random_state=0),
    SODMClassifier(levels=1, n_landmarks=5, n_jobs=1),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
