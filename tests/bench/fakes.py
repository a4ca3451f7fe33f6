"""Test-only adapters and a tiny data loader for the harness tests.

They are wired in through ``tests/bench/conf`` (method ``_test_*`` and
dataset ``_test_tiny``) with ``--config-dir tests/bench/conf``; nothing
under ``conf/`` lists them. They follow the adapter API of
docs/contracts.md by duck typing (numpy only: a light child process).
"""

import os
import signal
import time
from types import SimpleNamespace

import numpy as np

MIB = 2**20


def load_tiny(name, n_train=None, n_test=None, subset="random", seed=0, dtype="float64"):
    """A small separable binary problem (labels -1/+1, d = 5)."""
    rng = np.random.default_rng(seed)
    n_train = n_train or 200
    n_test = n_test or 100
    X = rng.standard_normal((n_train + n_test, 5)).astype(dtype)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    return SimpleNamespace(
        X_train=X[:n_train], y_train=y[:n_train], X_test=X[n_train:], y_test=y[n_train:],
        task="binary", name=name, n_features=5, source={"origin": "synthetic"},
    )


class FakeAdapter:
    """Does what ``behaviour`` says during fit.

    behaviour: ``none`` (a linear rule), ``sleep`` (``seconds``), ``sigkill``
    (kills its own process), ``raise`` (RuntimeError with ``message``),
    ``alloc`` (holds ``mib`` MiB of touched memory), ``diverge``.
    """

    name = "_test_fake"

    def __init__(self, *, task, loss, kernel="gaussian", sigma=1.0, lam=1.0, seed=0,
                 dtype="float64", device="cpu", n_threads=1, behaviour="none",
                 seconds=0.0, mib=0, message="deliberate failure"):
        self.behaviour, self.seconds, self.mib, self.message = behaviour, seconds, mib, message
        self.plan_ = {}

    @classmethod
    def available(cls):
        return True, ""

    @classmethod
    def supports(cls, task, n_classes):
        return True, ""

    def plan(self, budget, n, d):
        self.plan_ = {"block_size": min(n, 64), "host_bytes": int(budget.host_bytes)}
        return self.plan_

    def fit(self, X, y):
        b = self.behaviour
        if b == "sleep":
            time.sleep(self.seconds)
        elif b == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif b == "raise":
            raise RuntimeError(self.message)
        elif b == "alloc":
            self._hold = np.ones(int(self.mib * MIB) // 8)  # touched pages: resident
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return X[:, 0] + 0.5 * X[:, 1]

    def predict(self, X):
        return np.where(self.decision_function(X) > 0, self.classes_[-1], self.classes_[0])

    def describe(self):
        return {"library": "fake", "version": "0", "behaviour": self.behaviour}

    def convergence(self):
        diverged = self.behaviour == "diverge"
        return {
            "signal": "none", "converged": not diverged, "diverged": diverged,
            "reason": "fake divergence" if diverged else "",
            "history": [{"epoch": 1, "seconds": 0.0, "gap": 0.5}, {"epoch": 2, "seconds": 0.1, "gap": 0.1}],
            "final": 0.1,
        }


class MissingAdapter(FakeAdapter):
    """An adapter whose upstream library is not installed."""

    name = "_test_missing"

    @classmethod
    def available(cls):
        return False, "fakelib is not installed"
