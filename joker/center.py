"""The centre of the training inputs: their coordinate-wise (weighted) median.

The Gaussian and Laplacian kernels are shift-invariant, so the inputs may
be shifted by any vector c before the kernel arithmetic, and the estimators
shift them (:class:`joker.inputs.InputFrame`) for two reasons: a common
offset is removed in float64 before a cast to float32, and the squared
distances ||x||^2 + ||z||^2 - 2 x.z (one GEMM, :func:`joker.kernels.sq_dists`)
err by about eps (||x||^2 + ||z||^2), so rows near the centre keep their
distances exact. Random features cos(W (x - c) + b) depend on c in their
phases, which are rounded to the dtype.

The mean is a poor centre for that: one row at 1e10 among 500 moves the
mean of every coordinate by 2e7, every other row then has a squared norm
near 4e15, and in float64 the expansion errs by about 1 in squared
distances of order 20 (sigma = 3): the computed kernel matrix is no longer
positive semi-definite and the dual solve diverged (RMSE 1e152 where the
clean fit has 0.16). The coordinate-wise median is not moved by a few
outliers (breakdown point 1/2): the bulk of the rows stays near 0, and an
outlier only loses the precision of its own, vanishing, kernel entries.

Weights are row counts: with integer ``sample_weight`` the centre is the
median of the repeated rows, so integer weights keep giving the fit of
repeated rows, and rows of weight 0 do not move it. With an even total
weight the median is the midpoint of the two middle values (as
``numpy.median``): for every coordinate, ``lower`` is the smallest value
whose cumulative weight reaches half the total and ``upper`` the smallest
whose cumulative weight exceeds it, and the centre is (lower + upper) / 2.
A cumulative weight within a few ulps per summand of half the total counts
as equal to it, so uniform weights c (0.1, 1/3, ...) give the unweighted
median as c = 1 does, whatever the rounding of their running sums.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["median_center"]

_TIE_ULPS = 4.0
"""Cumulative weights within 4 n ulps of half the total are a tie: uniform weights c stay the unweighted median."""

_GROUP_ENTRIES = 2**21
"""Entries (rows x columns) of one group of columns handled at once: 16 MiB of float64."""


def median_center(X, sample_weight=None):
    """Coordinate-wise (weighted) median of the rows of ``X`` (module docstring).

    Parameters
    ----------
    X : float64 tensor of shape (n, d), or scipy.sparse matrix of shape (n, d)
        Finite values, n >= 1. A sparse matrix's implicit zeros count as
        values 0.
    sample_weight : ndarray of shape (n,) or None
        Checked weights (:func:`joker.sample_weight.check_sample_weight`:
        finite, >= 0, some > 0), read as row counts.

    Returns
    -------
    float64 tensor of shape (d,)
        On the device of ``X`` (CPU for a sparse matrix).

    Notes
    -----
    Memory: a dense X is handled a group of columns at a time (16 MiB of
    values, and as much again for sort indices when weighted), never as a
    second n x d copy; a sparse X costs O(nnz + d).
    """
    if sp.issparse(X):
        return torch.from_numpy(_sparse_median(X, sample_weight))
    n, d = X.shape
    out = torch.empty(d, dtype=torch.float64, device=X.device)
    w = keep = None
    if sample_weight is not None:
        w = torch.as_tensor(sample_weight, dtype=torch.float64, device=X.device)
        if not bool((w > 0).all()):  # weight 0: the row is not there (dropped group by group, no copy of X)
            keep = torch.nonzero(w > 0).ravel()
            w = w[keep]
    m = n if keep is None else int(keep.numel())
    group = max(1, _GROUP_ENTRIES // max(1, m))
    for j in range(0, d, group):
        cols = X[:, j:j + group].T  # (g, n): one row per coordinate
        # always a copy of this group only (selection works in place; the caller's X may be a view of theirs)
        cols = cols.clone(memory_format=torch.contiguous_format) if keep is None else cols[:, keep]
        out[j:j + group] = _unweighted(cols) if w is None else _weighted(cols, w)
    return out


def _unweighted(cols):
    """Median of each row of ``cols`` (g, n): selection, O(n) per row, in place on this copy."""
    n = cols.shape[1]
    if cols.device.type == "cpu":  # numpy's in-place partition: no value or index copies (torch.kthvalue makes both)
        a = cols.numpy()
        a.partition(sorted({(n - 1) // 2, n // 2}), axis=1)
        return _midpoint(torch.from_numpy(a[:, (n - 1) // 2].copy()), torch.from_numpy(a[:, n // 2].copy()))
    lower = torch.kthvalue(cols, (n + 1) // 2, dim=1).values
    if n % 2:
        return lower
    return _midpoint(lower, torch.kthvalue(cols, n // 2 + 1, dim=1).values)


def _midpoint(lower, upper):
    """(lower + upper) / 2 without overflow near 1e308 and exact when they are equal (subnormals too)."""
    return torch.where(lower == upper, lower, 0.5 * lower + 0.5 * upper)


def _tie(total, count):
    """Rounding allowance of a cumulative weight against half the total (``_TIE_ULPS`` ulps per summand)."""
    return _TIE_ULPS * count * np.finfo(np.float64).eps * total


def _weighted(cols, w):
    """Weighted median of each row of ``cols`` (g, n) with weights ``w`` (n,), all > 0."""
    vals, order = torch.sort(cols, dim=1)
    cum = torch.cumsum(w[order], dim=1)
    total = cum[:, -1:]
    half = 0.5 * total
    tie = _tie(total, cols.shape[1])
    last = cols.shape[1] - 1
    # first cumulative weight reaching half, and first beyond it, a rounding error counting as a tie
    # (weights 0.1 x 10 sum to 0.5 + 1 ulp at the fifth row: still the even split of repeated rows)
    lo = torch.searchsorted(cum, (half - tie).contiguous()).clamp_(max=last)
    hi = torch.searchsorted(cum, (half + tie).contiguous(), right=True).clamp_(max=last)
    return _midpoint(vals.gather(1, lo), vals.gather(1, hi)).squeeze(1)


def _sparse_median(X, sample_weight):
    """Weighted median of every column of a sparse matrix, its implicit zeros included; float64 (d,)."""
    C = sp.csc_matrix(X, dtype=np.float64)
    C.sum_duplicates()
    n, d = C.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    nnz_col = np.diff(C.indptr)
    cols = np.repeat(np.arange(d), nnz_col)
    vals, wts = C.data, w[C.indices]
    total = float(w.sum())
    # every column's zero rows, as one value 0 of their summed weight (exact for integer weights)
    zero_w = total - np.bincount(cols, weights=wts, minlength=d)
    has_zero = zero_w > 0
    cols = np.concatenate([cols, np.flatnonzero(has_zero)])
    vals = np.concatenate([vals, np.zeros(int(has_zero.sum()))])
    wts = np.concatenate([wts, zero_w[has_zero]])
    live = wts > 0
    cols, vals, wts = cols[live], vals[live], wts[live]
    order = np.lexsort((vals, cols))
    cols, vals, wts = cols[order], vals[order], wts[order]
    start = np.searchsorted(cols, np.arange(d))  # first entry of each column (each has one: total > 0)
    cum = np.cumsum(wts)
    cum -= np.repeat(cum[start] - wts[start], np.diff(np.append(start, cols.size)))  # per column
    half = 0.5 * total
    # the global running sum rounds at the scale of all columns' weights (d totals): allow for that too
    tie = _tie(total, cols.size + n)
    lower = _first_per_column(cols, cum >= half - tie, d)
    upper = _first_per_column(cols, cum > half + tie, d)
    return _midpoint(torch.from_numpy(vals[lower]), torch.from_numpy(vals[upper])).numpy()


def _first_per_column(cols, mask, d):
    """Index of the first True of ``mask`` in each column's run of ``cols`` (the column's last entry if none)."""
    idx = np.flatnonzero(mask)
    first = np.searchsorted(cols, np.arange(d + 1))
    ends = first[1:] - 1
    out = ends.copy()
    c, pos = np.unique(cols[idx], return_index=True)
    out[c] = idx[pos]
    return out
