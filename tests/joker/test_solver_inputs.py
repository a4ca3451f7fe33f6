"""Input handling: bad input fails clearly, odd-but-valid input works, labels, torch and float32."""

from __future__ import annotations

import numpy as np
import pytest

from joker import JokerClassifier, JokerRegressor

BAD = (ValueError, TypeError)


@pytest.fixture
def reg(refs):
    return refs.regression_data(n=80, d=4, seed=30)


@pytest.fixture
def cls(refs):
    return refs.classification_data(n=80, d=4, seed=30)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("Est", [JokerRegressor, JokerClassifier])
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_rejected(reg, cls, Est, where, bad):
    X, y = (reg if Est is JokerRegressor else cls)
    X, y = X.copy(), y.copy()
    if where == "X":
        X[3, 1] = bad
    else:
        y = y.astype(np.float64)
        y[5] = bad
    with pytest.raises(BAD, match=r"(?i)nan|inf|finite"):
        Est(sigma=1.0, max_epochs=5).fit(X, y)


@pytest.mark.parametrize("Est", [JokerRegressor, JokerClassifier])
def test_nan_at_predict_rejected(reg, cls, Est):
    X, y = (reg if Est is JokerRegressor else cls)
    est = Est(sigma=1.0, max_epochs=5).fit(X, y)
    Xb = X[:5].copy()
    Xb[0, 0] = np.nan
    with pytest.raises(BAD, match=r"(?i)nan|inf|finite"):
        est.predict(Xb)


@pytest.mark.parametrize("Est", [JokerRegressor, JokerClassifier])
def test_zero_samples_rejected(Est):
    with pytest.raises(BAD, match=r"(?i)0 sample|no sample|empty|at least (one|1|2)|minimum of"):
        Est(sigma=1.0).fit(np.zeros((0, 3)), np.zeros(0))


@pytest.mark.parametrize("Est", [JokerRegressor, JokerClassifier])
def test_length_mismatch_rejected(reg, cls, Est):
    X, y = (reg if Est is JokerRegressor else cls)
    with pytest.raises(BAD, match=r"(?i)inconsistent|mismatch|same number|length|number of samples"):
        Est(sigma=1.0).fit(X, y[:-3])


def test_one_class_rejected(cls):
    X, _ = cls
    with pytest.raises(BAD, match=r"(?i)class"):
        JokerClassifier(sigma=1.0).fit(X, np.ones(len(X)))


@pytest.mark.parametrize("Est", [JokerRegressor, JokerClassifier])
@pytest.mark.parametrize(
    "param,value",
    [
        ("sigma", 0.0),
        ("sigma", -1.0),
        ("lam", 0.0),
        ("lam", -0.5),
        ("block_size", 0),
        ("block_size", -4),
        ("n_components", 0),
        ("n_components", -10),
    ],
)
def test_bad_hyperparameters_rejected(reg, cls, Est, param, value):
    X, y = (reg if Est is JokerRegressor else cls)
    kw = {"sigma": 1.0, param: value}
    with pytest.raises(BAD, match=param):
        Est(**kw).fit(X, y)


@pytest.mark.parametrize("n_components", [None, 30])
@pytest.mark.parametrize("Est", [JokerRegressor, JokerClassifier])
def test_predict_wrong_number_of_features(reg, cls, Est, n_components):
    X, y = (reg if Est is JokerRegressor else cls)
    est = Est(sigma=1.0, n_components=n_components, max_epochs=5, random_state=0).fit(X, y)
    with pytest.raises(BAD, match=r"(?i)feature"):
        est.predict(X[:, :-1])
    with pytest.raises(BAD, match=r"(?i)feature"):
        est.predict(np.hstack([X, X[:, :1]]))


# ------------------------------------------------------ odd but valid input


def test_block_size_larger_than_n_is_clipped(refs, reg):
    X, y = reg
    n, lam = len(y), 0.3
    kw = dict(sigma=1.5, lam=lam, tol=1e-12, max_epochs=2000, random_state=0)
    big = JokerRegressor(block_size=100_000, **kw).fit(X, y)
    full = JokerRegressor(block_size=n, **kw).fit(X, y)
    ref = np.linalg.solve(refs.gaussian_kernel(X, X, 1.5) + lam * np.eye(n), y)
    assert refs.rel_err(big.alpha_, ref) <= 1e-6  # the KRR acceptance tolerance
    # clipped means the same fit as block_size = n (same seed): equal up to rounding
    assert refs.rel_err(big.alpha_, full.alpha_) <= 1e-10
    assert big.n_epochs_ == full.n_epochs_


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge", "logistic"])
@pytest.mark.parametrize("n_components", [None, 40])
def test_duplicate_rows_and_constant_columns(refs, cls, loss, n_components):
    X, y = cls
    X = np.hstack([X, np.full((len(X), 1), 3.0)])  # constant column
    X = np.vstack([X, X[:20]])                       # duplicate rows (same labels)
    y = np.concatenate([y, y[:20]])
    clf = JokerClassifier(loss=loss, sigma=1.5, lam=0.1, n_components=n_components, tol=1e-6, max_epochs=2000,
                          random_state=0).fit(X, y)
    fitted = clf.alpha_ if n_components is None else clf.coef_
    assert np.all(np.isfinite(fitted))
    assert np.all(np.isfinite(clf.decision_function(X)))
    assert np.isfinite(clf.dual_gap_) and clf.dual_gap_ <= 1e-6
    assert np.mean(clf.predict(X) == y) > 0.8


def test_duplicate_rows_krr_matches_solve(refs, reg):
    X, y = reg
    X = np.vstack([X, X[:10]])
    X[:, 0] = 1.0  # constant column too
    y = np.concatenate([y, y[:10] + 0.1])  # duplicated inputs with conflicting targets
    lam = 0.2
    est = JokerRegressor(sigma=1.5, lam=lam, tol=1e-12, max_epochs=3000, random_state=0).fit(X, y)
    ref = np.linalg.solve(refs.gaussian_kernel(X, X, 1.5) + lam * np.eye(len(y)), y)
    assert np.all(np.isfinite(est.alpha_))
    assert refs.rel_err(est.alpha_, ref) <= 1e-6


# -------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "labels",
    [(0, 1), (-1, 1), ("a", "b"), (2.0, -7.0), (True, False)],
    ids=["01", "pm1", "ab", "floats", "bool"],
)
def test_binary_labels_any_values(cls, labels):
    X, ypm = cls
    y = np.where(ypm > 0, labels[0], labels[1])
    clf = JokerClassifier(loss="squared_hinge", sigma=1.5, lam=0.1, max_epochs=500, random_state=0).fit(X, y)
    assert list(clf.classes_) == sorted(set(labels))
    df = clf.decision_function(X)
    assert df.shape == (len(X),)
    pred = clf.predict(X)
    assert set(np.unique(pred).tolist()) <= set(labels)
    # decision_function > 0 means classes_[1]
    assert np.array_equal(pred, clf.classes_[(df > 0).astype(int)])
    assert np.mean(pred == y) > 0.85
    assert np.mean(df[y == clf.classes_[1]] > 0) > 0.85


def test_multiclass_labels_and_order(refs):
    rng = np.random.default_rng(31)
    centers = np.array([[0, 3], [3, 0], [-3, -1]], dtype=float)
    names = np.array(["zebra", "apple", "mango"])
    idx = rng.integers(0, 3, 150)
    X = centers[idx] + 0.7 * rng.standard_normal((150, 2))
    y = names[idx]
    clf = JokerClassifier(loss="squared_hinge", sigma=1.5, lam=0.1, random_state=0).fit(X, y)
    assert list(clf.classes_) == ["apple", "mango", "zebra"]
    df = clf.decision_function(X)
    assert df.shape == (150, 3)
    assert np.array_equal(clf.predict(X), clf.classes_[np.argmax(df, axis=1)])
    assert np.mean(clf.predict(X) == y) > 0.95


@pytest.mark.parametrize("n_classes", [2, 3])
def test_predict_proba_logistic(refs, n_classes):
    rng = np.random.default_rng(32)
    X = rng.standard_normal((120, 3))
    y = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(120), [-0.4, 0.4][: n_classes - 1])
    clf = JokerClassifier(loss="logistic", sigma=1.5, lam=0.1, tol=1e-8, max_epochs=1000, random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    assert P.shape == (120, n_classes)
    assert np.all(P >= 0) and np.all(P <= 1)
    assert np.allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert np.array_equal(clf.classes_[np.argmax(P, axis=1)], clf.predict(X))
    if n_classes == 2:
        # the logistic model's own probability: P(classes_[1] | x) = 1 / (1 + exp(-f(x)))
        assert np.allclose(P[:, 1], refs.expit(clf.decision_function(X)), atol=1e-12)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_predict_proba_only_for_logistic(cls, loss):
    X, y = cls
    clf = JokerClassifier(loss=loss, sigma=1.5, max_epochs=20, random_state=0).fit(X, y)
    with pytest.raises((AttributeError, NotImplementedError, ValueError)):
        clf.predict_proba(X)


def test_regression_target_rejected_by_classifier(reg):
    X, y = reg
    with pytest.raises(BAD, match=r"(?i)label|class|target|continuous"):
        JokerClassifier(sigma=1.0).fit(X, y)


# ---------------------------------------------------------- torch and float32


@pytest.mark.parametrize("n_components", [None, 40])
def test_torch_cpu_tensors_accepted(reg, n_components):
    torch = pytest.importorskip("torch")
    X, y = reg
    kw = dict(sigma=1.5, lam=0.3, n_components=n_components, tol=1e-10, max_epochs=2000, random_state=0)
    a = JokerRegressor(**kw).fit(X, y)
    b = JokerRegressor(**kw).fit(torch.from_numpy(X), torch.from_numpy(y))
    pa = np.asarray(a.predict(X))
    pb = b.predict(torch.from_numpy(X))
    pb = pb.numpy() if hasattr(pb, "numpy") else np.asarray(pb)
    assert np.allclose(pa, pb, rtol=1e-8, atol=1e-10)


def test_torch_labels_for_classifier(cls):
    torch = pytest.importorskip("torch")
    X, y = cls
    yi = (y > 0).astype(np.int64)
    clf = JokerClassifier(sigma=1.5, max_epochs=200, random_state=0).fit(torch.from_numpy(X), torch.from_numpy(yi))
    assert sorted(np.asarray(clf.classes_).tolist()) == [0, 1]
    pred = clf.predict(torch.from_numpy(X))
    pred = pred.numpy() if hasattr(pred, "numpy") else np.asarray(pred)
    assert np.mean(pred == yi) > 0.85


@pytest.mark.parametrize("n_components", [None, 60])
@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_float32_close_to_float64(refs, loss, n_components):
    X, y = refs.regression_data(n=300, d=5, seed=33)
    kw = dict(loss=loss, sigma=1.5, lam=0.3, n_components=n_components, tol=1e-5, max_epochs=2000, random_state=0)
    e64 = JokerRegressor(dtype="float64", **kw).fit(X, y)
    e32 = JokerRegressor(dtype="float32", **kw).fit(X.astype(np.float32), y.astype(np.float32))
    p64, p32 = np.asarray(e64.predict(X)), np.asarray(e32.predict(X))
    assert np.all(np.isfinite(p32))
    assert refs.rel_err(p32, p64) <= 1e-2
    assert np.isfinite(e32.dual_gap_) and e32.dual_gap_ <= 1e-3


def test_float32_classifier_finite(refs):
    X, y = refs.classification_data(n=300, d=5, seed=34)
    kw = dict(loss="logistic", sigma=1.5, lam=0.3, tol=1e-5, max_epochs=2000, random_state=0)
    e64 = JokerClassifier(dtype="float64", **kw).fit(X, y)
    e32 = JokerClassifier(dtype="float32", **kw).fit(X.astype(np.float32), y)
    d64, d32 = e64.decision_function(X), np.asarray(e32.decision_function(X))
    assert np.all(np.isfinite(d32))
    assert refs.rel_err(d32, d64) <= 1e-2
    assert np.mean(np.sign(d32) == np.sign(d64)) >= 0.98
