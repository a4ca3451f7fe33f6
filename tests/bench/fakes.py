"""Test-only adapters and a tiny data loader for the harness tests.

They are wired in through ``tests/bench/conf`` (method ``_test_*`` and
dataset ``_test_tiny``) with ``--config-dir tests/bench/conf``; nothing
under ``conf/`` lists them. The adapters subclass the contract
(``baselines.base.Adapter``; numpy only: a light child process).
"""

import os
import signal
import sys
import time
from types import SimpleNamespace

import numpy as np

from baselines.base import Adapter

MIB = 2**20


#: When this module was imported (one value per process that imported it: the starter's for forked trials).
_IMPORTED_AT = time.time()

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


#: Pre-fit work of :func:`load_heavy` (kept resident for the whole trial).
_PRE_FIT = []


def load_heavy(name, n_train=None, n_test=None, subset="random", seed=0, dtype="float64"):
    """:func:`load_tiny` after 1 GiB of pre-fit work that stays resident (touched float64 pages)."""
    _PRE_FIT.append(np.ones(2**30 // 8))
    return load_tiny(name, n_train, n_test, subset, seed, dtype)


class FakeAdapter(Adapter):
    """Does what ``behaviour`` says during fit (a subclass of the real contract).

    behaviour: ``none`` (a linear rule), ``sleep`` (``seconds``), ``spin``
    (keeps one core busy for ``seconds``), ``sigkill`` (kills its own
    process), ``raise`` (RuntimeError with ``message``), ``alloc`` (holds
    ``mib`` MiB of touched memory), ``diverge``.
    """

    name = "_test_fake"
    module = "numpy"
    losses = {"binary": ("hinge",), "regression": ("squared",)}
    option_defaults = {"behaviour": "none", "seconds": 0.0, "mib": 0, "message": "deliberate failure"}
    signal = "none"

    def _plan(self, budget, n, d):
        return {"block_size": min(n, 64), "est_bytes": 0}

    def _fit(self, X, target):
        b = self.options["behaviour"]
        if b == "sleep":
            time.sleep(self.options["seconds"])
        elif b == "spin":
            end = time.monotonic() + self.options["seconds"]
            while time.monotonic() < end:
                pass
        elif b == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif b == "raise":
            raise RuntimeError(self.options["message"])
        elif b == "alloc":
            self._hold = np.ones(int(self.options["mib"] * MIB) // 8)  # touched pages: resident

    def _decision(self, X):
        return X[:, 0] + 0.5 * X[:, 1]

    def _describe(self):
        return {"behaviour": self.options["behaviour"], "pid": os.getpid(), "ppid": os.getppid(),
                "omp_threads": os.environ.get("OMP_NUM_THREADS"),
                "fakes_imported_at": _IMPORTED_AT, "wave_loaded": "wave" in sys.modules}

    def _convergence(self):
        diverged = self.options["behaviour"] == "diverge"
        return {
            "converged": not diverged, "diverged": diverged,
            "reason": "fake divergence" if diverged else "",
            "history": [{"epoch": 1, "seconds": 0.0, "gap": 0.5}, {"epoch": 2, "seconds": 0.1, "gap": 0.1}],
            "final": 0.1,
        }


class PreloadingAdapter(FakeAdapter):
    """Lists a module its fit would import (``wave``: nothing else here imports it)."""

    preload_modules = ("wave",)


class MissingAdapter(FakeAdapter):
    """An adapter whose upstream library is not installed."""

    name = "_test_missing"
    module = "fakelib"


def load_tiny_permuted(name, n_train=None, n_test=None, subset="random", seed=0, dtype="float64"):
    """:func:`load_tiny` with its test labels permuted (the training rows unchanged)."""
    ds = load_tiny(name, n_train, n_test, subset, seed, dtype)
    ds.y_test = np.random.default_rng(123).permutation(ds.y_test)
    return ds


class TuneAdapter(FakeAdapter):
    """A method whose validation accuracy depends on lam only (best at lam = 0.1; tests of ``tune=true``).

    Its decision adds ``|log10(lam / 0.1)|`` times the third feature to the
    true rule; its fit sleeps ``0.4 * sigma`` s (so of two equal
    configurations the smaller sigma is faster). ``fail_at`` ``[sigma, lam]``
    raises there; ``hang_at`` sleeps 60 s there (a configuration timeout).
    """

    name = "_test_tune"
    option_defaults = {**FakeAdapter.option_defaults, "fail_at": None, "hang_at": None}

    def _at(self, where):
        return where is not None and abs(self.sigma - where[0]) < 1e-9 and abs(self.lam - where[1]) < 1e-9

    def _fit(self, X, target):
        if self._at(self.options["fail_at"]):
            raise RuntimeError("deliberate failure of one configuration")
        time.sleep(60 if self._at(self.options["hang_at"]) else 0.4 * self.sigma)

    def _decision(self, X):
        return X[:, 0] + 0.5 * X[:, 1] + 3.0 * abs(np.log10(self.lam / 0.1)) * X[:, 2]


class ScaleAdapter(FakeAdapter):
    """A method whose fit takes ``0.002 n`` s and hangs (60 s) above ``hang_above`` rows (tests of scaling sweeps)."""

    name = "_test_scale"
    option_defaults = {**FakeAdapter.option_defaults, "hang_above": None}

    def _fit(self, X, target):
        limit = self.options["hang_above"]
        time.sleep(60 if limit is not None and len(X) > limit else 0.002 * len(X))

    def _decision(self, X):
        return X[:, 0] + 0.5 * X[:, 1]


class NoLamAdapter(FakeAdapter):
    """A method without a regulariser (``uses_lam = False``, like EigenPro): its model ignores lam.

    Its fit sleeps ``0.4 * sigma`` s, so a configuration that is fitted
    costs at least that and one recorded as the same model costs nothing.
    """

    name = "_test_tune_nolam"
    uses_lam = False

    def _fit(self, X, target):
        time.sleep(0.4 * self.sigma)

    def _decision(self, X):
        return X[:, 0] + 0.5 * X[:, 1] + (0.0 if self.sigma < 1.5 else 3.0) * X[:, 2]
