"""Anytime checkpoints of a fit: the test metric against fit seconds (issue 42).

An iterative adapter reports points of its running fit through
:meth:`baselines.base.Adapter._checkpoint` (``decision, **progress``). The
trial installs a :class:`CheckpointRecorder` as the adapter's
``checkpoint_hook``; at each point it is due for, the recorder

1. stops the fit's clocks: its own wall clock, the CPU window
   (:meth:`joker.bench.measure.contention.CpuWindow.pause`) and the memory
   meter (:meth:`joker.bench.measure.fitmem.FitMemory.pause`), so that the
   evaluation is charged neither to the fit time nor to the fit memory;
2. scores ``decision`` on the (capped) test rows with the trial's own
   metric functions (:mod:`joker.bench.trials.scoring`);
3. restarts the clocks and keeps one row: ``fit_seconds`` (the fit's time
   so far, evaluations excluded), the test metrics, the progress scalars.

Cost bound. Calls are evaluated on a geometric schedule of their index
(1, 2, 3, 4, 5, 7, 9, 12, 15, 19, ...: each due index at least
``RATIO`` times the previous), at most ``MAX_POINTS`` per fit, and on at
most ``MAX_TEST_ROWS`` test rows, a random subset drawn with a fixed seed
(:func:`checkpoint_rows`; not a prefix: the data sets that come with their
own test file keep its order, and on ijcnn1 the first 5,000 rows scored 1-2
points below all 20,000 for every method). The trial adds the final model's point
(``final`` = 1, every test row) after predict, so a curve always ends at
the reported result. ``checkpoint_eval_seconds`` is the time the
evaluations took (excluded from ``fit_seconds``). The adapter's post-fit
checks (a prediction on up to 10,000 training rows: finite values, the
divergence test) run with the clocks paused too (:meth:`CheckpointRecorder.outside_fit`,
the adapter's ``pause_hook``) and are recorded as ``fit_check_seconds``.

The rows go to ``checkpoints.csv`` beside ``result.json``; the harness
logs it as an artifact of the trial's MLflow run.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import scoring
from ..csvrows import write_rows_csv

__all__ = ["CheckpointRecorder", "MAX_POINTS", "MAX_TEST_ROWS", "RATIO", "checkpoint_rows", "due_indices",
           "write_csv"]

#: Most checkpoints evaluated per fit (the final point comes on top).
MAX_POINTS = 40
#: Test rows a checkpoint is scored on (a seeded random subset of the test set: :func:`checkpoint_rows`).
MAX_TEST_ROWS = 5000
#: Growth of the due call index: the next due call is at least ``RATIO`` times the last.
RATIO = 1.25
#: Columns first in the CSV, in this order (then the metrics and progress keys as met).
FIRST = ("checkpoint", "call", "fit_seconds", "final", "n_test_rows")


def checkpoint_rows(n_test: int, max_rows: int = MAX_TEST_ROWS, seed: int = 0) -> np.ndarray:
    """The test rows the checkpoints are scored on: all of them, or ``max_rows`` drawn at random without replacement.

    Parameters
    ----------
    n_test : int
        Test rows of the trial.
    max_rows : int
        Cap (>= 1).
    seed : int
        Seed of the draw (the same rows for every method of a cell: the trial passes its data seed).

    Returns
    -------
    ndarray of int64, shape (min(n_test, max_rows),)
        Increasing row indices (``arange(n_test)`` when ``n_test <= max_rows``).
    """
    n_test, max_rows = int(n_test), int(max_rows)
    if n_test <= max_rows:
        return np.arange(n_test, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n_test, size=max_rows, replace=False)).astype(np.int64)


def due_indices(n_calls: int, ratio: float = RATIO, max_points: int = MAX_POINTS) -> list[int]:
    """The 1-based call indices the recorder evaluates among ``n_calls`` calls.

    Parameters
    ----------
    n_calls : int
        Checkpoints the adapter reported.
    ratio : float
        Geometric growth (> 1) of the due index.
    max_points : int
        Cap on the evaluated calls.

    Returns
    -------
    list of int
        Increasing, starting at 1: ``k_{j+1} = max(k_j + 1, ceil(ratio * k_j))``.
    """
    out, k = [], 1
    while k <= n_calls and len(out) < max_points:
        out.append(k)
        k = max(k + 1, math.ceil(ratio * k))
    return out


class CheckpointRecorder:
    """The ``checkpoint_hook`` of a trial: scores checkpoints with the fit's clocks paused.

    Parameters
    ----------
    adapter : baselines.base.Adapter
        The adapter being fitted (its ``predict_from_scores`` maps scores to predictions).
    X_test : ndarray or sparse matrix of shape (n_test, n_features)
        Test inputs; ``max_rows`` of them at most (:func:`checkpoint_rows` with ``seed``), cast to the
        adapter's dtype.
    y_test : ndarray of shape (n_test,)
    task : str
        ``regression``, ``binary`` or ``multiclass``.
    classes : ndarray or None
        Training labels (classification), for the metrics.
    meters : sequence
        Objects with ``pause()`` and ``resume()`` (the CPU window, the memory meter).
    max_rows, max_points, ratio
        The cost bound (module docstring).
    seed : int, default 0
        Seed of the test rows' draw.
    """

    def __init__(self, adapter: Any, X_test: Any, y_test: np.ndarray, task: str, classes: np.ndarray | None,
                 meters: tuple = (), max_rows: int = MAX_TEST_ROWS, max_points: int = MAX_POINTS,
                 ratio: float = RATIO, seed: int = 0) -> None:
        import scipy.sparse as sp

        rows = checkpoint_rows(X_test.shape[0], max_rows, seed)
        Xs = X_test[rows]
        dtype = np.dtype(getattr(adapter, "dtype", "float64"))
        self.X = sp.csr_matrix(Xs, dtype=dtype) if sp.issparse(Xs) else np.ascontiguousarray(Xs, dtype=dtype)
        self.y = np.asarray(y_test)[rows]
        self.adapter, self.task, self.classes = adapter, task, classes
        self.meters = tuple(meters)
        self.max_points, self.ratio = int(max_points), float(ratio)
        self.rows: list[dict[str, Any]] = []
        self.calls = 0
        self.next_due = 1
        self.paused = 0.0  # seconds of evaluation inside the fit window (checkpoints and post-fit checks)
        self.checked = 0.0  # of which the adapter's post-fit checks (outside_fit)
        self.errors: list[str] = []
        self.t0: float | None = None

    def start(self) -> None:
        """Start the fit clock (right before ``adapter.fit``)."""
        self.t0 = time.perf_counter()
        self.paused = self.checked = 0.0

    @contextlib.contextmanager
    def outside_fit(self) -> Iterator[None]:
        """Stop the fit's clocks around harness work inside ``adapter.fit`` (its post-fit checks).

        The adapter's ``pause_hook``: the wall clock, the CPU window and the
        memory meter are paused as for a checkpoint; the seconds count in
        ``paused`` (so not in ``fit_seconds``) and in ``checked``.
        """
        _sync_cuda()
        at = time.perf_counter()
        for m in self.meters:
            m.pause()
        try:
            yield
        finally:
            _sync_cuda()
            for m in reversed(self.meters):
                m.resume()
            spent = time.perf_counter() - at
            self.paused += spent
            self.checked += spent

    def __call__(self, decision: Callable[[Any], Any], progress: dict[str, Any]) -> None:
        self.calls += 1
        if self.t0 is None or self.calls < self.next_due or len(self.rows) >= self.max_points:
            return
        self.next_due = max(self.calls + 1, math.ceil(self.ratio * self.calls))
        _sync_cuda()
        at = time.perf_counter()
        fit_s = at - self.t0 - self.paused
        for m in self.meters:
            m.pause()
        try:
            scores = np.asarray(decision(self.X), dtype=np.float64)
            row = {"checkpoint": len(self.rows) + 1, "call": self.calls, "fit_seconds": fit_s, "final": 0,
                   "n_test_rows": len(self.y), **self.metrics(scores), **_scalars(progress)}
            self.rows.append(row)
        except Exception as exc:  # a checkpoint that cannot be scored is noted, never fails the fit
            if len(self.errors) < 3:
                self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            _sync_cuda()
            for m in reversed(self.meters):
                m.resume()
            self.paused += time.perf_counter() - at

    def metrics(self, scores: np.ndarray, y: np.ndarray | None = None,
                y_pred: np.ndarray | None = None) -> dict[str, float]:
        """Test metrics of ``scores`` (the same functions as the final result; NaN when not finite)."""
        y = self.y if y is None else y
        if not np.all(np.isfinite(scores)):
            return {"nonfinite": 1.0}
        if self.task == "regression":
            return scoring.regression_metrics(y, scores if y_pred is None else y_pred)
        if y_pred is None:
            y_pred = self.adapter.predict_from_scores(scores)
        return scoring.classification_metrics(y, y_pred, scores, self.classes)

    def add_final(self, fit_seconds: float, metrics: dict[str, float], n_rows: int, progress: dict[str, Any]) -> None:
        """Append the final model's point (all test rows, the trial's reported metrics)."""
        keep = {k: v for k, v in metrics.items() if k.startswith("test_")}
        self.rows.append({"checkpoint": len(self.rows) + 1, "call": self.calls, "fit_seconds": fit_seconds,
                          "final": 1, "n_test_rows": n_rows, **keep, **_scalars(progress)})

    def write(self, path: Path) -> bool:
        """Write the rows as CSV (:func:`write_csv`); False when there are none."""
        return write_csv(self.rows, path)


def write_csv(rows: list[dict[str, Any]], path: Path) -> bool:
    """Rows as CSV, columns :data:`FIRST` then the others in order of appearance; False when empty."""
    return write_rows_csv(rows, path, FIRST)


def _scalars(progress: dict[str, Any]) -> dict[str, float]:
    """The finite real scalars of ``progress`` (bools as 0/1), under their names."""
    out: dict[str, float] = {}
    for key, value in (progress or {}).items():
        if isinstance(value, (bool, np.bool_)):
            out[str(key)] = float(value)
            continue
        try:
            x = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x):
            out[str(key)] = x
    return out


def _sync_cuda() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
