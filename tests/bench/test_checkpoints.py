"""Anytime checkpoints (issue 42): every iterative adapter reports points through the harness's hook.

Real data: a9a (LIBSVM), 600 training and 400 test rows. The recorder scores each checkpoint on the test
rows; the last checkpoint is the fitted model, so its test accuracy equals the final model's on the same
rows (a real value, not a count alone).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from baselines.base import Budget
from baselines.registry import get_adapter
from joker.bench.measure.contention import CpuWindow
from joker.bench.measure.fitmem import FitMemory
from joker.bench.trials.checkpoints import CheckpointRecorder, due_indices


@pytest.fixture(scope="module")
def a9a():
    from joker.data import load_dataset

    return load_dataset("a9a", n_train=600, n_test=400, seed=0, dtype="float64")


OPTIONS = {
    "joker-exact": {"max_epochs": 20},
    "joker-inexact": {"max_epochs": 20, "n_components": 256},
    "falkon": {"M": 200},
    "logfalkon": {"M": 200},
    "eigenpro3": {"epochs": 3, "n_centers": 300},
    "eigenpro4": {"epochs": 3, "n_centers": 300},
    "ipm-lowrank": {"n_components": 64},
    "askotch": {"block_size": 200, "max_epochs": 5, "tol": 1e-12},   # a checkpoint per pass (3 steps)
    "sodm": {"levels": 2, "max_epochs": 20, "tol": 1e-8},   # the final level's certificates
}
LOSS = {"joker-exact": "hinge", "joker-inexact": "hinge", "falkon": "squared", "logfalkon": "logistic",
        "eigenpro3": "squared", "eigenpro4": "squared", "ipm-lowrank": "hinge", "askotch": "squared",
        "sodm": "odm"}


@pytest.mark.parametrize("method", list(OPTIONS))
def test_adapter_reports_checkpoints(a9a, method):
    cls = get_adapter(method)
    ok, why = cls.available()
    if not ok:
        pytest.skip(why)
    adapter = cls(task="binary", loss=LOSS[method], kernel="gaussian", sigma=5.0, lam=1.0, seed=0,
                  dtype="float64", device="cpu", n_threads=1, **OPTIONS[method])
    adapter.plan(Budget.default(), *a9a.X_train.shape)
    classes = np.unique(a9a.y_train)
    rec = CheckpointRecorder(adapter, a9a.X_test, a9a.y_test, "binary", classes, max_points=1000, ratio=1.0)
    adapter.checkpoint_hook = rec
    rec.start()
    adapter.fit(a9a.X_train, a9a.y_train)
    adapter.checkpoint_hook = None
    assert not rec.errors, rec.errors
    assert len(rec.rows) >= 3, f"{method}: {len(rec.rows)} checkpoints"
    secs = [r["fit_seconds"] for r in rec.rows]
    assert all(b >= a for a, b in zip(secs, secs[1:]))
    final = np.mean(adapter.predict(a9a.X_test) == a9a.y_test)
    assert rec.rows[-1]["test_accuracy"] == pytest.approx(final, abs=1e-12)
    assert all(0.0 <= r["test_accuracy"] <= 1.0 for r in rec.rows)


def test_due_indices_geometric_and_capped():
    assert due_indices(20) == [1, 2, 3, 4, 5, 7, 9, 12, 15, 19]
    assert len(due_indices(10**6)) == 40
    assert due_indices(10**6, max_points=5) == [1, 2, 3, 4, 5]
    assert due_indices(0) == []


class _Slow:
    """An adapter stand-in whose checkpoints are slow to score: 0.2 s each, 100 MiB held while scoring."""

    dtype = "float64"

    def predict_from_scores(self, s):
        return np.where(s > 0, 1, -1)


def test_evaluation_time_and_memory_are_not_fit_time():
    X, y = np.ones((10, 2)), np.ones(10)
    window, meter = CpuWindow(1), FitMemory()
    rec = CheckpointRecorder(_Slow(), X, y, "binary", np.array([-1, 1]), meters=(window, meter), ratio=1.0)

    def decision(Xq):
        buf = np.ones(100 * 2**20 // 8)  # 100 MiB touched while scoring: the harness's, not the method's
        time.sleep(0.2)
        return np.full(len(Xq), buf[0])

    meter.start()
    window.start()
    rec.start()
    t = time.perf_counter()
    for _ in range(3):
        rec(decision, {"epoch": 1})
    wall = time.perf_counter() - t
    usage, used = window.stop(), meter.stop()
    assert rec.paused >= 0.6 and wall - rec.paused < 0.1
    assert usage.wall_s < 0.1
    assert used.fit_bytes < 50 * 2**20
    assert [r["test_accuracy"] for r in rec.rows] == [1.0, 1.0, 1.0]
    assert rec.rows[1]["fit_seconds"] < 0.1  # the first evaluation's 0.2 s is not in the second point's time


def test_checkpoint_rows_are_a_seeded_random_subset_not_a_prefix():
    """At most MAX_TEST_ROWS rows, drawn without replacement by the data seed: the same for every method of a cell,
    sorted, all rows when there are fewer; the recorder scores exactly those rows."""
    from joker.bench.trials.checkpoints import MAX_TEST_ROWS, checkpoint_rows

    rows = checkpoint_rows(20_000, seed=0)
    assert len(rows) == MAX_TEST_ROWS == len(np.unique(rows)) and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, np.sort(np.random.default_rng(0).choice(20_000, MAX_TEST_ROWS, replace=False)))
    assert rows.max() > 15_000 and rows.min() < 100  # spread over the test set, not its first quarter
    np.testing.assert_array_equal(checkpoint_rows(20_000, seed=0), rows)
    assert not np.array_equal(checkpoint_rows(20_000, seed=1), rows)
    np.testing.assert_array_equal(checkpoint_rows(300, seed=5), np.arange(300))
    X = np.arange(12.0).reshape(12, 1)
    y = np.where(np.arange(12) % 2, 1.0, -1.0)
    rec = CheckpointRecorder(_Slow(), X, y, "binary", np.array([-1, 1]), max_rows=4, seed=3)
    np.testing.assert_array_equal(rec.X[:, 0], checkpoint_rows(12, 4, 3).astype(float))
    np.testing.assert_array_equal(rec.y, y[checkpoint_rows(12, 4, 3)])


def test_post_fit_checks_are_not_fit_time(a9a, monkeypatch):
    """Adapter.fit runs its post-fit checks (a prediction on up to CHECK_ROWS training rows) inside the harness's
    pause_hook: with the checks slowed by 0.5 s, the recorder counts them in `checked` and `paused`, and the fit's
    own time (wall - paused) is the solve alone; without the hook they run as before, on the fit's clock."""
    cls = get_adapter("libsvm")
    ok, why = cls.available()
    if not ok:
        pytest.skip(why)
    original = cls._post_fit_checks
    ran = []

    def slow_checks(self, X, target):
        time.sleep(0.5)
        ran.append(X.shape[0])
        return original(self, X, target)

    monkeypatch.setattr(cls, "_post_fit_checks", slow_checks)
    adapter = cls(task="binary", loss="hinge", kernel="gaussian", sigma=5.0, lam=1.0, seed=0, dtype="float64",
                  device="cpu", n_threads=1)
    adapter.plan(Budget.default(), *a9a.X_train.shape)
    window, meter = CpuWindow(1), FitMemory()
    rec = CheckpointRecorder(adapter, a9a.X_test, a9a.y_test, "binary", np.unique(a9a.y_train),
                             meters=(window, meter))
    adapter.pause_hook = rec.outside_fit
    meter.start()
    window.start()
    rec.start()
    t = time.perf_counter()
    adapter.fit(a9a.X_train, a9a.y_train)
    wall = time.perf_counter() - t
    usage = window.stop()
    meter.stop()
    assert ran == [600]
    assert rec.checked >= 0.5 and rec.paused == rec.checked
    assert wall - rec.paused < 0.5 and usage.wall_s < 0.5  # the solve of 600 rows: well under the sleep
    adapter.pause_hook = None
    t = time.perf_counter()
    adapter.fit(a9a.X_train, a9a.y_train)
    assert time.perf_counter() - t >= 0.5 and rec.checked < 1.0 and ran == [600, 600]
