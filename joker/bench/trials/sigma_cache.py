"""The median-heuristic bandwidth, computed once per training set and cached.

Every method of a sweep trains on the same (dataset, n_train, subset,
seed) subset, so the median heuristic (:func:`joker.kernels.median_sigma`)
gives them all the same bandwidth. It is computed by the first trial that
needs it and written to

    <JOKER_DATA_HOME>/sigma/<key>.json      (beside the dataset array cache)

where the key hashes the training matrix itself (shape, dtype and the
sha256 of its bytes) and the heuristic's own settings (subsample size and
seed). Keying on the data rather than on the config means a changed
loader, subset or preprocessing can never reuse a stale value. Later trials
read the number back: no trial repeats the O(m d) selection, and the
figure of the first trial is like the others'. Writes are atomic, so
parallel trials at worst compute the same value twice.

Each file carries ``check``, the sha256 of its other fields
(:func:`joker.data.cache_check.json_check`): a value damaged in place (a
byte flipped, the size and time kept) reads as a mismatch and is computed
again, as is an entry written before the check existed. ``python -m
joker.data verify`` lists the damaged ones.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from joker.data.cache_check import json_check, read_checked_json

from ..atomic import write_json_atomic

__all__ = ["MEDIAN_N", "MEDIAN_SEED", "median_sigma_cached", "read_entry", "sigma_key"]

#: Rows of the subsample the median heuristic draws (the paper's 5,000).
MEDIAN_N = 5000
#: Seed of that subsample.
MEDIAN_SEED = 0


def sigma_key(X: np.ndarray, n: int = MEDIAN_N, seed: int = MEDIAN_SEED) -> str:
    """Cache key of the median heuristic on ``X``.

    Parameters
    ----------
    X : numpy.ndarray of shape (n_samples, n_features)
        The training features (any dtype; hashed as stored, C order).
    n, seed : int
        The heuristic's subsample size and seed.

    Returns
    -------
    str
        24 hex digits of sha256 over shape, dtype, n, seed and the bytes of ``X``.
    """
    h = hashlib.sha256(json.dumps([list(X.shape), str(X.dtype), int(n), int(seed)]).encode())
    rows = np.ascontiguousarray(X)
    step = max(1, (64 * 2**20) // max(1, rows.strides[0] if rows.ndim else 1))
    for i in range(0, len(rows), step):  # blocks: no full copy of a memory-mapped matrix
        h.update(np.ascontiguousarray(rows[i:i + step]).tobytes())
    return h.hexdigest()[:24]


def read_entry(path: Path) -> float | None:
    """The bandwidth of a cache file, or None when it is absent, unreadable, unchecked or damaged."""
    entry = read_checked_json(path)
    try:
        value = float(entry["sigma"]) if entry is not None else 0.0
    except (KeyError, TypeError, ValueError):
        return None
    return value if value > 0 else None


def median_sigma_cached(X: np.ndarray, cache_dir: Path | None = None, n: int = MEDIAN_N,
                        seed: int = MEDIAN_SEED) -> tuple[float, bool]:
    """Median-heuristic bandwidth of ``X``, from the cache when it holds it.

    Parameters
    ----------
    X : numpy.ndarray of shape (n_samples, n_features)
        Standardised training features.
    cache_dir : pathlib.Path, optional
        Folder of the cached values; default ``<JOKER_DATA_HOME>/sigma``.
    n, seed : int
        Subsample size and seed of :func:`joker.kernels.median_sigma`.

    Returns
    -------
    (float, bool)
        The bandwidth (> 0, units of the features) and whether it came from
        the cache.

    Raises
    ------
    ValueError
        As :func:`joker.kernels.median_sigma` (fewer than 2 rows, NaN, a
        median distance of 0).
    """
    if cache_dir is None:
        from joker.data.sources import data_home

        cache_dir = data_home() / "sigma"
    path = Path(cache_dir) / f"{sigma_key(X, n, seed)}.json"
    cached = read_entry(path)
    if cached is not None:
        return cached, True
    from joker.kernels import median_sigma

    value = float(median_sigma(X, n=n, seed=seed))
    entry = {"sigma": value, "n": int(n), "seed": int(seed), "shape": list(X.shape), "dtype": str(X.dtype)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {**entry, "check": json_check(entry)})
    except OSError:  # a read-only cache only costs the recomputation
        pass
    return value, False
