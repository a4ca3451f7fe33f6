"""Table 4 as text: Markdown, LaTeX (booktabs) and CSV.

Two shapes of the same cells (:func:`reports.table.cells`):

- *paper layout*: one row per dataset (and budget), one column per
  method, one table per quantity (test metric with its convergence mark,
  training time in s, peak memory in MiB), as in the paper's Table 4;
- *details*: one row per cell with the status, the convergence flag,
  Joker's relative duality gap and KKT residual, the budget, the chosen
  settings (``plan.*``) and the reference number beside ours.

A cell with no ``ok`` run shows its status word in place of every
number. CSV files keep the full-precision numbers.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from . import vocab
from .table import MARKS, METHOD_ORDER, natural_key

#: Mark of a cell whose timing was contended (tag ``contended``).
CONTENDED = "†"

LEGEND = (
    "Numbers: median over the repetitions with status ok, with the range "
    "[min–max] and n=<repetitions> when there are two or more. Metric: "
    "accuracy in %, RMSE in the target's unit. Time: fit wall clock in s. "
    "Memory: the method's memory, the host RSS peak during fit + predict "
    "above the trial's pre-fit baseline (data loaded, bandwidth known, "
    "warm-up done), MiB; the cell-by-cell table gives the trial process's "
    "peak beside it. "
    f"{CONTENDED} contended: the trial got clearly less CPU than its threads "
    "could use, or the load average exceeded the cores; its time is not "
    "comparable. "
    "Bold: the best cell of its row (highest accuracy or lowest RMSE, "
    "fastest fit, least memory), and every cell that ties with it as shown. "
    "Convergence: ✓ every ok run converged (Joker: relative duality gap and "
    "KKT residual under tolerance, a certificate; baselines: their own "
    "convergence signal; EigenPro: our plateau rule, the training loss flat for 10 epochs, ended it), "
    "ok (fixed epochs) EigenPro ran every epoch it was given (its plan's count, or the epochs= setting) "
    "without the plateau rule ending it, ✗ a run stopped "
    "short of its own tolerance or diverged, ? no "
    "convergence signal logged, – no solution (no ok run). A cell with no ok "
    "run shows why: n/a (the method has no loss for the task), not installed "
    "(install command below), over budget, or the status (timeout, oom, "
    "diverged, error); 'k/n ok' marks a cell where only k of its n runs "
    "ended ok. Reference: a number from reports/published.csv measured at "
    "the same n_train / n_test, in the same unit (id in brackets); "
    "references at other sizes are listed separately. 'measured on this "
    "machine class' numbers are the anchors of docs/anchors.md, not "
    "published results. "
    "vs best: the paired test of the cell's test predictions against the "
    "best cell's on the same test rows (McNemar's exact test for accuracy, "
    "a paired bootstrap for RMSE); ≈: not distinguishable from the best (paired test, p ≥ 0.05): the "
    "gap, however large, may be noise; it does not say the two are as good. "
    "untested: no paired test against the best (a missing or damaged predictions file, its or the best's: "
    "the cell table and the console say which). "
    "trivial: the model is no better than the majority class or the mean "
    "on the test rows (its metric says nothing of the method)."
)


def sig(x, digits: int = 4, keep_zeros: bool = True) -> str:
    """``x`` with ``digits`` significant digits ('' for NaN/None).

    ``keep_zeros`` keeps trailing zeros (0.1360); reference numbers are
    shown without them, with no more digits than their source gives.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if abs(x) >= 10 ** digits:
        return f"{x:.0f}"
    return f"{x:{'#' if keep_zeros else ''}.{digits}g}".rstrip(".")


def sci(x) -> str:
    """``x`` as ``1.2e-03`` ('' for NaN/None)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.1e}"


def mean_std(mean, std, fmt=sig) -> str:
    """``mean ± std`` (``mean`` alone when std is NaN)."""
    text = fmt(mean)
    if text and not (std is None or (isinstance(std, float) and math.isnan(std))):
        text += f" ± {fmt(std) if fmt is sci else sig(std, 2)}"
    return text


def spread(cell, q: str, fmt=sig) -> str:
    """``median [min–max] n=k`` of quantity ``q`` over a cell's ok runs.

    The range and the count are shown only with two or more values.
    """
    text = fmt(cell.get(f"{q}_median"))
    lo, hi = cell.get(f"{q}_min"), cell.get(f"{q}_max")
    if text and cell["n_ok"] > 1 and not pd.isna(lo) and lo != hi:
        text += f" [{fmt(lo)}–{fmt(hi)}]"
    if text and cell["n_ok"] > 1:
        text += f" n={cell['n_ok']}"
    return text


def _partial(cell) -> str:
    """' (k/n ok)' for a cell where some runs did not end ok."""
    if 0 < cell["n_ok"] < cell["n_runs"]:
        return f" ({cell['n_ok']}/{cell['n_runs']} ok)"
    return ""


def _label(cell) -> str:
    """Method name, with the variant when the sweep varied a method param."""
    return f"{cell['method']} ({cell['variant']})" if cell["variant"] else cell["method"]


def _word(cell) -> str:
    """What a cell with no ok run shows (``n/a``, ``not installed``, status)."""
    return cell.get("word") or cell["status"]


def _mib(x) -> str:
    """MiB with no decimals from 100 on, one decimal below."""
    if x is None or pd.isna(x):
        return ""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}"


def _bold(text: str) -> str:
    """``**text**`` (Markdown bold; :func:`html_bold` and :func:`latex` convert it)."""
    return f"**{text}**" if text else text


def metric_text(cell) -> str:
    """Metric cell: ``median [range] mark`` or the reason there is none; ``≈`` not distinguishable from
    the best, ``trivial`` no better than the trivial predictor (:func:`reports.anytime.mark_cells`)."""
    if cell["n_ok"] == 0:
        return _word(cell)
    text = spread(cell, "metric") + " " + MARKS[cell["converged"]] + _partial(cell)
    if cell.get("same_as_best") is True and not cell.get("is_best"):
        text += " ≈"
    elif cell.get("untested") is True:
        text += " untested"
    if cell.get("trivial") is True:
        text += " trivial"
    return text


def time_text(cell) -> str:
    """Time cell (s), with † when contended, or the reason there is none."""
    if cell["n_ok"] == 0:
        return _word(cell)
    return spread(cell, "fit_seconds", fmt=lambda x: sig(x, 3)) + (
        f" {CONTENDED}" if cell.get("contended") else "")


def memory_text(cell, q: str = "memory_mib") -> str:
    """Memory cell (MiB) of quantity ``q``, or the reason there is none."""
    if cell["n_ok"] == 0:
        return _word(cell)
    return spread(cell, q, fmt=_mib)


def reference_text(cell) -> str:
    """``metric · s · MiB process peak [id]`` of the cell's reference ('' when none).

    The references' memory is the whole process's peak RSS (docs/anchors.md),
    not comparable with our fit memory; the text says so.
    """
    if not cell.get("ref_id"):
        return ""
    parts = []
    for key, unit, digits in (("ref_metric", "", 4), ("ref_fit_seconds", " s", 3),
                              ("ref_peak_mib", " MiB process peak", 4)):
        text = sig(cell[key], digits, keep_zeros=False)
        if text:
            parts.append(text + unit)
    return " · ".join(parts) + f" [{cell['ref_id']}]"


QUANTITIES = {"metric": ("test metric", metric_text),
              "time": ("training time (s)", time_text),
              "memory": ("fit memory (MiB)", memory_text)}


def _size(cell) -> str:
    """``n_train / n_test × d`` of a cell ('' when not recorded)."""
    n = [cell.get(f"{k}_median") for k in ("n_train", "n_test", "n_features")]
    if any(v is None or pd.isna(v) for v in n[:2]):
        return ""
    text = f"{int(n[0]):,} / {int(n[1]):,}"
    return text + (f" × {int(n[2])}" if n[2] is not None and not pd.isna(n[2]) else "")


def _sizes(group: pd.DataFrame) -> str:
    """The size column of one row of :func:`paper_layout`: one size, or the range of a size sweep.

    Cells of one (dataset, budget) at several ``n_train`` (a scaling sweep;
    each size is its own column) give ``5,000 ... 196,045 / 10,000 × 3``,
    the smallest and the largest training size, not every size run together.
    """
    n = sorted({int(v) for v in group["n_train_median"].dropna()}) if "n_train_median" in group else []
    if len(n) < 2:
        return _first(_size(c) for _, c in group.iterrows())
    rest = _first(_size(c).split(" / ", 1)[1] for _, c in group.iterrows() if _size(c))
    return f"{n[0]:,} ... {n[-1]:,} / {rest}"


def _first(values) -> str:
    """Distinct non-empty strings, ``/``-joined, in first-seen order."""
    return "/".join(dict.fromkeys(str(v) for v in values if str(v) not in ("", "nan", "None")))


def paper_layout(cells: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """One row per (dataset, budget), one column per method.

    Parameters
    ----------
    cells : pandas.DataFrame
        From :func:`reports.table.cells` (datasets in sweep order).
    quantity : {'metric', 'time', 'memory'}

    Returns
    -------
    pandas.DataFrame
        Strings; columns ``dataset``, ``n_train / n_test × d``, (for the
        metric only) ``metric`` with its unit, ``budget``, then the methods
        in table order; empty where a method has no run.
    """
    _, fmt = QUANTITIES[quantity]
    best_col = {"metric": "metric_median", "time": "fit_seconds_median", "memory": "memory_mib_median"}[quantity]
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    keys = sorted({(order.get(c["method"], len(order)), c["method"],
                    natural_key(c["variant"]), _label(c)) for _, c in cells.iterrows()})
    methods = [k[-1] for k in keys]
    head = ["dataset", SIZE] + (["metric"] if quantity == "metric" else []) + ["budget"]
    rows = []
    for (dataset, budget), group in cells.groupby(["dataset", "budget"], sort=False):
        row = {"dataset": dataset, SIZE: _sizes(group),
               "metric": vocab.metric_label(group["metric_name"].iloc[0], dataset),
               "budget": budget}
        row.update({m: "" for m in methods})
        best = best_cells(group, best_col)
        for idx, cell in group.iterrows():
            row[_label(cell)] = _bold(fmt(cell)) if idx in best else fmt(cell)
        rows.append(row)
    return pd.DataFrame(rows, columns=[*head, *methods])


SIZE = "n_train / n_test × d"


def best_cell(group: pd.DataFrame, column: str):
    """Index of the best cell of one table row: max accuracy / min RMSE (metric), min time or memory.

    Cells without an ok run or without the number do not compete; ``None`` when none does.
    """
    ok = group[(group["n_ok"] > 0) & group[column].notna()] if column in group else group.iloc[0:0]
    if ok.empty:
        return None
    if column == "metric_median" and "is_best" in ok:  # the cell the paired tests compare with
        marked = ok.index[ok["is_best"] == True]  # noqa: E712  (object column: True, False)
        if len(marked):
            return marked[0]
    lower = column != "metric_median" or any(w in str(ok["metric_name"].iloc[0]) for w in ("rmse", "mse", "error"))
    return ok[column].idxmin() if lower else ok[column].idxmax()


def _checkpoints_text(cell, ran: bool) -> str:
    """Checkpoints read (median over the ok runs), and any damaged artifact of the cell's runs."""
    text = f"{cell['n_checkpoints_median']:.0f}" if ran and pd.notna(cell.get("n_checkpoints_median")) else ""
    damaged = cell.get("artifact_problems") or ""
    return f"{text} ({damaged})" if text and damaged else (text or damaged)


def best_cells(group: pd.DataFrame, column: str) -> list:
    """Indices of the best cell of one table row and of every cell that ties with it.

    A tie is the same median as shown (:func:`sig`, four significant
    digits: 65.40 and 65.40 are both bold, as the legend's "the best cell
    of its row" reads); [] when no cell competes (:func:`best_cell`).
    """
    best = best_cell(group, column)
    if best is None:
        return []
    shown = sig(group.at[best, column])
    ok = group[(group["n_ok"] > 0) & group[column].notna()]
    return [best] + [i for i in ok.index if i != best and sig(ok.at[i, column]) == shown]


def datasets(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset: sizes, scale, threads, device, budgets, metric.

    Parameters
    ----------
    cells : pandas.DataFrame
        From :func:`reports.table.cells`.

    Returns
    -------
    pandas.DataFrame
        Strings, datasets in sweep order; columns dataset, n_train,
        n_test, d, scale, threads, device, budget, metric.
    """
    rows = []
    for dataset, group in cells.groupby("dataset", sort=False):
        def num(q):
            return _first(f"{int(v):,}" for v in group[f"{q}_median"].dropna())
        rows.append({"dataset": dataset, "n_train": num("n_train"),
                     "n_test": num("n_test"), "d": num("n_features"),
                     "scale": _first(group["scale"]), "threads": _first(group["threads"]),
                     "device": _first(group["device"]),
                     "budget": _first(group["budget"]),
                     "metric": vocab.metric_label(group["metric_name"].iloc[0], dataset)})
    return pd.DataFrame(rows)


def details(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, every column of the report, as strings.

    The GPU column appears only when some cell measured ``fit_gpu_mib``.
    """
    gpu = "gpu_mib_median" in cells and cells["gpu_mib_median"].notna().any()
    tied = {i for _, g in cells.groupby(["dataset", "budget"], sort=False)
            for i in best_cells(g, "metric_median")} if "is_best" in cells else set()
    rows = []
    for idx, c in cells.iterrows():
        ran = c["n_ok"] > 0
        status = c["status"] + (" (fixed epochs)" if c["status"] == "ok" and c["converged"] == "fixed epochs" else "")
        value = spread(c, "metric") if ran else _word(c)
        row = {
            "dataset": c["dataset"], "budget": c["budget"], "method": _label(c),
            "runs": f"{c['n_ok']}/{c['n_runs']} ok", "status": status,
            "value": _bold(value) if c.get("is_best") is True or idx in tied else value,
            "vs best (test, p)": c.get("vs_best") or "",
            "trivial": (f"trivial: {c.get('trivial_reason')}" if c.get("trivial") is True else ""),
            "checkpoints": _checkpoints_text(c, ran),
            "time (s)": time_text(c) if ran else "",
            "fit memory (MiB)": memory_text(c) if ran else "",
            "peak (MiB)": memory_text(c, "peak_rss_mib") if ran else "",
        }
        if gpu:
            row["fit GPU (MiB)"] = memory_text(c, "gpu_mib") if ran else ""
        util, load = c.get("cpu_utilisation_median"), c.get("fit_load_avg_median")
        row["CPU use (load)"] = " ".join(x for x in (
            "" if not ran or pd.isna(util) else f"{100 * util:.0f}%",
            "" if not ran or pd.isna(load) else f"({load:.1f})") if x)
        row.update({
            "converged": f"{c['converged']} ({c['n_converged']}/{c['n_ok']})"
            if ran else c["converged"],
            "gap": sci(c["dual_gap_median"]),
            "KKT": sci(c["kkt_residual_median"]),
            "settings": c["settings"], "reference": reference_text(c),
            "notes": (f"{CONTENDED} {c['contended_reason']}" if c.get("contended")
                      else "install: see below"
                      if c.get("skip_kind") == "not_installed" else ""),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def install_notes(cells: pd.DataFrame) -> list:
    """``method: command`` for each method whose trials were not installed."""
    out = {}
    for _, c in cells.iterrows():
        if c.get("skip_kind") == "not_installed" and c["n_ok"] == 0:
            out.setdefault(c["method"], c.get("install_hint") or "")
    return [f"{m} is not installed: {h}" if h else f"{m} is not installed"
            for m, h in out.items()]


def footnotes(cells: pd.DataFrame) -> list:
    """Notes the tables need: memory fallbacks, contended cells, installs."""
    notes = []
    src = cells.get("memory_source", pd.Series(dtype=str)).fillna("")
    old = cells[src.str.contains("peak - baseline") & (cells["n_ok"] > 0)]
    if len(old):
        notes.append(f"Memory of {len(old)} cell(s) is peak_rss_mib − baseline_rss_mib "
                     "(records without fit_rss_mib, written before the harness "
                     "measured the method's memory).")
    peak = cells[src.str.contains("process peak") & (cells["n_ok"] > 0)]
    if len(peak):
        notes.append(f"Memory of {len(peak)} cell(s) is the whole process's peak "
                     "(records with neither fit_rss_mib nor baseline_rss_mib): "
                     "it includes data loading and pre-fit work.")
    n_cont = int(cells.get("contended", pd.Series(dtype=bool)).fillna(False).sum())
    if n_cont:
        notes.append(f"{CONTENDED} {n_cont} cell(s) ran contended (see the cell "
                     "notes); re-run them on an idle machine for timings.")
    return notes + install_notes(cells)


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a GitHub pipe table (tabulate); '(none)' when empty.

    A ``|`` inside a cell is escaped (``\\|``) so it does not split the cell.
    """
    if frame.empty:
        return "(none)\n"
    safe = frame.map(lambda v: v.replace("|", "\\|") if isinstance(v, str) else v)
    return safe.to_markdown(index=False, tablefmt="pipe",
                            disable_numparse=True) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$",
        "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}", "±": r"$\pm$", "✓": r"\checkmark{}",
        "✗": r"$\times$", "–": "--", "·": r"$\cdot$",
        "†": r"$^\dagger$", "×": r"$\times$", "≈": r"$\approx$", "≥": r"$\geq$"}


def tex_escape(text) -> str:
    """Escape LaTeX specials; ± ✓ ✗ – · ≈ become math or amssymb symbols; ``**x**`` becomes ``\\textbf{x}``."""
    out = re.sub("|".join(re.escape(k) for k in _TEX),
                 lambda m: _TEX[m.group(0)], str(text))
    return re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", out)


def latex(frame: pd.DataFrame, caption: str, label: str) -> str:
    """A booktabs ``table`` environment (needs booktabs and amssymb)."""
    if frame.empty:
        return f"% {caption}: no rows\n"
    esc = frame.map(tex_escape)
    if isinstance(esc.columns, pd.MultiIndex):
        esc.columns = pd.MultiIndex.from_tuples(
            [tuple(tex_escape(x) for x in col) for col in esc.columns])
    else:
        esc.columns = [tex_escape(c) for c in esc.columns]
    return esc.to_latex(index=False, escape=False, caption=tex_escape(caption),
                        label=label, column_format="l" * esc.shape[1],
                        multicolumn_format="c", position="htbp")


def paper_layout_tex(cells: pd.DataFrame) -> pd.DataFrame:
    """The paper's shape: per method the three sub-columns (metric, s, MiB)."""
    parts = {q: paper_layout(cells, q) for q in QUANTITIES}
    head = ["dataset", SIZE, "metric", "budget"]
    base = parts["metric"][head]
    cols = {("", k): base[k] for k in base.columns}
    for method in parts["metric"].columns[len(head):]:
        cols[(method, "metric")] = parts["metric"][method]
        cols[(method, "s")] = parts["time"][method]
        cols[(method, "MiB")] = parts["memory"][method]
    return pd.DataFrame(cols)
