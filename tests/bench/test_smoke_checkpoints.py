"""Issue 42 through the harness: the smoke sweep's trials keep anytime checkpoints and test predictions.

Every ok trial of an iterative method (Joker, Falkon, LogFalkon, EigenPro, the IPM) has a
``checkpoints.csv`` artifact with at least three rows, or, when the method made fewer than two
progress reports (Falkon with M = n: its preconditioner is exact and CG stops after one iteration),
every report plus the final point. The final row is the reported result (same fit seconds, same
metric), and ``predictions.npz`` gives back the recorded test accuracy / RMSE exactly.
"""

from __future__ import annotations

import tempfile

import numpy as np
import pandas as pd
import pytest

from benchutil import trial_runs

pytestmark = pytest.mark.slow
ITERATIVE = ("joker-exact", "joker-inexact", "falkon", "logfalkon", "eigenpro3", "eigenpro4", "ipm-lowrank", "askotch")


def check_store(uri: str, experiment: str) -> int:
    """Assert the issue-42 artifacts of every ok trial of ``experiment``; return how many were checked."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    checked = 0
    for run in trial_runs(uri, experiment):
        tags, m = run.data.tags, run.data.metrics
        if tags["status"] != "ok":
            continue
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert "predictions.npz" in names and "checkpoints.csv" in names, (tags["method"], names)
        with tempfile.TemporaryDirectory() as tmp:
            c = pd.read_csv(client.download_artifacts(run.info.run_id, "checkpoints.csv", tmp))
            with np.load(client.download_artifacts(run.info.run_id, "predictions.npz", tmp)) as z:
                y, p = z["y_true"], z["y_pred"]
        name = tags["primary_metric"]
        final = c[c["final"] == 1]
        assert len(final) == 1 and final["fit_seconds"].iloc[0] == pytest.approx(m["fit_seconds"], rel=1e-9)
        assert final[name].iloc[0] == pytest.approx(m[name], rel=1e-9)
        assert m["n_checkpoints"] == len(c)
        assert (np.diff(c["fit_seconds"]) >= 0).all()
        # every adapter's post-fit checks (a prediction on up to 10,000 training rows, Adapter.pause_hook) ran
        # with the fit's clocks paused and were recorded apart from the fit (da7426b)
        assert m["fit_check_seconds"] > 0.0, (tags["method"], tags["dataset"])
        assert m["checkpoint_eval_seconds"] >= 0.0
        if name == "test_accuracy":
            assert np.mean(p == y) == pytest.approx(m[name], rel=1e-12)
        elif name == "test_rmse":
            assert np.sqrt(np.mean((p.astype(float) - y) ** 2)) == pytest.approx(m[name], rel=1e-9)
        if tags["method"] in ITERATIVE:
            reports = int(c["call"].max())  # the adapter's progress reports (checkpoint calls)
            assert len(c) >= min(3, reports + 1), (tags["method"], tags["dataset"], len(c), reports)
        checked += 1
    return checked


def test_smoke_trials_keep_checkpoints_and_predictions(smoke_store):
    assert check_store(smoke_store, "smoke") >= 10
