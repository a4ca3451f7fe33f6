"""Rows of dicts as one CSV file (the trial's history and checkpoint artifacts).

Imports only the standard library, so that the trial child can write its
artifacts without the tracking layer.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable


def write_rows_csv(rows: list[dict[str, Any]], path: Path, first: Iterable[str] = ()) -> bool:
    """Write ``rows`` as CSV: the columns ``first`` that some row has, in that order, then
    every other key in order of appearance; a missing value is an empty field.

    Parameters
    ----------
    rows : list of dict
        One dict per row (str keys; values written with ``str``).
    path : pathlib.Path
        The file to write (replaced).
    first : iterable of str, default ()
        Columns placed first, in this order, when present in any row.

    Returns
    -------
    bool
        False when ``rows`` is empty (no file written), True otherwise.
    """
    if not rows:
        return False
    keys = [k for k in first if any(k in r for r in rows)]
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in keys})
    return True
