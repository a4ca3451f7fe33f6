"""A toy method added the documented way (tests/bench/test_add_method.py): kernel ridge by a dense solve.

One file (this adapter), one YAML (``tests/bench/conf/method/_test_krr.yaml``)
and one registry line (``JOKER_BENCH_ADAPTERS="_test_krr=<this file>:ToyKRRAdapter"``,
the out-of-tree form of a line in ``baselines/registry.py``).

Kernel ridge regression with the benchmark's conventions: Gaussian kernel
``exp(-||x - z||^2 / (2 sigma^2))`` and ``lam`` on the sum of squared losses,
``P(f) = lam/2 ||f||^2 + sum_i (y_i - f(x_i))^2 / 2``, whose minimiser is
``f = K(., X) alpha`` with ``(K + lam I) alpha = y``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from baselines.base import Adapter, Budget


def gaussian(A: np.ndarray, B: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian kernel matrix of shape (len(A), len(B))."""
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * sigma**2))


class ToyKRRAdapter(Adapter):
    """``_test_krr``: exact kernel ridge regression, ``alpha = (K + lam I)^{-1} y`` (numpy only)."""

    name = "_test_krr"
    module = "numpy"
    losses = {"regression": ("squared",)}
    signal = "none (direct solve)"

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        return {"est_bytes": 8 * (2 * n * n + n * d)}

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        self.X_ = X.astype(np.float64)
        K = gaussian(self.X_, self.X_, self.sigma)
        self.alpha_ = np.linalg.solve(K + self.lam * np.eye(len(K)), target)

    def _decision(self, X: np.ndarray) -> np.ndarray:
        return gaussian(X.astype(np.float64), self.X_, self.sigma) @ self.alpha_

    def _describe(self) -> dict[str, Any]:
        return {"conversions": {"formulas": {"alpha": "(K + lam I)^-1 y"}}}

    def _convergence(self) -> dict[str, Any]:
        return {"converged": True, "reason": "direct solve", "final": None}
