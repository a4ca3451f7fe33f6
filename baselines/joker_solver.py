"""The Joker adapters (solver ids ``joker-exact`` and ``joker-inexact``), same contract as the baselines.

Wraps ``joker.JokerRegressor`` / ``joker.JokerClassifier`` (``docs/contracts.md``,
"joker"). Joker's parameters are the benchmark's own (sigma, lam, losses),
so there is no conversion; ``describe()`` says so.

Memory model used by :meth:`plan` (elements, times the dtype size in bytes;
one block visit touches only the block's kernel columns; the exact
solver's kernel row cache comes on top, sized from what the budget leaves,
:func:`joker_cache_plan`):

exact, block size ``b``::

    n b            kernel columns K[:, B] of one block
    n d            the training data
    n (d + 2)      the augmented rows the row cache computes Gaussian rows from (one GEMM)
    4 n C          alpha, K alpha, y and the gradient (C outputs)
    3 b^2 + b d    K_BB, the block Hessian and CG workspace, X_B

inexact (random Fourier features, ``M`` components)::

    n d + 3 n C    the data, alpha, y
    M (d + 2 + C)  the feature map (W, b) and theta = Psi^T alpha
    b M            Psi_B = psi(X_B) of one block (never the n x M matrix)
    3 b^2 + b d    block Hessian, CG workspace, X_B

Loss and kernel names come from the solver itself (``joker.losses``,
``joker.kernels``), so this module imports torch; the registry
(:mod:`baselines.registry`) imports it only when a Joker id is looked up.

The plan takes the largest block size (and, for the inexact solver, first
the largest ``M``) that fits the budget, capped by ``n`` and the device's
caps: ``max_block_size`` / ``max_components`` on the CPU,
``gpu_max_block_size`` / ``gpu_max_components`` on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from joker.kernels import KERNELS
from joker.losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES
from joker.estimators import CACHE_MIN_FEATURES
from joker.solver import DEFAULTS

from .base import Adapter, Budget, torch_threads
from .planning import RATE_CEILING

__all__ = ["JokerAdapter", "JokerExactAdapter", "JokerInexactAdapter", "joker_exact_bytes", "joker_inexact_bytes",
           "joker_cache_plan"]

_CLASSIFICATION = tuple(CLASSIFICATION_LOSSES)
MIN_BLOCK = 16
MIN_COMPONENTS = 64
#: Epochs a CPU plan predicts a Joker fit to take (the shared time rule, ``docs/contracts.md``, "One budget
#: per cell"): full HEPC KRR, RFF, M = 1,536 and 2,048, converged in 6 epochs at tol 1e-3 (2026-12-04); the
#: exact solver on the local subsets took 3-8. A fit that needs more stops at the trial's limit, like any other.
PLANNED_EPOCHS = 6


def joker_exact_bytes(n: int, d: int, block: int, dtype_bytes: int, outputs: int = 1) -> int:
    """Working memory of exact Joker, in bytes (module docstring, "exact")."""
    return int(dtype_bytes * (n * block + n * d + n * (d + 2) + 4 * n * outputs + 3 * block * block + block * d))


def joker_inexact_bytes(n: int, d: int, block: int, m: int, dtype_bytes: int, outputs: int = 1) -> int:
    """Working memory of inexact (RFF) Joker, in bytes (module docstring, "inexact")."""
    return int(dtype_bytes * (n * d + 3 * n * outputs + m * (d + 2 + outputs) + block * m
                              + 3 * block * block + block * d))


def joker_cache_plan(option: float | None, spare: int, n: int, dtype_bytes: int) -> dict[str, Any]:
    """The kernel row cache of exact Joker (estimator ``cache_size``, MiB) and what it holds.

    ``option`` None: half the memory the budget leaves beside the working
    memory (``spare`` bytes; the other half is headroom for temporaries and
    predict), up to the whole n x n kernel; a number: that many MiB.
    Returns ``cache_size`` (MiB), ``cache_bytes`` (used: whole rows of n
    entries, at most n of them), ``cache_rows`` and ``cache_whole`` (all n rows fit).
    """
    full = n * n * dtype_bytes
    mib = float(option) if option is not None else max(0, min(spare // 2, full)) / 2**20
    rows = min(n, int(mib * 2**20) // max(1, n * dtype_bytes))
    return {"cache_size": mib, "cache_bytes": rows * n * dtype_bytes, "cache_rows": rows, "cache_whole": rows == n}


def _halvings(start: int, floor: int) -> list[int]:
    sizes = []
    while start >= floor:
        sizes.append(start)
        start //= 2
    return sizes or [floor]


class JokerAdapter(Adapter):
    """Common part of the two Joker solver ids.

    Options
    -------
    block_size : int or None, default None
        Fixed block size; None: the largest that fits the budget.
    max_block_size : int, default ``joker.solver.DEFAULTS.block_size`` (256)
        Largest block size the plan tries on the CPU.
    gpu_max_block_size : int, default 4096
        Largest block size the plan tries on a GPU.
    tol : float, default ``DEFAULTS.tol`` (1e-3)
        Relative duality gap to stop at (Joker's ``tol``).
    kkt_tol : float or None, default ``DEFAULTS.kkt_tol`` (None: sqrt(tol))
        Relative KKT residual to stop at.
    max_epochs : int, default ``DEFAULTS.max_epochs`` (100)
    max_time : float or None, default ``DEFAULTS.max_time`` (None)
        Seconds.
    fit_intercept : bool, default False
        Joker's regularised bias (a constant s^2 added to the kernel; the
        paper's model has none). LIBSVM's bias is unregularised.
    intercept_scaling : float, default 1.0
        The constant s of that bias.
    epsilon : float, default 0.1
        SVR tube half-width (regression only), in units of the y the adapter is given
        (through the harness: standard deviations of ``y_train``, ``docs/contracts.md``,
        "Stated problems").
    delta : float, default 1.0
        Huber threshold (regression only), in the same units.
    odm_theta, odm_upsilon : float or None, default None
        ODM margin parameters (classification only; passed when set).
    solver_options : dict or None, default None
        Extra ``joker.solver.SolverOptions`` fields.
    """

    module = "joker"
    preload_modules = ("joker.estimators",)
    distribution = "joker-bench"
    option_intercept = "regularised bias"  # fit_intercept: a constant s^2 added to the kernel
    accepts_sparse = True  # the Joker estimators take scipy.sparse CSR as it is (joker.sparse)
    losses = {"regression": tuple(REGRESSION_LOSSES), "binary": _CLASSIFICATION, "multiclass": _CLASSIFICATION}
    kernels = tuple(KERNELS)
    devices = ("cpu", "cuda")
    # max_block_size 256, the estimators' default: measured fastest (exact ijcnn1
    # L1-SVC 7-8 s against 9-11 s at 512 and 15 s at 1024; RFF L2-SVC on a HIGGS
    # subset, lam=0.1, M=1024: 9 epochs against 39 at 1024, where the per-visit CG
    # budget is too short for a block that large).
    # On a GPU the block step is launch- and sync-bound, not arithmetic-bound (H200, HEPC, RFF M=2048:
    # 2.4 ms per 2048-row block whatever M; block 256 did not converge in 85 s, block 2048 in 13 s),
    # so the GPU caps are larger (gpu_max_block_size, and gpu_max_components for the inexact solver).
    common_options: dict[str, Any] = {"block_size": None, "max_block_size": DEFAULTS.block_size,
                                      "gpu_max_block_size": 4096, "tol": DEFAULTS.tol,
                                      "max_epochs": DEFAULTS.max_epochs, "max_time": DEFAULTS.max_time,
                                      "kkt_tol": DEFAULTS.kkt_tol, "epsilon": 0.1, "delta": 1.0,
                                      "odm_theta": None, "odm_upsilon": None, "solver_options": None,
                                      "fit_intercept": False, "intercept_scaling": 1.0}
    signal = "relative duality gap (with the KKT residual)"
    option_kinds = {"block_size": "int", "odm_theta": "number", "odm_upsilon": "number", "solver_options": "dict",
                    "cache_size": "number", "n_components": "int", "max_time": "number", "kkt_tol": "number"}

    def _cap(self, option: str) -> int:
        """The device's cap: ``gpu_<option>`` on a GPU, ``<option>`` on the CPU."""
        return int(self.options[f"gpu_{option}" if self.on_gpu else option])

    def _estimator_kwargs(self, n: int) -> dict[str, Any]:
        o = self.options
        kwargs: dict[str, Any] = dict(
            loss=self.loss, kernel=self.kernel, sigma=self.sigma, lam=self.lam,
            n_components=self.plan_.get("n_components"), block_size=min(self.plan_["block_size"], n),
            tol=o["tol"], max_epochs=o["max_epochs"], max_time=o["max_time"], device=self.device,
            dtype=self.dtype, random_state=self.seed, fit_intercept=bool(o["fit_intercept"]),
            intercept_scaling=float(o["intercept_scaling"]),
        )
        # JokerRegressor takes epsilon/delta, JokerClassifier the ODM parameters.
        own = ("epsilon", "delta") if self.task == "regression" else ("odm_theta", "odm_upsilon")
        if self.plan_.get("cache_size") is not None:  # exact: kernel rows cached in what the budget leaves
            kwargs["cache_size"] = self.plan_["cache_size"]
        for key in own + ("kkt_tol", "solver_options"):
            if o[key] is not None:
                kwargs[key] = o[key]
        if self.plan_.get("max_cg_iter") is not None:  # the large-n plan's CG cap; solver_options win
            kwargs["solver_options"] = {"max_cg_iter": int(self.plan_["max_cg_iter"]), **(o["solver_options"] or {})}
        return kwargs

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        from joker import JokerClassifier, JokerRegressor

        cls = JokerRegressor if self.task == "regression" else JokerClassifier
        model = cls(**self._estimator_kwargs(X.shape[0]))
        if self.checkpoint_hook is not None:  # each certificate's iterate, scored by the harness (issue 42)
            self.model_ = model
            model.epoch_callback = lambda row: self._checkpoint(self._decision, epoch=row["epoch"], gap=row["gap"],
                                                                kkt=row["kkt"])
        try:
            with torch_threads(self.n_threads):
                model.fit(X, target)
        finally:
            model.__dict__.pop("epoch_callback", None)  # the fitted model holds no reference to the harness
        self.model_ = model

    def _decision(self, X: np.ndarray) -> np.ndarray:
        with torch_threads(self.n_threads):
            if self.task == "regression":
                return np.asarray(self.model_.predict(X), dtype=np.float64)
            scores = np.asarray(self.model_.decision_function(X), dtype=np.float64)
        if self.task == "binary":
            # JokerClassifier was fitted on -1/+1, so its classes_[1] is +1.
            return scores.reshape(-1)
        return scores

    def _describe(self) -> dict[str, Any]:
        return {
            "conversions": {
                "sigma": self.sigma,
                "lam": self.lam,
                "block_size": None if self.plan_ is None else self.plan_["block_size"],
                "n_components": None if self.plan_ is None else self.plan_.get("n_components"),
                "formulas": {"sigma": "native (no conversion)", "lam": "native (sum of losses, no conversion)"},
            },
        }

    def _convergence(self) -> dict[str, Any]:
        m = self.model_
        gap = float(m.dual_gap_)
        kkt = float(m.kkt_residual_)
        converged = bool(m.converged_)
        kkt_tol = self.options["kkt_tol"]
        kkt_tol = kkt_tol if kkt_tol is not None else float(self.options["tol"]) ** 0.5
        reason = (f"relative gap {gap:.3g} and KKT residual {kkt:.3g} (worst output) after {m.n_epochs_} epochs "
                  f"({'met' if converged else 'did not meet'} tol={self.options['tol']:g}, kkt_tol={kkt_tol:g})")
        extra = {key: float(getattr(m, attr)) for key, attr in (("primal", "primal_"), ("dual", "dual_"))
                 if getattr(m, attr, None) is not None}
        return {"converged": converged, "reason": reason, "history": [dict(h) for h in m.history_],
                "final": gap, "dual_gap": gap, "kkt_residual": kkt, "n_epochs": int(m.n_epochs_), **extra}


class JokerExactAdapter(JokerAdapter):
    """``joker-exact``: DBCD-TR on the exact kernel (``n_components=None``).

    Extra options
    -------------
    cache_size : float or None, default None
        MiB of cached kernel rows (the estimator's ``cache_size``); None:
        on data of at least ``joker.estimators.CACHE_MIN_FEATURES`` (32)
        features what the budget leaves beside the working memory, up to
        the whole n x n kernel (:func:`joker_cache_plan`; the plan records
        it), on fewer none (the estimators' ``cache_size="auto"`` rule).
    """

    name = "joker-exact"
    option_defaults = {**JokerAdapter.common_options, "cache_size": None}

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str]:
        # one epoch forms every row's kernel row once unless the cache holds the whole kernel
        return 2.0 * n * n * d, f"one epoch of exact kernel rows: 2 n^2 d (n = {n}, d = {d}; a fit takes several)"

    def _work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float | None:
        # the n^2 kernel entries of an epoch, unless the cache holds the whole kernel (then the first epoch's)
        return float(n) * n

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        dsz = self.dtype_bytes
        limit = budget.gpu_bytes if self.on_gpu else budget.host_bytes
        fixed = self.options["block_size"]
        sizes = [min(int(fixed), n)] if fixed else _halvings(min(self._cap("max_block_size"), n), MIN_BLOCK)
        block = next((b for b in sizes if joker_exact_bytes(n, d, b, dsz) <= limit), sizes[-1])
        est = joker_exact_bytes(n, d, block, dsz)
        option = self.options["cache_size"]
        if option is None and d < CACHE_MIN_FEATURES:
            # the estimators' cache_size="auto" rule (joker.estimators.auto_cache_size, measured): on few
            # features a kernel row costs about as much to recompute as to read back. Full Skin (d = 3),
            # squared hinge, through the harness: a 1,619 MiB partial cache 47.6 s, 7,763 MiB 65.7 s
            return {"block_size": block, "n_components": None, "est_bytes": est, **joker_cache_plan(0, 0, n, dsz),
                    "plan_reason": f"d = {d} < {CACHE_MIN_FEATURES} features: no kernel-row cache "
                                   "(recomputing a row costs about what reading it back does)"}
        cache = joker_cache_plan(option, limit - est, n, dsz)
        return {"block_size": block, "n_components": None, "est_bytes": est, **cache,
                **self._exact_time(budget, n, d, cache["cache_rows"])}

    def _exact_time(self, budget: Budget, n: int, d: int, cached_rows: int) -> dict[str, Any]:
        """The shared time rule's record for exact Joker (no model size to lower: the prediction is recorded).

        ``PLANNED_EPOCHS`` epochs, each forming the kernel rows the cache
        does not hold (all n^2 entries in the first) at the measured Gaussian
        pace; a plan whose work cannot fit at all is refused by
        :meth:`Planning._refuse_impossible_time`. Empty without a time limit.
        """
        limit = self._time_limit(budget)
        if limit is None:
            return {}
        entries = float(n) * n * (1 + (PLANNED_EPOCHS - 1) * (1 - cached_rows / n))
        if 2.0 * entries * d / RATE_CEILING <= 0.1 * limit[0]:  # not worth a probe (as Planning._refuse_impossible_time)
            return {"time_limit_s": limit[0],
                    "time_reason": (f"{PLANNED_EPOCHS} epochs of the uncached kernel rows, {entries:.3g} entries: "
                                    f"under a tenth of {limit[1]} even at 1 TFLOP/s (not probed)")}
        from .pace import kernel_entry_seconds

        pace = kernel_entry_seconds(int(d), self.dtype, self.n_threads)
        seconds = entries * pace
        fits = "within" if seconds <= limit[0] else "over"
        return {"time_limit_s": limit[0], "kernel_entry_ns": pace * 1e9, "predicted_fit_s": seconds,
                "time_reason": (f"{PLANNED_EPOCHS} epochs of the uncached kernel rows, {entries:.3g} entries at "
                                f"{pace * 1e9:.2f} ns each (measured) = {seconds:.3g} s, {fits} {limit[1]} "
                                "(exact kernel: no model size to lower)")}


class JokerInexactAdapter(JokerAdapter):
    """``joker-inexact``: DBCD-TR on random Fourier features (``n_components=M``).

    Extra options
    -------------
    n_components : int or None, default None
        Fixed M; None: the largest (halving from ``max_components``) that fits.
    max_components : int, default 4096
        Largest M the plan tries on the CPU.
    gpu_max_components : int, default 16384
        Largest M the plan tries on a GPU (H200, HEPC: M=16384 with blocks
        of 4096 converged in 11.6 s, 680 MiB of allocator peak).
    large_n : int, default 100000
        On the CPU, from this many training rows on, the plan caps M at
        ``large_n_components`` and, for the squared loss (whose blocks CG
        solves without forming K_BB), starts the blocks at
        ``large_n_block_size``; the plan's ``plan_reason`` says which rule
        chose its sizes. Measured (estimator, float32, 2 threads, M / block):
        full Skin (196,045 rows) L2-SVC 4096 / 256 16.7 s, 2048 / 256 9.5 s,
        both 99.47%; HEPC 100,000 rows KRR 4096 / 256 11.2 s RMSE 0.0528,
        2048 / 2048 4.8 s RMSE 0.0541; full HEPC 351 s -> 110 s.
    large_n_components : int, default 1536
        Measured on full HEPC (KRR, blocks of 2,048, at most 10 CG
        iterations per visit, float32, 2 threads, idle machine, one run
        each, 2026-12-04): M = 2,048 62.7 s of fit (6 epochs, RMSE
        0.03486), M = 1,536 49.0 s (6 epochs, RMSE 0.03543).
    large_n_block_size : int, default 2048
    large_n_cg_iter : int, default 10
        With that rule and the squared loss, the per-visit CG budget may
        grow only to this (``SolverOptions.max_cg_iter``; the plan records
        it as ``max_cg_iter``; ``solver_options`` given explicitly win).

    Notes
    -----
    The large-n rule, measured on full HEPC (1,844,332 x 10, float32, 2
    threads, tol 1e-3): the 20,000-row plan (M = 4,096, blocks of 256)
    converged in 351 s of fit; M = 2,048 with blocks of 2,048 in 110 s
    (RMSE 0.0349 against 0.0343), blocks of 256 at that M 137 s. Through
    the harness (cpu-4g) M = 2,048 with blocks of 2,048 took 324 s, the CG
    budget growing to 100 iterations per visit in the last epochs (48, 114,
    85 s); capped at 10, 194 s, the same 6 epochs and RMSE 0.0350. A squared
    hinge or logistic block is solved by the compiled block solver on
    K_BB = Psi_B Psi_B^T (b^2 M per visit, n b M per epoch), so it keeps
    the small blocks.
    """

    name = "joker-inexact"
    option_defaults = {**JokerAdapter.common_options, "n_components": None, "max_components": 4096,
                       "gpu_max_components": 16384, "large_n": 100_000, "large_n_components": 1536,
                       "large_n_block_size": 2048, "large_n_cg_iter": 10}

    positive_int_options = ("max_components", "gpu_max_components", "large_n", "large_n_components",
                            "large_n_block_size", "large_n_cg_iter", "max_block_size", "gpu_max_block_size")

    def _large_n_rule(self, n: int) -> tuple[int, int, str, int | None]:
        """(M cap, block cap, reason, CG cap or None) for n rows (class docstring, ``large_n``)."""
        m_cap, b_cap = self._cap("max_components"), self._cap("max_block_size")
        o = self.options
        if self.on_gpu or n < int(o["large_n"]):
            return m_cap, b_cap, (f"{'GPU' if self.on_gpu else 'CPU'} caps: M <= {m_cap}, block <= {b_cap}, "
                                  "the largest that fit the budget"), None
        m_cap = min(m_cap, int(o["large_n_components"]))
        why = f"CPU, n = {n} >= large_n = {int(o['large_n'])}: M <= {m_cap} (time per epoch ~ n M)"
        cg = None
        if self.loss == "squared":
            b_cap = max(b_cap, int(o["large_n_block_size"]))
            cg = int(o["large_n_cg_iter"])
            why += (f", block <= {b_cap} (squared loss: CG block solves, no K_BB; fewer, larger visits), "
                    f"at most {cg} CG iterations per visit")
        return m_cap, b_cap, why + "; the largest that fit the budget", cg

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str] | None:
        m, b = plan.get("n_components"), plan.get("block_size")
        if not m or not b or self.on_gpu:
            return None
        if self.loss == "squared":  # CG block solves (joker.solver._Run._coordinate_inner): products Psi_B Psi_B^T P
            cg = int(plan.get("max_cg_iter") or 10)
            return (2.0 * d + 4.0 * cg) * n * m, (f"one epoch: features 2 n M d and up to {cg} CG products of 4 n M "
                                                  f"(n = {n}, d = {d}, M = {m}; a fit takes several)")
        # boxed or kinked losses on the CPU: each visit forms K_BB = Psi_B Psi_B^T (2 b^2 M), n / b visits an epoch
        return (2.0 * d + 2.0 * b) * n * m, (f"one epoch: features 2 n M d and the blocks' K_BB, 2 n b M "
                                             f"(n = {n}, d = {d}, M = {m}, b = {b}; a fit takes several)")

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        dsz = self.dtype_bytes
        limit = budget.gpu_bytes if self.on_gpu else budget.host_bytes
        fixed_m, fixed_b = self.options["n_components"], self.options["block_size"]
        m_cap, b_cap, why, cg = self._large_n_rule(n)
        extra = {} if cg is None else {"max_cg_iter": cg}
        if fixed_m or fixed_b:
            why = "fixed by the options" + ("" if fixed_m and fixed_b else f" (the other: {why})")
        ms = [int(fixed_m)] if fixed_m else _halvings(m_cap, MIN_COMPONENTS)
        bs = [min(int(fixed_b), n)] if fixed_b else _halvings(min(b_cap, n), MIN_BLOCK)
        fits = [(m, next((b for b in bs if joker_inexact_bytes(n, d, b, m, dsz) <= limit), None)) for m in ms]
        fits = [(m, b) for m, b in fits if b is not None] or [(ms[-1], bs[-1])]
        m, b = fits[0]
        if not fixed_m:
            # the shared time rule (docs/contracts.md, "One budget per cell"): PLANNED_EPOCHS epochs of the
            # n x M features, each priced as a Gaussian kernel entry (a projection on d and a cosine against
            # a distance and an exponential). Measured on full HEPC (float32, 2 threads, M = 1,536): 49.0 s
            # for 6 epochs, 2.9 ns per row x component per epoch with everything else included, against the
            # probe's 3.4-4.9 ns: the model errs on the long side by at most ~1.7x.
            capped = self._time_cap(budget, n, d, m, PLANNED_EPOCHS, "M")
            if capped is not None:
                m, timed = capped
                b = next((b for b in bs if joker_inexact_bytes(n, d, b, m, dsz) <= limit), bs[-1])
                why = timed["time_reason"] + "; " + why
                extra = {**extra, **timed}
        return {"block_size": b, "n_components": m, "est_bytes": joker_inexact_bytes(n, d, b, m, dsz),
                "plan_reason": why, **extra}
