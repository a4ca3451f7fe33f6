"""Table 4: one cell per (dataset, budget, method), numbers from the runs.

A *cell* aggregates the repetitions (seeds) of one configuration. Numbers
(mean and sample standard deviation, ``ddof=1``) are taken over the runs
whose status is ``ok`` only; a cell with no ``ok`` run has no number, only
its status. Runs of the same (dataset, budget, method) that differ in a
``method.*`` param other than the seed (a sweep over ``n_components``,
say) are separate cells, labelled with the differing params (``variant``).

Every quantity is also summarised by its median, minimum and maximum over
the ok repetitions (``<q>_median``, ``<q>_min``, ``<q>_max``): the tables
show the median and the min-max spread.

Units: ``fit_seconds`` in seconds (wall clock of ``fit``); memory in MiB:
``memory_mib`` is the method's memory, the host RSS peak of fit + predict
above the trial's pre-fit baseline (metric ``fit_rss_mib``; records that
lack it: ``peak_rss_mib - baseline_rss_mib``, said in ``memory_source``),
``peak_rss_mib`` the trial process's peak, ``gpu_mib`` the method's GPU
memory (``fit_gpu_mib``) when measured; ``dual_gap`` relative; the metric
in the unit the report shows (accuracy in %, RMSE in target units:
:func:`reports.vocab.metric_scale`).
"""

from __future__ import annotations

import math

import re

import numpy as np
import pandas as pd

from baselines.registry import ADAPTERS

from . import vocab

KEY = ["dataset", "budget", "method", "variant"]
#: Per-run quantities aggregated into mean and std in every cell.
QUANTITIES = ("metric", "fit_seconds", "memory_mib", "peak_rss_mib", "gpu_mib",
              "dual_gap", "kkt_residual", "cpu_utilisation", "fit_load_avg",
              "n_train", "n_test", "n_features", "n_checkpoints")
#: Param names (last dotted part) that change with the repetition, not
#: the configuration (``sigma_value``: the median-heuristic bandwidth
#: measured on each repetition's own training subset).
SEED_PARAMS = ("seed", "repetition", "random_state", "rep", "data_seed",
               "base_seed", "sigma_value")
#: Params never used to tell variants apart: the key's own groups, the
#: adapter's derived plan and stated problem (``problem.target`` carries the training rows'
#: mean and std, which differ with the size of a scaling sweep), and bookkeeping (paths, hashes, job ids).
NOT_VARIANT = ("params.plan.", "params.dataset.", "params.budget.", "params.problem.")
NOT_VARIANT_WORDS = ("path", "dir", "uri", "hash", "job")
#: Dataset params that do make a variant: runs at different training or test sizes (a scaling sweep).
SIZE_PARAMS = ("params.dataset.n_train", "params.dataset.n_test")
METHOD_ORDER = tuple(ADAPTERS)  # the registry's order: Joker first, one source of method ids
#: Convergence word of a cell -> mark used in text tables.
MARKS = {"yes": "✓", "no": "✗", "unknown": "?", "no solution": "–", "fixed epochs": "ok (fixed epochs)"}


def primary_metrics(runs: pd.DataFrame) -> dict:
    """The paper's metric of each dataset.

    The most frequent ``primary_metric`` tag among the dataset's runs; when
    no run has one, ``test_rmse`` for regression and ``test_accuracy``
    otherwise (from the ``task`` tag).

    Returns
    -------
    dict
        dataset -> metric name.
    """
    out = {}
    for dataset, group in runs.groupby("dataset"):
        tagged = group["primary_metric"].dropna()
        if len(tagged):
            out[dataset] = tagged.value_counts().index[0]
        else:
            task = group["task"].dropna()
            regression = len(task) and task.iloc[0] == "regression"
            out[dataset] = "test_rmse" if regression else "test_accuracy"
    return out


def derive(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-run columns the table aggregates.

    Adds ``metric_name``, ``metric`` (the run's value of that metric in the
    unit the report shows: accuracy in %), ``memory_mib`` (the method's
    host memory, MiB) with ``memory_source`` (``fit_rss_mib``,
    ``peak - baseline`` for records without it, or ``process peak`` when
    neither exists), ``gpu_mib`` (``fit_gpu_mib``), ``conv`` (1.0
    converged, 0.0 not or diverged, NaN unknown), ``contended_flag`` (1.0,
    0.0 or NaN when not recorded), ``skip_kind`` (tag, else inferred from
    the reason), ``install_hint`` and ``variant``. Trials that did not run
    (``skipped``) get no memory.

    Parameters
    ----------
    runs : pandas.DataFrame
        Used runs from :func:`reports.load.load_selection`.

    Returns
    -------
    pandas.DataFrame
        A copy of ``runs`` with the columns added.
    """
    runs = runs.copy()
    for col in (vocab.PEAK_GPU, vocab.PEAK_RSS, vocab.BASELINE_RSS, vocab.FIT_RSS,
                vocab.FIT_GPU, vocab.FIT_CPU, vocab.FIT_LOAD, vocab.CPU_UTILISATION,
                "fit_seconds", "dual_gap", "kkt_residual", "converged", "n_checkpoints", "n_epochs",
                *vocab.SIZE_METRICS):
        if col not in runs:
            runs[col] = np.nan
    for tag in vocab.TAG_KEYS:
        if tag not in runs:
            runs[tag] = None
    names = primary_metrics(runs)
    runs["metric_name"] = runs["dataset"].map(names)
    runs["metric"] = [
        row.get(name, np.nan) * vocab.metric_scale(name) if isinstance(name, str)
        else np.nan
        for name, (_, row) in zip(runs["metric_name"], runs.iterrows())
    ]
    _memory(runs)
    runs["conv"] = runs["converged"].astype(float)
    if "convergence.converged" in runs:  # the tag, when the metric is absent
        runs["conv"] = runs["conv"].fillna(runs["convergence.converged"].map(_flag))
    diverged = runs["status"] == "diverged"
    if "convergence.diverged" in runs:
        diverged |= runs["convergence.diverged"].map(_flag) == 1.0
    runs.loc[diverged, "conv"] = 0.0
    runs["contended_flag"] = runs["contended"].map(_flag)
    runs["skip_kind"] = [
        vocab.skip_kind(tag, reason or skip) if status in ("skipped", "over_budget")
        else "" for tag, reason, skip, status in zip(
            runs["skip_kind"], runs["reason"], runs["skip_reason"], runs["status"])]
    runs["install_hint"] = [
        hint if isinstance(hint, str) and hint else
        (vocab.INSTALL_HINTS.get(m, "") if kind == "not_installed" else "")
        for hint, kind, m in zip(runs["install_hint"], runs["skip_kind"],
                                 runs["method"])]
    runs["variant"] = _variants(runs)
    return runs


def _memory(runs: pd.DataFrame) -> None:
    """Set ``memory_mib``, ``memory_source`` and ``gpu_mib`` in place.

    The method's memory is ``fit_rss_mib``; a record without it (written
    before the harness measured it) falls back to ``peak_rss_mib -
    baseline_rss_mib``, and to the process peak when there is no baseline.
    Runs that did not run (status ``skipped``) get NaN.
    """
    fit = runs[vocab.FIT_RSS]
    above = runs[vocab.PEAK_RSS] - runs[vocab.BASELINE_RSS]
    runs["memory_mib"] = fit.fillna(above).fillna(runs[vocab.PEAK_RSS])
    runs["memory_source"] = np.where(
        fit.notna(), "fit_rss_mib", np.where(
            above.notna(), "peak - baseline",
            np.where(runs[vocab.PEAK_RSS].notna(), "process peak", "")))
    runs["gpu_mib"] = runs[vocab.FIT_GPU]
    not_run = runs["status"] == "skipped"
    for col in ("memory_mib", vocab.PEAK_RSS, "gpu_mib"):
        runs.loc[not_run, col] = np.nan
    runs.loc[not_run, "memory_source"] = ""


def dataset_order(runs: pd.DataFrame) -> list:
    """Datasets in sweep order: by the start time of their first run.

    Parameters
    ----------
    runs : pandas.DataFrame
        Runs with ``dataset`` and ``start_time`` (ms) columns; without
        ``start_time``, the order of first appearance.

    Returns
    -------
    list of str
    """
    if runs.empty:
        return []
    if "start_time" in runs and runs["start_time"].notna().any():
        first = runs.groupby("dataset")["start_time"].min()
        return list(first.sort_values(kind="stable").index)
    return list(dict.fromkeys(runs["dataset"]))


def _flag(text) -> float:
    """'True'/'1' -> 1.0, 'False'/'0' -> 0.0, anything else NaN."""
    word = str(text).strip().lower()
    return 1.0 if word in ("true", "1", "1.0") else (
        0.0 if word in ("false", "0", "0.0") else np.nan)


def _variants(runs: pd.DataFrame) -> pd.Series:
    """Label of the params that differ within a (dataset, budget, method).

    Every ``params.*`` column counts except seeds and repetitions
    (:data:`SEED_PARAMS`), the dataset, budget and plan params and
    bookkeeping params (:data:`NOT_VARIANT_WORDS`), but the requested sizes
    (:data:`SIZE_PARAMS`) do count: runs that differ in,
    say, ``method.options.n_components`` or ``lam`` are separate cells, so
    a mean is never taken over different configurations. The label uses
    the last dotted part of each differing param (``n_components=512``).
    """
    params = [c for c in runs.columns if c.startswith("params.")
              and (not c.startswith(NOT_VARIANT) or c in SIZE_PARAMS)
              and c.rsplit(".", 1)[-1] not in SEED_PARAMS
              and not any(w in c.lower() for w in NOT_VARIANT_WORDS)]
    label = pd.Series("", index=runs.index, dtype=object)
    for _, group in runs.groupby(["dataset", "budget", "method"], dropna=False):
        varying = [c for c in params if group[c].nunique(dropna=False) > 1]
        for idx, row in group.iterrows():
            label[idx] = ", ".join(
                f"{c.rsplit('.', 1)[-1]}={row[c]}" for c in varying)
    return label


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """Aggregate derived runs into Table 4 cells.

    Parameters
    ----------
    runs : pandas.DataFrame
        From :func:`derive`.

    Returns
    -------
    pandas.DataFrame
        One row per cell, sorted by dataset (sweep order:
        :func:`dataset_order`), budget, method order. Columns:
        the key (``dataset``, ``budget``, ``method``, ``variant``),
        ``metric_name``, ``n_runs``, ``n_ok``, ``status`` (``ok`` or the
        status words with counts), ``word`` (what a cell with no ok run
        shows: the status, or ``n/a``, ``not installed``, ``over budget``
        from the ``skip_kind``), ``skip_kind``, ``install_hint``,
        ``<q>_mean``, ``<q>_std``, ``<q>_median``, ``<q>_min`` and
        ``<q>_max`` for each of :data:`QUANTITIES` (over ok runs),
        ``memory_source``, ``contended`` (bool: an ok run was flagged),
        ``contended_reason``, ``scale``, ``device``, ``threads``, ``converged`` (``yes``, ``no``,
        ``unknown``, ``no solution``), ``n_converged``, ``signal`` (the
        adapter's convergence signal, tag ``convergence.signal``), ``settings``
        (``knob=value`` of the chosen ``plan.*`` knobs: M, block_size,
        n_components first; budget bookkeeping left out), ``plan.*`` (values,
        ``/``-joined when they differ), ``seeds``, ``reasons``, ``run_ids``.
    """
    plan_cols = sorted(c for c in runs.columns if c.startswith("plan."))
    rows = []
    for key, group in runs.groupby(KEY, dropna=False, sort=False):
        ok = group[group["status"] == "ok"]
        row = dict(zip(KEY, key))
        row["metric_name"] = group["metric_name"].iloc[0]
        row["n_runs"], row["n_ok"] = len(group), len(ok)
        row["status"] = _status_text(group)
        for q in QUANTITIES:
            values = ok[q].dropna()
            row[f"{q}_mean"] = values.mean() if len(values) else np.nan
            row[f"{q}_std"] = values.std(ddof=1) if len(values) > 1 else np.nan
            row[f"{q}_median"] = values.median() if len(values) else np.nan
            row[f"{q}_min"] = values.min() if len(values) else np.nan
            row[f"{q}_max"] = values.max() if len(values) else np.nan
        sources = ok["memory_source"].replace("", np.nan).dropna().unique()
        row["memory_source"] = "/".join(sorted(sources))
        row["contended"] = bool((ok["contended_flag"] == 1.0).any())
        row["contended_reason"] = "; ".join(dict.fromkeys(
            str(r) for r, f in zip(ok["contended_reason"], ok["contended_flag"])
            if f == 1.0 and isinstance(r, str) and r))
        kinds = set(group["skip_kind"]) - {""}
        row["skip_kind"] = kinds.pop() if len(kinds) == 1 else ""
        row["install_hint"] = next((h for h in group["install_hint"] if h), "")
        row["word"] = (vocab.SKIP_WORDS[row["skip_kind"]]
                       if ok.empty and row["skip_kind"] and row["status"] in (
                           "skipped", "over_budget") else row["status"])
        for name in ("scale", "device", "threads"):
            row[name] = _joined(group[name])
        row["converged"], row["n_converged"] = _converged(group, ok)
        row["signal"] = _joined(group["convergence.signal"]) if (
            "convergence.signal" in group) else ""
        for col in plan_cols:
            row[col] = _joined(group[col])
        row["settings"] = " ".join(
            f"{c[5:]}={_short(row[c])}" for c in _setting_order(plan_cols)
            if row[c] != "")
        row["seeds"] = _joined(group["seed"])
        row["reasons"] = "; ".join(_reasons(group))
        row["run_ids"] = ";".join(group["run_id"])
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    datasets = {d: i for i, d in enumerate(dataset_order(runs))}
    out["_d"] = out["dataset"].map(datasets)
    out["_m"] = out["method"].map(lambda m: order.get(m, len(order)))
    out["_v"] = out["variant"].map(natural_key)
    out = out.sort_values(["_d", "budget", "_m", "method", "_v"], kind="stable")
    return out.drop(columns=["_d", "_m", "_v"]).reset_index(drop=True)


def natural_key(text) -> tuple:
    """Sort key reading digit runs as numbers ('n=256' before 'n=1024')."""
    parts = re.split(r"(\d+(?:\.\d+)?)", str(text))
    return tuple((0, float(p), "") if i % 2 else (1, 0.0, p)
                 for i, p in enumerate(parts) if p)


#: Plan knobs shown first in ``settings``; knobs naming the budget or the
#: adapter's own memory estimate are bookkeeping, kept in the CSV only.
SETTINGS_FIRST = ("plan.M", "plan.block_size", "plan.n_components")
PLAN_BOOKKEEPING = ("budget", "est_")


def _setting_order(plan_cols: list) -> list:
    """The plan columns shown in ``settings``, the paper's knobs first.

    Left out: the budget's own name and size and the adapters' memory
    estimates (``budget*``, ``est_*``, ``*_bytes``); the CSV keeps them.
    """
    shown = [c for c in plan_cols
             if not any(c[5:].startswith(w) for w in PLAN_BOOKKEEPING)
             and not c.endswith("_bytes")]
    return ([c for c in SETTINGS_FIRST if c in shown]
            + [c for c in shown if c not in SETTINGS_FIRST])


def _short(text: str, width: int = 28) -> str:
    """``text`` cut to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _status_text(group: pd.DataFrame) -> str:
    """``ok``, one status word, or ``word (count)`` pairs when mixed."""
    counts = group["status"].value_counts()
    if len(counts) == 1:
        return counts.index[0]
    return ", ".join(f"{s} ({n})" for s, n in counts.items())


def ran_fixed_epochs(run) -> bool:
    """Whether a run is of a fixed-budget method (:data:`reports.vocab.FIXED_EPOCH_METHODS`) that ran all its epochs.

    Such a method has no tolerance of its own: its plateau flag is no
    convergence verdict. "All its epochs": the metric ``n_epochs`` is at
    least the plan's ``plan.epochs`` (either missing: assumed).
    """
    if run.get("method") not in vocab.FIXED_EPOCH_METHODS:
        return False
    done, planned = pd.to_numeric(pd.Series([run.get("n_epochs"), run.get("plan.epochs")]), errors="coerce")
    return bool(pd.isna(done) or pd.isna(planned) or done >= planned)


def _converged(group: pd.DataFrame, ok: pd.DataFrame) -> tuple[str, int]:
    """Convergence word of a cell and the number of converged runs.

    ``fixed epochs``: every ok run is of a fixed-budget method that ran its
    configured epochs (:func:`ran_fixed_epochs`) and none diverged.
    """
    n_conv = int((ok["conv"] == 1.0).sum())
    diverged = (group["status"] == "diverged").any()
    if not diverged and len(ok) and all(ran_fixed_epochs(r) for _, r in ok.iterrows()):
        return "fixed epochs", len(ok)
    if diverged or (ok["conv"] == 0.0).any():
        return "no", n_conv
    if ok.empty:
        return "no solution", 0
    if ok["conv"].isna().any():
        return "unknown", n_conv
    return "yes", n_conv


def _number_text(v) -> str:
    """A value as shown in the report: integers without ``.0``, other numbers to 6 significant digits.

    Plan values arrive as MLflow parameter strings (``"1726.722900390625"``
    for a cache of that many MiB); other text is returned as is.
    """
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return v
        if not math.isfinite(x) or v.strip().lower() in ("true", "false"):
            return v
        v = x
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:.6g}"
    return str(v)


def _joined(values: pd.Series) -> str:
    """Distinct values, ``/``-joined, in first-seen order ('' when none)."""
    seen = []
    for v in values.dropna():
        text = _number_text(v)
        if text not in seen:
            seen.append(text)
    return "/".join(seen)


def _reasons(group: pd.DataFrame) -> list[str]:
    """Distinct ``status: reason`` texts of the cell's non-ok runs."""
    out = []
    for _, run in group[group["status"] != "ok"].iterrows():
        why = run.get("reason") or run.get("skip_reason") or ""
        text = f"{run['status']}: {why}".strip().rstrip(":")
        if text not in out:
            out.append(text)
    return out


def build(runs: pd.DataFrame) -> pd.DataFrame:
    """Derived runs -> cells in one call (see :func:`derive`, :func:`cells`)."""
    return cells(derive(runs))
