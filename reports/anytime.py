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
from .render import sig

#: Verdict column: the methods a paired test cannot tell from the best (not a claim that they are as good).
ALSO = "also not distinguishable from the best (paired test, p ≥ 0.05)"
#: Time budgets (s) of the verdict, besides each cell's own time limit.
TIME_BUDGETS = (1.0, 10.0, 60.0)
CURVE_COLUMNS = ["run_id", "dataset", "budget", "method", "variant", "label", "metric_name", "fit_seconds",
                 "metric", "final", "source", "rows", "n_all", "contended"]


def lower_is_better(metric_name) -> bool:
    """Whether a smaller value of the metric is better (RMSE, MSE, errors)."""
    name = str(metric_name)
    return any(w in name for w in ("rmse", "mse", "error", "loss"))


def label(method, variant) -> str:
    """``method`` or ``method (variant)``."""
    return f"{method} ({variant})" if isinstance(variant, str) and variant else str(method)


#: What a damaged artifact costs the report, after ``; `` in its warning line.
CONSEQUENCE = {"checkpoints.csv": "its anytime curve is its final point only",
               "predictions.npz": "its paired test is left out (and its final point on the curves' test rows "
                                  "when they are a subset)"}


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
    """The arrays of ``predictions.npz``; ValueError "not an npz (zip) file" when it is not one.

    ``np.load`` takes any other bytes for a pickle and says "This file contains pickled (object) data",
    which misleads: the file is damaged, not a pickle to trust.
    """
    import zipfile

    if not zipfile.is_zipfile(path):
        raise ValueError("not an npz (zip) file: damaged or not written by numpy.savez")
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


#: Bookkeeping columns of ``checkpoints.csv`` that must hold numbers where present (the recorder writes them all).
NUMERIC_COLUMNS = ("checkpoint", "call", "final", "n_test_rows")


#: Metrics whose values lie in [0, 1] (the record's unit); the others (RMSE, MSE, relative error) are >= 0.
UNIT_INTERVAL = ("test_accuracy", "test_f1", "test_auc")
#: Slack of "a checkpoint no later than the fit's end" (s): the two clocks are read a few calls apart.
END_SLACK_S = 1e-3


def _row_checks(c: pd.DataFrame, metric_name, fit_seconds=None) -> dict:
    """Per-row defects of a ``checkpoints.csv``: name -> boolean Series (True: the row has it).

    ``no number``: no finite fit time, a non-number in a :data:`NUMERIC_COLUMNS` column, or neither the
    metric nor the recorder's ``nonfinite`` mark (a model that scored NaN/inf: no metric by design,
    :meth:`joker.bench.trials.checkpoints.CheckpointRecorder.metrics`); ``negative fit time``;
    ``impossible metric`` (outside [0, 1], or negative); ``after the fit ended`` (a fit time past the
    run's ``fit_seconds``); ``duplicated`` (a ``checkpoint`` index seen before).
    """
    legit = (pd.to_numeric(c["nonfinite"], errors="coerce") == 1) if "nonfinite" in c else pd.Series(False, c.index)
    value = pd.to_numeric(c[metric_name], errors="coerce") if metric_name in c else pd.Series(np.nan, c.index)
    secs = pd.to_numeric(c["fit_seconds"], errors="coerce")
    numbers = np.isfinite(secs) & (value.notna() | legit)
    for col in NUMERIC_COLUMNS:
        if col in c:
            numbers &= pd.to_numeric(c[col], errors="coerce").notna()
    low, high = (0.0, 1.0) if metric_name in UNIT_INTERVAL else (0.0, np.inf)
    out = {"without a number": ~numbers,
           "with a negative fit time": numbers & (secs < 0),
           f"with an impossible {metric_name} (outside [{low:g}, {high:g}])": (
               numbers & value.notna() & ((value < low) | (value > high) | ~np.isfinite(value)))}
    end = pd.to_numeric(pd.Series([fit_seconds]), errors="coerce").iloc[0]
    if pd.notna(end) and end >= 0:
        out[f"after the fit ended (fit_seconds over the run's {end:.3g} s)"] = (
            numbers & (secs > end * (1 + 1e-6) + END_SLACK_S))
    if "checkpoint" in c:
        idx = pd.to_numeric(c["checkpoint"], errors="coerce")
        out["duplicated"] = idx.notna() & idx.duplicated(keep="first")
    return out


def _usable_rows(c: pd.DataFrame, metric_name, fit_seconds=None) -> pd.Series:
    """Rows without any defect of :func:`_row_checks`."""
    bad = pd.Series(False, c.index)
    for rows in _row_checks(c, metric_name, fit_seconds).values():
        bad |= rows
    return ~bad


def _checkpoint_problem(c: pd.DataFrame, metric_name, expected, fit_seconds=None, n_test=None) -> str | None:
    """Why a read ``checkpoints.csv`` cannot be used in full, or ``None``.

    Parameters
    ----------
    c : pandas.DataFrame
        The file as read.
    metric_name : str
        The run's test metric (a column of the file).
    expected : float
        The run's logged ``n_checkpoints`` (NaN: not logged).
    fit_seconds : float, optional
        The run's fit time: no checkpoint may come after it.
    n_test : float, optional
        The run's test rows: the final row (``final`` = 1) is scored on all of them.
    """
    if "fit_seconds" not in c:
        return "unreadable (no column fit_seconds)"
    checks = _row_checks(c, metric_name, fit_seconds)
    if metric_name not in c and checks["without a number"].any():
        return f"unreadable (no column {metric_name})"
    found = [f"{int(rows.sum())} of {len(c)} rows {what}" for what, rows in checks.items() if rows.any()]
    usable = _usable_rows(c, metric_name, fit_seconds)
    secs = pd.to_numeric(c.loc[usable, "fit_seconds"], errors="coerce")
    if (secs.diff().dropna() < 0).any():
        found.append("rows out of time order")
    if pd.notna(n_test) and "final" in c and "n_test_rows" in c:
        fin = usable & (pd.to_numeric(c["final"], errors="coerce") == 1)
        rows = pd.to_numeric(c.loc[fin, "n_test_rows"], errors="coerce")
        if (rows != int(n_test)).any():
            found.append(f"its final row scored on {int(rows.iloc[0]):,} test rows, the run tested {int(n_test):,}")
    if pd.notna(expected) and len(c) > int(expected):
        found.append(f"{len(c)} rows, the run logged {int(expected)}")
    if found:
        return f"truncated or corrupted ({'; '.join(found)})"
    if pd.notna(expected) and len(c) < int(expected):
        return f"truncated ({len(c)} of {int(expected)} rows read)"
    return None


def _usable_checkpoints(c: pd.DataFrame, metric_name, fit_seconds=None, n_test=None) -> pd.DataFrame:
    """The rows of a damaged ``checkpoints.csv`` the report keeps: those without a row defect, in time order,
    without a final row on other rows than the run's test rows."""
    keep = c[_usable_rows(c, metric_name, fit_seconds)]
    if pd.notna(n_test) and "final" in keep and "n_test_rows" in keep:
        wrong = (pd.to_numeric(keep["final"], errors="coerce") == 1) & (
            pd.to_numeric(keep["n_test_rows"], errors="coerce") != int(n_test))
        keep = keep[~wrong]
    return keep.assign(_t=pd.to_numeric(keep["fit_seconds"])).sort_values("_t", kind="stable").drop(
        columns="_t").reset_index(drop=True)


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
            end, n_test = r.get("fit_seconds", np.nan), r.get("n_test", np.nan)
            why = _checkpoint_problem(c, r["metric_name"], expected, end, n_test)
            if why and why.startswith("unreadable"):
                c = None
            elif why:
                c = _usable_checkpoints(c, r["metric_name"], end, n_test)
        elif why:
            why = f"unreadable ({why})"
        elif new_record and (pd.isna(expected) or expected > 0):
            why = "missing"
        if why:
            found.append({**base, "file": "checkpoints.csv", "problem": why, "used": 0 if c is None else len(c)})
        if c is not None and len(c):
            ckpt[run_id] = c
        p, why = _artifact(client, run_id, "predictions.npz", names, _npz)
        if p is not None:
            why = predictions_problem(p, r)
            if why:
                p = None
        elif why:
            why = f"unreadable ({why})"
        elif p is None and new_record:
            why = "missing"
        if why:
            found.append({**base, "file": "predictions.npz", "problem": why})
        if p is not None:
            preds[run_id] = p
    return ckpt, preds


def predictions_problem(arrays: dict, run) -> str | None:
    """Why a read ``predictions.npz`` cannot be the run's test predictions, or ``None``.

    The arrays must hold ``y_true`` and ``y_pred`` of one length, as many
    rows as the run's ``n_test`` (when logged), finite numbers only, and
    reproduce the run's own test metric (same function as the trial,
    :func:`metric_on_rows`; accuracy exactly, RMSE to a relative 1e-6):
    a file that fails any of these is damaged, and its paired test, trivial
    flag and rescoring on the curve rows are left out.

    Parameters
    ----------
    arrays : dict
        The file's arrays.
    run : pandas.Series
        The derived run (``metric_name``, ``metric`` in the report's unit, ``n_test``).
    """
    for key in ("y_true", "y_pred"):
        if key not in arrays:
            return f"unreadable (no {key} array)"
    y, yp = np.asarray(arrays["y_true"]), np.asarray(arrays["y_pred"])
    if len(y) != len(yp):
        return f"corrupted (y_true has {len(y)} rows, y_pred {len(yp)})"
    for key, a in (("y_true", y), ("y_pred", yp)):
        if not np.issubdtype(a.dtype, np.number):
            continue  # labels as text or bool (a classifier's own classes)
        bad = int(np.size(a) - np.isfinite(a).sum())
        if bad:
            return f"corrupted ({bad} non-finite value{'s' if bad > 1 else ''} in {key})"
    if "scores" in arrays:
        sc = np.asarray(arrays["scores"])
        if np.issubdtype(sc.dtype, np.number):
            bad = int(np.size(sc) - np.isfinite(sc).sum())
            if bad:
                return f"corrupted ({bad} non-finite value{'s' if bad > 1 else ''} in scores)"
        if len(sc) != len(y):
            return f"corrupted (scores has {len(sc)} rows, y_true {len(y)})"
    n = pd.to_numeric(pd.Series([run.get("n_test", np.nan)]), errors="coerce").iloc[0]
    if pd.notna(n) and int(n) != len(y):
        return f"truncated or corrupted ({len(y):,} rows, the run tested {int(n):,})"
    recorded = pd.to_numeric(pd.Series([run.get("metric", np.nan)]), errors="coerce").iloc[0]
    name = run.get("metric_name")
    if pd.notna(recorded) and np.isfinite(recorded) and name in REPRODUCIBLE and len(y):
        value = metric_on_rows(name, arrays, len(y))
        mine = None if value is None else value * vocab.metric_scale(name)
        if mine is None or not np.isclose(mine, recorded, rtol=1e-6, atol=1e-12):
            got = "no value" if mine is None else f"{mine:.6g}"
            return f"corrupted (its {name} is {got}, the run recorded {recorded:.6g})"
    return None


#: Metrics that the stored labels reproduce exactly (AUC needs the float32 ``scores``: not checked).
REPRODUCIBLE = ("test_accuracy", "test_f1", "test_rmse", "test_mse", "test_rel_error")


def row_warnings(cells: pd.DataFrame, points: pd.DataFrame) -> list[str]:
    """Lines for results scored on other test rows than their neighbours' (not damage, but left out).

    A cell whose stored predictions are of other test rows than the best cell's (no paired test,
    :data:`OTHER_ROWS`), and a run whose checkpoints or final model are on other rows than the dataset's
    curve rows (left out of the curves and of the verdict below the time limit: ``off_curve`` of
    :func:`curves`), each once.
    """
    lines = []
    if len(cells) and "vs_best" in cells:
        for _, c in cells[cells["vs_best"] == OTHER_ROWS].iterrows():
            lines.append(f"{_cell_label(c)} on {c['dataset']}/{c['budget']}: its predictions are of other test rows "
                         f"than the best's; its paired test is left out")
    if len(points) and "off_curve" in points:
        other = points[points["off_curve"].astype(str).str.contains("checkpoints are scored on|not the curves' rows",
                                                                   regex=True)]
        for rid, g in other.groupby("run_id", sort=False):
            lines.append(f"run {rid} ({g['method'].iloc[0]}/{g['dataset'].iloc[0]}): {g['off_curve'].iloc[0]}; "
                         f"left out of the curves and of the verdict below the time limit")
    return lines


def problem_line(problem: dict) -> str:
    """The console line of one damaged artifact (:func:`load_artifacts`).

    ``run <id> (<method>/<dataset>): predictions.npz unreadable (<error>); its paired test is left out``;
    a ``checkpoints.csv`` of which some rows could be used says how many its curve shows.
    """
    what = CONSEQUENCE.get(problem["file"], "its checkpoints and paired test are left out")
    used = problem.get("used", 0)
    if problem["file"] == "checkpoints.csv" and used:
        what = f"its anytime curve shows the {used} usable row{'s' if used > 1 else ''} read"
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


def curves(runs: pd.DataFrame, checkpoints: dict, predictions: dict | None = None) -> pd.DataFrame:
    """Long table of the anytime points of every ok run (metric in the report's unit).

    Checkpoints are scored on ``k`` test rows (at most
    :data:`joker.bench.trials.checkpoints.MAX_TEST_ROWS`, a seeded random
    subset stored as ``checkpoint_rows``; a prefix in older runs:
    :func:`curve_index`) and the final model on all
    ``n``. So that a curve and a ranking never mix the two, every run's
    final model is also scored on the dataset's checkpoint rows from its
    stored ``predictions.npz`` (the same metric function as the trial,
    :mod:`joker.bench.trials.scoring`): a curve reads ``k`` rows from
    start to end, and Table 4, the paired tests and the verdict at the time
    limit read all ``n``.

    Parameters
    ----------
    runs : pandas.DataFrame
        Derived runs.
    checkpoints : dict
        From :func:`load_artifacts`.
    predictions : dict, optional
        From :func:`load_artifacts` (run_id -> arrays): the final models
        rescored on the checkpoint rows.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CURVE_COLUMNS`. ``source``: ``checkpoint`` (a
        point of the fit), ``final`` (the final model on all test rows:
        the trial's reported metric) or ``final on curve rows`` (the final
        model rescored on the checkpoint rows). ``rows``: the test rows the
        point is scored on; ``n_all``: the run's test rows. ``contended``: the run's timing was
        contended (tag ``contended``: its seconds are not comparable). ``curve``: the point is on its
        dataset's curve rows (``k``; all rows when no run has checkpoints on fewer); ``off_curve``: why
        a point is not (checkpoints on other rows; a final model that could not be rescored), '' otherwise.
        Points with a metric missing are dropped.
    """
    predictions = predictions or {}
    rows = []
    for _, r in runs[runs["status"] == "ok"].iterrows():
        name = r["metric_name"]
        scale = vocab.metric_scale(name)
        n_all = r.get("n_test", np.nan)
        base = {"run_id": r["run_id"], "dataset": r["dataset"], "budget": r["budget"], "method": r["method"],
                "variant": r.get("variant", ""), "label": label(r["method"], r.get("variant", "")),
                "metric_name": name, "n_all": n_all,
                "contended": pd.to_numeric(pd.Series([r.get("contended_flag", np.nan)]), errors="coerce").iloc[0] == 1}
        final_row = {**base, "fit_seconds": r["fit_seconds"], "metric": r["metric"], "final": 1,
                     "source": "final", "rows": n_all}
        c = checkpoints.get(r["run_id"])
        if c is not None and name in c and "fit_seconds" in c:
            has_final = False
            for _, p in c.iterrows():
                fin = int(p.get("final", 0) or 0)
                has_final |= fin == 1
                rows.append({**base, "fit_seconds": float(p["fit_seconds"]), "metric": float(p[name]) * scale,
                             "final": fin, "source": "final" if fin else "checkpoint",
                             "rows": pd.to_numeric(p.get("n_test_rows", np.nan), errors="coerce")})
            if not has_final:  # a run without its final row
                rows.append(final_row)
        else:
            rows.append(final_row)
    out = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    out = out[out["metric"].notna() & out["fit_seconds"].notna()].reset_index(drop=True)
    return _on_curve_rows(out, runs, predictions)


def curve_rows(points: pd.DataFrame) -> dict:
    """Per dataset, the test rows its curves are scored on: the checkpoints' row count, else all rows."""
    out = {}
    for dataset, d in points.groupby("dataset", sort=False):
        mid = pd.to_numeric(d.loc[d["source"] == "checkpoint", "rows"], errors="coerce").dropna()
        if len(mid):
            out[dataset] = int(mid.mode().iloc[0])
        else:
            every = pd.to_numeric(d["rows"], errors="coerce").dropna()
            out[dataset] = int(every.max()) if len(every) else None
    return out


def _on_curve_rows(points: pd.DataFrame, runs: pd.DataFrame, predictions: dict) -> pd.DataFrame:
    """Add each run's final model scored on its dataset's curve rows, and the ``curve`` flag.

    A final model is rescored only when its stored ``y_true`` on the curve
    rows (:func:`curve_index`) equals that of a checkpointed run of the
    dataset (:func:`same_rows`; unchecked when no checkpointed run kept predictions).
    """
    if points.empty:
        return points.assign(curve=pd.Series(dtype=bool))
    k_of = curve_rows(points)
    refs = {}  # dataset -> the distinct first-k y_true of its checkpointed runs
    for (dataset, rid), _ in points[points["source"] == "checkpoint"].groupby(["dataset", "run_id"], sort=False):
        k = k_of.get(dataset)
        idx = curve_index(predictions[rid], k) if rid in predictions and k is not None else None
        if idx is not None:
            head = np.asarray(predictions[rid]["y_true"])[idx]
            if not any(same_rows(head, h) for h in refs.get(dataset, [])):
                refs.setdefault(dataset, []).append(head)
    extra, why_not = [], {}  # why_not: index of a final point -> why it has no twin on the curve rows
    for idx, p in points[points["final"] == 1].iterrows():
        k = k_of.get(p["dataset"])
        if k is None or p["rows"] == k:
            continue
        if p["run_id"] not in predictions:
            why_not[idx] = "its final model could not be rescored on these rows (no usable predictions.npz)"
            continue
        at = curve_index(predictions[p["run_id"]], k)
        head = None if at is None else np.asarray(predictions[p["run_id"]]["y_true"])[at]
        if head is not None and p["dataset"] in refs and not any(same_rows(head, h) for h in refs[p["dataset"]]):
            why_not[idx] = "its test rows are not the curves' rows"
            continue
        value = metric_on_rows(p["metric_name"], predictions[p["run_id"]], k)
        if value is None:
            why_not[idx] = f"its final model could not be rescored on these rows (fewer than {k:,} rows stored)"
            continue
        extra.append({**p.to_dict(), "metric": value * vocab.metric_scale(p["metric_name"]),
                      "source": "final on curve rows", "rows": k})
    out = points.copy()
    out["off_curve"] = ""
    for idx, why in why_not.items():
        out.at[idx, "off_curve"] = why
    if extra:
        out = pd.concat([out, pd.DataFrame(extra, columns=points.columns).assign(off_curve="")], ignore_index=True)
    out["curve"] = [k_of.get(d) is not None and rows == k_of.get(d) for d, rows in zip(out["dataset"], out["rows"])]
    stray = (~out["curve"]) & (out["source"] == "checkpoint")  # checkpoints on other rows than the curves'
    out.loc[stray, "off_curve"] = [f"its checkpoints are scored on {_rows_text(r, n)} test rows, not on the curves' "
                                   f"{k_of.get(d):,}" for r, n, d in zip(out.loc[stray, "rows"],
                                                                        out.loc[stray, "n_all"],
                                                                        out.loc[stray, "dataset"])]
    return out


def curve_index(arrays: dict, k: int) -> np.ndarray | None:
    """The test rows (indices) of a run's stored predictions that its dataset's curves are scored on.

    ``checkpoint_rows`` of ``predictions.npz`` (the trial's seeded random
    subset, :func:`joker.bench.trials.checkpoints.checkpoint_rows`) when it
    has ``k`` rows; the first ``k`` rows for runs stored before it was kept
    (their checkpoints were scored on a prefix); ``None`` when fewer than
    ``k`` rows are stored.
    """
    n = len(arrays["y_true"])
    rows = arrays.get("checkpoint_rows")
    if rows is not None and len(rows) == k and (len(rows) == 0 or int(np.max(rows)) < n):
        return np.asarray(rows, dtype=np.int64)
    return np.arange(k, dtype=np.int64) if n >= k else None


def metric_on_rows(name: str, arrays: dict, k: int) -> float | None:
    """A test metric (the record's unit) of stored predictions on their ``k`` curve rows (:func:`curve_index`), or ``None``.

    Parameters
    ----------
    name : str
        ``test_rmse``, ``test_mse``, ``test_rel_error`` (regression) or
        ``test_accuracy``, ``test_f1``, ``test_auc`` (classification; AUC
        needs stored ``scores``).
    arrays : dict
        ``predictions.npz``: ``y_true``, ``y_pred`` and maybe ``scores``.
    k : int
        Rows (:func:`curve_index`); ``None`` when fewer are stored.
    """
    from joker.bench.trials import scoring

    y, yp = np.asarray(arrays["y_true"]), np.asarray(arrays["y_pred"])
    idx = curve_index(arrays, k)
    if idx is None or len(yp) != len(y):
        return None
    if name in ("test_rmse", "test_mse", "test_rel_error"):
        return scoring.regression_metrics(y[idx], yp[idx]).get(name)
    scores = arrays.get("scores")
    value = scoring.classification_metrics(y[idx], yp[idx], None if scores is None else np.asarray(scores)[idx]).get(name)
    return None if value is None or not np.isfinite(value) else float(value)


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


def trivial_levels(runs: pd.DataFrame, predictions: dict, rows: dict | None = None) -> dict:
    """Per dataset, the trivial predictor's metric on the test rows, in the report's unit.

    ``rows`` (dataset -> k, :func:`curve_rows`) takes the ``k`` curve rows
    (:func:`curve_index`) instead of all: the level of the verdict's rows below the time limit.

    The majority class's share (accuracy, %) or the standard deviation of
    the targets (RMSE), from the first stored ``y_true`` of the dataset;
    other metrics have none.
    """
    out = {}
    for _, r in runs[runs["run_id"].isin(list(predictions))].iterrows():
        if r["dataset"] in out:
            continue
        y = np.asarray(predictions[r["run_id"]]["y_true"])
        k = (rows or {}).get(r["dataset"])
        idx = curve_index(predictions[r["run_id"]], k) if k else None
        y = y[idx] if idx is not None else y
        name = r["metric_name"]
        if name == "test_accuracy":
            out[r["dataset"]] = 100.0 * np.unique(y, return_counts=True)[1].max() / len(y)
        elif name == "test_rmse":
            out[r["dataset"]] = float(np.std(y.astype(np.float64)))
    return out


def verdict(points: pd.DataFrame, runs: pd.DataFrame, cells: pd.DataFrame | None = None,
            budgets=TIME_BUDGETS, trivial: dict | None = None, trivial_curve: dict | None = None,
            problem_names: dict | None = None, predictions: dict | None = None) -> pd.DataFrame:
    """The best method at each time budget, per (dataset, memory budget), read from the curves.

    At a budget ``T`` below the cell's time limit, a method's metric is
    that of its last point at or before ``T`` on the dataset's curve rows
    (``curve`` in :func:`curves`: the checkpoints' test rows, the final
    model rescored on them), so that every method at ``T`` is scored on the
    same rows. At the time limit every run has finished, and the final
    models are ranked on all test rows, as in Table 4 and the paired tests.

    Parameters
    ----------
    points : pandas.DataFrame
        From :func:`curves`.
    runs : pandas.DataFrame
        Derived runs (for the time limit, ``params.timeout_s``).
    cells : pandas.DataFrame, optional
        Cells with ``same_as_best`` and ``converged`` (:func:`mark_cells`):
        at the time limit the methods not distinguishable from the best
        are listed, and the best's convergence is shown.
    budgets : sequence of float
        Time budgets in seconds; the cell's time limit is added.
    trivial : dict, optional
        Dataset -> the trivial predictor's metric (:func:`trivial_levels`);
        a best value no better than it is marked "no better than trivial".
    trivial_curve : dict, optional
        The same on the curve rows (``trivial_levels(..., rows=curve_rows(points))``),
        used below the time limit; default ``trivial``.
    problem_names : dict, optional
        (dataset, method) -> the stated problem's name (:func:`reports.problems.problem_texts`):
        where a dataset's methods solve more than one problem, the best's is named beside it.
    predictions : dict, optional
        run_id -> stored predictions (:func:`load_artifacts`): below the time limit, the best's final
        model is tested against the other final models on the curve rows (McNemar / paired bootstrap);
        checkpoints keep no predictions and are listed as not tested.

    Returns
    -------
    pandas.DataFrame
        Strings: dataset, memory budget, time budget, best method, its
        metric (median over its runs' values at that time) and the test
        rows it is scored on, the model it is (a checkpoint during the fit
        or the final model, with its convergence mark), the methods the
        paired test cannot tell from the best (time limit only), and how
        many methods had a model by then (with those left out because
        their final model could not be rescored on the curve rows).
    """
    rows = []
    k_of = curve_rows(points) if len(points) else {}
    marks = _convergence_marks(cells)
    tested: dict = {}  # (best run, other run, rows) -> same?: one test per pair, not one per time budget
    for (dataset, mem), d in points.groupby(["dataset", "budget"], sort=False):
        lower = lower_is_better(d["metric_name"].iloc[0])
        limit = _cell_budget(runs[(runs["dataset"] == dataset) & (runs["budget"] == mem)])
        times = sorted(set(budgets)) + ([limit] if limit and limit not in budgets else [])
        what = vocab.metric_label(d["metric_name"].iloc[0], dataset)
        n_all = pd.to_numeric(d["n_all"], errors="coerce").max()
        k = k_of.get(dataset)
        on_curve = d[d["curve"]] if "curve" in d else d
        finals = d[d["source"] == "final"]
        for t in times:
            full = t == times[-1] and bool(limit) and t == limit
            name = f"within {t:g} s" + (" (the time limit)" if limit and t == limit else "")
            now = at_budget(finals if full else on_curve, t, lower)
            rows_used = n_all if full else k
            had = f"{now['label'].nunique()}" + _left_out(at_budget(d, t, lower), now)
            base = {"dataset": dataset, "memory budget": budget_text(mem, runs), "time budget": name,
                    "test rows": _rows_text(rows_used, n_all), "_limit": full, "_rows": rows_used, "_n": n_all}
            if now.empty:
                rows.append({**base, "best method": "(no model yet)", "test metric": "", "its model": "",
                             ALSO: "", "methods with a model": had, SUMMARY_CELL: "(no model yet)"})
                continue
            per = now.groupby("label")["metric"].median()
            secs = now.groupby("label")["fit_seconds"].median()
            best = _best_of(per, secs, lower)
            also, n_also, n_untested = "(no paired test)", None, 0
            if full and cells is not None and "same_as_best" in cells:
                c = cells[(cells["dataset"] == dataset) & (cells["budget"] == mem)]
                same = [_cell_label(x) for _, x in c.iterrows()
                        if x.get("same_as_best") is True and _cell_label(x) != best]
                untested = [_cell_label(x) for _, x in c.iterrows()
                            if x.get("untested") is True and _cell_label(x) != best]
                mine = c[c.apply(_cell_label, axis=1) == best] if len(c) else c
                if len(mine) and mine["untested"].iloc[0] is True:  # the best's own predictions are damaged
                    also, n_untested = "not tested: the best's predictions are missing or damaged", len(c) - 1
                else:
                    also, n_also = ", ".join(same) or ("none" if not untested else "none of those tested"), len(same)
                    n_untested = len(untested)
                    if untested:
                        also += f"; not tested: {', '.join(untested)}"
            elif not full:
                also, n_also, n_untested = _paired_below_limit(now, best, predictions, k, lower, tested)
            level = (trivial if full or trivial_curve is None else trivial_curve or {}) or {}
            level = level.get(dataset)
            useless = level is not None and (per[best] >= level if lower else per[best] <= level)
            flag = f" (no better than trivial, {sig(level, 4)})" if useless else ""
            model = now[now["label"] == best]
            mark = marks.get((dataset, mem, best), "")
            solves = _problem_note(problem_names, dataset, model["method"].iloc[0])
            # a best that is no better than the trivial predictor is no recommendation: not named in bold
            named = f"(none better than trivial; best {best})" if useless else f"**{best}**"
            rows.append({**base, "best method": named,
                         "test metric": f"**{sig(per[best], 4)}** {what}{solves}{flag}",
                         "its model": _model_text(model, d, best, mark),
                         ALSO: also, "methods with a model": had,
                         SUMMARY_CELL: _summary_text(best, per[best], model, mark, flag, n_also, n_untested,
                                                     solves, level if useless else None)})
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows)
    out[[c for c in out if not c.startswith("_")]] = out[[c for c in out if not c.startswith("_")]].fillna("")
    return out[["dataset", "memory budget", "time budget", "best method", "test metric", "test rows", "its model",
                ALSO, "methods with a model", SUMMARY_CELL, "_limit", "_rows", "_n"]]


#: Column of :func:`verdict` that :func:`verdict_summary` spreads over the time budgets (not shown in the detail).
SUMMARY_CELL = "summary cell"
#: Column of :func:`verdict_summary` for the trial's time limit.
AT_LIMIT = "at the time limit (all test rows)"


def _problem_note(names: dict | None, dataset, method) -> str:
    """`` [KRR]``: the best's problem, where the dataset's methods state more than one, else ''."""
    if not names:
        return ""
    mine = {n for (d, _), n in names.items() if d == dataset and n}
    name = names.get((dataset, method))
    if len(mine) <= 1 or not name:
        return ""
    return f" [{name}]"


def flagged(value) -> bool:
    """Whether a flag column's value is set (True or numpy True; NaN and None are not)."""
    return isinstance(value, (bool, np.bool_)) and bool(value)


def _paired_below_limit(now: pd.DataFrame, best: str, predictions: dict | None, k, lower: bool,
                        tested: dict | None = None):
    """The paired test below the time limit: the best's final model against the other final models on the
    curve rows (their stored predictions' first ``k``); checkpoints keep no predictions, so they are not tested.
    ``tested`` keeps each pair's answer (keyed by the two run ids and ``k``) across the time budgets: the
    same two final models at 10 s and at 60 s are one test.

    Returns
    -------
    (str, int or None, int)
        The column's text, the number not distinguishable from the best (None: no test), and the number
        left untested.
    """
    def final_of(label):
        rows = now[(now["label"] == label) & (now["final"] == 1)]
        rid = rows["run_id"].iloc[0] if len(rows) else None
        return rid if rid is not None and rid in (predictions or {}) else None

    ref = final_of(best)
    if ref is None or not k:
        best_final = bool((now.loc[now["label"] == best, "final"] == 1).any())
        why = "the best's predictions are not stored" if best_final else (
            "the best is a checkpoint, whose predictions are not kept")
        return f"(no paired test: {why})", None, 0
    ref_idx = curve_index(predictions[ref], k)
    if ref_idx is None:
        return f"(no paired test: the best's predictions have fewer than {k:,} rows)", None, 0
    y, yb = np.asarray(predictions[ref]["y_true"])[ref_idx], np.asarray(predictions[ref]["y_pred"])[ref_idx]
    same, untested = [], []
    for label in sorted(set(now["label"]) - {best}):
        rid = final_of(label)
        idx = None if rid is None else curve_index(predictions[rid], k)
        if idx is None or not same_rows(np.asarray(predictions[rid]["y_true"])[idx], y):
            untested.append(label)
            continue
        key = (ref, rid, k, lower)
        if tested is None or key not in tested:
            answer = significance.compare(y, yb, np.asarray(predictions[rid]["y_pred"])[idx], lower).same
            if tested is None:
                tested = {}
            tested[key] = answer
        if tested[key]:
            same.append(label)
    text = ", ".join(same) or ("none" if not untested else "none of those tested")
    if untested:
        text += f"; not tested: {', '.join(untested)} (checkpoints keep no predictions)"
    return text, len(same), len(untested)


def _summary_text(best: str, value: float, model: pd.DataFrame, mark: str, flag: str, n_also,
                  n_untested: int = 0, solves: str = "", trivial_level: float | None = None) -> str:
    """``**falkon** 0.03489 ✓`` / ``**joker-exact** 96.74 (checkpoint at 0.97 s)``, with † when the run was
    contended and ``≈ 5 others`` (the paired test's count) at the time limit: one cell of the summary.
    A best no better than the trivial predictor (``trivial_level``, its metric) is not a recommendation:
    ``none better than trivial (1.057; best eigenpro3 1.060, checkpoint at 0.8 s)``."""
    p = model.sort_values("fit_seconds").iloc[-1]
    if trivial_level is not None:  # no better than the trivial predictor: say so, and name no winner
        text = f"none better than trivial ({sig(trivial_level, 4)}; best {best} {sig(value, 4)}"
        return text + (f", checkpoint at {p['fit_seconds']:.2g} s)" if int(p["final"]) != 1 else ")")
    text = f"**{best}** {sig(value, 4)}{flag}"
    text += (f" {mark}" if mark else "") if int(p["final"]) == 1 else f" (checkpoint at {p['fit_seconds']:.2g} s)"
    text += solves
    if any(flagged(v) for v in model.get("contended", [])):
        text += " †"
    if n_also:
        text += f"; ≈ {n_also} other{'s' if n_also > 1 else ''}"
    if n_untested:
        text += f"; {n_untested} untested"
    return text


def verdict_summary(detail: pd.DataFrame) -> pd.DataFrame:
    """The verdict on one screen: one row per (dataset, memory budget), one column per time budget.

    Parameters
    ----------
    detail : pandas.DataFrame
        From :func:`verdict` (with its :data:`SUMMARY_CELL` column).

    Returns
    -------
    pandas.DataFrame
        Strings: ``dataset``, ``memory budget``, ``test rows`` (below the
        time limit, and at it), then ``within T s`` for each time budget
        below the limit and :data:`AT_LIMIT` (``at the time limit, 600 s (all test rows)`` when every row has
        the same limit); a cell is the best method,
        its metric, its convergence mark or ``(checkpoint at t s)``, †
        when its fit time was contended, and at the limit the number of
        methods the paired test cannot tell from it (``≈ k others``). The
        detail table names them.
    """
    if detail is None or detail.empty or SUMMARY_CELL not in detail:
        return pd.DataFrame()
    rows, columns = [], []
    for (dataset, mem), d in detail.groupby(["dataset", "memory budget"], sort=False):
        row = {"dataset": dataset, "memory budget": mem}
        below, limit = d[~d["_limit"].astype(bool)], d[d["_limit"].astype(bool)]
        low = below["test rows"].iloc[0] if len(below) else ""
        high = limit["test rows"].iloc[0] if len(limit) else ""
        row["test rows"] = low or high if not (low and high) or low == high else f"{low}; {high} at the limit"
        for _, r in d.iterrows():
            col = AT_LIMIT if r["_limit"] else r["time budget"].split(" (")[0]
            if col not in columns:
                columns.append(col)
            row[col] = r[SUMMARY_CELL]
        rows.append(row)
    order = sorted((c for c in columns if c != AT_LIMIT), key=lambda c: float(c.split()[1])) + (
        [AT_LIMIT] if AT_LIMIT in columns else [])
    out = pd.DataFrame(rows).reindex(columns=["dataset", "memory budget", "test rows"] + order).fillna("")
    limits = sorted(set(detail.loc[detail["_limit"].astype(bool), "time budget"]))
    if len(limits) == 1:  # one time limit for every row: its seconds in the header
        seconds = limits[0].split(" (")[0].replace("within ", "")
        out = out.rename(columns={AT_LIMIT: f"at the time limit, {seconds} (all test rows)"})
    return out


def with_cells_without_a_model(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The verdict summary plus one row per (dataset, memory budget) where no run ended ``ok``.

    Such a cell has no curve, so :func:`verdict` has no row for it; without
    this it would vanish from the verdict without a word. Its cells read
    ``no method ended ok (2 timeout, 1 error)``: the statuses of its runs.

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`verdict_summary` (may be empty).
    runs : pandas.DataFrame
        Derived runs (``dataset``, ``budget``, ``status``).
    """
    if runs is None or runs.empty or not {"dataset", "budget", "status"} <= set(runs):
        return summary
    have = set() if summary is None or summary.empty else set(zip(summary["dataset"], summary["memory budget"]))
    extra = []
    for (dataset, mem), d in runs.groupby(["dataset", "budget"], sort=False):
        mem_text = budget_text(mem, runs)
        if (dataset, mem_text) in have or (d["status"] == "ok").any():
            continue
        counts = d["status"].fillna("no status").value_counts()
        extra.append({"dataset": dataset, "memory budget": mem_text, "test rows": "",
                      "_none": "no method ended ok (" + ", ".join(f"{n} {st}" for st, n in counts.items()) + ")"})
    if not extra:
        return summary
    columns = list(summary.columns) if summary is not None and not summary.empty else [
        "dataset", "memory budget", "test rows", AT_LIMIT]
    value_cols = [c for c in columns if c not in ("dataset", "memory budget", "test rows")]
    rows = [{**{k: v for k, v in e.items() if k != "_none"}, **{c: e["_none"] for c in value_cols}} for e in extra]
    base = summary if summary is not None and not summary.empty else pd.DataFrame(columns=columns)
    return pd.concat([base, pd.DataFrame(rows, columns=columns)], ignore_index=True).fillna("")


def verdict_detail(detail: pd.DataFrame) -> pd.DataFrame:
    """:func:`verdict` without its bookkeeping columns (the detail table of the report)."""
    if detail is None or detail.empty:
        return pd.DataFrame()
    return detail.drop(columns=[c for c in detail if c.startswith("_") or c == SUMMARY_CELL])


def _left_out(anywhere: pd.DataFrame, now: pd.DataFrame) -> str:
    """`` (eigenpro3 left out: its test rows are not the curves' rows)``: methods with a model at the budget
    that the ranking could not score on its rows, each with the reason (``off_curve`` of :func:`curves`)."""
    gone = anywhere[~anywhere["label"].isin(set(now["label"]))]
    if gone.empty:
        return ""
    parts = []
    for lab, g in gone.groupby("label", sort=True):
        why = next((w for w in g.get("off_curve", pd.Series(dtype=str)) if isinstance(w, str) and w),
                   "not scored on these rows")
        parts.append(f"{lab}: {why}")
    return " (left out: " + "; ".join(parts) + ")"


def budget_text(name: str, runs: pd.DataFrame) -> str:
    """``cpu-4g (CPU only, 4 GiB host memory)``: a budget's name and its limits (params ``budget.host_bytes``,
    ``budget.gpu_bytes`` of its runs); the name alone when they are not recorded."""
    mine = runs[runs["budget"] == name] if "budget" in runs else runs.iloc[0:0]

    def limit(key):
        col = f"params.budget.{key}"
        v = pd.to_numeric(mine[col], errors="coerce").dropna() if col in mine else pd.Series(dtype=float)
        return float(v.iloc[0]) if len(v) else None

    host, gpu = limit("host_bytes"), limit("gpu_bytes")
    if host is None and gpu is None:
        return str(name)
    parts = ["CPU only" if not gpu else f"GPU, {gpu / 2**30:g} GiB GPU memory"]
    if host:
        parts.append(f"{host / 2**30:g} GiB host memory")
    return f"{name} ({', '.join(parts)})"


def _rows_text(rows, n_all) -> str:
    """``5,000 of 10,000`` (the curve rows) or ``all 10,000``."""
    if rows is None or pd.isna(rows):
        return ""
    if pd.notna(n_all) and int(rows) < int(n_all):
        return f"{int(rows):,} of {int(n_all):,}"
    return f"all {int(rows):,}"


def _model_text(at_t: pd.DataFrame, d: pd.DataFrame, best: str, mark: str) -> str:
    """``final, 3.2 s, ✓`` or ``checkpoint at 7.9 s of a 12.3 s fit`` for the best method's (last) run, with
    † when its timing was contended."""
    p = at_t.sort_values("fit_seconds").iloc[-1]
    busy = " † (contended: its seconds are not comparable)" if flagged(p.get("contended")) else ""
    if int(p["final"]) == 1:
        return f"final, {p['fit_seconds']:.3g} s" + (f", {mark}" if mark else "") + busy
    fin = d[(d["run_id"] == p["run_id"]) & (d["final"] == 1)]
    end = fin["fit_seconds"]
    why = next((w for w in fin.get("off_curve", pd.Series(dtype=str)) if isinstance(w, str) and w), "")
    # a final model that could not be rescored on these rows leaves its last checkpoint as the run's point:
    # say why, not that the fit went on (fresh-user review: a 3.1 s fit read "checkpoint at 2.8 s, went on")
    after = f" (the final model: {why})" if why else " (the fit went on)"
    return (f"checkpoint at {p['fit_seconds']:.3g} s" + (f" of a {end.max():.3g} s fit" if len(end) else "")
            + after + busy)


def _convergence_marks(cells: pd.DataFrame | None) -> dict:
    """(dataset, budget, label) -> the cell's convergence mark (✓, ✗, ok (fixed epochs), ?)."""
    if cells is None or "converged" not in cells:
        return {}
    from .table import MARKS

    return {(c["dataset"], c["budget"], _cell_label(c)): MARKS.get(c["converged"], "")
            for _, c in cells.iterrows()}


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
        ``trivial_reason``, ``artifact_problems`` (text) and ``untested``
        (bool: an ok cell of a (dataset, budget) whose runs stored
        predictions, left without a paired test against the best).
    """
    cells = cells.copy()
    for col, val in (("is_best", False), ("same_as_best", None), ("vs_best", ""), ("p_value", np.nan),
                     ("test", ""), ("trivial", False), ("trivial_reason", ""), ("artifact_problems", ""),
                     ("untested", False)):
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
            if why:  # the best itself is untested: nothing can be told apart from it
                cells.at[best, "vs_best"] = "best; not tested: " + why
                cells.at[best, "untested"] = True
            for idx in ok.index.drop(best):
                cells.at[idx, "vs_best"] = ("not tested: the best cell's " + why if why
                                            else "not tested (the best cell has no stored predictions)")
            continue
        for idx in ok.index.drop(best):
            other = _first_predictions(cells.loc[idx], by_id, predictions)
            if other is None and _predictions_problem(cells.loc[idx], damaged):
                cells.at[idx, "vs_best"] = "not tested: " + _predictions_problem(cells.loc[idx], damaged)
                continue
            if other is None:
                cells.at[idx, "vs_best"] = "not tested (no predictions of the same test rows)"
                continue
            if not same_rows(other["y_true"], ref["y_true"]):
                cells.at[idx, "vs_best"] = OTHER_ROWS
                continue
            cmp = significance.compare(ref["y_true"], ref["y_pred"], other["y_pred"], lower)
            cells.at[idx, "same_as_best"] = cmp.same
            cells.at[idx, "vs_best"], cells.at[idx, "p_value"], cells.at[idx, "test"] = cmp.text(), cmp.p_value, cmp.test
    for _, group in cells.groupby(["dataset", "budget"], sort=False):  # "untested" where paired tests were expected
        expected = any(_first_predictions(c, by_id, predictions) is not None or _predictions_problem(c, damaged)
                       for _, c in group.iterrows())
        for idx, c in group.iterrows():
            cells.at[idx, "untested"] = bool(c["untested"] is True or (
                expected and c["n_ok"] > 0 and not c["is_best"] and c["same_as_best"] is None
                and pd.notna(c["metric_median"])))
    return cells


#: ``vs_best`` of a cell whose stored predictions are of other test rows than the best's (said on stderr too).
OTHER_ROWS = "not tested: its predictions are of other test rows than the best's"


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
    """Flagged when the record's tag says so (``trivial_model``, reason ``trivial_reason``: issue 43) or the
    first ok run's stored predictions are no better than the trivial predictor
    (:func:`reports.significance.trivial`: constant, or a metric not better than the majority share / the
    mean's); a tag ``0`` does not overrule visibly constant predictions."""
    regression = lower_is_better(cell["metric_name"])
    for rid in _ok_run_ids(cell):
        if rid not in by_id.index or by_id.at[rid, "status"] != "ok":
            continue
        tag = by_id.at[rid, vocab.TRIVIAL_TAG] if vocab.TRIVIAL_TAG in by_id.columns else None
        if isinstance(tag, str) and tag.strip().lower() in ("true", "1"):
            why = by_id.at[rid, "trivial_reason"] if "trivial_reason" in by_id.columns else ""
            return True, str(why or "the harness flagged it no better than the trivial predictor")
        if rid in predictions:  # the stored predictions decide too: a constant model is flagged whatever the tag
            p = predictions[rid]
            return significance.trivial(p["y_true"], p["y_pred"], regression)
        return False, ""
    return False, ""
