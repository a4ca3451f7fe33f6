"""Find the MLflow store and experiment, fetch the trial runs, select them.

Everything the report shows comes from here: one row per trial run, built
from the run's tags, params and metrics as written by ``joker.bench``
(``docs/contracts.md``, "One trial's MLflow record").

Selection rules
---------------
- A *trial run* has the tags ``method`` and ``dataset``. Parent runs (one
  per multirun) are counted, not used.
- Filters (dataset, method, budget, status) keep the runs whose tag is one
  of the given values; runs they drop are counted, not listed.
- A trial run is *not used*, and listed with the reason, when its MLflow
  status is not FINISHED (the harness sets FINISHED only once the whole
  record is written; RUNNING/KILLED runs are half-written records of an
  interrupted sweep), when it has no ``status`` tag, or when it was
  superseded by a re-run (tag ``superseded_by``, or a later run with the
  same ``config_hash``). Trials whose status is not ``ok`` (skipped,
  timeout, ...) *are* used: the table shows their status.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from joker.bench.records.record import connect_problem, default_tracking_uri  # noqa: F401  (re-exported)

from .vocab import STATUSES, TAG_KEYS  # noqa: F401  (re-exported)

REPO_ROOT = Path(__file__).resolve().parents[1]


class StoreError(RuntimeError):
    """The store or the experiment asked for cannot be read."""


@dataclass
class Selection:
    """The trial runs a report uses, and what it left out.

    Attributes
    ----------
    tracking_uri : str
        MLflow tracking URI read.
    experiment : str
        Experiment (sweep) name.
    runs : pandas.DataFrame
        Used trial runs, one row per run (see :func:`runs_frame`).
    skipped : pandas.DataFrame
        Trial runs not used: columns run_id, dataset, method, budget, why.
    n_trials : int
        Trial runs found in the experiment.
    n_filtered : int
        Trial runs dropped by the filters.
    n_parents : int
        Parent (multirun) runs, not trials.
    filters : dict
        The filters applied (name -> list of accepted values).
    """

    tracking_uri: str
    experiment: str
    runs: pd.DataFrame
    skipped: pd.DataFrame
    n_trials: int
    n_filtered: int
    n_parents: int
    filters: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line: how many runs were used, filtered and not used."""
        return (
            f"experiment '{self.experiment}': {self.n_trials} trial runs, "
            f"{len(self.runs)} used, {self.n_filtered} excluded by filters, "
            f"{len(self.skipped)} not used"
            + (" (listed below)" if len(self.skipped) else "")
        )


def check_store(uri: str) -> None:
    """Refuse, in one line, a store the report cannot read, before MLflow is asked.

    Raises
    ------
    StoreError
        When ``uri`` is ``sqlite:///PATH`` and PATH is not a file; when it is
        a plain folder or ``file:`` URI (MLflow's filesystem store, which it
        no longer reads: the message names ``sqlite:///.../mlflow.db``, and the
        folder's own ``mlflow.db`` when it holds one); when a server URI
        (``http://``, ``postgresql://``, ...) does not accept a TCP connection
        within :data:`joker.bench.records.record.CONNECT_TIMEOUT_S` (MLflow
        would retry it for minutes).
    """
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///"):])
        if not path.is_file():
            raise StoreError(
                f"no MLflow store at {path}; run a sweep first "
                "(make smoke / make reproduce-table4) or pass --tracking-uri"
            )
        problem = _sqlite_store_problem(path)
        if problem:
            raise StoreError(f"{path} is not an MLflow store ({problem}); pass the mlflow.db a sweep wrote "
                             "(make smoke / make reproduce-table4)")
        return
    plain = "://" not in uri and ("/" in uri or Path(uri).exists())  # not "databricks"
    if uri.startswith("file:") or plain:  # a plain path: MLflow's filesystem store
        folder = Path(uri[len("file:"):].removeprefix("//") if uri.startswith("file:") else uri)
        hint = (f"; this folder holds an SQLite store: --tracking-uri sqlite:///{(folder / 'mlflow.db').resolve()}"
                if (folder / "mlflow.db").is_file() else "")
        raise StoreError(f"--tracking-uri {uri} is a plain path (MLflow's filesystem store, which it no longer "
                         f"reads); use sqlite:///path/to/mlflow.db{hint}")
    problem = connect_problem(uri)
    if problem:
        raise StoreError(f"tracking server {_redact(uri)}: {problem}; is the tracking server running?")


def _sqlite_store_problem(path: Path) -> str:
    """Why the SQLite file ``path`` is not an MLflow store ("" when it is one), read without writing.

    Opened read-only (``mode=ro``): MLflow itself would create its tables in
    an empty file, and a report only reads. A store has MLflow's ``runs``
    and ``experiments`` tables.
    """
    import sqlite3

    if path.stat().st_size == 0:
        return "an empty file"
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        return f"sqlite: {exc}"
    missing = sorted({"runs", "experiments"} - tables)
    return f"no MLflow table {', '.join(missing)}" if missing else ""


def _redact(uri: str) -> str:
    """``scheme://user:***@host...``: the URI without its password."""
    head, sep, rest = uri.partition("://")
    if "@" not in rest.split("/", 1)[0]:
        return uri
    cred, at, host = rest.partition("@")
    return f"{head}{sep}{cred.split(':', 1)[0]}:***@{host}"


def client_for(uri: str):
    """An ``mlflow.MlflowClient`` bound to ``uri`` (no global state)."""
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def choose_experiment(client, name: str | None):
    """The experiment to report on.

    Parameters
    ----------
    client : mlflow.MlflowClient
    name : str or None
        Experiment (sweep) name. ``None``: the experiment holding the most
        recently started run, i.e. the last sweep run.

    Returns
    -------
    mlflow.entities.Experiment

    Raises
    ------
    StoreError
        No such experiment, or no experiment with runs.
    """
    if name is not None:
        exp = client.get_experiment_by_name(name)
        if exp is None:
            known = sorted(e.name for e in client.search_experiments())
            raise StoreError(f"no experiment named {name!r}; known: {known}")
        return exp
    best, best_time = None, -1
    for exp in client.search_experiments():
        last = client.search_runs(
            [exp.experiment_id], max_results=1,
            order_by=["attributes.start_time DESC"],
        )
        if last and last[0].info.start_time > best_time:
            best, best_time = exp, last[0].info.start_time
    if best is None:
        raise StoreError("the store has no runs")
    return best


def fetch_runs(client, experiment_id: str) -> list:
    """Every active run of one experiment (all pages)."""
    runs, token = [], None
    while True:
        page = client.search_runs(
            [experiment_id], max_results=1000, page_token=token,
            order_by=["attributes.start_time ASC"],
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def runs_frame(runs: list) -> pd.DataFrame:
    """One row per run: tags, metrics, params, plan knobs.

    Parameters
    ----------
    runs : list of mlflow.entities.Run

    Returns
    -------
    pandas.DataFrame
        Columns: ``run_id``, ``mlflow_status``, ``start_time`` (ms since
        the epoch), ``parent_run_id``, the contract tags (:data:`TAG_KEYS`,
        strings), the ``convergence.*`` tags (signal, converged, diverged,
        reason of the adapter's ``convergence()``), every metric under its own name (float, latest value),
        every param as ``params.<key>`` (string) and the adapter plan again
        as ``plan.<knob>`` (number when it parses as one).
    """
    rows = []
    for run in runs:
        tags, data = run.data.tags, run.data
        row = {
            "run_id": run.info.run_id,
            "mlflow_status": run.info.status,
            "start_time": run.info.start_time,
            "parent_run_id": tags.get("mlflow.parentRunId"),
        }
        for key in TAG_KEYS:
            row[key] = tags.get(key)
        for key, value in tags.items():  # the adapter's convergence() summary
            if key.startswith("convergence."):
                row[key] = value
        row.update({k: float(v) for k, v in data.metrics.items()})
        for key, value in data.params.items():
            row[f"params.{key}"] = value
            if key.startswith("plan."):
                row[key] = _number(value)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=["run_id", "mlflow_status", "start_time",
                                      "parent_run_id", *TAG_KEYS])
    return frame


def _number(text):
    """``text`` as int or float when it parses as one, else unchanged."""
    for cast in (int, float):
        try:
            return cast(text)
        except (TypeError, ValueError):
            pass
    return None if text in ("None", "null", "") else text


def select(frame: pd.DataFrame, filters: dict | None = None):
    """Split runs into used trial runs and not-used ones.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`runs_frame`.
    filters : dict, optional
        Tag name (``dataset``, ``method``, ``budget``, ``status``) -> list
        of accepted values; empty or ``None`` lists accept everything.

    Returns
    -------
    used : pandas.DataFrame
    skipped : pandas.DataFrame
        Columns run_id, dataset, method, budget, why.
    n_trials, n_filtered, n_parents : int
    """
    is_trial = frame["method"].notna() & frame["dataset"].notna()
    n_parents = int((~is_trial).sum())
    trials = frame[is_trial]
    keep = pd.Series(True, index=trials.index)
    for tag, values in (filters or {}).items():
        if values:
            keep &= trials[tag].isin(list(values))
    n_filtered = int((~keep).sum())
    trials = trials[keep]

    why = pd.Series(None, index=trials.index, dtype=object)
    unfinished = trials["mlflow_status"] != "FINISHED"
    why[unfinished] = ("not finished (MLflow status "
                       + trials.loc[unfinished, "mlflow_status"]
                       + "): incomplete record")
    tagged = why.isna() & trials["superseded_by"].notna()
    why[tagged] = ("superseded by run " + trials.loc[tagged, "superseded_by"]
                   + " (tag superseded_by: re-run)")
    why[why.isna() & trials["status"].isna()] = "no status tag"
    why = why.where(why.notna(), _superseded(trials, why.isna()))
    why = why.where(why.notna(), _older_schema(trials, why.isna()))

    used = trials[why.isna()].reset_index(drop=True)
    skipped = trials[why.notna()][["run_id", "dataset", "method", "budget"]]
    skipped = skipped.assign(why=why[why.notna()]).reset_index(drop=True)
    return used, skipped, int(is_trial.sum()), n_filtered, n_parents


def _superseded(trials: pd.DataFrame, candidate: pd.Series) -> pd.Series:
    """Reason for runs with a later run of the same ``config_hash``."""
    why = pd.Series(None, index=trials.index, dtype=object)
    live = trials[candidate & trials["config_hash"].notna()]
    for _, group in live.groupby("config_hash"):
        if len(group) > 1:
            latest = group.sort_values("start_time").iloc[-1]
            older = group.index[group["run_id"] != latest["run_id"]]
            why[older] = (f"superseded by run {latest['run_id']} "
                          "(same config_hash, started later)")
    return why


def _older_schema(trials: pd.DataFrame, candidate: pd.Series) -> pd.Series:
    """Reason for runs of an older record schema beside a newer run of the same trial.

    A store written before a schema change holds the old run, and a resumed
    sweep re-runs that trial (its config hash changed): the two are one
    trial, not two repetitions. Runs without the ``record_schema`` tag are
    schema 1 (``joker.bench.records.record``).
    """
    why = pd.Series(None, index=trials.index, dtype=object)
    live = trials[candidate]
    if live.empty:
        return why
    schema = pd.to_numeric(live.get("record_schema"), errors="coerce").fillna(1).astype(int)
    keys = [k for k in ("method", "dataset", "budget", "repetition", "n_train") if k in live.columns]
    for _, group in live.assign(_schema=schema).groupby(keys, dropna=False):
        newest = group["_schema"].max()
        older = group[group["_schema"] < newest]
        if len(older):
            latest = group[group["_schema"] == newest].sort_values("start_time").iloc[-1]
            why[older.index] = (f"older record schema {older['_schema'].iloc[0]}: superseded by run "
                                f"{latest['run_id']} (schema {newest}) of the same trial")
    return why


def check_filters(frame: pd.DataFrame, filters: dict | None, experiment: str) -> None:
    """Refuse a filter value no trial run of the experiment has (a typo), before anything is written.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`runs_frame`.
    filters : dict, optional
        Tag -> accepted values (:func:`select`).
    experiment : str
        Named in the message.

    Raises
    ------
    StoreError
        ``unknown method 'libsvn'; known: ...`` (for ``status``, the known
        values are :data:`STATUSES`).
    """
    trials = frame[frame["method"].notna() & frame["dataset"].notna()] if len(frame) else frame
    for tag, values in (filters or {}).items():
        if not values:
            continue
        if tag == "status":
            known = list(STATUSES)
        else:
            known = sorted({str(v) for v in trials[tag].dropna()}) if tag in trials else []
        bad = [v for v in values if v not in known]
        if bad:
            raise StoreError(f"unknown {tag} {', '.join(repr(b) for b in bad)} in experiment {experiment!r}; "
                             f"known: {', '.join(known) or '(none)'}")


def load_selection(tracking_uri: str | None = None,
                   experiment: str | None = None,
                   filters: dict | None = None) -> Selection:
    """Read the store and select the trial runs of one experiment.

    Parameters
    ----------
    tracking_uri : str, optional
        Default (None): :func:`default_tracking_uri`.
    experiment : str, optional
        Default: the experiment with the most recently started run.
    filters : dict, optional
        See :func:`select`.

    Returns
    -------
    Selection

    Raises
    ------
    StoreError
        A blank ``tracking_uri``, a store that cannot be read, an unknown experiment or filter value.
    """
    if tracking_uri is not None and not tracking_uri.strip():
        raise StoreError(f"--tracking-uri is empty; leave it out for the default ({default_tracking_uri()})")
    uri = tracking_uri or default_tracking_uri()
    check_store(uri)
    client = client_for(uri)
    exp = choose_experiment(client, experiment)
    frame = runs_frame(fetch_runs(client, exp.experiment_id))
    check_filters(frame, filters, exp.name)
    used, skipped, n_trials, n_filtered, n_parents = select(frame, filters)
    return Selection(uri, exp.name, used, skipped, n_trials, n_filtered,
                     n_parents, {k: list(v) for k, v in (filters or {}).items() if v})
