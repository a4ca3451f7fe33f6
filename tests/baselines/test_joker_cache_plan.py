"""The joker-exact plan derives the kernel row cache (estimator cache_size) from the budget."""

from __future__ import annotations

import pytest

from baselines import METHODS
from baselines.base import Budget
from baselines.joker_solver import joker_cache_plan, joker_exact_bytes

MIB = 2**20


def _adapter(**options):
    return METHODS["joker-exact"](task="binary", loss="hinge", sigma=1.0, lam=1.0, seed=0, dtype="float64", **options)


def test_whole_kernel_when_it_fits():
    plan = _adapter().plan(Budget.from_mib("b", 1024), 5000, 40)
    assert plan["cache_whole"] and plan["cache_rows"] == 5000
    assert plan["cache_bytes"] == 5000 * 5000 * 8
    assert plan["cache_size"] == pytest.approx(5000 * 5000 * 8 / MIB)


def test_part_of_the_kernel_is_half_the_spare_memory():
    plan = _adapter().plan(Budget.from_mib("b", 256), 20000, 40)
    spare = 256 * MIB - joker_exact_bytes(20000, 40, plan["block_size"], 8)
    assert plan["cache_size"] == pytest.approx(spare / 2 / MIB)
    assert plan["cache_rows"] == int(spare // 2) // (20000 * 8) and not plan["cache_whole"]


def test_no_cache_on_few_features_unless_asked():
    """Below CACHE_MIN_FEATURES (32) features the plan follows the estimators' cache_size="auto": no rows kept."""
    from joker.estimators import CACHE_MIN_FEATURES

    assert CACHE_MIN_FEATURES == 32
    adapter = _adapter()
    plan = adapter.plan(Budget.from_mib("cpu-4g", 4096), 196_045, 3)  # full Skin
    assert plan["cache_size"] == 0 and plan["cache_rows"] == 0 and "d = 3 < 32" in plan["plan_reason"]
    assert adapter._estimator_kwargs(196_045)["cache_size"] == 0
    assert _adapter().plan(Budget.from_mib("b", 1024), 5000, 31)["cache_rows"] == 0
    assert _adapter().plan(Budget.from_mib("b", 1024), 5000, 32)["cache_whole"]
    asked = _adapter(cache_size=100.0).plan(Budget.from_mib("cpu-4g", 4096), 196_045, 3)
    assert asked["cache_size"] == 100.0 and asked["cache_rows"] == int(100 * MIB) // (196_045 * 8)


def test_the_option_wins_and_reaches_the_estimator():
    adapter = _adapter(cache_size=0)
    adapter.plan(Budget.from_mib("b", 1024), 300, 4)
    assert adapter.plan_["cache_size"] == 0 and adapter.plan_["cache_rows"] == 0
    assert adapter._estimator_kwargs(300)["cache_size"] == 0


def test_cache_plan_rows():
    assert joker_cache_plan(None, 10 * MIB, 100, 8) == {"cache_size": 80000 / MIB, "cache_bytes": 80000,
                                                         "cache_rows": 100, "cache_whole": True}
    assert joker_cache_plan(1.0, 0, 1000, 8)["cache_rows"] == 131
