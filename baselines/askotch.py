"""``askotch``: ASkotch (package ``fast_krr``), ``ASkotchV2`` on ``FullKRR``: full KRR by block coordinate descent.

ASkotch (Rathore, Frangella, Yang, Derezinski, Udell, "Have ASkotch: A Neat
Solution for Large-scale Kernel Ridge Regression", arXiv 2407.10070) solves
the *full* KRR system ``(K + lambd I) w = b`` by accelerated, Nystrom-
preconditioned randomized block coordinate descent (sketch-and-project),
with the kernel evaluated lazily by KeOps (O(n) memory). It is not on PyPI;
``make install`` installs it from the mirror (``baselines.install``,
``askotch``). Without it, :meth:`ASkotchAdapter.available` returns
``(False, "fast_krr is not installed")``.

Conversions (``baselines.conventions.askotch_lambd``): ``FullKRR`` minimises
``(1/2) w^T (K + lambd I) w - b^T w`` (``fast_krr.models.full_krr``:
``lin_op(v) = K v + lambd v``; its ``train_loss``), whose minimiser solves
``(K + lambd I) w = b``. The benchmark's KRR ``(lam/2)||f||^2 + (1/2) sum
(f_i - y_i)^2`` has the same minimiser at ``lambd = lam`` (no factor ``n``:
ASkotch's README writes ``lambd = 1e-6 * n`` because its authors think of a
per-sample regulariser; here ``lam`` already multiplies a sum).
``kernel_params = {"type": "rbf", "sigma": sigma}`` is
``exp(-||x - z||^2 / (2 sigma^2))`` (``fast_krr.kernels.rbf.Rbf``), the
benchmark's sigma unchanged. Binary problems are KRR on -1/+1 targets, as
for Falkon and EigenPro.

Plan (:func:`askotch_plan`): upstream's recommended block size ``n // 100``
(at least ``min(n, 1000)``: :data:`MIN_BLOCK`) and Nystrom rank ``min(rank, block)`` (upstream:
``r = 100``, ``rho = "damped"``); everything stays on the fit's device (the
rows, the targets, the iterate and two acceleration vectors, the block's
preconditioner); the kernel is never stored (KeOps reductions in tiles).

Precision: ASkotch builds its random sketches and the preconditioner's
branch from ``torch.get_default_dtype()``; the adapter sets the default to
the working dtype for the fit and restores it afterwards, so float64 runs in
float64 end to end (float64 inputs under a float32 default meet a KeOps
dtype error upstream).

Convergence and anytime points: every ``check_every`` steps (default: one
pass, ``ceil(n / block)`` steps) the relative residual ``||(K + lambd I) w
- b|| / ||b||`` (upstream's ``rel_residual``) on at most ``CHECK_ROWS``
training rows (:func:`residual_rows`: all of them up to 10,000, else a
seeded sample, whose ``||r_S|| / ||b_S||`` estimates it at ``m x n`` kernel
entries instead of ``n^2``) is recorded and reported through
:meth:`Adapter._checkpoint`; the fit stops
when it is at most ``tol``, after ``max_epochs`` passes, or after
``max_time`` seconds (on the CPU at most the plan's ``time_limit_s``:
``FIT_TIME_SHARE`` of the trial's seconds, the shared rule of every plan;
the clock is read after every step, and the fit stops early enough that
its final residual ends within the limit too:
:class:`_EvalAwareClock`). ASkotch itself has no stopping rule
(its harness runs for a time budget). A CPU plan whose one pass (``n^2``
kernel entries) cannot end within that share even at twice the measured
pace is refused before the fit (:meth:`Planning._refuse_impossible_time`):
on full HEPC a pass is 3.4e12 entries, hours on two cores.

KeOps compiles one C++ reduction per formula, dimension and dtype on first
use (about 5 s each on 2 busy cores, cached under ``~/.cache/keops*``);
the first fit of a new ``d`` pays it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .base import CHECK_ROWS, Adapter, Budget, capture_output, torch_threads
from .conventions import askotch_lambd
from .epochwise import torch_default_dtype  # ASkotch reads torch's default dtype
from .planning import min_time

__all__ = ["ASkotchAdapter", "askotch_plan"]

#: Upstream's recommended block size is ``n // BLOCK_DIVISOR`` (fast_krr README, "Hyperparameter recommendations").
BLOCK_DIVISOR = 100
#: ... but at least ``min(n, MIN_BLOCK)``: below some thousands of rows ``n // 100`` gives blocks of a few rows
#: whose steps are all Python and KeOps call overhead (600 HIGGS rows, blocks of 6: 200 s for what blocks of
#: 600 do in seconds), and each new rank ``min(100, block)`` is one more KeOps compilation.
MIN_BLOCK = 1000


def askotch_plan(n: int, d: int, dtype_bytes: int, block_size: int | None = None, rank: int = 100) -> dict[str, Any]:
    """ASkotch's knobs and memory on one device (host or GPU: everything stays where the fit runs).

    Parameters
    ----------
    n, d : int
        Training rows and features.
    dtype_bytes : int
        4 (float32) or 8 (float64).
    block_size : int or None
        Forced block size (None: upstream's ``n // 100``, at least ``min(n, MIN_BLOCK)``), capped by ``n``.
    rank : int
        Nystrom rank of the block preconditioner, capped by the block size.

    Returns
    -------
    dict
        ``block_size``, ``rank`` and ``est_bytes`` = ``dtype_bytes * (n d +
        8 n + b d + 4 b r + r^2)``: the rows, targets, iterate, the two
        acceleration vectors, the sampling probabilities and a residual
        (``8 n``), the block's rows, the sketch, its product, the factor and
        the eigenvectors (``4 b r``), the small Cholesky (``r^2``). KeOps
        reductions stream the kernel in tiles (no n x n storage).
    """
    b = min(n, int(block_size)) if block_size else min(n, max(MIN_BLOCK, n // BLOCK_DIVISOR))
    r = max(1, min(int(rank), b))
    est = dtype_bytes * (n * d + 8 * n + b * d + 4 * b * r + r * r)
    return {"block_size": int(b), "rank": int(r), "est_bytes": int(est)}


def residual_rows(n: int, seed: int) -> np.ndarray:
    """The training rows the relative residual is evaluated on: all ``n``, or ``CHECK_ROWS`` drawn with ``seed``.

    The full residual ``(K + lambd I) w - y`` is ``n^2`` kernel entries, as
    much as a pass of ASkotch's steps: on full Skin (n = 196,045) 83 s on 2
    cores, more than the fit's 75 s share, so the clock stopped the fit after
    its first step (1 % of the coordinates). On ``m`` rows it costs ``m x n``
    entries (10,000 rows of Skin: about a twentieth), and ``||r_S|| /
    ||y_S||`` estimates the relative residual (exact when ``n <= CHECK_ROWS``).

    Returns
    -------
    ndarray of int64, shape (min(n, CHECK_ROWS),)
        Sorted row indices.
    """
    if n <= CHECK_ROWS:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, CHECK_ROWS, replace=False))


class _EvalAwareClock:
    """When a time-limited ASkotch fit must stop so that its last residual and checkpoint end within ``max_time``.

    ASkotch has no stopping rule of its own; the adapter stops it at a time
    limit and then evaluates the relative residual ``||(K + lam I) w - y||``
    (one more pass over the n x n kernel) and an anytime checkpoint. Stopping
    when the clock passes ``max_time`` leaves that evaluation outside the
    limit: on full skin (n = 196,045) it is tens of seconds, and the trial
    ran out of its wall clock. This clock stops at the last step after which
    one more step and one evaluation are predicted to end within ``max_time``:
    the step from the mean of the steps so far (timed from the clock's
    creation: the model's set-up is not a step), the evaluation from the
    last one measured, or before any, from ``eval_fraction`` of a pass of
    steps (``steps_per_pass`` steps of ``b x n`` entries are ``n x n``; the
    residual on ``m`` of the ``n`` rows is ``m x n``) times ``EVAL_MARGIN``.

    Parameters
    ----------
    max_time : float or None
        Seconds from ``t0``; None: never out of time.
    steps_per_pass : int
        ``ceil(n / block)``.
    t0 : float
        ``time.perf_counter()`` at the fit's start.
    eval_fraction : float, default 1.0
        Rows of the residual over ``n`` (:func:`residual_rows`).
    """

    #: The first evaluation is predicted at this many times a pass of steps: the residual is ``n^2`` kernel
    #: entries as a pass (``n^2 + n b``), the checkpoint scores at most a few thousand test rows on top.
    EVAL_MARGIN = 1.2

    def __init__(self, max_time: float | None, steps_per_pass: int, t0: float, eval_fraction: float = 1.0) -> None:
        self.max_time = None if max_time is None else float(max_time)
        self.steps_per_pass = int(steps_per_pass)
        self.eval_fraction = float(eval_fraction)
        self.t0 = t0
        self.last = time.perf_counter()  # steps are timed from here: the model's set-up is not a step
        self.step_seconds = 0.0
        self.steps = 0
        self.eval_s: float | None = None

    def after_step(self) -> bool:
        """Record one step; True when the fit must evaluate now and stop."""
        now = time.perf_counter()
        self.step_seconds += now - self.last
        self.steps += 1
        self.last = now
        if self.max_time is None:
            return False
        step = self.step_seconds / self.steps
        evaluation = (self.eval_s if self.eval_s is not None
                      else self.EVAL_MARGIN * self.eval_fraction * self.steps_per_pass * step)
        return now - self.t0 + step + evaluation >= self.max_time

    def evaluated(self, seconds: float) -> None:
        """Record an evaluation's seconds (not counted as step time)."""
        self.eval_s = float(seconds)
        self.last = time.perf_counter()


class ASkotchAdapter(Adapter):
    """ASkotchV2 on FullKRR: full KRR (squared loss) for regression and for binary tasks on -1/+1 targets.

    Options
    -------
    block_size : int or None, default None
        Coordinates per step; None: upstream's ``n // 100``, at least ``min(n, 1000)``.
    rank : int, default 100
        Nystrom rank of each block's preconditioner (capped by the block size).
    tol : float, default 1e-6
        Stop when the relative residual ``||(K + lam I) w - y|| / ||y||`` is at most this.
    max_epochs : float, default 100
        At most ``ceil(max_epochs * n / block_size)`` steps.
    check_every : int or None, default None
        Steps between residual evaluations (``min(n, CHECK_ROWS) x n`` kernel entries each) and anytime
        checkpoints; None: one pass, ``ceil(n / block_size)`` steps.
    max_time : float or None, default None
        Stop within this many seconds of fit (wall clock from the fit's start, checked after every
        step): at the last step after which one more step and the final residual and anytime point
        are predicted to end in time (``_EvalAwareClock``).
    accelerated : bool, default True
        Upstream's Nesterov-type acceleration (``mu = lambd``, ``nu = n / block``).
    check_divergence : bool, default True
        Compare with the trivial predictor after the fit.
    """

    name = "askotch"
    module = "fast_krr"
    distribution = "fast_krr"
    preload_modules = ("fast_krr.models", "fast_krr.opts", "pykeops.torch")
    losses = {"regression": ("squared",), "binary": ("squared",)}
    devices = ("cpu", "cuda")
    option_defaults = {
        "block_size": None,
        "rank": 100,
        "tol": 1e-6,
        "max_epochs": 100.0,
        "check_every": None,
        "max_time": None,
        "accelerated": True,
        "check_divergence": True,
    }
    option_kinds = {"block_size": "int", "check_every": "int", "max_time": "number"}
    positive_int_options = ("rank",)
    signal = ("relative residual ||(K + lam I) w - y|| / ||y|| every check_every ASkotchV2 steps "
              "(on at most 10,000 seeded training rows)")
    check_divergence = True

    def _plan(self, budget: Budget, n: int, d: int) -> dict[str, Any]:
        plan = askotch_plan(n, d, self.dtype_bytes, self.options["block_size"], int(self.options["rank"]))
        plan["plan_reason"] = ("block_size given" if self.options["block_size"] else
                               f"upstream's block size n // {BLOCK_DIVISOR}, at least min(n, {MIN_BLOCK})") + (
            f"; Nystrom rank min(rank = {int(self.options['rank'])}, block); rows, targets, iterate and "
            f"preconditioner on {'the GPU' if self.on_gpu else 'the host'}, kernel streamed by KeOps")
        limit = self._time_limit(budget)  # the shared rule (CPU): stop at FIT_TIME_SHARE of the trial's seconds
        if limit is not None:
            plan["time_limit_s"] = float(limit[0])
            plan["plan_reason"] += f"; fit stopped after {limit[0]:.0f} s ({limit[1]}) if tol is not reached"
        return plan

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str] | None:
        if self.on_gpu:
            return None
        b, r = plan["block_size"], plan["rank"]
        # one pass (n / b steps): the block gradients' b x n kernel entries, n^2 in all (2 n^2 (d + 1) flops),
        # and each block's Nystrom sketch, K_bb times b x r (2 b^2 r (d + 1) per step)
        return (2.0 * n * n * (d + 1) + 2.0 * n * b * r * (d + 1),
                f"one pass of n / b steps: block gradients 2 n^2 (d + 1) and Nystrom sketches 2 n b r (d + 1) "
                f"(n = {n}, d = {d}, b = {b}, r = {r}; a fit takes several)")

    def _work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float | None:
        return float(n) * n + float(n) * plan["block_size"]

    def _least_work_entries(self, n: int, d: int, plan: dict[str, Any]) -> float | None:
        """One pass (every block visited once): the least work of a fit that a time cap still lets count.

        A time-capped fit stops within a step, but a fit that has not visited
        every block once has left most coordinates at zero: the paper counts
        ASkotch's work in passes, and its fits take several.
        """
        return self._work_entries(n, d, plan)

    def _torch_device(self) -> Any:
        import torch

        return torch.device(self.device)

    def _fit(self, X: np.ndarray, target: np.ndarray) -> None:
        import torch
        from fast_krr.models import FullKRR
        from fast_krr.opts import ASkotchV2

        n = X.shape[0]
        tdtype = torch.float64 if self.dtype == "float64" else torch.float32
        dev = self._torch_device()
        b, r = min(self.plan_["block_size"], n), min(self.plan_["rank"], self.plan_["block_size"], n)
        steps_per_pass = math.ceil(n / b)
        self._steps_per_pass = steps_per_pass
        every = int(self.options["check_every"] or steps_per_pass)
        max_steps = max(1, math.ceil(float(self.options["max_epochs"]) * steps_per_pass))
        tol = float(self.options["tol"])
        max_time = min_time(self.options["max_time"], self.plan_.get("time_limit_s"))  # the shared time rule
        self._lambd = askotch_lambd(self.lam)
        self._stop = "max_epochs"
        self._steps = 0
        self._final_row_scores = None
        forked = [dev.index or 0] if dev.type == "cuda" else []
        t0 = time.perf_counter()
        with torch_threads(self.n_threads), capture_output() as lines, torch_default_dtype(tdtype), \
                torch.random.fork_rng(devices=forked):
            self._upstream_log = lines
            torch.manual_seed(self.seed)
            x = torch.from_numpy(X).to(dev)
            y = torch.from_numpy(target.astype(X.dtype)).to(dev)
            model = FullKRR(x, y, None, None, kernel_params=self._kernel_params(), Ktr_needed=True,
                            lambd=self._lambd, task="regression" if self.task == "regression" else "classification",
                            w0=torch.zeros(n, dtype=tdtype, device=dev), device=dev)
            opt = ASkotchV2(model=model, block_sz=b, precond_params={"type": "nystrom", "r": r, "rho": "damped"},
                            accelerated=bool(self.options["accelerated"]))
            self._x_train, self.model_ = x, model
            rows = residual_rows(n, self.seed)
            self._residual_rows = len(rows)
            X_rows, y_rows = X[rows], y[torch.from_numpy(rows).to(dev)]
            y_norm = float(torch.linalg.norm(y_rows))
            clock = _EvalAwareClock(max_time, steps_per_pass, t0, eval_fraction=len(rows) / n)
            for step in range(1, max_steps + 1):
                opt.step()
                # the clock is read after every step (a pass on full HEPC is thousands of seconds: a check
                # once per pass let the trial's limit, not max_time, end the fit); the residual and the
                # anytime point every check_every steps, and once more where the time stops the fit. The
                # stop is taken early enough that this last residual (residual_rows x n entries) and its
                # checkpoint still end within max_time (_EvalAwareClock), not after it
                out_of_time = clock.after_step()
                if step % every and step != max_steps and not out_of_time:
                    continue
                t_eval = time.perf_counter()
                # (K + lambd I) w - y on the residual rows, K(X_S, X) w by upstream's lazy kernel (_scores)
                scores = self._scores(X_rows, model.w)
                # the last evaluation is of the final w (the loop only ends after one): kept for the post-fit
                # checks, which predict on the same rows when CHECK_ROWS agree (_train_decision)
                self._final_row_scores = (rows, scores)
                r = (torch.from_numpy(scores).to(dev, tdtype)
                     + self._lambd * model.w[torch.from_numpy(rows).to(dev)] - y_rows)
                residual = float(torch.linalg.norm(r)) / max(y_norm, 1e-300)
                seconds = time.perf_counter() - t0
                self._steps = step
                self._history.append({"iteration": step, "epoch": step / steps_per_pass, "seconds": seconds,
                                      "rel_residual": residual})
                if not math.isfinite(residual):
                    raise FloatingPointError(f"non-finite relative residual at step {step}")
                w = model.w.detach().clone()
                self._checkpoint(lambda Z, w=w: self._scores(Z, w), iteration=step, residual=residual)
                clock.evaluated(time.perf_counter() - t_eval)
                if residual <= tol:
                    self._stop = "tol"
                    break
                if out_of_time:
                    self._stop = "max_time"
                    break
            self._steps = step
            self._w = model.w.detach().clone()

    def _kernel_params(self) -> dict[str, Any]:
        return {"type": "rbf", "sigma": self.sigma}

    def _scores(self, X: np.ndarray, w: Any) -> np.ndarray:
        """``K(X, X_train) w`` with upstream's lazy kernel (``_get_kernels_start``, as its own test metrics)."""
        import torch
        from fast_krr.kernels.kernel_inits import _get_kernels_start

        dtype = self._x_train.dtype
        xq = torch.from_numpy(np.require(X, np.float64 if dtype == torch.float64 else np.float32, ["C", "W"]))
        with torch_threads(self.n_threads), torch.inference_mode():
            _, _, k_test = _get_kernels_start(self._x_train, xq.to(self._x_train.device), self._kernel_params(),
                                              Ktr_needed=False)
            out = (k_test @ w.reshape(-1, 1)).reshape(-1)
        return out.cpu().numpy().astype(np.float64)

    def _decision(self, X: np.ndarray) -> np.ndarray:
        return self._scores(X, self._w)

    def _train_decision(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The final residual's ``K(X_S, X) w`` when ``rows`` are its rows ``S``, else a new prediction.

        On full a9a (d = 123) the KeOps prediction on 10,000 training rows
        took 21-26 s of CPU, as long as a third of the fit; the fit's last
        residual already computed it for the same ``w``.
        """
        kept, self._final_row_scores = getattr(self, "_final_row_scores", None), None
        if kept is not None and np.array_equal(kept[0], rows):
            return kept[1]
        return super()._train_decision(X, rows)

    def _describe(self) -> dict[str, Any]:
        return {
            "conversions": {
                "lambd": askotch_lambd(self.lam),
                "sigma": self.sigma,
                "kernel_params": self._kernel_params(),
                "block_sz": None if self.plan_ is None else self.plan_["block_size"],
                "precond_params": None if self.plan_ is None else
                {"type": "nystrom", "r": self.plan_["rank"], "rho": "damped"},
                "formulas": {"lambd": "lam (FullKRR solves (K + lambd I) w = y: the minimiser of "
                                      "(lam/2)||f||^2 + (1/2) sum (f_i - y_i)^2)",
                             "sigma": "kernel_params sigma: exp(-||x-z||^2 / (2 sigma^2)), unchanged"},
            },
        }

    def _convergence(self) -> dict[str, Any]:
        final = self._history[-1]["rel_residual"] if self._history else None
        tol = float(self.options["tol"])
        converged = final is not None and final <= tol
        why = {"tol": f"relative residual {final:.3g} <= tol {tol:g}" if final is not None else "",
               "max_epochs": f"ran max_epochs = {self.options['max_epochs']:g} passes",
               "max_time": "stopped at the time limit (max_time or the plan's time_limit_s)"}[self._stop]
        if self._stop != "tol" and final is not None:
            why += f"; relative residual {final:.3g} {'<=' if converged else '>'} tol {tol:g}"
        rows = getattr(self, "_residual_rows", None)
        if final is not None and rows is not None and rows < (self.n_train_ or 0):
            why += f" (on {rows:,} of the {self.n_train_:,} training rows)"
        why += f"; {self._steps} steps ({self._steps / max(1, self._steps_per_pass):.2f} passes)"
        return {"converged": converged, "reason": why, "final": final, "n_iter": self._steps,
                "history": list(self._history)}
