"""``logfalkon``: kernel logistic regression with ``falkon.LogisticFalkon`` (binary only).

Conversion (``baselines.conventions.logfalkon_penalty``): the target
penalty is ``lam / n`` for the benchmark's ``(lam/2)||f||^2 + sum_i
log(1 + exp(-y_i f_i))``.

Penalty path (documented, logged in the plan): LogisticFalkon solves a
sequence of Newton problems with decreasing penalties. Following Falkon's
own guidance (``LogisticFalkon`` notes) and the ijcnn1 anchor run
(``docs/anchors.md``: penalties 1e-3, 1e-5, 1e-7, 1e-7, 1e-7 with
3, 3, 3, 8, 8 CG iterations), the path is ``path_steps`` penalties spaced
geometrically from ``path_start`` down to the target, with ``path_iters``
CG iterations each, then ``final_steps`` more steps at the target with
``final_iters`` each (by default as many as the shared time budget allows,
at most ``max_final_steps``: :meth:`LogFalkonAdapter._size_final_steps`).
It always ends at the target. If the target is above
``path_start`` every step uses the target.

Convergence: training error rate and mean logistic loss after each Newton
step (Falkon's ``error_fn`` callback, on at most ``CHECK_ROWS`` training
rows); ``converged`` is a plateau test of the logistic loss over the last
two steps at the target penalty (:meth:`LogFalkonAdapter._convergence`).
"""

from __future__ import annotations

import math
import sys

from typing import Any

import numpy as np

from .base import CHECK_ROWS, Budget, relative_plateau
from .conventions import logfalkon_penalty
from .falkon import FalkonFamily, falkon_error_fn, iterate_decision, mean_logistic_loss

__all__ = ["LogFalkonAdapter", "MIN_FINAL_STEPS", "penalty_path"]

#: With ``final_steps=None``, M is sized for this many Newton steps at the target penalty; the steps then
#: grow to fill the shared time (at most ``max_final_steps``).
MIN_FINAL_STEPS = 2


def penalty_path(target: float, start: float = 1e-3, path_steps: int = 3, path_iters: int = 3,
                 final_steps: int = 2, final_iters: int = 8) -> tuple[list[float], list[int]]:
    """LogisticFalkon's ``penalty_list`` and ``iter_list`` ending at ``target``.

    Parameters
    ----------
    target : float
        Final penalty (> 0), Falkon's scale (``lam / n``).
    start : float
        First penalty of the path when ``target < start``.
    path_steps, path_iters : int
        Number of decreasing penalties (start ... target, geometric) and CG
        iterations for each.
    final_steps, final_iters : int
        Extra steps at the target and CG iterations for each.

    Returns
    -------
    (list of float, list of int)
        Equal-length lists; the last penalty equals ``target``.

    Raises
    ------
    ValueError
        On a non-positive target or step count.
    """
    if not target > 0:
        raise ValueError(f"target penalty must be > 0, got {target}")
    if path_steps < 1 or final_steps < 0:
        raise ValueError("path_steps must be >= 1 and final_steps >= 0")
    first = max(start, target)
    path = list(np.geomspace(first, target, path_steps)) if path_steps > 1 else [target]
    path[-1] = target
    penalties = [float(p) for p in path] + [float(target)] * final_steps
    iters = [int(path_iters)] * path_steps + [int(final_iters)] * final_steps
    return penalties, iters


class LogFalkonAdapter(FalkonFamily):
    """LogisticFalkon (logistic loss, binary classification).

    Options
    -------
    M, max_M, large_n, large_n_max_M, keops, error_every, plateau_rtol, rise_tol, check_divergence
        As for :class:`baselines.falkon.FalkonAdapter`.
    path_start : float, default 1e-3
    path_steps : int, default 3
    path_iters : int, default 3
    final_steps : int or None, default None
        Newton steps at the target penalty after the path. None: sized to
        the shared time budget like every plan (docs/contracts.md, "One
        budget per cell"): M is planned for ``MIN_FINAL_STEPS`` of them, then
        the steps grow to as many as the share allows at the measured pace,
        at most ``max_final_steps``; without a time budget
        ``MIN_FINAL_STEPS``. At the old fixed 2, LogFalkon used 5-7 s of a
        300 s share and its training logistic loss still moved by 0.4-8 %
        over the last step (a9a, ijcnn1, Skin: the ✗ cells of 2026-12-05).
    max_final_steps : int, default 6
    final_iters : int, default 8
    """

    name = "logfalkon"
    losses = {"binary": ("logistic",)}
    pace_probe = ("logistic_falkon_entry_seconds",
                  "measured: LogisticFalkon's Hessian product, two GaussianKernel.mmv calls, the fit's block size")
    option_defaults = {**FalkonFamily.common_options, "path_start": 1e-3, "path_steps": 3, "path_iters": 3,
                       "final_steps": None, "max_final_steps": 6, "final_iters": 8}
    option_kinds = {**FalkonFamily.option_kinds, "final_steps": "int"}
    int_options = {"final_steps": (0, "sized to the time budget"), "max_final_steps": (MIN_FINAL_STEPS, None)}
    signal = "training error after each Newton step (LogisticFalkon error_fn callback)"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # final_steps, max_final_steps: int_options, checked there
        steps = self.options["final_steps"]
        self._steps: int | None = None if steps is None else int(steps)

    def _final_steps(self) -> int:
        """Newton steps at the target: the option, the plan's, or ``MIN_FINAL_STEPS`` before a plan."""
        if self.options["final_steps"] is not None:
            return int(self.options["final_steps"])
        return self._steps if self._steps is not None else MIN_FINAL_STEPS

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        self._steps = None if self.options["final_steps"] is None else int(self.options["final_steps"])
        plan = super()._plan(budget, n, d)  # M for MIN_FINAL_STEPS (or the given) steps
        if self.options["final_steps"] is None:
            plan = {**plan, **self._size_final_steps(budget, n, d, int(plan["M"]))}
        penalties, iters = self._path(n)
        return {**plan, "penalty_list": penalties, "iter_list": iters, "final_steps": self._final_steps()}

    def _size_final_steps(self, budget: Budget, n: int, d: int, M: int) -> dict[str, Any]:
        """``final_steps`` to fill the shared time at the plan's M: ``MIN_FINAL_STEPS`` + what the rest allows.

        The fit is priced as :meth:`_kernel_passes` blocks of ``n x M`` kernel
        entries at the measured pace (:meth:`_entry_pace`: LogisticFalkon's Hessian product);
        each further step costs ``final_iters + 1`` passes plus its callback.
        Sets ``self._steps``; returns the plan's record (empty without a time
        budget, where the steps stay ``MIN_FINAL_STEPS``).
        """
        cap = int(self.options["max_final_steps"])
        self._steps = MIN_FINAL_STEPS
        found = self._time_limit(budget)
        if found is None:
            return {}
        limit, origin = found
        pace, timed = self._entry_pace(int(d))
        per_pass = n * M * pace
        one_pc = super()._preconditioner_seconds()[0](M)  # one preconditioner at M (one per Newton step)

        def seconds_now() -> float:
            return self._kernel_passes(n) * per_pass + (int(self.options["path_steps"]) + self._steps) * one_pc

        while self._steps < cap:
            self._steps += 1
            if seconds_now() > limit:
                self._steps -= 1
                break
        seconds = seconds_now()
        why = (f"final_steps {self._steps}: as many Newton steps at the target as fit (at most max_final_steps = "
               f"{cap}): {self._kernel_passes(n):.4g} passes of n x M = {n} x {M} kernel entries at {pace * 1e9:.2f} ns "
               f"({timed}) and {int(self.options['path_steps']) + self._steps} preconditioners of {one_pc:.3g} s "
               f"= {seconds:.3g} s, {'within' if seconds <= limit else 'over'} {origin}")
        return {"time_limit_s": limit, "kernel_entry_ns": pace * 1e9, "predicted_fit_s": seconds,
                "steps_reason": why}

    def _preconditioner_seconds(self) -> tuple[Any, str]:
        """Falkon's preconditioner seconds times the Newton steps: LogisticFalkon recomputes it at every step."""
        one = super()._preconditioner_seconds()[0]
        steps = int(self.options["path_steps"]) + self._final_steps()
        return (lambda m: steps * one(m)), (f"{steps} preconditioners (one per Newton step) of M^3 flops at the "
                                            "measured GEMM rate")

    def _path(self, n: int) -> tuple[list[float], list[int]]:
        o = self.options
        return penalty_path(logfalkon_penalty(self.lam, n), o["path_start"], o["path_steps"], o["path_iters"],
                            self._final_steps(), o["final_iters"])

    def _cg_iterations(self) -> int:
        """CG iterations of one fit: ``path_iters`` per path step, ``final_iters`` per final step."""
        o = self.options
        return int(o["path_steps"]) * int(o["path_iters"]) + self._final_steps() * int(o["final_iters"])

    def _kernel_passes(self, n: int | None = None) -> float:
        """Blocks of ``n x M`` kernel entries one fit computes (the time-aware plan's cost model).

        Per Newton step: one per CG iteration, one for the gradient of the
        logistic loss at the current point, and every ``error_every`` steps
        the callback's prediction on at most ``CHECK_ROWS`` training rows
        (``min(n, CHECK_ROWS) / n`` of a pass; a whole pass when ``n`` is None).
        """
        o, every = self.options, self.options["error_every"]
        steps = int(o["path_steps"]) + self._final_steps()
        share = 1.0 if not n else min(int(n), CHECK_ROWS) / int(n)
        return self._cg_iterations() + steps + (math.ceil(steps / int(every)) * share if every else 0)

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        from falkon import LogisticFalkon
        from falkon.gsc_losses import LogisticLoss
        from falkon.kernels import GaussianKernel

        opts = self._falkon_options()
        kernel = GaussianKernel(sigma=self.sigma, opt=opts)
        penalties, iters = self._path(X.shape[0])  # n of this fit, which may differ from plan()'s
        self.plan_ = {**self.plan_, "penalty_list": penalties, "iter_list": iters}
        error, metric = falkon_error_fn("binary")
        history = self._history
        holder: dict[str, Any] = {}

        def error_fn(t: Any, p: Any) -> tuple[float, str]:
            value = error(t, p)
            step = len(history)
            history.append({"step": step, "penalty": penalties[min(step, len(penalties) - 1)],
                            "seconds": float(holder["model"].fit_times_[-1]), metric: value,
                            "logistic_loss": mean_logistic_loss(t, p)})
            if self.checkpoint_hook is not None:  # this Newton step's iterate on the test rows (issue 42)
                decision = iterate_decision("binary", holder["model"], sys._getframe(1))
                if decision is not None:
                    self._checkpoint(decision, step=step, penalty=history[-1]["penalty"], train_error=value)
            return value, metric

        every = self.options["error_every"]
        model = LogisticFalkon(
            kernel=kernel,
            penalty_list=penalties,
            iter_list=iters,
            loss=LogisticLoss(kernel),
            M=min(self.plan_["M"], X.shape[0]),  # plan() may have been for more rows
            seed=self.seed,
            error_fn=error_fn if every else None,
            error_every=every,
            options=opts,
        )
        self._fit_upstream(model, holder, metric, X, target)

    def _describe(self) -> dict[str, Any]:
        n = self.n_train_
        penalties = self.plan_.get("penalty_list") if self.plan_ else None
        return {
            "conversions": {
                "penalty": None if n is None else logfalkon_penalty(self.lam, n),
                "penalty_list": penalties,
                "sigma": self.sigma,
                "M": None if self.plan_ is None else self.plan_["M"],
                "formulas": {"penalty": "lam / n ((penalty/2)||f||^2 + mean logistic loss)",
                             "penalty_list": "geometric from path_start to the target, then final_steps at it",
                             "sigma": "GaussianKernel(sigma): exp(-||x-z||^2 / (2 sigma^2)), unchanged"},
            },
        }

    def _convergence(self) -> dict[str, Any]:
        """Newton's plateau at the target penalty: the mean logistic loss of the last two steps there.

        ``converged`` is True when the last two evaluated steps both ran at
        the target penalty (the path's end and its ``final_steps``) and the
        mean training logistic loss (<= ``CHECK_ROWS`` rows) changed by at
        most ``plateau_rtol`` (relative) between them; False when it moved
        more; None when fewer than two steps at the target were evaluated.
        The error rate is not the test: it moves in steps of ``1 / rows``
        (at 0.15 error on 1,500 rows one flipped row is a relative change of
        4e-3), so a ``1e-3`` plateau on it almost never held, and every
        LogFalkon cell read not converged (issue 40).
        """
        history = list(self._history)
        final = history[-1][self._metric] if history else None
        info = {"history": history, "final": final}
        target = self.plan_["penalty_list"][-1] if self.plan_ else None
        at_target = [h["logistic_loss"] for h in history if h["penalty"] == target]
        converged = relative_plateau(at_target, self.options["plateau_rtol"])
        if converged is None:
            return {**info, "converged": None,
                    "reason": f"{len(at_target)} evaluated Newton step(s) at the target penalty {target:g}: "
                              f"fewer than two (final_steps, error_every)"}
        change = abs(at_target[-1] - at_target[-2]) / max(abs(at_target[-2]), 1e-12)
        word = "plateaued" if converged else "still moving"
        return {**info, "converged": converged,
                "reason": (f"training logistic loss (<= {CHECK_ROWS} training rows) at the target penalty {target:g} "
                           f"{word}: relative change {change:.2e} over the last Newton step (rtol "
                           f"{self.options['plateau_rtol']}; a plateau test, LogisticFalkon has no certificate)")}
