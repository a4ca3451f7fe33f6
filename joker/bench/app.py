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
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional

from . import summary as summ
from .hashing import code_version, config_hash
from .meters import MIB, Limits
from .provenance import git_info, hardware_tags, versions
from .runner import Outcome, classify, run_trial
from .schema import flatten, resolve_trial
from .tracking import Store, history_curves, resolve_uri, write_history_csv

log = logging.getLogger(__name__)
SWEEP_STATE = "sweep.json"

#: Statuses of a recorded trial that a re-run of the sweep tries again
#: (possibly transient); ok, diverged, over_budget and oom are kept.
RETRIED_STATUSES = frozenset({"error", "timeout", "skipped"})


# ------------------------------------------------------------ sweep context


def read_sweep_state(sweep_dir: Path) -> Optional[Dict[str, Any]]:
    """Return what the callback wrote at multirun start, or ``None``."""
    try:
        return json.loads((Path(sweep_dir) / summ.STATE_DIR / SWEEP_STATE).read_text())
    except (OSError, ValueError):
        return None


def write_sweep_state(sweep_dir: Path, state: Dict[str, Any]) -> None:
    """Write the sweep state (tracking URI, experiment, parent run, job count)."""
    d = summ.state_dir(sweep_dir)
    tmp = d / (SWEEP_STATE + ".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, d / SWEEP_STATE)


def _hydra_context() -> Dict[str, Any]:
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
def _summary_from_run(run: Any, spec: Dict[str, Any]) -> Dict[str, Any]:
    metric = spec["dataset"]["primary_metric"]
    m, t = run.data.metrics, run.data.tags
    return {
        "method": spec["method"]["name"], "dataset": spec["dataset"]["name"],
        "budget": spec["budget"]["name"], "repetition": spec["repetition"],
        "status": t.get("status", "?"), "reason": t.get("reason", ""),
        "metric": metric, "value": m.get(metric), "fit_seconds": m.get("fit_seconds"),
        "peak_rss_mib": m.get("peak_rss_mib"), "run_id": run.info.run_id,
        "config_hash": t.get("config_hash"), "cached": True,
    }


def build_record(
    spec: Dict[str, Any], chash: str, out: Outcome, verdict: Dict[str, str]
) -> Dict[str, Any]:
    """Assemble params, metrics, tags and curves of one trial's MLflow run.

    Parameters
    ----------
    spec : dict
        Resolved trial spec.
    chash : str
        Its config hash.
    out : Outcome
        What the runner saw.
    verdict : dict
        ``{"status", "reason"}`` from :func:`joker.bench.runner.classify`.

    Returns
    -------
    dict
        ``params``, ``metrics``, ``tags``, ``history``, ``result``.
    """
    res = out.result or {}
    params = flatten({k: v for k, v in spec.items() if k not in ("sweep",)})
    params.update({f"plan.{k}": v for k, v in flatten(res.get("plan") or {}).items()})
    if res.get("sigma_value") is not None:
        params["sigma_value"] = res["sigma_value"]
    metrics: Dict[str, float] = {}
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
    for key in ("load_seconds", "warmup_seconds"):
        if res.get(key) is not None:
            metrics[key] = float(res[key])
    metrics["wall_seconds"] = out.wall_s
    status, reason = verdict["status"], verdict["reason"]
    conv = res.get("convergence") or {}
    tags: Dict[str, Any] = {
        "method": spec["method"]["name"], "dataset": spec["dataset"]["name"],
        "budget": spec["budget"]["name"], "task": spec["dataset"]["task"],
        "status": status, "reason": reason, "config_hash": chash,
        "seed": spec["seed"], "repetition": spec["repetition"], "threads": spec["threads"],
        "primary_metric": spec["dataset"]["primary_metric"], "sweep": spec["sweep"],
        "scale": spec["scale"], "device": spec["device"], "code_version": code_version(),
        **git_info(), **hardware_tags(), **versions(),
    }
    if status == "skipped":
        tags["skip_reason"] = reason
    for key in ("signal", "reason", "diverged", "converged"):
        if conv.get(key) is not None:
            tags[f"convergence.{key}"] = conv[key]
    for k, v in flatten(res.get("describe") or {}).items():
        tags[f"describe.{k}"] = v
    if res.get("warmup_error"):
        tags["warmup_error"] = res["warmup_error"]
    return {
        "params": params, "metrics": metrics, "tags": tags,
        "history": conv.get("history") or [], "result": res,
    }


def _stage_artifacts(
    workdir: Path, spec: Dict[str, Any], record: Dict[str, Any], out: Outcome, verdict: Dict[str, str]
) -> Path:
    """Write config.yaml, history.csv, stderr_tail.txt, result.json into ``workdir/artifacts``."""
    from omegaconf import OmegaConf

    art = workdir / "artifacts"
    if art.exists():
        shutil.rmtree(art)
    art.mkdir(parents=True)
    (art / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(spec)))
    write_history_csv(record["history"], art / "history.csv")
    (art / "stderr_tail.txt").write_text(out.stderr_tail + ("\n" if out.stderr_tail else ""))
    full = {
        "status": verdict["status"], "reason": verdict["reason"],
        "config_hash": record["tags"]["config_hash"], "spec": spec, "child": out.result,
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
def run_job(cfg: Any, progress: Optional[bool] = None) -> Dict[str, Any]:
    """Run (or find) one trial and record it.

    Parameters
    ----------
    cfg : omegaconf.DictConfig
        The composed job config (:class:`joker.bench.schema.BenchConfig`).
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
    state = read_sweep_state(ctx["sweep_dir"]) if ctx["multirun"] else None
    if state:
        store = Store(state["tracking_uri"], state["experiment_id"])
    else:
        uri = resolve_uri(cfg.mlflow.tracking_uri)
        store = Store.open(uri, cfg.mlflow.experiment or cfg.sweep)
    parent = state.get("parent_run_id") if state else None
    total = state.get("n_jobs") if state else None
    label = f"{spec['method']['name']} on {spec['dataset']['name']}"
    if ctx["multirun"]:
        label = f"#{ctx['job_num'] + 1}/{total or '?'} {label}"

    retry_failed = False
    if not cfg.rerun:
        found = store.find_finished(chash)
        if found is not None and found.data.tags.get("status") not in RETRIED_STATUSES:
            s = _summary_from_run(found, spec)
            return _finish(ctx, s, total)
        # error / timeout / skipped may be transient (a library installed since, a busy
        # machine): run again; the new record supersedes the old one.
        retry_failed = found is not None

    workdir = ctx["output_dir"] / "trial"
    workdir.mkdir(parents=True, exist_ok=True)
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps({**spec, "config_hash": chash}, indent=1))
    start_ms = int(time.time() * 1000)
    if not spec["method"]["loss"]:  # nothing to run: the method has no loss for this task
        out = Outcome(result={
            "status": "skipped", "metrics": {},
            "reason": f"{spec['method']['name']} has no loss for task {spec['dataset']['task']}",
        })
    else:
        b = spec["budget"]
        kill = None
        if b.get("host_mib") and b.get("kill_factor"):
            kill = int(b["host_mib"] * MIB * float(b["kill_factor"]))
        ticker = summ.Ticker(label, spec["timeout_s"], enabled=progress)
        try:
            out = run_trial(
                spec_path, workdir, spec["timeout_s"], spec["threads"],
                limits=Limits(host_kill_bytes=kill),
                gpu=str(spec["device"]).startswith("cuda"), on_tick=ticker,
            )
        finally:
            ticker.close()
    end_ms = int(time.time() * 1000)
    host_budget = spec["budget"]["host_mib"] * MIB if spec["budget"].get("host_mib") else None
    gpu_budget = spec["budget"]["gpu_mib"] * MIB if spec["budget"].get("gpu_mib") else None
    verdict = classify(out, host_budget, gpu_budget)
    record = build_record(spec, chash, out, verdict)
    art = _stage_artifacts(workdir, spec, record, out, verdict)
    rep = spec["repetition"]
    run_id = store.log_trial(
        run_name=f"{spec['method']['name']}@{spec['dataset']['name']}#r{rep}",
        parent_run_id=parent, params=record["params"], metrics=record["metrics"],
        tags=record["tags"], curves=history_curves(record["history"], start_ms),
        artifacts_dir=art, start_ms=start_ms, end_ms=end_ms, supersede=bool(cfg.rerun) or retry_failed,
    )
    metric = spec["dataset"]["primary_metric"]
    s = {
        "method": spec["method"]["name"], "dataset": spec["dataset"]["name"],
        "budget": spec["budget"]["name"], "repetition": rep,
        "status": verdict["status"], "reason": verdict["reason"], "metric": metric,
        "value": record["metrics"].get(metric),
        "fit_seconds": record["metrics"].get("fit_seconds"),
        "peak_rss_mib": record["metrics"].get("peak_rss_mib"),
        "run_id": run_id, "config_hash": chash, "cached": False,
    }
    return _finish(ctx, s, total)


def _finish(ctx: Dict[str, Any], s: Dict[str, Any], total: Optional[int]) -> Dict[str, Any]:
    done = None
    if ctx["multirun"]:
        summ.write_done(ctx["sweep_dir"], ctx["job_num"], s)
        done = len(summ.read_done(ctx["sweep_dir"]))
    print(summ.format_line(s, done, total), flush=True)
    return s
