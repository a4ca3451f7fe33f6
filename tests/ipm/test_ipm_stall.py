"""The IPM's stall rule: only a flat gap in the end game stops it."""

from __future__ import annotations

from joker.ipm.solver import _stalled


def _hist(gaps):
    return [{"gap": g} for g in gaps]


def test_slow_start_is_not_a_stall():
    # the first iterations of the n = 20,000, k = 200 benchmark fit (gap still ~1)
    gaps = [1.57, 1.56, 1.54, 1.48, 1.46, 1.34, 1.21, 1.10, 0.935, 0.772, 0.624, 0.443]
    assert not any(_stalled(_hist(gaps[:i])) for i in range(1, len(gaps) + 1))


def test_flat_end_game_is_a_stall():
    # float32 at tol 1e-8: the gap wanders at its rounding floor
    gaps = [1e-2, 1e-3, 2.6e-6, 1.5e-7, 1.5e-8, 9.3e-8, 3.1e-8, 6.2e-8, 1.9e-7, 2.2e-7, 6.2e-8]
    assert _stalled(_hist(gaps))
    assert not _stalled(_hist(gaps[:-2]))  # fewer than 2 x 5 iterations: too early to judge
