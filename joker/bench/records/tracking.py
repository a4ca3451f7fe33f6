"""MLflow records of trials (parent process only; the child never imports this).

Layout (docs/contracts.md, "One trial's MLflow record"): one experiment per
sweep, one parent run per multirun, one child run per trial. A child run is
created only once its trial has ended and is written in batches, then set
``FINISHED``: an interrupted sweep leaves no half-written finished run, and
the resume look-up (:meth:`Store.find_finished`) trusts ``FINISHED`` runs.

SQLite: the database and the experiment are created once, by the process
that starts the sweep (:meth:`Store.open` from the Hydra callback), before
any job runs, under a lock file beside the database, so that sweeps started
together do not run MLflow's migrations at the same time
(:mod:`joker.bench.records.store_guard`); every call that writes is retried with
exponential backoff and jitter, so parallel jobs (joblib, submitit) never
fail on "database is locked".
"""

from __future__ import annotations

import logging
import math
import random
import time
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from ..config.paths import results_dir
from ..csvrows import write_rows_csv
from .record import RECORD_SCHEMA_VERSION, default_tracking_uri, schema_of
from .redact import protect
from .store_guard import check_not_half_migrated, check_tracking_uri, local_store_path, open_error, store_lock

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Tag set on an older finished run of a trial that ``rerun=true`` replaced.
SUPERSEDED_TAG = "superseded_by"
HISTORY_COLUMNS = ("epoch", "seconds", "dual", "primal", "gap", "kkt")


#: Experiment tag through which MLflow 3 picks the view its UI opens an experiment on.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
#: Its value for classic training runs (the runs table).
EXPERIMENT_KIND = "custom_model_development"
#: Id of MLflow's own experiment ``Default`` (:func:`hide_empty_default`).
DEFAULT_EXPERIMENT_ID = "0"


def resolve_uri(uri: str | None) -> str:
    """Return the tracking URI: ``uri``, else ``$MLFLOW_TRACKING_URI``, else the repo's SQLite file.

    Raises
    ------
    ConfigError
        When ``uri`` is given but blank (``mlflow.tracking_uri=''``): leaving it
        out (null) means the default; an empty value is a mistake, not a choice.
    """
    if uri is not None and not str(uri).strip():
        from ..config.spec import ConfigError

        raise ConfigError("mlflow.tracking_uri is empty; leave it out (null) for the default "
                          f"({default_tracking_uri()}) or give a URI")
    return uri or default_tracking_uri()


def artifact_location(uri: str) -> str | None:
    """Return the artifact root for a new experiment on ``uri``.

    ``results/mlartifacts`` for the default store, ``<db folder>/mlartifacts``
    for another SQLite file, and ``None`` (the server's choice) otherwise.
    """
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        if db == results_dir() / "mlflow.db":
            return (results_dir() / "mlartifacts").as_uri()
        return (db.parent / "mlartifacts").resolve().as_uri()
    return None


def is_locked(exc: BaseException) -> bool:
    """Whether an MLflow error is SQLite's passing "database is locked" (or "busy")."""
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


def retry(fn: Callable[[], T], what: str, attempts: int = 12, first_wait_s: float = 0.2,
          transient: Callable[[BaseException], bool] | None = None) -> T:
    """Call ``fn`` with exponential backoff on failure.

    Parameters
    ----------
    fn : callable
        The call.
    what : str
        Its name in log messages.
    attempts : int
        Tries before the last error is raised.
    first_wait_s : float
        First wait in seconds; doubled each time (capped at 10 s), with jitter.
    transient : callable, optional
        ``transient(exc)`` False: raise at once (an unreachable server, a bad
        schema); default: every error is retried.

    Returns
    -------
    The value of ``fn()``.
    """
    wait = first_wait_s
    for i in range(attempts):
        try:
            return fn()
        except Exception as exc:  # sqlite "database is locked", server hiccups
            if i == attempts - 1 or (transient is not None and not transient(exc)):
                raise
            log.warning("MLflow %s failed (%s); retry %d/%d", what, exc, i + 1, attempts - 1)
            time.sleep(wait * (0.5 + random.random()))
            wait = min(wait * 2, 10.0)
    raise AssertionError("unreachable")


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _text(value: Any, limit: int) -> str:
    text = "None" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def hide_empty_default(client: Any, uri: str) -> bool:
    """Delete (soft) MLflow's own empty ``Default`` experiment of a local store; return whether it did.

    MLflow creates the experiment ``Default`` (id 0) in every new store; the
    harness never writes into it (plain runs go to the experiment ``default``,
    the name of ``sweeps/default.yaml``, each named sweep to its own), so the
    UI listed both ``Default`` and ``default``. An empty, active ``Default``
    of a local store (SQLite or a folder) is marked deleted; a server's is
    left alone (others may use it), so is a ``Default`` holding any run.
    MLflow does not re-create it, and ``mlflow experiments restore
    --experiment-id 0`` brings it back.
    """
    from mlflow.entities import ViewType

    if local_store_path(uri) is None:
        return False
    try:
        exp = client.get_experiment(DEFAULT_EXPERIMENT_ID)
        if exp is None or exp.name != "Default" or exp.lifecycle_stage != "active":
            return False
        if client.search_runs([DEFAULT_EXPERIMENT_ID], run_view_type=ViewType.ALL, max_results=1):
            return False
        client.delete_experiment(DEFAULT_EXPERIMENT_ID)
        return True
    except Exception as exc:  # cosmetic: another process may have deleted it just now
        log.debug("Default experiment left as it is: %s", exc)
        return False


class Store:
    """One experiment of one tracking store.

    Parameters
    ----------
    uri : str
        Tracking URI.
    experiment_id : str
        The sweep's experiment.
    """

    def __init__(self, uri: str, experiment_id: str) -> None:
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.experiment_id = experiment_id
        self.client = MlflowClient(tracking_uri=uri)
        protect(uri)  # no password of the URI in what MLflow or Hydra print

    @classmethod
    def open(cls, uri: str, experiment: str) -> "Store":
        """Create the store (migrations) and the experiment if needed.

        Call it from one process before parallel jobs start. The experiment
        gets the tag :data:`EXPERIMENT_KIND_TAG` = :data:`EXPERIMENT_KIND`
        (MLflow 3's UI then opens it on its runs table, not the GenAI view).

        Parameters
        ----------
        uri : str
            Tracking URI.
        experiment : str
            Experiment name.

        Returns
        -------
        Store

        Raises
        ------
        ConfigError
            When the store cannot be created or opened (one line:
            :mod:`joker.bench.records.store_guard`).
        """
        from mlflow.tracking import MlflowClient

        check_tracking_uri(uri)
        with store_lock(uri):  # SQLite: one process at a time creates the tables (migrations)
            check_not_half_migrated(uri)
            try:
                client = MlflowClient(tracking_uri=uri)
                retry(lambda: client.search_experiments(max_results=1), "open store", transient=is_locked)
            except Exception as exc:
                raise open_error(uri, exc) from None
            hide_empty_default(client, uri)
            return cls._with_experiment(client, uri, experiment)

    @classmethod
    def _with_experiment(cls, client: Any, uri: str, experiment: str) -> "Store":
        """The experiment (created, restored or tagged as needed) of an opened store."""

        def get_or_create() -> str:
            exp = client.get_experiment_by_name(experiment)
            if exp is not None:
                if exp.lifecycle_stage == "deleted":
                    client.restore_experiment(exp.experiment_id)
                return exp.experiment_id
            try:
                return client.create_experiment(experiment, artifact_location=artifact_location(uri))
            except Exception:
                exp = client.get_experiment_by_name(experiment)
                if exp is None:
                    raise
                return exp.experiment_id

        exp_id = retry(get_or_create, "get/create experiment")
        exp = client.get_experiment(exp_id)
        if exp.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
            retry(lambda: client.set_experiment_tag(exp_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND),
                  "tag experiment")
        return cls(uri, exp_id)

    # ----------------------------------------------------------- parent runs
    def start_parent(self, name: str, tags: dict[str, str]) -> str:
        """Create the parent run of a multirun; return its id."""
        run = retry(
            lambda: self.client.create_run(self.experiment_id, tags=tags, run_name=name),
            "create parent run",
        )
        return run.info.run_id

    def end_run(self, run_id: str, status: str = "FINISHED") -> None:
        """Mark a run ended (``FINISHED``, ``FAILED`` or ``KILLED``)."""
        retry(lambda: self.client.set_terminated(run_id, status), "end run")

    # --------------------------------------------------------------- resume
    def runs_with_hash(self, config_hash: str, finished_only: bool = True) -> list[Any]:
        """Return the child runs of a trial hash (newest first), superseded ones excluded."""
        flt = f"tags.config_hash = '{config_hash}'"
        if finished_only:
            flt += " and attributes.status = 'FINISHED'"
        runs = retry(
            lambda: self.client.search_runs(
                [self.experiment_id], filter_string=flt, max_results=100,
                order_by=["attributes.start_time DESC"],
            ),
            "search runs",
        )
        return [r for r in runs if SUPERSEDED_TAG not in r.data.tags]

    def ended_at_smaller_n(self, method: str, dataset: str, budget: str, repetition: int, n_train: int,
                           statuses: tuple[str, ...]) -> Any | None:
        """The finished run of the same method, dataset, budget and repetition that ended at a smaller n.

        Parameters
        ----------
        method, dataset, budget : str
            The trial's ids (its tags).
        repetition : int
        n_train : int
            The trial's training rows; a run counts when its ``dataset.n_train``
            param is smaller.
        statuses : tuple of str
            The statuses that end a line (``timeout``, ``over_budget``, ...).

        Returns
        -------
        mlflow.entities.Run or None
            The one with the smallest such ``n_train``, superseded runs excluded.
        """
        flt = (f"tags.method = '{method}' and tags.dataset = '{dataset}' and tags.budget = '{budget}' "
               f"and attributes.status = 'FINISHED'")
        runs = retry(lambda: self.client.search_runs([self.experiment_id], filter_string=flt, max_results=1000),
                     "search runs")
        found = []
        for r in runs:
            try:
                n = int(float(r.data.params.get("dataset.n_train", "nan")))
            except ValueError:
                continue
            if (SUPERSEDED_TAG not in r.data.tags and r.data.tags.get("status") in statuses and n < n_train
                    and str(r.data.params.get("repetition", "0")) == str(repetition)):
                found.append((n, r))
        return min(found, key=lambda t: t[0])[1] if found else None

    def find_finished(self, config_hash: str) -> Any | None:
        """Return the newest finished run of this trial hash, or ``None``."""
        runs = self.runs_with_hash(config_hash)
        return runs[0] if runs else None

    def older_schema_runs(self) -> int:
        """Number of finished trial runs in the experiment written with an older record schema.

        Their config hashes cannot match this code's (the hash includes
        :data:`joker.bench.records.record.RECORD_SCHEMA_VERSION`), so a resumed sweep
        runs those trials again; the callback says so once per sweep.
        """
        runs = retry(
            lambda: self.client.search_runs(
                [self.experiment_id], filter_string="attributes.status = 'FINISHED'", max_results=50000,
            ),
            "search runs",
        )
        return sum(1 for r in runs if "method" in r.data.tags and schema_of(r.data.tags) < RECORD_SCHEMA_VERSION)

    # ------------------------------------------------------------ trial runs
    def _end_stale_runs(self, config_hash: str) -> None:
        """Mark runs of this hash left RUNNING by a killed sweep as KILLED (never trusted)."""
        for stale in self.runs_with_hash(config_hash, finished_only=False):
            if stale.info.status == "RUNNING":
                try:
                    self.end_run(stale.info.run_id, "KILLED")
                except Exception:  # another job may have ended it first
                    pass

    def log_trial(
        self,
        *,
        run_name: str,
        parent_run_id: str | None,
        params: dict[str, Any],
        metrics: dict[str, float],
        tags: dict[str, Any],
        curves: dict[str, list[tuple]],
        artifacts_dir: Path | None,
        start_ms: int,
        end_ms: int,
        supersede: bool = False,
    ) -> str:
        """Write one trial as a child run and set it ``FINISHED``.

        Parameters
        ----------
        run_name : str
            Display name.
        parent_run_id : str or None
            The multirun's parent run (tag ``mlflow.parentRunId``).
        params, metrics, tags : dict
            Flat mappings; non-finite metrics are dropped.
        curves : dict
            ``{metric: [(step, value, timestamp_ms), ...]}``.
        artifacts_dir : pathlib.Path or None
            Folder whose files become the run's artifacts.
        start_ms, end_ms : int
            Wall-clock start and end of the trial (ms since the epoch).
        supersede : bool
            Tag older finished runs of the same hash ``superseded_by`` (rerun).

        Returns
        -------
        str
            The run id.
        """
        from mlflow.entities import Metric, Param

        chash = str(tags.get("config_hash", ""))
        if chash:
            self._end_stale_runs(chash)
        older = self.runs_with_hash(chash) if (supersede and chash) else []

        run_tags = {k: _text(v, 7900) for k, v in tags.items()}
        if parent_run_id:
            run_tags["mlflow.parentRunId"] = parent_run_id
        run = retry(
            lambda: self.client.create_run(
                self.experiment_id, start_time=start_ms, tags=run_tags, run_name=run_name
            ),
            "create run",
        )
        rid = run.info.run_id
        mlist = [Metric(key, value, ts, step) for key, value, ts, step in _metric_points(metrics, curves, end_ms)]
        plist = [Param(k, _text(v, 5900)) for k, v in sorted(params.items())]
        for chunk in _chunks(plist, 100):
            retry(lambda: self.client.log_batch(rid, params=chunk, synchronous=True), "log params")
        for chunk in _chunks(mlist, 1000):
            retry(lambda: self.client.log_batch(rid, metrics=chunk, synchronous=True), "log metrics")
        if artifacts_dir is not None and any(Path(artifacts_dir).iterdir()):
            retry(lambda: self.client.log_artifacts(rid, str(artifacts_dir)), "log artifacts")
        retry(lambda: self.client.set_terminated(rid, "FINISHED", end_time=end_ms), "finish run")
        for old in older:
            try:
                retry(lambda: self.client.set_tag(old.info.run_id, SUPERSEDED_TAG, rid), "supersede")
            except Exception:
                log.warning("could not tag %s as superseded", old.info.run_id)
        return rid


def _metric_points(metrics: dict[str, float], curves: dict[str, list[tuple]],
                   end_ms: int) -> list[tuple[str, float, int, int]]:
    """Finite metric values as ``(key, value, timestamp_ms, step)``: the final metrics at step 0, then the curves."""
    points = [(k, float(v), end_ms, 0) for k, v in metrics.items() if v is not None and math.isfinite(float(v))]
    for key, curve in curves.items():
        points.extend((key, float(v), int(ts), int(step)) for step, v, ts in curve
                      if v is not None and math.isfinite(float(v)))
    return points


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, (list, tuple)):
            out.update({f"{k}_{i}": x for i, x in enumerate(v)})
        else:
            out[k] = v
    return out


def write_history_csv(history: list[dict[str, Any]], path: Path) -> bool:
    """Write a convergence history as CSV.

    Columns: ``epoch, seconds, dual, primal, gap, kkt`` (those present, in
    this order), then any other keys in order of appearance; a list value
    (Joker's per-output ``gaps`` and ``kkts``) becomes one column per
    output, ``gaps_0, gaps_1, ...``.

    Returns
    -------
    bool
        False when the history is empty (no file written).
    """
    rows = [_flat(h) for h in history or [] if isinstance(h, dict)]
    return write_rows_csv(rows, path, HISTORY_COLUMNS)


def history_curves(history: list[dict[str, Any]], start_ms: int) -> dict[str, list[tuple]]:
    """Turn a history into metric steps ``curve_<key>``.

    The step is the entry's ``epoch`` (else ``iteration``, else its index);
    every other numeric key becomes ``curve_<key>`` (``curve_gap``,
    ``curve_primal``, ``curve_dual``, ``curve_kkt``, ``curve_seconds``, ...).
    """
    curves: dict[str, list[tuple]] = {}
    for i, h in enumerate(history or []):
        if not isinstance(h, dict):
            continue
        step = h.get("epoch", h.get("iteration", i))
        try:
            step = int(step)
        except (TypeError, ValueError):
            step = i
        secs = h.get("seconds")
        ts = start_ms + int(1000 * float(secs)) if isinstance(secs, (int, float)) else start_ms
        for key, value in h.items():
            if key in ("epoch", "iteration") or isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                curves.setdefault(f"curve_{key}", []).append((step, float(value), ts))
    return curves
