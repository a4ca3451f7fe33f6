"""Hydra callback of the harness: check the config, set up the store once, close the sweep.

``on_run_start`` / ``on_multirun_start`` run before Hydra creates the run
or sweep folder: a config that breaks a rule of the trial spec
(``timeout_s <= 0``, ``threads < 1``, ``repetition < 0``, a bad budget, ...)
ends the command there with a one-line error (exit status 2) and no folder.
Then the process takes its output folder (:mod:`joker.bench.config.sweep_folder`:
a second sweep given the same folder while this one runs stops with a
config error). ``on_multirun_start`` then, before any job, creates the
MLflow database (SQLite migrations are not safe to run from parallel jobs
or sweeps: :mod:`joker.bench.records.store_guard`), builds the dataset cache
(:mod:`joker.bench.sweep.prefetch`), creates the experiment's parent run, and
writes ``<sweep dir>/.joker_bench/sweep.json`` that every job reads.
``on_multirun_end`` closes the parent run, prints the closing table and a
warning listing the contended trials, and checks that the store holds
exactly one finished record per trial
(:func:`joker.bench.sweep.audit.check_records`; a failed check fails the sweep).
Tracking-URI passwords are masked in everything this process logs
(:mod:`joker.bench.records.redact`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from . import summary as summ
from ..config.paths import export_conf_env
from ..records.record import RECORD_SCHEMA_VERSION
from ..records.redact import redact_logs, redact_uri
from .signals import install as install_signals
from ..config.spec import ConfigError
from ..config.sweep_folder import claim, register_resolver, release

log = logging.getLogger(__name__)
register_resolver()  # jb_unique: needed wherever a job's config is resolved (joblib and submitit workers import this module)


def count_jobs(config: DictConfig) -> int | None:
    """Number of jobs a basic-sweeper multirun will launch, or ``None`` if unknown.

    Parameters
    ----------
    config : omegaconf.DictConfig
        The multirun config (with its ``hydra`` node).
    """
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        overrides = {}
        params = config.hydra.sweeper.get("params") or {}
        for key, value in params.items():
            overrides[key] = f"{key}={value}"
        for text in config.hydra.overrides.task:
            key = text.split("=", 1)[0].lstrip("+~")
            overrides[key] = text
        n = 1
        for ov in OverridesParser.create().parse_overrides(list(overrides.values())):
            if ov.is_sweep_override():
                if not ov.is_discrete_sweep():
                    return None
                n *= len(list(ov.sweep_iterator()))
        return n
    except Exception:
        return None


def older_schema_note(n_runs: int) -> str:
    """The line a sweep prints when its store holds ``n_runs`` trial runs of an older record schema."""
    return (f"note: {n_runs} finished trial run(s) in this experiment use an older record schema "
            f"(< {RECORD_SCHEMA_VERSION}, written before the typed trial spec); they are kept for reports "
            "but not reused, so their trials run again")


def check_config(config: DictConfig) -> None:
    """End the command with a one-line error (exit status 2) when the config breaks a spec rule.

    Resolves the composed config into a trial spec
    (:func:`joker.bench.config.schema.resolve_trial`) once, and checks that the
    tracking store can be created where ``mlflow.tracking_uri`` says
    (:func:`joker.bench.records.store_guard.check_tracking_uri`), before Hydra creates
    any folder. In a multirun this checks the values every job shares (the
    swept groups' defaults included); a swept value that breaks a rule still
    stops its own job with the same error.

    Raises
    ------
    SystemExit
        Status 2, after printing ``config error: <message>`` on stderr.
    """
    from ..config.schema import resolve_trial, resolve_tuning
    from ..records.store_guard import check_tracking_uri
    from ..records.tracking import resolve_uri

    try:
        if not _path_swept(config):
            spec = resolve_trial(config)
            from ..config.settings_table import settings_for

            settings_for(config, spec)  # settings_source and the tuned-settings table: a bad one before any trial
            if config.get("tune"):  # the grid and split too: a bad tuning value before any trial
                resolve_tuning(config, spec)
        check_tracking_uri(resolve_uri(config.mlflow.tracking_uri))
    except ConfigError as exc:
        raise SystemExit(config_error(exc)) from None


def _path_swept(config: DictConfig) -> bool:
    """Whether a multirun sweeps ``dataset.path`` (``dataset=file``): the shared config then has no path to check.

    Hydra composes the multirun's shared config without its sweep overrides,
    so ``dataset.path=a.csv,b.csv`` leaves the path missing (or null) there; each job
    resolves (and parses) its own file instead.
    """
    from omegaconf import OmegaConf

    try:
        if config.dataset.get("name") != "file" or not (OmegaConf.is_missing(config.dataset, "path")
                                                        or config.dataset.get("path") is None):
            return False
        params = config.hydra.sweeper.get("params") or {} if "sweeper" in config.hydra else {}
        return "dataset.path" in params or any(
            t.split("=", 1)[0].lstrip("+~") == "dataset.path" for t in config.hydra.overrides.task)
    except Exception:  # not a multirun config (no hydra node): check as usual
        return False


def config_error(exc: Exception) -> int:
    """Print ``config error: <message>`` (one line) on stderr; return the exit status 2."""
    import sys

    print(f"config error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
    return 2


def browse_hint(uri: str, experiment_id: str) -> str:
    """How to see a sweep's runs table: the UI to start (none for a server) and the page to open.

    The default store is ``make ui``'s; another SQLite file needs ``mlflow ui
    --backend-store-uri``; a server serves its own UI.
    """
    from ..config.paths import results_dir
    from ..records.ui_links import runs_url

    url = runs_url(uri, experiment_id)
    if uri.startswith(("http://", "https://")):
        return url
    make_ui = uri == "sqlite:///" + str(results_dir() / "mlflow.db")  # the store `make ui` serves
    start = "make ui" if make_ui else f"mlflow ui --backend-store-uri {redact_uri(uri)}"
    return f"{start}, then {url}"


def _open_store(config: DictConfig) -> Any:
    """Create or open the sweep's MLflow store and experiment (:meth:`joker.bench.records.tracking.Store.open`); exit 2 if it cannot be."""
    from ..records.tracking import Store, resolve_uri

    try:
        return Store.open(resolve_uri(config.mlflow.tracking_uri), config.mlflow.experiment or config.sweep)
    except ConfigError as exc:
        raise SystemExit(config_error(exc)) from None


def _claim(folder: Path, what: str) -> None:
    """Hold the output folder for this process (:func:`joker.bench.config.sweep_folder.claim`); exit 2 if taken."""
    try:
        claim(folder, what)
    except ConfigError as exc:
        raise SystemExit(config_error(exc)) from None


class BenchCallback(Callback):
    """Checks the config; creates the MLflow store, experiment and parent run; prints the closing table."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check the config and open the store before Hydra creates the run folder; take the folder (:func:`claim`).

        The dataset's cache is built here too, as before a sweep's first job: a
        plain run's trial otherwise parsed the data inside its measured process
        (a first HEPC trial at cpu-1g ended over_budget on its 430 MiB baseline,
        and its plan shrank).
        """
        export_conf_env()
        check_config(config)
        _open_store(config)  # an unreachable store stops here, before any folder
        _claim(Path(config.hydra.run.dir), "run")
        install_signals()
        from .prefetch import prefetch, sweep_datasets

        for name, outcome in prefetch(sweep_datasets(config)).items():
            if outcome != "ok":
                print(f"note: the cache of {name} could not be built before the run ({outcome}); "
                      "the trial will say why", flush=True)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check the config, build the dataset cache, open the store and the parent run before any job."""
        export_conf_env()
        redact_logs()
        check_config(config)
        store = _open_store(config)  # before the folder and the (maybe long) prefetch
        uri, experiment = store.uri, config.mlflow.experiment or config.sweep
        _claim(Path(config.hydra.sweep.dir), "sweep")
        install_signals()  # SIGTERM / SIGHUP: as Ctrl-C (parent run KILLED, exit 128 + signal)
        from .prefetch import prefetch, sweep_datasets
        from .sweep_state import remember_sweep, write_sweep_state
        from ..records.provenance import git_info

        sweep_dir = Path(config.hydra.sweep.dir)
        for name, outcome in prefetch(sweep_datasets(config)).items():
            if outcome != "ok":
                print(f"note: the cache of {name} could not be built before the sweep ({outcome}); "
                      "its trials will say why", flush=True)
        n_jobs = count_jobs(config)
        overrides = redact_uri(" ".join(config.hydra.overrides.task))
        parent = store.start_parent(
            name=f"{experiment} {time.strftime('%Y-%m-%d %H:%M:%S')}",
            tags={
                "joker_bench.kind": "multirun", "sweep": str(config.sweep),
                "overrides": overrides, "sweep_dir": str(sweep_dir),
                "n_jobs": str(n_jobs), **git_info(),
            },
        )
        self._state = {
            "tracking_uri": uri, "experiment": experiment,
            "experiment_id": store.experiment_id, "parent_run_id": parent, "n_jobs": n_jobs,
        }
        write_sweep_state(sweep_dir, self._state)
        remember_sweep(sweep_dir, self._state)
        print(
            f"sweep '{experiment}': {n_jobs if n_jobs is not None else '?'} trials -> {redact_uri(uri)}"
            f" (parent run {parent})\n  outputs: {sweep_dir}",
            flush=True,
        )
        older = store.older_schema_runs()
        if older:
            print(older_schema_note(older), flush=True)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Close the parent run, print one line per trial, check the store.

        Raises
        ------
        RuntimeError
            When the store does not hold exactly one finished record per trial.
        """
        from .audit import check_records
        from .sweep_state import read_done, read_sweep_state
        from ..records.tracking import Store

        sweep_dir = Path(config.hydra.sweep.dir)
        state = getattr(self, "_state", None) or read_sweep_state(sweep_dir)  # this sweep's own, not the file's
        done = read_done(sweep_dir, state["parent_run_id"] if state else None)
        check = None
        if state:
            store = Store(state["tracking_uri"], state["experiment_id"])
            try:
                store.end_run(state["parent_run_id"])
            except Exception as exc:  # the trials are recorded; do not fail the sweep here
                log.warning("could not close the parent run: %s", exc)
            check = check_records(store, done, state.get("n_jobs"))
        print("\n" + summ.table(done), flush=True)
        warning = summ.contended_warning(done)
        if warning:
            print(warning, flush=True)
        if state:
            print(
                f"results: {redact_uri(state['tracking_uri'])} (experiment '{state['experiment']}')\n"
                f"  report: python -m reports --experiment {state['experiment']}\n"
                f"  browse: {browse_hint(state['tracking_uri'], state['experiment_id'])}",
                flush=True,
            )
        release(sweep_dir)
        if check is not None:
            print(check[1], flush=True)
            if not check[0]:
                raise RuntimeError(check[1])
