"""Rank-k kernel factors U (K ~= U U^T) for the low-rank IPM.

- Random Fourier features: the map of ``joker-inexact``
  (:class:`joker.features.RandomFourierFeatures`) with the feature seed
  derived from ``random_state`` exactly as :class:`joker.JokerClassifier`
  derives it, so the same ``random_state`` gives the same features.
- Nystroem (Williams and Seeger, NIPS 2001): k landmarks drawn without
  replacement, U = K(X, Z) Q diag(w)^-1/2 with K(Z, Z) = Q diag(w) Q^T;
  eigenvalues below ``eps * max(w)`` are dropped (the factor then has fewer
  than k columns). Inputs are framed as the exact Joker kernel frames them
  (:class:`joker.inputs.InputFrame`: centred in float64, divided by a power
  of two near sigma, then cast), so a large offset or a tiny or huge scale
  of X does not reach the float32 kernel arithmetic.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils import check_random_state

from ..features import RandomFourierFeatures
from ..inputs import InputFrame, bandwidth_scale
from ..kernels import check_kernel, kernel_block

__all__ = ["FACTORS", "joker_feature_seed", "NystroemFactor", "make_factor"]

FACTORS = ("rff", "nystroem")


def joker_feature_seed(random_state):
    """The feature seed Joker's estimators draw from ``random_state``.

    Parameters
    ----------
    random_state : int, numpy RandomState or None

    Returns
    -------
    int
        ``check_random_state(random_state).randint(2**31 - 1)``, the first draw
        :class:`joker.JokerClassifier` makes in ``fit``.
    """
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


class NystroemFactor:
    """Nystroem factor of the Gaussian or Laplacian kernel (module docstring).

    Parameters
    ----------
    n_components : int
        Number of landmarks k (>= 1, <= n_samples at fit).
    kernel : {"gaussian", "laplacian"}
    sigma : float
        Bandwidth (> 0).
    random_state : int or None
        Seed of the landmark draw (numpy ``default_rng``).
    dtype : torch.dtype
    device : str or torch.device

    Attributes
    ----------
    landmarks_ : tensor of shape (n_components, n_features)
        The landmark rows in the frame's units ((x - mean) / scale).
    frame_ : joker.inputs.InputFrame
        Centring and scale of the inputs (the training mean, a power of two near sigma).
    projection_ : tensor of shape (n_components, rank)
        Q diag(w)^-1/2 of the kept eigenpairs.

    Raises
    ------
    ValueError
        n_components < 1 or above the number of rows, bad kernel or sigma.
    """

    def __init__(self, n_components, kernel="gaussian", sigma=1.0, random_state=None,
                 dtype=torch.float64, device="cpu"):
        check_kernel(kernel, sigma)
        if int(n_components) < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        self.n_components = int(n_components)
        self.kernel = kernel
        self.sigma = float(sigma)
        self.random_state = random_state
        self.dtype = dtype
        self.device = device

    def fit(self, X):
        """Draw the landmarks and factor K(Z, Z).

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        self
        """
        n = int(X.shape[0])
        if self.n_components > n:
            raise ValueError(f"n_components={self.n_components} landmarks > n_samples={n}")
        idx = np.sort(np.random.default_rng(self.random_state).choice(n, self.n_components, replace=False))
        self.frame_ = InputFrame.fit(X, self.dtype, self.device, scale=bandwidth_scale(self.sigma))
        self._sigma = self.sigma / self.frame_.scale
        Z = self.frame_(X[idx] if not torch.is_tensor(X) else X[torch.as_tensor(idx, device=X.device)])
        K = kernel_block(Z, Z, self.kernel, self._sigma).to(torch.float64)
        w, Q = torch.linalg.eigh(0.5 * (K + K.T))
        keep = w > w.max() * (Z.shape[0] * torch.finfo(torch.float64).eps)
        self.landmarks_ = Z
        self.projection_ = (Q[:, keep] / w[keep].sqrt()).to(self.dtype)
        self.n_features_in_ = int(X.shape[1])
        return self

    def transform(self, X):
        """Factor rows U(X) = K(X, Z) Q diag(w)^-1/2.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        tensor of shape (n_samples, rank)
        """
        return kernel_block(self.frame_(X), self.landmarks_, self.kernel, self._sigma) @ self.projection_


def make_factor(factor, n_components, kernel, sigma, random_state, dtype, device):
    """The unfitted factor map named ``factor`` ("rff" or "nystroem").

    Parameters
    ----------
    factor : {"rff", "nystroem"}
    n_components : int
    kernel : {"gaussian", "laplacian"}
    sigma : float
    random_state : int, RandomState or None
        For "rff" the seed goes through :func:`joker_feature_seed` (same
        features as ``joker-inexact`` with the same ``random_state``).
    dtype : torch.dtype
    device : str or torch.device

    Returns
    -------
    RandomFourierFeatures or NystroemFactor

    Raises
    ------
    ValueError
        Unknown factor name.
    """
    seed = joker_feature_seed(random_state)
    if factor == "rff":
        return RandomFourierFeatures(int(n_components), kernel, sigma, random_state=seed, dtype=dtype,
                                     device=device)
    if factor == "nystroem":
        return NystroemFactor(int(n_components), kernel, sigma, random_state=seed, dtype=dtype, device=device)
    raise ValueError(f"factor={factor!r}; expected one of {list(FACTORS)}")
