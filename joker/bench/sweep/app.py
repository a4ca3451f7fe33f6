"""One Hydra job = one trial, end to end (parent side).

::

    composed config -> resolve_trial -> config hash
      -> finished run with that hash?  yes (and not rerun): report it, done
      -> spec.json -> runner.run_trial (child process, wait4, timeout, samplers)
      -> runner.classify -> one MLflow child run (params, metrics, tags, artifacts)
      -> one summary line on stdout

A failed trial is a recorded result: this function raises only when the
config is inconsistent or the record cannot be written at all.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from . import summary as summ
from .recording import execute_trial, record_trial, trial_summary
from .signals import signal_label
from .slurm import slurm_verdict
from .sweep_state import STATE_DIR, current_sweep, read_done, read_sweep_state, write_done
from .tuned import run_cell
from ..config.schema import resolve_trial, resolve_tuning
from ..config.spec import TrialSpec
from ..records.identity import config_hash
from ..records.record import RETRIED_STATUSES
from ..records.tracking import Store, resolve_uri
from ..trials.runner import Outcome, _read_json, classify, tail

log = logging.getLogger(__name__)


# ------------------------------------------------------------ sweep context


def _hydra_context() -> dict[str, Any]:
    """Output folder, sweep folder and job number of the running Hydra job."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if HydraConfig.initialized():
            hc = HydraConfig.get()
            multirun = hc.mode == RunMode.MULTIRUN
            out = Path(hc.runtime.output_dir)
            return {
                "output_dir": out,
                "sweep_dir": Path(hc.sweep.dir) if multirun else out,
                "job_num": int(hc.job.num) if multirun else 0,
                "multirun": multirun,
            }
    except Exception:  # pragma: no cover - called outside Hydra
        pass
    out = Path(tempfile.mkdtemp(prefix="joker-bench-"))
    return {"output_dir": out, "sweep_dir": out, "job_num": 0, "multirun": False}


# --------------------------------------------------------------------- job
def _open_store(cfg: Any, ctx: dict[str, Any]) -> tuple[Store, dict[str, Any] | None]:
    """The sweep's store (from the callback's state in a multirun), and that state."""
    state = read_sweep_state(ctx["sweep_dir"]) if ctx["multirun"] else None
    if state:
        return Store(state["tracking_uri"], state["experiment_id"]), state
    return Store.open(resolve_uri(cfg.mlflow.tracking_uri), cfg.mlflow.experiment or cfg.sweep), None


def run_job(cfg: Any, progress: bool | None = None) -> dict[str, Any]:
    """Run (or find) one trial and record it.

    Parameters
    ----------
    cfg : omegaconf.DictConfig
        The composed job config (:class:`joker.bench.config.schema.BenchConfig`).
    progress : bool, optional
        Live indicator; default: when stderr is a terminal.

    Returns
    -------
    dict
        The trial summary (method, dataset, status, reason, metric, value,
        fit_seconds, peak_rss_mib, run_id, config_hash, cached).
    """
    from ..config.settings_table import settings_for

    spec, settings_tags = settings_for(cfg, resolve_trial(cfg))  # the tuned-settings table's row, if any
    chash = config_hash(spec)
    ctx = _hydra_context()
    store, state = _open_store(cfg, ctx)
    total = state.get("n_jobs") if state else None
    label = f"{spec.method.name} on {spec.dataset.name}"
    if ctx["multirun"]:
        label = f"#{ctx['job_num'] + 1}/{total or '?'} {label}"

    if cfg.get("settings_source") == "tuned":  # what the table gave this cell, never silently
        print(f"settings: {label}: {settings_tags['settings_source']}", flush=True)
    if cfg.tune:  # search on a validation split, select, refit (joker/bench/sweep/tuned.py)
        resolve_tuning(cfg, spec)  # a bad grid or split value stops the job before its untuned trial runs
        if cfg.tuning.untuned:  # the cell's ordinary trial too (cached when a plain sweep ran it): the untuned tables
            print("untuned: " + summ.format_line(_run_plain(cfg, spec, chash, ctx, store, state, f"{label} (untuned)",
                                                            progress, ctx["output_dir"] / "trial" / "untuned",
                                                            settings_tags),
                                                 None, None), flush=True)
        return _finish(ctx, run_cell(cfg, spec, store, state, ctx, label, progress), state)
    return _finish(ctx, _run_plain(cfg, spec, chash, ctx, store, state, label, progress,
                                   ctx["output_dir"] / "trial", settings_tags), state)


def _run_plain(cfg: Any, spec: TrialSpec, chash: str, ctx: dict[str, Any], store: Store,
               state: dict[str, Any] | None, label: str, progress: bool | None, workdir: Path,
               settings_tags: dict[str, str] | None = None) -> dict[str, Any]:
    """One ordinary trial: its finished record (resume), else run in a fresh process and recorded.

    ``settings_tags`` (:func:`joker.bench.config.settings_table.apply_settings`) go
    into the record; a cached record gets them too (the same spec: they say
    which settings this sweep's cell used).
    """
    retry_failed = False
    if not cfg.rerun:
        found = store.find_finished(chash)
        if found is not None and found.data.tags.get("status") not in RETRIED_STATUSES:
            for key, value in (settings_tags or {}).items():
                if found.data.tags.get(key) != value:
                    store.client.set_tag(found.info.run_id, key, value)
            t = found.data.tags
            return trial_summary(spec, chash, t.get("status", "?"), t.get("reason", ""), found.data.metrics,
                            found.info.run_id, cached=True, contended=t.get("contended_reason", "")
                            if t.get("contended") == "1" else "")
        # error / timeout / skipped may be transient (a library installed since, a busy
        # machine): run again; the new record supersedes the old one.
        retry_failed = found is not None

    workdir.mkdir(parents=True, exist_ok=True)
    start_ms = int(time.time() * 1000)
    ended = _ended_smaller(cfg, spec, store)
    if ended is not None:  # stop_larger_after: this method already stopped at a smaller n
        verdict = {"status": "skipped", "reason": ended}
        out = Outcome(result={"status": "skipped", "reason": ended, "skip_kind": "ended_smaller", "metrics": {}})
        return record_trial(store, state.get("parent_run_id") if state else None, spec, chash, out, verdict, workdir,
                       (start_ms, start_ms), supersede=bool(cfg.rerun) or retry_failed, extra_tags=settings_tags)
    out = execute_trial(spec, workdir, label, progress)
    end_ms = int(time.time() * 1000)
    verdict = classify(out, spec.budget.host_bytes, spec.budget.gpu_bytes)
    verdict = slurm_verdict(verdict, out.signal, bool(out.killed_for))  # scancel, time limit
    return record_trial(store, state.get("parent_run_id") if state else None, spec, chash, out, verdict, workdir,
                   (start_ms, end_ms), supersede=bool(cfg.rerun) or retry_failed, extra_tags=settings_tags)


def _ended_smaller(cfg: Any, spec: TrialSpec, store: Store) -> str | None:
    """The reason to skip a trial under ``stop_larger_after``, or ``None`` to run it.

    Returns
    -------
    str or None
        ``"<method> ended <status> at n_train=<n> (<its reason>); a larger
        n_train is not tried (stop_larger_after)"`` when a finished run of the
        same method, dataset, budget and repetition ended with one of
        ``cfg.stop_larger_after`` at a smaller ``dataset.n_train``.
    """
    statuses = tuple(cfg.get("stop_larger_after") or ())
    if not statuses or spec.dataset.n_train is None:
        return None
    run = store.ended_at_smaller_n(spec.method.name, spec.dataset.name, spec.budget.name, spec.repetition,
                                   int(spec.dataset.n_train), statuses)
    if run is None:
        return None
    t = run.data.tags
    n = int(float(run.data.params["dataset.n_train"]))
    return (f"{spec.method.name} ended {t.get('status')} at n_train={n} ({t.get('reason', '')}); "
            f"a larger n_train is not tried (stop_larger_after)")


def _finish(ctx: dict[str, Any], s: dict[str, Any], state: dict[str, Any] | None) -> dict[str, Any]:
    """Leave the job's summary in the sweep folder (tagged with its sweep's parent run); print its line."""
    done = None
    sweep_run = (state or {}).get("parent_run_id")
    if ctx["multirun"]:
        write_done(ctx["sweep_dir"], ctx["job_num"], s, sweep_run)
        done = len(read_done(ctx["sweep_dir"], sweep_run))
    print(summ.format_line(s, done, (state or {}).get("n_jobs")), flush=True)
    return s


def record_lost_trial(
    cfg: Any, sweep_dir: Path, job_dir: Path, job_num: int, verdict: dict[str, str]
) -> dict[str, Any]:
    """Record a trial whose job ended without recording it (SLURM killed the whole job, say).

    Called in the process that launched the sweep
    (:class:`hydra_plugins.joker_bench_launcher.slurm_launcher.SlurmLauncher`),
    so that no trial is lost and the sweep goes on.

    Parameters
    ----------
    cfg : omegaconf.DictConfig
        The job's task config (without its ``hydra`` node).
    sweep_dir : pathlib.Path
        The sweep folder (holds ``.joker_bench/sweep.json``).
    job_dir : pathlib.Path
        The job's output folder (its ``trial/`` may hold ``progress.json`` and ``stderr.txt``).
    job_num : int
        The job's number in the sweep.
    verdict : dict
        ``{"status", "reason"}`` (:func:`joker.bench.sweep.slurm.lost_job_verdict`).

    Returns
    -------
    dict
        The trial summary; the job's own when the job did record its trial.

    Raises
    ------
    RuntimeError
        When the sweep state (tracking URI, parent run) is missing.
    """
    done = Path(sweep_dir) / STATE_DIR / "done" / f"{job_num}.json"
    if done.exists():  # the job recorded its trial before it died
        return json.loads(done.read_text())
    state = read_sweep_state(sweep_dir)
    if not state:
        raise RuntimeError(f"no sweep state in {sweep_dir}: cannot record job {job_num}")
    from ..config.settings_table import settings_for

    spec, settings_tags = settings_for(cfg, resolve_trial(cfg))  # the job's spec, as run_job made it
    chash = config_hash(spec)
    workdir = Path(job_dir) / "trial"
    workdir.mkdir(parents=True, exist_ok=True)
    out = Outcome(progress=_read_json(workdir / "progress.json") or {},
                  stderr_tail=tail(workdir / "stderr.txt"))
    now_ms = int(time.time() * 1000)
    store = Store(state["tracking_uri"], state["experiment_id"])
    s = record_trial(store, state.get("parent_run_id"), spec, chash, out, verdict, workdir,
                (now_ms, now_ms), supersede=True, extra_tags=settings_tags)
    ctx = {"multirun": True, "sweep_dir": Path(sweep_dir), "job_num": job_num}
    return _finish(ctx, s, state)


def single_trial_failed(summary: dict[str, Any]) -> bool:
    """Whether a plain (not multirun) run's trial failed: its status is not ``ok`` nor ``skipped``."""
    return not _hydra_context()["multirun"] and summary.get("status") not in ("ok", "skipped")


def interrupted(exc: BaseException | None = None) -> None:
    """After Ctrl-C, SIGTERM or SIGHUP: mark the sweep's parent run KILLED and print what finished.

    The trials that finished are already recorded (each job logs its own
    run when it ends); the trial that was running is not (its process tree
    was killed by :func:`joker.bench.trials.runner.run_trial`). The sweep is the
    one this process started (:func:`joker.bench.sweep.sweep_state.current_sweep`),
    else the running job's.

    Parameters
    ----------
    exc : KeyboardInterrupt, optional
        What stopped the sweep (:class:`joker.bench.sweep.signals.Terminated` for
        a signal: its name goes into the line printed).
    """
    sweep_dir, state = current_sweep()
    if sweep_dir is None:
        ctx = _hydra_context()
        if ctx["multirun"]:
            sweep_dir, state = ctx["sweep_dir"], read_sweep_state(ctx["sweep_dir"])
    done = read_done(sweep_dir, (state or {}).get("parent_run_id")) if sweep_dir is not None else []
    if state:
        try:
            Store(state["tracking_uri"], state["experiment_id"]).end_run(state["parent_run_id"], "KILLED")
        except Exception as err:  # the finished trials are recorded; say what failed
            log.warning("could not mark the parent run KILLED: %s", err)
    how = "" if exc is None or signal_label(exc) == "Ctrl-C" else f" by {signal_label(exc)}"
    print(f"\ninterrupted{how}: {len(done)} finished trial(s) kept"
          + (f"; parent run {state['parent_run_id']} marked KILLED" if state else ""), flush=True)
    if done:
        print(summ.table(done), flush=True)
