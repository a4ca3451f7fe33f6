"""Helpers of the adapter tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from baselines.base import Adapter, Budget
from ciutil import skip_or_fail
from baselines import METHODS

#: The contract test's budget: 256 MiB host, no GPU.
BUDGET_256 = Budget.from_mib("contract-256mib", 256)

#: Per solver id: binary loss, and options that keep each fit to seconds on 2 cores.
CONTRACT_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "joker-exact": ("squared_hinge", {"max_epochs": 50}),
    "joker-inexact": ("squared_hinge", {"max_components": 1024, "max_epochs": 50}),
    "falkon": ("squared", {}),
    "logfalkon": ("logistic", {}),
    "eigenpro3": ("squared", {"max_centers": 500, "epochs": 3}),
    "eigenpro4": ("squared", {"max_centers": 500, "epochs": 8}),
    "thundersvm": ("hinge", {}),
    "libsvm": ("hinge", {}),
    "ipm-lowrank": ("hinge", {"max_components": 256}),
    "sodm": ("odm", {"levels": 2, "max_epochs": 50, "n_jobs": 1}),
    "askotch": ("squared", {"max_epochs": 20}),
    "torchkm": ("hinge", {}),
}
#: lam of the contract problem (C = 10 for the SVMs).
CONTRACT_LAM = 0.1


@functools.lru_cache(maxsize=None)
def higgs_problem(n_train: int = 1500, n_rows: int = 2000) -> SimpleNamespace:
    """First ``n_rows`` rows of the HIGGS head, the first ``n_train`` for training.

    X is standardised with the training rows' mean and std; labels -1/+1;
    sigma is the median heuristic (``joker.kernels.median_sigma``) of the
    standardised training rows.
    """
    from joker.data import load_dataset
    from joker.kernels import median_sigma

    ds = load_dataset("higgs-head", n_train=n_rows, n_test=1, subset="head", dtype="float64",
                      standardize=False, download=False, progress=False)
    X, y = np.asarray(ds.X_train, dtype=np.float64), np.asarray(ds.y_train, dtype=np.float64)
    mean, std = X[:n_train].mean(axis=0), X[:n_train].std(axis=0)
    X = (X - mean) / std
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    for arr in (Xtr, ytr, Xte, yte):
        arr.setflags(write=False)
    return SimpleNamespace(Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte, sigma=float(median_sigma(Xtr)))


def skip_unavailable(reason: str) -> None:
    """Skip with ``reason``; in CI, fail instead: ``.ci/run`` installs every baseline (``make install``)."""
    skip_or_fail(reason, "`make install` installs it from ../shared/baselines (python -m baselines.install)")


def require(method: str) -> type[Adapter]:
    """The adapter class, or skip the test with the adapter's own reason (a failure in CI)."""
    cls = METHODS[method]
    ok, reason = cls.available()
    if not ok:
        skip_unavailable(reason)
    return cls


def contract_adapter(method: str, sigma: float, seed: int = 0, **extra: Any) -> Adapter:
    """An adapter for the binary HIGGS contract problem."""
    loss, options = CONTRACT_CASES[method]
    return METHODS[method](task="binary", loss=loss, sigma=sigma, lam=CONTRACT_LAM, seed=seed,
                           **{**options, **extra})
