"""The budget of one trial (memory and seconds) and the one MiB conversion of the project.

An adapter's plan (:meth:`baselines.base.Adapter.plan`) sizes the method's
knobs to a :class:`Budget`; :func:`budget_error` is the one message of a
budget too small for the smallest setting. numpy-free.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

__all__ = ["DTYPE_BYTES", "MIB", "Budget", "budget_error", "format_mib", "mib_to_bytes"]

#: Bytes per element of the floating dtypes an adapter may be asked for.
DTYPE_BYTES = {"float32": 4, "float64": 8}
#: One mebibyte in bytes (ThunderSVM's ``max_mem_size`` and LIBSVM's ``cache_size`` are in MiB).
MIB = 1 << 20


def mib_to_bytes(mib: float | None) -> int | None:
    """Convert a size in MiB (``1 MiB = 2**20`` bytes) to whole bytes; ``None`` stays ``None``.

    The one MiB -> bytes conversion of the project (configs are in MiB,
    everything after them in bytes).

    Raises
    ------
    ValueError
        If ``mib`` is not a real number (bool included).
    """
    if mib is None:
        return None
    if isinstance(mib, bool) or not isinstance(mib, numbers.Real):
        raise ValueError(f"a size in MiB must be a number, got {mib!r}")
    return int(mib * MIB)


@dataclass(frozen=True)
class Budget:
    """Memory budget of one trial.

    Parameters
    ----------
    name : str
        Budget name as in the ``budget/`` config group (logged with the trial).
    host_bytes : int
        Host (CPU) memory the solver may use, in bytes. Must be > 0.
    gpu_bytes : int, default 0
        GPU memory the solver may use, in bytes (0 on CPU-only trials).
    total_bytes : int or None, default None
        The whole host budget of the trial when ``host_bytes`` is what is
        left of it after the process's own pre-fit memory (only used to
        explain a budget that is too small).
    held_bytes : int or None, default None
        Host memory the process already held before the fit (same use).
    time_s : float or None, default None
        Seconds left for fit and prediction when the plan is made (the
        trial's wall-clock limit minus what it already spent). The CPU plan
        of every method whose model size sets its time (Falkon's ``M``,
        EigenPro's centres and epochs, the low-rank IPM's rank, Joker's
        ``M``) keeps its predicted fit within
        :data:`baselines.planning.FIT_TIME_SHARE` of it, the same rule for
        every method of a cell; ``None``: no limit from the trial (no
        per-method time target exists: ``docs/contracts.md``, "One budget per
        cell").

    Raises
    ------
    ValueError
        If a size is negative, not an integer, or ``host_bytes`` is 0; if
        ``time_s`` is not a positive finite number or None.
    """

    name: str
    host_bytes: int
    gpu_bytes: int = 0
    total_bytes: int | None = None
    held_bytes: int | None = None
    time_s: float | None = None

    def __post_init__(self) -> None:
        if self.time_s is not None and (isinstance(self.time_s, bool) or not isinstance(self.time_s, numbers.Real)
                                        or not math.isfinite(self.time_s) or self.time_s <= 0):
            raise ValueError(f"Budget.time_s must be a positive number of seconds or None, got {self.time_s!r}")
        for field in ("host_bytes", "gpu_bytes"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"Budget.{field} must be a non-negative integer number of bytes, got {value!r}")
        if self.host_bytes == 0:
            raise ValueError("Budget.host_bytes must be > 0")

    @classmethod
    def from_mib(cls, name: str, host_mib: float, gpu_mib: float = 0) -> "Budget":
        """Build a budget from sizes in MiB (``1 MiB = 2**20`` bytes)."""
        return cls(name, mib_to_bytes(host_mib), mib_to_bytes(gpu_mib))

    @classmethod
    def default(cls) -> "Budget":
        """The budget used when :meth:`Adapter.fit` runs before :meth:`Adapter.plan`: 1 GiB host, 1 GiB GPU."""
        return cls("default", 1024 * MIB, 1024 * MIB)


def budget_error(name: str, budget: Budget, on_gpu: bool, est_bytes: int, n: int, d: int, knobs: str = "") -> str:
    """The one-line message of a budget too small for a method's smallest setting.

    Names the budget and its size; for a host budget that the trial reduced
    by the process's pre-fit memory (``budget.total_bytes`` and
    ``held_bytes`` set), also what the process held and what remained.

    Parameters
    ----------
    name : str
        Solver id.
    budget : Budget
    on_gpu : bool
        Whether the limit is the GPU share.
    est_bytes : int
        The adapter's estimate of its smallest setting, bytes.
    n, d : int
        Training rows and features.
    knobs : str
        The smallest setting's knobs (e.g. ``"M=11536"``), appended to the sizes.

    Returns
    -------
    str
        E.g. ``"libsvm: budget 'cpu-1g' (300 MiB): the process already held
        398 MiB before the fit, leaving 0 MiB, which cannot hold the smallest
        setting (estimated 2 MiB for n=5000, d=22)"``.
    """
    need = (f"cannot hold the smallest setting (estimated {format_mib(est_bytes)} for n={n}, d={d}"
            + (f", {knobs})" if knobs else ")"))
    if on_gpu:
        return f"{name}: budget {budget.name!r} ({format_mib(budget.gpu_bytes)} of GPU memory) {need}"
    if budget.total_bytes is not None and budget.held_bytes is not None:
        left = max(0, budget.total_bytes - budget.held_bytes)
        return (f"{name}: budget {budget.name!r} ({budget.total_bytes / MIB:.0f} MiB): the process already held "
                f"{budget.held_bytes / MIB:.0f} MiB before the fit, leaving {left / MIB:.0f} MiB, which {need}")
    return f"{name}: budget {budget.name!r} ({budget.host_bytes / MIB:.0f} MiB) {need}"


def format_mib(size: int) -> str:
    """A size in MiB for messages: whole MiB from 10 MiB up, three significant digits below."""
    return f"{size / MIB:.0f} MiB" if size >= 10 * MIB else f"{size / MIB:.3g} MiB"
