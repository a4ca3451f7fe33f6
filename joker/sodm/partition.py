"""SODM's partitioning: greedy kernel landmarks, strata, stratified split (IJCAI 2023, arXiv:2305.04837, s.3).

1. :func:`greedy_landmarks`: S points chosen greedily so that each one most
   increases the determinant of the landmarks' Gram matrix. With the Gram
   matrix G_S of the chosen set, det G_{S+j} = det G_S * r_j where
   r_j = k(x_j, x_j) - k_S(x_j)^T G_S^{-1} k_S(x_j) is x_j's residual
   variance; the greedy choice is the point of largest r_j, i.e. a pivoted
   (incomplete) Cholesky factorisation of K stopped after S pivots.
2. :func:`nearest_landmark`: each point's stratum is its nearest landmark in
   the kernel's feature space, d(x, c)^2 = k(x, x) + k(c, c) - 2 k(x, c).
3. :func:`stratified_split`: inside each stratum the points are dealt
   round-robin over the partitions, so each partition follows the data's
   distribution. Strata are refined by class (the cells (class, landmark)),
   so that every partition also keeps the class proportions, up to one
   point per class.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from ..kernels import KERNELS, kernel_block

__all__ = ["greedy_landmarks", "nearest_landmark", "stratified_split"]


def _check_kernel(kernel, sigma):
    if kernel not in KERNELS:
        raise ValueError(f"kernel={kernel!r}; expected one of {list(KERNELS)}")
    if not (isinstance(sigma, numbers.Real) and np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")


def greedy_landmarks(X, n_landmarks, kernel="gaussian", sigma=1.0, seed=0):
    """Greedy determinant-maximising landmarks (SODM, s.3.1; a pivoted Cholesky of K).

    Parameters
    ----------
    X : tensor of shape (n, d)
        Training inputs (float32 or float64).
    n_landmarks : int
        S >= 1 (clipped to n; fewer are returned when the residual variance
        of every remaining point is <= 1e-12, e.g. duplicated rows).
    kernel : {"gaussian", "laplacian"}
    sigma : float
        Bandwidth > 0 (``joker.kernels`` convention).
    seed : int
        Chooses the first landmark: both kernels have k(x, x) = 1, so every
        point ties for it.

    Returns
    -------
    ndarray of int64, shape (S,)
        Row indices of the landmarks, in the order chosen.

    Raises
    ------
    ValueError
        ``n_landmarks < 1``, a bad kernel or sigma.
    """
    _check_kernel(kernel, sigma)
    if isinstance(n_landmarks, bool) or not isinstance(n_landmarks, numbers.Integral) or n_landmarks < 1:
        raise ValueError(f"n_landmarks must be an int >= 1, got {n_landmarks!r}")
    n = X.shape[0]
    S = min(int(n_landmarks), n)
    X = X.to(torch.float64)
    resid = torch.ones(n, dtype=torch.float64)  # k(x, x) = 1 for both kernels
    G = torch.zeros((n, S), dtype=torch.float64)  # K[:, chosen] = G G^T on the chosen columns
    chosen = [int(np.random.default_rng(seed).integers(n))]
    for s in range(S):
        j = chosen[-1]
        col = kernel_block(X, X[j:j + 1], kernel, sigma)[:, 0] - G[:, :s] @ G[j, :s]
        G[:, s] = col / resid[j].sqrt()
        resid = (resid - G[:, s] ** 2).clamp_(min=0.0)
        resid[chosen] = 0.0
        if s + 1 == S:
            break
        nxt = int(torch.argmax(resid))
        if float(resid[nxt]) <= 1e-12:
            break
        chosen.append(nxt)
    return np.asarray(chosen, dtype=np.int64)


def nearest_landmark(X, C, kernel="gaussian", sigma=1.0, chunk=65536):
    """Stratum of each row: its nearest landmark in kernel distance (SODM, s.3.1).

    d(x, c)^2 = k(x, x) + k(c, c) - 2 k(x, c); both kernels have
    k(x, x) = 1, so the nearest landmark is the one of largest k(x, c).

    Parameters
    ----------
    X : tensor of shape (n, d)
    C : tensor of shape (S, d)
        Landmarks.
    kernel, sigma : as in :func:`greedy_landmarks`.
    chunk : int
        Rows per kernel block (memory O(chunk S)).

    Returns
    -------
    ndarray of int64, shape (n,), values in [0, S).
    """
    _check_kernel(kernel, sigma)
    out = np.empty(X.shape[0], dtype=np.int64)
    C = C.to(X.dtype)
    for i in range(0, X.shape[0], chunk):
        out[i:i + chunk] = torch.argmax(kernel_block(X[i:i + chunk], C, kernel, sigma), dim=1).cpu().numpy()
    return out


def stratified_split(strata, y, n_parts, seed=0):
    """Deal the points round-robin over ``n_parts`` partitions inside each (class, stratum) cell (SODM, s.3.1).

    The points are ordered by class, then stratum, then at random (``seed``),
    and the k-th point of that order goes to partition k mod n_parts. Each
    cell is thus dealt round-robin, the count continuing across cells, so
    every partition holds floor or ceil of n_c / n_parts points of each
    class c and floor or ceil of n / n_parts points in all.

    Parameters
    ----------
    strata : array of int, shape (n,)
        Stratum of each point (:func:`nearest_landmark`).
    y : array, shape (n,)
        Class labels (any values).
    n_parts : int
        Number of partitions (2^L in SODM), 1 <= n_parts <= n.
    seed : int

    Returns
    -------
    ndarray of int64, shape (n,)
        Partition of each point, values in [0, n_parts).

    Raises
    ------
    ValueError
        Mismatched lengths, or ``n_parts`` outside [1, n].
    """
    strata, y = np.asarray(strata), np.asarray(y)
    n = strata.shape[0]
    if y.shape != (n,) or strata.ndim != 1:
        raise ValueError(f"strata and y must be 1-D of the same length, got {strata.shape} and {y.shape}")
    if isinstance(n_parts, bool) or not isinstance(n_parts, numbers.Integral) or not 1 <= n_parts <= n:
        raise ValueError(f"n_parts must be an int in [1, {n}], got {n_parts!r}")
    _, cls = np.unique(y, return_inverse=True)
    order = np.lexsort((np.random.default_rng(seed).permutation(n), strata, cls))
    part = np.empty(n, dtype=np.int64)
    part[order] = np.arange(n) % int(n_parts)
    return part
