"""The shared planning machinery of the adapters: memory refusal, the work model, time-aware sizing.

:meth:`baselines.base.Adapter.plan` calls :meth:`Planning._finish_plan` on
what an adapter's ``_plan`` chose; the adapters size their models with
:meth:`Planning._time_cap` / :meth:`Planning._time_limit` and state their
arithmetic with :meth:`Planning._work`. The machine's pace comes from
:mod:`baselines.pace` (measured once per process). ``docs/contracts.md``,
"Time-aware CPU plans", states the rule.
"""

from __future__ import annotations

import numbers
from typing import Any

from .budget import Budget, budget_error
from .errors import BudgetError

__all__ = ["FIT_TIME_SHARE", "GEMM_MARGIN", "MIN_TIMED_SIZE", "RATE_CEILING", "WORK_CAPS", "Planning", "min_time"]

#: Share of the seconds left (``Budget.time_s``) that a time-aware CPU plan gives its predicted fit;
#: the rest is for prediction, the post-fit checks and the cost model's own error (measured within 20-40%).
FIT_TIME_SHARE = 0.5
#: Smallest model (Falkon's M, EigenPro's centres) a time-aware plan goes down to; below it the plan says
#: the fit is predicted to overrun and lets the trial's limit judge it (unless the work is so far over that
#: the plan is refused: GEMM_MARGIN).
MIN_TIMED_SIZE = 64
#: A CPU plan whose stated work would need more than the seconds the trial has left even at this many times
#: the machine's measured pace is refused before the fit (:meth:`Planning._refuse_impossible_time`): the trial
#: ends ``over_budget`` with the arithmetic instead of spending its whole limit to end ``timeout``. The pace is
#: that of a Gaussian kernel block for work stated in kernel entries (SMO's rows, exact Joker's epoch), else
#: of a GEMM; 2 leaves room for the probes' noise (one run of each under load measured 1.5x slower).
GEMM_MARGIN = 2.0
#: Flops per second (1 TFLOP/s): a plan whose work takes at most a tenth of the trial's seconds at this rate
#: is not probed (a probe costs 0.1-0.3 s; the 2-core machine measures some 50-150 GFLOP/s).
RATE_CEILING = 1e12
#: Options that stop a fit before its stated work (no refusal when one is set to other than None or -1).
WORK_CAPS = ("max_iter", "max_time")


def min_time(option: float | None, planned: float | None) -> float | None:
    """The fit's ``max_time``: the smaller of the option and the plan's ``time_limit_s`` (None when both are None).

    The adapters whose solvers stop on a clock (ASkotch, SODM, the low-rank
    IPM) pass it on, so that the shared time rule (:meth:`Planning._time_limit`)
    ends their fits, not the trial's wall-clock limit.
    """
    times = [float(t) for t in (option, planned) if t is not None]
    return min(times) if times else None


class Planning:
    """Mixin of :class:`baselines.base.Adapter`: the planning, pacing and refusal helpers.

    Reads the adapter's ``name``, ``on_gpu``, ``options``, ``dtype`` and
    ``n_threads``; overridable hooks are :meth:`_work` and
    :meth:`_work_entries`.
    """

    name: str
    options: dict[str, Any]
    dtype: str
    n_threads: int
    on_gpu: bool

    def _finish_plan(self, budget: Budget, n: int, d: int, chosen: dict[str, Any]) -> dict[str, Any]:
        """Refuse a plan over the memory budget or the trial's seconds; record the shared budget and the work.

        Adds ``budget`` (its name), ``budget_bytes`` (the budgeted device's
        bytes), ``time_budget_s`` (the seconds the trial had left, None
        without a limit), ``fit_time_share`` and, when :meth:`_work` states
        it, ``work_flops`` and ``work``.

        Raises
        ------
        BudgetError
            When ``chosen["est_bytes"]`` exceeds the budgeted device's bytes, or the stated work cannot
            fit the seconds left (:meth:`_refuse_impossible_time`).
        """
        limit = budget.gpu_bytes if self.on_gpu else budget.host_bytes
        if chosen["est_bytes"] > limit:
            knobs = ", ".join(f"{k}={v}" for k, v in chosen.items()
                              if isinstance(v, numbers.Integral) and not isinstance(v, bool)
                              and not k.endswith("_bytes") and not k.startswith(("max_", "cache_")))
            raise BudgetError(budget_error(self.name, budget, self.on_gpu, chosen["est_bytes"], n, d, knobs))
        # the one budget of the cell, recorded in every plan (docs/contracts.md, "One budget per cell")
        chosen = {**chosen, "budget": budget.name, "budget_bytes": int(limit), "time_budget_s": budget.time_s,
                  "fit_time_share": FIT_TIME_SHARE}
        work = self._work(n, d, chosen)
        if work is not None:  # the arithmetic a timeout's reason quotes (joker.bench.trials.runner.classify)
            chosen["work_flops"], chosen["work"] = float(work[0]), str(work[1])
            self._refuse_impossible_time(budget, chosen, n, d)
        return chosen

    def _refuse_impossible_time(self, budget: Budget, chosen: dict[str, Any], n: int, d: int) -> None:
        """BudgetError when the plan's work cannot fit the trial's seconds even at ``GEMM_MARGIN`` x the measured pace.

        CPU trials that know their time (``budget.time_s``) only. When an
        option (``WORK_CAPS``) or the plan's own ``time_limit_s`` can stop the
        fit early, only the least work of :meth:`_least_work_entries` is owed
        (none when it is None), against the fit's ``FIT_TIME_SHARE`` of the
        seconds. ``work_flops`` is the
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
        least_entries = self._least_work_entries(n, d, chosen)
        option_cap = any(self.options.get(cap) not in (None, -1) for cap in WORK_CAPS)
        if option_cap and least_entries is None:
            return  # SMO's max_iter, Joker's max_time: any prefix of the work is a fit
        if least_entries is not None and (option_cap or chosen.get("time_limit_s") is not None):
            # an option or the plan's time limit stops the fit early: only its least work is owed
            pace, timed = self._entry_pace(d)
            least, share = least_entries * pace / GEMM_MARGIN, FIT_TIME_SHARE * time_s
            if least > share:
                raise BudgetError(
                    f"{self.name}: not started: the least work of a fit its time limit can stop "
                    f"({least_entries:.2g} kernel entries of {chosen['work']}) at {pace * 1e9:.2g} ns each "
                    f"({timed}) takes at least {least:.0f} s even at {GEMM_MARGIN:g}x that pace, more than the "
                    f"fit's {share:.0f} s ({FIT_TIME_SHARE:g} of the {time_s:.0f} s the trial has left)")
            return
        from .pace import gemm_flop_seconds

        dtype = self.dtype if self.dtype in ("float32", "float64") else "float64"
        entries = self._work_entries(n, d, chosen)
        if entries:
            pace, timed = self._entry_pace(d)
            least = entries * pace / GEMM_MARGIN
            rate = f"{flops:.2g} flops = {entries:.2g} kernel entries at {pace * 1e9:.2g} ns each ({timed})"
        else:
            per_flop = gemm_flop_seconds(dtype, self.n_threads)
            least = flops * per_flop / GEMM_MARGIN
            rate = f"{flops:.2g} flops at {1e-9 / per_flop:.0f} GFLOP/s (measured GEMM)"
        if least > time_s:
            raise BudgetError(
                f"{self.name}: not started: the plan's work ({chosen['work']}) is {rate}, at least {least:.0f} s "
                f"even at {GEMM_MARGIN:g}x that pace ({dtype}, {self.n_threads} threads), more than the "
                f"{time_s:.0f} s the trial has left")

    def _entry_pace(self, d: int) -> tuple[float, str]:
        """Seconds per kernel entry of this method's block work on this CPU, and what was timed.

        The default is the generic Gaussian-block probe
        (:func:`baselines.pace.kernel_entry_seconds`, the trial's dtype and
        threads); an adapter whose library has its own kernel routine times
        that instead (Falkon: :func:`baselines.falkon_pace.falkon_entry_seconds`).

        Parameters
        ----------
        d : int
            Features.

        Returns
        -------
        (float, str)
            Seconds per row x centre entry, and the words the plan's reason quotes.
        """
        from .pace import kernel_entry_seconds

        dtype = self.dtype if self.dtype in ("float32", "float64") else "float64"
        return kernel_entry_seconds(int(d), dtype, self.n_threads), "measured Gaussian blocks"

    def _least_work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float | None:
        """Kernel entries a fit must compute before stopping it early still gives a model; None: any prefix does.

        Used by :meth:`_refuse_impossible_time` when an option (``WORK_CAPS``)
        or the plan's ``time_limit_s`` can stop the fit: such a plan is refused
        only when this least work cannot end within ``FIT_TIME_SHARE`` of the
        trial's seconds even at ``GEMM_MARGIN`` x the measured pace
        (ASkotch: one pass over its blocks).
        """
        return None

    def _work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float | None:
        """Kernel entries the stated work (:meth:`_work`) consists of, or None when it is not kernel entries.

        Methods that evaluate the exact kernel (SMO, exact Joker) say so: their refusal
        (:meth:`_refuse_impossible_time`) then uses the measured cost of a Gaussian kernel entry
        (a distance and an exp), not the faster GEMM flop.
        """
        return None

    def _time_cap(self, budget: Budget, n: int, d: int, hi: int, passes: float, knob: str,
                  extra: tuple[Any, str] | None = None) -> tuple[int, dict[str, Any]] | None:
        """Largest model size whose kernel passes fit the trial's time (CPU plans; ``None`` without a limit).

        The fit is modelled as ``passes`` evaluations of an ``n x m`` Gaussian
        block (times a vector) at this machine's measured pace
        (:func:`baselines.pace.kernel_entry_seconds` for ``d``, the dtype and
        the threads): ``seconds(m) = passes * n * m * pace``, kept within
        the limit of :meth:`_time_limit`, plus ``extra(m)`` seconds when given
        (Falkon's preconditioner, cubic in ``m``).

        Parameters
        ----------
        budget : Budget
            Its ``time_s`` sets the limit (:meth:`_time_limit`); without it
            (or on a GPU): no cap.
        n, d : int
            Training rows and features.
        hi : int
            The size memory and the options allow (the cap never raises it).
        passes : float
            Kernel blocks of ``n x m`` entries one fit computes.
        knob : str
            The size's name in the reason (``"M"``, ``"centres"``).
        extra : (callable, str) or None
            ``(seconds_of(m), words)``: work on top of the kernel passes, non-decreasing in ``m``
            (recorded as ``extra_s`` and named in the reason).

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
        from .pace import largest_in_time

        pace, timed = self._entry_pace(int(d))

        def seconds(m: int) -> float:
            return passes * n * m * pace + (extra[0](m) if extra else 0.0)

        m = largest_in_time(seconds, limit[0], hi, lo=min(hi, MIN_TIMED_SIZE))
        fits = seconds(m) <= limit[0]
        more = f" + {extra[1]} {extra[0](m):.3g} s" if extra else ""
        why = (f"{knob} <= {m}: {passes:.4g} kernel passes of n x {knob} entries at {pace * 1e9:.2f} ns each "
               f"({timed}){more} = {seconds(m):.3g} s, "
               f"{'within' if fits else 'still over (the smallest size tried)'} {limit[1]}")
        record = {"time_limit_s": limit[0], "kernel_entry_ns": pace * 1e9,
                  "kernel_passes": float(passes), "predicted_fit_s": seconds(m), "time_reason": why}
        if extra:
            record["extra_s"] = extra[0](m)
        return m, record

    def _time_limit(self, budget: Budget) -> tuple[float, str] | None:
        """Seconds a CPU plan gives its predicted fit, and their origin in words; ``None``: no time cap.

        The one rule of every adapter (``docs/contracts.md``, "One budget per
        cell"): ``FIT_TIME_SHARE * budget.time_s``, where ``budget.time_s``
        is what the trial has left of its wall-clock limit, the same
        ``timeout_s`` for every method of a cell (the harness refuses a
        per-method one, :func:`joker.bench.config.schema.resolve_trial`).
        ``None`` when the budget carries no time or on a GPU (GPU plans are
        sized by memory, ``docs/contracts.md``, "GPU plans of the adapters").
        """
        if self.on_gpu or budget.time_s is None:
            return None
        return (FIT_TIME_SHARE * budget.time_s,
                f"the shared budget ({FIT_TIME_SHARE:g} of the {budget.time_s:.0f} s the trial had left)")

    def _time_pick(self, budget: Budget, sizes: list[int], seconds_of: Any, knob: str, model: str
                   ) -> tuple[int, dict[str, Any]] | None:
        """The largest of ``sizes`` (descending, all within memory) whose predicted fit fits the shared budget.

        For the adapters whose model sizes are a list (Joker's halvings of
        ``M``, the IPM's ranks) rather than an interval (:meth:`_time_cap`).

        Parameters
        ----------
        budget : Budget
        sizes : list of int
            Candidate sizes, largest first (the memory plan's choice first).
        seconds_of : callable
            ``seconds_of(size) -> float``: predicted fit seconds (non-decreasing in the size).
        knob : str
            The size's name in the reason (``"M"``, ``"rank"``).
        model : str
            The cost model in words (``"6 epochs of ..."``), for the reason.

        Returns
        -------
        (int, dict) or None
            The size (the smallest when none fits) and ``time_limit_s``,
            ``predicted_fit_s``, ``time_reason``; None without a time limit.
        """
        limit = self._time_limit(budget)
        if limit is None or not sizes:
            return None
        size = next((m for m in sizes if seconds_of(m) <= limit[0]), sizes[-1])
        fits = seconds_of(size) <= limit[0]
        why = (f"{knob} <= {size}: {model} = {seconds_of(size):.3g} s, "
               f"{'within' if fits else 'still over (the smallest size tried)'} {limit[1]}; memory allowed {sizes[0]}")
        return size, {"time_limit_s": limit[0], "predicted_fit_s": seconds_of(size), "time_reason": why}

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str] | None:
        """The fit's dominant arithmetic under ``plan``: (flops, formula in words), or None when unknown.

        A lower bound of the work the chosen setting implies (e.g. SMO's
        kernel rows, a CG iteration's kernel blocks), so that a trial that
        ends ``timeout`` says how far its limit was from the work it needed.
        Recorded in the plan as ``work_flops`` and ``work``.
        """
        return None
