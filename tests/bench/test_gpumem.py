"""The one definition of a method's GPU memory (joker.bench.measure.gpumem), with a fake NVML and fake torch.

Figures from the H200 run of issue 14: a CUDA context of about 680 MiB,
Joker's allocator peak 295 MiB, NVML peak 1,074 MiB at budget gpu-2g.
"""

from __future__ import annotations

import os
import types

import pytest

from joker.bench.measure import gpumem
from joker.bench.measure.gpumem import GpuMemory, measure_context, memory_fraction, method_bytes, over_budget_reason, plan_room
from joker.bench.records.record import MIB
from joker.bench.trials.runner import Outcome, classify

H200_TOTAL = 150_754_820_096  # bytes, torch.cuda.get_device_properties(0).total_memory on an H200 (141 GB)


class FakeCuda:
    """torch.cuda stand-in: the allocator reserves ``reserved`` bytes once a tensor exists."""

    def __init__(self, reserved: int) -> None:
        self.reserved, self.synced = reserved, []

    def synchronize(self, ordinal: int) -> None:
        self.synced.append(ordinal)

    def memory_reserved(self, ordinal: int) -> int:
        return self.reserved


class FakeTorch:
    def __init__(self, reserved: int) -> None:
        self.cuda = FakeCuda(reserved)
        self.devices: list[str] = []

    def zeros(self, n: int, device: str) -> None:
        self.devices.append(device)


class FakeNvml:
    """NVML stand-in: per-process GPU memory by PID."""

    def __init__(self, by_pid: dict[int, int]) -> None:
        self.by_pid = by_pid

    def used_by(self, pids: set[int]) -> int:
        return sum(self.by_pid.get(p, 0) for p in pids)


def test_method_memory_is_nvml_peak_minus_context():
    assert method_bytes(1074 * MIB, 680 * MIB, 300 * MIB) == 394 * MIB
    assert method_bytes(600 * MIB, 680 * MIB) == 0  # never negative
    # fallbacks: the allocator's reserved peak (lower bound), then the NVML peak (upper bound)
    assert method_bytes(1074 * MIB, None, 300 * MIB) == 300 * MIB
    assert method_bytes(1074 * MIB, None, None) == 1074 * MIB
    assert method_bytes(None, None, None) is None
    with pytest.raises(ValueError, match="context must be a non-negative integer"):
        method_bytes(1, -5)


def test_memory_fraction_caps_the_allocator_at_the_budget():
    frac = memory_fraction(2048 * MIB, H200_TOTAL)
    assert frac * H200_TOTAL == pytest.approx(2048 * MIB)
    assert memory_fraction(10 * H200_TOTAL, H200_TOTAL) == 1.0
    with pytest.raises(ValueError, match="total_bytes must be > 0"):
        memory_fraction(1, 0)


def test_plan_room_and_over_budget():
    assert plan_room(2048 * MIB, 20 * MIB) == 2028 * MIB
    assert plan_room(MIB, 2 * MIB) == 0
    assert over_budget_reason(2048 * MIB, 2048 * MIB) == ""
    assert over_budget_reason(None, 2048 * MIB) == ""
    assert over_budget_reason(4096 * MIB, None) == ""
    assert over_budget_reason(2206 * MIB, 2048 * MIB) == (
        "method GPU memory 2206 MiB (NVML peak minus CUDA context) > GPU budget 2048 MiB")


def test_measure_context_with_fake_nvml_and_torch():
    torch = FakeTorch(reserved=2 * MIB)
    nvml = FakeNvml({os.getpid(): 682 * MIB, 1: 10_000 * MIB})
    assert measure_context(1, nvml.used_by, torch) == 680 * MIB
    assert torch.devices == ["cuda:1"] and torch.cuda.synced == [1]
    assert measure_context(0, None, FakeTorch(0)) is None           # no NVML
    assert measure_context(0, FakeNvml({}).used_by, FakeTorch(0)) is None  # NVML does not see this PID


def test_record_metrics_from_the_child_and_the_parent():
    child = {"gpu_context_mib": 680.0, "torch_peak_gpu_mib": 295.0, "torch_reserved_gpu_mib": 320.0}
    mem = GpuMemory.from_metrics(child, nvml_peak=1074 * MIB)
    assert mem.method == 394 * MIB
    assert mem.metrics() == {"fit_gpu_mib": 394.0, "gpu_context_mib": 680.0, "peak_gpu_mib": 1074.0,
                             "torch_peak_gpu_mib": 295.0}
    assert GpuMemory.from_metrics({}).metrics() == {}


def test_classify_judges_the_method_memory_not_the_context():
    """Joker on HEPC at gpu-2g: NVML 2,600 MiB is within budget once the 680 MiB context is taken off."""
    ok = {"status": "ok", "reason": "", "metrics": {"gpu_context_mib": 680.0}}
    assert classify(Outcome(result=ok, peak_gpu_bytes=2600 * MIB), None, 2048 * MIB)["status"] == "ok"
    v = classify(Outcome(result=ok, peak_gpu_bytes=2886 * MIB), None, 2048 * MIB)
    assert v == {"status": "over_budget",
                 "reason": "method GPU memory 2206 MiB (NVML peak minus CUDA context) > GPU budget 2048 MiB"}


def test_trial_child_sets_fraction_and_context(monkeypatch):
    """trial._cuda_setup: the context metric and the allocator fraction, with fakes for torch and NVML."""
    from joker.bench.measure import meters
    from joker.bench.trials import trial

    fractions = []
    fake = FakeTorch(reserved=0)
    fake.cuda.get_device_properties = lambda idx: types.SimpleNamespace(total_memory=H200_TOTAL)
    fake.cuda.set_per_process_memory_fraction = lambda frac, idx: fractions.append((frac, idx))
    monkeypatch.setitem(__import__("sys").modules, "torch", fake)
    monkeypatch.setattr(meters, "open_nvml", lambda: types.SimpleNamespace(
        used_by=FakeNvml({os.getpid(): 680 * MIB}).used_by, close=lambda: None))
    spec = types.SimpleNamespace(device=types.SimpleNamespace(ordinal=0),
                                 budget=types.SimpleNamespace(gpu_bytes=2048 * MIB))
    metrics: dict[str, float] = {}
    trial._cuda_setup(spec, metrics)
    assert metrics == {"gpu_context_mib": 680.0}
    assert fractions == [(pytest.approx(2048 * MIB / H200_TOTAL), 0)]
    assert gpumem.memory_fraction(2048 * MIB, H200_TOTAL) == fractions[0][0]


def test_too_small_gpu_budget_ends_over_budget_before_the_fit(tmp_path):
    """The trial child on a CUDA spec whose GPU budget holds nothing: over_budget with the arithmetic, no crash.

    Runs on a machine without a GPU too: the plan is refused before the fit
    would ask for the device.
    """
    from baselines.device import Device
    from joker.bench.trials import trial
    from joker.bench.config.spec import TrialBudget, TrialDataset, TrialMethod, TrialSpec

    spec = TrialSpec(
        sweep="t", scale="smoke", repetition=0, base_seed=0, seed=0, data_seed=0, threads=1,
        device=Device.parse("cuda"), timeout_s=60, lam=1.0, sigma=1.0,
        dataset=TrialDataset("_test_tiny", "binary", 200, 100, "random", "test_accuracy",
                             loader="tests/bench/fakes.py:load_tiny"),
        method=TrialMethod("joker-exact", "squared_hinge", "gaussian", "float64", {}, warmup=False),
        budget=TrialBudget("gpu-1k", None, 1024),
    )
    res = {"status": "ok", "reason": "", "metrics": {}}
    trial.run(spec, trial.Progress(tmp_path / "progress.json"), res)
    # the smallest block: halvings of min(gpu_max_block_size, n) = 200, 100, 50, 25 (>= 16)
    est = 8 * (200 * 25 + 200 * 5 + 200 * 7 + 4 * 200 + 3 * 25 * 25 + 25 * 5)  # joker_exact_bytes(200, 5, 25, 8)
    assert res["status"] == "over_budget"
    assert res["reason"] == (f"joker-exact: budget 'gpu-1k' (0.000977 MiB of GPU memory) cannot hold the smallest setting "
                             f"(estimated {est / MIB:.3g} MiB for n=200, d=5, block_size=25)")
    assert "fit_seconds" not in res["metrics"]
