"""Intake of ``sample_weight`` and ``class_weight`` for the Joker estimators.

A weight w_i >= 0 scales the loss of row i, i.e. C_i = w_i / lam: the
weighted primal and dual are in ``docs/dual.md`` s.6, the solver's side in
:mod:`joker.weighted_loss`. ``class_weight`` follows scikit-learn's SVC: the
weight of row i is ``class_weight_[class of i] * sample_weight[i]``, with
``class_weight_`` from :func:`sklearn.utils.class_weight.compute_class_weight`
("balanced": n_samples / (n_classes * bincount(y)), counting rows, not
weights, as SVC does).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import torch
from sklearn.utils.class_weight import compute_class_weight

__all__ = ["check_sample_weight", "class_weights", "row_weights"]


def check_sample_weight(sample_weight, n):
    """Validated per-row weights, or None.

    Parameters
    ----------
    sample_weight : array-like or tensor of shape (n,), or None
        Lists, pandas Series, numpy arrays and torch tensors (any device)
        are accepted; the caller's memory is never written.
    n : int
        Number of samples.

    Returns
    -------
    ndarray of shape (n,), float64 (a copy), or None

    Raises
    ------
    TypeError
        Non-numeric weights.
    ValueError
        Shape other than (n,), a NaN, an infinity or a negative weight, or
        every weight zero.
    """
    if sample_weight is None:
        return None
    if torch.is_tensor(sample_weight):
        sample_weight = sample_weight.detach().cpu().numpy()
    w = np.asarray(sample_weight)
    if w.dtype == bool or not (np.issubdtype(w.dtype, np.number) or w.dtype == object):
        raise TypeError(f"sample_weight must hold numbers, got dtype {w.dtype}")
    try:
        w = np.array(w, dtype=np.float64)  # a copy: never the caller's array
    except (TypeError, ValueError):
        raise TypeError("sample_weight must hold numbers") from None
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},) (one weight per sample), got shape {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or infinity")
    if (w < 0).any():
        raise ValueError(f"sample_weight must be >= 0, got {int((w < 0).sum())} negative weight(s) "
                         f"(smallest {w.min():g})")
    if not (w > 0).any():
        raise ValueError("sample_weight is zero for every sample: at least one weight must be > 0")
    return w


def class_weights(class_weight, classes, y):
    """The weight of each class, as SVC's ``class_weight_``.

    Parameters
    ----------
    class_weight : None, "balanced" or dict
        None: every class 1. "balanced": n_samples / (n_classes * count of
        the class), rows counted as SVC does. dict: label -> weight (finite,
        >= 0); classes not named get 1.
    classes : ndarray of shape (n_classes,)
        Sorted labels (``classes_``).
    y : ndarray of shape (n_samples,)
        The training labels.

    Returns
    -------
    ndarray of shape (n_classes,), float64

    Raises
    ------
    ValueError
        A string other than "balanced", a weight that is not a finite
        number >= 0, or dict keys that are not labels of ``y``
        (:func:`sklearn.utils.class_weight.compute_class_weight`'s check).
    TypeError
        ``class_weight`` of another type.
    """
    if class_weight is None:
        return np.ones(len(classes))
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f'class_weight must be None, "balanced" or a dict, got {class_weight!r}')
    elif isinstance(class_weight, Mapping):
        for label, v in class_weight.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (np.isfinite(v) and v >= 0):
                raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0, got {v!r}")
        class_weight = dict(class_weight)
    else:
        raise TypeError(f'class_weight must be None, "balanced" or a dict, got {type(class_weight).__name__}')
    return np.asarray(compute_class_weight(class_weight, classes=classes, y=y), dtype=np.float64)


def row_weights(sample_weight, class_weight_=None, y_idx=None):
    """Per-row weights of the solve: ``class_weight_[y_idx] * sample_weight``, None when all are 1.

    Parameters
    ----------
    sample_weight : ndarray of shape (n,) or None
        Checked weights (:func:`check_sample_weight`).
    class_weight_ : ndarray of shape (n_classes,), optional
        (:func:`class_weights`); None for regression.
    y_idx : ndarray of shape (n,) of int, optional
        Class index of each row.

    Returns
    -------
    ndarray of shape (n,), float64, or None (no weighting: the unweighted solve)
    """
    w = sample_weight
    if class_weight_ is not None and not np.all(class_weight_ == 1.0):
        cw = class_weight_[y_idx]
        w = cw if w is None else cw * w
    return w
