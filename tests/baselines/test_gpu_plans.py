"""GPU plans of the torch-based adapters: pure arithmetic, no GPU and no upstream library needed.

The rule is ``docs/contracts.md``, "GPU plans of the adapters". Sizes are
the full paper splits of issue 14: HEPC 1,844,332 x 10, Skin 196,045 x 3,
ijcnn1 49,990 x 22; budgets gpu-2g and gpu-10g.
"""

from __future__ import annotations

import math

import pytest

from adapterutil import skip_unavailable
from baselines.base import MIB, Budget, BudgetError
from baselines.eigenpro3 import EigenPro3Adapter, HostBatches, cap_batch, eigenpro3_gpu_bytes
from baselines.eigenpro4 import EigenPro4Adapter, eigenpro4_bytes
from baselines.falkon import FalkonAdapter, falkon_gpu_plan
from baselines.joker_solver import JokerExactAdapter, JokerInexactAdapter, joker_exact_bytes, joker_inexact_bytes
from baselines.logfalkon import LogFalkonAdapter

DATASETS = {"hepc": ("regression", 1_844_332, 10), "skin": ("binary", 196_045, 3), "ijcnn1": ("binary", 49_990, 22)}
BUDGETS = {"gpu-2g": 2048, "gpu-10g": 10240}
CASES = [(ds, b) for ds in DATASETS for b in BUDGETS]


def budget(name: str) -> Budget:
    return Budget.from_mib(name, 64 * 1024, BUDGETS[name])


def make(cls, task: str, dtype: str = "float32", device: str = "cuda", **options):
    loss = {"joker": "squared", "logfalkon": "logistic"}.get(cls.name.split("-")[0], "squared")
    return cls(task=task, loss=loss, sigma=1.0, lam=1.0, dtype=dtype, device=device, **options)


def falkon_pc(m: int, d: int, dsz: int) -> int:
    return dsz * (2 * m * m + m * (d + 4))


@pytest.mark.parametrize("cls,dataset,bname", [(FalkonAdapter, ds, b) for ds, b in CASES]
                         + [(LogFalkonAdapter, ds, b) for ds, b in CASES if DATASETS[ds][0] == "binary"])
def test_falkon_gpu_plan_leaves_the_promised_room(cls, dataset, bname):
    task, n, d = DATASETS[dataset]
    b = budget(bname)
    plan = make(cls, task).plan(b, n, d)
    limit, m = b.gpu_bytes, plan["M"]
    assert plan["pc_bytes"] == falkon_pc(m, d, 4)
    assert plan["pc_bytes"] <= limit / 2                          # the preconditioner: at most half
    assert m == 20_000 or falkon_pc(m + 1, d, 4) > limit / 2      # ... and the largest such M (or max_M)
    assert plan["max_gpu_mem"] == int(0.75 * limit)               # Falkon's bound, inside the allocator cap
    assert plan["max_gpu_mem"] - plan["pc_bytes"] >= limit / 4    # kernel blocks keep a quarter while it runs
    assert plan["est_bytes"] <= limit and plan["budget_bytes"] == limit


def test_falkon_gpu_plan_values_at_2g_and_10g():
    """Closed form: largest M with 4 (2 M^2 + 14 M) <= 2^30 (HEPC, float32, half of 2 GiB) is 11,581."""
    m = math.floor((-14 + math.sqrt(14 ** 2 + 8 * 2 ** 30 / 4)) / 4)
    assert m == 11_581
    assert falkon_gpu_plan(budget("gpu-2g"), 1_844_332, 10, 4)["M"] == m
    assert falkon_gpu_plan(budget("gpu-10g"), 1_844_332, 10, 4)["M"] == 20_000  # max_M
    m64 = math.floor((-14 + math.sqrt(14 ** 2 + 8 * 2 ** 30 / 8)) / 4)  # float64: 8 (2 M^2 + 14 M) <= 2^30
    assert m64 == 8_188 and falkon_gpu_plan(budget("gpu-2g"), 1_844_332, 10, 8)["M"] == m64


def test_falkon_forced_m_that_fills_the_budget_is_over_budget():
    """The H200 case: M about 11,536 in float64 (a 2.13 GB preconditioner) at gpu-2g."""
    est = falkon_pc(11_536, 10, 8) + 512 * MIB  # 2,032 MiB of preconditioner + a quarter of the budget
    assert falkon_pc(11_536, 10, 8) == 2_130_560_768
    with pytest.raises(BudgetError, match=rf"budget 'gpu-2g' \(2048 MiB of GPU memory\) cannot hold the smallest setting "
                                          rf"\(estimated {est / MIB:.0f} MiB for n=1844332, d=10, M=11536\)"):
        make(FalkonAdapter, "regression", dtype="float64", M=11_536).plan(budget("gpu-2g"), 1_844_332, 10)


def test_falkon_cpu_plan_unchanged():
    """CPU: the largest M whose preconditioner fits next to the data and its kernel block: 16 MiB, or more at
    large M (falkon_min_block_bytes: the centres' copies and some rows)."""
    from baselines.falkon import falkon_min_block_bytes

    b = Budget.from_mib("cpu-4g", 4096)
    plan = make(FalkonAdapter, "regression", dtype="float64", device="cpu").plan(b, 20_000, 10)
    data = 8 * (20_000 * 10 + 2 * 20_000)

    def need(m):
        return data + falkon_pc(m, 10, 8) + max(16 * MIB, falkon_min_block_bytes(m, 10, 8))

    assert need(plan["M"]) <= b.host_bytes < need(plan["M"] + 1)
    # the kernel blocks get what Falkon needs at this M (above max_block_mib here: M = 16,000 centres), not the
    # rest of the budget: the estimate is data + preconditioner + that block, within the budget
    assert plan["max_cpu_mem"] == falkon_min_block_bytes(plan["M"], 10, 8) > 16 * MIB and "max_gpu_mem" not in plan
    assert plan["est_bytes"] == need(plan["M"]) <= b.host_bytes


@pytest.mark.parametrize("cls", [FalkonAdapter, LogFalkonAdapter])
def test_falkon_cpu_plan_for_large_n_caps_M(cls):
    """From large_n rows on the CPU M is at most large_n_max_M at every budget; below it the memory rule alone."""
    task = "regression" if cls is FalkonAdapter else "binary"
    n = 1_844_332
    for name, mib in (("cpu-4g", 4096), ("cpu-16g", 16384)):
        plan = make(cls, task, dtype="float64", device="cpu").plan(Budget.from_mib(name, mib), n, 10)
        assert plan["M"] == 4096 and "large_n = 200000" in plan["plan_reason"]
    small = make(cls, task, dtype="float64", device="cpu").plan(Budget.from_mib("cpu-16g", 16384), 199_999, 10)
    assert small["M"] == 20_000 and "large_n" not in small["plan_reason"]
    given = make(cls, task, dtype="float64", device="cpu", M=8000).plan(Budget.from_mib("cpu-4g", 4096), n, 10)
    assert given["M"] == 8000 and given["plan_reason"] == "M given"


@pytest.mark.parametrize("dataset,bname", CASES)
def test_eigenpro3_gpu_plan_keeps_the_data_on_the_host(dataset, bname):
    task, n, d = DATASETS[dataset]
    b = budget(bname)
    plan = make(EigenPro3Adapter, task).plan(b, n, d)
    p, s, q = plan["n_centers"], plan["n_nystrom"], plan["preconditioner_level"]
    assert (s, q, plan["max_batch"]) == (5000, 500, 8192)
    room = 0.75 * b.gpu_bytes
    assert plan["est_bytes"] == eigenpro3_gpu_bytes(p, d, s, q, 8192, 4) <= room
    assert p == 20_000 or eigenpro3_gpu_bytes(p + 1, d, s, q, 8192, 4) > room
    # the training data stay on the host: ten times the rows cost the device nothing more
    assert make(EigenPro3Adapter, task).plan(b, 10 * n, d)["est_bytes"] == plan["est_bytes"]


@pytest.mark.parametrize("dataset,bname", CASES)
def test_eigenpro4_gpu_plan_keeps_the_data_on_the_host(dataset, bname):
    task, n, d = DATASETS[dataset]
    b = budget(bname)
    plan = make(EigenPro4Adapter, task).plan(b, n, d)
    p = plan["n_centers"]
    assert (plan["n_nystrom_data"], plan["data_level"], plan["n_nystrom_model"], plan["model_level"]) == \
        (3000, 150, 3000, 150)
    assert plan["max_batch"] == min(10_000, p) and "training data on the host" in plan["on_device"]
    room = 0.75 * b.gpu_bytes
    assert plan["est_bytes"] == eigenpro4_bytes(n, p, d, 3000, 150, 3000, 150, 4, on_gpu=True) <= room
    assert p == 20_000 or eigenpro4_bytes(n, p + 1, d, 3000, 150, 3000, 150, 4, on_gpu=True) > room
    # the training data stay on the host: ten times the rows cost the device nothing more
    assert make(EigenPro4Adapter, task).plan(b, 10 * n, d)["est_bytes"] == plan["est_bytes"]
    # ... and the host estimate of the same P holds them
    assert eigenpro4_bytes(n, p, d, 3000, 150, 3000, 150, 4) > plan["est_bytes"] + 4 * n * d


def test_eigenpro3_gpu_bytes_by_hand():
    """p=1000, d=10, s=5000, q=500, b=8192, float32, C=1."""
    elements = (1000 * 10 + 4 * 1000 + 1000 ** 2 + 5000 * 510 + 1000 * 500 + 8192 * 11 + 8192 * 6000
                + 3 * 1000 ** 2 + 1000 * 2000)
    assert eigenpro3_gpu_bytes(1000, 10, 5000, 500, 8192, 4) == 4 * elements


def test_eigenpro3_batch_cap_keeps_the_step_per_sample():
    class Model:
        batch_size, lr = 40_000, 12.0

    model = Model()
    cap_batch(model, 8192)
    assert model.batch_size == 8192 and model.lr / model.batch_size == pytest.approx(12.0 / 40_000)
    cap_batch(model, 10_000)  # never raises the batch
    assert model.batch_size == 8192
    rows = list(HostBatches(list(range(10)), list(range(10, 20)), 4))
    assert rows == [([0, 1, 2, 3], [10, 11, 12, 13]), ([4, 5, 6, 7], [14, 15, 16, 17]), ([8, 9], [18, 19])]


@pytest.mark.parametrize("dataset,bname", CASES)
def test_joker_gpu_plans_use_large_blocks(dataset, bname):
    task, n, d = DATASETS[dataset]
    b = budget(bname)
    inexact = make(JokerInexactAdapter, task).plan(b, n, d)
    assert (inexact["n_components"], inexact["block_size"]) == (16384, 4096)   # fits every case
    assert inexact["est_bytes"] == joker_inexact_bytes(n, d, 4096, 16384, 4) <= b.gpu_bytes
    exact = make(JokerExactAdapter, task).plan(b, n, d)
    block = exact["block_size"]
    assert exact["est_bytes"] == joker_exact_bytes(n, d, block, 4) <= b.gpu_bytes
    assert block == 4096 or joker_exact_bytes(n, d, 2 * block, 4) > b.gpu_bytes  # the largest halving that fits


def test_joker_block_caps_per_device():
    b = budget("gpu-2g")
    assert make(JokerExactAdapter, "regression").plan(b, 1_844_332, 10)["block_size"] == 256
    assert make(JokerExactAdapter, "binary").plan(b, 49_990, 22)["block_size"] == 4096
    cpu = make(JokerInexactAdapter, "regression", device="cpu").plan(Budget.from_mib("cpu-4g", 4096), 20_000, 10)
    assert (cpu["n_components"], cpu["block_size"]) == (4096, 256)  # the CPU caps are unchanged


def test_too_small_gpu_budget_is_a_budget_error_with_the_arithmetic():
    tiny = Budget.from_mib("gpu-64m", 1024, 64)
    est = joker_exact_bytes(1_844_332, 10, 16, 4)
    with pytest.raises(BudgetError, match=rf"joker-exact: budget 'gpu-64m' \(64 MiB of GPU memory\) cannot hold the smallest "
                                          rf"setting \(estimated {est / MIB:.0f} MiB for n=1844332, d=10, block_size=16\)"):
        make(JokerExactAdapter, "regression").plan(tiny, 1_844_332, 10)
    with pytest.raises(BudgetError, match="cannot hold the smallest setting"):
        make(FalkonAdapter, "regression").plan(Budget.from_mib("gpu-8m", 1024, 8), 1000, 10)


def torch_equal(a, b) -> bool:
    import torch

    return a.shape == b.shape and bool(torch.equal(a, b))


#: A small EigenPro3 setting: 200 centres, 300 Nystroem samples, preconditioner level 50.
EP3_SMALL = dict(task="regression", loss="squared", sigma=2.0, lam=1.0, dtype="float64", n_centers=200,
                 n_nystrom=300, preconditioner_level=50)


def _eigenpro3_problem(monkeypatch, seed: int):
    """``(X, y, gpu_branch)``: a smooth 1,000 x 5 regression; the test is skipped without EigenPro3.

    Calling ``gpu_branch()`` makes the adapter take its GPU branch on the
    CPU device (host batches, capped batch), so the real library runs
    without a GPU.
    """
    import numpy as np

    ok, why = EigenPro3Adapter.available()
    if not ok:
        skip_unavailable(why)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((1000, 5))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(1000)

    def gpu_branch():
        monkeypatch.setattr(EigenPro3Adapter, "on_gpu", property(lambda self: True))
        monkeypatch.setattr(EigenPro3Adapter, "_require_gpu", lambda self: None)

    return X, y, gpu_branch


def _fit_on_gpu_branch(X, y, **options):
    est = EigenPro3Adapter(**EP3_SMALL, **options)
    est.plan(Budget.from_mib("gpu", 1024, 1024), *X.shape)
    return est.fit(X, y)


def test_eigenpro3_host_batches_match_its_own_loaders(monkeypatch):
    """With the batch uncapped, host batches are EigenPro3's own (device) loaders' batches, and fit alike."""
    import numpy as np

    X, y, gpu_branch = _eigenpro3_problem(monkeypatch, 0)
    own = EigenPro3Adapter(**EP3_SMALL, epochs=3).fit(X, y)
    gpu_branch()
    host = _fit_on_gpu_branch(X, y, epochs=3, max_batch=10**9)
    assert isinstance(host.model_.train_loaders[0], HostBatches)
    assert host.plan_["batch_size"] == own.plan_["batch_size"] < len(X)  # two batches per epoch
    ours, theirs = list(host.model_.train_loaders[0]), list(own.model_.train_loaders[0])
    assert len(ours) == len(theirs) == 2
    for (xa, ya), (xb, yb) in zip(ours, theirs):
        assert torch_equal(xa, xb) and torch_equal(ya, yb)
    # Not bit-identical fits: iterating a torch DataLoader draws from torch's global generator, which
    # EigenPro3's projection step (torch.randperm) also uses. The curves agree closely.
    np.testing.assert_allclose([h["rmse"] for h in host._history], [h["rmse"] for h in own._history], rtol=0.05)


def test_eigenpro3_capped_batch_still_learns(monkeypatch):
    """A batch capped below EigenPro3's choice keeps the step per sample and still fits (RMSE well below std(y))."""
    import numpy as np

    X, y, gpu_branch = _eigenpro3_problem(monkeypatch, 1)
    gpu_branch()
    est = _fit_on_gpu_branch(X, y, epochs=5, max_batch=64)
    assert est.plan_["batch_size"] == 64
    rmse = float(np.sqrt(np.mean((est.predict(X) - y) ** 2)))
    assert rmse < 0.5 * float(np.std(y))


def test_indexed_torch_device_fills_in_the_current_cuda_ordinal(monkeypatch):
    """EigenPro 4 broadcasts to a list of devices (torch.cuda.comm), which needs cuda:<k>: on the H200
    check every eigenpro4 trial failed with a bare 'cuda'. The current device fills the ordinal in."""
    import torch

    from baselines.device import indexed_torch_device

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert indexed_torch_device("cuda") == torch.device("cuda", 3)
    assert indexed_torch_device("cuda:1") == torch.device("cuda", 1)
    assert indexed_torch_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device must be"):
        indexed_torch_device("gpu")
