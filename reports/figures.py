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

#: Colours beyond tab10's ten (near black, gold): with 12 methods tab10 repeated itself (askotch drew in
#: joker-exact's blue, torchkm in joker-inexact's orange).
EXTRA_COLOURS = ("#222222", "#ffc20a")

#: One colour per method, the same in every figure, no two alike.
PALETTE = dict(zip(METHOD_ORDER, [*sns.color_palette("tab10", 10), *sns.color_palette(list(EXTRA_COLOURS))]))
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
        method, seed, fit_seconds (s), contended (bool). Bars are the median
        over runs, black dots the runs; a bar with a contended run is hatched.
    """
    ok = runs[(runs["status"] == "ok") & runs["fit_seconds"].notna()]
    data = ok[["run_id", "dataset", "budget", "method", "seed",
               "fit_seconds"]].reset_index(drop=True)
    flag = ok["contended_flag"] if "contended_flag" in ok else pd.Series(np.nan, index=ok.index)
    data["contended"] = (flag == 1.0).to_numpy()
    if data.empty:
        return None, data
    hue = _hue_order(data["method"])
    datasets = _in_order(data["dataset"], order)
    n = len(datasets)
    # at most 14 in wide (2,100 px): shown 1,400 px wide its labels stay about 15 px high (review of issue 42)
    fig, ax = plt.subplots(figsize=(min(14.0, max(7.0, 0.9 * n * len(hue) ** 0.5 + 2)), 6.5),
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
    ax.set_title("Training time per method (bars: median, dots: runs; hatched: contended)")
    _label_style(ax)
    _hatch_contended(ax, data, datasets, hue)
    if ax.get_legend() is not None:  # none when every label is hidden (matplotlib hides names starting "_")
        from matplotlib.patches import Patch

        handles, labels = ax.get_legend_handles_labels()
        if data["contended"].any():
            handles.append(Patch(facecolor="white", edgecolor="black", hatch="///"))
            labels.append("contended (time not comparable)")
        ax.get_legend().remove()
        fig.legend(handles, labels, loc="outside lower center", frameon=False, fontsize=12,
                   ncol=min(6, len(handles)))
    return fig, data


def _hatch_contended(ax, data: pd.DataFrame, datasets: list, hue: list) -> None:
    """Hatch the bars of (dataset, method) groups with a contended run (seaborn draws them in hue-major order)."""
    bars = [p for p in ax.patches if p.get_height() > 0 or p.get_width() > 0]
    slots = [(d, m) for m in hue for d in datasets]
    present = {(d, m) for d, m in zip(data["dataset"], data["method"])}
    drawn = [k for k in slots if k in present]
    if len(bars) < len(drawn):
        return
    contended = set(zip(data.loc[data["contended"], "dataset"], data.loc[data["contended"], "method"]))
    for bar, key in zip(bars, drawn):
        if key in contended:
            bar.set_hatch("///")
            bar.set_edgecolor("black")


def _panels(keys: list, ncols_max: int = 2, w: float = 7.0, h: float = 5.0):
    """A grid of panels for ``keys`` (one each), large enough to read at 1,400 px."""
    ncols = min(ncols_max, len(keys))
    nrows = -(-len(keys) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(w * ncols + 2.6, h * nrows + 0.6))
    for ax in list(axes.flat)[len(keys):]:
        ax.set_axis_off()
    return fig, list(axes.flat)[:len(keys)]


def _label_style(ax) -> None:
    ax.tick_params(labelsize=11)
    ax.xaxis.label.set_size(12)
    ax.yaxis.label.set_size(12)
    ax.title.set_size(13)


def fig_metric_vs_time(points: pd.DataFrame, order=None):
    """Test metric against fit seconds (log), every method: anytime curves and final points.

    Parameters
    ----------
    points : pandas.DataFrame
        From :func:`reports.anytime.curves` (``fit_seconds``, ``metric``, ``final``, ``label``, ...).
    order : list of str, optional
        Datasets in sweep order.

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        The plotted points (one row each): lines join a run's checkpoints,
        a large marker with a black edge is the run's final point; a method
        with its final point only (LIBSVM, ThunderSVM) shows the marker alone.
        One panel per (dataset, memory budget).
    """
    if len(points) and "curve" in points:  # one curve, one set of test rows (reports.anytime.curves)
        points = points[points["curve"].astype(bool)]
    data = points[points["fit_seconds"] > 0].reset_index(drop=True) if len(points) else points
    if data.empty:
        return None, data
    keys = [(d, b) for d in _in_order(data["dataset"], order)
            for b in _in_order(data.loc[data["dataset"] == d, "budget"])]
    fig, axes = _panels(keys)
    methods = _hue_order(data["method"])
    for ax, (dataset, budget) in zip(axes, keys):
        d = data[(data["dataset"] == dataset) & (data["budget"] == budget)]
        for run_id, r in d.groupby("run_id", sort=False):
            r = r.sort_values("fit_seconds")
            col = colour(r["method"].iloc[0])
            curve = r[r["final"] == 0]
            fin = r[r["final"] == 1]
            busy = _contended(r)
            if len(r) > 1:
                ax.plot(r["fit_seconds"], r["metric"], "--" if busy else "-", color=col, lw=1.8, alpha=0.9)
                ax.plot(curve["fit_seconds"], curve["metric"], "o", color=col, ms=3.5)
            ax.plot(fin["fit_seconds"], fin["metric"], "o", color=col, ms=10, mec="black", mew=1.0)
            if busy:
                for x, y in zip(fin["fit_seconds"], fin["metric"]):
                    _dagger(ax, x, y)
        _plain_log(ax, "x", values=d["fit_seconds"])
        _zoom_finals(ax, d)
        ax.set_xlabel("fit time (s, log scale; evaluation excluded)")
        ax.set_ylabel(vocab.metric_label(d["metric_name"].iloc[0], dataset))
        ax.set_title(f"{dataset} · {budget}" + _rows_note(d))
        ax.grid(True, which="major", alpha=0.3)
        _label_style(ax)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour(m), marker="o", lw=1.8, label=m) for m in methods]
    # neutral: a hollow black-edged marker, not a method's colour (grey is libsvm's)
    handles.append(Line2D([], [], color="black", marker="o", ms=10, mfc="white", mec="black", mew=1.0, lw=0,
                          label="final point"))
    if any(_contended(r) for _, r in data.groupby("run_id")):
        handles.append(Line2D([], [], color="black", ls="--", marker="$†$", ms=10, lw=1.2,
                              label="† dashed: contended run (its seconds are not comparable)"))
    # on top, under the title: the figure is tall, and its first screen must say which curve is which
    # (the explanation is the legend's title: a suptitle and a legend both "outside upper" overlap)
    fig.legend(handles=handles, loc="outside upper center", frameon=False, fontsize=12,
               ncol=min(7, len(handles)), title_fontsize=14,
               title="Test metric vs fit time (small dots: checkpoints during the fit; large: final model, "
                     "scored on the same test rows as the checkpoints)")
    return fig, data


def _contended(r: pd.DataFrame) -> bool:
    """Whether a run's points (or a cell) carry the ``contended`` flag (its timing is not comparable)."""
    from .anytime import flagged

    return "contended" in r and any(flagged(v) for v in r["contended"])


def _dagger(ax, x, y) -> None:
    """A † beside a point whose fit time was measured under contention."""
    ax.annotate("†", (x, y), xytext=(7, 5), textcoords="offset points", fontsize=14, fontweight="bold",
                color="black", zorder=5)


def _rows_note(d: pd.DataFrame) -> str:
    """`` (5,000 of 10,000 test rows)`` when a panel's points are scored on a subset of the test rows."""
    from .anytime import _rows_text

    if "rows" not in d or "n_all" not in d:
        return ""
    rows, n_all = pd.to_numeric(d["rows"], errors="coerce").max(), pd.to_numeric(d["n_all"], errors="coerce").max()
    if pd.isna(rows) or pd.isna(n_all) or rows >= n_all:
        return ""
    return f"\n(test metric on the {_rows_text(rows, n_all)} test rows, every point)"


def _zoom_finals(ax, d: pd.DataFrame) -> None:
    """Fit the y range to the final points when early checkpoints (the zero model) dwarf them.

    The window is the final points' range, padded 1.5 times that range on
    the worse side and 0.3 times on the better side; points outside stay in
    the data and the panel says they are off scale.
    """
    from .anytime import lower_is_better

    finals = d.loc[d["final"] == 1, "metric"]
    if finals.empty:
        return
    lo, hi = float(finals.min()), float(finals.max())
    span = max(hi - lo, 0.02 * abs(hi) or 1e-3)
    worse_low = not lower_is_better(d["metric_name"].iloc[0])  # accuracy: worse is lower
    bottom = lo - (1.5 if worse_low else 0.3) * span
    top = hi + (0.3 if worse_low else 1.5) * span
    if d["metric"].min() < bottom or d["metric"].max() > top:
        ax.set_ylim(bottom, top)
        ax.text(0.02, 0.02 if worse_low else 0.97, "earlier checkpoints off scale", transform=ax.transAxes,
                ha="left", va="bottom" if worse_low else "top", fontsize=10, color="0.35")


def pareto_front(x, y, higher_is_better: bool) -> np.ndarray:
    """Boolean mask of the points no other point beats in both ``x`` (lower is better) and ``y``.

    Parameters
    ----------
    x : array-like of shape (n,)
        Cost (time, memory): lower is better.
    y : array-like of shape (n,)
        The metric.
    higher_is_better : bool
        Direction of ``y`` (accuracy: True, RMSE: False).

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float) * (1 if higher_is_better else -1)
    keep = np.ones(len(x), dtype=bool)
    for i in range(len(x)):
        beaten = (x <= x[i]) & (y >= y[i]) & ((x < x[i]) | (y > y[i]))
        keep[i] = not beaten.any()
    return keep


def tie_rings(x, y) -> np.ndarray:
    """Ring index of each point among the points drawn on top of one another.

    Points whose cost agrees to 0.5 % (log scale) and whose metric agrees to
    1e-9 (relative) are one tie group; in a group of ``g`` points the first
    gets ring ``g - 1`` (the largest marker, drawn lowest) and the last ring
    0, so that every tied method stays visible as a ring.

    Parameters
    ----------
    x : array-like of shape (n,)
        Positive costs (seconds, MiB).
    y : array-like of shape (n,)
        Metrics.

    Returns
    -------
    ndarray of int, shape (n,)
        0 for a point no other point covers.
    """
    x = np.log(np.asarray(x, dtype=float))
    y = np.asarray(y, dtype=float)
    rings = np.zeros(len(x), dtype=int)
    seen = np.zeros(len(x), dtype=bool)
    for i in range(len(x)):
        if seen[i]:
            continue
        same = (np.abs(x - x[i]) <= 0.005) & np.isclose(y, y[i], rtol=1e-9, atol=0.0) & ~seen
        members = np.flatnonzero(same)
        seen[members] = True
        rings[members] = np.arange(len(members))[::-1]
    return rings


def fig_pareto(cells: pd.DataFrame, order=None):
    """Final test metric against fit memory and against fit time, with the Pareto front, per dataset.

    Parameters
    ----------
    cells : pandas.DataFrame
        Cells (:func:`reports.table.cells`), medians over ok runs.

    Returns
    -------
    figure : matplotlib.figure.Figure or None
    data : pandas.DataFrame
        One row per cell with an ok run: dataset, budget, method, label,
        metric, fit_seconds, memory_mib, and ``front_time`` /
        ``front_memory`` (on the Pareto front of that panel: no other cell
        of the dataset is both cheaper and better).
    """
    from .anytime import flagged as anytime_flag, label as _lab, lower_is_better

    if cells.empty:
        return None, pd.DataFrame()
    keep = cells[(cells["n_ok"] > 0) & cells["metric_median"].notna()]
    data = pd.DataFrame({
        "dataset": keep["dataset"], "budget": keep["budget"], "method": keep["method"],
        "label": [_lab(m, v) for m, v in zip(keep["method"], keep["variant"])],
        "metric_name": keep["metric_name"], "metric": keep["metric_median"],
        "fit_seconds": keep["fit_seconds_median"], "memory_mib": keep["memory_mib_median"],
        "contended": keep.get("contended", False),
    }).reset_index(drop=True)
    if data.empty:
        return None, data
    data["front_time"] = False
    data["front_memory"] = False
    datasets = _in_order(data["dataset"], order)
    fig, axes = plt.subplots(len(datasets), 2, squeeze=False, layout="constrained",
                             figsize=(15.5, 5.0 * len(datasets) + 0.6))
    for r, dataset in enumerate(datasets):
        d = data[data["dataset"] == dataset]
        higher = not lower_is_better(d["metric_name"].iloc[0])
        for c, (col, front, xlabel) in enumerate((
                ("memory_mib", "front_memory", MEMORY_LABEL), ("fit_seconds", "front_time", "fit time (s)"))):
            ax = axes[r, c]
            dd = d[d[col].notna()]
            if dd.empty:
                ax.set_axis_off()
                continue
            x = dd[col].clip(lower=1e-3)
            mask = pareto_front(x, dd["metric"], higher)
            data.loc[dd.index, front] = mask
            f = dd[mask].assign(_x=x[mask]).sort_values("_x")
            ax.step(f["_x"], f["metric"], where="post", color="black", lw=1.5, ls="--", zorder=1)
            rings = tie_rings(x, dd["metric"])
            for (idx, p), on, ring in zip(dd.iterrows(), mask, rings):
                # tied points (same cost and metric) are drawn as rings, the larger ones below: a tie hid one
                ax.scatter(x[idx], p["metric"], s=(110 if on else 60) * (1 + 1.3 * ring), color=colour(p["method"]),
                           edgecolor="black", linewidth=1.2 if on else 0.4, zorder=2 + 0.01 * (10 - ring))
                if col == "fit_seconds" and anytime_flag(p.get("contended")):
                    _dagger(ax, x[idx], p["metric"])
            _plain_log(ax, "x", values=x)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(vocab.metric_label(d["metric_name"].iloc[0], dataset))
            budgets = "/".join(_in_order(dd["budget"]))
            # the front is named in the title, cheapest first: labels beside the points hid one another
            # and the markers of close neighbours (review of issue 42)
            ax.set_title(f"{dataset} ({budgets}): metric vs {'memory' if c == 0 else 'time'}\n"
                         f"front, cheapest first: "
                         + " → ".join(lab + ("†" if c == 1 and anytime_flag(busy) else "")
                                      for lab, busy in zip(f["label"], f["contended"])))
            ax.grid(True, which="major", alpha=0.3)
            _label_style(ax)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour(m), marker="o", linestyle="", ms=9, label=m)
               for m in _hue_order(data["method"])]
    handles.append(Line2D([], [], color="black", ls="--", label="Pareto front (large markers; named in each panel's title)"))
    if any(anytime_flag(v) for v in data["contended"]):
        handles.append(Line2D([], [], color="black", marker="$†$", ms=10, lw=0,
                              label="† contended: its fit time is not comparable"))
    fig.legend(handles=handles, loc="outside lower center", frameon=False, fontsize=12,
               ncol=min(6, len(handles)))
    fig.suptitle("Final test metric vs fit memory and vs fit time (cell medians);\n"
                 "on the front: no other method is both cheaper and better", fontsize=14)
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


#: Every figure a report may write (``figures/<name>.png`` and ``.pdf``): what a later report in the same
#: folder removes before drawing (other files there are the user's and stay).
FIGURE_NAMES = ("metric_vs_time", "pareto", "fig3_convergence", "metric_vs_memory", "training_time",
                "rff_n_components", "val_vs_lam", "scaling")


def make_all(runs: pd.DataFrame, cells: pd.DataFrame, hist: pd.DataFrame,
             out_dir: Path, order=None, points: pd.DataFrame | None = None) -> list[Figure]:
    """Draw and save the figures; a figure with no data gets a note.

    ``order`` lists the datasets in sweep order (panels, bars and rows follow it);
    ``points`` are the anytime curves (:func:`reports.anytime.curves`), drawn first.
    """
    specs = [
        ("metric_vs_time", "Test metric vs fit time: anytime curves and final points, per dataset",
         fig_metric_vs_time, points if points is not None else pd.DataFrame(),
         "no ok run with a fit time and a metric"),
        ("pareto", "Final test metric vs fit memory and vs fit time, Pareto front",
         fig_pareto, cells, "no cell with an ok run"),
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
