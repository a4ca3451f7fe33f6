"""``make gpu-check``: the torch-based methods at paper scale on one GPU, checked against their budgets.

Usage::

    python -m benchmarks.gpu_check [HYDRA OVERRIDES...]

Runs the sweep ``sweeps/gpu-check.yaml`` (HEPC, ijcnn1, Skin at full size;
joker-exact, joker-inexact, falkon, logfalkon, eigenpro3, eigenpro4; gpu-2g and
gpu-10g; the caps are in that file) like any sweep, so every trial is an
MLflow run of the experiment ``gpu-check``. Then it reads the runs of that
multirun back and prints one table: method, dataset, budget, status, the
dataset's metric, fit seconds, epochs (or iterations), the method's GPU
memory (``fit_gpu_mib``, :mod:`joker.bench.measure.gpumem`) and the budget.

Exit status: 0 when every cell is fine; 1 when a cell ended ``error`` or
a method's measured GPU memory passed its budget (2 when the sweep itself
failed to run). On a machine without a CUDA GPU it says so and exits 0:
there is nothing to check. ``over_budget`` cells refused by a plan (the
arithmetic in the reason) and ``skipped`` cells (a library not installed,
a task a method does not have) are listed, not failures.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Callable

from joker.bench.records.record import MIB, default_tracking_uri

__all__ = ["Cell", "cells_from_runs", "failures", "format_table", "gpu_visible", "main"]

SWEEP = "gpu-check"
#: Metric names tried, in order, for the "epochs" column (Joker epochs, EigenPro3 epochs, CG iterations).
EPOCH_KEYS = ("n_epochs", "epochs", "n_iter")


@dataclass(frozen=True)
class Cell:
    """One trial of the check (a row of the table)."""

    method: str
    dataset: str
    budget: str
    status: str
    reason: str
    metric: str | None
    value: float | None
    fit_seconds: float | None
    epochs: float | None
    gpu_mib: float | None
    budget_mib: float | None


def gpu_visible() -> tuple[bool, str]:
    """Whether torch sees a CUDA GPU here, and a one-line description.

    Returns
    -------
    (bool, str)
        ``(True, "<name>, <memory> GiB")`` or ``(False, why)``.
    """
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return False, f"no CUDA GPU visible (torch {torch.__version__}, CUDA build {torch.version.cuda})"
    props = torch.cuda.get_device_properties(0)
    return True, f"{props.name}, {props.total_memory / 2**30:.0f} GiB"


def cells_from_runs(runs: list[dict[str, Any]]) -> list[Cell]:
    """Table rows from run records.

    Parameters
    ----------
    runs : list of dict
        Each with ``tags``, ``metrics`` and ``params`` dicts as MLflow
        stores them (tags ``method``, ``dataset``, ``budget``, ``status``,
        ``reason``, ``primary_metric``; metrics ``fit_seconds``,
        ``n_epochs``, ``fit_gpu_mib``, ...; param ``budget.gpu_bytes``).

    Returns
    -------
    list of Cell
        Sorted by dataset, method, budget.
    """
    cells = []
    for run in runs:
        tags, metrics, params = run["tags"], run["metrics"], run.get("params", {})
        metric = tags.get("primary_metric")
        gpu_bytes = params.get("budget.gpu_bytes")
        epochs = next((metrics[k] for k in EPOCH_KEYS if metrics.get(k) is not None), None)
        cells.append(Cell(
            method=tags.get("method", "?"), dataset=tags.get("dataset", "?"), budget=tags.get("budget", "?"),
            status=tags.get("status", "?"), reason=tags.get("reason", ""), metric=metric,
            value=metrics.get(metric) if metric else None, fit_seconds=metrics.get("fit_seconds"),
            epochs=epochs, gpu_mib=metrics.get("fit_gpu_mib"),
            budget_mib=int(gpu_bytes) / MIB if gpu_bytes not in (None, "", "None") else None,
        ))
    return sorted(cells, key=lambda c: (c.dataset, c.method, c.budget))


def failures(cells: list[Cell]) -> list[str]:
    """One line per failing cell: status ``error``, or a method GPU memory above its budget."""
    out = []
    for c in cells:
        where = f"{c.method} on {c.dataset} at {c.budget}"
        if c.status == "error":
            out.append(f"{where}: error: {c.reason}")
        elif c.gpu_mib is not None and c.budget_mib is not None and c.gpu_mib > c.budget_mib:
            out.append(f"{where}: method GPU memory {c.gpu_mib:.0f} MiB > budget {c.budget_mib:.0f} MiB")
    return out


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _metric_text(c: Cell) -> str:
    if c.value is None:
        return "-"
    if c.metric == "test_accuracy":
        return f"{100 * c.value:.2f}%"
    return f"{c.value:.4g}"


def format_table(cells: list[Cell]) -> str:
    """The printed table (plain text, one row per cell, reasons of non-ok cells under it)."""
    head = ("method", "dataset", "budget", "status", "metric", "fit s", "epochs", "method GPU MiB", "budget MiB")
    rows = [head] + [(c.method, c.dataset, c.budget, c.status, _metric_text(c), _num(c.fit_seconds, ".1f"),
                      _num(c.epochs, ".0f"), _num(c.gpu_mib, ".0f"), _num(c.budget_mib, ".0f")) for c in cells]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {c.method} on {c.dataset} at {c.budget}: {c.status}: {c.reason}"
             for c in cells if c.status != "ok" and c.reason]
    return "\n".join(lines + (["", "reasons:"] + notes if notes else []))


def _latest_multirun(uri: str) -> list[dict[str, Any]]:
    """Trial runs of the latest multirun of the ``gpu-check`` experiment in the store at ``uri``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(SWEEP)
    if exp is None:
        return []
    runs = client.search_runs([exp.experiment_id], max_results=5000, order_by=["attributes.start_time DESC"])
    parents = [r for r in runs if r.data.tags.get("joker_bench.kind") == "multirun"]
    if not parents:
        return []
    pid = parents[0].info.run_id
    return [{"tags": r.data.tags, "metrics": r.data.metrics, "params": r.data.params}
            for r in runs if r.data.tags.get("mlflow.parentRunId") == pid and "method" in r.data.tags]


def _tracking_uri(overrides: list[str]) -> str:
    for arg in overrides:
        if arg.startswith("mlflow.tracking_uri="):
            return arg.split("=", 1)[1]
    return default_tracking_uri()


def main(argv: list[str] | None = None, visible: Callable[[], tuple[bool, str]] = gpu_visible,
         run: Callable[[list[str]], int] | None = None) -> int:
    """Run the check; return the exit status (module docstring).

    Parameters
    ----------
    argv : list of str, optional
        Hydra overrides passed to the sweep (default: ``sys.argv[1:]``).
    visible : callable
        GPU probe (tests inject one).
    run : callable, optional
        Runs the sweep command and returns its exit status (default: a subprocess).
    """
    overrides = sys.argv[1:] if argv is None else list(argv)
    ok, what = visible()
    if not ok:
        print(f"gpu-check: {what}; nothing to check on this machine (run it on a machine with one GPU).")
        return 0
    print(f"gpu-check: {what}", flush=True)
    cmd = [sys.executable, "-m", "joker.bench", "--config-name", SWEEP, *overrides]
    rc = (run or (lambda c: subprocess.call(c)))(cmd)
    if rc != 0:
        print(f"gpu-check: the sweep exited with status {rc}", file=sys.stderr)
        return 2
    cells = cells_from_runs(_latest_multirun(_tracking_uri(overrides)))
    print(format_table(cells))
    bad = failures(cells)
    for line in bad:
        print("FAILED: " + line)
    if not cells:
        print("gpu-check: no trial runs found in the store", file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
