"""One-vs-rest multi-class on scikit-learn's bundled digits (10 classes, 1,797 x 64)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from joker import JokerClassifier
from joker.kernels import median_sigma


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)


@pytest.mark.parametrize("loss,lam", [("squared", 0.1), ("squared_hinge", 0.1), ("logistic", 0.1)])
def test_digits_one_vs_rest_accuracy(digits, loss, lam):
    Xtr, Xte, ytr, yte = digits
    sigma = float(median_sigma(Xtr))
    assert 1.0 < sigma < 5.0  # median distance of digits/16 is about 2.6
    clf = JokerClassifier(loss=loss, kernel="gaussian", sigma=sigma, lam=lam, block_size=256, tol=1e-3,
                          max_epochs=200, random_state=0)
    clf.fit(Xtr, ytr)
    assert list(clf.classes_) == list(range(10))
    assert clf.alpha_.shape == (len(ytr), 10)
    df = clf.decision_function(Xte)
    assert df.shape == (len(yte), 10)
    pred = clf.predict(Xte)
    assert np.array_equal(pred, clf.classes_[np.argmax(df, axis=1)])
    acc = float(np.mean(pred == yte))
    assert acc >= 0.95, f"{loss}: test accuracy {acc:.4f}"
    assert clf.dual_gap_ <= 1e-3
    if loss == "logistic":
        P = clf.predict_proba(Xte)
        assert P.shape == (len(yte), 10)
        assert np.allclose(P.sum(axis=1), 1.0, atol=1e-10)
        assert np.array_equal(np.argmax(P, axis=1), np.argmax(df, axis=1))
