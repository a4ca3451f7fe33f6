"""A method's GPU memory: one definition for plans, the allocator cap, over_budget and the report.

Definition (``docs/contracts.md``, "GPU memory of a method")::

    method GPU memory = NVML per-process peak - CUDA-context baseline

The context baseline is what NVML attributes to the trial process right
after CUDA is initialised on the trial's device, minus what torch's
caching allocator holds at that moment (about 680 MiB on an H200 with
torch 2.11 + CUDA 13: driver context, module images; it does not depend on
the method). The GPU budget bounds the method's figure, never the context:

- ``plan()`` gets :func:`plan_room`: the budget minus what the allocator
  already holds when the plan is made (warm-up leftovers);
- the per-process memory fraction of torch's allocator is
  :func:`memory_fraction`: the budget over the device's total memory (the
  allocator never holds the context, so the cap is the budget itself);
- a trial is ``over_budget`` when :func:`over_budget_reason` says so;
- the report shows ``fit_gpu_mib`` = :func:`method_bytes` in MiB.

Without an NVML reading for the process (no NVML, or a PID namespace that
hides the process from NVML) the method's figure falls back to the
allocator's reserved peak (``torch_reserved_gpu_mib``), a lower bound that
misses memory allocated outside torch; with neither, to the NVML peak (an
upper bound that includes the context).

The module is pure arithmetic plus one measuring function,
:func:`measure_context`, whose NVML reader and torch module are injected so
that tests run without a GPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from ..records.record import MIB

__all__ = ["GpuMemory", "measure_context", "memory_fraction", "method_bytes", "over_budget_reason", "plan_room"]


def _check_bytes(label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{label} must be a non-negative integer number of bytes, got {value!r}")
    return value


def method_bytes(nvml_peak: int | None, context: int | None, allocator_reserved_peak: int | None = None) -> int | None:
    """The method's GPU memory in bytes: NVML per-process peak minus the context baseline.

    Parameters
    ----------
    nvml_peak : int or None
        Largest NVML per-process GPU memory of the trial (bytes).
    context : int or None
        CUDA-context baseline of the process (bytes), see :func:`measure_context`.
    allocator_reserved_peak : int or None
        torch's ``max_memory_reserved`` (bytes), the fallback when NVML or
        the baseline is missing.

    Returns
    -------
    int or None
        ``max(0, nvml_peak - context)``; else ``allocator_reserved_peak``
        (a lower bound); else ``nvml_peak`` (an upper bound: it includes the
        context); ``None`` when nothing was measured.

    Raises
    ------
    ValueError
        If a given size is negative or not an integer.
    """
    for label, value in (("nvml_peak", nvml_peak), ("context", context),
                         ("allocator_reserved_peak", allocator_reserved_peak)):
        if value is not None:
            _check_bytes(label, value)
    if nvml_peak and context is not None:
        return max(0, nvml_peak - context)
    if allocator_reserved_peak is not None:
        return allocator_reserved_peak
    return nvml_peak or None


def memory_fraction(budget_bytes: int, total_bytes: int) -> float:
    """Fraction for ``torch.cuda.set_per_process_memory_fraction``: the budget over the device's memory.

    torch caps its caching allocator at ``fraction * total_bytes``; the
    allocator never holds the CUDA context, so the cap equals the method's
    budget and the context stays outside it, as in :func:`method_bytes`.

    Raises
    ------
    ValueError
        If ``total_bytes`` is 0 or a size is not a non-negative integer.
    """
    _check_bytes("budget_bytes", budget_bytes)
    if _check_bytes("total_bytes", total_bytes) == 0:
        raise ValueError("total_bytes must be > 0")
    return min(1.0, budget_bytes / total_bytes)


def plan_room(budget_bytes: int, held_bytes: int) -> int:
    """GPU bytes ``plan()`` may spend: the budget minus what the allocator already holds (at least 0).

    Raises
    ------
    ValueError
        If a size is not a non-negative integer.
    """
    return max(0, _check_bytes("budget_bytes", budget_bytes) - _check_bytes("held_bytes", held_bytes))


def over_budget_reason(method: int | None, budget_bytes: int | None) -> str:
    """One-line reason when the method's GPU memory passes its budget, else ``""``.

    Parameters
    ----------
    method : int or None
        :func:`method_bytes` of the trial (``None``: not measured, never over).
    budget_bytes : int or None
        The GPU budget (``None`` or 0: unlimited).
    """
    if not budget_bytes or method is None or method <= budget_bytes:
        return ""
    return (f"method GPU memory {method / MIB:.0f} MiB (NVML peak minus CUDA context) > GPU budget "
            f"{budget_bytes / MIB:.0f} MiB")


@dataclass(frozen=True)
class GpuMemory:
    """What a GPU trial records about GPU memory (bytes; ``None`` when not measured).

    Parameters
    ----------
    context : int or None
        CUDA-context baseline (:func:`measure_context`).
    nvml_peak : int or None
        NVML per-process peak over the trial (sampled by the parent).
    allocator_peak : int or None
        torch's ``max_memory_allocated``.
    allocator_reserved_peak : int or None
        torch's ``max_memory_reserved``.
    """

    context: int | None = None
    nvml_peak: int | None = None
    allocator_peak: int | None = None
    allocator_reserved_peak: int | None = None

    @classmethod
    def from_metrics(cls, metrics: dict[str, float], nvml_peak: int | None = None) -> "GpuMemory":
        """Read the child's metrics (``gpu_context_mib``, ``torch_peak_gpu_mib``, ``torch_reserved_gpu_mib``)."""
        def mib(key: str) -> int | None:
            value = metrics.get(key)
            return None if value is None else int(round(float(value) * MIB))

        return cls(mib("gpu_context_mib"), nvml_peak, mib("torch_peak_gpu_mib"), mib("torch_reserved_gpu_mib"))

    @property
    def method(self) -> int | None:
        """int or None: the method's GPU memory (:func:`method_bytes`)."""
        return method_bytes(self.nvml_peak, self.context, self.allocator_reserved_peak)

    def metrics(self) -> dict[str, float]:
        """Record metrics in MiB: ``fit_gpu_mib``, ``gpu_context_mib``, ``peak_gpu_mib``, ``torch_peak_gpu_mib``."""
        out = {}
        for key, value in (("fit_gpu_mib", self.method), ("gpu_context_mib", self.context),
                           ("peak_gpu_mib", self.nvml_peak), ("torch_peak_gpu_mib", self.allocator_peak)):
            if value is not None:
                out[key] = value / MIB
        return out


def measure_context(ordinal: int, used_by: Callable[[set[int]], int] | None, torch: Any = None) -> int | None:
    """Initialise CUDA on device ``ordinal`` and return this process's context baseline in bytes.

    Baseline = NVML's per-process memory of this process right after
    initialisation minus what torch's allocator reserves then (a one-element
    tensor makes the context and the allocator real).

    Parameters
    ----------
    ordinal : int
        CUDA device ordinal.
    used_by : callable or None
        ``used_by({pid}) -> bytes`` (NVML, e.g. ``joker.bench.measure.meters.open_nvml().used_by``);
        ``None``: no NVML here.
    torch : module, optional
        The torch module (injected by tests); imported when omitted.

    Returns
    -------
    int or None
        The baseline, or ``None`` without NVML or when NVML does not see
        this process (0 bytes reported).
    """
    if torch is None:
        import torch
    torch.zeros(1, device=f"cuda:{ordinal}")
    torch.cuda.synchronize(ordinal)
    if used_by is None:
        return None
    used = int(used_by({os.getpid()}))
    if used <= 0:
        return None
    return max(0, used - int(torch.cuda.memory_reserved(ordinal)))
