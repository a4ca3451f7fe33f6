"""A tuned cell (``tune=true``): search, selection and the final fit of one Hydra job.

::

    resolve_tuning -> the grid (same for every method) and the validation split
      -> configurations without a finished record: ONE measured process
         (trials/tuning.py) fits them in turn on one loaded copy of the data;
         each is recorded as its own MLflow run (tag tuning=search, val_*
         metrics only) under the cell's run; a configuration the parent kills
         (its own timeout_s, memory) is recorded with the reason and the
         process is started again for the ones after it
      -> select_config on the records' val_* metrics (ties: the faster fit)
      -> the final fit: an ordinary trial in a fresh process on all training
         rows at the chosen (sigma, lam), tested once (tag tuning=final)

A rerun skips the finished configurations and a finished final fit (the
same config-hash rule as any trial); ``rerun=true`` runs everything again.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from . import summary as summ
from .recording import execute_trial, record_trial, trial_summary
from ..config.schema import resolve_tuning
from ..config.spec import TrialSpec
from ..measure.meters import Limits
from ..records.identity import config_hash
from ..records.record import MIB, RETRIED_STATUSES
from ..trials.runner import Outcome, _read_json, classify, preload_key, run_trial, tail
from ..trials.tuning import config_path, select_config, val_metric

__all__ = ["run_cell", "cell_specs", "TUNING_TAG", "CELL_TAG"]

#: Tag of a tuned cell's runs: ``cell`` (the group), ``search`` (one configuration), ``final`` (the refit).
TUNING_TAG = "tuning"
#: Tag naming the config hash of the cell a search or final run belongs to.
CELL_TAG = "tuning_cell"


class _ConfigTimeout(Exception):
    """One configuration of a search process ran past ``timeout_s`` (raised from the watcher)."""

    def __init__(self, index: int, seconds: float) -> None:
        super().__init__(f"configuration {index} ran past its wall-clock limit of {seconds:g} s")
        self.index = index


def cell_specs(cfg: Any, spec: TrialSpec) -> dict[str, Any]:
    """The specs of a tuned cell: the cell itself, one per configuration, and the plan.

    Parameters
    ----------
    cfg : omegaconf.DictConfig
        The composed job config.
    spec : TrialSpec
        The cell's untuned trial.

    Returns
    -------
    dict
        ``plan`` (:func:`joker.bench.config.schema.resolve_tuning`),
        ``cell`` (the spec whose hash names the cell), ``configs`` (index ->
        the spec of that configuration, whose hash is its record's).
    """
    plan = resolve_tuning(cfg, spec)
    common = {k: plan[k] for k in ("val_fraction", "max_rows", "val_seed")}
    grid = [[c["sigma_factor"], c["lam_factor"]] + ([c["epsilon_factor"]] if "epsilon_factor" in c else [])
            for c in plan["configs"]]
    cell = dataclasses.replace(spec, tuning={"stage": "cell", **common, "grid": grid})
    configs = {c["index"]: dataclasses.replace(spec, lam=c["lam"], tuning={"stage": "search", **common, "config": c})
               for c in plan["configs"]}
    return {"plan": plan, "common": common, "cell": cell, "configs": configs}


def _cell_run(store: Any, chash: str, spec: TrialSpec, parent: str | None) -> str:
    """The cell's MLflow run (the group of its searches and final fit): the existing one, else a new one."""
    runs = store.runs_with_hash(chash, finished_only=False)
    if runs:
        return runs[0].info.run_id
    tags = {TUNING_TAG: "cell", "config_hash": chash, "sweep": spec.sweep,
            "cell": f"{spec.method.name}/{spec.dataset.name}/{spec.budget.name}#{spec.repetition}"}
    if parent:
        tags["mlflow.parentRunId"] = parent
    return store.start_parent(f"tune:{tags['cell']}", tags)


def _finished(store: Any, chash: str, rerun: bool) -> Any | None:
    """The finished record of a hash that a rerun keeps (not one of the retried statuses), or ``None``."""
    if rerun:
        return None
    found = store.find_finished(chash)
    if found is not None and found.data.tags.get("status") not in RETRIED_STATUSES:
        return found
    return None


def _search(spec: TrialSpec, todo: list[int], plan: dict[str, Any], workdir: Path,
            label: str, progress: bool | None) -> tuple[dict[int, Outcome], dict[int, dict[str, str]]]:
    """Run the configurations ``todo`` in one process (again for those after a killed one).

    Returns
    -------
    outcomes, verdicts : dict
        Index -> the configuration's :class:`Outcome` (its own result, wall
        seconds and peak) and its ``{"status", "reason"}``.
    """
    confs = {c["index"]: c for c in plan["configs"]}
    outcomes: dict[int, Outcome] = {}
    verdicts: dict[int, dict[str, str]] = {}
    common = {k: plan[k] for k in ("val_fraction", "max_rows", "val_seed")}
    while todo:
        sspec = dataclasses.replace(spec, tuning={"stage": "search", **common, "configs": [confs[i] for i in todo]})
        workdir.mkdir(parents=True, exist_ok=True)
        for i in todo:
            config_path(workdir, i).unlink(missing_ok=True)
        spec_path = workdir / "spec.json"
        spec_path.write_text(sspec.to_json())
        seen: dict[str, Any] = {"index": None, "since": time.monotonic()}

        def watch(elapsed: float, _seen: dict[str, Any] = seen, _ticker: Any = None) -> None:
            now = (_read_json(workdir / "progress.json") or {}).get("config")
            if now != _seen["index"]:
                _seen["index"], _seen["since"] = now, time.monotonic()
            elif now is not None and time.monotonic() - _seen["since"] > spec.timeout_s:
                raise _ConfigTimeout(int(now), spec.timeout_s)

        ticker = summ.Ticker(f"{label} (search, {len(todo)} configurations)", spec.timeout_s * (len(todo) + 1),
                             enabled=progress)

        def tick(elapsed: float) -> None:
            watch(elapsed)
            ticker(elapsed)

        killed: _ConfigTimeout | None = None
        try:
            out = run_trial(spec_path, workdir, spec.timeout_s * (len(todo) + 1), spec.threads,
                            limits=Limits(host_kill_bytes=spec.budget.host_kill_bytes),
                            gpu=spec.device.is_cuda, on_tick=tick, preload=preload_key(spec))
        except _ConfigTimeout as exc:
            killed = exc
            out = Outcome(killed_for="timeout", kill_reason=str(exc),
                          progress=_read_json(workdir / "progress.json") or {},
                          stderr_tail=tail(workdir / "stderr.txt"))
        finally:
            ticker.close()
        current = killed.index if killed else (out.progress or {}).get("config")
        left = []
        for i in todo:
            res = _read_json(config_path(workdir, i))
            if res is not None:
                m = res.get("metrics") or {}
                peak = (m.get("baseline_rss_mib", 0.0) + m.get("fit_rss_mib", 0.0)) * MIB or None
                o = Outcome(result=res, wall_s=float(res.get("wall_seconds") or 0.0),
                            peak_rss_bytes=int(peak) if peak else None, stderr_tail=out.stderr_tail)
                outcomes[i], verdicts[i] = o, classify(o, spec.budget.host_bytes, spec.budget.gpu_bytes)
            elif i == current or current is None:
                # the one the process died in (or, before any configuration, all: skipped, load error);
                # a process that ended before its first configuration is charged once, to the first
                wall = out.wall_s if (i == current or i == todo[0]) else 0.0
                o = Outcome(result=None if i == current else out.result, killed_for=out.killed_for,
                            kill_reason=out.kill_reason, progress=out.progress, signal=out.signal,
                            exit_code=out.exit_code, stderr_tail=out.stderr_tail, wall_s=wall)
                if o.result is not None:
                    o.result = {**o.result, "config": confs[i]}
                outcomes[i], verdicts[i] = o, classify(o, spec.budget.host_bytes, spec.budget.gpu_bytes)
            else:
                left.append(i)
        todo = left
    return outcomes, verdicts


def _row(run: Any) -> dict[str, Any]:
    """What the selection may read of a configuration's record: its status and metrics (``val_*``, times)."""
    return {"status": run.data.tags.get("status"), "metrics": dict(run.data.metrics), "run_id": run.info.run_id,
            "lam": run.data.params.get("lam"), "sigma_value": run.data.params.get("sigma_value")}


def run_cell(cfg: Any, spec: TrialSpec, store: Any, state: dict[str, Any] | None, ctx: dict[str, Any],
             label: str, progress: bool | None = None) -> dict[str, Any]:
    """Search, select and refit one tuned cell; every step recorded, a rerun resuming.

    Parameters
    ----------
    cfg : omegaconf.DictConfig
        The composed job config (``tune=true``).
    spec : TrialSpec
        The cell's untuned trial (:func:`joker.bench.config.schema.resolve_trial`).
    store : joker.bench.records.tracking.Store
    state : dict or None
        The sweep's state (its parent run).
    ctx : dict
        The Hydra job context (``output_dir``).
    label : str
        Progress label.
    progress : bool, optional
        Live indicator.

    Returns
    -------
    dict
        The final fit's trial summary, with ``tuning_seconds``, ``n_configs``
        and the chosen ``sigma_factor`` / ``lam``.
    """
    specs = cell_specs(cfg, spec)
    plan, cell_hash = specs["plan"], config_hash(specs["cell"])
    cell_run = _cell_run(store, cell_hash, spec, state.get("parent_run_id") if state else None)
    hashes = {i: config_hash(s) for i, s in specs["configs"].items()}
    todo = [i for i in sorted(hashes) if _finished(store, hashes[i], bool(cfg.rerun)) is None]
    root = ctx["output_dir"] / "trial"
    if todo:
        start_ms = int(time.time() * 1000)
        outcomes, verdicts = _search(spec, todo, plan, root / "search", label, progress)
        for i in todo:
            wd = root / "search" / f"config-{i}"
            wd.mkdir(parents=True, exist_ok=True)
            end_ms = start_ms + int(outcomes[i].wall_s * 1000)
            conf = specs["configs"][i].tuning["config"]
            record_trial(store, cell_run, specs["configs"][i], hashes[i], outcomes[i], verdicts[i], wd,
                    (start_ms, max(end_ms, start_ms)), supersede=True,
                    extra_tags={TUNING_TAG: "search", CELL_TAG: cell_hash, "tuning.index": i,
                                "tuning.sigma_factor": conf["sigma_factor"], "tuning.lam": conf["lam"],
                                **({"tuning.epsilon_factor": conf["epsilon_factor"]} if "epsilon_factor" in conf
                                   else {}),
                                **({"tuning.same_as": res["same_as"]}
                                   if (res := outcomes[i].result or {}).get("same_as") is not None else {})})
            start_ms = end_ms
    rows = []
    for i in sorted(hashes):
        found = store.find_finished(hashes[i])
        if found is not None:
            rows.append({**_row(found), "config": specs["configs"][i].tuning["config"]})
    metric = val_metric(spec.dataset.primary_metric)
    choice = select_config(rows, metric)
    tuning_s = float(sum(r["metrics"].get("wall_seconds", 0.0) for r in rows))
    conf = choice["config"] if choice else next(c for c in plan["configs"]
                                               if c["sigma_factor"] == 1.0 and c["lam_factor"] == 1.0)
    final = dataclasses.replace(spec, lam=conf["lam"], tuning={
        "stage": "final", **specs["common"], "sigma_factor": conf["sigma_factor"],
        "lam_factor": conf["lam_factor"], "lam": conf["lam"], "n_configs": len(plan["configs"]),
        **({"epsilon_factor": conf["epsilon_factor"]} if "epsilon_factor" in conf else {})})
    fhash = config_hash(final)
    extra = {TUNING_TAG: "final", CELL_TAG: cell_hash, "tuning.sigma_factor": conf["sigma_factor"],
             "tuning.lam": conf["lam"], "tuning.n_configs": len(plan["configs"]),
             "tuning.chosen_run": choice["run_id"] if choice else "",
             "tuning.val_metric": metric,
             **({"tuning.epsilon_factor": conf["epsilon_factor"]} if "epsilon_factor" in conf else {})}
    found = _finished(store, fhash, bool(cfg.rerun))
    if found is not None:
        t = found.data.tags
        s = trial_summary(final, fhash, t.get("status", "?"), t.get("reason", ""), found.data.metrics,
                     found.info.run_id, cached=True)
    elif choice is None:  # nothing ended ok: the cell's outcome is the untuned configuration's
        base = next((r for r in rows if r.get("config") == conf), None)
        status = (base or {}).get("status") or "error"
        reason = "no configuration of the search ended ok"
        if base is not None:
            tags = store.client.get_run(base["run_id"]).data.tags
            reason += f"; the untuned one: {tags.get('status')}: {tags.get('reason', '')}"
            extra["skip_kind"] = tags.get("skip_kind", "")
            if tags.get("install_hint"):
                extra["install_hint"] = tags["install_hint"]
        out = Outcome(result={"status": status if status != "ok" else "error", "reason": reason, "metrics": {}})
        now = int(time.time() * 1000)
        (root / "final").mkdir(parents=True, exist_ok=True)
        s = record_trial(store, cell_run, final, fhash, out, classify(out, None, None), root / "final", (now, now),
                    supersede=True, extra_tags={k: v for k, v in extra.items() if v != ""},
                    extra_metrics={"tuning_seconds": tuning_s})
    else:
        wd = root / "final"
        wd.mkdir(parents=True, exist_ok=True)
        start_ms = int(time.time() * 1000)
        out = execute_trial(final, wd, f"{label} (final fit)", progress)
        end_ms = int(time.time() * 1000)
        verdict = classify(out, final.budget.host_bytes, final.budget.gpu_bytes)
        s = record_trial(store, cell_run, final, fhash, out, verdict, wd, (start_ms, end_ms), supersede=True,
                    extra_tags=extra, extra_metrics={"tuning_seconds": tuning_s,
                                                     **({f"chosen_{metric}": choice["metrics"][metric]})})
    try:
        store.client.set_tag(cell_run, "tuning.sigma_factor", str(conf["sigma_factor"]))
        store.client.set_tag(cell_run, "tuning.lam", str(conf["lam"]))
        if "epsilon_factor" in conf:
            store.client.set_tag(cell_run, "tuning.epsilon_factor", str(conf["epsilon_factor"]))
        store.client.log_metric(cell_run, "tuning_seconds", tuning_s)
        store.end_run(cell_run, "FINISHED")
    except Exception:  # the cell's own run is a grouping: its records are already written
        pass
    return {**s, "tuning_seconds": tuning_s, "n_configs": len(rows), "sigma_factor": conf["sigma_factor"],
            "lam": conf["lam"], "epsilon_factor": conf.get("epsilon_factor")}
