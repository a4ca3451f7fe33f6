"""The inputs' centre (joker.center) and what it protects: outlying rows neither break the fit nor the bandwidth.

References: numpy.median of the repeated rows; scikit-learn's KernelRidge on
the rows without the outlier (an isolated row decouples from the others:
its kernel row is e_i, so the other dual variables are those of the fit
without it); scipy's pdist (direct differences) for the median distance.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.spatial.distance import cdist, pdist
from sklearn.exceptions import NotFittedError
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.validation import check_is_fitted

from joker.bandwidth import median_sigma
from joker.center import median_center
from joker.estimators import JokerClassifier, JokerRegressor
from joker.solver import DivergedError


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 101])
def test_median_of_repeated_rows_dense_and_sparse(n):
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 6))
    X[rng.random((n, 6)) < 0.5] = 0.0  # many zeros: the sparse path's implicit values
    np.testing.assert_array_equal(median_center(torch.from_numpy(X)).numpy(), np.median(X, 0))
    np.testing.assert_array_equal(median_center(sp.csr_matrix(X)).numpy(), np.median(X, 0))
    w = rng.integers(0, 4, n).astype(float)
    w[0] += 1.0 if w.sum() == 0 else 0.0
    R = np.repeat(X, w.astype(int), axis=0)  # weights are row counts; weight 0 is the row left out
    np.testing.assert_array_equal(median_center(torch.from_numpy(X), w).numpy(), np.median(R, 0))
    np.testing.assert_array_equal(median_center(sp.csr_matrix(X), w).numpy(), np.median(R, 0))


def test_median_wide_inputs_and_extreme_values():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 5000))  # many columns: handled in groups
    np.testing.assert_array_equal(median_center(torch.from_numpy(X)).numpy(), np.median(X, 0))
    X = np.array([[-1.5e308], [1.5e308]])  # the midpoint must not overflow
    assert median_center(torch.from_numpy(X)).item() == 0.0


def test_one_outlying_row_leaves_the_exact_fit_intact():
    # Before the median centre: one row at 1e10 moved the mean by 2e7, the expanded distances
    # cancelled, the kernel was not PSD as computed and the fit diverged (RMSE 1e152).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 10))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(500)
    Xt = rng.standard_normal((200, 10))
    ref = KernelRidge(alpha=1e-2, kernel="rbf", gamma=1 / 18).fit(X[1:], y[1:]).predict(Xt)
    for big in (1e10, 1e15):
        Xb = X.copy()
        Xb[0] = big
        est = JokerRegressor(sigma=3.0, lam=1e-2, tol=1e-10, kkt_tol=1e-8).fit(Xb, y)
        assert est.converged_
        np.testing.assert_allclose(est.predict(Xt), ref, atol=1e-6)
        assert float(est.X_center_.abs().max()) < 1.0  # the bulk's centre, not the outlier's pull


def test_median_bandwidth_with_an_outlying_row():
    # The mean-centred subsample put every ordinary row 2e11 from the centre: their distances
    # (about 4) rounded to 0 and sigma silently became 1.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 10))
    for big in (1e10, 1e15, 1e30):
        Xb = X.copy()
        Xb[0] = big
        d = np.sort(pdist(Xb))
        k = (d.size - 1) // 2  # the lower middle value (median_sigma's rule)
        assert median_sigma(Xb) == pytest.approx(d[k], rel=1e-9)
        assert JokerRegressor(sigma="median", lam=1.0, max_epochs=1).fit(Xb, X[:, 0]).sigma_ == \
            pytest.approx(d[k], rel=1e-9)


def test_median_bandwidth_beyond_float64_is_an_error_not_a_silent_default():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    X[0] = 1e200  # ordinary distances underflow once the rows are scaled to the outlier's magnitude
    with pytest.raises(ValueError, match="give sigma explicitly"):
        median_sigma(X)
    with pytest.raises(ValueError, match="give sigma explicitly"):
        JokerRegressor(sigma="median").fit(X, rng.standard_normal(50))


def _exact_krr(X, y, sigma, lam):
    """KRR from a kernel of direct differences (scipy cdist): the reference where the expansion cancels."""
    K = np.exp(-cdist(X, X, "sqeuclidean") / (2 * sigma**2))
    return K @ np.linalg.solve(K + lam * np.eye(len(y)), y)


@pytest.mark.parametrize("case", ["code", "clusters", "sparse_offset"])
def test_rows_far_from_the_centre_but_near_each_other_are_computed_exactly(case):
    # "code": 20 rows share the value 1e8 in one feature (a missing-value code); "clusters": two clusters
    # 1e10 apart, the median between them. The expanded distances among those rows cancel in float64
    # (wrong predictions with converged_=True, or an indefinite kernel); they now come from differences.
    rng = np.random.default_rng(10)
    X = rng.standard_normal((300, 4))
    y = np.sin(X[:, 1]) + 0.1 * rng.standard_normal(300)
    Xf = X
    if case == "code":
        X[:20, 0] = 1e8
    elif case == "clusters":
        X[150:] += 1e10
    else:  # sparse rows are not centred (that would densify them): a column at 1e8 puts every row far
        X[rng.random(X.shape) < 0.5] = 0.0
        X[:, 3] += 1e8
        Xf = sp.csr_matrix(X)
    est = JokerRegressor(sigma=2.0, lam=1.0, tol=1e-12, kkt_tol=1e-8).fit(Xf, y)
    assert est.converged_
    np.testing.assert_allclose(est.predict(Xf), _exact_krr(X, y, 2.0, 1.0), atol=1e-6)


def test_the_weak_duality_rule():
    # D(alpha) <= P(0) for every feasible alpha when K is PSD (Joker, Eq. 5); above it by more than
    # DIVERGE_SLACK P(0), or not finite, the solve is stopped. (An indefinite K - 5 11^T only stalls the
    # trust region at epoch 1: its block models reject every step, so the rule is tested on certificates.)
    from joker.certificates import Certificate
    from joker.solver import DIVERGE_SLACK, _Driver

    drv = _Driver.__new__(_Driver)
    drv.p0 = 100.0

    def cert(dual, primal=150.0):
        return Certificate(primal=primal, dual_objective=-dual, dual=dual, gap=0.1, kkt=0.1, kkt_abs=0.1)

    drv.check_bounded(3, cert(100.0))  # at P(0): an optimum at theta = 0
    drv.check_bounded(3, cert(100.0 * (1 + 0.5 * DIVERGE_SLACK)))  # within rounding's allowance
    for bad in (cert(100.0 * (1 + 2 * DIVERGE_SLACK)), cert(float("nan")), cert(50.0, primal=float("inf"))):
        with pytest.raises(DivergedError, match="at epoch 3"):
            drv.check_bounded(3, bad)


@pytest.mark.parametrize("make", [lambda: JokerRegressor(sigma=3.0, lam=1e-2),
                                  lambda: JokerClassifier(sigma=3.0, lam=1e-2, loss="hinge")])
def test_a_fit_that_diverges_leaves_the_estimator_unfitted(make, monkeypatch):
    import joker.solver

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5))
    y = np.sin(X[:, 0])
    est = make()
    target = y if isinstance(est, JokerRegressor) else np.where(y > 0, 1, -1)
    est.fit(X, target)  # a fine fit, then a diverging one on the same estimator
    assert est.converged_
    monkeypatch.setattr(joker.solver, "DIVERGE_SLACK", -2.0)  # any dual above -P(0): the check fires at once
    with pytest.raises(DivergedError, match="weak duality forbids"):
        est.fit(X, target)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    for attr in ("converged_", "dual_gap_", "X_center_", "sigma_", "alpha_", "history_"):  # nothing of either fit
        assert not hasattr(est, attr), attr
    with pytest.raises(NotFittedError):
        est.predict(X[:5])


def test_the_callers_inputs_are_never_reordered():
    # the selection partitions in place: only on the centre's own copy, whatever the layout
    rng = np.random.default_rng(3)
    for X in (rng.standard_normal((9, 1)), np.asfortranarray(rng.standard_normal((9, 4)))):
        before = X.copy()
        T = torch.from_numpy(X)  # shares X's memory
        np.testing.assert_array_equal(median_center(T).numpy(), np.median(before, 0))
        np.testing.assert_array_equal(X, before)
    tiny = np.array([[5e-324], [5e-324], [1.0]])  # equal middle values stay exact (no 0.5 * subnormal)
    assert median_center(torch.from_numpy(tiny)).item() == 5e-324


@pytest.mark.parametrize("c", [0.1, 0.3, 1 / 3, 0.7, 7.1])
def test_uniform_weights_give_the_unweighted_median(c):
    # running sums of c round near half the total: within a few ulps it is still the even split
    rng = np.random.default_rng(int(10 * c))
    for n in (2, 4, 10, 31):
        X = rng.standard_normal((n, 5))
        X[rng.random((n, 5)) < 0.4] = 0.0
        w = np.full(n, c)
        np.testing.assert_array_equal(median_center(torch.from_numpy(X), w).numpy(), np.median(X, 0))
        np.testing.assert_array_equal(median_center(sp.csr_matrix(X), w).numpy(), np.median(X, 0))


@pytest.mark.parametrize("sparse", [False, True])
def test_uniform_weights_are_a_rescaled_lam_with_random_features(sparse):
    # sum_i c loss_i + lam/2 ||f||^2 is c times the unweighted problem at lam / c: same centre, same features
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5)) + 1.0
    y = np.sin(X[:, 0])
    Xf = sp.csr_matrix(X) if sparse else X
    kw = dict(sigma=2.0, n_components=256, random_state=0, tol=1e-12, kkt_tol=1e-10, max_epochs=500)
    weighted = JokerRegressor(lam=0.1, **kw).fit(Xf, y, sample_weight=np.full(400, 0.1))
    plain = JokerRegressor(lam=1.0, **kw).fit(Xf, y)
    np.testing.assert_array_equal(weighted.X_center_.numpy(), plain.X_center_.numpy())
    np.testing.assert_allclose(weighted.predict(X[:50]), plain.predict(X[:50]), atol=1e-7)


def test_float32_warns_when_rows_far_from_the_centre_lose_their_mutual_distances():
    # two clusters 1e10 apart in float32: the cast after centring rounds every coordinate by ~600 sigma
    import warnings

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = np.sin(X[:, 1])
    one = X.copy()
    one[0] = 1e10  # a single far row: harmless, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        JokerRegressor(sigma=1.0, lam=1.0, dtype="float32").fit(one, y)
    two = X.copy()
    two[:100] += 1e10
    for kw in ({}, {"n_components": 64}):
        with pytest.warns(UserWarning, match="200 rows lie more than .* sigma from the inputs' centre"):
            JokerRegressor(sigma=1.0, lam=1.0, dtype="float32", **kw).fit(two, y)


def test_row_abs_max_of_sparse_rows_equals_the_dense_one():
    from joker.sparse import SparseRows, row_abs_max

    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 7))
    X[rng.random(X.shape) < 0.6] = 0.0
    X[5] = 0.0  # an empty row
    ref = np.abs(X).max(1)
    rows = SparseRows.from_scipy(sp.csr_matrix(X), torch.float64, "cpu")
    np.testing.assert_array_equal(row_abs_max(rows).numpy(), ref)
    np.testing.assert_array_equal(row_abs_max(rows.csr()).numpy(), ref)
    np.testing.assert_array_equal(row_abs_max(torch.from_numpy(X)).numpy(), ref)
