"""The submitit launcher (SLURM's code path, run locally) runs the smoke sweep."""

import pytest

from benchutil import trial_runs

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def test_submitit_local_runs_a_smaller_smoke_sweep(run_bench, tmp_path):
    proc = run_bench(
        ["--config-name", "smoke", "hydra/launcher=submitit_local",
         "dataset=higgs-head", "method=libsvm,joker-exact,logfalkon"],
        tmp_path, timeout=540,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    runs = trial_runs(f"sqlite:///{tmp_path}/mlflow.db", "smoke")
    got = {r.data.tags["method"]: r for r in runs}
    assert set(got) == {"libsvm", "joker-exact", "logfalkon"}
    assert all(r.info.status == "FINISHED" for r in runs)
    for name in ("libsvm", "joker-exact"):
        tags, metrics = got[name].data.tags, got[name].data.metrics
        assert tags["status"] == "ok", (name, tags["reason"])
        assert metrics["n_train"] == 2000 and metrics["test_accuracy"] > 0.55
    assert got["logfalkon"].data.tags["status"] in ("ok", "skipped")
    assert (tmp_path / "multirun" / ".submitit").is_dir()
