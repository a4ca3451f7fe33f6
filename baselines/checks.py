"""Post-fit checks: is a fitted model better than the trivial predictor, has a curve flattened.

Used by :meth:`baselines.base.Adapter.fit` (divergence) and by the adapters
whose method has no stopping certificate (plateau flag).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["REGRESSION_MARGIN", "relative_plateau", "trivial_predictor_check"]

#: A regression fit must beat the mean's RMSE by this fraction (a model stuck
#: at ~0 on centred targets is "better" than the mean by rounding only).
REGRESSION_MARGIN = 1e-3


def trivial_predictor_check(task: str, scores: np.ndarray, target: np.ndarray) -> str:
    """Compare a fitted model's training error with the trivial predictor.

    Parameters
    ----------
    task : str
    scores : ndarray
        Decision values on training rows, (m,) or (m, C).
    target : ndarray
        Encoded targets of the same rows (see ``Adapter._encode_y``).

    Returns
    -------
    str
        Empty when the model beats the trivial predictor, else the reason:
        regression RMSE >= (1 - REGRESSION_MARGIN) times the RMSE of
        predicting the training mean, or training accuracy <= the
        majority-class share.
    """
    if task == "regression":
        rmse = float(np.sqrt(np.mean((scores - target) ** 2)))
        baseline = float(np.std(target))
        if not rmse < (1 - REGRESSION_MARGIN) * baseline:
            return f"training RMSE {rmse:.4g} is no better than predicting the mean (RMSE {baseline:.4g})"
        return ""
    if task == "binary":
        labels = np.where(scores > 0, 1.0, -1.0)
        majority = max(np.mean(target > 0), np.mean(target < 0))
    else:
        labels = np.argmax(scores, axis=1)
        majority = np.bincount(target).max() / len(target)
    accuracy = float(np.mean(labels == target))
    if not accuracy > majority:
        return f"training accuracy {accuracy:.4f} is no better than the majority class ({majority:.4f})"
    return ""


def relative_plateau(values: list[float], rtol: float) -> bool | None:
    """Whether the last two values of a training-error curve differ by at most ``rtol`` (relative).

    Returns None with fewer than two values. Used as the convergence flag of
    methods with no stopping rule of their own (Falkon's fixed CG budget,
    EigenPro3's fixed epochs): a plateau, not a certificate.
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if len(finite) < 2:
        return None
    last, prev = finite[-1], finite[-2]
    return abs(last - prev) <= rtol * max(abs(prev), 1e-12)
