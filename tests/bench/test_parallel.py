"""Parallel jobs on a fresh SQLite store record every run (no migration race)."""

import pytest

from benchutil import parent_runs, trial_runs

pytestmark = pytest.mark.timeout(400)


def test_joblib_four_jobs_fresh_sqlite_store(run_bench, tmp_path):
    assert not (tmp_path / "mlflow.db").exists()
    proc = run_bench(
        ["--config-name", "failures", "hydra/launcher=joblib", "hydra.launcher.n_jobs=4",
         "method=_test_ok,_test_raise", "repetition=0,1,2,3"],
        tmp_path, test_conf=True, timeout=360, fresh_store=True,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert "database is locked" not in proc.stdout
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    runs = trial_runs(uri, "test_failures")
    assert len(runs) == 8
    assert all(r.info.status == "FINISHED" for r in runs)
    keys = {(r.data.tags["method"], r.data.tags["repetition"]) for r in runs}
    assert keys == {(m, str(i)) for m in ("_test_ok", "_test_raise") for i in range(4)}
    statuses = {r.data.tags["method"]: r.data.tags["status"] for r in runs}
    assert statuses == {"_test_ok": "ok", "_test_raise": "error"}
    assert len({r.data.tags["config_hash"] for r in runs}) == 8
    assert len({r.data.tags["seed"] for r in runs}) == 8  # one derived seed per trial
    (parent,) = parent_runs(uri, "test_failures")
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parent.info.run_id}
