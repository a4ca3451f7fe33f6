"""Falkon and LogisticFalkon as their maintainers run them (issue 40): block memory, callback rows, convergence."""

from __future__ import annotations

import numpy as np
import pytest

import baselines.falkon as falkon_mod
from adapterutil import require
from baselines import get_adapter
from baselines.base import MIB, Budget

N = 600


@pytest.fixture(scope="module")
def data(higgs):
    return higgs.Xtr[:N], higgs.ytr[:N], higgs.sigma


def test_kernel_blocks_are_capped_whatever_the_budget():
    """max_cpu_mem is max_block_mib, not the budget's remainder (a block of GiBs is page-faulted in per product)."""
    from baselines.falkon import FalkonAdapter, MAX_BLOCK_MIB

    big = FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, M=256).plan(
        Budget.from_mib("b", 4096), 200_000, 10)
    assert big["max_cpu_mem"] == MAX_BLOCK_MIB * MIB
    # data 200,000 x (10 + 2) float64 = 18.3 MiB, preconditioner 8 (2 256^2 + 256 x 14) = 1.0 MiB: room 28.6 MiB
    # data 200,000 x (10 + 2) float64 = 18.3 MiB, preconditioner 8 (2 256^2 + 256 x 14) = 1.0 MiB: room 28.7 MiB
    small = FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, M=256, max_block_mib=512).plan(
        Budget.from_mib("b", 48), 200_000, 10)
    assert small["max_cpu_mem"] == 48 * MIB - 8 * 200_000 * 12 - 8 * (2 * 256 ** 2 + 256 * 14)
    wide = FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, M=256, max_block_mib=512).plan(
        Budget.from_mib("b", 4096), 200_000, 10)
    assert wide["max_cpu_mem"] == 512 * MIB


def test_pc_epsilon_32_reaches_falkon_options():
    require("falkon")
    from baselines.falkon import FalkonAdapter
    from falkon import FalkonOptions

    adapter = FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, M=64, dtype="float32",
                            pc_epsilon_32=1e-6)
    adapter.plan(Budget.from_mib("b", 256), 1000, 5)
    assert adapter._falkon_options().pc_epsilon_32 == 1e-6
    plain = FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, M=64, dtype="float32")
    plain.plan(Budget.from_mib("b", 256), 1000, 5)
    assert plain._falkon_options().pc_epsilon_32 == FalkonOptions().pc_epsilon_32


def test_callback_scores_a_seeded_subset_of_training_rows(data, monkeypatch):
    """With more rows than CHECK_ROWS, the per-iteration curve is the model's error on check_subset's rows."""
    require("falkon")
    X, y, sigma = data
    monkeypatch.setattr(falkon_mod, "CHECK_ROWS", 250)
    adapter = get_adapter("falkon", task="binary", loss="squared", sigma=sigma, lam=1e-6 * N, M=300, maxiter=6,
                          seed=3).fit(X, y)
    Xc, yc = falkon_mod.check_subset(X, adapter._encode_y(y, N), 3)
    assert Xc.shape == (250, X.shape[1])
    scores = adapter.decision_function(Xc)
    last = adapter.convergence()["history"][-1]
    assert last["error_rate"] == pytest.approx(np.mean((scores > 0) != (yc > 0)), abs=1e-12)
    assert last["rmse"] == pytest.approx(np.sqrt(np.mean((scores - np.where(yc > 0, 1.0, -1.0)) ** 2)), rel=1e-9)


def test_falkon_plateau_reads_the_squared_loss(data):
    """Binary Falkon: 'converged' tests the RMSE of the scores (continuous), not the error rate."""
    require("falkon")
    X, y, sigma = data
    adapter = get_adapter("falkon", task="binary", loss="squared", sigma=sigma, lam=1e-3 * N, M=300,
                          maxiter=30).fit(X, y)
    report = adapter.convergence()
    rmse = [h["rmse"] for h in report["history"]]
    assert report["converged"] is True, report["reason"]
    assert "training rmse" in report["reason"] or "cg_tolerance" in report["reason"]
    f = adapter.decision_function(X)
    signs = np.where(adapter._encode_y(y, N) > 0, 1.0, -1.0)
    # 1e-6: when CG stops on Falkon's cg_tolerance the model keeps the iterate after the last callback
    assert rmse[-1] == pytest.approx(np.sqrt(np.mean((f - signs) ** 2)), rel=1e-6)


def test_logfalkon_converges_on_the_logistic_loss_at_the_target(higgs):
    """The last two Newton steps at the target penalty move the logistic loss by < 1e-3 (the error rate did not settle)."""
    require("logfalkon")
    X, y = higgs.Xtr, higgs.ytr
    adapter = get_adapter("logfalkon", task="binary", loss="logistic", sigma=higgs.sigma, lam=1.0, M=300,
                          seed=0).fit(X, y)
    report = adapter.convergence()
    assert report["converged"] is True, report["reason"]
    assert "logistic loss" in report["reason"] and "target penalty" in report["reason"]
    target = adapter.plan_["penalty_list"][-1]
    at_target = [h for h in report["history"] if h["penalty"] == target]
    assert len(at_target) == 1 + adapter.plan_["final_steps"] == 1 + 2   # no time budget: MIN_FINAL_STEPS
    # the recorded loss is the mean log(1 + exp(-y f)) of the fitted model on the training rows (n <= CHECK_ROWS)
    f = adapter.decision_function(X)
    signs = np.where(adapter._encode_y(y, len(y)) > 0, 1.0, -1.0)
    assert at_target[-1]["logistic_loss"] == pytest.approx(np.mean(np.logaddexp(0.0, -signs * f)), rel=1e-9)
    # and it beats the majority class on held-out rows
    majority = max(np.mean(higgs.yte == c) for c in np.unique(higgs.ytr))
    assert np.mean(adapter.predict(higgs.Xte) == higgs.yte) > majority


@pytest.mark.parametrize("method", ["eigenpro3", "eigenpro4"])
def test_eigenpro_reports_fixed_epochs(method, data):
    require(method)
    from baselines.epochwise import FIXED_EPOCHS

    X, y, sigma = data
    report = get_adapter(method, task="binary", loss="squared", sigma=sigma, lam=1.0, n_centers=200,
                         epochs=2).fit(X, y).convergence()
    assert report["stopped"] == FIXED_EPOCHS == "fixed_epochs"
    assert report["epochs"] == 2 and "fixed epochs by design" in report["reason"]


def test_eigenpro_short_fit_names_its_cause_not_a_divergence():
    """HEPC, EigenPro3, one epoch on 50 centres: no better than the mean, but the curve fell; the reason says so."""
    require("eigenpro3")
    from joker.data import load_dataset

    from baselines.base import DivergedError

    ds = load_dataset("hepc", n_train=2_000, n_test=1, subset="head", seed=0, dtype="float32",
                      download=False, progress=False)
    adapter = get_adapter("eigenpro3", task="regression", loss="squared", sigma=3.9086, lam=1.0, dtype="float32",
                          n_centers=50, epochs=1)
    with pytest.raises(DivergedError) as caught:
        adapter.fit(ds.X_train, ds.y_train)
    message = str(caught.value)
    assert "no better than predicting the mean" in message and "Not a divergence of the iterations" in message
    # the start (f = 0) is the RMSE of predicting zero, sqrt(mean(y^2)), on the same (all 2,000) rows
    y = ds.y_train.astype(np.float64)
    assert f"{np.sqrt(np.mean(y ** 2)):.4g} at f = 0" in message
    assert f"the targets' mean {np.mean(y):.4g}" in message
    report = adapter.convergence()
    assert report["diverged"] is True and report["reason"] == message.split(": ", 1)[1]


@pytest.mark.parametrize("method", ["eigenpro3", "eigenpro4"])
def test_eigenpro_default_epochs_end_at_the_plateau_rule(method, data):
    """epochs=None: the fit ends at the first epoch where the training squared loss has not improved by a
    relative plateau_rtol for PLATEAU_PATIENCE epochs, and the model kept is the one last scored (issue 40)."""
    require(method)
    from baselines.epochwise import PLATEAU, PLATEAU_PATIENCE as P

    X, y, sigma = data
    centres = {"eigenpro3": 50, "eigenpro4": 200}[method]   # measured (patience 10): plateau at epoch 163 and 32 of 400
    adapter = get_adapter(method, task="binary", loss="squared", sigma=sigma, lam=1.0, n_centers=centres,
                          max_epochs=400).fit(X, y)
    report = adapter.convergence()
    losses = [h["train_loss"] for h in report["history"]]
    rtol = adapter.options["plateau_rtol"]

    def rule(values):
        return len(values) > P and min(values[-P:]) > (1 - rtol) * min(values[:-P])

    assert report["stopped"] == PLATEAU and report["converged"] is True
    assert rule(losses) and not any(rule(losses[:k]) for k in range(1, len(losses)))
    assert report["epochs"] == len(losses) < 400
    # the loss is EigenPro's objective on the training rows (all 600 < CHECK_ROWS), for the model returned
    signs = np.where(adapter._encode_y(y, len(y)) > 0, 1.0, -1.0)
    assert losses[-1] == pytest.approx(np.mean((adapter.decision_function(X) - signs) ** 2), rel=1e-4)


@pytest.mark.parametrize("key,value", [("max_cg_iter", 0), ("max_cg_iter", 2.5), ("max_cg_iter", True),
                                       ("maxiter", None), ("maxiter", 0), ("maxiter", "20")])
def test_falkon_cg_counts_are_checked(key, value):
    """maxiter and max_cg_iter: integers >= 1 (max_cg_iter None: one run), refused with the option's name."""
    from baselines.falkon import FalkonAdapter

    with pytest.raises(ValueError, match=key):
        FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, **{key: value})
    assert FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, max_cg_iter=None).options[
        "max_cg_iter"] is None


def test_the_block_leaves_room_for_wide_centres():
    """Full a9a (d = 123) at M = 11,728 ended ``oom``: Falkon's 16 MiB block held the centres' copies and no row
    ("Available memory 2.00MB is not enough"). The plan's block now makes room: with it Falkon's own dmmv runs
    on wide centres where 16 MiB fails, and gives K^T K v."""
    require("falkon")
    import torch
    from falkon import FalkonOptions
    from falkon.kernels import GaussianKernel

    from baselines.falkon import MIN_BLOCK_BYTES, FalkonAdapter, falkon_min_block_bytes

    plan = FalkonAdapter(task="binary", loss="squared", sigma=1.0, lam=1.0, M=11_728).plan(
        Budget.from_mib("b", 4096), 32_561, 123)
    assert plan["max_cpu_mem"] == falkon_min_block_bytes(11_728, 123, 8) > MIN_BLOCK_BYTES
    gen = torch.Generator().manual_seed(0)
    n, M, d = 300, 600, 2000  # the centres alone are 9.2 MiB: two copies do not fit 16 MiB
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    Z = torch.randn(M, d, generator=gen, dtype=torch.float64)
    v = torch.randn(M, 1, generator=gen, dtype=torch.float64)
    sigma = float(d) ** 0.5
    with pytest.raises(MemoryError, match="is not enough"):
        GaussianKernel(sigma, opt=FalkonOptions(use_cpu=True, keops_active="no", max_cpu_mem=MIN_BLOCK_BYTES)
                       ).dmmv(X, Z, v, None)
    block = max(MIN_BLOCK_BYTES, falkon_min_block_bytes(M, d, 8))
    got = GaussianKernel(sigma, opt=FalkonOptions(use_cpu=True, keops_active="no", max_cpu_mem=float(block))
                         ).dmmv(X, Z, v, None)
    K = torch.exp(-torch.cdist(X, Z) ** 2 / (2 * sigma ** 2))
    torch.testing.assert_close(got, K.T @ (K @ v), rtol=1e-10, atol=1e-12)
