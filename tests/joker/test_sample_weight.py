"""sample_weight and class_weight (issue 26): the weighted dual of docs/dual.md s.6.

On real data (a9a, ijcnn1 and HEPC subsets from the shared mirror, the
digits): decision functions against scikit-learn's SVC (hinge, C = 1/lam,
gamma = 1/(2 sigma^2)) and KernelRidge (squared loss, alpha = lam) with the
same weights; integer weights against repeated rows and weight 0 against the
row left out, for every loss, exact kernel and random features, both inner
solvers; the certificate against P_w and J_w evaluated here from the
fitted alpha; and the errors of bad weights.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from sklearn.datasets import load_digits
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight

from joker import JokerClassifier, JokerRegressor

SIGMA = 4.0  # a9a and ijcnn1 are standardised (123 and 22 features)
GAMMA = 1.0 / (2.0 * SIGMA**2)
TIGHT = dict(max_epochs=5000, random_state=0)


def _load(name, n_train, n_test):
    from joker.data import load_dataset

    ds = load_dataset(name, n_train=n_train, n_test=n_test, seed=0, dtype="float64", progress=False)
    return ds.X_train, ds.y_train, ds.X_test


@pytest.fixture(scope="module")
def a9a():
    return _load("a9a", 1500, 500)


@pytest.fixture(scope="module")
def ijcnn1():
    return _load("ijcnn1", 400, 200)


@pytest.fixture(scope="module")
def hepc():
    return _load("hepc", 1500, 500)


def _weights(n, seed, zeros=0, integer=False):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 4, n).astype(float) if integer else rng.uniform(0.2, 3.0, n)
    if zeros:
        w[rng.choice(n, zeros, replace=False)] = 0.0
    return w


# ------------------------------------------------------------------------ SVC


def _svc_without_bias(K, Kt, y, C, sample_weight=None, class_weight=None):
    """SVC's decision values at ``Kt`` for its problem with the bias held at 0 (Joker's model has no bias).

    Two extra rows with a zero kernel row and column (labels classes[1] and
    classes[0]) have f = b. While |b| < 1 both sit at their upper bounds
    C_+ and C_-, so they add (C_- - C_+) b = t b to SVC's primal, and SVC
    minimises P(w, b) + t b. Its bias b(t) decreases in t; at the root of
    b(t) (brentq) the solve is SVC's at b = 0, whose w minimises the primal
    without bias. The extra rows' sample weights divide out their class
    weights, so that C_+ = C (1 + max(-t, 0)) and C_- = C (1 + max(t, 0)).
    Returns (decision values, fitted SVC).
    """
    classes = np.unique(y)
    n = len(y)
    Ka = np.zeros((n + 2, n + 2))
    Ka[:n, :n] = K
    Kta = np.zeros((Kt.shape[0], n + 2))
    Kta[:, :n] = Kt
    ya = np.r_[y, classes[1], classes[0]]
    sw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    cw = compute_class_weight(class_weight, classes=classes, y=ya) if class_weight is not None else np.ones(2)

    def fit(t):
        s = np.r_[sw, (1.0 + max(-t, 0.0)) / cw[1], (1.0 + max(t, 0.0)) / cw[0]]
        return SVC(kernel="precomputed", C=C, tol=1e-10, class_weight=class_weight).fit(Ka, ya, sample_weight=s)

    span = 10.0 * C * float(sw.sum() * cw.max())
    t = brentq(lambda t: float(fit(t).intercept_[0]), -span, span, xtol=1e-12, rtol=1e-14)
    svc = fit(t)
    return svc.decision_function(Kta), svc


def _far_rows(d, classes):
    """Two rows of each class kernel-orthogonal (exp(-1e6 d / 32) = 0) to the data and to each other."""
    far = np.full((2, d), 1e3)
    far[1] *= -1.0
    return far, np.array([classes[1], classes[0]])


CASES = {
    "sample_weight": dict(sample_weight=("zeros",), class_weight=None),
    "balanced": dict(sample_weight=None, class_weight="balanced"),
    "dict": dict(sample_weight=None, class_weight="dict"),
    "balanced+sample_weight": dict(sample_weight=("positive",), class_weight="balanced"),
    "dict+sample_weight": dict(sample_weight=("zeros",), class_weight="dict"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hinge_equals_svc_with_the_same_weights(refs, a9a, case):
    """L1-SVC with sample and class weights: the decision function of SVC with the same weights, to 1e-5."""
    X, y, Xt = a9a
    classes = np.unique(y)
    C = 2.0
    spec = CASES[case]
    sw = None
    if spec["sample_weight"] is not None:
        sw = _weights(len(y), seed=1, zeros=60 if spec["sample_weight"][0] == "zeros" else 0)
    cw = {classes[0]: 0.5, classes[1]: 3.0} if spec["class_weight"] == "dict" else spec["class_weight"]

    K, Kt = refs.gaussian_kernel(X, X, SIGMA), refs.gaussian_kernel(Xt, X, SIGMA)
    # SVC(kernel="precomputed") mishandles weight-0 rows (scikit-learn 1.9.1: decision values off by
    # up to 9.6 against dropping them; kernel="rbf" agrees), so the reference drops them: weight 0
    # means the row left out. The Joker fit keeps them.
    keep = np.ones(len(y), bool) if sw is None else sw > 0
    ref, svc = _svc_without_bias(K[np.ix_(keep, keep)], Kt[:, keep], y[keep], C,
                                 None if sw is None else sw[keep], cw)
    assert abs(svc.intercept_[0]) < 1e-8
    assert svc.n_support_.sum() > 100

    Xj, yj, swj = X, y, sw
    if cw == "balanced":  # the reference's two extra rows count in "balanced": give Joker two as well
        far, yfar = _far_rows(X.shape[1], classes)
        Xj, yj = np.vstack([X, far]), np.r_[y, yfar]
        swj = None if sw is None else np.r_[sw, 1.0, 1.0]
    m = JokerClassifier(loss="hinge", sigma=SIGMA, lam=1.0 / C, tol=1e-9, class_weight=cw, **TIGHT)
    m.fit(Xj, yj, sample_weight=swj)
    assert m.converged_
    assert refs.rel_err(m.decision_function(Xt), ref) <= 1e-5
    if cw is not None:
        assert np.allclose(m.class_weight_, compute_class_weight(cw, classes=classes, y=yj), rtol=1e-15)


# ---------------------------------------------------------------- KernelRidge


def test_squared_loss_equals_kernel_ridge_with_the_same_sample_weight(refs, hepc):
    X, y, Xt = hepc
    lam = 0.5
    sw = _weights(len(y), seed=2, zeros=40)
    ref = KernelRidge(alpha=lam, kernel="rbf", gamma=GAMMA).fit(X, y, sample_weight=sw).predict(Xt)
    m = JokerRegressor(loss="squared", sigma=SIGMA, lam=lam, tol=1e-13, **TIGHT).fit(X, y, sample_weight=sw)
    assert refs.rel_err(m.predict(Xt), ref) <= 1e-5
    assert np.all(m.alpha_[sw == 0] == 0.0)


def test_squared_loss_classifier_balanced_equals_kernel_ridge(refs, a9a):
    """KRR on +-1 labels with class_weight="balanced": KernelRidge with compute_sample_weight's weights."""
    X, y, Xt = a9a
    lam = 1.0
    ypm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    ref = KernelRidge(alpha=lam, kernel="rbf", gamma=GAMMA).fit(
        X, ypm, sample_weight=compute_sample_weight("balanced", y)).predict(Xt)
    m = JokerClassifier(loss="squared", sigma=SIGMA, lam=lam, tol=1e-13, class_weight="balanced", **TIGHT).fit(X, y)
    assert refs.rel_err(m.decision_function(Xt), ref) <= 1e-5


# ------------------------------------------------- repeated rows, dropped rows

CLF_LOSSES = ["hinge", "squared_hinge", "logistic", "squared", "odm"]
REG_LOSSES = ["squared", "huber", "epsilon_insensitive"]


def _repeated_pair(est, X, y, w):
    """(weighted fit, fit on the rows repeated w times), the same estimator parameters."""
    a = est.__class__(**est.get_params()).fit(X, y, sample_weight=w)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    b = est.__class__(**est.get_params()).fit(X[idx], y[idx])
    return a, b


@pytest.mark.parametrize("n_components", [None, 300])
@pytest.mark.parametrize("loss", CLF_LOSSES)
def test_integer_weights_equal_repeated_rows_classifier(refs, ijcnn1, loss, n_components):
    X, y, Xt = ijcnn1
    w = _weights(len(y), seed=3, integer=True)  # 0 to 3: rows left out, kept, repeated
    est = JokerClassifier(loss=loss, sigma=SIGMA, lam=0.05, n_components=n_components, tol=1e-12, **TIGHT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # piecewise-linear losses may stall at their float64 floor
        a, b = _repeated_pair(est, X, y, w)
    assert a.dual_gap_ <= 1e-9 and b.dual_gap_ <= 1e-9
    assert refs.rel_err(a.decision_function(Xt), b.decision_function(Xt)) <= 1e-5
    if n_components is None:
        assert np.all(a.alpha_[w == 0] == 0.0)
        # the weighted alpha of a row is the sum of its copies' alphas (docs/dual.md s.6)
        idx = np.repeat(np.arange(len(y)), w.astype(int))
        summed = np.bincount(idx, weights=b.alpha_, minlength=len(y))
        assert refs.rel_err(refs.gaussian_kernel(Xt, X, SIGMA) @ summed, a.decision_function(Xt)) <= 1e-5


@pytest.mark.parametrize("n_components", [None, 300])
@pytest.mark.parametrize("loss", REG_LOSSES)
def test_integer_weights_equal_repeated_rows_regressor(refs, hepc, loss, n_components):
    X, y, Xt = (A[:400] for A in hepc)
    w = _weights(len(y), seed=4, integer=True)
    Y = np.column_stack([y, np.sin(X[:, 0]) + y])  # two outputs, one weight per row
    # SVR on random features converges slowly to tight gaps (about 100 epochs to 1e-6 on either
    # fit); its decision functions already agree to 1e-7 there.
    tol = 1e-6 if loss == "epsilon_insensitive" and n_components else 1e-12
    est = JokerRegressor(loss=loss, sigma=SIGMA, lam=0.05, n_components=n_components, tol=tol, **TIGHT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = _repeated_pair(est, X, Y, w)
    assert a.dual_gap_ <= max(tol, 1e-9) and b.dual_gap_ <= max(tol, 1e-9)
    assert refs.rel_err(a.predict(Xt), b.predict(Xt)) <= 1e-5


@pytest.mark.parametrize("inner", ["cd", "cg"])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "odm"])
def test_zero_weight_equals_dropping_the_row_both_inner_solvers(refs, ijcnn1, loss, inner):
    """Weight 0 is the row left out, with the compiled coordinate solver and with torch's CG-Steihaug path."""
    X, y, Xt = ijcnn1
    w = _weights(len(y), seed=5, zeros=80)
    kw = dict(loss=loss, sigma=SIGMA, lam=0.05, tol=1e-11, solver_options={"inner": inner}, **TIGHT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = JokerClassifier(**kw).fit(X, y, sample_weight=w)
        keep = w > 0
        b = JokerClassifier(**kw).fit(X[keep], y[keep], sample_weight=w[keep])
    assert np.all(a.alpha_[~keep] == 0.0)
    assert refs.rel_err(a.alpha_[keep], b.alpha_) <= 1e-5
    assert refs.rel_err(a.decision_function(Xt), b.decision_function(Xt)) <= 1e-5


# ------------------------------------------------------------- multi-output


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    keep = y < 4
    X = X[keep][:480] / 16.0
    return X[:360], y[keep][:360], X[360:]


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
def test_class_weight_equals_repeating_the_class_rows_multiclass(refs, digits, multi_class):
    """A row keeps its class's weight in every output: class_weight {1: 2, 3: 3} is class 1 twice, class 3 thrice."""
    X, y, Xt = digits
    kw = dict(loss="hinge", sigma=2.5, lam=0.1, tol=1e-10, multi_class=multi_class, **TIGHT)
    a = JokerClassifier(class_weight={1: 2, 3: 3}, **kw).fit(X, y)
    idx = np.repeat(np.arange(len(y)), np.select([y == 1, y == 3], [2, 3], 1))
    b = JokerClassifier(**kw).fit(X[idx], y[idx])
    c = JokerClassifier(**kw).fit(X, y, sample_weight=np.select([y == 1, y == 3], [2.0, 3.0], 1.0))
    assert a.alpha_.shape[1] == (4 if multi_class == "ovr" else 6)
    assert refs.rel_err(a.decision_function(Xt), b.decision_function(Xt)) <= 1e-5
    assert refs.rel_err(a.decision_function(Xt), c.decision_function(Xt)) <= 1e-9
    assert a.class_weight_.tolist() == [1.0, 2.0, 1.0, 3.0]


# ----------------------------------------------------------------- certificate


def _weighted_objectives(loss, K, y, a, w, lam):
    """P_w and J_w of docs/dual.md s.6 from a full kernel matrix (labels +-1, one output)."""
    f = K @ a
    pos = w > 0
    ws = np.where(pos, w, 1.0)
    if loss == "hinge":
        ell, h = np.maximum(0.0, 1.0 - y * f), -y * a
    elif loss == "squared_hinge":
        ell, h = 0.5 * np.maximum(0.0, 1.0 - y * f) ** 2, lam * a**2 / (2 * ws) - y * a
    elif loss == "squared":
        ell, h = 0.5 * (y - f) ** 2, lam * a**2 / (2 * ws) - y * a
    elif loss == "logistic":
        p = np.clip(lam * y * a / ws, 0.0, 1.0)
        ell = np.logaddexp(0.0, -y * f)
        h = ws / lam * (np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
                        + np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1.0)), 0.0))
    else:
        raise ValueError(loss)
    P = 0.5 * lam * a @ f + np.sum(w * ell)
    J = 0.5 * a @ f + np.sum(np.where(pos, h, 0.0))
    return P, J


@pytest.mark.parametrize("max_epochs", [1, 5000])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic", "squared"])
def test_certificate_is_that_of_the_weighted_problem(refs, ijcnn1, loss, max_epochs):
    """P, J and the gap reported equal P_w, J_w evaluated here, converged (gap <= tol) or stopped early."""
    X, y, _ = ijcnn1
    lam, tol = 0.05, 1e-8
    w = _weights(len(y), seed=6, zeros=30) * np.where(y > 0, 3.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_epochs=1 stops before tol, on purpose
        m = JokerClassifier(loss=loss, sigma=SIGMA, lam=lam, tol=tol, max_epochs=max_epochs, random_state=0)
        m.fit(X, y, sample_weight=w)
    ypm = np.where(y == m.classes_[1], 1.0, -1.0)
    a = m.alpha_
    if loss in ("hinge", "logistic"):  # box: 0 <= y alpha <= w / lam
        assert np.all(ypm * a >= 0.0) and np.all(ypm * a <= w / lam * (1 + 1e-12))
    assert np.all(a[w == 0] == 0.0)
    P, J = _weighted_objectives(loss, refs.gaussian_kernel(X, X, SIGMA), ypm, a, w, lam)
    assert m.primal_ == pytest.approx(P, rel=1e-10)
    assert m.dual_objective_ == pytest.approx(J, rel=1e-10, abs=1e-10 * abs(P))
    assert m.dual_gap_ == pytest.approx((P + lam * J) / P, rel=1e-6, abs=1e-12)
    if max_epochs > 1:
        assert m.converged_ and m.dual_gap_ <= tol
    else:
        assert m.dual_gap_ > tol  # an early stop is certified as such


# ------------------------------------------------------------------ intake


def test_weights_of_any_container_and_the_caller_array_untouched(refs, ijcnn1):
    import torch

    X, y, Xt = (A[:150] for A in ijcnn1)
    w = _weights(len(y), seed=7, zeros=10)
    kept = w.copy()
    kw = dict(loss="hinge", sigma=SIGMA, lam=0.1, tol=1e-10, **TIGHT)
    ref = JokerClassifier(**kw).fit(X, y, sample_weight=w).decision_function(Xt)
    assert np.array_equal(w, kept)
    for container in (list, torch.as_tensor, lambda v: np.repeat(v, 2)[::2]):  # strided view
        got = JokerClassifier(**kw).fit(X, y, sample_weight=container(w)).decision_function(Xt)
        assert refs.rel_err(got, ref) <= 1e-12
    ones = JokerClassifier(**kw).fit(X, y, sample_weight=np.ones(len(y))).decision_function(Xt)
    assert refs.rel_err(ones, JokerClassifier(**kw).fit(X, y).decision_function(Xt)) <= 1e-9


@pytest.mark.parametrize("bad, err, match", [
    (lambda n: -np.ones(n), ValueError, "must be >= 0"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], ValueError, "NaN or infinity"),
    (lambda n: np.r_[np.inf, np.ones(n - 1)], ValueError, "NaN or infinity"),
    (lambda n: np.ones(n + 1), ValueError, r"must have shape \(40,\)"),
    (lambda n: np.ones((n, 2)), ValueError, r"must have shape \(40,\)"),
    (lambda n: 2.0, ValueError, r"must have shape \(40,\)"),
    (lambda n: np.zeros(n), ValueError, "zero for every sample"),
    (lambda n: np.array(["a"] * n), TypeError, "must hold numbers"),
])
@pytest.mark.parametrize("cls", [JokerClassifier, JokerRegressor])
def test_bad_sample_weight_is_a_clear_error(bad, err, match, cls):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(err, match=match) as info:
        cls(sigma=1.0).fit(X, y, sample_weight=bad(40))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("class_weight, sample_weight, err, match", [
    ("bogus", None, ValueError, "class_weight must be None"),
    (3, None, TypeError, "class_weight must be None"),
    ({1: -1.0}, None, ValueError, r"class_weight\[1\] must be a finite number >= 0"),
    ({1: float("nan")}, None, ValueError, "finite number"),
    ({"nope": 2.0}, None, ValueError, "not in class_weight"),
    (None, "one class", ValueError, "at least 2 classes"),
    ({-1: 0.0}, None, ValueError, "at least 2 classes"),
    ({-1: 0.0, 1: 0.0}, None, ValueError, "zero for every sample"),
])
def test_bad_class_weight_is_a_clear_error(class_weight, sample_weight, err, match):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    sw = (y > 0).astype(float) if sample_weight == "one class" else None
    with pytest.raises(err, match=match):
        JokerClassifier(sigma=1.0, class_weight=class_weight).fit(X, y, sample_weight=sw)


def test_the_one_weighted_class_is_named_plainly():
    X = np.random.default_rng(0).standard_normal((40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(ValueError) as info:
        JokerClassifier(sigma=1.0).fit(X, y, sample_weight=(y > 0).astype(float))
    assert str(info.value).endswith("leave only class 1")  # not np.int64(1)
