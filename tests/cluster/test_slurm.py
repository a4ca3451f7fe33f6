"""The multi-machine path for real: SLURM jobs writing to a PostgreSQL-backed MLflow server.

Needs ``make cluster-up`` (skipped otherwise, an error in CI). Every sweep
gets an experiment of its own: the PostgreSQL store outlives test sessions.
"""

import subprocess
import time

import pytest

from clusterutil import benchutil, unique

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

SMOKE_METHODS = ("joker-exact", "libsvm", "logfalkon")


@pytest.fixture(scope="module")
def slurm_smoke(run_slurm_sweep, tmp_path_factory):
    """A smaller smoke sweep (HIGGS head, three methods) through SLURM into PostgreSQL, run once."""
    sweep = unique("cluster-smoke")
    sweep_dir = tmp_path_factory.mktemp("slurm_smoke") / "multirun"
    args = ["--config-name", "smoke", "dataset=higgs-head", "method=" + ",".join(SMOKE_METHODS),
            f"sweep={sweep}"]
    first = run_slurm_sweep(args, sweep_dir)
    assert first.returncode == 0, first.stdout[-5000:]
    return {"sweep": sweep, "dir": sweep_dir, "first": first, "run": lambda: run_slurm_sweep(args, sweep_dir)}


def test_smoke_through_slurm_matches_the_basic_launcher(slurm_smoke, cluster, smoke_store):
    runs = benchutil.trial_runs(cluster["tracking_uri"], slurm_smoke["sweep"])
    slurm = benchutil.by_method(runs)
    assert set(slurm) == set(SMOKE_METHODS)
    basic = {(r.data.tags["dataset"], r.data.tags["method"]): r
             for r in benchutil.trial_runs(smoke_store, "smoke")}
    for method, run in slurm.items():
        ref = basic[("higgs-head", method)]
        assert run.info.status == "FINISHED"
        assert run.data.tags["status"] == ref.data.tags["status"], (method, run.data.tags["reason"])
        if run.data.tags["status"] == "ok":  # same data, seed and threads: the same predictions
            m, r = run.data.metrics, ref.data.metrics
            assert m["n_train"] == r["n_train"] == 2000
            assert abs(m["test_accuracy"] - r["test_accuracy"]) <= 1 / m["n_test"] + 1e-12, method
            assert m["fit_seconds"] > 0 and 30 < m["peak_rss_mib"] < 6144  # measured in the job
            assert run.data.tags["threads"] == "2"
    # one SLURM job per trial, and the closing check of the store passed
    assert len(list((slurm_smoke["dir"] / ".submitit").glob("[0-9]*_[0-9]*"))) == len(SMOKE_METHODS)
    assert "store check: 3 trials, one finished record each" in slurm_smoke["first"].stdout


def test_second_run_finds_the_finished_trials(slurm_smoke, cluster):
    first = {r.data.tags["method"]: r for r in benchutil.trial_runs(cluster["tracking_uri"], slurm_smoke["sweep"])}
    again = slurm_smoke["run"]()
    assert again.returncode == 0, again.stdout[-5000:]
    lines = {ln.split()[2]: ln for ln in again.stdout.splitlines() if ln.startswith("[") and "/3]" in ln}
    assert set(lines) == set(SMOKE_METHODS)
    # finished trials are found, not run again; a skipped one (falkon missing) is tried again
    for method, run in first.items():
        assert ("(cached)" in lines[method]) == (run.data.tags["status"] == "ok"), lines[method]
    runs = benchutil.trial_runs(cluster["tracking_uri"], slurm_smoke["sweep"], finished_only=True)
    current = [r for r in runs if "superseded_by" not in r.data.tags]
    assert sorted(r.data.tags["method"] for r in current) == sorted(SMOKE_METHODS)
    for method, run in first.items():
        if run.data.tags["status"] == "ok":
            assert run.info.run_id in {r.info.run_id for r in current}  # the same record, kept
    assert "store check: 3 trials, one finished record each" in again.stdout


def test_eight_jobs_write_at_once(run_slurm_sweep, cluster, tmp_path):
    sweep = unique("cluster-writers")
    proc = run_slurm_sweep(
        ["--config-name", "failures", "method=_test_ok", "repetition=0,1,2,3,4,5,6,7", "threads=1",
         "hydra.launcher.partition=shared", f"sweep={sweep}"],  # shared: 4 jobs per CPU
        tmp_path / "multirun", test_conf=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert "RESOURCE_ALREADY_EXISTS" not in proc.stdout
    runs = benchutil.trial_runs(cluster["tracking_uri"], sweep)
    assert len(runs) == 8 and all(r.info.status == "FINISHED" for r in runs)
    assert sorted(int(r.data.tags["repetition"]) for r in runs) == list(range(8))
    assert len({r.data.tags["config_hash"] for r in runs}) == 8
    (parent,) = benchutil.parent_runs(cluster["tracking_uri"], sweep)
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parent.info.run_id}
    from mlflow.tracking import MlflowClient

    stray = MlflowClient(cluster["tracking_uri"]).search_runs(["0"], filter_string=f"tags.sweep = '{sweep}'")
    assert stray == []  # nothing fell into the Default experiment
    assert "store check: 8 trials, one finished record each" in proc.stdout


def test_cancelled_and_timed_out_jobs_are_recorded_and_the_sweep_goes_on(run_slurm_sweep, cluster,
                                                                          slurm_env, tmp_path):
    sweep = unique("cluster-killed")
    sweep_dir = tmp_path / "multirun"
    # jobs #0, #1: _test_ok; #2: _test_sleep, cancelled; #3: _test_sleep, past its 2-minute limit. The sleep
    # (290 s) is well past that limit: slurmctld enforces limits on its own cycle, and the yaml's 120 s sleep
    # once finished (status ok) before the kill came (CI, 2026-12-04)
    proc = run_slurm_sweep(
        ["--config-name", "failures", "method=_test_ok,_test_sleep", "repetition=0,1", "timeout_s=600",
         "++method.options.seconds=290",
         "threads=1", "hydra.launcher.partition=shared", "hydra.launcher.timeout_min=2",
         "hydra.launcher.signal_delay_s=30", f"sweep={sweep}"],
        sweep_dir, test_conf=True, background=True,
    )
    try:
        t0 = time.monotonic()
        while not (sweep_dir / "2" / "trial" / "progress.json").exists():
            assert proc.poll() is None and time.monotonic() - t0 < 300, "job #2 never started its trial"
            time.sleep(0.5)
        array = subprocess.run(["squeue", "-h", "-o", "%F", "-n", "__main__"], env=slurm_env,
                               capture_output=True, text=True).stdout.split()[0]
        subprocess.run(["scancel", f"{array}_2"], env=slurm_env, check=True)
        out, _ = proc.communicate(timeout=500)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-5000:]
    runs = benchutil.trial_runs(cluster["tracking_uri"], sweep)
    got = {(r.data.tags["method"], r.data.tags["repetition"]): r.data.tags for r in runs}
    assert len(runs) == 4 and set(got) == {(m, str(i)) for m in ("_test_ok", "_test_sleep") for i in (0, 1)}
    assert got[("_test_ok", "0")]["status"] == got[("_test_ok", "1")]["status"] == "ok"
    cancelled, timed_out = got[("_test_sleep", "0")], got[("_test_sleep", "1")]
    assert cancelled["status"] == "error", cancelled["reason"]
    assert f"SLURM ended job {array}_2: CANCELLED" in cancelled["reason"], cancelled["reason"]
    assert timed_out["status"] == "timeout", timed_out["reason"]
    assert f"SLURM job {array}_3 reached its time limit (00:02:00" in timed_out["reason"], timed_out["reason"]
    assert "store check: 4 trials, one finished record each" in out
