"""Hand-built MLflow stores in the schema of docs/contracts.md.

Used by the unit tests of ``reports`` (and to develop it before the
harness exists): every trial is logged the way ``joker.bench`` records
one, with known values, so tests can compare the report with them.

    python tests/reports/reports_fakestore.py /tmp/store   # prints the URI
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import numpy as np

METHODS = ("joker-exact", "joker-inexact", "falkon", "logfalkon", "eigenpro3",
           "thundersvm", "libsvm")
DATASETS = {"hepc": ("regression", "test_rmse"),
            "ijcnn1": ("binary", "test_accuracy")}
#: The sweep runs ijcnn1 first: the report must keep that order, not sort.
SWEEP_ORDER = ("ijcnn1", "hepc")
#: (n_train, n_test, d) of the standard trials: ijcnn1 at the size of the
#: anchors in reports/published.csv (reference beside the cell), hepc at
#: another size (its references go to "references at other sizes").
SIZES = {"ijcnn1": (49990, 91701, 22), "hepc": (20000, 5000, 10)}
INSTALL_HINT = "pip install eigenpro3-from-the-fake-store"


def trial(dataset, method, seed=0, status="ok", budget="cpu-1g", reason="",
          metrics=None, plan=None, method_params=None, history=None,
          config_hash=None, tags=None):
    """One trial description (the fields the harness records)."""
    task, primary = DATASETS.get(dataset, ("binary", "test_accuracy"))
    # like joker.bench: per-repetition seeds and the bandwidth measured on
    # each repetition's subset (sigma_value) vary with the seed
    params = {"seed": seed, "repetition": seed, "data_seed": 100 + seed,
              "base_seed": 0, "sigma_value": 1.0 + 0.01 * seed, "lam": 1.0, "method.name": method, "method.dtype": "float64",
              **{f"method.options.{k}": v for k, v in (method_params or {}).items()}}
    return dict(dataset=dataset, method=method, seed=seed, status=status,
                budget=budget, reason=reason, task=task, primary=primary,
                metrics=metrics or {}, plan=plan or {}, method_params=params,
                history=history, tags=tags or {}, config_hash=config_hash
                or f"{dataset}-{method}-{budget}-{seed}-{sorted(params.items())}")


def joker_history(rng, epochs=6, scale=100.0):
    """A decreasing-gap history: list of dicts epoch, seconds, dual, primal, gap, kkt."""
    rows, t = [], 0.0
    for epoch in range(1, epochs + 1):
        t += float(rng.uniform(0.1, 0.3))
        gap = 10.0 ** (-epoch * 0.7) * float(rng.uniform(0.8, 1.2))
        primal = scale * (1 + gap)
        rows.append(dict(epoch=epoch, seconds=round(t, 6), dual=primal - gap * primal,
                         primal=primal, gap=gap, kkt=gap * 0.5))
    return rows


def standard_trials():
    """Two datasets x seven methods with every kind of outcome.

    Run in :data:`SWEEP_ORDER` (ijcnn1 first). Every record has the fields
    of the current contract: ``fit_rss_mib`` (50-500 MiB) above a
    ``baseline_rss_mib`` of 300, ``peak_rss_mib`` = baseline + fit + 10,
    ``fit_cpu_seconds``, ``fit_load_avg``, ``cpu_utilisation``, the tags
    ``contended`` (with ``contended_reason``), ``scale``, ``device``,
    ``skip_kind`` and ``install_hint``, and the sizes of :data:`SIZES`.

    hepc: joker-exact/-inexact/falkon over seeds 0..2, falkon seed 2 times
    out, joker-exact seed 1 contended; libsvm, logfalkon skipped (task
    unsupported); thundersvm error. ijcnn1: falkon diverged; joker-exact
    not converged; libsvm has no convergence signal; thundersvm measured
    ``fit_gpu_mib``. eigenpro3 is skipped everywhere (not installed).
    """
    rng = np.random.default_rng(0)
    out = []
    for dataset in SWEEP_ORDER:
        task, primary = DATASETS[dataset]
        for method in METHODS:
            seeds = (0, 1, 2) if method in METHODS[:3] else (0,)
            for seed in seeds:
                status, reason, metrics, plan, hist = "ok", "", {}, {}, None
                value = float(rng.uniform(0.05, 0.2) if task == "regression"
                              else rng.uniform(0.9, 0.99))
                fit_mib = float(rng.uniform(50, 500))
                fit_s = float(rng.uniform(1, 50))
                contended = dataset == "hepc" and method == "joker-exact" and seed == 1
                util = 0.4 if contended else 0.95
                n_train, n_test, d = SIZES[dataset]
                metrics = {primary: value, "fit_seconds": fit_s,
                           "predict_seconds": 0.1, "fit_rss_mib": fit_mib,
                           "baseline_rss_mib": 300.0,
                           "peak_rss_mib": 300.0 + fit_mib + 10.0,
                           "fit_cpu_seconds": util * fit_s * 2,
                           "cpu_utilisation": util,
                           "fit_load_avg": 3.5 if contended else 1.2,
                           "n_train": n_train, "n_test": n_test, "n_features": d,
                           "converged": 1.0}
                tags = {"scale": "local", "device": "cpu",
                        "contended": "1" if contended else "0",
                        "contended_reason": "cpu_utilisation 0.40 < 0.80; load 3.5 > 2 cores"
                        if contended else ""}
                if dataset == "ijcnn1" and method == "thundersvm":
                    metrics["fit_gpu_mib"] = 123.0
                if method.startswith("joker"):
                    hist = joker_history(rng)
                    metrics.update(dual_gap=hist[-1]["gap"],
                                   kkt_residual=hist[-1]["kkt"],
                                   primal=hist[-1]["primal"], dual=hist[-1]["dual"],
                                   n_epochs=len(hist))
                    plan = {"block_size": 512}
                    if method == "joker-inexact":
                        plan["n_components"] = 1024
                if method in ("falkon", "logfalkon", "eigenpro3"):
                    plan = {"M": 2000}
                if method == "eigenpro3":
                    status, reason = "skipped", "eigenpro3 is not installed"
                    tags.update(skip_kind="not_installed", install_hint=INSTALL_HINT)
                elif task == "regression" and method in ("libsvm", "logfalkon"):
                    status, reason = "skipped", f"{method} has no loss for task regression"
                    tags.update(skip_kind="unsupported")
                elif dataset == "hepc" and method == "thundersvm":
                    status, reason = "error", "RuntimeError: boom"
                elif dataset == "hepc" and method == "falkon" and seed == 2:
                    status, reason = "timeout", "killed after 60 s"
                elif dataset == "ijcnn1" and method == "falkon":
                    status, reason = "diverged", "training error increased"
                    metrics["converged"] = 0.0
                elif dataset == "ijcnn1" and method == "joker-exact":
                    metrics["converged"] = 0.0
                elif method == "libsvm":
                    del metrics["converged"]
                if status in ("timeout", "diverged"):
                    # time and memory are measured; a diverged fit also logs
                    # its (meaningless) test metric, which must not be shown
                    keep = ("fit_seconds", "peak_rss_mib", "fit_rss_mib") + (
                        (primary,) if status == "diverged" else ())
                    metrics = {k: metrics[k] for k in keep}
                    if status == "diverged":
                        metrics["converged"] = 0.0
                elif status != "ok":
                    metrics = {}
                if status != "ok":
                    hist = None
                out.append(trial(dataset, method, seed, status, reason=reason,
                                 metrics=metrics, plan=plan, history=hist, tags=tags))
    return out


def rff_trials():
    """joker-inexact on hepc over n_components 256/512/1024, two seeds each.

    An old record: no ``fit_rss_mib`` (the report falls back to
    ``peak_rss_mib - baseline_rss_mib`` = 50 + m / 10), no CPU or
    contention fields, no sizes.
    """
    rng = np.random.default_rng(1)
    out = []
    for m in (256, 512, 1024):
        for seed in (0, 1):
            hist = joker_history(rng)
            metrics = {"test_rmse": 0.3 / np.sqrt(m / 256) + float(rng.uniform(0, 0.01)),
                       "fit_seconds": m / 100, "peak_rss_mib": 300 + m / 10,
                       "baseline_rss_mib": 250.0,
                       "dual_gap": hist[-1]["gap"], "kkt_residual": hist[-1]["kkt"],
                       "converged": 1.0}
            out.append(trial("hepc", "joker-inexact", seed, metrics=metrics,
                             plan={"n_components": m, "block_size": 512},
                             method_params={"n_components": m}, history=hist))
    return out


def log_trials(uri, experiment, trials, artifact_root, extra_runs=True):
    """Log ``trials`` as child runs of one parent run; return the run ids.

    With ``extra_runs``, also log three runs the report must list as not
    used: an older duplicate of the first trial (same config_hash, logged
    first), a run tagged ``superseded_by`` (key ``_replaced``) and an
    unfinished run left RUNNING (key ``_unfinished``).
    """
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(
        experiment, artifact_location=str(Path(artifact_root) / experiment))
    parent = client.create_run(exp_id, run_name="multirun")
    ids = {}
    todo = list(trials)
    if extra_runs and trials:
        todo = [dict(trials[0], metrics={**trials[0]["metrics"], "fit_seconds": 999.0})] + todo
    for i, tr in enumerate(todo):
        ts = int(time.time() * 1000)
        tags = {"mlflow.parentRunId": parent.info.run_id, "method": tr["method"],
                "dataset": tr["dataset"], "budget": tr["budget"], "task": tr["task"],
                "status": tr["status"], "reason": tr["reason"],
                "config_hash": tr["config_hash"], "seed": str(tr["seed"]),
                "repetition": str(tr["seed"]), "primary_metric": tr["primary"],
                "threads": "2", **tr.get("tags", {})}
        if tr["status"] == "skipped":
            tags["skip_reason"] = tr["reason"]
        if "converged" in tr["metrics"]:
            tags["convergence.signal"] = ("duality gap and KKT residual"
                                          if tr["method"].startswith("joker")
                                          else "solver exit state")
            tags["convergence.converged"] = str(bool(tr["metrics"]["converged"]))
        run = client.create_run(exp_id, run_name=f"{tr['dataset']}-{tr['method']}",
                                tags=tags, start_time=ts + i)
        rid = run.info.run_id
        params = dict(tr["method_params"])
        params.update({f"plan.{k}": v for k, v in tr["plan"].items()})
        params.update({"dataset.name": tr["dataset"], "budget.name": tr["budget"]})
        metrics = [Metric(k, float(v), ts, 0) for k, v in tr["metrics"].items()]
        for row in tr["history"] or []:
            for key in ("gap", "primal", "dual", "seconds"):
                metrics.append(Metric(f"curve_{key}", float(row[key]), ts, row["epoch"]))
        client.log_batch(rid, metrics=metrics,
                         params=[Param(k, str(v)) for k, v in params.items()])
        if tr["history"]:
            buf = io.StringIO()
            buf.write("epoch,seconds,dual,primal,gap,kkt\n")
            for row in tr["history"]:
                buf.write(",".join(repr(row[k]) for k in
                                   ("epoch", "seconds", "dual", "primal", "gap", "kkt")) + "\n")
            client.log_text(rid, buf.getvalue(), "history.csv")
        client.set_terminated(rid, "FINISHED")
        if extra_runs and i == 0:
            continue  # the superseded duplicate is not returned
        ids[rid] = tr
    if extra_runs:  # a re-run replaced an older record: harness tags it
        old = client.create_run(exp_id, run_name="replaced", tags={
            "mlflow.parentRunId": parent.info.run_id, "method": "libsvm",
            "dataset": "ijcnn1", "budget": "cpu-1g", "status": "ok",
            "config_hash": "replaced-one", "superseded_by": "0" * 32})
        client.log_batch(old.info.run_id, metrics=[Metric("test_accuracy", 0.1, 0, 0)])
        client.set_terminated(old.info.run_id, "FINISHED")
        ids["_replaced"] = old.info.run_id
        run = client.create_run(exp_id, run_name="interrupted", tags={
            "mlflow.parentRunId": parent.info.run_id, "method": "falkon",
            "dataset": "hepc", "budget": "cpu-1g", "status": "ok",
            "config_hash": "interrupted"})
        ids["_unfinished"] = run.info.run_id
    client.set_terminated(parent.info.run_id, "FINISHED")
    return ids


def build(root, experiments=None):
    """Build a store under ``root``; return (tracking URI, {experiment: ids}).

    ``experiments`` maps names to trial lists; default: ``table4`` (the
    standard trials, with an unfinished and a superseded run) and
    ``rff-sweep`` (:func:`rff_trials`), ``rff-sweep`` logged last.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    experiments = experiments or {"table4": standard_trials(),
                                  "rff-sweep": rff_trials()}
    logged = {}
    for name, trials in experiments.items():
        logged[name] = log_trials(uri, name, trials, root / "mlartifacts",
                                  extra_runs=(name == "table4"))
    return uri, logged


if __name__ == "__main__":
    print(build(sys.argv[1])[0])
