"""The trial process runner without Hydra or MLflow: RSS, limits, threads, kills."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from joker.bench.measure.meters import MIB, Limits
from joker.bench.trials.runner import run_trial

pytestmark = pytest.mark.timeout(120)
FAKES = "tests/bench/fakes.py"


def _spec(tmp_path, behaviour="none", timeout=30.0, threads=2, **options):
    spec = {
        "sweep": "unit", "scale": "test", "repetition": 0, "base_seed": 0, "seed": 1,
        "data_seed": 0, "threads": threads, "device": "cpu", "timeout_s": timeout, "lam": 1.0,
        "sigma": 1.0,
        "dataset": {"name": "_test_tiny", "task": "binary", "n_train": None, "n_test": None,
                    "subset": "random", "primary_metric": "test_accuracy",
                    "loader": f"{FAKES}:load_tiny"},
        "method": {"name": "_test", "loss": "hinge", "kernel": "gaussian", "dtype": "float64",
                   "options": {"behaviour": behaviour, **options},
                   "adapter": f"{FAKES}:FakeAdapter", "warmup": False},
        "budget": {"name": "u", "host_bytes": None, "gpu_bytes": None, "kill_factor": None},
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_peak_rss_is_the_trials_own_even_from_a_large_parent(tmp_path):
    ballast = np.ones(300 * MIB // 8)  # the harness process is big
    out = run_trial(_spec(tmp_path), tmp_path / "t", timeout_s=30, threads=2)
    assert out.result["status"] == "ok"
    assert out.result["heavy_modules"] == []  # the child never imports MLflow (or Hydra)
    assert out.peak_rss_bytes < 150 * MIB, out.peak_rss_bytes / MIB
    # the pitfall the reaper avoids: a direct child inherits the parent's high-water mark
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    _, _, ru = os.wait4(p.pid, 0)
    assert ru.ru_maxrss * 1024 > 300 * MIB
    del ballast


def test_child_sees_the_thread_settings(tmp_path):
    code = textwrap.dedent("""
        import json, os, sys
        env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY")}
        json.dump(env, open(sys.argv[1], "w"))
    """)
    (tmp_path / "probe.py").write_text(code)
    from joker.bench.trials.runner import thread_env

    full = thread_env(3)
    subprocess.run([sys.executable, str(tmp_path / "probe.py"), str(tmp_path / "e.json")],
                   env=full, check=True)
    got = json.loads((tmp_path / "e.json").read_text())
    assert got == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3",
                   "OPENBLAS_NUM_THREADS": "3", "OMP_WAIT_POLICY": None}
    out = run_trial(_spec(tmp_path, threads=3), tmp_path / "t", timeout_s=30, threads=3)
    assert out.result["thread_info"]["threads"] == 3


def test_timeout_kills_the_whole_tree_and_keeps_the_usage(tmp_path):
    t0 = time.monotonic()
    out = run_trial(_spec(tmp_path, "sleep", seconds=60), tmp_path / "t", timeout_s=2, threads=1)
    assert time.monotonic() - t0 < 15
    assert out.killed_for == "timeout" and out.progress["phase"] == "fit"
    assert out.signal == 9 and out.peak_rss_bytes and out.result is None


def test_runaway_memory_is_stopped_at_the_kill_limit(tmp_path):
    out = run_trial(_spec(tmp_path, "alloc", mib=800), tmp_path / "t", timeout_s=60, threads=1,
                    limits=Limits(host_kill_bytes=300 * MIB))
    assert out.killed_for == "over_budget", (out.killed_for, out.result)
    assert "kill limit of 300 MiB" in out.kill_reason


def test_slurms_time_limit_warning_does_not_kill_the_trial(tmp_path):
    """Inside a SLURM job, submitit's SIGUSR2 reaches every process of the job; it is
    for the harness (which records a timeout), so the reaper and the trial ignore it."""
    import signal

    import psutil

    sent = []

    def warn(elapsed):
        progress = tmp_path / "t" / "progress.json"
        if not sent and progress.exists() and json.loads(progress.read_text()).get("phase") == "fit":
            procs = psutil.Process().children(recursive=True)
            for p in procs:
                p.send_signal(signal.SIGUSR2)
            sent.append(len(procs))

    out = run_trial(_spec(tmp_path, "sleep", seconds=2), tmp_path / "t", timeout_s=30, threads=1,
                    on_tick=warn)
    assert sent and sent[0] >= 2  # the reaper and the trial both got it
    assert out.signal is None and out.result["status"] == "ok", (out.signal, out.result)


def test_the_test_rows_are_scored_from_one_pass():
    """predict and the metrics' scores come from one decision_function call on the test rows,
    with the labels predict() gives; an adapter overriding predict is called as it is."""
    import sys as _sys

    _sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from fakes import FakeAdapter, load_tiny

    from joker.bench.trials.trial import predict_and_scores

    ds = load_tiny("t")
    calls = []

    class Counting(FakeAdapter):
        def _decision(self, X):
            calls.append(len(X))
            return super()._decision(X)

    a = Counting(task="binary", loss="hinge", kernel="gaussian", sigma=1.0, lam=1.0)
    a.fit(ds.X_train, ds.y_train)
    calls.clear()
    y, scores = predict_and_scores(a, ds.X_test)
    assert calls == [len(ds.X_test)]
    np.testing.assert_array_equal(y, a.predict(ds.X_test))
    np.testing.assert_array_equal(scores, a.decision_function(ds.X_test))

    class OwnPredict(Counting):
        def predict(self, X):
            return np.full(len(X), self.classes_[0])

    b = OwnPredict(task="binary", loss="hinge", kernel="gaussian", sigma=1.0, lam=1.0)
    b.fit(ds.X_train, ds.y_train)
    y, scores = predict_and_scores(b, ds.X_test)
    assert scores is None and (y == b.classes_[0]).all()
