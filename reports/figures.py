"""The report's figures (seaborn), each returning the data it plotted.

Every ``fig_*`` function returns ``(figure, data)``: the matplotlib figure
(``None`` when there is nothing to plot) and the DataFrame whose rows are
exactly the plotted points, so tests can compare them with the runs.

1. :func:`fig_convergence`: the paper's Figure 3 analogue, Joker's primal
   and dual objective and relative duality gap (log scale) against time
   (s) and epochs.
2. :func:`fig_metric_memory`: test metric against peak memory (MiB, log
   scale), one point per method, budget (and variant), a facet per dataset.
3. :func:`fig_time`: training time (s, log scale) per method per dataset.
4. :func:`fig_rff`: joker-inexact test metric against ``n_components``
   where a sweep varied it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from .curves import long_form  # noqa: E402
from .table import METHOD_ORDER  # noqa: E402


@dataclass
class Figure:
    """One saved figure: name, title, plotted data, files, note."""

    name: str
    title: str
    data: pd.DataFrame
    png: Path | None = None
    pdf: Path | None = None
    note: str = ""


def _plain_log(ax, axis: str = "y", base: float = 10, values=None) -> None:
    """Log scale on ``axis`` with plain tick labels (300, 1000, not 3x10^2).

    When ``values`` span less than a factor 20 (often no power of ten in
    range), a few round ticks are used instead, so the axis has labels.
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    getattr(ax, f"set_{axis}scale")("log", base=base)
    target = ax.xaxis if axis == "x" else ax.yaxis
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    target.set_major_formatter(plain)
    values = pd.Series(values, dtype=float).dropna() if values is not None else None
    narrow = (values is not None and len(values) and values.min() > 0
              and values.max() / values.min() < 20)
    target.set_minor_formatter(NullFormatter())
    if base == 10 and narrow:  # within about a decade: a few round ticks
        target.set_major_locator(MaxNLocator(nbins=4))
        target.set_major_formatter(plain)


def _zoom_past_start(ax, part: pd.DataFrame) -> None:
    """Fit the y range to epochs after the first when the start dwarfs them.

    The starting point (alpha = 0: dual 0, primal at theta = 0) is often
    orders of magnitude away from the rest; the points stay in the data,
    the axis says they are off scale.
    """
    later = part[part["epoch"] > part["epoch"].min()]["value"]
    if later.empty:
        return
    lo, hi = later.min(), later.max()
    pad = 0.1 * (hi - lo) or 0.05 * abs(hi) or 1.0
    if part["value"].min() < lo - pad or part["value"].max() > hi + pad:
        ax.set_ylim(lo - pad, hi + pad)
        ax.text(0.98, 0.95, "first epoch off scale", transform=ax.transAxes,
                ha="right", va="top", fontsize=8, color="0.4")


def _hue_order(methods) -> list:
    present = list(dict.fromkeys(methods))
    return sorted(present, key=lambda m: (METHOD_ORDER.index(m)
                                          if m in METHOD_ORDER else 99, m))


def fig_convergence(hist: pd.DataFrame):
    """Joker's objectives and gap against time and epochs.

    Parameters
    ----------
    hist : pandas.DataFrame
        From :func:`reports.curves.joker_histories`.

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        :func:`reports.curves.long_form` of ``hist``: one row per plotted
        point (run, epoch, quantity in primal/dual/gap, value); gap values
        that are not positive cannot be drawn on the log axis and are
        dropped.
    """
    data = long_form(hist)
    data = data[(data["quantity"] != "gap") | (data["value"] > 0)]
    if data.empty:
        return None, data.reset_index(drop=True)
    datasets = list(dict.fromkeys(data["dataset"]))
    fig, axes = plt.subplots(len(datasets), 4, squeeze=False,
                             figsize=(16, 3.4 * len(datasets)))
    hue = _hue_order(data["method"])
    palette = dict(zip(hue, sns.color_palette(n_colors=len(hue))))
    panels = [("objective", "seconds"), ("objective", "epoch"),
              ("gap", "seconds"), ("gap", "epoch")]
    for r, dataset in enumerate(datasets):
        d = data[data["dataset"] == dataset]
        for c, (what, x) in enumerate(panels):
            ax = axes[r, c]
            part = d[d["quantity"] == "gap"] if what == "gap" else d[d["quantity"] != "gap"]
            if part.empty:
                ax.set_axis_off()
                continue
            sns.lineplot(data=part, x=x, y="value", hue="method", hue_order=hue,
                         palette=palette,
                         style="quantity" if what == "objective" else None,
                         style_order=["primal", "dual"] if what == "objective" else None,
                         units="run_id", estimator=None, marker="o",
                         markersize=3, ax=ax, legend=False)
            if what == "gap":
                ax.set_yscale("log")
            else:
                _zoom_past_start(ax, part)
            ax.set_xlabel("time (s)" if x == "seconds" else "epoch")
            ax.set_ylabel("relative duality gap" if what == "gap"
                          else "objective (primal, dual)")
            ax.set_title(f"{dataset}: {'gap' if what == 'gap' else 'primal / dual'}"
                         f" vs {'time' if x == 'seconds' else 'epochs'}")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette[m], label=m) for m in hue] + [
        Line2D([], [], color="0.3", linestyle="-", label="primal"),
        Line2D([], [], color="0.3", linestyle="--", label="dual")]
    fig.suptitle("Joker convergence (Figure 3 analogue): one line per run")
    fig.tight_layout()
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False)
    return fig, data.reset_index(drop=True)


def fig_metric_memory(cells: pd.DataFrame):
    """Test metric against peak memory, one facet per dataset.

    Parameters
    ----------
    cells : pandas.DataFrame
        From :func:`reports.table.cells`.

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        One row per point: dataset, budget, method, variant, metric_name,
        ``metric`` (cell mean), ``memory_mib`` (cell mean, MiB),
        memory_kind. Cells without an ok run or without both numbers are
        not plotted.
    """
    keep = cells[(cells["n_ok"] > 0) & cells["metric_mean"].notna()
                 & cells["memory_mib_mean"].notna()] if not cells.empty else cells
    data = pd.DataFrame({
        "dataset": keep.get("dataset"), "budget": keep.get("budget"),
        "method": keep.get("method"), "variant": keep.get("variant"),
        "metric_name": keep.get("metric_name"),
        "metric": keep.get("metric_mean"), "memory_mib": keep.get("memory_mib_mean"),
        "memory_kind": keep.get("memory_kind"),
    }).reset_index(drop=True)
    if data.empty:
        return None, data
    grid = sns.relplot(data=data, x="memory_mib", y="metric", col="dataset",
                       col_wrap=min(3, data["dataset"].nunique()),
                       hue="method", hue_order=_hue_order(data["method"]),
                       style="budget", s=90, kind="scatter", height=3.6,
                       facet_kws=dict(sharex=False, sharey=False))
    names = data.groupby("dataset")["metric_name"].first()
    for dataset, ax in grid.axes_dict.items():
        _plain_log(ax, "x", values=data.loc[data["dataset"] == dataset, "memory_mib"])
        ax.set_title(f"{dataset}")
        ax.set_ylabel(names[dataset])
        ax.set_xlabel("peak memory (MiB)")
    grid.figure.suptitle("Test metric vs peak memory", y=1.02)
    return grid.figure, data


def fig_time(runs: pd.DataFrame):
    """Training time per method per dataset (log scale).

    Parameters
    ----------
    runs : pandas.DataFrame
        Derived runs (:func:`reports.table.derive`).

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        One row per ok run with a ``fit_seconds``: run_id, dataset, budget,
        method, seed, fit_seconds (s). Bars are the mean over runs, black
        dots the runs.
    """
    ok = runs[(runs["status"] == "ok") & runs["fit_seconds"].notna()]
    data = ok[["run_id", "dataset", "budget", "method", "seed",
               "fit_seconds"]].reset_index(drop=True)
    if data.empty:
        return None, data
    hue = _hue_order(data["method"])
    n = data["dataset"].nunique()
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * n * len(hue) ** 0.5 + 3), 4))
    sns.barplot(data=data, x="dataset", y="fit_seconds", hue="method",
                hue_order=hue, errorbar=None, ax=ax, alpha=0.8)
    sns.stripplot(data=data, x="dataset", y="fit_seconds", hue="method",
                  hue_order=hue, dodge=True, palette=["black"] * len(hue), size=3,
                  legend=False, ax=ax)
    _plain_log(ax, "y", values=data["fit_seconds"])
    ax.set_ylabel("training time (s)")
    ax.set_title("Training time per method (bars: mean, dots: runs)")
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    return fig, data


def rff_points(runs: pd.DataFrame) -> pd.DataFrame:
    """ok joker-inexact runs with their ``n_components`` (plan, else method param)."""
    rff = runs[(runs["method"] == "joker-inexact") & (runs["status"] == "ok")].copy()
    m = rff["plan.n_components"] if "plan.n_components" in rff else pd.Series(
        np.nan, index=rff.index)
    if "params.method.n_components" in rff:
        m = m.fillna(pd.to_numeric(rff["params.method.n_components"], errors="coerce"))
    rff["n_components"] = pd.to_numeric(m, errors="coerce")
    rff = rff[rff["n_components"].notna() & rff["metric"].notna()]
    return rff[["run_id", "dataset", "budget", "seed", "metric_name",
                "n_components", "metric"]].reset_index(drop=True)


def fig_rff(runs: pd.DataFrame):
    """joker-inexact test metric against n_components, per dataset.

    Returns
    -------
    figure : matplotlib.figure.Figure or None
        ``None`` when no dataset has runs at two or more n_components.
    data : pandas.DataFrame
        One row per plotted run (:func:`rff_points`) of the datasets where
        n_components varies; the line is the mean over seeds.
    """
    pts = rff_points(runs)
    varied = pts.groupby("dataset")["n_components"].nunique()
    data = pts[pts["dataset"].isin(varied[varied >= 2].index)].reset_index(drop=True)
    if data.empty:
        return None, data
    grid = sns.relplot(data=data, x="n_components", y="metric", col="dataset",
                       hue="budget", kind="line", marker="o", errorbar="sd",
                       height=3.6, facet_kws=dict(sharex=False, sharey=False))
    names = data.groupby("dataset")["metric_name"].first()
    for dataset, ax in grid.axes_dict.items():
        _plain_log(ax, "x", base=2)
        ax.set_ylabel(names[dataset])
        ax.set_xlabel("n_components (random features)")
    grid.figure.suptitle("joker-inexact: test metric vs n_components", y=1.02)
    return grid.figure, data


def save(fig, out_dir: Path, name: str) -> tuple[Path, Path]:
    """Write ``name.png`` (150 dpi) and ``name.pdf``; close the figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, pdf = out_dir / f"{name}.png", out_dir / f"{name}.pdf"
    fig.savefig(png, dpi=150, bbox_inches="tight")
    fig.savefig(pdf, bbox_inches="tight")
    plt.close(fig)
    return png, pdf


def make_all(runs: pd.DataFrame, cells: pd.DataFrame, hist: pd.DataFrame,
             out_dir: Path) -> list[Figure]:
    """Draw and save the four figures; a figure with no data gets a note."""
    specs = [
        ("fig3_convergence", "Joker convergence: objectives and relative gap "
         "vs time and epochs (Figure 3 analogue)", fig_convergence, hist,
         "no Joker run with a convergence history"),
        ("metric_vs_memory", "Test metric vs peak memory, per dataset",
         fig_metric_memory, cells, "no cell with an ok run"),
        ("training_time", "Training time per method and dataset (log scale)",
         fig_time, runs, "no ok run with a fit time"),
        ("rff_n_components", "joker-inexact: test metric vs n_components",
         fig_rff, runs, "skipped: no sweep varies n_components of joker-inexact "
         "(needs runs at two or more values on one dataset)"),
    ]
    out = []
    for name, title, func, arg, empty_note in specs:
        fig, data = func(arg)
        item = Figure(name, title, data)
        if fig is None:
            item.note = empty_note
        else:
            item.png, item.pdf = save(fig, out_dir, name)
        out.append(item)
    return out
