"""One-vs-one multi-class (``multi_class="ovo"``): every pair of classes in one multi-output solve.

References: the same pairs fitted one by one as binary problems (the pair's
rows only), scikit-learn's OneVsOneClassifier around the binary estimator,
and SVC's accuracy on the digits.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits, make_classification
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsOneClassifier
from sklearn.svm import SVC

from joker import JokerClassifier
from joker.losses import HingeLoss, SquaredHingeLoss
from joker.solver import HINGE_BLOCK, auto_block_size


@pytest.mark.parametrize("loss", [HingeLoss(), SquaredHingeLoss()])
def test_a_label_0_is_an_absent_row(loss):
    y = torch.tensor([[1.0], [-1.0], [0.0]])
    u = torch.tensor([[0.2], [0.5], [-3.0]])
    lo, hi = loss.box(y, 0.5)
    assert lo[2, 0] == hi[2, 0] == 0.0  # held at 0
    assert lo[0, 0] == 0.0 and hi[1, 0] == 0.0 and hi[0, 0] > 0.0 and lo[1, 0] < 0.0  # +-1 unchanged
    p = loss.primal(y, u)
    assert p[2, 0] == 0.0 and p[0, 0] > 0.0 and p[1, 0] > 0.0
    assert loss.h(torch.zeros_like(y), y, 0.5)[2, 0] == 0.0


def _data(n_classes=4, n=240, seed=0):
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, n_redundant=0,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=seed)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_each_pair_is_the_binary_problem_on_its_rows(loss):
    Xtr, Xte, ytr, yte = _data()
    kw = dict(loss=loss, sigma=2.0, lam=0.05, tol=1e-9, kkt_tol=1e-7, max_epochs=2000, random_state=0,
              block_size=64)
    ovo = JokerClassifier(multi_class="ovo", **kw).fit(Xtr, ytr)
    assert ovo.converged_ and ovo.alpha_.shape == (len(ytr), 6)  # 4 classes: 6 pairs
    raw = ovo._decision(Xte)  # the pairs' decision values
    for k, (i, j) in enumerate(itertools.combinations(range(4), 2)):
        rows = np.isin(ytr, [i, j])
        assert np.all(ovo.alpha_[~rows, k] == 0.0)  # the other classes' rows never move
        pair = JokerClassifier(**kw).fit(Xtr[rows], ytr[rows])  # classes_[1] = j is +1, as in the pair
        assert np.allclose(raw[:, k], pair.decision_function(Xte), atol=1e-5, rtol=1e-5), (i, j)
        assert ovo.dual_gap_ <= 1e-9
    # the votes are scikit-learn's: OneVsOneClassifier around the binary estimator predicts the same
    ref = OneVsOneClassifier(JokerClassifier(**kw)).fit(Xtr, ytr)
    assert np.array_equal(ovo.predict(Xte), ref.predict(Xte))
    assert np.allclose(ovo.decision_function(Xte), ref.decision_function(Xte), atol=1e-5)


def test_digits_one_vs_one_matches_svc():
    """SVC trains one-vs-one: Joker one-vs-one at the same C and gamma predicts as it does (C = 10)."""
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X / 16.0, y, train_size=1400, random_state=0, stratify=y)
    sigma = 2.5
    svc = SVC(C=10.0, gamma=1.0 / (2 * sigma**2)).fit(Xtr, ytr)
    for loss in ("hinge", "squared_hinge"):
        clf = JokerClassifier(loss=loss, sigma=sigma, lam=0.1, multi_class="ovo", random_state=0).fit(Xtr, ytr)
        assert clf.converged_ and clf.block_size_ == HINGE_BLOCK
        df = clf.decision_function(Xte)
        assert df.shape == (len(yte), 10) and np.array_equal(clf.predict(Xte), clf.classes_[df.argmax(1)])
        agree = np.mean(clf.predict(Xte) == svc.predict(Xte))
        assert agree >= 0.99, (loss, agree)
        assert abs(np.mean(clf.predict(Xte) == yte) - np.mean(svc.predict(Xte) == yte)) <= 0.003


def test_two_classes_and_tensors_and_errors():
    Xtr, Xte, ytr, yte = _data(n_classes=2)
    a = JokerClassifier(loss="hinge", sigma=2.0, lam=0.1, multi_class="ovo", random_state=0).fit(Xtr, ytr)
    b = JokerClassifier(loss="hinge", sigma=2.0, lam=0.1, random_state=0).fit(Xtr, ytr)
    assert np.array_equal(a.alpha_, b.alpha_)  # two classes: one output either way
    Xtr, Xte, ytr, yte = _data(n_classes=3)
    clf = JokerClassifier(loss="squared_hinge", sigma=2.0, lam=0.1, multi_class="ovo", random_state=0)
    clf.fit(torch.as_tensor(Xtr), torch.as_tensor(ytr))
    df = clf.decision_function(torch.as_tensor(Xte))
    assert torch.is_tensor(df) and df.shape == (len(yte), 3)
    assert np.allclose(df.numpy(), clf.decision_function(Xte))
    with pytest.raises(ValueError, match='multi_class must be "ovr" or "ovo"'):
        JokerClassifier(multi_class="crammer_singer").fit(Xtr, ytr)
    with pytest.raises(ValueError, match='multi_class="ovo" needs loss "hinge" or "squared_hinge"'):
        JokerClassifier(loss="logistic", multi_class="ovo").fit(Xtr, ytr)
    with pytest.raises(ValueError, match=r"alpha0 must have shape \(168, 3\)"):
        JokerClassifier(loss="hinge", sigma=2.0, multi_class="ovo").fit(Xtr, ytr, alpha0=np.zeros((168, 5)))


def test_auto_block_size_of_pairs():
    assert auto_block_size("squared_hinge", True, "cpu") == 256
    assert auto_block_size("squared_hinge", True, "cpu", pairwise=True) == HINGE_BLOCK
    assert auto_block_size("squared_hinge", False, "cpu", pairwise=True) == 256  # random features
    assert auto_block_size("hinge", True, "cpu", pairwise=True) == HINGE_BLOCK


def test_a_refit_that_fails_leaves_the_estimator_unfitted():
    """Tester: a failed one-vs-one refit left the one-vs-rest model answering as pairs (IndexError, 6 % accuracy)."""
    from sklearn.exceptions import NotFittedError

    Xtr, Xte, ytr, yte = _data(n_classes=4)
    clf = JokerClassifier(loss="hinge", sigma=2.0, lam=0.1, random_state=0).fit(Xtr, ytr)
    clf.set_params(multi_class="ovo")
    with pytest.raises(ValueError, match="alpha0 must have shape"):
        clf.fit(Xtr, ytr, alpha0=np.zeros((len(ytr), 4)))  # 4 classes: 6 pairs
    with pytest.raises(NotFittedError):
        clf.predict(Xte)
    clf = JokerClassifier(loss="hinge", sigma=2.0, lam=0.1, random_state=0).fit(Xtr, ytr)
    clf.set_params(multi_class="ovo", loss="logistic")
    with pytest.raises(ValueError, match="needs loss"):
        clf.fit(Xtr, ytr)  # refused before anything changed: the one-vs-rest model still answers
    assert not clf._ovo and clf.alpha_.shape == (len(ytr), 4)
    assert clf.score(Xte, yte) == JokerClassifier(loss="hinge", sigma=2.0, lam=0.1, random_state=0).fit(
        Xtr, ytr).score(Xte, yte)
