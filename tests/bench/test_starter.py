"""The preloaded trial starter (trials/zygote.py, trials/starter.py) through ``run_trial``.

Each trial is still its own process, with its own usage, limits, kills and
thread settings; what a starter saves is the imports of consecutive trials
of one method.
"""

import json
import os
import signal
import time

import numpy as np
import psutil
import pytest

from joker.bench.measure.meters import MIB, Limits
from joker.bench.trials import starter
from joker.bench.trials.runner import run_trial

from test_runner import _spec

pytestmark = pytest.mark.timeout(120)
KEY = ("_test", "tests/bench/fakes.py:FakeAdapter")


@pytest.fixture(autouse=True)
def _fresh_starter(monkeypatch):
    monkeypatch.delenv(starter.PRELOAD_ENV, raising=False)
    starter.close()
    yield
    starter.close()


def _run(tmp_path, name, behaviour="none", threads=1, timeout_s=30, limits=None, on_tick=None, **options):
    folder = tmp_path / name
    folder.mkdir()
    return run_trial(_spec(folder, behaviour, threads=threads, **options), folder / "t", timeout_s=timeout_s,
                     threads=threads, limits=limits, on_tick=on_tick, preload=KEY)


def _rusage(out_dir):
    return json.loads((out_dir / "t" / "rusage.json").read_text())


def test_consecutive_trials_of_one_method_share_the_imports_not_the_process(tmp_path):
    ballast = np.ones(300 * MIB // 8)  # a big harness: its pages are not the trial's
    a = _run(tmp_path, "a")
    b = _run(tmp_path, "b")
    assert a.result["status"] == b.result["status"] == "ok"
    da, db = a.result["describe"], b.result["describe"]
    assert da["pid"] != db["pid"]  # one process per trial
    assert da["ppid"] == db["ppid"] == starter._current["starter"].proc.pid
    assert da["fakes_imported_at"] == db["fakes_imported_at"]  # imported once, by the starter
    assert _rusage(tmp_path / "a")["started_by"] == "zygote" and _rusage(tmp_path / "a")["pid"] == da["pid"]
    assert a.result["heavy_modules"] == []  # the starter imports no MLflow or Hydra either
    assert a.peak_rss_bytes < 150 * MIB, a.peak_rss_bytes / MIB
    assert a.exit_code == 0 and a.signal is None
    del ballast


def test_another_method_or_thread_count_gets_its_own_starter(tmp_path):
    a = _run(tmp_path, "a", threads=1)
    first = starter._current["starter"].proc
    b = _run(tmp_path, "b", threads=2)
    assert b.result["describe"]["omp_threads"] == "2" and a.result["describe"]["omp_threads"] == "1"
    assert b.result["thread_info"]["threads"] == 2
    assert b.result["describe"]["ppid"] != a.result["describe"]["ppid"]
    assert first.poll() is not None  # the first one was ended, not left behind


def test_timeout_kills_the_forked_trial_and_the_starter_serves_the_next(tmp_path):
    t0 = time.monotonic()
    out = _run(tmp_path, "slow", "sleep", timeout_s=3, seconds=60)
    assert time.monotonic() - t0 < 15
    assert out.killed_for == "timeout" and out.progress["phase"] == "fit"
    assert out.signal == signal.SIGKILL and out.peak_rss_bytes and out.result is None
    proc = starter._current["starter"].proc
    nxt = _run(tmp_path, "next")
    assert nxt.result["status"] == "ok" and nxt.result["describe"]["ppid"] == proc.pid


def test_runaway_memory_is_stopped_at_the_kill_limit(tmp_path):
    out = _run(tmp_path, "big", "alloc", timeout_s=60, limits=Limits(host_kill_bytes=300 * MIB), mib=800)
    assert out.killed_for == "over_budget", (out.killed_for, out.result)
    assert "kill limit of 300 MiB" in out.kill_reason


def test_the_usage_is_the_trials_own_peak(tmp_path):
    small = _run(tmp_path, "small")
    big = _run(tmp_path, "big", "alloc", mib=200)
    assert big.result["status"] == "ok"
    grown = (big.peak_rss_bytes - small.peak_rss_bytes) / MIB
    assert 190 < grown < 260, grown  # 200 MiB touched, the rest is the same inherited state
    assert big.result["metrics"]["fit_rss_mib"] > 190


def test_a_killed_starter_is_an_error_and_the_next_trial_gets_a_fresh_one(tmp_path):
    killed = []

    def kill_starter(elapsed):
        progress = tmp_path / "doomed" / "t" / "progress.json"
        if not killed and progress.exists() and json.loads(progress.read_text()).get("phase") == "fit":
            st = starter._current["starter"]
            killed.append(st.proc.pid)
            st.proc.send_signal(signal.SIGKILL)

    out = _run(tmp_path, "doomed", "sleep", on_tick=kill_starter, seconds=30)
    assert killed and out.result is None
    assert out.signal == signal.SIGKILL  # the trial dies with its starter (PR_SET_PDEATHSIG)
    nxt = _run(tmp_path, "after")
    assert nxt.result["status"] == "ok" and nxt.result["describe"]["ppid"] != killed[0]


def test_slurms_time_limit_warning_does_not_kill_the_forked_trial(tmp_path):
    sent = []

    def warn(elapsed):
        progress = tmp_path / "w" / "t" / "progress.json"
        if not sent and progress.exists() and json.loads(progress.read_text()).get("phase") == "fit":
            procs = psutil.Process().children(recursive=True)
            for p in procs:
                p.send_signal(signal.SIGUSR2)
            sent.append(len(procs))

    out = _run(tmp_path, "w", "sleep", on_tick=warn, seconds=2)
    assert sent and sent[0] >= 2  # the starter and the trial both got it
    assert out.signal is None and out.result["status"] == "ok", (out.signal, out.result)


def test_off_switch_starts_each_trial_from_the_reaper(tmp_path, monkeypatch):
    monkeypatch.setenv(starter.PRELOAD_ENV, "0")
    out = _run(tmp_path, "plain")
    assert out.result["status"] == "ok"
    assert "started_by" not in _rusage(tmp_path / "plain")
    assert starter._current["starter"] is None


def test_no_starter_outlives_close(tmp_path):
    _run(tmp_path, "a")
    pid = starter._current["starter"].proc.pid
    starter.close()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert os.getpid() not in [p.ppid() for p in psutil.process_iter() if p.pid == pid]


def test_what_a_library_prints_at_import_is_not_read_as_an_event(tmp_path):
    noisy = tmp_path / "noisy_fake_adapter.py"
    noisy.write_text("print('banner {not json')\nprint('[1, 2]')\n"
                     f"import sys; sys.path.insert(0, {str(tmp_path.parent)!r})\n"
                     f"exec(open({str(__import__('pathlib').Path(__file__).with_name('fakes.py'))!r}).read())\n")
    spec_path = _spec(tmp_path, "none")
    spec = json.loads(spec_path.read_text())
    spec["method"]["adapter"] = f"{noisy}:FakeAdapter"
    spec_path.write_text(json.dumps(spec))
    out = run_trial(spec_path, tmp_path / "t", timeout_s=30, threads=1, preload=("_test", str(noisy)))
    assert out.result["status"] == "ok", out.result
    assert "banner" in (tmp_path / "t" / "starter.txt").read_text()  # in the starter's log


def test_a_starter_that_stops_answering_is_ended_and_replaced(tmp_path):
    stopped = []

    def stop_starter(elapsed):
        progress = tmp_path / "hung" / "t" / "progress.json"
        if not stopped and progress.exists() and json.loads(progress.read_text()).get("phase") == "fit":
            st = starter._current["starter"]
            stopped.append(st.proc.pid)
            st.proc.send_signal(signal.SIGSTOP)  # it can no longer reap or report

    t0 = time.monotonic()
    out = _run(tmp_path, "hung", "sleep", timeout_s=2, on_tick=stop_starter, seconds=60)
    assert stopped and time.monotonic() - t0 < 30
    assert out.killed_for == "timeout" and out.result is None
    assert not psutil.pid_exists(stopped[0]) or psutil.Process(stopped[0]).status() == psutil.STATUS_ZOMBIE
    nxt = _run(tmp_path, "after")
    assert nxt.result["status"] == "ok" and nxt.result["describe"]["ppid"] != stopped[0]


def test_the_starter_imports_the_adapters_preload_modules(tmp_path, monkeypatch):
    spec_path = _spec(tmp_path, "none")
    spec = json.loads(spec_path.read_text())
    spec["method"]["adapter"] = "tests/bench/fakes.py:PreloadingAdapter"
    spec_path.write_text(json.dumps(spec))
    key = ("_test", spec["method"]["adapter"])
    out = run_trial(spec_path, tmp_path / "t", timeout_s=30, threads=1, preload=key)
    assert out.result["describe"]["wave_loaded"] is True
    (tmp_path / "fake").mkdir()
    plain = run_trial(_spec(tmp_path / "fake"), tmp_path / "u", timeout_s=30, threads=1, preload=KEY)
    assert plain.result["describe"]["wave_loaded"] is False  # FakeAdapter lists none
    monkeypatch.setenv(starter.PRELOAD_ENV, "0")
    fresh = run_trial(spec_path, tmp_path / "v", timeout_s=30, threads=1, preload=key)
    assert fresh.result["describe"]["wave_loaded"] is False  # a fresh interpreter imports it only when used


def test_timeout_reason_names_one_phase_before_or_during(tmp_path):
    """Issue 43: 'reached (before the trial started) (during metrics)' contradicted itself."""
    from joker.bench.trials.runner import Outcome, classify

    t0 = time.monotonic()
    early = _run(tmp_path, "early", timeout_s=0.01)  # a cold starter: still importing when the limit passes
    assert time.monotonic() - t0 < 3  # the starter is killed at once, not after its 5 s of grace
    assert early.killed_for == "timeout" and early.started is bool(early.progress)
    # the trial may have been forked just before the kill (its pid not yet read): then the phase it wrote
    where = f"during {early.progress['phase']}" if early.progress else "before the trial started"
    assert classify(early, None, None) == {"status": "timeout", "reason": f"wall-clock limit of 0.01 s reached ({where})"}
    late = _run(tmp_path, "late", "sleep", timeout_s=3, seconds=60)
    assert late.started is True and late.progress["phase"] == "fit"
    assert classify(late, None, None)["reason"] == "wall-clock limit of 3 s reached (during fit)"
    # forked, but its pid not yet reported when the limit passed: the phase it wrote decides
    raced = Outcome(killed_for="timeout", kill_reason="wall-clock limit of 1 s reached", progress={"phase": "metrics"})
    assert classify(raced, None, None)["reason"] == "wall-clock limit of 1 s reached (during metrics)"
    never = Outcome(killed_for="timeout", kill_reason="wall-clock limit of 1 s reached", started=False)
    assert classify(never, None, None)["reason"] == "wall-clock limit of 1 s reached (before the trial started)"
