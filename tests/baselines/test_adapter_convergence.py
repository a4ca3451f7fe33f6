"""Each adapter reports its method's own convergence signal, so tables can flag unconverged baselines."""

from __future__ import annotations

import numpy as np
import pytest

from adapterutil import require
from baselines.thundersvm import parse_thundersvm_log
from baselines import get_adapter

N = 600

LOG = """\
2026-11-29 13:52:14,431 INFO [default] #classes = 2
2026-11-29 13:52:14,432 INFO [default] training start
2026-11-29 13:52:14,434 INFO [default] global iter = 0, total local iter = 65, diff = 2
2026-11-29 13:52:14,440 INFO [default] global iter = 5, total local iter = 163, diff = 0.000938115
2026-11-29 13:52:14,440 INFO [default] training finished
2026-11-29 13:52:14,440 INFO [default] obj = -87.0358
2026-11-29 13:52:14,440 INFO [default] #sv = 119
""".splitlines()


@pytest.fixture(scope="module")
def data(higgs):
    return higgs.Xtr[:N], higgs.ytr[:N], higgs.sigma


def test_parse_thundersvm_log():
    parsed = parse_thundersvm_log(LOG)
    assert parsed["history"] == [{"global_iter": 0, "local_iter": 65, "diff": 2.0},
                                 {"global_iter": 5, "local_iter": 163, "diff": 0.000938115}]
    assert parsed["obj"] == -87.0358 and parsed["n_sv"] == 119 and parsed["finished"]


def test_thundersvm_exit_state_from_its_log(data):
    require("thundersvm")
    X, y, sigma = data
    adapter = get_adapter("thundersvm", task="binary", loss="hinge", sigma=sigma, lam=0.1, tol=1e-3).fit(X, y)
    report = adapter.convergence()
    assert report["converged"] is True and report["final"] < 1e-3
    assert report["history"][0]["global_iter"] == 0 and report["n_iter"] >= 1
    assert report["n_support"] == adapter.n_support_vectors_ > 0


def test_libsvm_iterations(data):
    X, y, sigma = data
    report = get_adapter("libsvm", task="binary", loss="hinge", sigma=sigma, lam=0.1).fit(X, y).convergence()
    assert report["converged"] is True and report["final"] > 10


def test_falkon_training_error_per_cg_iteration(data):
    require("falkon")
    X, y, sigma = data
    adapter = get_adapter("falkon", task="binary", loss="squared", sigma=sigma, lam=1e-6 * N, M=300,
                          maxiter=6).fit(X, y)
    report = adapter.convergence()
    errors = [h["error_rate"] for h in report["history"]]
    assert [h["iteration"] for h in report["history"]] == list(range(1, len(errors) + 1))
    assert 1 <= len(errors) <= 6 and report["final"] == errors[-1]
    train_error = np.mean(adapter.predict(X) != y)
    assert report["final"] == pytest.approx(train_error, abs=1e-12)


@pytest.mark.parametrize("method", ["eigenpro3", "eigenpro4"])
def test_eigenpro_training_error_per_epoch_and_no_regulariser(method, data):
    require(method)
    X, y, sigma = data
    adapter = get_adapter(method, task="binary", loss="squared", sigma=sigma, lam=1.0, n_centers=200,
                          epochs=4).fit(X, y)
    report = adapter.convergence()
    assert [h["epoch"] for h in report["history"]] == [1, 2, 3, 4]
    assert "early-stopped after 4 epochs" in report["reason"]
    assert adapter.describe()["regulariser"].startswith("none")
    assert report["final"] == pytest.approx(np.mean(adapter.predict(X) != y), abs=1e-12)


def test_joker_duality_gap(data):
    require("joker-exact")
    X, y, sigma = data
    report = get_adapter("joker-exact", task="binary", loss="squared_hinge", sigma=sigma, lam=1.0,
                         tol=1e-4).fit(X, y).convergence()
    assert report["converged"] is True
    assert report["final"] == report["dual_gap"] <= 1e-4
    assert {"epoch", "gap", "kkt"} <= set(report["history"][-1])
