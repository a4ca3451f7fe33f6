"""How fit time and fit memory grow with n_train: the scaling figure and its slope table (issue 23, item 4).

A sweep that runs the same (dataset, method, budget) at several training
sizes (``sweeps/scaling.yaml``) answers "which method keeps scaling": the
figure draws fit time (s) and fit memory (MiB) against n_train on log-log
axes, one line per method, and marks where a method stopped (its first
size that ended ``timeout``, ``over_budget`` or ``oom``) with an
end marker at that size; the table gives each line's fitted exponent ``a`` of
``time ~ n^a`` (and of memory), a least-squares line through
``(log n, log t)`` over the sizes that ended ``ok`` (at least two).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["points", "slopes", "fig_scaling", "is_scaling", "END_STATUSES"]

#: Statuses that end a method's line: it did not finish at this size within its budget.
END_STATUSES = ("timeout", "over_budget", "oom")


def points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: dataset, method, budget, n_train, status, fit_seconds, memory_mib.

    Parameters
    ----------
    runs : pandas.DataFrame
        Derived runs (:func:`reports.table.derive`). ``n_train`` is the rows
        the trial fitted on (its metric), else the requested size
        (``params.dataset.n_train``) for a trial killed before it said.

    Returns
    -------
    pandas.DataFrame
        Sorted by dataset, method, budget, n_train; rows without a size dropped.
        ``setting``: the run's variant label without its sizes (:func:`_setting`).
    """
    cols = ["dataset", "method", "budget", "setting", "n_train", "status", "fit_seconds", "memory_mib",
            "wall_seconds"]
    if runs is None or not len(runs):
        return pd.DataFrame(columns=cols)
    n = pd.to_numeric(runs.get("n_train"), errors="coerce") if "n_train" in runs else pd.Series(np.nan, runs.index)
    if "params.dataset.n_train" in runs:
        n = n.fillna(pd.to_numeric(runs["params.dataset.n_train"], errors="coerce"))
    variant = runs["variant"] if "variant" in runs else pd.Series("", index=runs.index)
    out = runs.assign(n_train=n, setting=variant.fillna("").map(_setting))
    out = out[[c for c in cols if c in out.columns]].copy()
    for c in ("fit_seconds", "memory_mib", "wall_seconds"):
        out[c] = pd.to_numeric(out.get(c), errors="coerce") if c in out else np.nan
    out = out[out["n_train"].notna()]
    return out.sort_values(["dataset", "method", "budget", "n_train"]).reset_index(drop=True)


def _setting(variant: str) -> str:
    """The variant label without its sizes: what tells two lines of one method apart (e.g. ``dtype=float32``).

    A method rerun in the same experiment with another setting (its dtype, M, ...) is another line,
    never one line through the points of both.
    """
    parts = [p for p in str(variant).split(", ") if p and not p.startswith(("n_train=", "n_test="))]
    return ", ".join(parts)


def _line(method: str, setting: str) -> str:
    return method if not setting else f"{method} ({setting})"


def is_scaling(runs: pd.DataFrame) -> bool:
    """Whether some (dataset, method, budget) ran at two or more training sizes."""
    p = points(runs)
    return bool(len(p)) and bool((p.groupby(["dataset", "method", "budget", "setting"])["n_train"].nunique()
                                  >= 2).any())


def _slope(n: np.ndarray, v: np.ndarray) -> float:
    """Least-squares exponent a of ``v ~ n^a`` over positive, finite pairs; NaN with fewer than two sizes."""
    keep = np.isfinite(n) & np.isfinite(v) & (n > 0) & (v > 0)
    if len(np.unique(n[keep])) < 2:
        return math.nan
    return float(np.polyfit(np.log(n[keep]), np.log(v[keep]), 1)[0])


def slopes(pts: pd.DataFrame) -> pd.DataFrame:
    """Each line's fitted exponents and where it ended.

    Parameters
    ----------
    pts : pandas.DataFrame
        :func:`points`.

    Returns
    -------
    pandas.DataFrame
        dataset, method, budget, ``sizes ok`` (count), ``largest ok n``,
        ``time slope a`` (``fit_seconds ~ n^a``), ``memory slope``, and
        ``ended`` (``"<status> at n=<size>"`` of the first size that ended
        the line, else ``-``). Slopes are least squares in log-log over the
        ``ok`` sizes (NaN with fewer than two).
    """
    rows = []
    if "setting" not in pts:
        pts = pts.assign(setting="")
    for (ds, m, b, st), g in pts.groupby(["dataset", "method", "budget", "setting"], sort=False):
        ok = g[g["status"] == "ok"]
        end = g[g["status"].isin(END_STATUSES)]
        rows.append({
            "dataset": ds, "method": _line(m, st), "budget": b, "sizes ok": int(ok["n_train"].nunique()),
            "largest ok n": int(ok["n_train"].max()) if len(ok) else None,
            "time slope a": _slope(ok["n_train"].to_numpy(float), ok["fit_seconds"].to_numpy(float)),
            "memory slope": _slope(ok["n_train"].to_numpy(float), ok["memory_mib"].to_numpy(float)),
            "ended": (f"{end.iloc[0]['status']} at n={int(end.iloc[0]['n_train'])}" if len(end) else "-"),
        })
    return pd.DataFrame(rows, columns=["dataset", "method", "budget", "sizes ok", "largest ok n",
                                       "time slope a", "memory slope", "ended"])


def fig_scaling(runs: pd.DataFrame, order=None):
    """Fit time and fit memory against n_train, log-log, one line per method; end markers.

    Parameters
    ----------
    runs : pandas.DataFrame
        Derived runs.
    order : list of str, optional
        Dataset order of the columns.

    Returns
    -------
    (matplotlib.figure.Figure or None, pandas.DataFrame)
        The figure (two rows: time, memory; a column per dataset; ``None``
        when no line has two sizes) and the plotted points (``kind`` ``ok``
        or ``end``; an end marker sits at its size; in the time panel at the
        trial's wall seconds (a lower bound of the time it needed) when that
        is above the line's last ``ok`` value, else, as in the memory panel,
        at the line's last ``ok`` value or its own measured one).
    """
    import matplotlib.pyplot as plt

    from .figures import _in_order, _plain_log, colour

    pts = points(runs)
    if not is_scaling(runs):
        return None, pts.iloc[0:0]
    datasets = _in_order(pts["dataset"], order)
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets) + 1.8, 7), squeeze=False)
    drawn = []
    for col, ds in enumerate(datasets):
        part = pts[pts["dataset"] == ds]
        for row, (y, label) in enumerate((("fit_seconds", "fit time (s)"),
                                          ("memory_mib", "fit memory (MiB above baseline)"))):
            ax = axes[row][col]
            styles = {}  # a method's second setting dashed, its third dotted (one colour per method)
            for (m, st) in part[["method", "setting"]].drop_duplicates().itertuples(index=False):
                styles[(m, st)] = ("-", "--", ":", "-.")[sum(k[0] == m for k in styles) % 4]
            for (m, b, st), g in part.groupby(["method", "budget", "setting"], sort=False):
                ok = g[(g["status"] == "ok") & g[y].gt(0)]
                name = _line(m, st) if part["budget"].nunique() == 1 else _line(m, ", ".join(filter(None, (st, b))))
                if len(ok):
                    ax.plot(ok["n_train"], ok[y], marker="o", ms=4, color=colour(m), ls=styles[(m, st)], label=name)
                    drawn.append(ok.assign(kind="ok", y=y))
                end = g[g["status"].isin(END_STATUSES)].head(1)
                if len(end):
                    before = ok[ok["n_train"] < end["n_train"].iloc[0]]
                    height = before[y].iloc[-1] if len(before) else end[y].iloc[0]
                    ran = end["wall_seconds"].iloc[0]
                    if y == "fit_seconds" and pd.notna(ran) and ran > (height if pd.notna(height) else 0):
                        height = ran  # a timeout ran at least this long: the X at its wall time, a lower bound
                    if pd.notna(height) and height > 0:
                        ax.plot(end["n_train"], [height], marker="X", ms=9, ls="none", color=colour(m),
                                label=None if len(ok) else name)
                        drawn.append(end.assign(kind="end", y=y))
            _plain_log(ax, "x")
            _plain_log(ax, "y", values=part.loc[part["status"] == "ok", y])
            ax.set_xlabel("n_train")
            ax.set_ylabel(label)
            if row == 0:
                ax.set_title(ds)
    handles, labels = axes[0][-1].get_legend_handles_labels()
    for a in axes.flat:
        h, lab = a.get_legend_handles_labels()
        for hh, ll in zip(h, lab):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    # the legend in a right margin wide enough for its longest label (a method's setting makes it long)
    longest = max((len(lab) for lab in labels), default=0)
    extra = 0.085 * max(0, longest - 14)  # inches beyond what a 14-character label needs
    width = fig.get_figwidth()
    fig.set_figwidth(width + extra)
    right = (0.8 * width) / (width + extra)
    if handles:
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(right + 0.01, 0.5), frameon=False,
                   title="X: ended (timeout, budget)")
    fig.suptitle("Fit time and fit memory against n_train (log-log)")
    fig.tight_layout(rect=(0, 0, right, 0.96))
    data = pd.concat(drawn, ignore_index=True) if drawn else pts.iloc[0:0]
    return fig, data
