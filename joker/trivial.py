"""Is a fitted model no better than the trivial predictor? (numpy only)

One test for the estimators (:class:`joker.estimators.TrivialModelWarning`, on
training rows) and the benchmark harness (tag ``trivial_model`` of a trial
record, on test rows; docs/contracts.md). The trivial predictor is the
reference mean for regression and the majority class for classification.

A model is trivial when

* its decision function is numerically constant: every output's spread
  ``max - min`` is at most :data:`CONSTANT_RTOL` times its largest magnitude
  (e.g. a Gaussian kernel at ``sigma = 1e12``, whose matrix rounds to all
  ones); or
* regression: its RMSE is at least ``(1 - REGRESSION_MARGIN)`` times the
  RMSE of predicting the reference mean (skipped when that RMSE is 0); or
* classification: its accuracy is at most the majority class's share of the
  rows *and* its AUC is within :data:`AUC_SIGMAS` standard errors of 1/2
  (the null standard error of the Mann-Whitney AUC, Hanley & McNeil 1982,
  Radiology 143(1), eq. 2 at A = 1/2: sqrt((n1 + n0 + 1) / (12 n1 n0))).
  Both must hold, so an imbalanced but informative model (AUC well above
  1/2 at a poor threshold) is not flagged.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["AUC_SIGMAS", "CONSTANT_RTOL", "REGRESSION_MARGIN", "auc_null_se", "is_constant", "trivial_reason"]

#: Relative spread of the decision values below which they count as constant (float64 rounding is ~1e-16).
CONSTANT_RTOL = 1e-9
#: A regression fit must beat the mean's RMSE by this fraction.
REGRESSION_MARGIN = 1e-3
#: Standard errors of the null AUC within which an AUC counts as 1/2.
AUC_SIGMAS = 3.0


def is_constant(scores: np.ndarray) -> bool:
    """Whether every column of ``scores`` ((n,) or (n, C), finite) is numerically constant (:data:`CONSTANT_RTOL`)."""
    s = np.asarray(scores, dtype=np.float64).reshape(len(scores), -1)
    if s.shape[0] < 2:
        return False
    spread = s.max(0) - s.min(0)
    return bool(np.all(spread <= CONSTANT_RTOL * np.abs(s).max(0)))


def auc_null_se(n_pos: int, n_neg: int) -> float:
    """Standard error of the AUC of uninformative scores (Hanley & McNeil 1982, eq. 2 at A = 1/2)."""
    return math.sqrt((n_pos + n_neg + 1) / (12.0 * n_pos * n_neg))


def _auc(positive: np.ndarray, scores: np.ndarray) -> float:
    """Mann-Whitney AUC with mid-ranks (nan when a class is absent)."""
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    _, start, counts = np.unique(scores[order], return_index=True, return_counts=True)
    ranks = np.empty(len(scores))
    ranks[order] = np.repeat(start + (counts + 1) / 2.0, counts)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _constant_text(s: np.ndarray) -> str:
    return f"the decision function is constant ({float(s.ravel()[0]):.4g} on every row)"


def trivial_reason(task: str, y: np.ndarray, scores: np.ndarray, *, y_pred: np.ndarray | None = None,
                   reference_mean: np.ndarray | float | None = None) -> str:
    """Why a model is no better than the trivial predictor on these rows ("" when it is better).

    Parameters
    ----------
    task : {"regression", "binary", "multiclass"}
    y : ndarray
        Regression: targets, (n,) or (n, k). Classification: class indices
        (n,) in ``0 .. C-1`` (binary: 1 is the positive class).
    scores : ndarray
        Decision values, float: (n,) or (n, k) for regression (the
        predictions), (n,) for binary (> 0 means class 1), (n, C) for C classes.
    y_pred : ndarray of shape (n,), optional
        Classification: predicted class indices (default: from ``scores``).
    reference_mean : float or ndarray of shape (k,), optional
        Regression: the trivial prediction (e.g. the training targets' mean;
        default: the mean of ``y``).

    Returns
    -------
    str
        The reason (see the module docstring for the rules), or "".
    """
    s = np.asarray(scores, dtype=np.float64)
    if len(s) < 2 or not np.all(np.isfinite(s)):
        return ""
    if is_constant(s):
        return _constant_text(s)
    if task == "regression":
        t = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        s = s.reshape(len(s), -1)
        mean = t.mean(0) if reference_mean is None else np.asarray(reference_mean, dtype=np.float64).reshape(-1)
        rmse = float(np.sqrt(np.mean((s - t) ** 2)))
        base = float(np.sqrt(np.mean((t - mean) ** 2)))
        if base > 0 and not rmse < (1 - REGRESSION_MARGIN) * base:
            return f"RMSE {rmse:.4g} is no better than predicting the mean (RMSE {base:.4g})"
        return ""
    idx = np.asarray(y).astype(np.int64).ravel()
    if y_pred is None:
        y_pred = (s > 0).astype(np.int64) if s.ndim == 1 else s.argmax(1)
    accuracy = float(np.mean(np.asarray(y_pred).ravel() == idx))
    majority = float(np.bincount(idx).max() / len(idx))
    if accuracy > majority:
        return ""
    cols = [s.ravel()] if s.ndim == 1 else [s[:, j] for j in range(s.shape[1])]
    labels = [1] if s.ndim == 1 else range(s.shape[1])
    aucs, ses = [], []
    for c, col in zip(labels, cols):
        pos = idx == c
        n_pos = int(pos.sum())
        if 0 < n_pos < len(idx):
            aucs.append(_auc(pos, col))
            ses.append(auc_null_se(n_pos, len(idx) - n_pos))
    if not aucs:
        return ""
    auc, se = float(np.mean(aucs)), float(np.mean(ses))
    if abs(auc - 0.5) <= AUC_SIGMAS * se:
        return (f"accuracy {accuracy:.4f} is no better than the majority class ({majority:.4f}) and AUC "
                f"{auc:.4f} is within {AUC_SIGMAS:g} standard errors ({se:.2g}) of 0.5")
    return ""
