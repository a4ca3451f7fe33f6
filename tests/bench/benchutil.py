"""Helpers of the harness tests: read what a sweep recorded."""

import contextlib
import os
import signal
import subprocess
import sys
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
    """Run ``os.cpu_count() + extra`` spinning processes (at most ``seconds``) for the ``with`` block.

    The hogs are not descendants of this process: a launcher starts them in
    their own sessions and exits, so a CPU window here counts them as other
    load (a window counts its own child processes as its own work).
    """
    n = (os.cpu_count() or 1) + extra
    body = f"import time\nend = time.monotonic() + {float(seconds)}\nwhile time.monotonic() < end:\n    pass\n"
    launcher = ("import subprocess, sys\n"
                f"ps = [subprocess.Popen([sys.executable, '-c', {body!r}], start_new_session=True, "
                f"stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range({n})]\n"
                "print(' '.join(str(p.pid) for p in ps))\n")
    out = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True, check=True).stdout
    pids = [int(p) for p in out.split()]  # (the hogs hold no pipe of the launcher: run() returns at once)
    try:
        yield pids
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
