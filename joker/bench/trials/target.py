"""The harness's one treatment of regression targets: standardised on the training rows, predictions mapped back.

Every regression method of a cell fits ``(y - mean) / std`` of the rows it
trains on (the mean and standard deviation of ``y_train``, never of test
or validation rows); its predictions ``p`` are mapped back to
``mean + std * p`` before any metric, so metrics are in the target's unit.
A method without an intercept then fits a centred target, and a missing
bias cannot decide a ranking (``docs/contracts.md``, "Stated problems").

What it means for the parameters (``P(f) = (lam/2) ||f||^2 + sum_i loss``):

- squared loss: the solution is linear in ``y``, so KRR on the standardised
  target mapped back is exactly KRR on the centred target plus the mean:
  ``lam`` keeps its meaning;
- epsilon-insensitive (SVR) and Huber losses: ``epsilon`` and ``delta``
  are in standardised units (``epsilon * std`` in the target's unit), and
  the problem equals the raw one at ``lam / std`` (divide P by ``std``);
- classification: labels are not transformed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TargetScale"]


@dataclass(frozen=True)
class TargetScale:
    """Standardisation of a regression target by the statistics of its training rows.

    Attributes
    ----------
    mean : float
        Mean of the training targets (target units).
    std : float
        Their population standard deviation (``ddof = 0``; target units);
        1.0 when the targets are constant, so the map stays invertible.
    """

    mean: float
    std: float

    @classmethod
    def of(cls, y_train: Any) -> "TargetScale":
        """The scale of ``y_train`` (array-like of shape (n,), finite floats).

        Raises
        ------
        ValueError
            If ``y_train`` is empty or not finite.
        """
        y = np.asarray(y_train, dtype=np.float64).reshape(-1)
        if y.size == 0 or not np.all(np.isfinite(y)):
            raise ValueError("the target standardisation needs finite training targets")
        std = float(y.std())
        return cls(float(y.mean()), std if std > 0 and math.isfinite(std) else 1.0)

    def forward(self, y: Any) -> np.ndarray:
        """``(y - mean) / std``: float64 of the same shape."""
        return (np.asarray(y, dtype=np.float64) - self.mean) / self.std

    def inverse(self, pred: Any) -> np.ndarray:
        """``mean + std * pred``: predictions (or scores) back in the target's unit, float64."""
        return self.mean + self.std * np.asarray(pred, dtype=np.float64)

    def record(self) -> dict[str, Any]:
        """What the trial records: ``transform`` ("standardised"), ``mean``, ``std``."""
        return {"transform": "standardised", "mean": self.mean, "std": self.std}
