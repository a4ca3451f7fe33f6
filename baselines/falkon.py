"""``falkon``: Falkon (Nystroem KRR solved by preconditioned CG), ``falkon.Falkon``.

Falkon is not on PyPI; install it as its README says (see the project
README, "Optional baselines"). Without it, :meth:`FalkonAdapter.available`
returns ``(False, "falkon is not installed")``.

Conversions (``baselines.conventions``): ``penalty = lam / n`` (squared
loss), ``GaussianKernel(sigma)`` uses the benchmark's sigma as is
(``exp(-||x - z||^2 / (2 sigma^2))``).

Memory (``plan``), CPU: the largest ``M`` whose M x M preconditioner
(about ``2 * M^2`` elements: the Cholesky factor and its workspace) plus
the centres fit the budget next to the data, capped by ``n`` and the
``max_M`` option; Falkon's ``max_cpu_mem`` (the bound it sizes its
kernel blocks by) is what is left, at most ``max_block_mib`` (16 MiB:
larger blocks are page-faulted in afresh on every CG iteration,
:data:`MAX_BLOCK_MIB`), but at least what Falkon needs beside the
centres' copies at that M (:func:`falkon_min_block_bytes`; M is chosen
with it counted). GPU: :func:`falkon_gpu_plan`
(the preconditioner takes at most half of the GPU budget, Falkon's
``max_gpu_mem`` is three quarters of it; ``docs/contracts.md``, "GPU plans
of the adapters"). The paper-scale sweep runs Falkon in float32 on the GPU
(Falkon's examples and its lower GPU thresholds for float32), with the
M x M kernel in float64 (Falkon's default ``no_single_kernel=True``) and
the divergence check below.

Convergence: training error after every CG iteration through Falkon's
``error_fn`` / ``error_every`` callback, on at most ``CHECK_ROWS``
training rows (:func:`check_subset`; on all of them the callback was a
second kernel pass per iteration). Falkon runs a fixed number of CG
iterations and gives no certificate, so ``converged`` is a plateau test on
that curve. Divergence: in float32 on CPU Falkon silently diverged on HEPC
and Skin at median-heuristic bandwidths (``docs/anchors.md``), so the
default dtype is float64 and every fit is compared with the trivial
predictor (:class:`baselines.base.DivergedError`).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable

import numpy as np

from .base import CHECK_ROWS, MIB, Adapter, Budget, capture_output, relative_plateau, torch_threads
from .conventions import falkon_penalty
from .planning import FIT_TIME_SHARE

__all__ = ["FalkonAdapter", "FalkonFamily", "check_subset", "falkon_error_fn", "falkon_gpu_plan", "largest_m",
           "mean_logistic_loss", "score_rmse"]

#: Smallest kernel-block memory left to Falkon, in bytes.
MIN_BLOCK_BYTES = 16 * MIB
#: Falkon's CPU preconditioner (``potrf``, its ``lauum``, ``trsm``) against ``M^3`` flops at the measured GEMM
#: rate: full ijcnn1, M = 14,950, float64, 2 threads: predicted 36.8 s at the GEMM rate, the fit took 114 s of
#: which its 25 kernel passes were about 38 s, so the preconditioner ran at about half that rate.
PRECONDITIONER_SLOWDOWN = 2.0
#: Rows of the smallest kernel block :func:`falkon_min_block_bytes` makes room for.
MIN_BLOCK_ROWS = 64


def falkon_min_block_bytes(M: int, d: int, dtype_bytes: int) -> int:
    """The least ``max_cpu_mem`` with which Falkon's CPU kernel-vector products can run at ``M`` centres.

    Falkon sizes its row blocks from ``max_cpu_mem`` after the centres'
    own working copies (``falkon.utils.helpers.select_dim_over_n``: the
    ``m x d`` terms come first) and raises ``MemoryError("Available memory
    ... is not enough")`` when no row fits: on full a9a (d = 123) the
    16 MiB block failed at M = 11,728 (the centres alone are 11 MiB).
    Counted here: two ``M x d`` copies of the centres, ``2 M`` vectors and
    ``MIN_BLOCK_ROWS`` rows of ``2 M + 2 d + 2`` elements, in bytes.
    """
    return int(dtype_bytes * (2 * M * d + 2 * M + MIN_BLOCK_ROWS * (2 * M + 2 * d + 2)))
#: Default of the option ``max_block_mib``: the most host memory Falkon's CPU kernel blocks get
#: (``FalkonOptions.max_cpu_mem``). Falkon sizes its ``n x M`` block to fill ``max_cpu_mem`` and allocates it
#: afresh (``torch.empty`` + ``fill_(0)``, ``falkon/mmv_ops/fmmv.py`` ``mmv_run_thread`` / ``dmmv_run_thread``) on
#: every kernel-vector product. A block above glibc's largest mmap threshold (32 MiB) is a fresh mapping each
#: time, page-faulted in on every CG iteration: profiled on 200,000 HEPC rows, M = 256, float64, with the
#: budget's 3 GiB as blocks ``fill_`` took 8.5 s of a 27 s fit and the process 12 s of system time; on
#: 100,000 rows the kernel work (addmm, exp, fill) took 8.8 s at 16 MiB against 16.7 s at 64 MiB
#: (docs/contracts.md, "Falkon"). 8 MiB is below what Falkon's block sizing accepts.
MAX_BLOCK_MIB = 16
#: Share of the GPU budget passed to Falkon as ``max_gpu_mem`` (the rest: allocator rounding,
#: tensors Falkon allocates outside its own accounting; the allocator is capped at the budget).
GPU_WORK_SHARE = 0.75
#: Largest share of the GPU budget the preconditioner's factorisation may take on the device.
PC_SHARE = 0.5


def largest_m(room_bytes: float, dtype_bytes: int, d: int) -> int:
    """Largest M with ``dtype_bytes * (2 M^2 + M (d + 4)) <= room_bytes`` (0 if none).

    ``2 M^2``: Falkon's M x M preconditioner and its workspace; ``M (d + 4)``:
    the centres and a few M-vectors.
    """
    if room_bytes <= 0:
        return 0
    a, b, c = 2.0 * dtype_bytes, float(dtype_bytes * (d + 4)), float(room_bytes)
    m = int((-b + math.sqrt(b * b + 4 * a * c)) / (2 * a))
    while m > 0 and dtype_bytes * (2 * m * m + m * (d + 4)) > room_bytes:
        m -= 1
    return m


def falkon_gpu_plan(budget: Budget, n: int, d: int, dtype_bytes: int, M: int | None = None,
                    max_M: int = 20_000) -> dict[str, Any]:
    """Falkon's knobs on a GPU: the rule of ``docs/contracts.md``, "GPU plans of the adapters".

    The data stay on the host (Falkon streams them to the device). Falkon
    may use ``max_gpu_mem = GPU_WORK_SHARE * budget`` (3/4); the
    preconditioner's factorisation on the device (``2 M^2 + M (d + 4)``
    elements, :func:`largest_m`) takes at most ``PC_SHARE * budget`` (1/2),
    so the kernel blocks keep at least a quarter of the budget while it
    runs, and all of ``max_gpu_mem`` during the iterations.

    Parameters
    ----------
    budget : baselines.base.Budget
        Its ``gpu_bytes`` is the method's GPU budget (the CUDA context excluded,
        ``joker.bench.measure.gpumem``); its ``host_bytes`` bounds ``max_cpu_mem``.
    n, d : int
        Training rows and features.
    dtype_bytes : int
        4 (float32) or 8 (float64).
    M : int or None
        Forced number of centres (None: the largest the rule allows, capped
        by ``n`` and ``max_M``).
    max_M : int

    Returns
    -------
    dict
        ``M``, ``pc_bytes``, ``max_gpu_mem``, ``max_cpu_mem`` and
        ``est_bytes`` = ``max(max_gpu_mem, pc_bytes + work)`` with
        ``work = max(16 MiB, budget / 4)``: above the budget (and then
        refused by :meth:`baselines.base.Adapter.plan`) only when a forced
        ``M`` breaks the rule or the budget is below the smallest block room.
    """
    limit = budget.gpu_bytes
    cap = min(n, int(max_M))
    M = min(int(M), n) if M is not None else max(1, min(cap, largest_m(PC_SHARE * limit, dtype_bytes, d)))
    pc_bytes = dtype_bytes * (2 * M * M + M * (d + 4))
    max_gpu = max(MIN_BLOCK_BYTES, int(GPU_WORK_SHARE * limit))
    work = max(MIN_BLOCK_BYTES, limit // 4)
    data = dtype_bytes * (n * d + 2 * n)  # X, Y and the callback's predictions, in (pinned) host memory
    return {"M": M, "pc_bytes": int(pc_bytes), "max_gpu_mem": int(max_gpu),
            "max_cpu_mem": int(max(MIN_BLOCK_BYTES, budget.host_bytes - data)),
            "est_bytes": int(max(max_gpu, pc_bytes + work))}


def iterate_decision(task: str, model: Any, frame: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The decision function of the iterate Falkon's error callback is evaluating (anytime checkpoints).

    Falkon (and LogisticFalkon) call ``error_fn`` from their CG callback,
    whose frame holds the iterate's coefficients (``alpha``, LogisticFalkon:
    ``coeff``) and the Nystroem centres (``ny_points``, ``ny_X``) before the
    model's ``alpha_`` is set (falkon 0.8, ``models/model_utils.py``
    ``val_cback``; ``models/logistic_falkon.py``).

    Parameters
    ----------
    task : str
        ``multiclass`` keeps every column; otherwise the first.
    model : falkon.Falkon or falkon.LogisticFalkon
        The model being fitted.
    frame : frame
        The callback's frame (``sys._getframe(1)`` inside ``error_fn``).

    Returns
    -------
    callable or None
        ``decision(X) -> ndarray`` (X float array (n, d) in the fit's dtype),
        or ``None`` when the frame does not hold the iterate (another falkon version).
    """
    names = frame.f_locals if frame is not None else {}
    coeff = names.get("alpha", names.get("coeff"))
    centres = names.get("ny_points", names.get("ny_X"))
    if coeff is None or centres is None:
        return None

    def decision(X: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = model._predict(torch.from_numpy(X), centres, coeff).cpu().numpy()
        return out if task == "multiclass" else out[:, 0]

    return decision


def falkon_error_fn(task: str) -> tuple[Callable[[Any, Any], float], str]:
    """Training-error function on torch tensors, and its name.

    Regression: RMSE over all outputs; binary (targets -1/+1): error rate of
    ``sign(pred)``; multiclass (targets one-hot in -1/+1): error rate of
    ``argmax``.
    """
    if task == "regression":
        return (lambda t, p: float(((t - p) ** 2).mean().sqrt())), "rmse"
    if task == "binary":
        return (lambda t, p: float(((p > 0) != (t > 0)).double().mean())), "error_rate"
    return (lambda t, p: float((p.argmax(dim=1) != t.argmax(dim=1)).double().mean())), "error_rate"


def score_rmse(t: Any, p: Any) -> float:
    """RMSE of the scores ``p`` against the targets ``t`` (torch tensors; -1/+1 targets for classification).

    The square root of the mean squared loss Falkon minimises (plus its
    penalty): a continuous quantity, unlike an error rate, which moves in
    steps of ``1 / rows`` and so never passes a relative plateau test of
    ``1e-3`` on a few thousand rows.
    """
    return float(((t - p) ** 2).mean().sqrt())


def mean_logistic_loss(t: Any, p: Any) -> float:
    """Mean logistic loss ``log(1 + exp(-t p))`` of scores ``p`` against -1/+1 targets ``t`` (torch tensors).

    The data term of LogisticFalkon's objective (``falkon.gsc_losses.LogisticLoss``),
    computed stably as ``softplus(-t p)``.
    """
    import torch

    return float(torch.nn.functional.softplus(-(t * p).double()).mean())


def check_subset(X: np.ndarray, target: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``CHECK_ROWS`` training rows (seeded, in order) on which the per-iteration callback scores the model.

    Falkon's callback otherwise predicts on every training row after each
    CG iteration: a second ``n x M`` kernel pass per iteration, as much as
    the iteration itself (profiled on 200,000 HEPC rows: 11.6 s of
    predictions in a 27 s fit). Falkon scores the ``Xts, Yts`` it is given
    instead (``falkon/models/model_utils.py``, ``_get_callback_fn``).
    """
    n = X.shape[0]
    if n <= CHECK_ROWS:
        return X, target
    rows = np.sort(np.random.default_rng(seed).choice(n, CHECK_ROWS, replace=False))
    return np.ascontiguousarray(X[rows]), target[rows]


class FalkonFamily(Adapter):
    """What Falkon and LogisticFalkon share: options, plan, threads, prediction."""

    module = "falkon"
    preload_modules = ("falkon.kernels",)
    distribution = "falkon"
    devices = ("cpu", "cuda")
    check_divergence = True
    common_options: dict[str, Any] = {
        "M": None,
        "max_M": 20_000,
        "large_n": 200_000,
        "large_n_max_M": 4096,
        "keops": None,
        "error_every": 1,
        "max_block_mib": MAX_BLOCK_MIB,
        "pc_epsilon_32": None,
        "plateau_rtol": 1e-3,
        "rise_tol": 0.05,
        "check_divergence": True,
    }
    option_kinds = {"M": "int", "keops": "str", "pc_epsilon_32": "number"}
    #: The CPU pace the time-aware plan sizes by: a function of :mod:`baselines.falkon_pace` and what it times
    #: (Falkon's CG iteration is one fused ``dmmv``; LogisticFalkon's Hessian product is two ``mmv`` calls).
    pace_probe = ("falkon_entry_seconds", "measured: Falkon's GaussianKernel.dmmv, the fit's block size")

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        if self.on_gpu:
            return falkon_gpu_plan(budget, n, d, self.dtype_bytes, self.options["M"], int(self.options["max_M"]))
        dsz = self.dtype_bytes
        outputs = 1
        data = dsz * (n * d + 2 * n * outputs)  # X, Y and the training predictions of the callback
        room = budget.host_bytes - data - MIN_BLOCK_BYTES
        cap = min(n, int(self.options["max_M"]))
        why = "largest M whose preconditioner (2 M^2 elements) fits the budget, capped by n and max_M"
        if n >= int(self.options["large_n"]):
            # Each CG iteration recomputes K_nM (about 2 n M (d + 2) flops, the kernel blocks and the
            # two products) and the callback one more pass: at n = 1.84M, d = 10 and M = 20,000 one
            # iteration is ~1e12 flops, 20 of them far past a CPU trial's minutes (measured: a
            # 600 s timeout in fit at cpu-4g). Time per iteration ~ n M: M is capped instead.
            cap = min(cap, int(self.options["large_n_max_M"]))
            why = (f"CPU, n = {n} >= large_n = {int(self.options['large_n'])}: M <= large_n_max_M = "
                   f"{int(self.options['large_n_max_M'])} (time per CG iteration ~ n M); else " + why)
        M = self.options["M"]
        timed: dict[str, Any] = {}
        if M is not None:
            why = "M given"
            M = min(int(M), n)
        else:
            M = max(1, min(cap, largest_m(room, dsz, d)))
            # the kernel block must hold the centres' copies and some rows (falkon_min_block_bytes): at large
            # M and d that is more than MIN_BLOCK_BYTES, and M comes down until both fit beside the data
            while M > 1 and data + dsz * (2 * M * M + M * (d + 4)) + max(
                    MIN_BLOCK_BYTES, falkon_min_block_bytes(M, d, dsz)) > budget.host_bytes:
                M -= 1
            allowed = M
            pc_seconds = self._preconditioner_seconds() if self._time_limit(budget) is not None else (None, "")
            capped = self._time_cap(budget, n, d, M, self._kernel_passes(n), "M",
                                    pc_seconds if pc_seconds[0] is not None else None)
            if capped is not None:
                M, timed = capped
                why = timed["time_reason"] + "; memory: " + why
            why += self._sqrt_n_note(n, M, allowed, timed, pc_seconds[0])
        pc_bytes = dsz * (2 * M * M + M * (d + 4))
        block = max(MIN_BLOCK_BYTES, min(budget.host_bytes - data - pc_bytes, int(self.options["max_block_mib"] * MIB)),
                    falkon_min_block_bytes(M, d, dsz))
        return {"M": M, "pc_bytes": int(pc_bytes), "est_bytes": int(data + pc_bytes + block),
                "max_cpu_mem": int(block), "plan_reason": why, **timed}

    positive_int_options = ("max_M", "large_n", "large_n_max_M", "max_block_mib")

    @staticmethod
    def _sqrt_n_note(n: int, M: int, allowed: int, timed: dict[str, Any], extra: Any = None) -> str:
        """When the plan's M is below sqrt(n), the advice and which budget forbids it, with the arithmetic.

        Falkon's maintainers advise M >= sqrt(n) (FalkonML/falkon#52; the
        statistical rate of Rudi et al. 2017, Theorem 3, holds from
        M ~ sqrt(n) centres). ``""`` when M reaches it. ``extra``: seconds of
        the preconditioner at a given M (:meth:`_preconditioner_seconds`), added to
        the kernel passes of ``M = sqrt(n)``.
        """
        need = math.isqrt(n - 1) + 1 if n > 1 else 1  # ceil(sqrt(n))
        if M >= need:
            return ""
        note = f"; M = {M} < sqrt(n) = {need} (FalkonML/falkon#52 advises M >= sqrt(n))"
        if allowed < need:
            return note + f": memory and the caps allow at most M = {allowed}"
        if timed:
            kernel = timed["kernel_passes"] * n * need * timed["kernel_entry_ns"] * 1e-9
            pc = extra(need) if extra else 0.0
            more = f" + {pc:.3g} s of preconditioner" if extra else ""
            return note + (f": M = {need} is predicted at {timed['kernel_passes']:.4g} x n x {need} x "
                           f"{timed['kernel_entry_ns']:.2f} ns{more} = {kernel + pc:.3g} s, over the "
                           f"{timed['time_limit_s']:.3g} s of the shared budget")
        return note

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        every = self.options["error_every"]
        if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
            raise ValueError(f"{self.name}: option error_every must be None or an integer >= 1, got {every!r}")

    def _cg_iterations(self) -> int:
        """CG iterations of one fit (Falkon: ``maxiter``)."""
        return int(self.options["maxiter"])

    def _preconditioner_seconds(self) -> tuple[Any, str]:
        """Seconds of Falkon's preconditioner at ``M`` centres, for the time-aware plan: ``M^3`` flops at the GEMM pace.

        Falkon's CPU preconditioner forms ``K_MM``, factors it (``potrf``,
        ``M^3 / 3``), multiplies the factor by its transpose (``lauum``,
        ``M^3 / 3``) and factors again (``M^3 / 3``): about ``M^3`` flops,
        priced at ``1 / PRECONDITIONER_SLOWDOWN`` of the measured GEMM rate
        (:func:`baselines.pace.gemm_flop_seconds`).
        Without it full ijcnn1 got M = 15,553 and 18,866 (predicted 41 and
        75 s of kernel passes): the fit took 132 s, and the other trial ended
        ``timeout`` (M^3 = 3.8e12 and 6.7e12 flops, 1-3 minutes here).
        """
        from .pace import gemm_flop_seconds

        dtype = self.dtype if self.dtype in ("float32", "float64") else "float64"
        per_flop = PRECONDITIONER_SLOWDOWN * gemm_flop_seconds(dtype, self.n_threads)
        return (lambda m: float(m) ** 3 * per_flop), (f"the preconditioner's M^3 flops at 1/{PRECONDITIONER_SLOWDOWN:g} "
                                                      "of the measured GEMM rate")

    def _kernel_passes(self, n: int | None = None) -> float:
        """Blocks of ``n x M`` kernel entries one fit computes (the time-aware plan's cost model).

        Falkon: one per CG iteration (``K_nM^T K_nM v`` in one sweep of
        blocks), one for the right-hand side ``K_nM^T y``, and per
        training-error evaluation of the callback (every ``error_every``
        iterations) a prediction on at most ``CHECK_ROWS`` training rows
        (:func:`check_subset`): ``min(n, CHECK_ROWS) / n`` of a pass (a
        whole pass when ``n`` is None).
        """
        t, every = self._cg_iterations(), self.options["error_every"]
        share = 1.0 if not n else min(int(n), CHECK_ROWS) / int(n)
        return t + 1 + (math.ceil(t / int(every)) * share if every else 0)

    def _entry_pace(self, d: int) -> tuple[float, str]:
        """Falkon's own ``GaussianKernel.dmmv`` timed with the fit's block size (:mod:`baselines.falkon_pace`).

        On a GPU (no time-aware plan) the generic probe of :class:`baselines.planning.Planning`.
        """
        if self.on_gpu:
            return super()._entry_pace(d)
        from . import falkon_pace

        probe, what = self.pace_probe
        dtype = self.dtype if self.dtype in ("float32", "float64") else "float64"
        keops = self.options["keops"] or "no"
        block = int(float(self.options["max_block_mib"]) * MIB)
        return getattr(falkon_pace, probe)(int(d), dtype, self.n_threads, block, keops), what

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str] | None:
        if self.on_gpu:
            return None
        m, t = int(plan["M"]), self._cg_iterations()
        # each CG iteration: kernel blocks of K_nM (2 n M d) and the products K_nM^T K_nM v (4 n M);
        # the preconditioner: two M x M Cholesky factorisations (2 M^3 / 3)
        return t * 2.0 * n * m * (d + 2) + 2.0 * m ** 3 / 3, (
            f"{t} CG iterations of 2 n M (d + 2) plus the preconditioner's 2 M^3 / 3 (n = {n}, d = {d}, M = {m})")

    def _falkon_options(self) -> Any:
        from falkon import FalkonOptions

        keops = self.options["keops"] or ("no" if not self.on_gpu else "auto")
        kwargs: dict[str, Any] = dict(
            use_cpu=not self.on_gpu,
            keops_active=keops,
            max_cpu_mem=float(self.plan_["max_cpu_mem"]),
        )
        if self.options["pc_epsilon_32"] is not None:
            kwargs["pc_epsilon_32"] = float(self.options["pc_epsilon_32"])
        if self.on_gpu:  # otherwise small problems silently run on the CPU
            kwargs.update(max_gpu_mem=float(self.plan_["max_gpu_mem"]), min_cuda_pc_size_32=0,
                          min_cuda_pc_size_64=0, min_cuda_iter_size_32=0, min_cuda_iter_size_64=0)
        return FalkonOptions(**kwargs)

    def _targets(self, target: np.ndarray) -> np.ndarray:
        """(n, outputs) targets in the working dtype; one-hot in -1/+1 for multiclass."""
        if self.task == "multiclass":
            Y = -np.ones((len(target), len(self.classes_)))
            Y[np.arange(len(target)), target] = 1.0
        else:
            Y = target[:, None]
        return np.ascontiguousarray(Y, dtype=np.dtype(self.dtype))

    def _decision(self, X: np.ndarray) -> np.ndarray:
        import torch

        with torch_threads(self.n_threads), torch.inference_mode():
            out = self.model_.predict(torch.from_numpy(X)).cpu().numpy()
        return out if self.task == "multiclass" else out[:, 0]

    def _divergence_reason(self, target: np.ndarray) -> str:
        """The training-error curve rose far above its best value: the iterations diverged.

        Flagged when the last value exceeds twice the best one and the rise is
        more than ``rise_tol`` (error rates) or ``rise_tol * std(y)`` (RMSE).
        On Skin in float32 the curve goes from 1% to 20-40% error while the
        final accuracy can still beat the majority class.
        """
        values = [h[self._metric] for h in self._history]
        if len(values) < 2 or not all(np.isfinite(values)):
            return "" if all(np.isfinite(values)) else "non-finite training error during the iterations"
        best, last = min(values), values[-1]
        scale = float(np.std(target)) if self.task == "regression" else 1.0
        if last > 2 * best and last - best > self.options["rise_tol"] * scale:
            at = int(np.argmin(values))
            return (f"training {self._metric} rose from {best:.4g} (evaluation {at + 1}) to {last:.4g} at the end: "
                    f"the iterations diverged")
        return ""

    def _plateau(self, key: str) -> tuple[bool | None, str]:
        errors = [h[key] for h in self._history]
        converged = relative_plateau(errors, self.options["plateau_rtol"])
        if converged is None:
            return None, "fewer than two error evaluations (error_every)"
        change = abs(errors[-1] - errors[-2]) / max(abs(errors[-2]), 1e-12)
        word = "plateaued" if converged else "still moving"
        return converged, (f"training {key} (<= {CHECK_ROWS} training rows) {word}: relative change {change:.2e} "
                           f"in the last step (rtol {self.options['plateau_rtol']}; a plateau test, Falkon has no "
                           f"certificate)")


    def _fit_upstream(self, model: Any, holder: dict, metric: str, X: np.ndarray, target: np.ndarray,
                      warm_start: Any = None) -> None:
        """Fit a built Falkon/LogisticFalkon model with the trial's threads, capturing its output.

        Parameters
        ----------
        model : falkon.Falkon or falkon.LogisticFalkon
        holder : dict
            Gets ``holder["model"] = model`` (read by the error callback).
        metric : str
            Name of the training-error metric of the callback.
        X : ndarray of shape (n_samples, n_features)
        target : ndarray of shape (n_samples,)
        warm_start : torch.Tensor or None
            Falkon's ``warm_start``: the CG starting point in the
            preconditioner's space (a previous run's ``beta_``).

        Notes
        -----
        The callback scores at most ``CHECK_ROWS`` training rows
        (:func:`check_subset`, passed to Falkon as its ``Xts, Yts``), never
        test rows.
        """
        import torch

        holder["model"] = model
        self._metric = metric
        Xc, tc = check_subset(X, target, self.seed)
        extra = {} if warm_start is None else {"warm_start": warm_start}
        with torch_threads(self.n_threads), capture_output() as lines:
            self._upstream_log = lines
            model.fit(torch.from_numpy(X), torch.from_numpy(self._targets(target)),
                      torch.from_numpy(Xc), torch.from_numpy(self._targets(tc)), **extra)
        self.model_ = model


class FalkonAdapter(FalkonFamily):
    """Falkon KRR (squared loss) for regression and for classification on -1/+1 targets.

    Options
    -------
    M : int or None, default None
        Number of Nystroem centres; None: the largest that fits the budget
        (capped by ``n`` and ``max_M``).
    max_M : int, default 20000
    large_n : int, default 200000
        On the CPU, from this many training rows M is at most
        ``large_n_max_M`` (each CG iteration costs about 2 n M (d + 2)
        flops); the plan's ``plan_reason`` says which rule chose M.
    large_n_max_M : int, default 4096
        On the CPU, M is also capped so that the predicted fit (kernel
        passes at the measured pace, ``plan["predicted_fit_s"]``) takes at
        most ``FIT_TIME_SHARE`` of the trial's time left (``Budget.time_s``,
        the one budget of the cell); when that forbids M >= sqrt(n)
        (FalkonML/falkon#52), ``plan_reason`` shows the arithmetic.
    maxiter : int, default 20
        CG iterations of one run of ``Falkon.fit`` (Falkon's default).
    max_cg_iter : int or None, default 100
        When a run of ``maxiter`` iterations ends with the training error
        still moving (the plateau test of ``plateau_rtol``), the fit goes on
        with Falkon's ``warm_start`` (the last run's ``beta_``, the same
        centres through ``FixedSelector``) for another ``maxiter``
        iterations, up to ``max_cg_iter`` in all, and only while the
        measured seconds of one run still fit the shared time
        (``FIT_TIME_SHARE`` of ``Budget.time_s``): Falkon's own advice for
        a CG that has not converged is more iterations, and 20 are too few
        at small penalties (ijcnn1, 20,000 rows, penalty 5e-8: test
        accuracy 93.60 % after 20 iterations, 95.69 % after 100). None: one
        run of ``maxiter`` iterations. The plan sizes M for one run.
    keops : {None, "no", "auto", "force"}, default None
        Falkon's ``keops_active``; None: "no" on CPU (KeOps's CPU backend
        compiled for minutes and then ran a CG iteration 2.6x slower than
        Falkon's blocked torch kernels: 20,000 HEPC rows, M = 256, float64),
        "auto" on GPU.
    max_block_mib : int, default 16
        On the CPU, the most memory of Falkon's kernel blocks
        (``max_cpu_mem``), MiB; :data:`MAX_BLOCK_MIB`.
    pc_epsilon_32 : float or None, default None
        Falkon's ``pc_epsilon_32`` (jitter of the float32 preconditioner's
        Cholesky); None: Falkon's default (1e-5; its benchmark runner uses
        1e-6).
    error_every : int or None, default 1
        Evaluate the training error every this many CG iterations (None:
        never; the divergence check still runs after the fit).
    plateau_rtol : float, default 1e-3
        Relative change of the training error that counts as a plateau.
    rise_tol : float, default 0.05
        Rise of the training error above its best value that counts as
        divergence (error-rate units; times std(y) for RMSE).
    check_divergence : bool, default True
        Compare with the trivial predictor and check the curve after the fit.
    """

    name = "falkon"
    losses = {"regression": ("squared",), "binary": ("squared",), "multiclass": ("squared",)}
    option_defaults = {**FalkonFamily.common_options, "maxiter": 20, "max_cg_iter": 100}
    #: checked by the base class (:func:`baselines.validation.check_int_option`)
    int_options = {"maxiter": (1, None), "max_cg_iter": (1, "one run of maxiter iterations")}
    signal = "training error per CG iteration (Falkon error_fn callback)"

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        from falkon import Falkon
        from falkon.kernels import GaussianKernel

        opts = self._falkon_options()
        error, metric = falkon_error_fn(self.task)
        history = self._history
        holder: dict[str, Any] = {}

        before = {"iterations": 0, "seconds": 0.0}  # of the earlier warm-started runs

        def error_fn(t: Any, p: Any) -> tuple[float, str]:
            value = error(t, p)
            times = holder["model"].fit_times_
            it = before["iterations"] + len(times) - 1
            point = {"iteration": it, "seconds": before["seconds"] + float(times[-1]), metric: value}
            if metric != "rmse":  # classification: also the squared loss's RMSE, the curve the plateau test reads
                point["rmse"] = score_rmse(t, p)
            history.append(point)
            if self.checkpoint_hook is not None:  # this CG iterate on the test rows (issue 42)
                decision = iterate_decision(self.task, holder["model"], sys._getframe(1))
                if decision is not None:
                    self._checkpoint(decision, iteration=it, train_error=value)
            return value, metric

        every = self.options["error_every"]
        model = Falkon(
            kernel=GaussianKernel(sigma=self.sigma, opt=opts),
            penalty=falkon_penalty(self.lam, X.shape[0]),
            M=min(self.plan_["M"], X.shape[0]),  # plan() may have been for more rows
            maxiter=int(self.options["maxiter"]),
            seed=self.seed,
            error_fn=error_fn if every else None,
            error_every=every,
            options=opts,
        )
        start = time.perf_counter()
        self._fit_upstream(model, holder, metric, X, target)
        self._runs = [len(model.fit_times_) - 1 if every else int(self.options["maxiter"])]
        self._stop = ""
        while True:
            self._stop = self._why_stop(time.perf_counter() - start)
            if self._stop:
                break
            from falkon.center_selection import FixedSelector

            before["iterations"] = sum(self._runs)
            before["seconds"] = time.perf_counter() - start
            model.center_selection = FixedSelector(model.ny_points_)
            model.maxiter = min(int(self.options["maxiter"]), int(self.options["max_cg_iter"]) - sum(self._runs))
            self._fit_upstream(model, holder, metric, X, target, warm_start=model.beta_)
            self._runs.append(len(model.fit_times_) - 1)

    def _why_stop(self, elapsed: float) -> str:
        """Why the CG does not go on with another warm-started run (``""``: it goes on); ``max_cg_iter``."""
        cap, chunk, done = self.options["max_cg_iter"], int(self.options["maxiter"]), sum(self._runs)
        if cap is None or not self.options["error_every"]:
            return "one run of maxiter iterations (max_cg_iter None or no error callback)"
        if self._runs[-1] < self.model_.maxiter:
            return "CG residual below Falkon's cg_tolerance"
        if done >= int(cap):
            return f"max_cg_iter = {int(cap)} iterations reached"
        converged, _ = self._plateau("rmse")
        if converged:
            return "training error plateaued"
        time_s = (self.plan_ or {}).get("time_budget_s")
        if time_s is not None:
            limit = FIT_TIME_SHARE * float(time_s)
            one_run = elapsed / len(self._runs)
            if elapsed + one_run > limit:
                return (f"another run of {chunk} iterations ({one_run:.3g} s measured) would pass {limit:.0f} s "
                        f"({FIT_TIME_SHARE:g} of the {float(time_s):.0f} s the trial had left)")
        return ""

    def _describe(self) -> dict[str, Any]:
        n = self.n_train_
        return {
            "conversions": {
                "penalty": None if n is None else falkon_penalty(self.lam, n),
                "sigma": self.sigma,
                "M": None if self.plan_ is None else self.plan_["M"],
                "formulas": {"penalty": "lam / n (squared loss, Falkon's 1/n-scaled objective)",
                             "sigma": "GaussianKernel(sigma): exp(-||x-z||^2 / (2 sigma^2)), unchanged"},
            },
        }

    def _convergence(self) -> dict[str, Any]:
        maxiter = int(self.options["maxiter"])
        final = self._history[-1][self._metric] if self._history else None
        runs = list(getattr(self, "_runs", []))
        info = {"history": list(self._history), "final": final, "maxiter": maxiter,
                "max_cg_iter": self.options["max_cg_iter"], "cg_runs": runs, "stopped": getattr(self, "_stop", "")}
        # With a callback, Falkon appends one fit time per completed CG iteration; its CG breaks
        # (before the callback) when the residual falls below cg_tolerance.
        done = sum(runs) if self.options["error_every"] else None
        if done is not None and runs and runs[-1] < self.model_.maxiter:
            return {**info, "converged": True, "n_iter": done + 1,
                    "reason": (f"CG residual below Falkon's cg_tolerance at iteration {done + 1} "
                               f"(runs of maxiter={maxiter}: {runs})")}
        converged, reason = self._plateau("rmse")
        how = (f"ran maxiter={maxiter} CG iterations" if len(runs) <= 1 else
               f"ran {done} CG iterations in {len(runs)} warm-started runs of maxiter={maxiter}")
        return {**info, "converged": converged, "n_iter": done,
                "reason": f"{how}, stopped: {info['stopped']}; " + reason}
