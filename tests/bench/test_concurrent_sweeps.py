"""Sweeps started together (issue 26): own folders, own records, one store creation at a time.

Real processes: two sweeps started in the same second with the default
folder pattern, two given the same folder, three on one fresh SQLite store;
each case repeated, each sweep bounded by a timeout.
"""

import re
import sqlite3
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from benchutil import parent_runs, root_conftest, trial_runs

pytestmark = pytest.mark.timeout(900)
conftest = root_conftest()
EXPERIMENT = "test_failures"


def _start(args, env, log_path):
    cmd = [sys.executable, "-m", "joker.bench", "--config-dir", str(conftest.TEST_CONF),
           "--config-name", "failures", *args]
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=str(conftest.REPO), env=env, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT)
    proc.log_path = log_path
    return proc


def _wait_all(procs, timeout=300):
    try:
        for p in procs:
            p.wait(timeout=timeout)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [(p.returncode, p.log_path.read_text()) for p in procs]


def _default_sweep_dir(root):
    """The default ``hydra.sweep.dir`` of conf/harness.yaml under ``root``, its time at day resolution.

    Day resolution: two sweeps started together then always read the same
    time, as two sweeps started in the same second did with the old
    one-second pattern; what separates their folders is the rest.
    """
    raw = OmegaConf.to_container(OmegaConf.load(conftest.REPO / "conf" / "harness.yaml"))["hydra"]["sweep"]["dir"]
    assert raw.startswith("${oc.env:JOKER_BENCH_ROOT}/results/multirun/${sweep}/${now:%Y-%m-%d_%H-%M-%S}"), raw
    return raw.replace("${oc.env:JOKER_BENCH_ROOT}", str(root)).replace(
        "${now:%Y-%m-%d_%H-%M-%S}", "${now:%Y-%m-%d}")


def _fresh_store(tmp_path):
    """A migrated store in place (a copy of the session's template) so that a test of folders does not race on it."""
    conftest.seed_store(tmp_path)


@pytest.mark.parametrize("attempt", range(2))
def test_two_sweeps_started_together_keep_their_own_folders_and_records(tmp_path, attempt):
    _fresh_store(tmp_path)
    env = conftest.bench_env(tmp_path)
    pattern = _default_sweep_dir(tmp_path)
    methods = ("_test_ok", "_test_raise")
    procs = [_start([f"method={m}", f"hydra.sweep.dir={pattern}"], env, tmp_path / f"{m}.log") for m in methods]
    results = _wait_all(procs)
    for rc, out in results:
        assert rc == 0, out[-4000:]
    folders = sorted((tmp_path / "results" / "multirun" / EXPERIMENT).iterdir())
    assert len(folders) == 2, folders  # one folder per sweep
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    parents = parent_runs(uri, EXPERIMENT)
    assert sorted(p.info.status for p in parents) == ["FINISHED", "FINISHED"]
    runs = trial_runs(uri, EXPERIMENT)
    assert sorted((r.data.tags["method"], r.data.tags["status"]) for r in runs) == [
        ("_test_ok", "ok"), ("_test_raise", "error")]
    by_parent = {r.data.tags["mlflow.parentRunId"]: r.data.tags["method"] for r in runs}
    for p in parents:  # each parent holds its own sweep's trial, and its folder is its own
        method = by_parent[p.info.run_id]
        assert f"method={method}" == p.data.tags["overrides"].split()[0]
        assert p.data.tags["sweep_dir"] in {str(f) for f in folders}
    assert len({p.data.tags["sweep_dir"] for p in parents}) == 2
    for (rc, out), m in zip(results, methods):  # each sweep's own lines name its own parent and trial
        pid = re.search(r"\(parent run ([0-9a-f]+)\)", out).group(1)
        assert by_parent[pid] == m
        closing = out.split("store check:")[0].rsplit("method ", 1)[-1]
        assert m in closing and [x for x in methods if x != m][0] not in closing, out[-3000:]


_HOLD = ("import sys, time; from pathlib import Path; from joker.bench.config.sweep_folder import claim; "
         "claim(Path(sys.argv[1])); print('held', flush=True); time.sleep(600)")


def test_a_second_sweep_given_a_folder_in_use_stops_with_a_config_error(tmp_path):
    """A process holds the folder (as a running sweep does), then dies: refused while it lives, resumed after.

    The holder is a process of its own that took the folder's lock the way a
    sweep does (:func:`joker.bench.config.sweep_folder.claim`): two real
    sweeps started together overlapped only when neither finished before the
    other's start, which a loaded machine does not promise.
    """
    _fresh_store(tmp_path)
    env = conftest.bench_env(tmp_path)
    folder = tmp_path / "shared"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder)], cwd=str(conftest.REPO), env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        ((rc, refused),) = _wait_all([_start(["method=_test_raise", f"hydra.sweep.dir={folder}"], env,
                                             tmp_path / "refused.log")])
    finally:
        holder.kill()
        holder.wait()
    assert rc == 2, refused[-3000:]
    assert refused.strip().splitlines()[-1].startswith(
        f"config error: the sweep folder {folder} is in use by another sweep (process {holder.pid} on "), \
        refused[-2000:]
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert parent_runs(uri, EXPERIMENT) == [] and trial_runs(uri, EXPERIMENT) == []  # it created nothing
    # the holder is dead: the operating system dropped its lock, the same folder runs a sweep
    ((rc, ran),) = _wait_all([_start(["method=_test_ok", f"hydra.sweep.dir={folder}"], env, tmp_path / "ran.log")])
    assert rc == 0, ran[-3000:]
    (parent,) = parent_runs(uri, EXPERIMENT)
    assert parent.info.status == "FINISHED"
    (run,) = trial_runs(uri, EXPERIMENT)
    assert (run.data.tags["method"], run.data.tags["status"]) == ("_test_ok", "ok")


@pytest.mark.parametrize("attempt", range(2))
def test_three_sweeps_on_one_fresh_sqlite_store_then_a_fourth(tmp_path, attempt):
    db = tmp_path / "mlflow.db"
    assert not db.exists()
    env = conftest.bench_env(tmp_path)
    methods = ("_test_ok", "_test_raise", "_test_missing")
    procs = [_start([f"method={m}", f"hydra.sweep.dir={tmp_path / m}"], env, tmp_path / f"{m}.log")
             for m in methods]
    for rc, out in _wait_all(procs):
        assert rc == 0, out[-4000:]
        assert "open store failed" not in out and "Traceback" not in out, out[-4000:]
    uri = f"sqlite:///{db}"
    statuses = {r.data.tags["method"]: r.data.tags["status"] for r in trial_runs(uri, EXPERIMENT)}
    assert statuses == {"_test_ok": "ok", "_test_raise": "error", "_test_missing": "skipped"}
    con = sqlite3.connect(db)
    assert [r for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE '_alembic_tmp%'")] == []
    con.close()
    (rc, out), = _wait_all([_start(["method=_test_ok", "repetition=1", f"hydra.sweep.dir={tmp_path / 'fourth'}"],
                                   env, tmp_path / "fourth.log")])
    assert rc == 0, out[-4000:]
    assert len(trial_runs(uri, EXPERIMENT)) == 4


def test_a_half_migrated_store_is_a_one_line_error(run_bench, tmp_path):
    _fresh_store(tmp_path)
    db = tmp_path / "mlflow.db"
    con = sqlite3.connect(db)  # what an interrupted migration leaves (issue 26: tags, latest_metrics, ...)
    con.execute("CREATE TABLE _alembic_tmp_tags (key VARCHAR(250))")
    con.commit()
    con.close()
    proc = run_bench(["--config-name", "failures", "method=_test_ok"], tmp_path, test_conf=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert proc.stdout.strip().splitlines() == [
        f"config error: the MLflow store {db} is half-migrated (tables _alembic_tmp_tags left by an interrupted "
        f"or concurrent creation): move it aside (mv {db} {db}.broken) and run again"]


def test_a_result_of_another_spec_is_never_recorded_as_this_trials(tmp_path):
    from joker.bench.sweep.recording import own_result
    from joker.bench.trials.runner import Outcome
    from joker.bench.config.spec import SPEC_DIGEST_KEY, spec_digest

    mine, theirs = '{"method": "a"}', '{"method": "b"}'
    ok = {"status": "ok", "metrics": {"test_accuracy": 0.9}, SPEC_DIGEST_KEY: spec_digest(theirs)}
    out = own_result(Outcome(result=dict(ok)), mine, tmp_path)
    assert out.result["status"] == "error" and out.result["metrics"] == {}
    assert "not of this trial's spec" in out.result["reason"]
    same = own_result(Outcome(result={**ok, SPEC_DIGEST_KEY: spec_digest(mine)}), mine, tmp_path)
    assert same.result["status"] == "ok" and same.result["metrics"] == {"test_accuracy": 0.9}
    assert own_result(Outcome(result=None), mine, tmp_path).result is None  # killed before writing: classify decides


def test_job_summaries_are_read_back_by_their_sweep_run(tmp_path):
    from joker.bench.sweep.sweep_state import read_done, write_done

    write_done(tmp_path, 0, {"method": "a"}, "run-1")
    write_done(tmp_path, 1, {"method": "b"}, "run-2")
    write_done(tmp_path, 2, {"method": "c"}, "run-1")
    assert [d["method"] for d in read_done(tmp_path, "run-1")] == ["a", "c"]
    assert [d["method"] for d in read_done(tmp_path, "run-2")] == ["b"]
    assert [d["method"] for d in read_done(tmp_path)] == ["a", "b", "c"]
