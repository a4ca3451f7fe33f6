"""Test metrics of a trial (numpy only, so the child imports nothing more).

Regression: ``test_rmse`` (target units), ``test_mse`` (target units
squared), ``test_rel_error`` = ||y_pred - y||_2 / ||y||_2 (dimensionless).
Classification: ``test_accuracy`` (fraction in [0, 1]), ``test_auc`` (area
under the ROC curve of the decision function, ties counted one half;
one-vs-rest macro average for several classes), ``test_f1`` (F1 of the
positive class ``classes[-1]`` for binary problems, macro F1 otherwise).
"""

from __future__ import annotations

import numpy as np

from ..config.spec import TASK_METRICS  # the metric names are part of the config's vocabulary


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Return test_rmse, test_mse, test_rel_error.

    Parameters
    ----------
    y_true, y_pred : ndarray of shape (n,) or (n, k)
        Targets and predictions.

    Returns
    -------
    dict
        The three metrics as floats.
    """
    y_true = np.asarray(y_true, dtype=np.float64).reshape(len(y_true), -1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(len(y_pred), -1)
    err = y_pred - y_true
    mse = float(np.mean(err**2))
    denom = float(np.linalg.norm(y_true))
    return {
        "test_mse": mse,
        "test_rmse": float(np.sqrt(mse)),
        "test_rel_error": float(np.linalg.norm(err) / denom) if denom > 0 else float("nan"),
    }


def binary_auc(positive: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney statistic with mid-ranks).

    Parameters
    ----------
    positive : ndarray of bool, shape (n,)
        True for the positive class.
    scores : ndarray of shape (n,)
        Larger means more positive.

    Returns
    -------
    float
        AUC in [0, 1]; ``nan`` when one class is absent.
    """
    positive = np.asarray(positive, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64).ravel()
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), dtype=np.float64)
    # mid-ranks of tied groups (1-based)
    _, start, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    mid = start + (counts + 1) / 2.0
    ranks[order] = np.repeat(mid, counts)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _f1(y_true: np.ndarray, y_pred: np.ndarray, label) -> float:
    tp = float(np.sum((y_pred == label) & (y_true == label)))
    fp = float(np.sum((y_pred == label) & (y_true != label)))
    fn = float(np.sum((y_pred != label) & (y_true == label)))
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def classification_metrics(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    scores: np.ndarray | None,
    classes: np.ndarray | None = None,
) -> dict[str, float]:
    """Return test_accuracy, test_f1 and (with scores) test_auc.

    Parameters
    ----------
    y_true, y_pred : ndarray of shape (n,)
        True and predicted labels.
    scores : ndarray of shape (n,) or (n, C), or None
        Decision function: for binary problems larger means ``classes[-1]``;
        for C classes one column per class in ``classes`` order.
    classes : ndarray, optional
        Sorted class labels (default: the labels of ``y_true``).

    Returns
    -------
    dict
        Metrics as floats (``test_auc`` absent without scores).
    """
    y_true = np.asarray(y_true).ravel()
    y_pred = np.asarray(y_pred).ravel()
    if classes is None:
        classes = np.unique(y_true)
    out = {"test_accuracy": float(np.mean(y_true == y_pred))}
    if len(classes) <= 2:
        out["test_f1"] = _f1(y_true, y_pred, classes[-1])
    else:
        out["test_f1"] = float(np.mean([_f1(y_true, y_pred, c) for c in classes]))
    if scores is not None:
        s = np.asarray(scores, dtype=np.float64)
        if len(classes) <= 2:
            out["test_auc"] = binary_auc(y_true == classes[-1], s.reshape(len(y_true), -1)[:, -1])
        elif s.ndim == 2 and s.shape[1] == len(classes):
            aucs = [binary_auc(y_true == c, s[:, j]) for j, c in enumerate(classes)]
            out["test_auc"] = float(np.nanmean(aucs))
    return out


def trivial_test_reason(task: str, y_train: np.ndarray, y_test: np.ndarray, y_pred: np.ndarray,
                        scores: np.ndarray | None = None, classes: np.ndarray | None = None) -> str:
    """Why a trial's model is no better than the trivial predictor on the test rows ("" when it is better).

    The rules are :func:`joker.trivial.trivial_reason`'s: constant
    predictions or decision values; regression: test RMSE no better than
    predicting the training targets' mean; classification: test accuracy at
    most the majority class's share of the test rows and test AUC within
    noise of 1/2. The harness records the answer as the tags
    ``trivial_model`` and ``trivial_reason`` (docs/contracts.md).

    Parameters
    ----------
    task : {"regression", "binary", "multiclass"}
    y_train, y_test : ndarray of shape (n,) or (n, k)
        Training and test targets (labels for classification).
    y_pred : ndarray
        Test predictions (labels for classification).
    scores : ndarray of shape (n,) or (n, C), optional
        Test decision values (classification; None: the labels are the scores).
    classes : ndarray, optional
        Sorted class labels (default: those of ``y_train``).

    Returns
    -------
    str
    """
    from joker.trivial import trivial_reason

    if task == "regression":
        ref = np.asarray(y_train, dtype=np.float64).reshape(len(y_train), -1).mean(0)
        return trivial_reason("regression", y_test, y_pred, reference_mean=ref)
    classes = np.unique(y_train) if classes is None else np.asarray(classes)
    idx = np.searchsorted(classes, np.asarray(y_test).ravel())
    pred = np.searchsorted(classes, np.asarray(y_pred).ravel())
    if scores is None:
        scores = pred.astype(np.float64) if len(classes) <= 2 else np.eye(len(classes))[pred]
    s = np.asarray(scores, dtype=np.float64)
    if len(classes) <= 2:
        s = s.reshape(len(idx), -1)[:, -1]
    return trivial_reason("multiclass" if s.ndim == 2 else "binary", idx, s, y_pred=pred)
