"""Reference numbers beside ours, from ``reports/published.csv``.

Every row of the file cites its source (``source``: document, table,
row) and says what kind of number it is (``kind``):

- ``published``: read from a paper's table;
- ``measured on this machine class``: the anchor figures of
  ``shared/docs/anchors.md`` (2 cores, no GPU, the settings in ``setting``).

The paper's own Table 4 numbers (arXiv 2505.17765) are not in the file:
the sources we could reach did not show them, and no number is written
that was not read from a source. Cells without a reference stay empty.

Columns: ``id``, ``dataset``, ``method``, ``metric``, ``value``, ``unit``
(empty, or ``%`` for a percentage), ``fit_seconds`` (s), ``peak_mib``
(MiB), ``memory_kind`` (``host`` or ``GPU``), ``kind``, ``setting``,
``source``. Several rows may share a (dataset, method); the table shows
the first in file order, the reference list shows all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

PATH = Path(__file__).with_name("published.csv")
REF_COLUMNS = ["ref_id", "ref_metric", "ref_fit_seconds", "ref_peak_mib",
               "ref_kind"]


def load(path: Path | str = PATH) -> pd.DataFrame:
    """The reference rows, with ``value_in_metric_unit`` added.

    ``value_in_metric_unit`` is ``value / 100`` when ``unit`` is ``%``
    (the harness logs accuracy as a fraction in [0, 1]), else ``value``.
    """
    refs = pd.read_csv(path, dtype={"unit": str}, keep_default_na=False,
                       na_values={"value": [""], "fit_seconds": [""],
                                  "peak_mib": [""]})
    scale = np.where(refs["unit"] == "%", 0.01, 1.0)
    refs["value_in_metric_unit"] = refs["value"] * scale
    return refs


def attach(cells: pd.DataFrame, refs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Add reference columns to Table 4 cells.

    Parameters
    ----------
    cells : pandas.DataFrame
        From :func:`reports.table.cells`.
    refs : pandas.DataFrame, optional
        From :func:`load` (default: the packaged file).

    Returns
    -------
    pandas.DataFrame
        ``cells`` with :data:`REF_COLUMNS`; matched on dataset (case
        insensitive), method and metric name; NaN/empty where none.
    """
    refs = load() if refs is None else refs
    first = refs.assign(_d=refs["dataset"].str.lower()).drop_duplicates(
        ["_d", "method", "metric"])
    out = cells.copy()
    for col in REF_COLUMNS:
        out[col] = np.nan if col not in ("ref_id", "ref_kind") else ""
    if out.empty:
        return out
    lookup = {(r["_d"], r["method"], r["metric"]): r for _, r in first.iterrows()}
    for idx, cell in out.iterrows():
        ref = lookup.get((str(cell["dataset"]).lower(), cell["method"],
                          cell["metric_name"]))
        if ref is not None:
            out.at[idx, "ref_id"] = ref["id"]
            out.at[idx, "ref_metric"] = ref["value_in_metric_unit"]
            out.at[idx, "ref_fit_seconds"] = ref["fit_seconds"]
            out.at[idx, "ref_peak_mib"] = ref["peak_mib"]
            out.at[idx, "ref_kind"] = ref["kind"]
    return out


def cited(cells: pd.DataFrame, refs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Reference rows for the datasets and methods present in ``cells``."""
    refs = load() if refs is None else refs
    if cells.empty:
        return refs.iloc[0:0]
    datasets = set(cells["dataset"].astype(str).str.lower())
    methods = set(cells["method"])
    mask = refs["dataset"].str.lower().isin(datasets) & refs["method"].isin(methods)
    return refs[mask].reset_index(drop=True)
