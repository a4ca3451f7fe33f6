"""The method's memory (joker.bench.measure.fitmem): pre-fit work does not count, the fit's allocations do."""

import subprocess
import sys
import textwrap

import pytest

MIB = 2**20

_CHILD = textwrap.dedent("""
    import sys, numpy as np
    from joker.bench.measure.fitmem import FitMemory
    keep = sys.argv[1] == "keep"
    pre = np.ones(2**27)          # 1 GiB of pre-fit work (float64)
    if not keep:
        del pre
    meter = FitMemory().start()
    fit = np.ones(100 * 2**20 // 8)   # the "fit" allocates 100 MiB
    fit += 1.0
    r = meter.stop()
    print(r.fit_bytes, r.peak, r.baseline, r.method)
""")


@pytest.mark.parametrize("pre_fit", ["keep", "free"])
def test_fit_memory_ignores_a_1gib_pre_fit_allocation(pre_fit):
    out = subprocess.run([sys.executable, "-c", _CHILD, pre_fit], capture_output=True, text=True, check=True)
    fit_bytes, peak, baseline, method = out.stdout.split()
    assert method == "vmhwm-reset"
    assert abs(int(fit_bytes) / MIB - 100) <= 40, out.stdout
    if pre_fit == "keep":
        assert int(baseline) > 1000 * MIB  # the data stay resident and are in the baseline, not the figure


def test_fit_memory_of_nothing_is_small():
    from joker.bench.measure.fitmem import FitMemory

    r = FitMemory().start().stop()
    assert 0 <= r.fit_bytes < 8 * MIB
    assert r.peak >= r.baseline > 0


class _Node:
    """A reference cycle (self.me = self): only the cyclic collector frees it."""

    def __init__(self):
        self.me = self


def test_freeze_survivors_collects_garbage_first_and_later_cycles_are_still_collected():
    import gc
    import weakref

    from joker.bench.measure.fitmem import freeze_survivors, release_free_memory

    gc.disable()  # no automatic collection between the steps
    try:
        dropped = _Node()
        dead_before = weakref.ref(dropped)
        del dropped
        kept = _Node()
        freeze_survivors()
        assert dead_before() is None  # garbage at the call is collected, not frozen
        assert gc.get_freeze_count() > 0
        later = _Node()
        dead_after = weakref.ref(later)
        del later
        release_free_memory()
        assert dead_after() is None  # a cycle made after the freeze is collected as before
        assert kept.me is kept
    finally:
        gc.unfreeze()
        gc.enable()
