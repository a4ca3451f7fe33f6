"""Which settings each cell used: the tuned-settings table's row, or untuned and why.

A trial of a sweep with ``settings_source=tuned`` (``sweeps/table4.yaml``)
runs at its cell's row of ``conf/tuned/<scale>.yaml`` when the table has
one, else untuned (:mod:`joker.bench.config.settings_table`); its record says
which in the tags ``settings_source`` (``tuned`` or ``untuned (<why>)``),
``settings_file``, ``settings_version``, ``settings_sha256``,
``settings_row_run`` (the tuned final fit the row came from) and
``settings_row_val`` (its validation metric), and its params hold the
values used (``lam``, ``sigma_value``, ``tuning.sigma_factor``,
``epsilon_value``). This module turns them into one report row per cell.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["TITLE", "cell_settings"]

#: The report section's title.
TITLE = "Settings each cell used (tuned: its row of conf/tuned/<scale>.yaml; untuned: why)"

_COLUMNS = ["dataset", "budget", "method", "variant", "settings", "table version", "sigma factor", "sigma", "lam",
            "epsilon", "row's final run", "row's validation metric"]


def _one(values: pd.Series) -> str:
    """The distinct non-empty values of a column, ``/``-joined (``-`` when none)."""
    seen = [str(v) for v in values if isinstance(v, str) and v not in ("", "None", "nan")
            or (not isinstance(v, str) and pd.notna(v))]
    return "/".join(dict.fromkeys(seen)) or "-"


def _number(values: pd.Series) -> str:
    out = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if x == x:
            out.append(f"{x:.4g}")
    return "/".join(dict.fromkeys(out)) or "-"


def cell_settings(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell (dataset, budget, method, variant) of the used trial runs: the settings they ran at.

    Parameters
    ----------
    runs : pandas.DataFrame
        Used untuned-table runs (:func:`reports.load.load_selection`, the
        runs without a ``tuning`` tag): tag columns ``settings_*`` (absent
        for records written before the table existed: shown as
        ``untuned (not recorded)``) and params ``params.lam``,
        ``params.sigma_value``, ``params.tuning.sigma_factor``,
        ``params.epsilon_value``.

    Returns
    -------
    pandas.DataFrame
        Columns dataset, budget, method, variant (:func:`reports.table.derive`:
        an experiment holding untuned and tuned-settings trials of one
        method shows both, as the cell tables do), settings (``tuned`` or ``untuned
        (<why>)``), table version (``v<N> <sha256>``), sigma factor (1 for
        an untuned run), sigma (the bandwidth used), lam, epsilon (the SVR
        tube used, ``-`` when none), the row's final-fit run id and its
        validation metric. Empty (with these columns) when ``runs`` is.
    """
    if runs is None or runs.empty:
        return pd.DataFrame(columns=_COLUMNS)
    frame = runs.copy()
    for col in ("settings_source", "settings_version", "settings_sha256", "settings_row_run", "settings_row_val",
                "params.lam", "params.sigma_value", "params.tuning.sigma_factor", "params.epsilon_value"):
        if col not in frame:
            frame[col] = None
    frame["settings_source"] = frame["settings_source"].where(frame["settings_source"].notna(),
                                                              "untuned (not recorded)")
    factor = pd.to_numeric(frame["params.tuning.sigma_factor"], errors="coerce").fillna(1.0)
    if "variant" not in frame:
        frame["variant"] = ""
    rows = []
    for (ds, budget, method, variant), g in frame.groupby(["dataset", "budget", "method", "variant"], sort=False,
                                                          dropna=False):
        version = " ".join(x for x in (("v" + _one(g["settings_version"])) if _one(g["settings_version"]) != "-"
                                       else "", _one(g["settings_sha256"]) if _one(g["settings_sha256"]) != "-"
                                       else "") if x) or "-"
        rows.append({"dataset": ds, "budget": budget, "method": method, "variant": variant,
                     "settings": _one(g["settings_source"]),
                     "table version": version, "sigma factor": _number(factor[g.index]),
                     "sigma": _number(g["params.sigma_value"]), "lam": _number(g["params.lam"]),
                     "epsilon": _number(g["params.epsilon_value"]), "row's final run": _one(g["settings_row_run"]),
                     "row's validation metric": _one(g["settings_row_val"])})
    return pd.DataFrame(rows, columns=_COLUMNS)
