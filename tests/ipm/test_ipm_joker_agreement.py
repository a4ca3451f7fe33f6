"""The IPM as the exact reference of joker-inexact: the L1-SVC without bias on the same random features.

Both minimise P(w) = lam/2 ||w||^2 + sum_i max(0, 1 - y_i psi(x_i) . w), strongly convex with
modulus lam, so lam/2 ||w - w*||^2 <= P(w) - P* <= P(w) - D(a) for any dual-feasible a, and
|f(x) - f*(x)| <= ||psi(x)|| ||w - w*|| with ||psi(x)||^2 <= 2 for random Fourier features.
For the hinge loss the decision error therefore scales like sqrt(gap), not like the gap.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from joker import JokerClassifier
from joker.ipm import LowRankIPMClassifier

LAM, SIGMA, K = 1.0, 3.0, 50


@pytest.fixture(scope="module")
def fits(data):
    X, y = data(2000, seed=0)
    X_test, _ = data(500, seed=7)
    # the reference is solved far below Joker's gaps: at the IPM's default 1e-8 its own hinge-loss
    # solution is only sqrt(gap)-close (5e-10 gap: 1e-5 relative in f), which hid Joker's accuracy
    ipm = LowRankIPMClassifier(lam=LAM, sigma=SIGMA, n_components=K, fit_intercept=False, tol=1e-12,
                               random_state=0).fit(X, y)
    jokers = {tol: JokerClassifier(loss="hinge", sigma=SIGMA, lam=LAM, n_components=K, tol=tol, max_epochs=20000,
                                   random_state=0).fit(X, y) for tol in (1e-8, 1e-10)}
    return X_test, ipm, jokers


def test_same_features(fits):
    _, ipm, jokers = fits
    fm = jokers[1e-8].feature_map_
    assert torch.equal(ipm.feature_map_.W_, fm.W_) and torch.equal(ipm.feature_map_.b_, fm.b_)


def test_objectives_agree_to_the_gaps(fits):
    _, ipm, jokers = fits
    assert ipm.converged_ and ipm.dual_gap_ <= 1e-12
    for tol, jk in jokers.items():
        assert jk.converged_ and jk.dual_gap_ <= tol
        # the IPM's dual bounds Joker's primal from below; Joker is within its own gap of it
        assert ipm.dual_ <= jk.primal_ * (1 + 1e-14)
        assert (jk.primal_ - ipm.dual_) / jk.primal_ <= tol + ipm.dual_gap_


def test_decision_functions_within_certified_bound(fits):
    X_test, ipm, jokers = fits
    f_ipm = ipm.decision_function(X_test)
    for jk in jokers.values():
        bound = np.sqrt(2.0) * (np.sqrt(2.0 * (jk.primal_ - ipm.dual_) / LAM)
                                + np.sqrt(2.0 * (ipm.primal_ - ipm.dual_) / LAM))
        assert np.abs(jk.decision_function(X_test) - f_ipm).max() <= bound


def test_decision_functions_agree_to_1e6(fits):
    # Measured on this problem (features centred at the median, 2026-12-04): Joker at a 9.7e-9 gap is
    # 1.1e-5 (max) / 1.6e-6 (relative 2-norm) from the IPM optimum (gap < 1e-12); at 8.5e-10 1.05e-6 /
    # 1.6e-7; at 9.8e-11 9.6e-8 / 1.5e-8 (the error falls as sqrt(gap), module docstring).
    X_test, ipm, jokers = fits
    f_ipm = ipm.decision_function(X_test)
    f8 = jokers[1e-8].decision_function(X_test)
    assert np.linalg.norm(f8 - f_ipm) / np.linalg.norm(f_ipm) <= 2e-6
    assert np.abs(jokers[1e-10].decision_function(X_test) - f_ipm).max() <= 1e-6
