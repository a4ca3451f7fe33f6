"""Gaussian and Laplacian kernel blocks with numerically safe distances.

One bandwidth convention everywhere (docs/dual.md s.3)::

    Gaussian:  k(x, z) = exp(-||x - z||^2 / (2 sigma^2))
    Laplacian: k(x, z) = exp(-||x - z||_2 / sigma)      (L2 norm, not L1)

Squared distances are computed as ||x||^2 + ||z||^2 - 2 x.z (one GEMM) and
clamped at 0: in float32 the expansion cancels and can go slightly negative,
which would give NaN under the square root of the Laplacian.

The first argument (``X``, the many rows) may be sparse: a
:class:`joker.sparse.SparseRows` or a torch sparse CSR tensor; x.z is then
a sparse-dense product and ||x||^2 comes from the stored values
(:mod:`joker.sparse`). ``Z`` is always dense.
"""

from __future__ import annotations

import numpy as np
import torch

from .bandwidth import median_sigma  # noqa: F401  (public here since the first release)
from .kernel_names import KERNELS
from .sparse import SparseRows, sq_norms

__all__ = ["KERNELS", "sq_dists", "kernel_block", "kernel_matmul", "gaussian_factors", "median_sigma",
           "check_kernel", "far_threshold", "has_far_rows"]


def check_kernel(kernel, sigma):
    """Validate a kernel name and bandwidth.

    Raises
    ------
    ValueError
        Unknown kernel, or sigma not a finite positive number.
    """
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; expected one of {list(KERNELS)}")
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.floating, np.integer)):
        raise TypeError(f"sigma must be a positive number, got {type(sigma).__name__}")
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")


def sq_dists(X, Z, X_sq=None, Z_sq=None):
    """Squared Euclidean distances, never negative.

    Parameters
    ----------
    X : tensor of shape (n, d), dense or sparse (module docstring)
    Z : tensor of shape (m, d)
    X_sq, Z_sq : tensors of shape (n,) and (m,), optional
        Precomputed squared row norms.

    Returns
    -------
    tensor of shape (n, m), entries >= 0.
    """
    if X_sq is None:
        X_sq = sq_norms(X)
    if Z_sq is None:
        Z_sq = (Z * Z).sum(1)
    D = torch.addmm(X_sq[:, None] + Z_sq[None, :], X.csr() if isinstance(X, SparseRows) else X, Z.T, alpha=-2.0)
    return D.clamp_(min=0.0)


_CANCEL_LIMIT = 1e-4
"""Largest eps * max ||x||^2 / (2 sigma^2) (error in the Gaussian exponent) computed in a low precision."""


def _gaussian_cancels(X, Z, X_sq, Z_sq, sigma):
    """Whether the expanded Gaussian distance would err by more than ``_CANCEL_LIMIT`` in the exponent."""
    big = 0.0
    for M, sq in ((X, X_sq), (Z, Z_sq)):
        if M.shape[0]:
            big = max(big, float((sq if sq is not None else sq_norms(M)).max()))
    return torch.finfo(X.dtype).eps * big * 0.5 / (sigma * sigma) > _CANCEL_LIMIT


_FAR_LIMIT = 1e-10
"""Largest eps * ||x||^2 / (2 sigma^2) of a row whose expanded distances are kept (:func:`far_threshold`)."""


def far_threshold(sigma, dtype=torch.float64):
    """Squared norm above which a row's expanded distances err by more than ``_FAR_LIMIT`` in the exponent.

    The expansion ||x||^2 + ||z||^2 - 2 x.z errs by about eps (||x||^2 +
    ||z||^2); divided by 2 sigma^2 that is the error of the Gaussian
    exponent. In float64 the threshold is ||x|| near 9,500 sigma: such a
    row's kernel entries against the bulk vanish anyway, but against rows
    near it (a value code such as 1e8 shared by several rows, two clusters
    far apart) they do not, and rounded they make the kernel matrix
    indefinite. Those rows are computed from differences instead
    (:func:`kernel_block`).

    Parameters
    ----------
    sigma : float
        The bandwidth, in the units of the rows.
    dtype : torch.dtype
        The dtype the distances are computed in.

    Returns
    -------
    float
    """
    return _FAR_LIMIT * 2.0 * float(sigma) ** 2 / torch.finfo(dtype).eps


def has_far_rows(sq, sigma, dtype=torch.float64):
    """Whether some squared norm of ``sq`` exceeds :func:`far_threshold` (one host read).

    Parameters
    ----------
    sq : tensor of shape (n,)
        Squared row norms, in the units of ``sigma``.
    sigma : float
        The bandwidth.
    dtype : torch.dtype
        The dtype the distances are computed in.

    Returns
    -------
    bool
    """
    return bool(sq.numel()) and float(sq.max()) > far_threshold(sigma, dtype)


_FAR_CHUNK_BYTES = 16 * 2**20
"""Dense float64 rows of a (sparse) X formed at once when far rows are recomputed."""


def _dense_rows(X, idx):
    """Rows ``idx`` (long tensor) of a dense, :class:`joker.sparse.SparseRows` or torch CSR X, dense float64."""
    if isinstance(X, SparseRows):
        return X.rows(idx).double()
    if X.layout == torch.sparse_csr:
        crow = X.crow_indices()
        return SparseRows(crow, X.col_indices(), X.values(), tuple(X.shape)).rows(idx).double()
    return X[idx].double()


def _fix_far(D, X, Z, X_sq, Z_sq, sigma):
    """Recompute in place the rows and columns of D (squared distances) that belong to far rows of X or Z."""
    thr = far_threshold(sigma, D.dtype)
    fx = torch.nonzero(X_sq > thr).ravel()
    fz = torch.nonzero(Z_sq > thr).ravel()
    if fx.numel() == 0 and fz.numel() == 0:
        return D
    direct = "donot_use_mm_for_euclid_dist"  # differences, not the expansion
    Z64 = Z.double()
    step = max(1, _FAR_CHUNK_BYTES // (8 * max(1, X.shape[1])))  # dense float64 rows of X at a time
    for i in range(0, fx.numel(), step):
        rows = fx[i:i + step]
        D[rows] = torch.cdist(_dense_rows(X, rows), Z64, compute_mode=direct).square_().to(D.dtype)
    if fz.numel():
        Zf = Z64[fz]
        for i in range(0, X.shape[0], step):
            rows = torch.arange(i, min(i + step, X.shape[0]), device=fz.device)
            D[i:i + step, fz] = torch.cdist(_dense_rows(X, rows), Zf, compute_mode=direct).square_().to(D.dtype)
    return D


def kernel_block(X, Z, kernel, sigma, X_sq=None, Z_sq=None, cancels=None, far=None):
    """Kernel matrix block ``K[i, j] = k(X[i], Z[j])``.

    Parameters
    ----------
    X : tensor of shape (n, d), dense or sparse (module docstring)
    Z : tensor of shape (m, d)
    kernel : {"gaussian", "laplacian"}
    sigma : float
        Bandwidth (> 0), convention of the module docstring.
    X_sq, Z_sq : optional precomputed squared row norms.
    cancels : bool or None
        Whether the expanded Gaussian distance cancels in a low precision
        (see Notes), decided once by the caller for every block of a data
        set (e.g. from its largest row norm), so that a block costs no host
        read; None: decided from these rows (one host read each of X and Z).
    far : bool or None
        Whether some row of the data set lies beyond :func:`far_threshold`
        (decided once by the caller, e.g. :func:`has_far_rows` on all its
        rows); None: decided from these rows. When true, the distances of
        the rows beyond it are recomputed from differences (see Notes).

    Returns
    -------
    tensor of shape (n, m), dtype and device of X.

    Notes
    -----
    In a low precision the expanded distance has an absolute error of about
    eps (||x||^2 + ||z||^2), which the kernel sees divided by sigma^2 (or
    sigma under the square root). Distances are therefore computed in
    float64, from the rows themselves (norms given in the low precision are
    already rounded), for the Laplacian kernel (sqrt magnifies the error
    near 0: k(x, x) = 0.993 instead of 1 in float32) and for the Gaussian
    kernel when eps max ||x||^2 / (2 sigma^2) > 1e-4 (rows of norm 100 at
    sigma = 0.1 gave k(x, x) = 0.93 in float32); the block is returned in
    the dtype of X. Rows whose squared norm exceeds :func:`far_threshold`
    (even in float64: 20 rows sharing the value 1e8 in one feature, or two
    clusters 1e10 apart, made the kernel matrix indefinite) get their
    distances from differences (``torch.cdist`` without the matrix
    product), at O(d) per entry of their rows and columns only.
    """
    low = X.dtype in (torch.float16, torch.bfloat16, torch.float32)
    if cancels is None:
        cancels = low and kernel == "gaussian" and _gaussian_cancels(X, Z, X_sq, Z_sq, sigma)
    if low and (kernel == "laplacian" or cancels):
        D = sq_dists(X.double(), Z.double())
        if far is None or far:
            D = _fix_far(D, X, Z, sq_norms(X).double(), (Z.double() ** 2).sum(1), sigma)
        if kernel == "gaussian":
            return D.mul_(-0.5 / (sigma * sigma)).exp_().to(X.dtype)
        return D.sqrt_().mul_(-1.0 / sigma).exp_().to(X.dtype)
    if X_sq is None:
        X_sq = sq_norms(X)
    if Z_sq is None:
        Z_sq = (Z * Z).sum(1)
    D = sq_dists(X, Z, X_sq, Z_sq)
    if (far is None or far) and D.dtype == torch.float64:  # (in a low precision no row is that far unless
        D = _fix_far(D, X, Z, X_sq, Z_sq, sigma)          # ``cancels``, which took the float64 path above)
    if kernel == "gaussian":
        return D.mul_(-0.5 / (sigma * sigma)).exp_()
    if kernel == "laplacian":
        return D.sqrt_().mul_(-1.0 / sigma).exp_()
    raise ValueError(f"unknown kernel {kernel!r}; expected one of {list(KERNELS)}")


# Largest ||x||^2 / (2 sigma^2) for which the factored Gaussian product of
# :func:`kernel_matmul` cannot overflow (exp(x.z / sigma^2) <= exp(2 * bound))
# nor lose the row factors exp(-||x||^2 / (2 sigma^2)) to underflow.
_FACTORED_BOUND = {torch.float32: 40.0, torch.float64: 300.0}


def gaussian_factors(X_sq, sigma):
    """Row factors exp(-||x||^2 / (2 sigma^2)) of the factored Gaussian kernel, or None when unsafe.

    Parameters
    ----------
    X_sq : tensor of shape (n,)
        Squared row norms.
    sigma : float

    Returns
    -------
    tensor of shape (n,) or None
        None when some ||x||^2 / (2 sigma^2) exceeds the bound of
        :func:`kernel_matmul` for this dtype.
    """
    inv2s2 = 0.5 / (float(sigma) ** 2)
    bound = _FACTORED_BOUND.get(X_sq.dtype)
    if bound is None or (X_sq.numel() and float(X_sq.max()) * inv2s2 > bound):
        return None
    return torch.exp(X_sq * -inv2s2)


def kernel_matmul(X, Z, A, kernel, sigma, X_sq=None, Z_sq=None, max_entries=2**20, X_fac=None, Z_fac=None,
                  cancels=None, far=None):
    """``K(X, Z) @ A`` without forming K(X, Z) whole.

    Row chunks of at most ``max_entries`` kernel entries (4 MiB in float32
    by default, which stays in cache: measured 1.5-2x faster than 64 MiB
    chunks on 2 cores). For the Gaussian kernel it uses the factorisation

        k(x, z) = exp(-||x||^2 / (2 sigma^2)) * exp(x.z / sigma^2) * exp(-||z||^2 / (2 sigma^2))

    so a chunk is one GEMM and one exp, with the two diagonal factors
    applied to A and to the result (three passes over the chunk instead of
    six). It is used only when every ||x||^2 / (2 sigma^2) is at most 40
    (float32) or 300 (float64), where neither factor can overflow or
    underflow; otherwise, and for the Laplacian kernel, chunks come from
    :func:`kernel_block`. The relative error of an entry is of the order of
    the float epsilon times ||x|| ||z|| / sigma^2, as for the expanded
    distance.

    Parameters
    ----------
    X : tensor of shape (n, d), dense or sparse (module docstring)
    Z : tensor of shape (m, d)
    A : tensor of shape (m, C)
    kernel : {"gaussian", "laplacian"}
    sigma : float
    X_sq, Z_sq : tensors of shape (n,) and (m,), optional
        Squared row norms.
    max_entries : int
        Largest chunk of kernel entries formed at once.
    X_fac, Z_fac : tensors of shape (n,) and (m,), optional
        Precomputed :func:`gaussian_factors` of X and Z (both, or neither);
        giving them skips the norm check and the exponentials of the rows.
    cancels, far : bool or None
        Passed to :func:`kernel_block` for the chunks it forms (None for
        ``far``: decided here once from X_sq and Z_sq).

    Returns
    -------
    tensor of shape (n, C), dtype and device of X.
    """
    n, m = X.shape[0], Z.shape[0]
    out = torch.empty((n, A.shape[1]), dtype=A.dtype, device=A.device)
    if n == 0 or m == 0:
        return out.zero_()
    if X_sq is None:
        X_sq = sq_norms(X)
    if Z_sq is None:
        Z_sq = (Z * Z).sum(1)
    step = max(1, int(max_entries) // m)
    inv2s2 = 0.5 / (float(sigma) ** 2)
    if kernel == "gaussian" and (X_fac is None or Z_fac is None):
        X_fac, Z_fac = gaussian_factors(X_sq, sigma), gaussian_factors(Z_sq, sigma)
    if kernel == "gaussian" and X_fac is not None and Z_fac is not None:
        cA = Z_fac[:, None] * A
        Zt = Z.T * (2.0 * inv2s2)
        for i in range(0, n, step):
            E = torch.mm(X[i:i + step], Zt).exp_()
            torch.mm(E, cA, out=out[i:i + step])
        return out.mul_(X_fac[:, None])
    if far is None:  # once for every chunk (a far row also keeps the factored path above off)
        far = has_far_rows(X_sq, sigma) or has_far_rows(Z_sq, sigma)
    for i in range(0, n, step):
        out[i:i + step] = kernel_block(X[i:i + step], Z, kernel, sigma, X_sq[i:i + step], Z_sq, cancels, far) @ A
    return out
