"""The ``sodm`` adapter: memory plan (exact, random-feature fallback, refusal), levels, convergence report."""

from __future__ import annotations

import numpy as np
import pytest

from adapterutil import BUDGET_256, contract_adapter
from baselines.base import AdapterError, Budget
from baselines.joker_solver import joker_exact_bytes
from baselines.sodm import sodm_bytes


def test_sodm_bytes_is_the_largest_concurrent_level_plus_data_and_landmarks():
    # level 0: 1 x 1000 rows; level 1: 2 jobs x 500; level 2: 2 jobs (of 4 partitions) x 250
    assert sodm_bytes(1000, 10, 2, 2, 5, 8, lambda rows: rows) == 1000 + 8 * (1000 * 10 + 1000 * 5)
    assert sodm_bytes(1000, 10, 2, 4, 5, 8, lambda rows: rows * rows) == 1000 ** 2 + 8 * 15000


def test_plan_is_exact_when_the_full_problem_fits(higgs):
    n, d = higgs.Xtr.shape
    plan = contract_adapter("sodm", higgs.sigma).plan(BUDGET_256, n, d)
    assert plan["n_components"] is None and plan["block_size"] == 256
    # never less than exact Joker's own working set on the full problem (level 0)
    assert plan["est_bytes"] >= joker_exact_bytes(n, d, 256, 8)


def test_plan_falls_back_to_random_features_or_refuses():
    # 1,000,000 x 4 in 520 MiB: the exact kernel needs 595 MiB at its smallest block (16),
    # random features 465 MiB at M = 64, so the plan is random features.
    budget = Budget.from_mib("b", 520)
    plan = contract_adapter("sodm", 1.0, n_jobs=2).plan(budget, 1_000_000, 4)
    assert plan["n_components"] is not None and plan["est_bytes"] <= budget.host_bytes
    with pytest.raises(AdapterError, match="cannot hold"):
        contract_adapter("sodm", 1.0, n_jobs=2, rff_fallback=False).plan(budget, 1_000_000, 4)
    with pytest.raises(AdapterError, match="cannot hold"):
        contract_adapter("sodm", 1.0, n_jobs=2).plan(Budget.from_mib("b", 400), 1_000_000, 4)


def test_levels_shrink_to_the_smallest_class_and_history_has_one_row_per_level(higgs):
    X, y = higgs.Xtr[:300], higgs.ytr[:300]
    adapter = contract_adapter("sodm", higgs.sigma, levels=12)
    adapter.plan(BUDGET_256, *X.shape)
    adapter.fit(X, y)
    smallest = int(min(np.sum(y > 0), np.sum(y < 0)))
    levels = int(np.floor(np.log2(smallest)))
    conv = adapter.convergence()
    assert adapter.describe()["conversions"]["levels"] == levels
    assert [h["level"] for h in conv["history"]] == list(range(levels, -1, -1))
    assert [h["n_partitions"] for h in conv["history"]] == [2 ** lv for lv in range(levels, -1, -1)]
    assert conv["final"] == conv["history"][-1]["gap"] == conv["dual_gap"]
    assert conv["converged"] == (conv["dual_gap"] <= 1e-3 and conv["kkt_residual"] <= 1e-3 ** 0.5)
    assert adapter.describe()["conversions"]["lambda_odm"] == pytest.approx(300 / 0.1)


def test_an_exact_plan_gives_sodm_exact_jokers_kernel_cache_and_the_fit_uses_it(higgs):
    n, d = higgs.Xtr.shape
    plan = contract_adapter("sodm", higgs.sigma).plan(BUDGET_256, n, d)
    spare = BUDGET_256.host_bytes - plan["est_bytes"]
    # half of what the budget leaves beside the working set, at most the n x n kernel (joker_cache_plan)
    assert plan["cache_size"] * 2**20 == pytest.approx(min(spare // 2, n * n * 8))
    assert plan["cache_rows"] == min(n, int(plan["cache_size"] * 2**20) // (n * 8))
    X, y = higgs.Xtr[:600], higgs.ytr[:600]
    adapter = contract_adapter("sodm", higgs.sigma, levels=2, n_jobs=1)
    small = adapter.plan(BUDGET_256, *X.shape)
    adapter.fit(X, y)
    final = adapter.model_.model_
    assert final.cache_size == pytest.approx(small["cache_size"])
    assert final.cache_size_ == pytest.approx(600 * 600 * 8 / 2**20)  # 600 rows: the whole kernel is cached
    fixed = contract_adapter("sodm", higgs.sigma, levels=2, n_jobs=1, cache_size=0.0)
    assert fixed.plan(BUDGET_256, *X.shape)["cache_size"] == 0.0
    fixed.fit(X, y)
    assert fixed.model_.model_.cache_size_ == 0.0
    np.testing.assert_allclose(adapter.decision_function(higgs.Xte), fixed.decision_function(higgs.Xte),
                               rtol=0, atol=1e-9)
