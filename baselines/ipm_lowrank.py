"""``ipm-lowrank``: the L1-SVC by a low-rank primal-dual interior-point method (this project's ``joker.ipm``).

Wraps :class:`joker.ipm.LowRankIPMClassifier` (Gu, Song and Zhang, arXiv
2307.07735; Fine and Scheinberg, JMLR 2001; Ferris and Munson, SIAM J.
Optim. 2003): the SVM dual on a rank-k factor of the kernel (random Fourier
features, the same as ``joker-inexact`` for the same seed, or Nystroem),
solved to a relative duality gap of 1e-8 in float64 by default (``tol="auto"``:
the estimator's dtype-aware target, larger in float32, where 1e-8 is below the
rounding floor).

Conventions: ``lam`` is the estimator's own (sum of hinge losses, C = 1/lam),
``sigma`` native. The benchmark's problem has no intercept, so neither has
this method unless ``fit_intercept`` is set.

Memory model of :meth:`plan` (elements, times the dtype size): ``2 n d`` the
data and its tensor copy, ``5 n k`` the factor U, V = diag(y) U, |V| and the
Newton solve's scaled copy of V (one transient), ``30 n`` the IPM's vectors,
``4 k^2 + k d`` the capacitance, its Cholesky and the feature map. The plan
takes the largest ``k`` (halving from ``max_components``) within the budget
and ``n``. Convergence signal: the IPM's own relative duality gap.
"""

from __future__ import annotations

import warnings
from typing import Any

from .base import Adapter, Budget, torch_threads
from .planning import min_time

__all__ = ["IPMLowRankAdapter", "ipm_lowrank_bytes"]

MIN_COMPONENTS = 16
#: Iterations the time-aware CPU plan budgets for (measured at tol 1e-8, float64, 2 threads: HIGGS head 14,
#: full ijcnn1 69 at rank 1,024, 1.5 s each, against 2.0 s from ``n k^2`` at the measured GEMM rate).
TIME_ITERATIONS = 70


def ipm_lowrank_bytes(n: int, d: int, k: int, dtype_bytes: int) -> int:
    """Working memory of the low-rank IPM, in bytes (module docstring)."""
    return int(dtype_bytes * (2 * n * d + 5 * n * k + 30 * n + 4 * k * k + k * d))


class IPMLowRankAdapter(Adapter):
    """Low-rank IPM L1-SVC (binary, hinge) on CPU or CUDA.

    Options
    -------
    n_components : int or None, default None
        Fixed rank k; None: the largest (halving from ``max_components``) that fits.
        Capped at the number of training rows n (a factor of n rows has rank
        at most n, and the estimator refuses k > n): a fixed k above n fits
        rank n with a UserWarning saying so, and ``describe()["conversions"]``
        records the rank used (``n_components``) next to the one asked for
        (``n_components_requested``).
    max_components : int, default 1024
        The IPM costs O(n k^2) per iteration: 1024 keeps the local table on 2 cores.
        On the CPU the rank (from the halvings within memory) is also
        capped so that ``TIME_ITERATIONS`` iterations of ``n k^2`` flops at
        the measured GEMM rate take at most ``FIT_TIME_SHARE`` of the trial's
        time left (``Budget.time_s``, the one budget of the cell);
        ``plan["time_reason"]`` says how.
    factor : {"rff", "nystroem"}, default "rff"
    fit_intercept : bool, default False
    tol : float or "auto", default "auto"
        The estimator's ``tol`` (``"auto"``: 1e-8 in float64, a float32-reachable
        target in float32; :attr:`joker.ipm.LowRankIPMClassifier.tol_`).
        Relative duality gap and residuals to stop at.
    max_iter : int, default 200
    max_time : float or None, default None
        Seconds of IPM iterations (checked after each); on the CPU at most the plan's
        ``time_limit_s`` (the shared rule, :func:`baselines.planning.min_time`).
    """

    name = "ipm-lowrank"
    module = "joker"
    preload_modules = ("joker.ipm",)
    distribution = "joker-bench"
    losses = {"binary": ("hinge",)}
    option_intercept = "fitted bias"  # fit_intercept: the dual equality y^T a = 0 (unregularised b)
    kernels = ("gaussian", "laplacian")
    devices = ("cpu", "cuda")
    option_defaults = {"n_components": None, "max_components": 1024, "factor": "rff", "fit_intercept": False,
                       "tol": "auto", "max_iter": 200, "max_time": None}
    option_kinds = {"n_components": "int", "max_time": "number"}
    signal = "relative duality gap of the IPM (with its relative residuals)"

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        dsz = self.dtype_bytes
        limit = budget.gpu_bytes if self.on_gpu else budget.host_bytes
        fixed = self.options["n_components"]
        ks = [int(fixed)] if fixed else []
        if not ks:
            k = int(self.options["max_components"])
            while k >= MIN_COMPONENTS:
                ks.append(k)
                k //= 2
        ks = [min(k, n) for k in ks] or [min(MIN_COMPONENTS, n)]
        k = next((k for k in ks if ipm_lowrank_bytes(n, d, k, dsz) <= limit), ks[-1])
        timed = self._time_rank(budget, n, [c for c in ks if c <= k]) if not fixed else {}
        k = timed.pop("k", k)
        limit = self._time_limit(budget)
        if limit is not None:  # the fit's max_time (the IPM stops after the iteration that passes it)
            timed.setdefault("time_limit_s", limit[0])
        return {"n_components": k, "est_bytes": ipm_lowrank_bytes(n, d, k, dsz), **timed}

    def _time_rank(self, budget: Budget, n: int, ks: list[int]) -> dict[str, Any]:
        """The largest rank of ``ks`` (descending, within memory) whose predicted fit fits the time (CPU).

        Cost model: ``TIME_ITERATIONS`` iterations of ``n k^2`` flops (the
        ``U^T D U`` of each Newton system) at the measured rate of
        :func:`baselines.pace.gemm_flop_seconds`; the limit is
        :meth:`Planning._time_limit` (:meth:`Planning._time_pick`). Empty without one (GPU, no time).
        """
        if self._time_limit(budget) is None or not ks:
            return {}
        from .pace import gemm_flop_seconds

        rate = gemm_flop_seconds(self.dtype, self.n_threads)
        picked = self._time_pick(budget, ks, lambda k: TIME_ITERATIONS * n * k * k * rate, "rank",
                                 f"{TIME_ITERATIONS} iterations of n k^2 flops at {1e-9 / rate:.1f} GFLOP/s (measured)")
        k, record = picked
        return {"k": k, "gflops_measured": 1e-9 / rate, **record}

    def _fit(self, X, target) -> None:
        from joker.ipm import LowRankIPMClassifier

        o = self.options
        n = X.shape[0]
        fixed = o["n_components"]
        if fixed and int(fixed) > n:
            warnings.warn(f"{self.name}: n_components={int(fixed)} exceeds the {n} training rows; a rank-k factor "
                          f"of {n} rows has rank at most {n}, so rank {n} is used", UserWarning, stacklevel=3)
        model = LowRankIPMClassifier(lam=self.lam, kernel=self.kernel, sigma=self.sigma,
                                     n_components=min(int(self.plan_["n_components"]), n),
                                     factor=o["factor"], fit_intercept=bool(o["fit_intercept"]), tol=o["tol"],
                                     max_iter=o["max_iter"], device=self.device,
                                     max_time=min_time(o["max_time"], self.plan_.get("time_limit_s")),
                                     dtype=self.dtype, random_state=self.seed)
        if self.checkpoint_hook is not None:  # each Newton step's iterate, scored by the harness (issue 42)
            self.model_ = model
            model.iteration_callback = lambda row: self._checkpoint(
                self._decision, iteration=row["iteration"], gap=row["gap"],
                residual=max(row["residual_dual"], row["residual_primal"]))
        try:
            with torch_threads(self.n_threads):
                model.fit(X, target)
        finally:
            model.__dict__.pop("iteration_callback", None)  # the fitted model holds no reference to the harness
        self.model_ = model

    def _decision(self, X):
        with torch_threads(self.n_threads):
            return self.model_.decision_function(X).reshape(-1)

    def _describe(self) -> dict[str, Any]:
        return {
            "conversions": {
                "sigma": self.sigma,
                "lam": self.lam,
                "C": 1.0 / self.lam,
                "n_components": self._rank(),
                "n_components_requested": self.options["n_components"],
                "formulas": {"sigma": "native (no conversion)", "lam": "native (sum of losses, no conversion)",
                             "C": "1 / lam (the box of the SVM dual)",
                             "n_components": "min(n_components, or the largest rank within the budget halving "
                                             "from max_components, n_samples): the rank used"},
            },
        }

    def _rank(self) -> int | None:
        """The factor rank of the last fit, else of the plan (None before either)."""
        model = getattr(self, "model_", None)
        if model is not None and self._fitted:
            return int(model.n_components)
        return None if self.plan_ is None else int(self.plan_["n_components"])

    def _convergence(self) -> dict[str, Any]:
        m = self.model_
        gap = float(m.dual_gap_)
        reason = (f"relative gap {gap:.3g}, residuals {m.residual_dual_:.2g} / {m.residual_primal_:.2g} after "
                  f"{m.n_iter_} iterations ({'met' if m.converged_ else 'did not meet'} tol={m.tol_:.3g})")
        history = [{"epoch": h["iteration"], "seconds": h["seconds"], "dual": h["dual"], "primal": h["primal"],
                    "gap": h["gap"], "kkt": max(h["residual_dual"], h["residual_primal"])} for h in m.history_]
        return {"converged": bool(m.converged_), "reason": reason, "history": history, "final": gap,
                "dual_gap": gap, "kkt_residual": max(float(m.residual_dual_), float(m.residual_primal_)), "primal": float(m.primal_), "dual": float(m.dual_), "n_epochs": int(m.n_iter_)}
