"""Reference numbers beside ours, from ``reports/published.csv``.

Every row of the file cites its source (``source``: document, table,
row) and says what kind of number it is (``kind``):

- ``published``: read from a paper's table;
- ``measured on this machine class``: the anchor figures of
  ``docs/anchors.md`` (2 cores, no GPU, the settings in ``setting``).

The paper's own Table 4 numbers (arXiv 2505.17765) are not in the file:
the sources we could reach did not show them, and no number is written
that was not read from a source. Cells without a reference stay empty.

Columns: ``id``, ``dataset``, ``method``, ``metric``, ``value``, ``unit``
(empty, or ``%`` for a percentage), ``fit_seconds`` (s), ``peak_mib``
(MiB), ``memory_kind`` (``host`` or ``GPU``), ``n_train`` and ``n_test``
(the sizes the number was measured at), ``kind``, ``setting``,
``source``. A reference stands beside one of our cells only when the
cell ran at the same ``n_train`` and ``n_test``; the others are listed
in a separate table with their sizes (:func:`other_sizes`). Several rows
may share a (dataset, method); the table shows the first in file order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import vocab

PATH = Path(__file__).with_name("published.csv")
REF_COLUMNS = ["ref_id", "ref_metric", "ref_fit_seconds", "ref_peak_mib",
               "ref_kind"]
#: Columns of the reference lists the report prints.
LIST_COLUMNS = ["id", "dataset", "method", "n_train", "n_test", "metric",
                "value", "fit_seconds", "peak_mib", "kind", "setting",
                "source"]


def load(path: Path | str = PATH) -> pd.DataFrame:
    """The reference rows, with ``value_in_metric_unit`` added.

    ``value_in_metric_unit`` is the value in the unit the report shows the
    metric in (:func:`reports.vocab.metric_scale`: accuracy in %), whether
    the file gives it as a percentage (``unit`` ``%``) or a fraction.
    """
    refs = pd.read_csv(path, dtype={"unit": str}, keep_default_na=False,
                       na_values={c: [""] for c in ("value", "fit_seconds",
                                                    "peak_mib", "n_train",
                                                    "n_test")})
    shown = refs["metric"].map(vocab.metric_scale)
    given = np.where(refs["unit"] == "%", 100.0, 1.0)
    refs["value_in_metric_unit"] = refs["value"] * shown / given
    return refs


def same_size(cell, ref) -> bool:
    """Whether a cell ran at the reference's ``n_train`` and ``n_test``.

    A cell whose sizes were not recorded matches nothing.
    """
    got = (cell.get("n_train_median"), cell.get("n_test_median"))
    want = (ref["n_train"], ref["n_test"])
    return all(g is not None and not pd.isna(g) and not pd.isna(w) and int(g) == int(w)
               for g, w in zip(got, want))


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
        insensitive), method, metric name and size (:func:`same_size`);
        NaN/empty where none.
    """
    refs = load() if refs is None else refs
    first = refs.assign(_d=refs["dataset"].str.lower()).drop_duplicates(
        ["_d", "method", "metric", "n_train", "n_test"])
    out = cells.copy()
    for col in REF_COLUMNS:
        out[col] = np.nan if col not in ("ref_id", "ref_kind") else ""
    if out.empty:
        return out
    for idx, cell in out.iterrows():
        ref = next((r for _, r in first.iterrows()
                    if (r["_d"], r["method"], r["metric"]) == (
                        str(cell["dataset"]).lower(), cell["method"],
                        cell["metric_name"]) and same_size(cell, r)), None)
        if ref is not None:
            out.at[idx, "ref_id"] = ref["id"]
            out.at[idx, "ref_metric"] = ref["value_in_metric_unit"]
            out.at[idx, "ref_fit_seconds"] = ref["fit_seconds"]
            out.at[idx, "ref_peak_mib"] = ref["peak_mib"]
            out.at[idx, "ref_kind"] = ref["kind"]
    return out


def _present(cells: pd.DataFrame, refs: pd.DataFrame) -> pd.Series:
    """Mask of the reference rows for datasets and methods in ``cells``."""
    datasets = set(cells["dataset"].astype(str).str.lower())
    return refs["dataset"].str.lower().isin(datasets) & refs["method"].isin(
        set(cells["method"]))


def _matches_a_cell(cells: pd.DataFrame, refs: pd.DataFrame) -> pd.Series:
    """Mask of the reference rows with a cell of the same dataset, method, size."""
    keys = {(str(c["dataset"]).lower(), c["method"], c.get("n_train_median"),
             c.get("n_test_median")) for _, c in cells.iterrows()}
    return pd.Series([any((d, m) == (r["dataset"].lower(), r["method"])
                          and same_size({"n_train_median": nt, "n_test_median": ns}, r)
                          for d, m, nt, ns in keys)
                      for _, r in refs.iterrows()], index=refs.index, dtype=bool)


def cited(cells: pd.DataFrame, refs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Reference rows at the size of one of our cells (same dataset and method).

    The first of them per cell stands beside it in the tables
    (:func:`attach`); all are listed.

    Returns
    -------
    pandas.DataFrame
        Rows of :func:`load`, ``value`` in the report's unit, columns
        :data:`LIST_COLUMNS`.
    """
    refs = load() if refs is None else refs
    if cells.empty:
        return _listed(refs.iloc[0:0])
    return _listed(refs[_present(cells, refs) & _matches_a_cell(cells, refs)])


def other_sizes(cells: pd.DataFrame, refs: pd.DataFrame | None = None) -> pd.DataFrame:
    """References for our datasets and methods measured at other sizes.

    Every reference row for a (dataset, method) of ``cells`` whose
    ``n_train`` / ``n_test`` no cell of that pair ran at.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`LIST_COLUMNS`, ``value`` in the report's unit.
    """
    refs = load() if refs is None else refs
    if cells.empty:
        return _listed(refs.iloc[0:0])
    return _listed(refs[_present(cells, refs) & ~_matches_a_cell(cells, refs)])


def _listed(refs: pd.DataFrame) -> pd.DataFrame:
    """Reference rows for printing, as strings: values in report units."""
    out = refs.assign(value=refs["value_in_metric_unit"], metric=[
        vocab.metric_label(m, d) for m, d in zip(refs["metric"], refs["dataset"])])
    for col, fmt in (("n_train", "{:,.0f}"), ("n_test", "{:,.0f}"), ("value", "{:.6g}"),
                     ("fit_seconds", "{:g}"), ("peak_mib", "{:,.0f}")):
        out[col] = out[col].map(lambda v, f=fmt: "" if pd.isna(v) else f.format(v))
    return out[LIST_COLUMNS].reset_index(drop=True)
