"""The record contract: what one trial's MLflow run says, for the harness that writes it and the reports that read it.

One module holds the vocabulary both sides share (``docs/contracts.md``,
"One trial's MLflow record"): the statuses, which of them a re-run keeps,
the metric names with their units, the unit MiB, the default tracking URI
and the record schema version. It imports the standard library only (and
:mod:`joker.bench.config.paths`), so ``reports/`` and the trial child can import it
without MLflow, Hydra or torch.

Record schema versions (tag :data:`SCHEMA_TAG` on every trial run):

1. (no tag) written before the typed trial spec: params ``budget.host_mib``
   and ``budget.gpu_mib`` in MiB.
2. the spec is :class:`joker.bench.config.spec.TrialSpec`: params
   ``budget.host_bytes`` and ``budget.gpu_bytes`` in bytes; the config hash
   includes the schema version, so runs of an older schema are never taken
   for a finished trial of this one: a resumed sweep runs them again (and
   says how many older runs it found, :func:`schema_of`).

   Issue 11 added fields to schema 2 without moving any (``fit_rss_mib``,
   ``fit_cpu_seconds``, ``fit_load_avg``, ``cpu_utilisation``,
   ``fit_others_cores``, tags ``contended``, ``contended_reason``,
   ``skip_kind``, ``install_hint``): readers fall back when they are absent,
   so the version stays 2.
"""

from __future__ import annotations

import os

from baselines.base import MIB

from ..config.paths import results_dir

__all__ = [
    "CONTENDED_TAG", "INSTALL_HINT_TAG", "PROBLEM_PARAM_PREFIX", "PROBLEM_TAG", "SKIP_KINDS", "SKIP_KIND_TAG", "KEPT_STATUSES", "METRIC_UNITS", "MIB", "RECORD_SCHEMA_VERSION", "RETRIED_STATUSES", "SCHEMA_TAG",
    "TRIVIAL_TAG",
    "STATUSES", "CONNECT_TIMEOUT_S", "DEFAULT_PORTS", "connect_problem", "default_tracking_uri", "schema_of",
]

#: Version of the record written by this code (see the module docstring).
RECORD_SCHEMA_VERSION = 2
#: Tag that carries it.
SCHEMA_TAG = "record_schema"

#: Every status a trial can end with.
STATUSES = ("ok", "skipped", "timeout", "oom", "over_budget", "diverged", "error")
#: Statuses a re-run of the sweep keeps (a result of the method itself).
KEPT_STATUSES = frozenset({"ok", "diverged", "over_budget", "oom"})
#: Statuses a re-run tries again (possibly transient: a library installed since, a busy machine).
RETRIED_STATUSES = frozenset(STATUSES) - KEPT_STATUSES

#: Tag "1" / "0": the fit ran on a busy machine (:mod:`joker.bench.measure.contention`); ``contended_reason`` says why.
CONTENDED_TAG = "contended"
#: Tag "1" / "0" of an ``ok`` trial: its model is no better than the trivial predictor on the test rows
#: (the mean, the majority class; :func:`joker.bench.trials.scoring.trivial_test_reason`), e.g. ``sigma=1e12``
#: (constant decision values); ``trivial_reason`` says why. Its metrics are real but mean nothing of the method.
TRIVIAL_TAG = "trivial_model"
#: Tag of a trial whose method did not run: why, as one of :data:`SKIP_KINDS`.
SKIP_KIND_TAG = "skip_kind"
#: Values of :data:`SKIP_KIND_TAG`: library missing, task not supported, budget too small for the smallest
#: setting, the method already ended (timeout, budget) at a smaller n_train (``stop_larger_after``).
SKIP_KINDS = ("not_installed", "unsupported", "budget", "ended_smaller")
#: Tag with the one-line install command of a ``not_installed`` method.
INSTALL_HINT_TAG = "install_hint"
#: Tag with the trial's stated problem in one line (loss, regulariser, intercept, kernel, model, dtype,
#: device: ``baselines.problem.problem_text``; docs/contracts.md, "Stated problems").
PROBLEM_TAG = "problem"
#: Prefix of the params that state the problem one field each (``problem.loss``, ``problem.intercept``,
#: ``problem.target``, ...: ``baselines.problem.stated_problem``).
PROBLEM_PARAM_PREFIX = "problem."

#: Metric name -> unit, for every metric a trial run may carry (absent when not measured).
METRIC_UNITS = {
    "fit_seconds": "s", "predict_seconds": "s", "load_seconds": "s", "warmup_seconds": "s", "wall_seconds": "s",
    "fit_cpu_seconds": "s", "fit_load_avg": "runnable tasks (1-min load average)", "cpu_utilisation": "1",
    "fit_others_cores": "cores",
    "fit_rss_mib": "MiB", "fit_gpu_mib": "MiB",
    "peak_rss_mib": "MiB", "sampled_peak_rss_mib": "MiB", "baseline_rss_mib": "MiB", "peak_gpu_mib": "MiB",
    "torch_peak_gpu_mib": "MiB", "torch_reserved_gpu_mib": "MiB", "fit_gpu_mib": "MiB", "gpu_context_mib": "MiB",
    "test_rmse": "target units", "test_mse": "target units squared", "test_rel_error": "1",
    "test_accuracy": "fraction in [0, 1]", "test_auc": "1", "test_f1": "1",
    "dual_gap": "relative", "kkt_residual": "1", "primal": "objective", "dual": "objective",
    "convergence_final": "the method's signal", "n_epochs": "epochs", "converged": "1/0",
    "n_train": "rows", "n_test": "rows", "n_features": "columns",
}


def default_tracking_uri() -> str:
    """The MLflow tracking URI when none is given.

    Returns
    -------
    str
        ``$MLFLOW_TRACKING_URI`` when set, else
        ``sqlite:///<repo>/results/mlflow.db`` (absolute path).
    """
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///" + str(results_dir() / "mlflow.db")


def schema_of(tags: dict[str, str]) -> int:
    """Record schema version of a run from its tags (1 for runs written before the tag existed).

    Raises
    ------
    ValueError
        If the tag is present but not an integer.
    """
    value = tags.get(SCHEMA_TAG)
    if value is None:
        return 1
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"tag {SCHEMA_TAG} must be an integer, got {value!r}") from None


#: Tags a trial's record carries about the settings it used: ``settings_source`` (``tuned`` or
#: ``untuned (<why>)``), the table's file, version and sha256, the row's tuned final fit and its
#: validation metric (:func:`joker.bench.config.settings_table.apply_settings`, ``docs/benchmark/tuning.md``).
SETTINGS_TAGS = ("settings_source", "settings_file", "settings_version", "settings_sha256",
                 "settings_row_run", "settings_row_val")


#: Seconds :func:`connect_problem` waits for a tracking server to accept a connection.
CONNECT_TIMEOUT_S = 3.0
#: Port of a server URI that names none, by scheme (before any ``+driver``).
DEFAULT_PORTS = {"http": 80, "https": 443, "postgresql": 5432, "postgres": 5432, "mysql": 3306, "mssql": 1433}


def connect_problem(uri: str, timeout_s: float | None = None) -> str | None:
    """Why the server of a tracking URI does not accept a TCP connection, or ``None`` when it does.

    Standard library only, for the harness
    (:func:`joker.bench.records.store_guard.check_reachable`) and the report
    (``reports/load.py``): MLflow itself retries an unreachable server for
    minutes before its error. The host and port come from the URI (default
    ports: :data:`DEFAULT_PORTS`); a URI without a host (a local store,
    ``databricks``, a database's Unix socket), with a port that is not a
    number, or one reached through a proxy (``HTTP(S)_PROXY``, unless
    ``NO_PROXY`` names the host) is not checked (``None``).

    Parameters
    ----------
    uri : str
        Tracking URI.
    timeout_s : float, optional
        Seconds to wait for the connection (default :data:`CONNECT_TIMEOUT_S`).

    Returns
    -------
    str or None
        ``cannot connect to <host>:<port> (<why>)``, or ``None``.
    """
    import socket
    import urllib.request
    from urllib.parse import urlparse

    parsed = urlparse(uri)
    scheme = parsed.scheme.lower().split("+")[0]
    try:
        host, port = parsed.hostname, parsed.port or DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: MLflow's own error says so
        return None
    if not host or port is None:
        return None
    proxied = scheme in ("http", "https") and urllib.request.getproxies().get(scheme)
    if proxied and not urllib.request.proxy_bypass(host):
        return None
    wait = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        socket.create_connection((host, port), timeout=wait).close()
    except OSError as exc:
        why = "no answer within {:g} s".format(wait) if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        return f"cannot connect to {host}:{port} ({why})"
    return None
