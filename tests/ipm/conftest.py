"""Shared data for the low-rank IPM tests (tests/ipm)."""

from __future__ import annotations

import numpy as np
import pytest


def two_class_data(n, d=10, seed=0, noise=0.3, imbalance=0.0):
    """Synthetic 2-class data: sign(x0 + x1^2/2 - 1/2 + imbalance + noise), labels -1/+1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sign(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 + imbalance + noise * rng.standard_normal(n))
    y[y == 0] = 1.0
    return X, y


@pytest.fixture(scope="session")
def data():
    """The data factory :func:`two_class_data`."""
    return two_class_data
