"""The report's figures (seaborn), each returning the data it plotted.

Every ``fig_*`` function returns ``(figure, data)``: the matplotlib figure
(``None`` when there is nothing to plot) and the DataFrame whose rows are
exactly the plotted points, so tests can compare them with the runs.

1. :func:`fig_convergence`: the paper's Figure 3 analogue, Joker's primal
   and dual objective and relative duality gap (log scale) against time
   (s) and epochs.
2. :func:`fig_metric_memory`: test metric against the method's fit memory
   (MiB, log scale), one point per method, budget (and variant), a panel
   per dataset.
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

from . import vocab  # noqa: E402
from .curves import long_form  # noqa: E402
from .table import METHOD_ORDER  # noqa: E402

#: One colour per method, the same in every figure.
PALETTE = dict(zip(METHOD_ORDER, sns.color_palette("tab10", len(METHOD_ORDER))))
MEMORY_LABEL = "fit memory (MiB above the pre-fit baseline)"


def colour(method) -> tuple:
    """The method's colour (grey for an id outside :data:`METHOD_ORDER`)."""
    return PALETTE.get(method, (0.5, 0.5, 0.5))


def _in_order(values, order=None) -> list:
    """Distinct ``values`` in ``order`` first (e.g. sweep order), then as seen."""
    seen = list(dict.fromkeys(values))
    order = [v for v in (order or []) if v in seen]
    return order + [v for v in seen if v not in order]


@dataclass
class Figure:
    """One saved figure: name, title, plotted data, files, note."""

    name: str
    title: str
    data: pd.DataFrame
    png: Path | None = None
    pdf: Path | None = None
    note: str = ""


def add(figures: list, out_dir: Path, name: str, title: str, drawn, empty_note: str, echo=print) -> Figure:
    """Save one drawn figure (or note why there is none), append it to ``figures`` and echo where it is.

    Parameters
    ----------
    figures : list of Figure
        The report's figures; the new one is appended.
    out_dir : pathlib.Path
        Folder of the PNG and PDF files (:func:`save`).
    name, title : str
        File stem and caption.
    drawn : (matplotlib.figure.Figure or None, pandas.DataFrame)
        What a figure function returns: the figure (``None`` when it has no
        data) and the plotted data.
    empty_note : str
        The note shown instead of a figure when there is none.
    echo : callable
        Prints one line (the figure's path or its note).

    Returns
    -------
    Figure
    """
    fig, data = drawn
    item = Figure(name, title, data)
    if fig is None:
        item.note = empty_note
    else:
        item.png, item.pdf = save(fig, out_dir, name)
    figures.append(item)
    echo(f"  figure {name}: " + (str(item.png) if item.png else item.note))
    return item


def _plain_log(ax, axis: str = "y", base: float = 10, values=None) -> None:
    """Log scale on ``axis`` with plain tick labels (300, 1000, not 3x10^2).

    When ``values`` span less than a factor 100 (one or no power of ten in
    range), ticks at 1, 2 and 5 times the powers of ten are labelled too.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{axis}scale")("log", base=base)
    target = ax.xaxis if axis == "x" else ax.yaxis
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    target.set_major_formatter(plain)
    values = pd.Series(values, dtype=float).dropna() if values is not None else None
    narrow = (values is not None and len(values) and values.min() > 0
              and values.max() / values.min() < 100)
    target.set_minor_formatter(NullFormatter())
    if base == 10 and narrow:  # within two decades: ticks at 1, 2, 5 x 10^k
        target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
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


def fig_convergence(hist: pd.DataFrame, order=None):
    """Joker's objectives and gap against time and epochs.

    Parameters
    ----------
    hist : pandas.DataFrame
        From :func:`reports.curves.joker_histories`.
    order : list of str, optional
        Datasets in sweep order (rows of the figure).

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
    datasets = _in_order(data["dataset"], order)
    fig, axes = plt.subplots(len(datasets), 4, squeeze=False, layout="constrained",
                             figsize=(16, 3.2 * len(datasets) + 0.8))
    hue = _hue_order(data["method"])
    palette = {m: colour(m) for m in hue}
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
                         f" vs {'time' if x == 'seconds' else 'epochs'}", fontsize=10)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette[m], label=m) for m in hue] + [
        Line2D([], [], color="0.3", linestyle="-", label="primal"),
        Line2D([], [], color="0.3", linestyle="--", label="dual")]
    fig.suptitle("Joker convergence (Figure 3 analogue): one line per run")
    fig.legend(handles=handles, loc="outside right upper", frameon=False)
    return fig, data.reset_index(drop=True)


def fig_metric_memory(cells: pd.DataFrame, order=None):
    """Test metric against the method's memory, one panel per dataset.

    Parameters
    ----------
    cells : pandas.DataFrame
        From :func:`reports.table.cells`.
    order : list of str, optional
        Datasets in sweep order (panel order).

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        One row per point: dataset, budget, method, variant, metric_name,
        ``metric`` (cell median, in the report's unit: accuracy in %),
        ``memory_mib`` (cell median of the fit memory, MiB; log axis unless
        a value is 0). Cells without an ok run or without both numbers are
        not plotted.
    """
    keep = cells[(cells["n_ok"] > 0) & cells["metric_median"].notna()
                 & cells["memory_mib_median"].notna()] if not cells.empty else cells
    data = pd.DataFrame({
        "dataset": keep.get("dataset"), "budget": keep.get("budget"),
        "method": keep.get("method"), "variant": keep.get("variant"),
        "metric_name": keep.get("metric_name"),
        "metric": keep.get("metric_median"), "memory_mib": keep.get("memory_mib_median"),
    }).reset_index(drop=True)
    if data.empty:
        return None, data
    datasets = _in_order(data["dataset"], order)
    ncols = min(3, len(datasets))
    nrows = -(-len(datasets) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(4.6 * ncols + 1.8, 3.6 * nrows + 0.6))
    markers = dict(zip(_in_order(data["budget"]), "osD^vP*X"))
    for ax, dataset in zip(axes.flat, datasets):
        d = data[data["dataset"] == dataset]
        for _, p in d.iterrows():
            ax.scatter(p["memory_mib"], p["metric"], s=70, color=colour(p["method"]),
                       marker=markers[p["budget"]], edgecolor="black", linewidth=0.4)
        if (d["memory_mib"] > 0).all():
            _plain_log(ax, "x", values=d["memory_mib"])
        ax.set_title(dataset, fontsize=11)
        ax.set_ylabel(vocab.metric_label(d["metric_name"].iloc[0], dataset))
        ax.set_xlabel(MEMORY_LABEL, fontsize=9)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_axis_off()
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour(m), marker="o", linestyle="", label=m)
               for m in _hue_order(data["method"])]
    if len(markers) > 1:
        handles += [Line2D([], [], color="0.3", marker=mk, linestyle="", label=b)
                    for b, mk in markers.items()]
    fig.legend(handles=handles, loc="outside right upper", frameon=False)
    fig.suptitle("Test metric vs fit memory (cell medians)")
    return fig, data


def fig_time(runs: pd.DataFrame, order=None):
    """Training time per method per dataset (log scale).

    Parameters
    ----------
    runs : pandas.DataFrame
        Derived runs (:func:`reports.table.derive`).

    order : list of str, optional
        Datasets in sweep order.

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        One row per ok run with a ``fit_seconds``: run_id, dataset, budget,
        method, seed, fit_seconds (s). Bars are the median over runs, black
        dots the runs.
    """
    ok = runs[(runs["status"] == "ok") & runs["fit_seconds"].notna()]
    data = ok[["run_id", "dataset", "budget", "method", "seed",
               "fit_seconds"]].reset_index(drop=True)
    if data.empty:
        return None, data
    hue = _hue_order(data["method"])
    datasets = _in_order(data["dataset"], order)
    n = len(datasets)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * n * len(hue) ** 0.5 + 3), 4),
                           layout="constrained")
    sns.barplot(data=data, x="dataset", y="fit_seconds", hue="method",
                order=datasets, hue_order=hue, palette={m: colour(m) for m in hue}, estimator="median",
                errorbar=None, ax=ax, alpha=0.85)
    sns.stripplot(data=data, x="dataset", y="fit_seconds", hue="method",
                  order=datasets, hue_order=hue, dodge=True,
                  palette=["black"] * len(hue), size=3, legend=False, ax=ax)
    _plain_log(ax, "y", values=data["fit_seconds"])
    ax.set_ylabel("training time (s)")
    ax.set_xlabel("dataset")
    ax.set_title("Training time per method (bars: median, dots: runs)")
    if ax.get_legend() is not None:  # none when every label is hidden (matplotlib hides names starting "_")
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1, 1), frameon=False)
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


def fig_rff(runs: pd.DataFrame, order=None):
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
                       col_order=_in_order(data["dataset"], order),
                       hue="budget", kind="line", marker="o", errorbar="sd",
                       height=3.6, facet_kws=dict(sharex=False, sharey=False))
    grid.set_titles("{col_name}")
    names = data.groupby("dataset")["metric_name"].first()
    for dataset, ax in grid.axes_dict.items():
        _plain_log(ax, "x", base=2)
        ax.set_ylabel(vocab.metric_label(names[dataset], dataset))
        ax.set_xlabel("n_components (random features)")
    grid.figure.suptitle("joker-inexact: test metric vs n_components (mean ± sd over seeds)")
    grid.tight_layout()
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
             out_dir: Path, order=None) -> list[Figure]:
    """Draw and save the four figures; a figure with no data gets a note.

    ``order`` lists the datasets in sweep order (panels, bars and rows follow it).
    """
    specs = [
        ("fig3_convergence", "Joker convergence: objectives and relative gap "
         "vs time and epochs (Figure 3 analogue)", fig_convergence, hist,
         "no Joker run with a convergence history"),
        ("metric_vs_memory", "Test metric vs fit memory, per dataset",
         fig_metric_memory, cells, "no cell with an ok run"),
        ("training_time", "Training time per method and dataset (log scale)",
         fig_time, runs, "no ok run with a fit time"),
        ("rff_n_components", "joker-inexact: test metric vs n_components",
         fig_rff, runs, "skipped: no sweep varies n_components of joker-inexact "
         "(needs runs at two or more values on one dataset)"),
    ]
    out: list[Figure] = []
    for name, title, func, arg, empty_note in specs:
        add(out, out_dir, name, title, func(arg, order), empty_note, echo=lambda *_: None)
    return out
