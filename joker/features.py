"""Random Fourier features (Rahimi and Recht, 2007) for the Joker kernels.

psi(x) = sqrt(2/M) cos(W x + b), b ~ U[0, 2 pi) (docs/dual.md s.3):

- Gaussian exp(-||x - z||^2 / (2 sigma^2)): rows of W ~ N(0, sigma^-2 I);
- Laplacian exp(-||x - z||_2 / sigma) (L2 norm): rows of W multivariate
  Cauchy with scale 1/sigma, w = z / (sigma |g|), z ~ N(0, I_d), g ~ N(0, 1).

psi(x).psi(z) is an unbiased estimate of k(x, z) with standard deviation
about 1/sqrt(M).
"""

from __future__ import annotations

import numpy as np
import torch

from .inputs import InputFrame, bandwidth_scale
from .sparse import is_sparse, matmul
from .kernels import check_kernel
from . import fast_cos

__all__ = ["RandomFourierFeatures", "CHUNK_ROWS", "SIGMA_RANGE", "feature_scale"]

SIGMA_RANGE = (2.0**-30, 2.0**30)
"""Bandwidths inside which the feature map works on the inputs as they are (:func:`feature_scale`)."""


def feature_scale(sigma):
    """The power of two the inputs of a feature map are divided by (in float64, before any cast).

    1.0 for a bandwidth inside :data:`SIGMA_RANGE` (the map, ``W_`` included,
    is then that of the raw inputs); otherwise :func:`joker.inputs.bandwidth_scale`,
    so that the framed inputs and the frequencies ``W_ ~ 1 / (sigma / scale)``
    are of order one. Without it inputs on a scale of 1e-40 are subnormal in
    float32 and 1 / sigma = 1e40 overflows it (``W_`` infinite, the features
    NaN); at 1e38 the inputs themselves overflow. The kernel depends on
    x / sigma only, so the framed map estimates the same kernel.

    Parameters
    ----------
    sigma : float > 0

    Returns
    -------
    float
    """
    sigma = float(sigma)
    return 1.0 if SIGMA_RANGE[0] <= sigma <= SIGMA_RANGE[1] else bandwidth_scale(sigma)

CHUNK_ROWS = 256
"""Rows of psi formed at once on the CPU (:meth:`RandomFourierFeatures.transform_tensor`).

With M = 2,048 a chunk of 256 float32 rows is 2 MiB, the size of one core's L2 cache here; the
phases X W^T + b, their cosines and the scale then pass over it while it is cached instead of
streaming the whole block three times. Measured (2 threads, d = 10, M = 2,048, one epoch's worth of
1.84M rows): blocks of 2,048 rows formed at once 5.6 s, in chunks of 256 3.8 s; blocks of 256 3.6 s
against 2.7 s.
"""


class RandomFourierFeatures:
    """Seeded random Fourier feature map.

    Parameters
    ----------
    n_components : int
        Number of features M (>= 1).
    kernel : {"gaussian", "laplacian"}
    sigma : float
        Bandwidth (> 0).
    random_state : int or None
        Seed of the draws (numpy ``default_rng``; the same features on every
        device).
    dtype : torch.dtype
    device : str or torch.device

    Attributes
    ----------
    W_ : tensor of shape (n_components, n_features)
        Frequencies for the framed inputs (x - center_) / scale_, i.e. drawn at bandwidth sigma / scale_.
    scale_ : float
        :func:`feature_scale` of ``sigma`` (1.0 for bandwidths in :data:`SIGMA_RANGE`).
    b_ : tensor of shape (n_components,)
    center_ : float64 tensor of shape (n_features,)
        Coordinate-wise (weighted) median of the fitted inputs
        (:mod:`joker.center`), subtracted in float64 before the cast to
        ``dtype`` (the kernel is shift-invariant, so psi(x - center_) is a
        feature map of the same kernel; in float32 it keeps inputs with a
        large offset from being rounded). Sparse inputs stay uncentred and
        the shift goes into the phases instead (:meth:`transform_tensor`).

    Raises
    ------
    ValueError
        n_components < 1, unknown kernel, sigma <= 0.
    """

    def __init__(self, n_components, kernel="gaussian", sigma=1.0, random_state=None,
                 dtype=torch.float64, device="cpu"):
        if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)):
            raise TypeError(f"n_components must be an int >= 1, got {n_components!r}")
        if n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        check_kernel(kernel, sigma)
        self.n_components = int(n_components)
        self.kernel = kernel
        self.sigma = float(sigma)
        self.random_state = random_state
        self.dtype = dtype
        self.device = device

    def fit(self, X, sample_weight=None, frame=None):
        """Draw W and b for inputs with ``X.shape[1]`` features; ``center_`` is X's (weighted) median.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)
        sample_weight : ndarray of shape (n_samples,), optional
            Row weights of the centre (:func:`joker.center.median_center`).
        frame : joker.inputs.InputFrame, optional
            The frame of these X and weights, already fitted with
            ``sparse_center=True`` and scale :func:`feature_scale` (the estimator's): its centre
            is used instead of computing it again (a median costs a pass
            over a float64 copy of X).

        Returns
        -------
        self
        """
        d = int(X.shape[1])
        scale = feature_scale(self.sigma)
        if frame is not None and frame.sparse_center and frame.scale == scale:
            self._frame = InputFrame(frame.center.to(self.device), scale, self.dtype, self.device, sparse_center=True)
        else:
            self._frame = InputFrame.fit(X, self.dtype, self.device, scale=scale, sparse_center=True,
                                         sample_weight=sample_weight)
        self.__dict__.pop("_bounds", None)  # the phase bounds of a previous fit (_phase_bounds)
        self.center_ = self._frame.center
        self.scale_ = scale
        sigma = self.sigma / scale  # the bandwidth in the framed units (feature_scale)
        rng = np.random.default_rng(self.random_state)
        M = self.n_components
        Z = rng.standard_normal((M, d))
        if self.kernel == "gaussian":
            W = Z / sigma
        else:
            g = np.abs(rng.standard_normal((M, 1)))
            g = np.maximum(g, np.finfo(np.float64).tiny)
            W = Z / (sigma * g)
        b = rng.uniform(0.0, 2.0 * np.pi, size=M)
        self.W_ = torch.as_tensor(W, dtype=self.dtype, device=self.device)
        self._WT = self.W_.T  # the transposed view, made once (a view is an operation per call otherwise)
        self.b_ = torch.as_tensor(b, dtype=self.dtype, device=self.device)
        # phases of uncentred (sparse) rows: W (x - c) + b = W x + (b - W c), in float64
        W64 = torch.as_tensor(W, dtype=torch.float64, device=self.device)
        self._b_uncentred = (torch.as_tensor(b, dtype=torch.float64, device=self.device)
                             - W64 @ (self.center_ / scale)).to(self.dtype)
        self.n_features_in_ = d
        return self

    def transform(self, X):
        """Feature map psi(X) = sqrt(2/M) cos((X - center_) W^T + b).

        Parameters
        ----------
        X : array-like, tensor or scipy.sparse matrix of shape (n_samples, n_features)
            Any layout; centred in float64, then cast to ``dtype`` (sparse
            inputs are not centred: :class:`joker.inputs.InputFrame`).

        Returns
        -------
        tensor of shape (n_samples, n_components) (numpy array when X is numpy).

        Raises
        ------
        ValueError
            X is not 2-D with ``n_features_in_`` columns.
        """
        as_numpy = not torch.is_tensor(X)
        shape = tuple(X.shape) if hasattr(X, "shape") else np.shape(X)
        if len(shape) != 2 or shape[1] != self.n_features_in_:
            raise ValueError(f"X has {shape} shape; expected (n_samples, {self.n_features_in_})")
        out = self.transform_tensor(self._frame(X))
        return out.cpu().numpy() if as_numpy else out

    def transform_tensor(self, Xc, centred=None, out=None):
        """psi of inputs already centred (X - center_), with no input checks.

        The fast path of the solver's operators and of predict, which centre
        once in float64 and cast once.

        Parameters
        ----------
        Xc : tensor of shape (n_samples, n_features), of ``dtype`` on ``device``
            Dense, or sparse (:class:`joker.sparse.SparseRows` or a torch
            CSR tensor) and then not centred (sparse rows never are,
            :class:`joker.inputs.InputFrame`): psi = sqrt(2/M)
            cos(X W^T + (b - W center_)), a sparse X W^T product.
        centred : bool or None
            Whether Xc is centred; None: dense inputs are, sparse ones are
            not (dense rows gathered from sparse ones are not either: their
            caller says ``centred=False``).
        out : tensor of shape (n_samples, n_components), optional
            C-contiguous, of ``dtype`` on ``device``: the features are
            written there and it is returned. A caller that forms features
            block after block reuses one buffer this way: a fresh 16 MiB
            tensor per block costs its page faults again (measured, 2,048 x
            2,048 float32 blocks of HEPC rows, 2 threads: 1.35-1.65 ns per
            feature fresh against 0.50 reused).

        Returns
        -------
        tensor of shape (n_samples, n_components)

        Raises
        ------
        ValueError
            ``out`` of the wrong shape, dtype or layout.
        """
        WT = self.__dict__.get("_WT")
        WT = self.W_.T if WT is None else WT
        centred = not is_sparse(Xc) if centred is None else centred
        phase = self.b_ if centred else self._b_uncentred
        scale = (2.0 / self.n_components) ** 0.5
        n = Xc.shape[0]
        if out is not None and (tuple(out.shape) != (n, WT.shape[1]) or out.dtype != WT.dtype
                                or out.device != WT.device or not out.is_contiguous()):
            raise ValueError(f"out must be a C-contiguous {WT.dtype} tensor of shape {(n, WT.shape[1])} on "
                             f"{WT.device}, got {tuple(out.shape)} {out.dtype} on {out.device}")
        if is_sparse(Xc) or not fast_cos.available(Xc):  # a GPU, another dtype or layout, no numba
            psi = _cos_scale(matmul(Xc, WT).add_(phase) if is_sparse(Xc) else torch.addmm(phase, Xc, WT), scale)
            return psi if out is None else out.copy_(psi)
        # CPU, compiled cosines: phases, cosines and scale chunk by chunk, each chunk's output still in the
        # core's cache when the cosines read it (module constant CHUNK_ROWS). The phases' range is bounded
        # per row from the inputs (_far_rows), so the cosines need no range pass over the phases; the rare
        # rows past the bound are recomputed exactly.
        if out is None:
            out = torch.empty((n, WT.shape[1]), dtype=Xc.dtype, device=Xc.device)
        for i in range(0, n, CHUNK_ROWS):
            _cos_scale(torch.addmm(phase, Xc[i:i + CHUNK_ROWS], WT, out=out[i:i + CHUNK_ROWS]), scale, True)
        far = _far_rows(Xc, *self._phase_bounds(centred))
        if far.numel():
            out[far] = _exact_rows(Xc[far], WT, phase, scale)
        return out

    def _phase_bounds(self, centred):
        """(max_j |W_jk| per input feature k, max_j ||w_j||_2, max_j |b_j|) of this map's phases, computed once.

        ``centred`` picks the offsets: b (centred rows) or b - W center_ (sparse, uncentred rows).
        """
        cache = self.__dict__.setdefault("_bounds", {})
        if centred not in cache:
            phase = self.b_ if centred else self._b_uncentred
            W = self.W_
            if W.numel():
                cache[centred] = (W.abs().amax(0), float(torch.linalg.vector_norm(W, dim=1).max()),
                                  float(phase.abs().max()))
            else:
                cache[centred] = (torch.zeros(W.shape[1], dtype=W.dtype, device=W.device), 0.0, 0.0)
        return cache[centred]


def _far_rows(Xc, wmax, wnorm, bmax):
    """Indices of the rows whose phases may leave the compiled cosine's range (or are not finite).

    Every phase of row i obeys |x_i . w_j + b_j| <= min(sum_k |x_ik| max_j |W_jk|, ||x_i||_2 max_j
    ||w_j||_2) + max_j |b_j| (the triangle and Cauchy-Schwarz inequalities; the second is the tighter
    one for heavy-tailed Laplacian frequencies); rows where this bound exceeds ``fast_cos.MAX_ABS``
    (1e5), or is not finite, are returned. An O(n d) pass (the per-map maxima are computed once,
    :meth:`RandomFourierFeatures._phase_bounds`) instead of a range pass over the n x M phases
    (``aminmax``: 4.0 s of an 81 s full-HEPC fit, M = 2,048, d = 10), and a row's path depends on
    that row alone.

    Parameters
    ----------
    Xc : tensor of shape (n, d)
    wmax : tensor of shape (d,)
        max_j |W_jk|.
    wnorm, bmax : float
        max_j ||w_j||_2 and max_j |b_j|.

    Returns
    -------
    int64 tensor of shape (k,)
    """
    if Xc.shape[0] == 0:
        return torch.empty(0, dtype=torch.int64)
    A = Xc.abs()
    bound = torch.minimum(A @ wmax, torch.linalg.vector_norm(Xc, dim=1) * wnorm) + bmax
    return (~(bound <= fast_cos.MAX_ABS)).nonzero().flatten()


def _exact_rows(Xr, WT, phase, scale):
    """scale * cos(Xr W^T + b) with float64 phases and torch's float64 cosine (exact at every magnitude; NaN stays NaN)."""
    dt = torch.float64
    return (torch.addmm(phase.to(dt), Xr.to(dt), WT.to(dt)).cos_().mul_(scale)).to(Xr.dtype)


def _cos_scale(T, scale, in_range=False):
    """scale * cos(T) in place: the compiled loop on the CPU (:mod:`joker.fast_cos`), torch elsewhere.

    Every feature of a model (fit, certificate, predict) takes this one path
    on a given device and dtype, so its certificate is that of the map it
    predicts with. ``in_range``: the caller bounded the phases (dense CPU
    features, :func:`_far_rows`); otherwise a tile with a phase beyond
    ``fast_cos.MAX_ABS`` (sparse inputs some 1e5 bandwidths from the data)
    takes torch's cosine: within 1.4e-7.
    """
    if fast_cos.available(T):
        return fast_cos.cos_scale_(T, scale, in_range)
    return T.cos_().mul_(scale)
