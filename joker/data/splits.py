"""Train/test split and subset selection, as row indices into the cache.

The split of a dataset is fixed by its registry entry; ``n_train`` /
``n_test`` / ``subset`` / ``seed`` choose rows inside it:

``files`` and ``range`` splits
    ``n_train`` rows of the official train part and ``n_test`` rows of the
    official test part. ``subset="head"``: the first rows of each part in
    file order. ``subset="random"``: ``rng = numpy.random.default_rng(seed)``
    draws ``rng.choice(N_train, n_train, replace=False)`` then
    ``rng.choice(N_test, n_test, replace=False)``, each sorted (file order).
    ``None`` (or the full size) takes the whole part.

``permutation`` splits
    The cache stores the rows in the order of the registry's permutation
    (``default_rng(split_seed).permutation(N)``, seed 0). Training rows are
    the first ``n_train`` of the order, test rows the *next* ``n_test``
    (defaults: the paper's ``floor(train_fraction * N)`` and the rest).
    ``subset="head"`` always uses the registry's order;
    ``subset="random"`` uses ``default_rng(seed).permutation(N)``, which is
    the same order when ``seed == split_seed`` (0). So
    ``load_dataset("hepc", n_train=200000, n_test=50000)`` (``seed=0``) is
    the anchors' subset: the first 200,000 rows of the seed-0 permutation
    train, the next 50,000 test; with no sizes it is the paper's 90/10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Split", "make_split", "permutation_sizes", "validation_split", "SUBSETS"]

SUBSETS = ("random", "head")


@dataclass(frozen=True)
class Split:
    """Rows of a split, as positions in the cached arrays.

    Attributes
    ----------
    train_role, test_role : str
        Cache role (``all``, ``train``, ``test``) each part reads from.
    train, test : slice or numpy.ndarray of int64
        Row positions in that role's arrays.
    info : dict
        Sizes and the choices made, for the record.
    """

    train_role: str
    train: object
    test_role: str
    test: object
    info: dict


def _check_size(what: str, n, available: int, name: str) -> int:
    if n is None:
        return available
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{what} must be an int or None, got {n!r}")
    n = int(n)
    if n < 0 or n > available:
        raise ValueError(f"{name}: {what}={n} but only {available} rows are available "
                         f"for it")
    return n


def permutation_sizes(spec, n_rows: int) -> tuple:
    """Default (train, test) sizes of a permutation split of ``n_rows`` rows.

    Parameters
    ----------
    spec : DatasetSpec
        A ``permutation`` split (gives ``train_fraction``).
    n_rows : int
        Rows parsed.

    Returns
    -------
    (int, int)
        ``floor(train_fraction * n_rows)`` and the rest.
    """
    n_tr = int(math.floor(spec.train_fraction * n_rows + 1e-9))
    return n_tr, n_rows - n_tr


def make_split(spec, n_rows: dict, *, n_train=None, n_test=None, subset="random",
               seed=0) -> Split:
    """Choose the training and test rows.

    Parameters
    ----------
    spec : DatasetSpec
    n_rows : dict of str to int
        Rows per cache role.
    n_train, n_test : int, optional
        Subset sizes (module docstring); None: the whole part.
    subset : {"random", "head"}
    seed : int
        Seed of the random choice (module docstring).

    Returns
    -------
    Split

    Raises
    ------
    ValueError
        Unknown ``subset``, sizes larger than the part, or a file shorter
        than the registry's split point.
    TypeError
        Sizes that are not integers.
    """
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    seed = int(seed)
    info = {"kind": spec.split, "subset": subset, "seed": seed}
    if spec.split == "permutation":
        N = n_rows["all"]
        d_tr, d_te = permutation_sizes(spec, N)
        n_tr = _check_size("n_train", n_train, N, spec.name) if n_train is not None else d_tr
        n_te = n_test if n_test is not None else min(d_te, N - n_tr)
        n_te = _check_size("n_test", n_te, N - n_tr, spec.name)
        order_seed = spec.split_seed if subset == "head" else seed
        if order_seed == spec.split_seed:
            tr, te = slice(0, n_tr), slice(n_tr, n_tr + n_te)
        else:
            inv0 = np.empty(N, dtype=np.int64)
            inv0[np.random.default_rng(spec.split_seed).permutation(N)] = np.arange(N)
            order = inv0[np.random.default_rng(order_seed).permutation(N)]
            tr, te = order[:n_tr], order[n_tr:n_tr + n_te]
        info.update(permutation_seed=order_seed, n_rows=N, n_train=n_tr, n_test=n_te,
                    rule=f"default_rng({order_seed}).permutation({N}): rows [0, {n_tr}) "
                         f"train, [{n_tr}, {n_tr + n_te}) test")
        return Split("all", tr, "all", te, info)

    if spec.split == "files":
        roles = ("train", "test")
        parts = {"train": (0, n_rows["train"]), "test": (0, n_rows["test"])}
    else:  # range
        N = n_rows["all"]
        if N <= spec.n_train:
            raise ValueError(f"{spec.name}: the file has {N} rows, not more than the "
                             f"split point {spec.n_train}")
        roles = ("all", "all")
        parts = {"train": (0, spec.n_train), "test": (spec.n_train, N)}
    rng = np.random.default_rng(seed)
    chosen = {}
    for part, want in (("train", n_train), ("test", n_test)):
        lo, hi = parts[part]
        n = _check_size(f"n_{part}", want, hi - lo, spec.name)
        if n == hi - lo:
            chosen[part] = slice(lo, hi)
        elif subset == "head":
            chosen[part] = slice(lo, lo + n)
        else:
            chosen[part] = lo + np.sort(rng.choice(hi - lo, n, replace=False))
        info[f"n_{part}"] = n
        info[f"{part}_part"] = [lo, hi]
    return Split(roles[0], chosen["train"], roles[1], chosen["test"], info)


def validation_split(y, task: str, fraction: float = 0.2, seed: int = 0, max_rows=None):
    """Carve a validation part out of the training rows (the test rows never enter).

    Parameters
    ----------
    y : array-like of shape (n,)
        The training targets (labels for classification).
    task : {"regression", "binary", "multiclass"}
        Classification splits are stratified: each class gives
        ``round(fraction * n_c)`` rows (at least 1 when it has 2 or more).
    fraction : float
        Share of the (used) training rows held out, in (0, 1); default 20 %.
    seed : int
        Seed of ``numpy.random.default_rng``: the same seed gives the same split.
    max_rows : int, optional
        Use at most this many training rows in all (fit + validation; a
        seeded, stratified subset), so that a search on a large dataset stays
        cheap; ``None``: all of them.

    Returns
    -------
    fit, val : numpy.ndarray of int64, sorted
        Disjoint positions into the training rows.

    Raises
    ------
    ValueError
        On a fraction outside (0, 1), fewer than 2 rows, or ``max_rows < 2``.
    """
    y = np.asarray(y)
    n = len(y)
    if not (isinstance(fraction, (int, float)) and 0 < fraction < 1):
        raise ValueError(f"validation fraction must be in (0, 1), got {fraction!r}")
    if n < 2:
        raise ValueError(f"a validation split needs at least 2 training rows, got {n}")
    if max_rows is not None and int(max_rows) < 2:
        raise ValueError(f"max_rows must be >= 2, got {max_rows!r}")
    rng = np.random.default_rng(seed)
    keep = 1.0 if max_rows is None or int(max_rows) >= n else int(max_rows) / n
    if task == "regression":
        groups = [np.arange(n)]
    else:
        groups = [np.flatnonzero(y == c) for c in np.unique(y)]
    fit, val = [], []
    for rows in groups:
        rows = rng.permutation(rows)
        if keep < 1.0:
            rows = rows[:max(1, int(round(keep * len(rows))))]
        n_val = int(round(fraction * len(rows)))
        if len(rows) >= 2:
            n_val = min(max(n_val, 1), len(rows) - 1)
        val.append(rows[:n_val])
        fit.append(rows[n_val:])
    return (np.sort(np.concatenate(fit)).astype(np.int64), np.sort(np.concatenate(val)).astype(np.int64))
