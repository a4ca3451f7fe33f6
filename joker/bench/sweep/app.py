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
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from baselines.problem import problem_text

from . import summary as summ
from .signals import signal_label
from .sweep_state import STATE_DIR, current_sweep, read_done, read_sweep_state, write_done
from ..measure.gpumem import GpuMemory
from ..records.identity import code_version, config_hash
from ..measure.meters import Limits
from ..records.provenance import git_info, hardware_tags, versions
from ..records.record import (CONTENDED_TAG, INSTALL_HINT_TAG, METRIC_UNITS, MIB, RECORD_SCHEMA_VERSION, RETRIED_STATUSES,
                     PROBLEM_PARAM_PREFIX, PROBLEM_TAG, SCHEMA_TAG, SKIP_KIND_TAG)
from ..trials.runner import Outcome, _read_json, classify, preload_key, run_trial, tail
from ..config.schema import flatten, resolve_trial
from .slurm import slurm_verdict
from ..config.spec import SPEC_DIGEST_KEY, TrialSpec, spec_digest
from ..records.tracking import Store, history_curves, resolve_uri, write_history_csv

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


# ------------------------------------------------------------------ records
def _summary(spec: TrialSpec, chash: str, status: str, reason: str, metrics: dict[str, Any],
             run_id: str, cached: bool, contended: str = "") -> dict[str, Any]:
    """The one-line summary of a trial (printed, and kept for the closing table)."""
    metric = spec.dataset.primary_metric
    return {
        "method": spec.method.name, "dataset": spec.dataset.name, "budget": spec.budget.name,
        "n_train": spec.dataset.n_train, "repetition": spec.repetition, "status": status, "reason": reason, "metric": metric,
        "value": metrics.get(metric), "fit_seconds": metrics.get("fit_seconds"),
        "fit_rss_mib": metrics.get("fit_rss_mib"), "peak_rss_mib": metrics.get("peak_rss_mib"),
        "contended": contended, "run_id": run_id, "config_hash": chash, "cached": cached,
    }


def _measured_metrics(res: dict[str, Any], out: Outcome, ran: bool = True) -> dict[str, float]:
    """The child's metrics plus what the parent measured (peaks in MiB, seconds).

    ``ran=False`` (a trial that was skipped or whose budget could not hold
    the method, so the method never ran): no memory figure at all.
    """
    metrics: dict[str, float] = {}
    for k, v in (res.get("metrics") or {}).items():
        try:
            metrics[k] = float(v)
        except (TypeError, ValueError):
            continue
    if out.peak_rss_bytes:
        metrics["peak_rss_mib"] = out.peak_rss_bytes / MIB
    if out.sampled_rss_bytes:
        metrics["sampled_peak_rss_mib"] = out.sampled_rss_bytes / MIB
    if out.peak_gpu_bytes is not None:
        metrics["peak_gpu_mib"] = out.peak_gpu_bytes / MIB
    elif "torch_peak_gpu_mib" in metrics:
        metrics["peak_gpu_mib"] = metrics["torch_peak_gpu_mib"]
    metrics.update(GpuMemory.from_metrics(metrics, out.peak_gpu_bytes).metrics())  # fit_gpu_mib (gpumem)
    for key in ("load_seconds", "warmup_seconds"):
        if res.get(key) is not None:
            metrics[key] = float(res[key])
    metrics["wall_seconds"] = out.wall_s
    if not ran:
        metrics = {k: v for k, v in metrics.items() if METRIC_UNITS.get(k) != "MiB"}
    return metrics


def _record_tags(spec: TrialSpec, chash: str, res: dict[str, Any], verdict: dict[str, str]) -> dict[str, Any]:
    """Tags of a trial run (docs/contracts.md): identity, status, provenance, convergence, describe()."""
    status, reason = verdict["status"], verdict["reason"]
    tags: dict[str, Any] = {
        "method": spec.method.name, "dataset": spec.dataset.name,
        "budget": spec.budget.name, "task": spec.dataset.task,
        "status": status, "reason": reason, "config_hash": chash,
        "seed": spec.seed, "repetition": spec.repetition, "threads": spec.threads,
        "primary_metric": spec.dataset.primary_metric, "sweep": spec.sweep,
        "scale": spec.scale, "device": str(spec.device), "code_version": code_version(),
        SCHEMA_TAG: RECORD_SCHEMA_VERSION, **git_info(), **hardware_tags(), **versions(),
    }
    if status == "skipped":
        tags["skip_reason"] = reason
    for key in (SKIP_KIND_TAG, INSTALL_HINT_TAG):
        if res.get(key):
            tags[key] = res[key]
    if "contended" in res:
        tags[CONTENDED_TAG] = "1" if res["contended"] else "0"
        tags[f"{CONTENDED_TAG}_reason"] = res.get("contended_reason") or ""
    conv = res.get("convergence") or {}
    for key in ("signal", "reason", "diverged", "converged"):
        if conv.get(key) is not None:
            tags[f"convergence.{key}"] = conv[key]
    for k, v in flatten(res.get("describe") or {}).items():
        tags[f"describe.{k}"] = v
    if res.get("warmup_error"):
        tags["warmup_error"] = res["warmup_error"]
    return tags


def did_run(status: str, res: dict[str, Any]) -> bool:
    """Whether the method ran (not ``skipped``, not stopped by its plan's budget check)."""
    return status != "skipped" and not res.get("skip_kind")


def run_name(spec: TrialSpec) -> str:
    """Short MLflow run name: ``<method>/<dataset>/<budget>#<repetition>`` (e.g. ``joker-exact/a9a/cpu-1g#0``)."""
    return f"{spec.method.name}/{spec.dataset.name}/{spec.budget.name}#{spec.repetition}"


def build_record(spec: TrialSpec, chash: str, out: Outcome, verdict: dict[str, str]) -> dict[str, Any]:
    """Assemble params, metrics, tags and curves of one trial's MLflow run.

    Parameters
    ----------
    spec : TrialSpec
        Resolved trial spec.
    chash : str
        Its config hash.
    out : Outcome
        What the runner saw.
    verdict : dict
        ``{"status", "reason"}`` from :func:`joker.bench.trials.runner.classify`.

    Returns
    -------
    dict
        ``params`` (the flattened spec without ``sweep``, ``plan.*``,
        ``sigma_value``), ``metrics``, ``tags``, ``history``, ``result``.
    """
    res = out.result or {}
    plan = res.get("plan") or out.progress.get("plan") or {}  # killed trials: the plan progress.json kept
    problem = res.get("problem") or out.progress.get("problem") or {}
    params = flatten({k: v for k, v in spec.to_dict().items() if k != "sweep"})
    params.update({f"plan.{k}": v for k, v in flatten(plan).items()})
    params.update({f"{PROBLEM_PARAM_PREFIX}{k}": v for k, v in problem.items()})
    for key in ("sigma_value", "epsilon_value"):  # the bandwidth (and a tuned SVR's tube) actually used
        if res.get(key) is not None:
            params[key] = res[key]
    tags = _record_tags(spec, chash, res, verdict)
    if problem:  # docs/contracts.md, "Stated problems": the one line the report shows beside the numbers
        tags[PROBLEM_TAG] = problem_text(problem)
    return {
        "params": params, "metrics": _measured_metrics(res, out, ran=did_run(verdict["status"], res)),
        "tags": tags,
        "history": (res.get("convergence") or {}).get("history") or [], "result": res,
    }


def _stage_artifacts(
    workdir: Path, spec: TrialSpec, record: dict[str, Any], out: Outcome, verdict: dict[str, str]
) -> Path:
    """Write config.yaml, history.csv, stderr_tail.txt, result.json into ``workdir/artifacts``."""
    from omegaconf import OmegaConf

    art = workdir / "artifacts"
    if art.exists():
        shutil.rmtree(art)
    art.mkdir(parents=True)
    (art / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(spec.to_dict())))
    write_history_csv(record["history"], art / "history.csv")
    (art / "stderr_tail.txt").write_text(out.stderr_tail + ("\n" if out.stderr_tail else ""))
    full = {
        "status": verdict["status"], "reason": verdict["reason"],
        "config_hash": record["tags"]["config_hash"], "spec": spec.to_dict(), "child": out.result,
        "parent": {
            "exit_code": out.exit_code, "signal": out.signal, "wall_s": out.wall_s,
            "peak_rss_bytes": out.peak_rss_bytes, "sampled_rss_bytes": out.sampled_rss_bytes,
            "peak_gpu_bytes": out.peak_gpu_bytes, "killed_for": out.killed_for,
            "kill_reason": out.kill_reason, "progress": out.progress,
        },
    }
    (art / "result.json").write_text(json.dumps(full, indent=1, default=str))
    return art


# --------------------------------------------------------------------- job
def _open_store(cfg: Any, ctx: dict[str, Any]) -> tuple[Store, dict[str, Any] | None]:
    """The sweep's store (from the callback's state in a multirun), and that state."""
    state = read_sweep_state(ctx["sweep_dir"]) if ctx["multirun"] else None
    if state:
        return Store(state["tracking_uri"], state["experiment_id"]), state
    return Store.open(resolve_uri(cfg.mlflow.tracking_uri), cfg.mlflow.experiment or cfg.sweep), None


def _execute(spec: TrialSpec, workdir: Path, label: str, progress: bool | None) -> Outcome:
    """Write ``spec.json`` and run the trial in its own process (or skip it: no loss for the task)."""
    spec_path = workdir / "spec.json"
    text = spec.to_json()
    spec_path.write_text(text)
    if not spec.method.loss:  # nothing to run: the method has no loss for this task
        return Outcome(result={
            "status": "skipped", "metrics": {}, "skip_kind": "unsupported",
            "reason": f"{spec.method.name} has no loss for task {spec.dataset.task}",
        })
    ticker = summ.Ticker(label, spec.timeout_s, enabled=progress)
    try:
        out = run_trial(spec_path, workdir, spec.timeout_s, spec.threads,
                        limits=Limits(host_kill_bytes=spec.budget.host_kill_bytes),
                        gpu=spec.device.is_cuda, on_tick=ticker, preload=preload_key(spec))
    finally:
        ticker.close()
    return own_result(out, text, workdir)


def own_result(out: Outcome, spec_text: str, workdir: Path) -> Outcome:
    """``out``, with a result of another spec (its trial folder rewritten by another process) made an error.

    The child echoes the digest of the ``spec.json`` it ran
    (:data:`joker.bench.config.spec.SPEC_DIGEST_KEY`); a result whose digest is not
    that of ``spec_text`` is never recorded as this trial's.
    """
    res = out.result
    if res is not None and res.get(SPEC_DIGEST_KEY) != spec_digest(spec_text):
        out.result = {"status": "error", "metrics": {}, "reason": (
            f"the result in {workdir} is not of this trial's spec: another process wrote into this trial "
            "folder (two sweeps sharing one hydra.sweep.dir?); nothing of it is recorded")}
    return out


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
    spec = resolve_trial(cfg)
    chash = config_hash(spec)
    ctx = _hydra_context()
    store, state = _open_store(cfg, ctx)
    total = state.get("n_jobs") if state else None
    label = f"{spec.method.name} on {spec.dataset.name}"
    if ctx["multirun"]:
        label = f"#{ctx['job_num'] + 1}/{total or '?'} {label}"

    if cfg.tune:  # search on a validation split, select, refit (joker/bench/sweep/tuned.py)
        from ..config.schema import resolve_tuning
        from .tuned import run_cell

        resolve_tuning(cfg, spec)  # a bad grid or split value stops the job before its untuned trial runs
        if cfg.tuning.untuned:  # the cell's ordinary trial too (cached when a plain sweep ran it): the untuned tables
            print("untuned: " + summ.format_line(_run_plain(cfg, spec, chash, ctx, store, state, f"{label} (untuned)",
                                                            progress, ctx["output_dir"] / "trial" / "untuned"),
                                                 None, None), flush=True)
        return _finish(ctx, run_cell(cfg, spec, store, state, ctx, label, progress), state)
    return _finish(ctx, _run_plain(cfg, spec, chash, ctx, store, state, label, progress,
                                   ctx["output_dir"] / "trial"), state)


def _run_plain(cfg: Any, spec: TrialSpec, chash: str, ctx: dict[str, Any], store: Store,
               state: dict[str, Any] | None, label: str, progress: bool | None, workdir: Path) -> dict[str, Any]:
    """One ordinary trial: its finished record (resume), else run in a fresh process and recorded."""
    retry_failed = False
    if not cfg.rerun:
        found = store.find_finished(chash)
        if found is not None and found.data.tags.get("status") not in RETRIED_STATUSES:
            t = found.data.tags
            return _summary(spec, chash, t.get("status", "?"), t.get("reason", ""), found.data.metrics,
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
        return _record(store, state.get("parent_run_id") if state else None, spec, chash, out, verdict, workdir,
                       (start_ms, start_ms), supersede=bool(cfg.rerun) or retry_failed)
    out = _execute(spec, workdir, label, progress)
    end_ms = int(time.time() * 1000)
    verdict = classify(out, spec.budget.host_bytes, spec.budget.gpu_bytes)
    verdict = slurm_verdict(verdict, out.signal, bool(out.killed_for))  # scancel, time limit
    return _record(store, state.get("parent_run_id") if state else None, spec, chash, out, verdict, workdir,
                   (start_ms, end_ms), supersede=bool(cfg.rerun) or retry_failed)


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


def _record(
    store: Store, parent: str | None, spec: TrialSpec, chash: str, out: Outcome,
    verdict: dict[str, str], workdir: Path, span_ms: tuple[int, int], supersede: bool,
    extra_tags: dict[str, Any] | None = None, extra_metrics: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Write one trial's MLflow child run and its artifacts; return the trial summary.

    ``extra_tags`` / ``extra_metrics`` (a tuned cell's ``tuning`` tags and
    ``tuning_seconds``) are added to the record.
    """
    record = build_record(spec, chash, out, verdict)
    record["tags"].update(extra_tags or {})
    record["metrics"].update(extra_metrics or {})
    art = _stage_artifacts(workdir, spec, record, out, verdict)
    run_id = store.log_trial(
        run_name=run_name(spec),
        parent_run_id=parent, params=record["params"], metrics=record["metrics"], tags=record["tags"],
        curves=history_curves(record["history"], span_ms[0]), artifacts_dir=art,
        start_ms=span_ms[0], end_ms=span_ms[1], supersede=supersede,
    )
    res = out.result or {}
    return _summary(spec, chash, verdict["status"], verdict["reason"], record["metrics"], run_id, cached=False,
                    contended=(res.get("contended_reason") or "") if res.get("contended") else "")


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
    spec = resolve_trial(cfg)
    chash = config_hash(spec)
    workdir = Path(job_dir) / "trial"
    workdir.mkdir(parents=True, exist_ok=True)
    out = Outcome(progress=_read_json(workdir / "progress.json") or {},
                  stderr_tail=tail(workdir / "stderr.txt"))
    now_ms = int(time.time() * 1000)
    store = Store(state["tracking_uri"], state["experiment_id"])
    s = _record(store, state.get("parent_run_id"), spec, chash, out, verdict, workdir,
                (now_ms, now_ms), supersede=True)
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
