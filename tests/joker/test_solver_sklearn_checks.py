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

from sklearn.base import clone
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


# Parameters for single checks, as scikit-learn sets them for its own estimators
# (sklearn.utils._test_common.instance_generator.PER_ESTIMATOR_CHECK_PARAMS):
# - check_sample_weight_equivalence_on_dense_data (and _on_sparse_data, the same on CSR) compares a weighted fit with one on repeated
#   rows to rtol 1e-7: both fits must be solved far below the default tol=1e-3 (scikit-learn
#   gives its own iterative solvers tol=1e-12 there).
# - check_class_weight_classifiers (class 0 weighted 1000, the others 1e-4, on blobs of spread
#   20 seen at sigma = 3) expects 87 % of the test points predicted as class 0. A bias does that
#   (SVC's, or fit_intercept=True: 100 %); the default model has none, and where a test point has
#   no class-0 training row within a few sigma its f is a sum of tiny terms (78-92 % measured).
CHECK_PARAMS = {
    "check_sample_weight_equivalence_on_dense_data": dict(tol=1e-14, kkt_tol=1e-12, max_epochs=10_000),
    "check_sample_weight_equivalence_on_sparse_data": dict(tol=1e-14, kkt_tol=1e-12, max_epochs=10_000),
    "check_class_weight_classifiers": dict(fit_intercept=True),
}


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    params = CHECK_PARAMS.get(getattr(check, "func", check).__name__)
    check(clone(estimator).set_params(**params) if params else estimator)
