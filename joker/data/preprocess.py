"""Standardisation with training statistics, in row chunks.

Statistics come from the rows actually used for training (after the
subset is chosen): mean and population standard deviation (``ddof=0``)
accumulated in float64 in one pass. A column that is constant on those
rows has scale 1 and is set to
exactly 0 in both train and test output, never NaN. Work is done in
chunks so a memory-mapped cache is read once per pass and no float64 copy
of a large float32 array is made.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_standardizer", "apply_standardizer", "take_rows"]

_CHUNK_BYTES = 1 << 22  # ~4 MiB of float64 per chunk: stays in cache


def _chunks(n: int, d: int, itemsize: int = 8):
    step = max(1, _CHUNK_BYTES // max(1, d * itemsize))
    for i in range(0, n, step):
        yield i, min(n, i + step)


def take_rows(X, rows, lo: int, hi: int):
    """Rows ``lo:hi`` of the selection ``rows`` of ``X``.

    Parameters
    ----------
    X : numpy.ndarray or numpy.memmap, shape (N, ...)
    rows : slice or numpy.ndarray of int
        The selection.
    lo, hi : int
        Positions inside the selection.

    Returns
    -------
    numpy.ndarray
        A view for slices, a gathered copy for index arrays.
    """
    if isinstance(rows, slice):
        start = rows.start or 0
        return X[start + lo:start + hi]
    return X[rows[lo:hi]]


def _count(rows, N) -> int:
    if isinstance(rows, slice):
        return len(range(*rows.indices(N)))
    return len(rows)


def fit_standardizer(X, rows):
    """Mean, scale and constant-column mask of the selected rows.

    One pass in float64 over row chunks, with sums of deviations from the
    first selected row (a shift that keeps the variance accurate when the
    mean is large, and makes a constant column's sum of squares exactly 0).

    Parameters
    ----------
    X : numpy.ndarray, shape (N, d)
        Any real or unsigned dtype (memory-mapped is fine).
    rows : slice or numpy.ndarray of int
        The training rows.

    Returns
    -------
    mean : numpy.ndarray, shape (d,), float64
    scale : numpy.ndarray, shape (d,), float64
        Standard deviation (ddof=0); 1.0 on constant columns.
    constant : numpy.ndarray, shape (d,), bool
        Columns whose selected values are all equal (all columns when no
        row is selected).
    """
    n_all, d = X.shape
    n = _count(rows, n_all)
    if n == 0:
        return np.zeros(d), np.ones(d), np.ones(d, dtype=bool)
    shift = np.asarray(take_rows(X, rows, 0, 1)[0], dtype=np.float64)
    s1, s2 = np.zeros(d), np.zeros(d)
    buf = None
    for a, b in _chunks(n, d):
        if buf is None:
            buf = np.empty((b - a, d))
        z = buf[:b - a]
        np.subtract(take_rows(X, rows, a, b), shift, out=z)
        s1 += z.sum(axis=0)
        s2 += np.einsum("ij,ij->j", z, z)
    m1 = s1 / n
    var = np.maximum(s2 / n - m1 * m1, 0.0)
    constant = s2 == 0.0
    std = np.where(var > 0, np.sqrt(var), np.sqrt(s2 / n))
    scale = np.where(constant, 1.0, std)
    return shift + m1, scale, constant


def apply_standardizer(X, rows, mean, scale, constant, dtype, *, standardize=True):
    """Standardised copy of the selected rows.

    Parameters
    ----------
    X : numpy.ndarray, shape (N, d)
    rows : slice or numpy.ndarray of int
    mean, scale : numpy.ndarray, shape (d,), float64
    constant : numpy.ndarray, shape (d,), bool
        Columns set to exactly 0.
    dtype : numpy dtype
        Output dtype.
    standardize : bool
        False: a plain cast copy (mean, scale, constant ignored).

    Returns
    -------
    numpy.ndarray, shape (n, d), ``dtype``
        ``(X[rows] - mean) / scale`` computed in float64, constant columns 0.
    """
    n_all, d = X.shape
    n = _count(rows, n_all)
    out = np.empty((n, d), dtype=dtype)
    has_const = bool(np.any(constant))
    buf = None
    for a, b in _chunks(n, d):
        c = take_rows(X, rows, a, b)
        if not standardize:
            out[a:b] = c
            continue
        if buf is None:
            buf = np.empty((b - a, d))
        z = buf[:b - a]
        np.subtract(c, mean, out=z)
        np.divide(z, scale, out=z)
        if has_const:
            z[:, constant] = 0.0
        out[a:b] = z
    return out
