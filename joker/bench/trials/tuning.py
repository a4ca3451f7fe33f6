"""Tuning: the search child of a tuned cell and the selection rule (numpy and the standard library).

A tuned cell (``tune=true``; one method, one dataset, one budget, one
repetition) is searched in one measured process on one loaded copy of the
data (:func:`run_search`, started by :mod:`joker.bench.sweep.tuned` through
the trial child's entry point, :mod:`joker.bench.trials.child`): every configuration of the grid is fitted on the
training rows less a validation part (:func:`joker.data.splits.validation_split`)
and scored on that part, each one timed and memory-measured on its own
(the same meters as a trial: :class:`joker.bench.measure.fitmem.FitMemory`,
:class:`joker.bench.measure.contention.CpuWindow`) and written to its own
``configs/<i>.json`` as soon as it ends, so that a configuration the parent
has to kill (timeout, memory) loses only itself. The test rows are never
scored by a search: its metrics are ``val_*`` only, so that
:func:`select_config`, which reads nothing else, cannot see a test label.
"""

from __future__ import annotations

import dataclasses
import math
import time
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..atomic import write_json_atomic
from ..config.spec import TrialSpec

__all__ = ["LOWER_IS_BETTER", "val_metric", "better", "select_config", "run_search", "config_path", "model_key",
           "same_model"]

#: The metrics for which a smaller value is better (the others: larger is better).
LOWER_IS_BETTER = ("rmse", "mse", "rel_error")


def val_metric(primary_metric: str) -> str:
    """The validation metric a search records for a dataset's primary metric (``test_rmse`` -> ``val_rmse``)."""
    return "val_" + primary_metric.split("_", 1)[1] if primary_metric.startswith("test_") else "val_" + primary_metric


def better(metric: str) -> str:
    """``"min"`` when a smaller ``metric`` is better (RMSE, MSE, relative error), else ``"max"``."""
    return "min" if metric.split("_", 1)[-1] in LOWER_IS_BETTER else "max"


def select_config(rows: list[dict[str, Any]], metric: str) -> dict[str, Any] | None:
    """The configuration with the best validation metric; ties go to the faster fit.

    Parameters
    ----------
    rows : list of dict
        One per searched configuration: ``status``, ``metrics`` (``val_*``,
        ``fit_seconds``) and whatever identifies it (``config``). Only rows
        with status ``ok`` and a finite ``metrics[metric]`` compete.
    metric : str
        A validation metric (``val_accuracy``, ``val_rmse``, ...); its
        direction is :func:`better`. A test metric is refused: the selection
        never reads one.

    Returns
    -------
    dict or None
        The chosen row (the first of equal rows in the given order), or
        ``None`` when no configuration ended ``ok`` with the metric.

    Raises
    ------
    ValueError
        When ``metric`` is not a validation metric.
    """
    if not metric.startswith("val_"):
        raise ValueError(f"the selection reads validation metrics only, got {metric!r}")
    sign = 1.0 if better(metric) == "min" else -1.0
    best, key = None, None
    for row in rows:
        m = row.get("metrics") or {}
        try:
            value = float(m.get(metric))
        except (TypeError, ValueError):
            continue
        if row.get("status") != "ok" or not math.isfinite(value):
            continue
        fit = m.get("fit_seconds")
        fit = float(fit) if fit is not None and math.isfinite(float(fit)) else math.inf
        k = (sign * value, fit)
        if key is None or k < key:
            best, key = row, k
    return best


def config_path(workdir: Path, index: int) -> Path:
    """Where the search child writes the result of configuration ``index`` (``configs/<index>.json``)."""
    return Path(workdir) / "configs" / f"{index}.json"


def run_search(spec: TrialSpec, progress: Any, res: dict[str, Any]) -> dict[str, Any]:
    """The search child: every configuration of ``spec.tuning["configs"]`` on one loaded copy of the data.

    Parameters
    ----------
    spec : TrialSpec
        ``spec.tuning`` is ``{"stage": "search", "val_fraction", "val_seed",
        "max_rows", "configs": [{"index", "sigma_factor", "lam"[, "epsilon_factor"]}, ...]}``.
    progress : joker.bench.trials.trial.Progress
        Notes ``config`` (the index being fitted) with every phase, so that
        the parent knows which configuration to charge when it kills the process.
    res : dict
        The process's result (load and warm-up seconds, the split sizes).

    Returns
    -------
    dict
        ``res``; each configuration's own result is in
        :func:`config_path` (``status``, ``reason``, ``metrics`` with
        ``val_*``, ``fit_seconds``, ``predict_seconds``, ``fit_rss_mib``, ...,
        ``sigma_value``, ``wall_seconds``).
    """
    from joker.data.splits import validation_split

    from . import trial as tr

    t = spec.tuning or {}
    workdir = Path(progress.path).parent
    config_path(workdir, 0).parent.mkdir(parents=True, exist_ok=True)
    progress("import")
    cls = tr._check_runnable(spec)
    progress("load")
    ds = tr._load(spec, cls, res)
    fit, val = validation_split(ds.y_train, spec.dataset.task, t.get("val_fraction", 0.2),
                                int(t.get("val_seed", 0)), t.get("max_rows"))
    # the search's data: the fit rows train, the validation rows are "tested"; no test row is here
    view = SimpleNamespace(X_train=ds.X_train[fit], y_train=ds.y_train[fit], X_test=ds.X_train[val],
                           y_test=ds.y_train[val], task=spec.dataset.task)
    res["metrics"].update(n_fit=float(len(fit)), n_val=float(len(val)))
    progress("warmup")
    sigma = spec.sigma
    if sigma == "median":  # of all the training rows, as the final fit's (the factors scale the same bandwidth)
        sigma, res["sigma_cached"] = tr.median_sigma_cached(ds.X_train)
    base = dataclasses.replace(spec, sigma=float(sigma), tuning=None)
    kwargs = tr._prepare(base, cls, view, res)  # warm-up on the fit rows
    sigma0 = float(res["sigma_value"])
    fitted: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}  # model key -> (index, result) of this process
    for conf in t.get("configs") or []:
        i = int(conf["index"])
        progress.note(config=i)
        progress("config")  # written now: the parent charges a kill from here on to this configuration
        t0 = time.perf_counter()
        key = model_key(cls, conf)
        if key in fitted:  # the same model as one fitted already (a method that does not read lam)
            write_json_atomic(config_path(workdir, i), same_model(fitted[key], conf, cls, time.perf_counter() - t0),
                              default=tr._json_default)
            continue
        out: dict[str, Any] = {"status": "ok", "reason": "", "metrics": {}}
        try:
            one = dataclasses.replace(base, lam=float(conf["lam"]))
            out["sigma_value"] = sigma0 * float(conf["sigma_factor"])
            args = {**kwargs, "sigma": out["sigma_value"], "lam": one.lam}
            eps = tr.epsilon_for(base, cls, conf.get("epsilon_factor"))
            if eps is not None:
                args["epsilon"] = out["epsilon_value"] = eps
            tr._fit_and_predict(one, cls(**args), view, progress, out)
        except tr._Failed as failed:
            out.update(status=failed.status, reason=failed.reason)
        except Exception as exc:  # one configuration failed: recorded, the others go on
            traceback.print_exc()
            out.update(tr._failure(exc))
        out["metrics"] = {(("val_" + k[5:]) if k.startswith("test_") else k): v
                          for k, v in out["metrics"].items()}
        out["wall_seconds"] = time.perf_counter() - t0
        out["config"] = conf
        write_json_atomic(config_path(workdir, i), out, default=tr._json_default)
        fitted[key] = (i, out)
    return res


def model_key(cls: Any, conf: dict[str, Any]) -> tuple[Any, ...]:
    """What decides the model a configuration fits: (sigma factor, lam, epsilon factor).

    ``lam`` is left out (``None``) for an adapter whose ``uses_lam`` is
    False (EigenPro 3 and 4: no regulariser, early stopping by epochs), so
    that configurations differing in ``lam`` only share one key.
    """
    lam = float(conf["lam"]) if getattr(cls, "uses_lam", True) else None
    return (float(conf["sigma_factor"]), lam, conf.get("epsilon_factor"))


def same_model(first: tuple[int, dict[str, Any]], conf: dict[str, Any], cls: Any, seconds: float) -> dict[str, Any]:
    """The result of a configuration whose model was fitted already in this search (not fitted again).

    Parameters
    ----------
    first : (int, dict)
        The index and result of the configuration that fitted the model.
    conf : dict
        This configuration (``index``, ``sigma_factor``, ``lam``, ...).
    cls : type
        The adapter class (its ``name`` goes in the reason).
    seconds : float
        Wall seconds this configuration took (the copy only).

    Returns
    -------
    dict
        A copy of the first result: the same status, validation metrics and
        ``fit_seconds`` (so that the tie rule, the faster fit, keeps the first
        one), ``wall_seconds`` = ``seconds`` (what this configuration cost the
        search), ``same_as`` = the first index, and a reason saying why.
    """
    index, out = first
    note = f"the same model as configuration {index}: {getattr(cls, 'name', '') or 'the method'} does not use lam"
    reason = f"{out['reason']}; {note}" if out.get("reason") else note
    return {**out, "metrics": dict(out.get("metrics") or {}), "reason": reason, "same_as": index,
            "wall_seconds": seconds, "config": conf}
