"""What the adapters of solvers that stop after a fixed number of epochs share (EigenPro 3, EigenPro 4).

Both EigenPro versions minimise the squared loss over ``p`` kernel centres
with no regulariser and no stopping rule: they run ``epochs`` epochs. Their
adapters therefore share

- the targets (a column of -1/+1 or regression values; one-hot -1/+1
  columns for multiclass),
- the convergence signal: training error (RMSE, or classification error
  rate) after every epoch on at most ``CHECK_ROWS`` training rows, and a
  plateau flag (:func:`baselines.checks.relative_plateau`) as
  ``converged``,
- the model-size search (:func:`largest_fitting`: the largest ``p`` whose
  memory estimate fits the budget),
- :func:`torch_default_dtype` (both libraries allocate some tensors with
  torch's default dtype).

numpy at module level; torch is imported when used.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator

import numpy as np

from .base import MIN_TIMED_SIZE, Adapter, Budget, relative_plateau
from .planning import FIT_TIME_SHARE

__all__ = ["AUTO_MIN_EPOCHS", "EpochAdapter", "FIXED_EPOCHS", "GPU_WORK_SHARE", "PLATEAU", "PLATEAU_PATIENCE",
           "largest_fitting", "torch_default_dtype"]

#: ``convergence()["stopped"]`` of a fit that ran all its planned epochs (the solvers' design, not a failure).
FIXED_EPOCHS = "fixed_epochs"
#: ``convergence()["stopped"]`` of a fit (``epochs=None``) stopped by the adapter's plateau rule.
PLATEAU = "plateau"
#: With ``epochs=None`` the centres are sized so that this many epochs fit the time share; then the epochs
#: grow to fill it (at most ``max_epochs``).
AUTO_MIN_EPOCHS = 10
#: Epochs without a relative improvement of ``plateau_rtol`` in the training squared loss before an
#: ``epochs=None`` fit stops. 10, not 5: EigenPro 4's epoch-to-epoch training loss moves by up to 15 %
#: (20,000 HEPC rows, epochs 44-46) while its trend still falls about 1 % in 10 epochs; with a patience of
#: 5 the rule ended that fit at epoch 48 with the test RMSE still falling (issue 40, 2026-12-06).
PLATEAU_PATIENCE = 10

#: Share of the GPU budget an EigenPro device estimate may take (the allocator is capped at the budget;
#: the rest absorbs its rounding and upstream temporaries, as Falkon's ``max_gpu_mem`` does).
GPU_WORK_SHARE = 0.75


def largest_fitting(est_bytes: Callable[[int], int], hi: int, limit: int) -> int:
    """The largest ``p`` in ``1..hi`` with ``est_bytes(p) <= limit`` (1 when none fits).

    Parameters
    ----------
    est_bytes : callable int -> int
        Memory estimate in bytes, non-decreasing in ``p``.
    hi : int
        Largest candidate (>= 1).
    limit : int
        Budget in bytes.

    Returns
    -------
    int
        Found by bisection (``O(log hi)`` calls); 1 when even ``p = 1`` does
        not fit (the caller's ``plan`` then refuses the budget).
    """
    lo, hi = 1, max(1, int(hi))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if est_bytes(mid) <= limit else (lo, mid - 1)
    return lo


@contextlib.contextmanager
def torch_default_dtype(dtype: Any) -> Iterator[None]:
    """Run a block with ``torch.set_default_dtype(dtype)``, restoring the previous default."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


class EpochAdapter(Adapter):
    """Base of the adapters whose solver runs a given number of epochs (no regulariser, no stopping rule).

    Subclasses keep the options ``n_centers``, ``max_centers``, ``epochs``,
    ``max_epochs`` and ``plateau_rtol``, implement ``_est_bytes(p, n, d)``
    (used by :meth:`_model_size`) and call :meth:`_record_epoch` after every
    epoch, ending the fit when :attr:`stop_requested` is true;
    :meth:`_decision` gives the scores the training error is computed from.

    Epochs. ``epochs=<int>`` runs exactly that many (upstream's behaviour).
    ``epochs=None`` (the default) sizes them to the shared time budget, like
    every other plan (docs/contracts.md, "One budget per cell"): the centres
    are sized so that :data:`AUTO_MIN_EPOCHS` epochs fit the time share, then
    the epochs grow to as many as fit it (at most ``max_epochs``), and the
    fit stops earlier when the training squared loss (what EigenPro
    minimises, on at most ``CHECK_ROWS`` training rows) has not improved by a
    relative ``plateau_rtol`` for :data:`PLATEAU_PATIENCE` epochs. That rule
    is the adapter's, not EigenPro's (it has no stopping rule); it reads
    training rows only. Why: at a fixed 10 epochs EigenPro was still
    improving by 1-2 % an epoch on 20,000 HEPC rows when the other methods
    had converged (test RMSE 0.049 against 0.035, 16-21 s of a 300 s share).
    """

    #: ``epochs``: an integer >= 1, or None (sized to the time budget), checked by the base class.
    int_options = {"epochs": (1, "sized to the time budget")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stop_requested = False

    @property
    def _auto_epochs(self) -> bool:
        """Whether the epochs are sized to the budget and ended by the plateau rule (``epochs=None``)."""
        return self.options.get("epochs") is None

    def _work(self, n: int, d: int, plan: dict[str, Any]) -> tuple[float, str] | None:
        p, t = plan.get("n_centers"), plan.get("epochs")
        if not p or not t:
            return None
        # every epoch evaluates the kernel between each of the n samples and the p centres (2 n p d)
        # and its products with the weights (2 n p)
        return t * 2.0 * n * p * (d + 1), f"{t} epochs of 2 n p (d + 1) (n = {n}, d = {d}, p = {p} centres)"

    def _est_bytes(self, p: int, n: int, d: int) -> int:
        """Working memory with ``p`` centres on the budgeted device, bytes (non-decreasing in ``p``)."""
        raise NotImplementedError

    #: ``_epoch_entries`` in words, for the plan's reason.
    _epoch_formula = "p"
    #: Fewest centres the time plan goes down to (below them it lowers the epochs, then says it is over).
    _min_timed_centres = MIN_TIMED_SIZE

    def _epoch_seconds(self, n: int, p: int, pace: float) -> float:
        """Predicted seconds of one CPU epoch with ``p`` centres: ``n * _epoch_entries(n, p) * pace``."""
        return n * self._epoch_entries(n, p) * pace

    def _epoch_entries(self, n: int, p: int) -> float:
        """Kernel entries one epoch computes with ``p`` centres, per training row (the time plan's cost model)."""
        raise NotImplementedError

    def _timed_size(self, budget: Budget, n: int, d: int) -> tuple[int, int, dict[str, Any]]:
        """``(p, epochs, record)``: the model size and epochs a CPU fit can do in the trial's time.

        :meth:`_model_size` (memory) first; when the budget carries a time
        (``Budget.time_s``, CPU, ``n_centers`` not given), the fit is
        modelled as ``epochs * n * _epoch_entries(n, p)`` kernel entries at
        the measured pace (:func:`baselines.pace.kernel_entry_seconds`;
        :meth:`_epoch_seconds`) and ``p`` is lowered until that fits the
        limit of :meth:`Planning._time_limit`; when even
        ``_min_timed_centres`` centres do not fit ``epochs`` epochs, the
        epochs are lowered first (at least 1: early stopping is these
        solvers' regulariser) and ``p`` sized for them. With ``epochs=None``
        ``p`` is sized for :data:`AUTO_MIN_EPOCHS` epochs and the epochs then
        raised to ``min(max_epochs, floor(limit / one epoch's seconds))``
        (with ``n_centers`` given, only the epochs are sized), the fit
        stopping before an epoch would pass ``limit`` by the measured epoch
        times (``epoch_guard_s``: the model leaves out the set-up and the
        training-loss checks); without a
        time budget they are ``max_epochs``. Not modelled: the
        fixed set-up (the Nystroem eigendecompositions of the
        preconditioners, a few seconds at 3,000-5,000 samples), which is why
        small data sets took longer than predicted (HIGGS head, 6,000 rows:
        predicted 5-6 s, fit 20-24 s for EigenPro3 on 2026-12-04).

        Returns
        -------
        (int, int, dict)
            ``p``, the epochs, and the plan's record (empty without a time
            cap): ``time_limit_s``, ``kernel_entry_ns``, ``predicted_fit_s``,
            ``time_reason``.
        """
        from .pace import kernel_entry_seconds, largest_in_time

        p = self._model_size(budget, n, d)
        auto, cap = self._auto_epochs, int(self.options["max_epochs"])
        epochs = min(AUTO_MIN_EPOCHS, cap) if auto else int(self.options["epochs"])
        found = self._time_limit(budget)
        if found is None:
            if auto and budget.time_s is not None:  # a GPU: no pace model, so the fit guards the time itself
                guard = FIT_TIME_SHARE * budget.time_s
                return p, cap, {"epoch_guard_s": guard, "time_reason": (
                    f"epochs up to max_epochs = {cap}, ended by the plateau rule or, before an epoch would pass "
                    f"{guard:.0f} s ({FIT_TIME_SHARE:g} of the {budget.time_s:.0f} s the trial had left), by the "
                    f"measured epoch times (no pace model on this device)")}
            return p, (cap if auto else epochs), {}
        limit, origin = found
        pace = kernel_entry_seconds(int(d), self.dtype, self.n_threads)

        def seconds(m: int, t: int) -> float:
            return t * self._epoch_seconds(n, m, pace)

        why = ""
        if self.options["n_centers"] is not None:
            best = p
        else:
            small = min(p, self._min_timed_centres)
            if seconds(small, epochs) > limit and epochs > 1:
                fewer = max(1, int(limit // seconds(small, 1)))
                if fewer < epochs:
                    why = f"epochs {epochs} -> {fewer} (one epoch with {small} centres: {seconds(small, 1):.3g} s); "
                    epochs = fewer
            best = largest_in_time(lambda m: seconds(m, epochs), limit, p, lo=small)
        guard = {}
        if auto:
            epochs = max(epochs, min(cap, int(limit // seconds(best, 1))))
            why += (f"epochs {epochs}: as many as fit at {best} centres (at most max_epochs = {cap}; the fit stops "
                    f"earlier at a plateau of its training loss, or before an epoch would pass {limit:.0f} s by "
                    f"the measured epoch times); ")
            # the pace model leaves out the set-up and the training-loss checks (HEPC, 20,000 rows: 87.5 s
            # predicted, 148 s measured): the measured epochs keep the fit inside the same share
            guard = {"epoch_guard_s": limit}
        elif self.options["n_centers"] is not None:
            return p, epochs, {}
        fits = seconds(best, epochs) <= limit
        why += (f"centres <= {best}: {epochs} epochs of n x ({self._epoch_formula}) kernel entries at "
                f"{pace * 1e9:.2f} ns each (measured) = {seconds(best, epochs):.3g} s, "
                f"{'within' if fits else 'still over (the smallest size tried)'} {origin}; memory allowed {p}")
        return best, epochs, {"time_limit_s": limit, "kernel_entry_ns": pace * 1e9,
                              "predicted_fit_s": seconds(best, epochs), "time_reason": why, **guard}

    def _model_size(self, budget: Budget, n: int, d: int) -> int:
        """The model size P: option ``n_centers``, else the largest ``p <= min(n, max_centers)`` that fits.

        On a GPU the estimate may take ``GPU_WORK_SHARE`` of the GPU budget;
        on the CPU all of the host budget. Capped by ``n``.
        """
        limit = int(GPU_WORK_SHARE * budget.gpu_bytes) if self.on_gpu else budget.host_bytes
        p = self.options["n_centers"]
        if p is None:
            p = largest_fitting(lambda m: self._est_bytes(m, n, d), min(n, int(self.options["max_centers"])), limit)
        return min(int(p), n)

    def _targets(self, target: np.ndarray) -> np.ndarray:
        """Targets as EigenPro fits them: ``(n, 1)`` values, or ``(n, C)`` one-hot -1/+1 columns (multiclass)."""
        if self.task == "multiclass":
            Y = -np.ones((len(target), len(self.classes_)))
            Y[np.arange(len(target)), target] = 1.0
            return Y
        return target[:, None]

    @property
    def _metric(self) -> str:
        return "rmse" if self.task == "regression" else "error_rate"

    def _train_error(self, X: np.ndarray, target: np.ndarray) -> float:
        """RMSE (regression) or error rate of the current model on ``X`` (encoded targets)."""
        return self._error_of(self._decision(X), target)

    def _error_of(self, scores: np.ndarray, target: np.ndarray) -> float:
        """RMSE (regression) or error rate of ``scores`` against the encoded targets."""
        if self.task == "regression":
            return float(np.sqrt(np.mean((scores - target) ** 2)))
        if self.task == "binary":
            return float(np.mean((scores > 0) != (target > 0)))
        return float(np.mean(np.argmax(scores, axis=1) != target))

    def _record_epoch(self, X: np.ndarray, target: np.ndarray, started: float) -> float:
        """Append ``{epoch, seconds, <metric>}`` (training error on ``X``) to the history; return the error.

        At the first epoch also keeps the same error of the starting model
        ``f = 0`` (EigenPro's weights start at zero) and, for regression,
        the targets' mean and std: :meth:`_curve_cause` reads them. Also
        the epoch's anytime checkpoint (:meth:`~baselines.base.Adapter._checkpoint`:
        the model as it stands after this epoch).
        """
        if not self._history:
            self.stop_requested, self._stopped_by = False, "plateau"
            self._zero_error = self._error_of(np.zeros((len(target), len(self.classes_)))
                                              if self.task == "multiclass" else np.zeros(len(target)), target)
            self._target_stats = (float(np.mean(target)), float(np.std(target))) if self.task == "regression" else None
        scores = self._decision(X)
        err = self._error_of(scores, target)
        encoded = self._targets(target)
        loss = float(np.mean((scores.reshape(encoded.shape) - encoded) ** 2))
        self._history.append({"epoch": len(self._history) + 1, "seconds": time.perf_counter() - started,
                              self._metric: err, "train_loss": loss})
        self._checkpoint(self._decision, epoch=len(self._history), train_error=err)
        if self._auto_epochs and self._plateaued():
            self.stop_requested = True
        elif self._auto_epochs and self._out_of_time():
            self.stop_requested, self._stopped_by = True, "time"
        return err

    def _out_of_time(self) -> bool:
        """Whether one more epoch, at the mean measured epoch time, would pass the plan's ``epoch_guard_s``.

        Set by every ``epochs=None`` plan whose budget has a time: without a
        pace model (a GPU) the epochs are not sized in advance; with one
        (the CPU) the guard catches what the model leaves out
        (:meth:`_timed_size`).
        """
        guard = (self.plan_ or {}).get("epoch_guard_s")
        if not guard or not self._history:
            return False
        elapsed = float(self._history[-1]["seconds"])
        return elapsed * (len(self._history) + 1) / len(self._history) > float(guard)

    def _plateaued(self) -> bool:
        """The ``epochs=None`` stopping rule: no relative improvement of ``plateau_rtol`` in :data:`PLATEAU_PATIENCE` epochs.

        True when the best training squared loss of the last
        ``PLATEAU_PATIENCE`` epochs is above ``(1 - plateau_rtol)`` times the
        best before them (or is not finite).
        """
        losses = [h["train_loss"] for h in self._history]
        if len(losses) <= PLATEAU_PATIENCE:
            return False
        before, recent = min(losses[:-PLATEAU_PATIENCE]), min(losses[-PLATEAU_PATIENCE:])
        if not np.isfinite(recent):
            return True
        return recent > (1.0 - float(self.options["plateau_rtol"])) * before

    def _fail_diverged(self, reason: str) -> None:
        """Raise :class:`baselines.base.DivergedError` with the reason and the per-epoch curve's cause."""
        super()._fail_diverged(reason + self._curve_cause())

    def _curve_cause(self) -> str:
        """What the per-epoch training curve says about a fit no better than the trivial predictor ("" if nothing).

        - The error fell at every epoch from the starting model ``f = 0``:
          the iterations did not diverge; the planned epochs (the solvers'
          only stopping rule) ended before the model beat the trivial
          predictor. EigenPro fits no intercept and starts from zero, so on
          an uncentred target (HEPC: mean 1.09 kW, std 1.07) the first
          epochs are spent on the mean (measured, EigenPro3, float32: 2,000
          HEPC rows, 50 centres: training RMSE 1.516 at f = 0, 1.199 after
          one epoch against the mean's 1.057; 200,000 rows, 2,048 centres:
          1.02 after one epoch, 0.73 after two).
        - The error rose above its best value: the iterations diverged.
        """
        errors = [h[self._metric] for h in self._history]
        start = getattr(self, "_zero_error", None)
        if not errors or start is None or not all(np.isfinite(errors)):
            return ""
        curve = [start, *errors]
        shown = ", ".join(f"{e:.4g}" for e in errors)
        if all(b < a for a, b in zip(curve, curve[1:])):
            planned = int((self.plan_ or {}).get("epochs") or self.options["epochs"] or self.options["max_epochs"])
            centres = (self.plan_ or {}).get("n_centers")
            stats = getattr(self, "_target_stats", None)
            target = (f"; the targets' mean {stats[0]:.4g} against their std {stats[1]:.4g}: the model, which has no "
                      f"intercept, starts from f = 0" if stats else "")
            return (f". Not a divergence of the iterations: the training {self._metric} fell at every epoch "
                    f"({start:.4g} at f = 0, then {shown}), and the fixed {planned} epoch(s) at {centres} centres "
                    f"(EigenPro's only stopping rule) ended before it beat the trivial predictor{target}")
        best = int(np.argmin(errors))
        if errors[-1] > errors[best]:
            return (f". The training {self._metric} rose from {errors[best]:.4g} (epoch {best + 1}) to "
                    f"{errors[-1]:.4g} (epoch {len(errors)}; per epoch: {shown}): the iterations diverged")
        return f" (training {self._metric} per epoch: {shown}; {start:.4g} at f = 0)"

    def _convergence(self) -> dict[str, Any]:
        """The per-epoch curve, a plateau flag, and ``stopped`` (``"fixed_epochs"`` or ``"plateau"``).

        With ``epochs=None`` a fit ended by :meth:`_plateaued` is
        ``converged`` with ``stopped = "plateau"``; one that ran every epoch
        its time share allows is ``stopped = "fixed_epochs"`` like a fixed
        count (its plan's ``epochs``).

        EigenPro runs the configured number of epochs by design (early
        stopping is its only regulariser; it has no stopping rule), so the
        report says so with the key ``stopped`` (value ``FIXED_EPOCHS``)
        whenever every planned epoch ran: a table shows such a fit as
        "ok (fixed epochs)", not as "not converged". ``converged`` stays the
        plateau test of the last two epochs (True, False, or None with one
        epoch), for the curve's shape.
        """
        errors = [h[self._metric] for h in self._history]
        rtol = self.options["plateau_rtol"]
        converged = relative_plateau(errors, rtol)
        planned = int((self.plan_ or {}).get("epochs") or self.options["epochs"] or self.options["max_epochs"])
        if converged is None:
            curve = "fewer than two epochs, no plateau test"
        else:
            change = abs(errors[-1] - errors[-2]) / max(abs(errors[-2]), 1e-12)
            curve = (f"training {self._metric} {'plateaued' if converged else 'still moving'}: relative change "
                     f"{change:.2e} in the last epoch (rtol {rtol})")
        timed_out = self.stop_requested and getattr(self, "_stopped_by", "plateau") == "time"
        if timed_out:
            guard = float((self.plan_ or {}).get("epoch_guard_s") or 0.0)
            each = float(self._history[-1]["seconds"]) / len(errors) if errors else 0.0
            reason = (f"stopped after {len(errors)} of at most {planned} epochs: one more ({each:.3g} s each, "
                      f"measured) would pass the fit's share of the time budget ({guard:.3g} s), before the "
                      f"plateau rule ended it; {curve}")
        elif self.stop_requested:
            reason = (f"stopped after {len(errors)} of at most {planned} epochs: the training squared loss improved "
                      f"by less than {rtol:g} (relative) in {PLATEAU_PATIENCE} epochs (the adapter's rule: EigenPro "
                      f"has no stopping rule); {curve}")
        elif self._auto_epochs:
            reason = (f"ran all {len(errors)} epochs the shared time budget allows (no regulariser, no plateau "
                      f"reached); {curve}")
        else:
            reason = (f"early-stopped after {len(errors)} epochs (fixed epochs by design: no regulariser, no "
                      f"stopping rule); {curve}")
        info = {"converged": True if self.stop_requested and not timed_out else converged, "reason": reason,
                "history": list(self._history), "final": errors[-1] if errors else None, "epochs": len(errors)}
        if timed_out:
            info["stopped"] = "time"
        elif self.stop_requested:
            info["stopped"] = PLATEAU
        elif errors and len(errors) >= planned:
            info["stopped"] = FIXED_EPOCHS
        return info
