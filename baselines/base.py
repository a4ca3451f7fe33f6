"""The adapter contract every solver of the benchmark follows.

One subclass of :class:`Adapter` per solver id (``docs/contracts.md``,
"baselines"). An adapter is a thin layer over an upstream library: it
validates input, converts the benchmark's conventions into the library's
parameters (``docs/design.md``, Conventions), picks the library's memory
knobs from a :class:`Budget`, calls the library, and checks what came back.
It never re-implements the method.

Conventions (the one source of each conversion is named where it is used):

- Gaussian kernel ``k(x, z) = exp(-||x - z||^2 / (2 sigma^2))``.
- ``lam`` is the paper's lambda for a *sum* of losses:
  ``P(f) = (lam / 2) ||f||^2 + sum_i loss(y_i, f(x_i))``.
- Binary labels are mapped to -1 / +1 with ``classes_[1] -> +1``, so
  ``decision_function(X) > 0`` means ``classes_[1]`` for every adapter.

The module imports numpy only; upstream libraries are imported inside the
adapters' methods, so ``import baselines`` stays cheap. Thread limits live
in :mod:`baselines.threads`, output capture in :mod:`baselines.runtime`, the
post-fit checks in :mod:`baselines.checks` (all re-exported here).
"""

from __future__ import annotations

import abc
import importlib
import importlib.metadata
import importlib.util
import math
import numbers
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from .checks import relative_plateau, trivial_predictor_check
from .device import Device
from .runtime import capture_output
from .threads import blas_threads, torch_threads

__all__ = [
    "Adapter",
    "AdapterError",
    "Budget",
    "BudgetError",
    "DivergedError",
    "FIT_TIME_SHARE",
    "GEMM_MARGIN",
    "RATE_CEILING",
    "WORK_CAPS",
    "budget_error",
    "DTYPE_BYTES",
    "MIB",
    "TASKS",
    "mib_to_bytes",
    "positive_float",
    "blas_threads",
    "capture_output",
    "relative_plateau",
    "torch_threads",
    "trivial_predictor_check",
]

#: Learning tasks of the benchmark (``docs/contracts.md``, "Tasks and losses").
TASKS = ("regression", "binary", "multiclass")
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

#: Training rows used by the post-fit checks (finite decision values, divergence).
CHECK_ROWS = 10_000

#: Share of the seconds left (``Budget.time_s``) that a time-aware CPU plan gives its predicted fit;
#: the rest is for prediction, the post-fit checks and the cost model's own error (measured within 20-40%).
FIT_TIME_SHARE = 0.5
#: Smallest model (Falkon's M, EigenPro's centres) a time-aware plan goes down to; below it the plan says
#: the fit is predicted to overrun and lets the trial's limit judge it (unless the work is so far over that
#: the plan is refused: GEMM_MARGIN).
MIN_TIMED_SIZE = 64
#: A CPU plan whose stated work would need more than the seconds the trial has left even at this many times
#: the machine's measured pace is refused before the fit (:meth:`Adapter._refuse_impossible_time`): the trial
#: ends ``over_budget`` with the arithmetic instead of spending its whole limit to end ``timeout``. The pace is
#: that of a Gaussian kernel block for work stated in kernel entries (SMO's rows, exact Joker's epoch), else
#: of a GEMM; 2 leaves room for the probes' noise (one run of each under load measured 1.5x slower).
GEMM_MARGIN = 2.0
#: Flops per second (1 TFLOP/s): a plan whose work takes at most a tenth of the trial's seconds at this rate
#: is not probed (a probe costs 0.1-0.3 s; the 2-core machine measures some 50-150 GFLOP/s).
RATE_CEILING = 1e12
#: Options that stop a fit before its stated work (no refusal when one is set to other than None or -1).
WORK_CAPS = ("max_iter", "max_time")


class AdapterError(RuntimeError):
    """The upstream library failed, or a request cannot be honoured.

    Raised by :meth:`Adapter.fit` when the library raises, prints a failure
    and returns without a model, or when the memory budget cannot hold even
    the smallest setting. The message says which library and why.
    """


class DivergedError(AdapterError):
    """The fit finished but its solution is numerically broken.

    Non-finite decision values, or a training error no better than the
    trivial predictor (the mean for regression, the majority class for
    classification). Subclass of :class:`AdapterError`, so a caller that
    only catches ``AdapterError`` still records a failure, never a result.
    """


class BudgetError(AdapterError):
    """The memory budget cannot hold even the smallest setting of the method.

    Raised by :meth:`Adapter.plan` with the arithmetic in the message; the
    trial ends ``over_budget`` before the fit, never as a crash. Subclass
    of :class:`AdapterError`.
    """


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
        trial's wall-clock limit minus what it already spent). CPU plans of
        the methods whose model size sets their time (Falkon's ``M``,
        EigenPro's centres and epochs, the low-rank IPM's rank) keep their predicted fit within
        :data:`FIT_TIME_SHARE` of it; ``None``: no limit from the trial (an
        adapter's ``time_target_s`` option still caps them).

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
    need = (f"cannot hold the smallest setting (estimated {_mib(est_bytes)} for n={n}, d={d}"
            + (f", {knobs})" if knobs else ")"))
    if on_gpu:
        return f"{name}: budget {budget.name!r} ({_mib(budget.gpu_bytes)} of GPU memory) {need}"
    if budget.total_bytes is not None and budget.held_bytes is not None:
        left = max(0, budget.total_bytes - budget.held_bytes)
        return (f"{name}: budget {budget.name!r} ({budget.total_bytes / MIB:.0f} MiB): the process already held "
                f"{budget.held_bytes / MIB:.0f} MiB before the fit, leaving {left / MIB:.0f} MiB, which {need}")
    return f"{name}: budget {budget.name!r} ({budget.host_bytes / MIB:.0f} MiB) {need}"


class Adapter(abc.ABC):
    """Base class of every solver adapter (the contract of ``docs/contracts.md``).

    Subclasses set the class attributes and implement the abstract hooks
    ``_plan``, ``_fit``, ``_decision``, ``_describe`` and ``_convergence``
    (a subclass missing one cannot be instantiated); this class does the
    validation, the label encoding, the error translation and the post-fit
    checks, so that every adapter behaves the same at its edges.

    Parameters
    ----------
    task : {"regression", "binary", "multiclass"}
    loss : str
        A loss the adapter supports for ``task`` (its ``losses[task]``).
    kernel : {"gaussian", "laplacian"}, default "gaussian"
    sigma : float
        Kernel bandwidth (> 0), same units as the features.
    lam : float
        Regularisation of the summed-loss objective (> 0).
    seed : int, default 0
        Seed of every random choice of the method (centres, blocks, ...).
    dtype : {"float64", "float32"}, default "float64"
        Working precision of the upstream solver.
    device : str, default "cpu"
        ``"cpu"`` or ``"cuda"`` / ``"cuda:<k>"`` where the adapter supports it.
    n_threads : int, default 1
        CPU threads the solver may use.
    **options
        Adapter-specific knobs, see each subclass's ``option_defaults``.

    Raises
    ------
    ValueError
        On an unknown task, loss, kernel, dtype, device or option, or a
        non-positive / non-finite ``sigma`` or ``lam``.

    Attributes
    ----------
    plan_ : dict or None
        What :meth:`plan` chose (set by :meth:`plan`, or by :meth:`fit` with
        :meth:`Budget.default`, 1 GiB host and 1 GiB GPU, when ``plan`` was
        not called).
    classes_ : ndarray of shape (n_classes,)
        Sorted class labels (classification only), set by :meth:`fit`.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    n_train_ : int
        Number of training samples of the last :meth:`fit` (conversions
        such as Falkon's ``lam / n`` use it).
    """

    #: Solver id (``docs/contracts.md``, "Solver ids").
    name: ClassVar[str] = ""
    #: Importable module of the upstream library (checked by :meth:`available`).
    module: ClassVar[str] = ""
    #: Distribution name used for the version in :meth:`describe`.
    distribution: ClassVar[str] = ""
    #: task -> losses this adapter can solve.
    losses: ClassVar[dict[str, tuple[str, ...]]] = {}
    kernels: ClassVar[tuple[str, ...]] = ("gaussian",)
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    #: Adapter-specific options and their defaults (the only ones accepted).
    option_defaults: ClassVar[dict[str, Any]] = {}
    #: Options that must be integers >= 1 (checked in ``__init__``: a plan cap of 0 or -1 would
    #: otherwise be read as "every n is large" or give a silent 1-centre model).
    positive_int_options: ClassVar[tuple[str, ...]] = ()
    #: The type of an option whose default is None (the others take their default's type): "int",
    #: "number", "bool", "str" or "dict". A value of another type is a ValueError naming the option.
    option_kinds: ClassVar[dict[str, str]] = {}
    #: Convergence signal name reported by :meth:`convergence`.
    signal: ClassVar[str] = ""
    #: Whether :meth:`fit` compares the training error with the trivial predictor.
    check_divergence: ClassVar[bool] = False
    #: Whether the fitted model depends on ``lam`` (False for a method without a
    #: regulariser, such as EigenPro's early-stopped KRR): a tuning search then
    #: fits one of the configurations that differ in ``lam`` only and records
    #: the others as the same model (:func:`joker.bench.trials.tuning.run_search`).
    uses_lam: ClassVar[bool] = True
    #: Modules that :meth:`fit` imports on first use, beyond :attr:`module`: the
    #: harness's preloaded trial starter imports them once for all the trials
    #: of this method (:mod:`joker.bench.trials.zygote`); list only what every
    #: fit imports (a module some fits never touch would only add to the starter).
    preload_modules: ClassVar[tuple[str, ...]] = ()

    # ------------------------------------------------------------------ class-level queries

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the upstream library can be imported here.

        Returns
        -------
        (bool, str)
            ``(True, "")`` or ``(False, reason)``; the reason is
            ``"<module> is not installed"`` when the module is absent.
        """
        if importlib.util.find_spec(cls.module) is None:
            return False, f"{cls.module} is not installed"
        try:
            importlib.import_module(cls.module)
        except Exception as exc:  # broken build, ABI mismatch, missing shared library
            return False, f"{cls.module} is installed but fails to import: {type(exc).__name__}: {exc}"
        return True, ""

    @classmethod
    def supports(cls, task: str, n_classes: int | None = None) -> tuple[bool, str]:
        """Whether this adapter can run ``task`` with ``n_classes`` classes.

        Parameters
        ----------
        task : str
            One of :data:`TASKS`.
        n_classes : int or None
            Number of classes (ignored for regression).

        Returns
        -------
        (bool, str)
            ``(True, "")`` or ``(False, reason)``.
        """
        if task not in cls.losses:
            return False, f"{cls.name} does not support task {task!r} (supports {', '.join(cls.losses)})"
        if task == "binary" and n_classes not in (None, 2):
            return False, f"task 'binary' needs 2 classes, got {n_classes}"
        if task == "multiclass" and n_classes is not None and n_classes < 3:
            return False, f"task 'multiclass' needs at least 3 classes, got {n_classes}"
        return True, ""

    # ------------------------------------------------------------------ construction

    def __init__(
        self,
        *,
        task: str,
        loss: str,
        kernel: str = "gaussian",
        sigma: float,
        lam: float,
        seed: int = 0,
        dtype: str = "float64",
        device: str = "cpu",
        n_threads: int = 1,
        **options: Any,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        ok, reason = self.supports(task, None)
        if not ok:
            raise ValueError(reason)
        if loss not in self.losses[task]:
            raise ValueError(f"{self.name} supports losses {self.losses[task]} for task {task!r}, got {loss!r}")
        if kernel not in self.kernels:
            raise ValueError(f"{self.name} supports kernels {self.kernels}, got {kernel!r}")
        self.sigma = positive_float("sigma", sigma)
        self.lam = positive_float("lam", lam)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype must be one of {tuple(DTYPE_BYTES)}, got {dtype!r}")
        try:
            parsed = Device.parse(device)
        except ValueError:
            parsed = None
        if parsed is None or parsed.kind not in self.devices:
            raise ValueError(f"{self.name} runs on {self.devices}, got device={device!r}")
        if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral) or n_threads < 1:
            raise ValueError(f"n_threads must be a positive integer, got {n_threads!r}")
        unknown = sorted(set(options) - set(self.option_defaults))
        if unknown:
            allowed = ", ".join(sorted(self.option_defaults)) or "none"
            raise ValueError(f"{self.name}: unknown option(s) {unknown}; allowed: {allowed}")
        for key, value in options.items():  # the type of each option, named (not a TypeError deep in a fit)
            if value is not None and key not in self.positive_int_options:  # those: "an integer >= 1" below
                _check_option_type(self.name, key, value, self.option_defaults[key], self.option_kinds.get(key))
        self.task, self.loss, self.kernel = task, loss, kernel
        self.seed, self.dtype, self.n_threads = int(seed), dtype, int(n_threads)
        self.device, self._device = str(parsed), parsed
        self.options = {**self.option_defaults, **options}
        for key in self.positive_int_options:
            value = self.options[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{self.name}: option {key} must be an integer >= 1, got {value!r}")
        if self.options.get("time_target_s") is not None:  # the time-aware plans' own target (seconds)
            self.options["time_target_s"] = positive_float(f"{self.name}: option time_target_s",
                                                           self.options["time_target_s"])
        self.plan_: dict[str, Any] | None = None
        self.classes_: np.ndarray | None = None
        self.n_features_in_: int | None = None
        self.n_train_: int | None = None
        self._fitted = False
        self._history: list[dict[str, Any]] = []
        self._diverged_reason = ""
        self._upstream_log: list[str] = []

    @property
    def dtype_bytes(self) -> int:
        """Bytes per element of the working dtype (4 or 8)."""
        return DTYPE_BYTES[self.dtype]

    @property
    def on_gpu(self) -> bool:
        """Whether the adapter runs on a CUDA device."""
        return self._device.is_cuda

    # ------------------------------------------------------------------ the contract

    def plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        """Choose the method's memory knobs so that its working memory fits ``budget``.

        Parameters
        ----------
        budget : Budget
        n : int
            Number of training samples.
        d : int
            Number of features.

        Returns
        -------
        dict
            The chosen knobs (adapter-specific names, e.g. ``block_size``,
            ``M``, ``max_mem_size_mib``), plus ``est_bytes`` (the adapter's
            estimate of the solver's peak working memory on the budgeted
            device, in bytes, excluding the interpreter and library imports)
            and ``budget`` (its name). Also stored in ``self.plan_``.

        Raises
        ------
        BudgetError
            If even the smallest setting does not fit the budget (an
            :class:`AdapterError`).
        ValueError
            On a non-positive ``n`` or ``d`` or a wrong ``budget`` type.
        """
        if not isinstance(budget, Budget):
            raise ValueError(f"budget must be a baselines.base.Budget, got {type(budget).__name__}")
        for label, value in (("n", n), ("d", d)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        chosen = self._plan(budget, int(n), int(d))
        limit = budget.gpu_bytes if self.on_gpu else budget.host_bytes
        if chosen["est_bytes"] > limit:
            knobs = ", ".join(f"{k}={v}" for k, v in chosen.items()
                              if isinstance(v, numbers.Integral) and not isinstance(v, bool)
                              and not k.endswith("_bytes") and not k.startswith(("max_", "cache_")))
            raise BudgetError(budget_error(self.name, budget, self.on_gpu, chosen["est_bytes"], n, d, knobs))
        chosen = {**chosen, "budget": budget.name, "budget_bytes": int(limit)}
        work = self._work(int(n), int(d), chosen)
        if work is not None:  # the arithmetic a timeout's reason quotes (joker.bench.trials.runner.classify)
            chosen["work_flops"], chosen["work"] = float(work[0]), str(work[1])
            self._refuse_impossible_time(budget, chosen, int(n), int(d))
        self.plan_ = chosen
        return dict(chosen)

    def _refuse_impossible_time(self, budget: Budget, chosen: dict[str, Any], n: int, d: int) -> None:
        """BudgetError when the plan's work cannot fit the trial's seconds even at ``GEMM_MARGIN`` x the measured pace.

        CPU trials that know their time (``budget.time_s``) only, and only
        when no option caps the work (``WORK_CAPS``). ``work_flops`` is the
        work model of :meth:`_work` (SMO's "about n iterations" of kernel
        columns is a measured rule, not a theorem); work stated in kernel
        entries (:meth:`_work_entries`) is priced at the measured cost of a
        Gaussian kernel entry (:func:`baselines.pace.kernel_entry_seconds`),
        other work at the GEMM rate (:func:`baselines.pace.gemm_flop_seconds`),
        both measured once per process, dtype and threads. Full HEPC: SMO or
        one exact Joker epoch is n^2 = 3.4e12 kernel entries, thousands of
        seconds at a few ns each, against a 150 s limit. Plans whose work
        takes at most a tenth of the time at ``RATE_CEILING`` are not probed.
        """
        flops, time_s = chosen.get("work_flops"), budget.time_s
        if self.on_gpu or time_s is None or not flops or flops / RATE_CEILING <= 0.1 * time_s:
            return
        if any(self.options.get(cap) not in (None, -1) for cap in WORK_CAPS):
            return  # an option stops the fit early (SMO's max_iter, Joker's max_time): the work is not owed
        from .pace import gemm_flop_seconds, kernel_entry_seconds

        dtype = self.dtype if self.dtype in ("float32", "float64") else "float64"
        entries = self._work_entries(n, d, chosen)
        if entries:
            pace = kernel_entry_seconds(d, dtype, self.n_threads)
            least = entries * pace / GEMM_MARGIN
            rate = f"{flops:.2g} flops = {entries:.2g} kernel entries at {pace * 1e9:.2g} ns each (measured Gaussian blocks)"
        else:
            per_flop = gemm_flop_seconds(dtype, self.n_threads)
            least = flops * per_flop / GEMM_MARGIN
            rate = f"{flops:.2g} flops at {1e-9 / per_flop:.0f} GFLOP/s (measured GEMM)"
        if least > time_s:
            raise BudgetError(
                f"{self.name}: not started: the plan's work ({chosen['work']}) is {rate}, at least {least:.0f} s "
                f"even at {GEMM_MARGIN:g}x that pace ({dtype}, {self.n_threads} threads), more than the "
                f"{time_s:.0f} s the trial has left")

    def _work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float | None:
        """Kernel entries the stated work (:meth:`_work`) consists of, or None when it is not kernel entries.

        Methods that evaluate the exact kernel (SMO, exact Joker) say so: their refusal
        (:meth:`_refuse_impossible_time`) then uses the measured cost of a Gaussian kernel entry
        (a distance and an exp), not the faster GEMM flop.
        """
        return None

    def _time_cap(self, budget: Budget, n: int, d: int, hi: int, passes: float, knob: str
                  ) -> tuple[int, dict[str, Any]] | None:
        """Largest model size whose kernel passes fit the trial's time (CPU plans; ``None`` without a limit).

        The fit is modelled as ``passes`` evaluations of an ``n x m`` Gaussian
        block (times a vector) at this machine's measured pace
        (:func:`baselines.pace.kernel_entry_seconds` for ``d``, the dtype and
        the threads): ``seconds(m) = passes * n * m * pace``, kept within
        the limit of :meth:`_time_limit`.

        Parameters
        ----------
        budget : Budget
            Its ``time_s`` and the option ``time_target_s`` set the limit
            (:meth:`_time_limit`); neither (or a GPU adapter): no cap.
        n, d : int
            Training rows and features.
        hi : int
            The size memory and the options allow (the cap never raises it).
        passes : float
            Kernel blocks of ``n x m`` entries one fit computes.
        knob : str
            The size's name in the reason (``"M"``, ``"centres"``).

        Returns
        -------
        (int, dict) or None
            The size (at least ``min(hi, MIN_TIMED_SIZE)``) and the plan's record
            of it: ``time_limit_s`` (the seconds of :meth:`_time_limit`),
            ``kernel_entry_ns``, ``kernel_passes``, ``predicted_fit_s`` and
            ``time_reason``.
        """
        limit = self._time_limit(budget)
        if limit is None:
            return None
        from .pace import kernel_entry_seconds, largest_in_time

        pace = kernel_entry_seconds(int(d), self.dtype, self.n_threads)

        def seconds(m: int) -> float:
            return passes * n * m * pace

        m = largest_in_time(seconds, limit[0], hi, lo=min(hi, MIN_TIMED_SIZE))
        fits = seconds(m) <= limit[0]
        why = (f"{knob} <= {m}: {passes:g} kernel passes of n x {knob} entries at {pace * 1e9:.2f} ns each "
               f"(measured) = {seconds(m):.3g} s, {'within' if fits else 'still over (the smallest size tried)'} "
               f"{limit[1]}")
        return m, {"time_limit_s": limit[0], "kernel_entry_ns": pace * 1e9,
                   "kernel_passes": float(passes), "predicted_fit_s": seconds(m), "time_reason": why}

    def _time_limit(self, budget: Budget) -> tuple[float, str] | None:
        """Seconds a time-aware CPU plan gives the fit, and their origin in words; ``None``: no time cap.

        The smaller of the option ``time_target_s`` (when the adapter has it
        and it is set) and ``FIT_TIME_SHARE * budget.time_s`` (when the
        budget carries a time). GPU adapters are not time-capped.
        """
        if self.on_gpu:
            return None
        found = []
        if self.options.get("time_target_s") is not None:
            found.append((float(self.options["time_target_s"]), f"time_target_s = {self.options['time_target_s']:g} s"))
        if budget.time_s is not None:
            found.append((FIT_TIME_SHARE * budget.time_s,
                          f"{FIT_TIME_SHARE:g} of the {budget.time_s:.0f} s the trial had left"))
        return min(found) if found else None

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str] | None:
        """The fit's dominant arithmetic under ``plan``: (flops, formula in words), or None when unknown.

        A lower bound of the work the chosen setting implies (e.g. SMO's
        kernel rows, a CG iteration's kernel blocks), so that a trial that
        ends ``timeout`` says how far its limit was from the work it needed.
        Recorded in the plan as ``work_flops`` and ``work``.
        """
        return None

    def fit(self, X: Any, y: Any) -> "Adapter":
        """Fit the upstream solver.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite real features.
        y : array-like of shape (n_samples,)
            Targets (regression, finite floats) or labels of any sortable
            type (classification: exactly 2 for ``binary``, 3 or more for
            ``multiclass``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad input (shape, NaN, wrong number of classes).
        AdapterError
            The upstream library failed (raised, or printed a failure and
            returned no model); the message carries its reason.
        DivergedError
            Non-finite decision values, a ``FloatingPointError`` from the
            solver (Joker's ``joker.solver.DivergedError``: its dual broke
            weak duality), or (adapters with ``check_divergence``) a
            training error no better than the trivial predictor.
        """
        X = self._check_X(X, fitting=True)
        target = self._encode_y(y, X.shape[0])
        if self.on_gpu:
            self._require_gpu()
        if self.plan_ is None:
            self.plan(Budget.default(), X.shape[0], X.shape[1])
        self._fitted = False
        self._history = []
        self._diverged_reason = ""
        self._upstream_log = []
        self.n_train_ = X.shape[0]
        try:
            with blas_threads(self.n_threads):
                self._fit(X, target)
        except AdapterError:
            raise
        except FloatingPointError as exc:  # e.g. joker.solver.DivergedError (weak duality broken): status diverged
            self._fail_diverged(f"{type(exc).__name__}: {exc}")
        except MemoryError as exc:
            raise AdapterError(f"{self.name}: out of memory in fit: {exc}") from exc
        except Exception as exc:
            tail = " | ".join(self._upstream_log[-5:])
            msg = f"{self.name}: upstream fit failed: {type(exc).__name__}: {exc}"
            raise AdapterError(msg + (f" (log: {tail})" if tail else "")) from exc
        self.n_features_in_ = X.shape[1]
        self._fitted = True
        self._post_fit_checks(X, target)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Raw model output.

        Returns
        -------
        ndarray of float64
            Shape (n_samples,) for regression and binary tasks (> 0 means
            ``classes_[1]``), (n_samples, n_classes) for multiclass (column
            ``j`` scores ``classes_[j]``).

        Raises
        ------
        AdapterError
            If called before :meth:`fit`.
        DivergedError
            If the model produces non-finite values.
        """
        self._require_fitted()
        X = self._check_X(X, fitting=False)
        with blas_threads(self.n_threads):
            scores = np.asarray(self._decision(X), dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            raise DivergedError(f"{self.name}: non-finite decision values at prediction time")
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """Predictions: targets (regression, float64) or labels from ``classes_``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.predict_from_scores(self.decision_function(X))

    def predict_from_scores(self, scores: np.ndarray) -> np.ndarray:
        """The predictions :meth:`predict` makes from :meth:`decision_function`'s output.

        The harness calls it to score a test set from one pass over it
        (the metrics need both the labels and the scores).

        Parameters
        ----------
        scores : ndarray of float64
            ``decision_function(X)``: shape (n_samples,) or (n_samples, n_classes).

        Returns
        -------
        ndarray of shape (n_samples,)
            ``scores`` (regression), ``classes_[1]`` where ``scores > 0``
            (binary), the class of the largest column (multiclass).
        """
        if self.task == "regression":
            return scores
        if self.task == "binary":
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    def describe(self) -> dict[str, Any]:
        """What ran: library, version, settings and the conversions used.

        Returns
        -------
        dict
            Keys ``method``, ``library``, ``version``, ``task``, ``loss``,
            ``kernel``, ``sigma``, ``lam``, ``seed``, ``dtype``, ``device``,
            ``n_threads``, ``options``, ``plan`` and ``conversions`` (a dict
            of upstream parameter -> value, each with its formula under
            ``conversions["formulas"]``).
        """
        extra = self._describe()
        return {
            "method": self.name,
            "library": self.distribution or self.module,
            "version": _version(self.distribution or self.module, self.module),
            "task": self.task,
            "loss": self.loss,
            "kernel": self.kernel,
            "sigma": self.sigma,
            "lam": self.lam,
            "seed": self.seed,
            "dtype": self.dtype,
            "device": self.device,
            "n_threads": self.n_threads,
            "options": dict(self.options),
            "plan": dict(self.plan_) if self.plan_ is not None else None,
            **extra,
        }

    def convergence(self) -> dict[str, Any]:
        """The method's own convergence signal for the last fit.

        Returns
        -------
        dict
            ``signal`` (str), ``converged`` (bool or None when the method has
            no stopping rule to judge by), ``diverged`` (bool), ``reason``
            (str), ``history`` (list of dicts, one per iteration/epoch) and
            ``final`` (float or None: the signal's last value).
        """
        if not self._fitted and not self._diverged_reason:
            return {"signal": self.signal, "converged": None, "diverged": False,
                    "reason": "not fitted", "history": [], "final": None}
        try:
            info = self._convergence()
        except Exception:  # diverged inside fit: no model to read (the solver's reason stands)
            if not self._diverged_reason:
                raise
            info = {"final": None}
        info.setdefault("history", list(self._history))
        info["signal"] = self.signal
        if self._diverged_reason:
            info["diverged"] = True
            info["converged"] = False
            info["reason"] = self._diverged_reason
        else:
            info.setdefault("diverged", False)
        return info

    # ------------------------------------------------------------------ anytime checkpoints

    #: Set by the harness before :meth:`fit` (``None``: checkpoints cost nothing). Called as
    #: ``checkpoint_hook(decision, progress)`` at each checkpoint an adapter reports.
    checkpoint_hook: Any = None

    def _checkpoint(self, decision: Any, **progress: Any) -> None:
        """Report an anytime point of the running fit (issue 42: metric-against-time curves).

        An iterative adapter calls this from its fit loop at its natural checkpoints (Joker:
        each certificate; Falkon: its ``error_fn`` every few CG iterations; EigenPro: each
        epoch; the IPM: each Newton step). When the harness installed :attr:`checkpoint_hook`,
        the hook scores ``decision`` on the test rows with the fit's clock paused, so that the
        evaluation is not counted as fit time; otherwise this does nothing.

        Parameters
        ----------
        decision : callable
            ``decision(X) -> ndarray`` of shape (n_samples,) or (n_samples, n_classes): the
            current model's raw scores on ``X`` (float array of shape (n_samples, n_features),
            in the adapter's working dtype), exactly as :meth:`_decision` would give them for
            the model as it stands at this point of the fit.
        **progress
            Scalars of the method's own progress measure (``iteration``, ``epoch``,
            ``gap``, ``residual``, ...), recorded beside the metric.
        """
        hook = self.checkpoint_hook
        if hook is not None:
            hook(decision, dict(progress))

    # ------------------------------------------------------------------ hooks

    @abc.abstractmethod
    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        """Knobs for ``budget`` on ``n`` x ``d`` data, with ``est_bytes`` (see :meth:`plan`)."""

    @abc.abstractmethod
    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        """Fit on float X (self.dtype) and encoded targets (see :meth:`_encode_y`)."""

    @abc.abstractmethod
    def _decision(self, X: np.ndarray) -> np.ndarray:
        """Raw scores of the fitted model, shaped as :meth:`decision_function` returns them."""

    @abc.abstractmethod
    def _describe(self) -> dict[str, Any]:
        """Adapter-specific part of :meth:`describe` (at least ``conversions``)."""

    @abc.abstractmethod
    def _convergence(self) -> dict[str, Any]:
        """Adapter-specific part of :meth:`convergence` (``converged``, ``reason``, ...)."""

    # ------------------------------------------------------------------ helpers

    accepts_sparse: ClassVar[bool] = False
    """Whether ``_fit``/``_decision`` take scipy.sparse X (as CSR, never densified); others get a TypeError."""

    def _check_X(self, X: Any, *, fitting: bool) -> np.ndarray:
        import scipy.sparse as sp

        if sp.issparse(X):
            if not self.accepts_sparse:
                raise TypeError(f"{self.name} takes dense X, got a scipy.sparse matrix: pass X.toarray()")
            arr = sp.csr_matrix(X, dtype=np.dtype(self.dtype))
            if not np.all(np.isfinite(arr.data)):
                raise ValueError(f"X contains NaN or infinite values (in {self.dtype})")
            self._check_width(arr, fitting)
            return arr
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {arr.shape}")
        self._check_width(arr, False)
        if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
            raise ValueError(f"X must be real numbers, got dtype {arr.dtype}")
        arr = np.ascontiguousarray(arr, dtype=np.dtype(self.dtype))
        if not arr.flags.writeable:  # torch.from_numpy and some libraries need writable buffers
            arr = arr.copy()
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"X contains NaN or infinite values (in {self.dtype})")
        self._check_width(arr, fitting)
        return arr

    def _check_width(self, arr: Any, fitting: bool) -> None:
        if arr.shape[0] < 1 or arr.shape[1] < 1:
            raise ValueError(f"X must have at least one row and one column, got shape {arr.shape}")
        if not fitting and self.n_features_in_ is not None and arr.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {arr.shape[1]} features, the model was fitted with {self.n_features_in_}")

    def _encode_y(self, y: Any, n: int) -> np.ndarray:
        """Targets for ``_fit``: float y (regression), -1/+1 (binary), class index (multiclass)."""
        arr = np.asarray(y)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(f"y must have shape ({n},), got {np.asarray(y).shape}")
        if self.task == "regression":
            if not np.issubdtype(arr.dtype, np.number):
                raise ValueError(f"regression targets must be numbers, got dtype {arr.dtype}")
            arr = arr.astype(np.float64)
            if not np.all(np.isfinite(arr)):
                raise ValueError("y contains NaN or infinite values")
            self.classes_ = None
            return arr
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or infinite labels")
        classes, codes = np.unique(arr, return_inverse=True)
        if self.task == "binary" and len(classes) != 2:
            raise ValueError(f"task 'binary' needs exactly 2 distinct labels in y, got {len(classes)}: {classes[:5]}")
        if self.task == "multiclass" and len(classes) < 3:
            raise ValueError(f"task 'multiclass' needs at least 3 distinct labels, got {len(classes)}; use 'binary'")
        self.classes_ = classes
        if self.task == "binary":
            return np.where(codes == 1, 1.0, -1.0)
        return codes.astype(np.int64)

    def _require_gpu(self) -> None:
        """Raise AdapterError when a CUDA device is requested but none is visible (torch-based adapters)."""
        try:
            import torch

            visible = torch.cuda.is_available()
        except Exception:
            visible = False
        if not visible:
            raise AdapterError(f"{self.name}: device {self.device!r} requested but no CUDA GPU is visible")

    def _require_fitted(self) -> None:
        if not self._fitted:
            raise AdapterError(f"{self.name}: call fit before predict/decision_function")

    def _post_fit_checks(self, X: np.ndarray, target: np.ndarray) -> None:
        """Finite decision values on (a sample of) the training set; divergence test."""
        rows = np.arange(X.shape[0])
        if X.shape[0] > CHECK_ROWS:
            rows = np.sort(np.random.default_rng(self.seed).choice(X.shape[0], CHECK_ROWS, replace=False))
        with blas_threads(self.n_threads):
            scores = np.asarray(self._decision(X[rows]), dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            self._fail_diverged("non-finite decision values on the training set")
        if not (self.check_divergence and self.options.get("check_divergence", True)):
            return
        reason = self._divergence_reason(target) or trivial_predictor_check(self.task, scores, target[rows])
        if reason:
            self._fail_diverged(reason)

    def _divergence_reason(self, target: np.ndarray) -> str:
        """Adapter-specific divergence test on its own convergence curve ("" when none)."""
        return ""

    def _fail_diverged(self, reason: str) -> None:
        self._fitted = False
        self._diverged_reason = reason
        raise DivergedError(f"{self.name} ({self.dtype}): {reason}")


def _option_kind(default: Any, kind: str | None) -> str | None:
    """The kind of an option: given (``option_kinds``) or its default's ("bool", "int", "number"; None: any)."""
    if kind is not None or default is None:
        return kind
    if isinstance(default, (bool, np.bool_)):
        return "bool"
    if isinstance(default, numbers.Integral):
        return "int"
    return "number" if isinstance(default, numbers.Real) else None


def _check_option_type(name: str, key: str, value: Any, default: Any, kind: str | None) -> None:
    """Raise ValueError, naming ``key``, when ``value`` is not of the option's kind (:func:`_option_kind`).

    "int" takes integers and integral floats (Hydra reads ``1e3`` as 1000.0) but not 2.5; "number" any
    real but a bool; "bool" a bool (numpy's too), never the string "no" (which reads as true).
    """
    kind = _option_kind(default, kind)
    is_bool = isinstance(value, (bool, np.bool_))
    ok = {"bool": is_bool,
          "int": not is_bool and isinstance(value, numbers.Real) and float(value).is_integer(),
          "number": not is_bool and isinstance(value, numbers.Real),
          "str": isinstance(value, str), "dict": isinstance(value, Mapping)}.get(kind, True)
    if not ok:
        what = {"bool": "true or false", "int": "an integer", "number": "a number", "str": "a string",
                "dict": "a mapping"}[kind]
        shown = "" if default is None else f" (default {default!r})"
        raise ValueError(f"{name}: option {key} must be {what}{shown}, got {value!r}")


def positive_float(label: str, value: Any) -> float:
    """Check that ``value`` is a finite real number > 0 (bool refused); return it as float.

    The one rule for ``sigma`` and ``lam`` (adapters and trial specs).

    Raises
    ------
    ValueError
        ``"<label> must be ..."`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{label} must be a positive number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{label} must be positive and finite, got {value!r}")
    return value


def _mib(size: int) -> str:
    """A size in MiB for messages: whole MiB from 10 MiB up, three significant digits below."""
    return f"{size / MIB:.0f} MiB" if size >= 10 * MIB else f"{size / MIB:.3g} MiB"


def _version(distribution: str, module: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return str(getattr(importlib.import_module(module), "__version__", "unknown"))
    except Exception:
        return "unknown"

