"""Regression and multiclass paths of the adapters that support them (small synthetic problems)."""

from __future__ import annotations

import numpy as np
import pytest

from adapterutil import require
from baselines import METHODS, get_adapter

REGRESSION = {  # solver id -> (loss, options)
    "joker-exact": ("squared", {}),
    "falkon": ("squared", {}),
    "eigenpro3": ("squared", {"epochs": 5}),
    "eigenpro4": ("squared", {"epochs": 5}),
    "thundersvm": ("epsilon_insensitive", {"epsilon": 0.1}),
    "libsvm": ("epsilon_insensitive", {"epsilon": 0.1}),
}
MULTICLASS = {
    "joker-exact": ("squared_hinge", {}),
    "falkon": ("squared", {}),
    "eigenpro3": ("squared", {"epochs": 5}),
    "eigenpro4": ("squared", {"epochs": 5}),
    "libsvm": ("hinge", {}),
}


@pytest.fixture(scope="module")
def friedman():
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=700, n_features=6, noise=0.5, random_state=0)
    mean, std = X[:500].mean(0), X[:500].std(0)
    X = (X - mean) / std
    y = (y - y[:500].mean()) / y[:500].std()
    return X[:500], y[:500], X[500:], y[500:]


@pytest.fixture(scope="module")
def blobs():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=450, centers=3, n_features=4, cluster_std=2.0, random_state=0)
    labels = np.array(["cat", "dog", "emu"])[y]
    return X[:300], labels[:300], X[300:], labels[300:]


@pytest.mark.parametrize("method", sorted(REGRESSION))
def test_regression_beats_the_mean(method, friedman):
    require(method)
    X, y, X_test, y_test = friedman
    loss, options = REGRESSION[method]
    adapter = get_adapter(method, task="regression", loss=loss, sigma=3.0, lam=1.0, **options).fit(X, y)
    pred = adapter.predict(X_test)
    assert pred.shape == y_test.shape and pred.dtype == np.float64 and adapter.classes_ is None
    rmse = np.sqrt(np.mean((pred - y_test) ** 2))
    assert rmse < 0.6 * np.std(y_test), f"{method}: RMSE {rmse:.3f}"
    np.testing.assert_array_equal(adapter.decision_function(X_test), pred)


def test_svr_thundersvm_agrees_with_libsvm(friedman):
    require("thundersvm")
    X, y, X_test, _ = friedman
    common = dict(task="regression", loss="epsilon_insensitive", sigma=3.0, lam=0.5, epsilon=0.2)
    libsvm = get_adapter("libsvm", **common).fit(X, y)
    thunder = get_adapter("thundersvm", **common).fit(X, y)
    np.testing.assert_allclose(thunder.predict(X_test), libsvm.predict(X_test), atol=1e-2)
    assert abs(thunder.n_support_vectors_ - libsvm.n_support_vectors_) <= 0.01 * libsvm.n_support_vectors_


@pytest.mark.parametrize("method", sorted(MULTICLASS))
def test_multiclass_with_string_labels(method, blobs):
    require(method)
    X, y, X_test, y_test = blobs
    loss, options = MULTICLASS[method]
    adapter = get_adapter(method, task="multiclass", loss=loss, sigma=3.0, lam=1.0, **options).fit(X, y)
    assert list(adapter.classes_) == ["cat", "dog", "emu"]
    scores = adapter.decision_function(X_test)
    assert scores.shape == (len(X_test), 3)
    pred = adapter.predict(X_test)
    np.testing.assert_array_equal(pred, adapter.classes_[np.argmax(scores, axis=1)])
    assert np.mean(pred == y_test) > 0.85


@pytest.mark.parametrize("method", ["thundersvm", "logfalkon"])
def test_unsupported_tasks_are_refused_with_a_reason(method):
    ok, reason = METHODS[method].supports("multiclass", 3)
    assert not ok and reason
    if method == "logfalkon":
        assert not METHODS[method].supports("regression", None)[0]
