"""Joker convergence histories, read from the store.

Per run, the artifact ``history.csv`` (columns epoch, seconds, dual,
primal, gap, kkt) when the run has it, else the metric histories
``curve_primal``, ``curve_dual``, ``curve_gap`` and ``curve_seconds``
(step = epoch). Units: seconds since the start of ``fit``; primal and
dual objective values as logged (dual = -lambda J(alpha), meeting the
primal at the optimum); gap relative.
"""

from __future__ import annotations

import os
import tempfile

import pandas as pd

COLUMNS = ["epoch", "seconds", "dual", "primal", "gap", "kkt"]
META = ["run_id", "dataset", "method", "budget", "variant", "seed", "status"]


def is_joker(method: str) -> bool:
    """Whether a solver id is one of Joker's (``joker-exact``, ``joker-inexact``)."""
    return str(method).startswith("joker")


def run_history(client, run_id: str) -> tuple[pd.DataFrame, str]:
    """One run's history and where it came from.

    Returns
    -------
    history : pandas.DataFrame
        Columns :data:`COLUMNS` (missing ones NaN); empty when the run has
        neither the artifact nor the curve metrics.
    source : str
        ``history.csv``, ``curve_* metrics`` or ``''``.
    """
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    names = {a.path for a in client.list_artifacts(run_id)}
    if "history.csv" in names:
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run_id, "history.csv", tmp)
            hist = pd.read_csv(path)
        return hist.reindex(columns=COLUMNS), "history.csv"
    series = {}
    for key in ("seconds", "primal", "dual", "gap", "kkt"):
        points = client.get_metric_history(run_id, f"curve_{key}")
        if points:
            series[key] = pd.Series({p.step: p.value for p in points})
    if not series:
        return pd.DataFrame(columns=COLUMNS), ""
    hist = pd.DataFrame(series).rename_axis("epoch").reset_index()
    return hist.reindex(columns=COLUMNS), "curve_* metrics"


def joker_histories(client, runs: pd.DataFrame) -> pd.DataFrame:
    """Histories of every Joker run in ``runs`` that ended ``ok`` and has one.

    Failed runs are left out, as from the anytime curves: a figure of a
    report drawn from failed trials only showed their histories as results.

    Parameters
    ----------
    client : mlflow.MlflowClient
    runs : pandas.DataFrame
        Derived runs (:func:`reports.table.derive`).

    Returns
    -------
    pandas.DataFrame
        One row per (run, epoch): :data:`META`, :data:`COLUMNS`, ``source``.
    """
    parts = []
    ok = runs["status"] == "ok" if "status" in runs else pd.Series(True, index=runs.index)
    for _, run in runs[runs["method"].map(is_joker) & ok].iterrows():
        hist, source = run_history(client, run["run_id"])
        if hist.empty:
            continue
        for key in META:
            hist[key] = run.get(key)
        hist["source"] = source
        parts.append(hist)
    if not parts:
        return pd.DataFrame(columns=[*META, *COLUMNS, "source"])
    return pd.concat(parts, ignore_index=True)[[*META, *COLUMNS, "source"]]


def long_form(hist: pd.DataFrame) -> pd.DataFrame:
    """Histories melted to one row per (run, epoch, quantity).

    ``quantity`` is ``primal``, ``dual`` or ``gap``; ``value`` its value.
    """
    return hist.melt(id_vars=[*META, "epoch", "seconds"],
                     value_vars=["primal", "dual", "gap"],
                     var_name="quantity", value_name="value").dropna(
                         subset=["value"])
