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

from .table import MARKS, METHOD_ORDER, natural_key

LEGEND = (
    "Numbers: mean ± sample std over the runs with status ok (std only with "
    "two or more). Time: fit wall clock in s. Memory: peak GPU MiB when "
    "measured (GPU), else peak host RSS MiB of the trial process. "
    "Convergence: ✓ every ok run converged (Joker: relative duality gap and "
    "KKT residual under tolerance, a certificate; baselines: their own "
    "convergence signal), ✗ a run did not converge or diverged, ? no "
    "convergence signal logged, – no solution (no ok run). A status word "
    "(skipped, timeout, oom, over_budget, diverged, error) replaces the "
    "numbers of a cell with no ok run; 'k/n ok' marks a cell where only k "
    "of its n runs ended ok. Reference: first row of reports/published.csv "
    "for the dataset and method (id in brackets; see References), in the "
    "metric's unit; 'measured on this machine class' numbers are anchors "
    "from shared/docs/anchors.md, not published results."
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


def _partial(cell) -> str:
    """' (k/n ok)' for a cell where some runs did not end ok."""
    if 0 < cell["n_ok"] < cell["n_runs"]:
        return f" ({cell['n_ok']}/{cell['n_runs']} ok)"
    return ""


def _label(cell) -> str:
    """Method name, with the variant when the sweep varied a method param."""
    return f"{cell['method']} ({cell['variant']})" if cell["variant"] else cell["method"]


def metric_text(cell) -> str:
    """Metric cell: ``mean ± std mark`` or the status word."""
    if cell["n_ok"] == 0:
        return cell["status"]
    return (mean_std(cell["metric_mean"], cell["metric_std"]) + " "
            + MARKS[cell["converged"]] + _partial(cell))


def time_text(cell) -> str:
    """Time cell (s) or the status word."""
    if cell["n_ok"] == 0:
        return cell["status"]
    return mean_std(cell["fit_seconds_mean"], cell["fit_seconds_std"],
                    fmt=lambda x: sig(x, 3))


def memory_text(cell, with_kind: bool = False) -> str:
    """Memory cell (MiB) or the status word."""
    if cell["n_ok"] == 0:
        return cell["status"]
    text = mean_std(cell["memory_mib_mean"], cell["memory_mib_std"],
                    fmt=lambda x: sig(x, 4))
    if with_kind and text and cell["memory_kind"]:
        text += f" {cell['memory_kind']}"
    return text


def reference_text(cell) -> str:
    """``metric · s · MiB [id]`` of the cell's reference ('' when none)."""
    if not cell.get("ref_id"):
        return ""
    parts = []
    for key, unit, digits in (("ref_metric", "", 4), ("ref_fit_seconds", " s", 3),
                              ("ref_peak_mib", " MiB", 4)):
        text = sig(cell[key], digits, keep_zeros=False)
        if text:
            parts.append(text + unit)
    return " · ".join(parts) + f" [{cell['ref_id']}]"


QUANTITIES = {"metric": ("test metric", metric_text),
              "time": ("training time (s)", time_text),
              "memory": ("peak memory (MiB)", memory_text)}


def paper_layout(cells: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """One row per (dataset, budget), one column per method.

    Parameters
    ----------
    cells : pandas.DataFrame
        From :func:`reports.table.cells`.
    quantity : {'metric', 'time', 'memory'}

    Returns
    -------
    pandas.DataFrame
        Strings; columns ``dataset``, ``metric``, ``budget`` then the
        methods in table order; empty where a method has no run.
    """
    _, fmt = QUANTITIES[quantity]
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    keys = sorted({(order.get(c["method"], len(order)), c["method"],
                    natural_key(c["variant"]), _label(c)) for _, c in cells.iterrows()})
    methods = [k[-1] for k in keys]
    rows = []
    for (dataset, budget), group in cells.groupby(["dataset", "budget"], sort=False):
        row = {"dataset": dataset, "metric": group["metric_name"].iloc[0],
               "budget": budget}
        row.update({m: "" for m in methods})
        for _, cell in group.iterrows():
            row[_label(cell)] = fmt(cell)
        rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", "metric", "budget", *methods])


def details(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, every column of the report, as strings."""
    rows = []
    for _, c in cells.iterrows():
        rows.append({
            "dataset": c["dataset"], "metric": c["metric_name"],
            "budget": c["budget"], "method": _label(c),
            "runs": f"{c['n_ok']}/{c['n_runs']} ok", "status": c["status"],
            "value": (mean_std(c["metric_mean"], c["metric_std"])
                      if c["n_ok"] else c["status"]),
            "time (s)": time_text(c), "memory (MiB)": memory_text(c, True),
            "converged": f"{c['converged']} ({c['n_converged']}/{c['n_ok']})"
            if c["n_ok"] else c["converged"],
            "signal": c.get("signal", ""),
            "gap": mean_std(c["dual_gap_mean"], c["dual_gap_std"], fmt=sci),
            "KKT": mean_std(c["kkt_residual_mean"], c["kkt_residual_std"], fmt=sci),
            "settings": c["settings"], "reference": reference_text(c),
        })
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a GitHub pipe table (tabulate); '(none)' when empty."""
    if frame.empty:
        return "(none)\n"
    return frame.to_markdown(index=False, tablefmt="pipe",
                             disable_numparse=True) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$",
        "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}", "±": r"$\pm$", "✓": r"\checkmark{}",
        "✗": r"$\times$", "–": "--", "·": r"$\cdot$"}


def tex_escape(text) -> str:
    """Escape LaTeX specials; ± ✓ ✗ – · become math or amssymb symbols."""
    return re.sub("|".join(re.escape(k) for k in _TEX),
                  lambda m: _TEX[m.group(0)], str(text))


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
    base = parts["metric"][["dataset", "metric", "budget"]]
    cols = {("", k): base[k] for k in base.columns}
    for method in parts["metric"].columns[3:]:
        cols[(method, "metric")] = parts["metric"][method]
        cols[(method, "s")] = parts["time"][method]
        cols[(method, "MiB")] = parts["memory"][method]
    return pd.DataFrame(cols)
