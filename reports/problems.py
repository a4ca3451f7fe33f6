"""The problem each column of the report solved, from the runs' records (issue 40, "Stated problems").

Every trial records its problem (``docs/contracts.md``, "Stated problems"):
params ``problem.<field>`` (name, loss, intercept, model, target, dtype,
device, ...) and the one-line tag ``problem``. :func:`problem_texts` gives
the text per (dataset, method); :func:`problem_table` lays it out like the
metric table (one row per dataset, one column per method) with a last
column that says when the columns of a dataset solve different problems
(SVR against KRR, a fitted bias against a centred target), and
:func:`with_problems` puts that table right after the metric table.
Runs written before the record had a problem show "(not recorded)".
"""

from __future__ import annotations

import pandas as pd

from joker.bench.records.record import PROBLEM_PARAM_PREFIX, PROBLEM_TAG

__all__ = ["SAME_TITLE", "TITLE", "problem_list", "problem_table", "problem_texts", "with_problems"]

#: Title of the report's problem table.
TITLE = "Problems: what each column solved (problem; intercept; model; dtype, device)"
#: Title of the per-dataset summary: do the columns of a dataset solve one problem?
SAME_TITLE = "Same problem in every column? (per dataset: the problems and the columns that solved each)"
#: Shown for runs without a stated problem (records older than the field).
NOT_RECORDED = "(not recorded)"
#: Shown for a (dataset, method) whose runs were all skipped (no loss for the task, not installed, ...).
NOT_RUN = "n/a (skipped: no model was fitted)"


def _param(runs: pd.DataFrame, field: str) -> pd.Series:
    col = f"params.{PROBLEM_PARAM_PREFIX}{field}"
    return runs[col] if col in runs else pd.Series([None] * len(runs), index=runs.index, dtype=object)


def _short(row: pd.Series) -> str | None:
    """``"KRR (squared); centred target; Nystrom, M = 64; float32, cpu"`` from the ``problem.*`` params."""
    name, loss = row.get("name"), row.get("loss")
    if not isinstance(name, str) or not name:
        return None
    eps = f", epsilon {row['epsilon']}" if isinstance(row.get("epsilon"), str) else ""
    return f"{name} ({loss}{eps}); {row.get('intercept')}; {row.get('model')}; {row.get('dtype')}, {row.get('device')}"


def problem_texts(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, method): the problem its runs stated.

    Parameters
    ----------
    runs : pandas.DataFrame
        :func:`reports.load.runs_frame` rows (columns ``dataset``, ``method``,
        ``params.problem.*`` and the ``problem`` tag when recorded).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``method``, ``problem`` (the short text;
        distinct texts of the runs ``" | "``-joined, e.g. two budgets that
        planned different M; :data:`NOT_RUN` when every run was skipped),
        ``name`` (the problem names, ``/``-joined) and ``full`` (the one-line
        tag texts).
    """
    if runs.empty:
        return pd.DataFrame(columns=["dataset", "method", "problem", "name", "full"])
    fields = pd.DataFrame({f: _param(runs, f) for f in ("name", "loss", "intercept", "model", "dtype", "device",
                                                       "epsilon")})
    short = fields.apply(_short, axis=1)
    tag = runs[PROBLEM_TAG] if PROBLEM_TAG in runs else pd.Series([None] * len(runs), index=runs.index)
    status = runs["status"] if "status" in runs else pd.Series([None] * len(runs), index=runs.index)
    frame = pd.DataFrame({"dataset": runs["dataset"], "method": runs["method"], "short": short,
                          "name": fields["name"], "full": tag, "status": status})

    def joined(values, sep):
        kept = [str(v) for v in values if isinstance(v, str) and v]
        return sep.join(dict.fromkeys(kept))

    rows = []
    for (dataset, method), group in frame.groupby(["dataset", "method"], sort=False):
        skipped = (group["status"] == "skipped").all()
        rows.append({"dataset": dataset, "method": method,
                     "problem": joined(group["short"], " | ") or (NOT_RUN if skipped else NOT_RECORDED),
                     "name": joined(group["name"], "/"), "full": joined(group["full"], " | ")})
    return pd.DataFrame(rows)


def problem_table(runs: pd.DataFrame, methods: list[str] | None = None) -> pd.DataFrame:
    """The problems laid out as the metric table: one row per dataset, one column per method.

    Parameters
    ----------
    runs : pandas.DataFrame
    methods : list of str, optional
        Column order (default: first-seen order of the runs).

    Returns
    -------
    pandas.DataFrame
        Strings: ``dataset``, one column per method, and ``same problem?``
        (``"yes: KRR"``, or ``"no: KRR (falkon, joker-exact); SVR (libsvm)"``:
        the columns of that dataset solve different problems, so their
        numbers compare different models).
    """
    texts = problem_texts(runs)
    if texts.empty:
        return pd.DataFrame(columns=["dataset", "same problem?"])
    methods = methods or list(dict.fromkeys(texts["method"]))
    rows = []
    for dataset, group in texts.groupby("dataset", sort=False):
        row = {"dataset": dataset, **{m: "" for m in methods}}
        by_name: dict[str, list[str]] = {}
        for _, t in group.iterrows():
            row[t["method"]] = t["problem"]
            if t["problem"] == NOT_RUN:  # nothing was fitted: not a problem of the comparison
                continue
            by_name.setdefault(t["name"] or NOT_RECORDED, []).append(t["method"])
        if not by_name:
            row["same problem?"] = "no model was fitted"
        elif len(by_name) == 1:
            row["same problem?"] = f"yes: {next(iter(by_name))}"
        else:
            row["same problem?"] = "no: " + "; ".join(f"{name} ({', '.join(sorted(ms))})"
                                                      for name, ms in by_name.items())
        rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", *methods, "same problem?"])


def problem_list(runs: pd.DataFrame, methods: list[str] | None = None) -> pd.DataFrame:
    """The problems one row per (method, problem text), with the datasets it was solved on.

    The narrow form of :func:`problem_table` (which has one column per
    method, too wide for a page with a dozen methods): a method that states
    the same problem on every dataset takes one row.

    Returns
    -------
    pandas.DataFrame
        Strings: ``method``, ``problem`` and ``datasets`` (comma-joined, in
        the runs' order).
    """
    texts = problem_texts(runs)
    if texts.empty:
        return pd.DataFrame(columns=["method", "problem", "datasets"])
    methods = methods or list(dict.fromkeys(texts["method"]))
    rows = []
    for method in methods:
        mine = texts[texts["method"] == method]
        for text, group in mine.groupby("problem", sort=False):
            rows.append({"method": method, "problem": text, "datasets": ", ".join(group["dataset"])})
    return pd.DataFrame(rows, columns=["method", "problem", "datasets"])


def with_problems(tables: list, runs: pd.DataFrame) -> list:
    """``tables`` (titled frames, report order) with the problems right after the metric table.

    Two tables: :func:`problem_list` (titled :data:`TITLE`) and the
    ``same problem?`` column of :func:`problem_table` per dataset (titled
    :data:`SAME_TITLE`).

    Appended at the end when no title starts with ``"Table 4: test metric"``; unchanged without runs.
    """
    if runs is None or runs.empty:
        return tables
    order = [m for m in _method_order() if m in set(runs["method"])] + sorted(
        set(runs["method"]) - set(_method_order()))
    wide = problem_table(runs, order)
    entries = [(TITLE, problem_list(runs, order)), (SAME_TITLE, wide[["dataset", "same problem?"]])]
    at = next((i + 1 for i, (title, _) in enumerate(tables) if str(title).startswith("Table 4: test metric")),
              len(tables))
    return [*tables[:at], *entries, *tables[at:]]


def _method_order() -> list[str]:
    from baselines.registry import ADAPTERS

    return list(ADAPTERS)
