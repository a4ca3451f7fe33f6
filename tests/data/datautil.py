"""Helpers of the joker.data tests (imported as ``datautil``)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

__all__ = ["median_sigma", "write_susy_like"]


def median_sigma(X, n=5000, seed=0) -> float:
    """The anchors' median heuristic: median distance of n seeded train points."""
    from scipy.spatial.distance import pdist

    idx = np.random.default_rng(seed).choice(X.shape[0], n, replace=False)
    return float(np.median(pdist(np.asarray(X[idx], dtype=np.float64))))


def write_susy_like(path: Path, n_rows: int, n_features: int = 18, seed: int = 0,
                    compress: bool = True) -> np.ndarray:
    """A file in the SUSY/HIGGS layout: label (1.0/0.0) first, '%.18e' floats.

    Returns
    -------
    numpy.ndarray, shape (n_rows, 1 + n_features)
        The values written (exactly representable in float32, as published).
    """
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n_rows, 1 + n_features)).astype(np.float32).astype(np.float64)
    A[:, 0] = rng.integers(0, 2, n_rows)
    text = "".join(",".join(f"{v:.18e}" for v in row) + "\n" for row in A)
    data = text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return A
