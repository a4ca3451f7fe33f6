"""Adding a method is one file, one YAML and one registry line; a real sweep then runs it.

The toy method (tests/bench/toy_krr.py, tests/bench/conf/method/_test_krr.yaml)
is registered for the trial processes through ``JOKER_BENCH_ADAPTERS`` and
run by the smoke sweep on a real HEPC subset; its recorded RMSE must be
scikit-learn's KernelRidge on the same rows, on the target as the harness
gives it to every regression method (standardised on the training rows,
predictions mapped back: KRR on the centred target plus the mean).
"""

from pathlib import Path

import numpy as np
import pytest

from benchutil import by_method, trial_runs

pytestmark = pytest.mark.timeout(400)
TOY = Path(__file__).with_name("toy_krr.py")
N_TRAIN, N_TEST = 400, 200


def test_a_toy_method_runs_in_a_real_sweep(run_bench, tmp_path):
    from sklearn.kernel_ridge import KernelRidge

    from joker.bench.config.seeds import data_seed
    from joker.data import load_dataset

    proc = run_bench(
        ["--config-name", "smoke", "method=_test_krr", "dataset=hepc",
         f"dataset.n_train={N_TRAIN}", f"dataset.n_test={N_TEST}"],
        tmp_path, test_conf=True, timeout=300,
        env={"JOKER_BENCH_ADAPTERS": f"_test_krr={TOY}:ToyKRRAdapter"},
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    run = by_method(trial_runs(f"sqlite:///{tmp_path.resolve()}/mlflow.db", "smoke"))["_test_krr"]
    assert run.data.tags["status"] == "ok", run.data.tags.get("reason")
    assert run.data.params["method.loss"] == "squared" and run.data.tags["describe.library"] == "numpy"

    ds = load_dataset("hepc", n_train=N_TRAIN, n_test=N_TEST, seed=data_seed(0, 0), dtype="float64")
    sigma, lam = 3.9086, 1.0  # conf/dataset/hepc.yaml
    mean = float(np.mean(ds.y_train))
    ref = KernelRidge(alpha=lam, kernel="rbf", gamma=1.0 / (2 * sigma**2)).fit(ds.X_train, ds.y_train - mean)
    rmse = float(np.sqrt(np.mean((ref.predict(ds.X_test) + mean - ds.y_test) ** 2)))
    assert run.data.metrics["test_rmse"] == pytest.approx(rmse, rel=1e-6)
    assert run.data.metrics["n_train"] == N_TRAIN and run.data.metrics["n_test"] == N_TEST
