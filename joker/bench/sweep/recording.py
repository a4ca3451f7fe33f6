"""One trial, run in its own process and recorded: shared by the plain job and a tuned cell.

:func:`execute_trial` writes ``spec.json`` and runs the trial child
(:func:`joker.bench.trials.runner.run_trial`); :func:`record_trial` writes
its MLflow child run and artifacts (:func:`build_record`) and returns the
one-line :func:`trial_summary`. A plain job (:mod:`joker.bench.sweep.app`)
calls them once; a tuned cell (:mod:`joker.bench.sweep.tuned`) once per
searched configuration and once for the final fit. Neither of those two
modules imports the other's helpers: they live here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from baselines.problem import problem_text

from . import summary as summ
from ..config.schema import flatten
from ..config.spec import SPEC_DIGEST_KEY, TrialSpec, spec_digest
from ..measure.gpumem import GpuMemory
from ..measure.meters import Limits
from ..records.identity import code_version
from ..records.provenance import git_info, hardware_tags, versions
from ..records.record import (CONTENDED_TAG, INSTALL_HINT_TAG, METRIC_UNITS, MIB, PROBLEM_PARAM_PREFIX, PROBLEM_TAG,
                              RECORD_SCHEMA_VERSION, SCHEMA_TAG, SKIP_KIND_TAG)
from ..records.tracking import Store, history_curves, write_history_csv
from ..trials.runner import Outcome, preload_key, run_trial



def trial_summary(spec: TrialSpec, chash: str, status: str, reason: str, metrics: dict[str, Any],
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


#: Files the trial child writes beside result.json that become artifacts of its run.
TRIAL_ARTIFACTS = ("checkpoints.csv", "predictions.npz")


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
    for name in TRIAL_ARTIFACTS:  # the child's anytime checkpoints and test predictions (issue 42)
        if (workdir / name).is_file():
            shutil.copyfile(workdir / name, art / name)
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


def execute_trial(spec: TrialSpec, workdir: Path, label: str, progress: bool | None) -> Outcome:
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


def record_trial(
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
    return trial_summary(spec, chash, verdict["status"], verdict["reason"], record["metrics"], run_id, cached=False,
                    contended=(res.get("contended_reason") or "") if res.get("contended") else "")


