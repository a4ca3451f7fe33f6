"""The tuned Table 4 (``tune=true``): final fits, their chosen settings and the search's cost.

A tuned sweep records, per cell (dataset, method, budget, repetition), one
run per searched configuration (tag ``tuning=search``, validation metrics
``val_*`` only) and one final fit (``tuning=final``: all training rows, the
chosen setting, tested once). The untuned tables use neither
(:func:`split`); this module builds the tuned table and the figure of the
validation metric against lam.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import vocab

__all__ = ["split", "summary", "formatted_numbers", "fig_val_vs_lam", "val_name"]


def split(runs: pd.DataFrame):
    """Split used runs into untuned trials, tuned final fits and search runs.

    Parameters
    ----------
    runs : pandas.DataFrame
        From :func:`reports.load.load_selection` (column ``tuning`` from the tag).

    Returns
    -------
    untuned, final, search : pandas.DataFrame
    """
    tag = runs["tuning"] if "tuning" in runs else pd.Series(None, index=runs.index, dtype=object)
    return (runs[tag.isna()].reset_index(drop=True), runs[tag == "final"].reset_index(drop=True),
            runs[tag == "search"].reset_index(drop=True))


def val_name(primary: str) -> str:
    """The validation metric of a primary test metric (``test_accuracy`` -> ``val_accuracy``)."""
    return "val_" + str(primary).split("_", 1)[-1]


def _num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def summary(final: pd.DataFrame, search: pd.DataFrame, formatted: bool = True) -> pd.DataFrame:
    """One row per tuned cell: the final fit's numbers, the chosen setting and the tuning cost.

    Parameters
    ----------
    final : pandas.DataFrame
        Derived final-fit runs (:func:`reports.table.derive`).
    search : pandas.DataFrame
        Search runs (tag ``tuning_cell`` links them to their final fit).
    formatted : bool, default True
        Numbers as 4-significant-digit strings and ``-`` for none (the
        tables); False keeps full-precision floats and NaN (``tuned_settings.csv``).

    Returns
    -------
    pandas.DataFrame
        Columns dataset, method, budget, status, test metric (report unit),
        fit s, fit MiB, tuning s (the search's seconds, all its
        configurations), configurations, sigma, sigma factor, lam, epsilon
        (the SVR tube of a tuned epsilon-insensitive fit, else ``-``),
        validation metric of the chosen and of the untuned configuration.
    """
    rows = []
    for _, f in final.iterrows():
        part = search[search.get("tuning_cell") == f.get("tuning_cell")] if len(search) else search
        vname = val_name(f.get("primary_metric") or f.get("metric_name") or "")
        scale = vocab.metric_scale(f.get("metric_name") or "")
        untuned = part[(part.get("params.tuning.config.sigma_factor").map(_num) == 1.0)
                       & (part.get("params.tuning.config.lam_factor").map(_num) == 1.0)] if len(part) else part
        chosen_val = _num(f.get(f"chosen_{vname}"))
        rows.append({
            "dataset": f["dataset"], "method": f["method"], "budget": f["budget"], "status": f["status"],
            "test metric": f.get("metric"), "fit s": f.get("fit_seconds"), "fit MiB": f.get("memory_mib"),
            "tuning s": f.get("tuning_seconds"), "configurations": len(part),
            "sigma": _num(f.get("params.sigma_value")), "sigma factor": _num(f.get("tuning.sigma_factor")),
            "lam": _num(f.get("tuning.lam")), "epsilon": _num(f.get("params.epsilon_value")),
            f"chosen {vname}": chosen_val * scale,
            f"untuned {vname}": (_num(untuned[vname].iloc[0]) * scale
                                 if len(untuned) and vname in untuned else math.nan),
        })
    frame = pd.DataFrame(rows)
    return formatted_numbers(frame) if formatted else frame


def formatted_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with its float columns as 4-significant-digit strings, ``-`` for NaN/inf."""
    frame = frame.copy()
    for col in frame.columns:
        if frame[col].dtype.kind == "f":
            frame[col] = [f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else "-" for v in frame[col]]
    return frame


def fig_val_vs_lam(search: pd.DataFrame, order=None):
    """Validation metric against lam, one panel per dataset, one line per method (best over sigma).

    Returns
    -------
    (matplotlib.figure.Figure or None, pandas.DataFrame)
        ``None`` when no search run ended ok with a validation metric.
    """
    import matplotlib.pyplot as plt

    from .figures import colour

    rows = []
    for _, r in search.iterrows():
        primary = r.get("primary_metric") or ""
        vname = val_name(primary)
        value = _num(r.get(vname))
        if r.get("status") == "ok" and math.isfinite(value):
            # shown in the test metric's unit (accuracy in %, as in the tables)
            rows.append({"dataset": r["dataset"], "method": r["method"], "lam": _num(r.get("params.lam")),
                         "metric": vname, "value": value * vocab.metric_scale(primary),
                         "label": vocab.metric_label(primary, r["dataset"]).replace("test", "validation", 1),
                         "lower": vname.split("_", 1)[-1] in ("rmse", "mse", "rel_error")})
    data = pd.DataFrame(rows)
    if data.empty:
        return None, data
    datasets = [d for d in (order or []) if d in set(data["dataset"])] + sorted(
        set(data["dataset"]) - set(order or []))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.4), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        part = data[data["dataset"] == ds]
        lower = bool(part["lower"].iloc[0])
        for method, g in part.groupby("method"):
            best = g.groupby("lam")["value"].agg("min" if lower else "max").sort_index()
            ax.plot(best.index, best.values, marker="o", label=method, color=colour(method))
        ax.set_xscale("log")
        ax.set_title(ds)
        ax.set_xlabel("lam")
        ax.set_ylabel(f"{part['label'].iloc[0]}, best over sigma")
    handles, labels = [], []  # one legend for all panels, outside them (a method may miss a panel)
    for a in axes.flat:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
    fig.tight_layout()
    return fig, data
