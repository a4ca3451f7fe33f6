"""CPU plans of joker-inexact for large n (issue 23, item 2): pure arithmetic, no upstream library.

Sizes are the full splits: HEPC 1,844,332 x 10 (regression, squared loss),
Skin 196,045 x 3 and ijcnn1 49,990 x 22 (binary, squared hinge); the rule
and its measurement are in ``JokerInexactAdapter``'s docstring.
"""

from __future__ import annotations

import numpy as np
import pytest

from baselines.base import Budget
from baselines.joker_solver import JokerInexactAdapter, joker_inexact_bytes


def make(task, loss, **options):
    return JokerInexactAdapter(task=task, loss=loss, sigma=1.0, lam=1.0, dtype="float32", device="cpu", **options)


@pytest.mark.parametrize("mib", [4096, 16384])
def test_full_hepc_gets_the_large_n_plan(mib):
    plan = make("regression", "squared").plan(Budget.from_mib("b", mib, 0), 1_844_332, 10)
    assert (plan["n_components"], plan["block_size"]) == (1536, 2048)
    assert plan["est_bytes"] == joker_inexact_bytes(1_844_332, 10, 2048, 1536, 4)
    assert "large_n = 100000" in plan["plan_reason"] and "block <= 2048" in plan["plan_reason"]


@pytest.mark.parametrize("n", [196_045, 250_000])  # full Skin and more
def test_a_kinked_loss_keeps_small_blocks_at_large_n(n):
    plan = make("binary", "squared_hinge").plan(Budget.from_mib("b", 4096, 0), n, 3)
    assert (plan["n_components"], plan["block_size"]) == (1536, 256)
    assert "M <= 1536" in plan["plan_reason"] and "block <=" not in plan["plan_reason"]


@pytest.mark.parametrize("n,task,loss", [(49_990, "binary", "squared_hinge"), (99_999, "regression", "squared"),
                                         (20_000, "regression", "squared")])
def test_below_large_n_the_plan_is_unchanged(n, task, loss):
    plan = make(task, loss).plan(Budget.from_mib("b", 4096, 0), n, 10)
    assert (plan["n_components"], plan["block_size"]) == (4096, 256)
    assert plan["plan_reason"].startswith("CPU caps")


def test_the_rule_yields_to_the_budget_and_to_fixed_options():
    n, d = 1_844_332, 10
    # 128 MiB: M = 2048 with blocks of 2048 needs 118 MiB of data and vectors + 16 MiB: the halvings go on
    plan = make("regression", "squared").plan(Budget.from_mib("b", 128, 0), n, d)
    assert plan["est_bytes"] <= 128 * 2**20
    assert plan["est_bytes"] == joker_inexact_bytes(n, d, plan["block_size"], plan["n_components"], 4)
    assert plan["n_components"] <= 2048 and plan["block_size"] < 2048
    fixed = make("regression", "squared", n_components=4096).plan(Budget.from_mib("b", 4096, 0), n, d)
    assert (fixed["n_components"], fixed["block_size"]) == (4096, 2048)
    assert fixed["plan_reason"].startswith("fixed by the options (the other: CPU, n = 1844332")
    off = make("regression", "squared", large_n=10**9).plan(Budget.from_mib("b", 4096, 0), n, d)
    assert (off["n_components"], off["block_size"]) == (4096, 256)


def test_the_large_n_plan_caps_the_cg_budget_unless_solver_options_say_otherwise():
    n, d = 1_844_332, 10
    adapter = make("regression", "squared")
    plan = adapter.plan(Budget.from_mib("b", 4096, 0), n, d)
    assert plan["max_cg_iter"] == 10 and "at most 10 CG iterations" in plan["plan_reason"]
    assert adapter._estimator_kwargs(n)["solver_options"] == {"max_cg_iter": 10}
    own = make("regression", "squared", solver_options={"max_cg_iter": 40, "cg_rtol": 0.1})
    own.plan(Budget.from_mib("b", 4096, 0), n, d)
    assert own._estimator_kwargs(n)["solver_options"] == {"max_cg_iter": 40, "cg_rtol": 0.1}
    small = make("regression", "squared")
    assert "max_cg_iter" not in small.plan(Budget.from_mib("b", 4096, 0), 20_000, d)
    assert "solver_options" not in small._estimator_kwargs(20_000)
    hinge = make("binary", "squared_hinge")
    assert "max_cg_iter" not in hinge.plan(Budget.from_mib("b", 4096, 0), 250_000, 3)


@pytest.mark.parametrize("key", ["large_n", "large_n_components", "large_n_cg_iter", "max_components"])
@pytest.mark.parametrize("value", [0, -1, 2.5, "abc", None, True])
def test_large_n_options_must_be_positive_integers(key, value):
    with pytest.raises(ValueError, match=f"option {key} must be an integer >= 1"):
        make("regression", "squared", **{key: value})


@pytest.mark.parametrize("key", ["large_n", "large_n_max_M", "max_M"])
def test_falkon_plan_options_must_be_positive_integers(key):
    from baselines.falkon import FalkonAdapter

    for value in (0, -5, "x", None):
        with pytest.raises(ValueError, match=f"option {key} must be an integer >= 1"):
            FalkonAdapter(task="regression", loss="squared", sigma=1.0, lam=1.0, **{key: value})


def test_libsvm_cache_leaves_room_for_what_libsvm_allocates_beside_it():
    """Full Skin at cpu-4g (issue 40's scale=full run): a 3,926 MiB cache planned at 3,948 MiB took 4,036 MiB of
    fit RSS and the trial ended over_budget (peak 4,185 MiB). The plan now counts CACHE_OVERHEAD per cache byte."""
    from baselines.libsvm import CACHE_OVERHEAD, LibSVMAdapter

    n, d = 196_045, 3
    budget = Budget("cpu-4g", 4_140_527_616)  # the run's budget: 4 GiB less the trial's baseline RSS
    plan = LibSVMAdapter(task="binary", loss="hinge", sigma=1.0, lam=1.0).plan(budget, n, d)
    fixed = 8 * n * d + 12 * 8 * n
    assert plan["cache_size_mib"] == float((4_140_527_616 - fixed) // (CACHE_OVERHEAD * 2**20))
    assert plan["est_bytes"] == int(fixed + CACHE_OVERHEAD * plan["cache_size_mib"] * 2**20) <= budget.host_bytes
    # what that run measured fits under the new plan: 4,036 MiB at 3,926 MiB of cache scales to this cache
    assert 4036 / 3926 * plan["cache_size_mib"] * 2**20 + 148 * 2**20 < 4096 * 2**20


def test_torchkm_nystrom_bytes_counts_both_moments_of_upstreams_fit():
    """Full Skin at cpu-4g (n = 196,045, d = 3, L = 2,000, k = 1,000) took 3,795 MiB of fit RSS against 3,104
    planned: the float32 product of ``torch.mm(Cmat, M).double()`` beside Cmat and its float64 copy was missing."""
    from baselines.torchkm import torchkm_nystrom_bytes, torchkm_plan

    n, d, L, k = 196_045, 3, 2000, 1000
    fixed = 12 * n * d + 160 * n + 32 * (k + 1) ** 2 + 12 * L ** 2
    assert torchkm_nystrom_bytes(n, d, L, k) == fixed + 4 * n * L + 12 * n * k  # the product moment is larger
    assert round(torchkm_nystrom_bytes(n, d, L, k) / 2**20) == 3852
    # a wide rank-1 model: kernelMult's two n x L float32 arrays are the peak
    assert torchkm_nystrom_bytes(n, d, L, 1) == 12 * n * d + 160 * n + 32 * 4 + 12 * L ** 2 + 8 * n * L
    # 3,852 MiB does not fit 3,800 MiB: the plan halves landmarks and rank together
    plan = torchkm_plan(3800 * 2**20, n, d, "nystrom", L, k)
    assert (plan["num_landmarks"], plan["nys_k"]) == (1000, 500)
    assert plan["est_bytes"] == torchkm_nystrom_bytes(n, d, 1000, 500) <= 3800 * 2**20


def test_torchkm_nystrom_predicts_in_row_blocks_with_the_same_decision(monkeypatch):
    """Upstream's ``transform`` forms the n_test x L kernel at once (1.7 GiB on full ijcnn1's 91,701 test rows);
    the adapter calls it on blocks of PREDICT_BLOCK_BYTES // (8 L + 12 k) rows, with the same decision."""
    from adapterutil import higgs_problem, require

    cls = require("torchkm")
    import torch

    import baselines.torchkm as tk

    p = higgs_problem()
    adapter = cls(task="binary", loss="hinge", sigma=p.sigma, lam=0.1, mode="nystrom", num_landmarks=200, nys_k=100)
    adapter.fit(p.Xtr, p.ytr)
    whole = (adapter._nystrom.transform(torch.from_numpy(np.array(p.Xte))).numpy() @ adapter._alpha.numpy()
             + adapter._intercept)
    calls = []
    transform = adapter._nystrom.transform
    monkeypatch.setattr(adapter._nystrom, "transform", lambda X: calls.append(X.shape[0]) or transform(X))
    monkeypatch.setattr(tk, "PREDICT_BLOCK_BYTES", (8 * 200 + 12 * 100) * 64 + 5)  # 64 rows a block
    got = adapter.decision_function(p.Xte)
    assert calls == [64] * (len(p.Xte) // 64) + ([len(p.Xte) % 64] if len(p.Xte) % 64 else [])
    np.testing.assert_allclose(got, whole, rtol=1e-10, atol=1e-10)
