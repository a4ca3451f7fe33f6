"""Kill a sweep mid-way, run the same command again: only what is missing runs."""

import os
import signal
import subprocess
import time

import pytest

from benchutil import root_conftest, trial_runs

pytestmark = pytest.mark.timeout(400)

ARGS = ["--config-name", "failures", "method=_test_pause", "repetition=0,1,2,3,4,5"]


def _done(sweep_dir):
    d = sweep_dir / ".joker_bench" / "done"
    return len(list(d.glob("*.json"))) if d.is_dir() else 0


def test_killed_sweep_resumes_without_rerunning_finished_trials(tmp_path):
    conftest = root_conftest()

    sweep_dir = tmp_path / "multirun"
    cmd = conftest.bench_command(ARGS, sweep_dir, test_conf=True)
    # pinned: other work in the same checkout must not change the code version mid-test
    env = conftest.bench_env(tmp_path, {"JOKER_BENCH_CODE_VERSION": "resume-test"})
    with open(tmp_path / "first.txt", "w") as log:
        proc = subprocess.Popen(cmd, cwd=str(conftest.REPO), env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 180
        while _done(sweep_dir) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None, open(tmp_path / "first.txt").read()
        time.sleep(0.8)  # most likely inside the next trial now
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    first = {r.data.tags["config_hash"]: r.info.run_id
             for r in trial_runs(uri, "test_failures", finished_only=True)}
    assert 2 <= len(first) < 6, len(first)
    time.sleep(1)  # the orphaned trial (if any) died with its parent (PDEATHSIG)

    second = subprocess.run(cmd, cwd=str(conftest.REPO), env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert second.returncode == 0, second.stdout[-5000:]
    finished = trial_runs(uri, "test_failures", finished_only=True)
    hashes = [r.data.tags["config_hash"] for r in finished]
    assert len(hashes) == 6 and len(set(hashes)) == 6  # exactly one finished run per trial
    now = {r.data.tags["config_hash"]: r.info.run_id for r in finished}
    for h, run_id in first.items():
        assert now[h] == run_id  # not re-run
    progress = [ln for ln in second.stdout.splitlines() if ln.startswith("[") and "/6]" in ln]
    assert len(progress) == 6
    assert sum("(cached)" in ln for ln in progress) == len(first)
    assert all(r.data.tags["status"] == "ok" for r in finished)


def test_rerun_true_supersedes_instead_of_overwriting(run_bench, tmp_path):
    args = ["--config-name", "failures", "method=_test_ok"]
    pin = {"JOKER_BENCH_CODE_VERSION": "rerun-test"}
    assert run_bench(args, tmp_path, test_conf=True, env=pin).returncode == 0
    again = run_bench(args + ["rerun=true"], tmp_path, test_conf=True, sweep_name="again", env=pin)
    assert again.returncode == 0, again.stdout[-3000:]
    runs = trial_runs(f"sqlite:///{tmp_path}/mlflow.db", "test_failures", finished_only=True)
    assert len(runs) == 2  # the first result is kept
    old = [r for r in runs if "superseded_by" in r.data.tags]
    new = [r for r in runs if "superseded_by" not in r.data.tags]
    assert len(old) == 1 and len(new) == 1
    assert old[0].data.tags["superseded_by"] == new[0].info.run_id
