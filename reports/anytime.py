"""Anytime curves, stored predictions, and the verdict: the best method at each time and memory budget.

Read from the store, per used run:

- ``checkpoints.csv`` (:mod:`joker.bench.trials.checkpoints`): the test
  metric at fit seconds during the fit (evaluation time excluded), and the
  final point (``final`` = 1). A run without it (LIBSVM, ThunderSVM, runs
  of older sweeps) gives its final point only, from its metrics.
- ``predictions.npz``: the test rows' ``y_true`` and ``y_pred``, for the
  paired tests of :mod:`reports.significance` and the trivial flag.

The verdict (:func:`verdict`) reads the curves: at a time budget ``T``,
a method's metric is that of its last checkpoint at or before ``T`` (the
model one would hold by stopping the fit at ``T``); the best method is the
one with the best such metric (highest accuracy, lowest RMSE) among the
ok runs of the (dataset, memory budget). Budgets: :data:`TIME_BUDGETS` and
the trial's own time limit (``timeout_s``).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pandas as pd

from . import significance, vocab

#: Verdict column: the methods a paired test cannot tell from the best (not a claim that they are as good).
ALSO = "also not distinguishable from the best (paired test, p ≥ 0.05)"
#: Time budgets (s) of the verdict, besides each cell's own time limit.
TIME_BUDGETS = (1.0, 10.0, 60.0)
CURVE_COLUMNS = ["run_id", "dataset", "budget", "method", "variant", "label", "metric_name", "fit_seconds",
                 "metric", "final", "source"]


def lower_is_better(metric_name) -> bool:
    """Whether a smaller value of the metric is better (RMSE, MSE, errors)."""
    name = str(metric_name)
    return any(w in name for w in ("rmse", "mse", "error", "loss"))


def label(method, variant) -> str:
    """``method`` or ``method (variant)``."""
    return f"{method} ({variant})" if isinstance(variant, str) and variant else str(method)


#: What a damaged artifact costs the report, after ``; `` in its warning line.
CONSEQUENCE = {"checkpoints.csv": "its anytime curve is its final point only",
               "predictions.npz": "its paired test is left out"}


def _artifact(client, run_id: str, name: str, names: set, read):
    """``read(path)`` of one artifact: (value, None), (None, None) when absent, (None, why) when unreadable."""
    if name not in names:
        return None, None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return read(client.download_artifacts(run_id, name, tmp)), None
        except Exception as exc:  # truncated, corrupted, not the format: said, never silent
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return None, f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _npz(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _usable_rows(c: pd.DataFrame, metric_name) -> pd.Series:
    """Rows with a fit time and either the metric or the recorder's ``nonfinite`` mark (a model that
    scored NaN/inf: no metric by design, :meth:`joker.bench.trials.checkpoints.CheckpointRecorder.metrics`)."""
    legit = (pd.to_numeric(c["nonfinite"], errors="coerce") == 1) if "nonfinite" in c else pd.Series(False, c.index)
    value = (pd.to_numeric(c[metric_name], errors="coerce").notna() if metric_name in c
             else pd.Series(False, c.index))
    return pd.to_numeric(c["fit_seconds"], errors="coerce").notna() & (value | legit)


def _checkpoint_problem(c: pd.DataFrame, metric_name, expected) -> str | None:
    """Why a read ``checkpoints.csv`` cannot be used in full, or ``None``."""
    if "fit_seconds" not in c:
        return "unreadable (no column fit_seconds)"
    usable = _usable_rows(c, metric_name)
    if metric_name not in c and not usable.all():
        return f"unreadable (no column {metric_name})"
    bad = int((~usable).sum())
    if bad:
        return f"truncated or corrupted ({bad} of {len(c)} rows without a number)"
    if pd.notna(expected) and len(c) < int(expected):
        return f"truncated ({len(c)} of {int(expected)} rows read)"
    return None


def load_artifacts(client, runs: pd.DataFrame, problems: list | None = None) -> tuple[dict, dict]:
    """The checkpoints and predictions of every ok run that has them.

    Parameters
    ----------
    client : mlflow.MlflowClient
    runs : pandas.DataFrame
        Derived runs (:func:`reports.table.derive`).
    problems : list, optional
        Appended to: one dict per (run, file) that an ok run should have
        and that is missing, unreadable, truncated or corrupted (keys
        ``run_id``, ``method``, ``dataset``, ``file``, ``problem``;
        :func:`problem_line` words it). A run "should have" both files
        when it logged ``n_checkpoints`` (the harness writes both from
        issue 42 on; ``checkpoints.csv`` only when ``n_checkpoints`` > 0)
        or has the other file; runs recorded before (neither) are silent.

    Returns
    -------
    checkpoints : dict
        run_id -> DataFrame of ``checkpoints.csv`` (its usable rows only).
    predictions : dict
        run_id -> dict of arrays (``y_true``, ``y_pred``, maybe ``scores``).
    """
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    ckpt, preds = {}, {}
    found = problems if problems is not None else []
    for _, r in runs[runs["status"] == "ok"].iterrows():
        run_id = r["run_id"]
        base = {"run_id": run_id, "method": r["method"], "dataset": r["dataset"]}
        try:
            names = {a.path for a in client.list_artifacts(run_id)}
        except Exception as exc:
            found.append({**base, "file": "artifacts", "problem": f"not listed ({type(exc).__name__}: {exc})"})
            continue
        expected = r.get("n_checkpoints", np.nan)
        new_record = pd.notna(expected) or bool(names & set(CONSEQUENCE))
        c, why = _artifact(client, run_id, "checkpoints.csv", names, pd.read_csv)
        if c is not None:
            why = _checkpoint_problem(c, r["metric_name"], expected)
            if why and why.startswith("unreadable"):
                c = None
            elif why:
                c = c[_usable_rows(c, r["metric_name"])].reset_index(drop=True)
        elif why:
            why = f"unreadable ({why})"
        elif new_record and (pd.isna(expected) or expected > 0):
            why = "missing"
        if why:
            found.append({**base, "file": "checkpoints.csv", "problem": why})
        if c is not None and len(c):
            ckpt[run_id] = c
        p, why = _artifact(client, run_id, "predictions.npz", names, _npz)
        if p is not None and not ("y_pred" in p and "y_true" in p):
            why, p = f"unreadable (no {'y_true' if 'y_true' not in p else 'y_pred'} array)", None
        elif p is not None and len(np.asarray(p["y_true"])) != len(np.asarray(p["y_pred"])):
            why, p = (f"corrupted (y_true has {len(p['y_true'])} rows, y_pred {len(p['y_pred'])})"), None
        elif why:
            why = f"unreadable ({why})"
        elif p is None and new_record:
            why = "missing"
        if why:
            found.append({**base, "file": "predictions.npz", "problem": why})
        if p is not None:
            preds[run_id] = p
    return ckpt, preds


def problem_line(problem: dict) -> str:
    """The console line of one damaged artifact (:func:`load_artifacts`).

    ``run <id> (<method>/<dataset>): predictions.npz unreadable (<error>); its paired test is left out``.
    """
    what = CONSEQUENCE.get(problem["file"], "its checkpoints and paired test are left out")
    who = f"run {problem['run_id']} ({problem['method']}/{problem['dataset']})"
    return f"{who}: {problem['file']} {problem['problem']}; {what}"


def read_counts(runs: pd.DataFrame, checkpoints: dict, problems: list) -> pd.Series:
    """``n_checkpoints`` as read: the rows of each run's usable ``checkpoints.csv``.

    A run whose file was missing or damaged counts what was read (0 when
    nothing); a run that never had one keeps its logged count (NaN for old
    runs, 0 for a run without checkpoints). Indexed like ``runs``.
    """
    damaged = {p["run_id"] for p in problems if p["file"] in ("checkpoints.csv", "artifacts")}
    logged = runs["n_checkpoints"] if "n_checkpoints" in runs else pd.Series(np.nan, index=runs.index)
    return pd.Series([float(len(checkpoints[rid])) if rid in checkpoints else (0.0 if rid in damaged else n)
                      for rid, n in zip(runs["run_id"], logged)], index=runs.index)


def curves(runs: pd.DataFrame, checkpoints: dict) -> pd.DataFrame:
    """Long table of the anytime points of every ok run (metric in the report's unit).

    Parameters
    ----------
    runs : pandas.DataFrame
        Derived runs.
    checkpoints : dict
        From :func:`load_artifacts`.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CURVE_COLUMNS`; ``source`` is ``checkpoint`` or
        ``final`` (a run without checkpoints: its reported fit time and
        metric). Points with a metric missing are dropped.
    """
    rows = []
    for _, r in runs[runs["status"] == "ok"].iterrows():
        name = r["metric_name"]
        scale = vocab.metric_scale(name)
        base = {"run_id": r["run_id"], "dataset": r["dataset"], "budget": r["budget"], "method": r["method"],
                "variant": r.get("variant", ""), "label": label(r["method"], r.get("variant", "")),
                "metric_name": name}
        c = checkpoints.get(r["run_id"])
        if c is not None and name in c and "fit_seconds" in c:
            for _, p in c.iterrows():
                rows.append({**base, "fit_seconds": float(p["fit_seconds"]), "metric": float(p[name]) * scale,
                             "final": int(p.get("final", 0) or 0), "source": "checkpoint"})
            if not (c.get("final", pd.Series(dtype=float)) == 1).any():  # a run without its final row
                rows.append({**base, "fit_seconds": r["fit_seconds"], "metric": r["metric"], "final": 1,
                             "source": "final"})
        else:
            rows.append({**base, "fit_seconds": r["fit_seconds"], "metric": r["metric"], "final": 1,
                         "source": "final"})
    out = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    return out[out["metric"].notna() & out["fit_seconds"].notna()].reset_index(drop=True)


def checkpoint_counts(runs: pd.DataFrame, checkpoints: dict) -> pd.Series:
    """Checkpoints (final row included) of each run, 0 when it has none; indexed like ``runs``."""
    return runs["run_id"].map(lambda rid: len(checkpoints[rid]) if rid in checkpoints else 0)


def at_budget(points: pd.DataFrame, seconds: float, lower: bool) -> pd.DataFrame:
    """Each run's metric at a time budget: its last point with ``fit_seconds <= seconds``.

    Returns
    -------
    pandas.DataFrame
        One row per run that has such a point (the columns of ``points``).
    """
    inside = points[points["fit_seconds"] <= seconds]
    if inside.empty:
        return inside
    return inside.sort_values(["run_id", "fit_seconds", "final"]).groupby("run_id").tail(1)


def _cell_budget(runs: pd.DataFrame) -> float | None:
    t = pd.to_numeric(runs.get("params.timeout_s"), errors="coerce") if "params.timeout_s" in runs else None
    if t is None or t.dropna().empty:
        return None
    return float(t.dropna().max())


def trivial_levels(runs: pd.DataFrame, predictions: dict) -> dict:
    """Per dataset, the trivial predictor's metric on the test rows, in the report's unit.

    The majority class's share (accuracy, %) or the standard deviation of
    the targets (RMSE), from the first stored ``y_true`` of the dataset;
    other metrics have none.
    """
    out = {}
    for _, r in runs[runs["run_id"].isin(list(predictions))].iterrows():
        if r["dataset"] in out:
            continue
        y = np.asarray(predictions[r["run_id"]]["y_true"])
        name = r["metric_name"]
        if name == "test_accuracy":
            out[r["dataset"]] = 100.0 * np.unique(y, return_counts=True)[1].max() / len(y)
        elif name == "test_rmse":
            out[r["dataset"]] = float(np.std(y.astype(np.float64)))
    return out


def verdict(points: pd.DataFrame, runs: pd.DataFrame, cells: pd.DataFrame | None = None,
            budgets=TIME_BUDGETS, trivial: dict | None = None) -> pd.DataFrame:
    """The best method at each time budget, per (dataset, memory budget), read from the curves.

    Parameters
    ----------
    points : pandas.DataFrame
        From :func:`curves`.
    runs : pandas.DataFrame
        Derived runs (for the time limit, ``params.timeout_s``).
    cells : pandas.DataFrame, optional
        Cells with ``same_as_best`` (:func:`mark_cells`): the methods
        not distinguishable from the best at the full budget are listed.
    budgets : sequence of float
        Time budgets in seconds; the cell's time limit is added.
    trivial : dict, optional
        Dataset -> the trivial predictor's metric (:func:`trivial_levels`);
        a best value no better than it is marked "no better than trivial".

    Returns
    -------
    pandas.DataFrame
        Strings: dataset, memory budget, time budget, best method, its
        metric (median over its runs' values at that time), runners-up
        within reach (full budget: the methods the paired test cannot tell
        from the best), and how many methods had a model by then.
    """
    rows = []
    for (dataset, mem), d in points.groupby(["dataset", "budget"], sort=False):
        lower = lower_is_better(d["metric_name"].iloc[0])
        limit = _cell_budget(runs[(runs["dataset"] == dataset) & (runs["budget"] == mem)])
        times = sorted(set(budgets)) + ([limit] if limit and limit not in budgets else [])
        unit = "test metric"
        what = vocab.metric_label(d["metric_name"].iloc[0], dataset)
        for t in times:
            now = at_budget(d, t, lower)
            full = t == times[-1]
            name = f"{t:g} s" + (" (time limit)" if limit and t == limit else "")
            if now.empty:
                rows.append({"dataset": dataset, "memory budget": mem, "time budget": name,
                             "best method": "(no model yet)", unit: "", ALSO: "", "methods with a model": "0"})
                continue
            per = now.groupby("label")["metric"].median()
            secs = now.groupby("label")["fit_seconds"].median()
            best = _best_of(per, secs, lower)
            also = ""
            if full and cells is not None and "same_as_best" in cells:
                c = cells[(cells["dataset"] == dataset) & (cells["budget"] == mem)]
                also = ", ".join(_cell_label(x) for _, x in c.iterrows()
                                 if x.get("same_as_best") is True and _cell_label(x) != best)
            level = (trivial or {}).get(dataset)
            useless = level is not None and (per[best] >= level if lower else per[best] <= level)
            value = f"**{per[best]:.4g}** {what}" + (f" (no better than trivial, {level:.4g})" if useless else "")
            rows.append({"dataset": dataset, "memory budget": mem, "time budget": name,
                         "best method": f"**{best}**", unit: value, ALSO: also,
                         "methods with a model": f"{len(per)}"})
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows)
    metric_cols = [c for c in out.columns if c not in ("dataset", "memory budget", "time budget", "best method",
                                                        ALSO, "methods with a model")]
    out[metric_cols] = out[metric_cols].fillna("")
    return out[["dataset", "memory budget", "time budget", "best method", *metric_cols, ALSO,
                "methods with a model"]]


def _best_of(metric: pd.Series, seconds: pd.Series, lower: bool):
    """Index of the best metric; a tie goes to the shorter fit time (then the first)."""
    key = pd.DataFrame({"m": metric if lower else -metric, "t": seconds.reindex(metric.index).fillna(np.inf)})
    return key.sort_values(["m", "t"], kind="stable").index[0]


def _cell_label(cell) -> str:
    return label(cell["method"], cell.get("variant", ""))


def mark_cells(cells: pd.DataFrame, runs: pd.DataFrame, predictions: dict,
               problems: list | None = None) -> pd.DataFrame:
    """Add the paired test against the best cell and the trivial-predictor flag to every cell.

    Per (dataset, budget), the best cell is the one with the best median
    metric among cells with an ok run; each other cell's first ok run with
    stored predictions is compared with the best's first such run
    (:func:`reports.significance.compare`) when both predicted the same test
    rows (same ``y_true``). The trivial flag is the record's (tag
    ``trivial_model`` / ``trivial_reason`` when the harness wrote one), else
    computed from the stored predictions (:func:`reports.significance.trivial`).

    Parameters
    ----------
    problems : list, optional
        Damaged artifacts (:func:`load_artifacts`): a cell left untested
        because of one says so in ``vs_best``, and every cell lists its
        runs' in ``artifact_problems``.

    Returns
    -------
    pandas.DataFrame
        ``cells`` with ``is_best`` (bool), ``same_as_best`` (True, False or
        None: not tested), ``vs_best`` (text: test, p-value, counts, or
        why there is no test), ``p_value``, ``test``, ``trivial`` (bool),
        ``trivial_reason`` and ``artifact_problems`` (text).
    """
    cells = cells.copy()
    for col, val in (("is_best", False), ("same_as_best", None), ("vs_best", ""), ("p_value", np.nan),
                     ("test", ""), ("trivial", False), ("trivial_reason", ""), ("artifact_problems", "")):
        cells[col] = pd.Series([val] * len(cells), index=cells.index, dtype=object)
    if cells.empty:
        return cells
    by_id = runs.set_index("run_id")
    damaged = {}  # run_id -> [(file, problem)]
    for p in problems or []:
        damaged.setdefault(p["run_id"], []).append((p["file"], p["problem"]))
    for idx, c in cells.iterrows():
        flag, why = _trivial_of_cell(c, by_id, predictions)
        cells.at[idx, "trivial"], cells.at[idx, "trivial_reason"] = flag, why
        cells.at[idx, "artifact_problems"] = "; ".join(
            f"{f} {what} (run {rid})" for rid in _ok_run_ids(c) for f, what in damaged.get(rid, []))
    for _, group in cells.groupby(["dataset", "budget"], sort=False):
        ok = group[(group["n_ok"] > 0) & group["metric_median"].notna()]
        if ok.empty:
            continue
        lower = lower_is_better(ok["metric_name"].iloc[0])
        best = _best_of(ok["metric_median"], ok["fit_seconds_median"], lower)
        cells.at[best, "is_best"] = True
        cells.at[best, "same_as_best"] = True
        cells.at[best, "vs_best"] = "best"
        ref = _first_predictions(cells.loc[best], by_id, predictions)
        if ref is None:
            why = _predictions_problem(cells.loc[best], damaged)
            for idx in ok.index.drop(best):
                cells.at[idx, "vs_best"] = ("not tested: the best cell's " + why if why
                                            else "not tested (the best cell has no stored predictions)")
            continue
        for idx in ok.index.drop(best):
            other = _first_predictions(cells.loc[idx], by_id, predictions)
            if other is None and _predictions_problem(cells.loc[idx], damaged):
                cells.at[idx, "vs_best"] = "not tested: " + _predictions_problem(cells.loc[idx], damaged)
                continue
            if other is None or not same_rows(other["y_true"], ref["y_true"]):
                cells.at[idx, "vs_best"] = "not tested (no predictions of the same test rows)"
                continue
            cmp = significance.compare(ref["y_true"], ref["y_pred"], other["y_pred"], lower)
            cells.at[idx, "same_as_best"] = cmp.same
            cells.at[idx, "vs_best"], cells.at[idx, "p_value"], cells.at[idx, "test"] = cmp.text(), cmp.p_value, cmp.test
    return cells


def _predictions_problem(cell, damaged: dict) -> str:
    """``predictions.npz unreadable (...) (run <id>)`` of the cell's first ok run with a damaged one, or ''."""
    for rid in _ok_run_ids(cell):
        for f, what in damaged.get(rid, []):
            if f in ("predictions.npz", "artifacts"):
                return f"{f} {what} (run {rid})"
    return ""


def same_rows(a, b) -> bool:
    """Whether two stored ``y_true`` are the same test rows.

    Labels must be equal; regression targets equal to float32 rounding (a
    float32 trial loads the same rows in float32: 0.156 and 0.156000000000001 are one row).
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if np.issubdtype(a.dtype, np.floating) and np.issubdtype(b.dtype, np.floating):
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-7, atol=0.0))
    return bool(np.array_equal(a, b))


def _ok_run_ids(cell) -> list:
    return [r for r in str(cell.get("run_ids", "")).split(";") if r]


def _first_predictions(cell, by_id: pd.DataFrame, predictions: dict):
    for rid in _ok_run_ids(cell):
        if rid in predictions and rid in by_id.index and by_id.at[rid, "status"] == "ok":
            return predictions[rid]
    return None


def _trivial_of_cell(cell, by_id: pd.DataFrame, predictions: dict) -> tuple[bool, str]:
    """The record's trivial flag (tag ``trivial_model``, reason ``trivial_reason``: issue 43), else from the predictions."""
    regression = lower_is_better(cell["metric_name"])
    for rid in _ok_run_ids(cell):
        if rid not in by_id.index or by_id.at[rid, "status"] != "ok":
            continue
        tag = by_id.at[rid, vocab.TRIVIAL_TAG] if vocab.TRIVIAL_TAG in by_id.columns else None
        if isinstance(tag, str) and tag.strip().lower() in ("true", "1", "false", "0"):
            if tag.strip().lower() in ("true", "1"):
                why = by_id.at[rid, "trivial_reason"] if "trivial_reason" in by_id.columns else ""
                return True, str(why or "the harness flagged it no better than the trivial predictor")
            return False, ""
        if rid in predictions:
            p = predictions[rid]
            return significance.trivial(p["y_true"], p["y_pred"], regression)
    return False, ""
