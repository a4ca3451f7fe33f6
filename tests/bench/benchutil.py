"""Helpers of the harness tests: read what a sweep recorded."""

import contextlib
import multiprocessing as mp
import os
import time

from mlflow.tracking import MlflowClient


def trial_runs(uri, experiment, finished_only=False):
    """Child (trial) runs of an experiment: runs with a ``method`` tag."""
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} in {uri}"
    runs = client.search_runs([exp.experiment_id], max_results=5000)
    runs = [r for r in runs if "method" in r.data.tags]
    if finished_only:
        runs = [r for r in runs if r.info.status == "FINISHED"]
    return runs


def by_method(runs):
    """``{method: run}`` (asserts one run per method)."""
    out = {}
    for r in runs:
        m = r.data.tags["method"]
        assert m not in out, f"two runs for {m}"
        out[m] = r
    return out


def parent_runs(uri, experiment):
    """Parent (multirun) runs of an experiment."""
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    return [r for r in runs if r.data.tags.get("joker_bench.kind") == "multirun"]


def root_conftest():
    """tests/conftest.py as a module (bench_command, bench_env, REPO): several test packages have a
    conftest.py, so ``import conftest`` gets whichever pytest imported first."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("joker_tests_root_conftest", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def spin(seconds):
    """Keep one core busy for ``seconds`` (a CPU hog's body; importable by spawned processes)."""
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


@contextlib.contextmanager
def cpu_hogs(seconds, extra=1):
    """Run ``os.cpu_count() + extra`` spinning processes (at most ``seconds``) for the ``with`` block."""
    ctx = mp.get_context("spawn")
    hogs = [ctx.Process(target=spin, args=(seconds,)) for _ in range((os.cpu_count() or 1) + extra)]
    for h in hogs:
        h.start()
    try:
        yield hogs
    finally:
        for h in hogs:
            h.terminate()
            h.join()
