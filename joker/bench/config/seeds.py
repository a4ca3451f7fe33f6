"""Per-trial seeds derived from the sweep's base seed.

Every random choice of a trial (data subset, blocks, RFF draws, centres)
uses the trial's seed, and that seed depends only on the base seed, the
dataset, the method and the repetition: adding a method or a dataset to a
sweep does not change the seeds of the other trials, and two methods on the
same dataset and repetition get different (but reproducible) seeds.
"""

from __future__ import annotations

import hashlib


def derive_seed(base_seed: int, dataset: str, method: str, repetition: int) -> int:
    """Derive a trial seed.

    Parameters
    ----------
    base_seed : int
        The sweep's base seed.
    dataset, method : str
        Dataset and solver ids.
    repetition : int
        Repetition index.

    Returns
    -------
    int
        A seed in ``[0, 2**31 - 1)`` (valid for numpy, torch and LIBSVM).
    """
    key = f"{int(base_seed)}/{dataset}/{method}/{int(repetition)}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % (2**31 - 1)


def data_seed(base_seed: int, repetition: int) -> int:
    """Seed of the data subset: shared by every method of a repetition.

    Parameters
    ----------
    base_seed, repetition : int
        Base seed of the sweep and repetition index.

    Returns
    -------
    int
        ``base_seed + repetition``, so that every method of a repetition sees
        the same rows (fairness) and repetition 0 with base seed 0 uses the
        registry's seed-0 split.
    """
    return int(base_seed) + int(repetition)


def validation_seed(base_seed: int, repetition: int) -> int:
    """Seed of a tuned cell's validation split: shared by every method and every name of the same rows.

    Parameters
    ----------
    base_seed, repetition : int
        Base seed of the sweep and repetition index.

    Returns
    -------
    int
        A seed in ``[0, 2**31 - 1)`` that depends on neither the method
        (every method is searched on the same split: fairness) nor the
        dataset's name, like :func:`data_seed`: the same rows under another
        name (``dataset=file`` on a registry set's own files, recorded as
        ``file:<name>``) get the same split, hence the same choices.
    """
    return derive_seed(base_seed, "", "validation", repetition)
