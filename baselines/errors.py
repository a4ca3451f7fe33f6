"""The errors an adapter raises (``docs/contracts.md``, "baselines").

Every failure of a fit ends as an :class:`AdapterError` (or a subclass), so
that the harness records a failed trial with its reason, never a crash.
"""

from __future__ import annotations

__all__ = ["AdapterError", "BudgetError", "DivergedError"]


class AdapterError(RuntimeError):
    """The upstream library failed, or a request cannot be honoured.

    Raised by :meth:`baselines.base.Adapter.fit` when the library raises,
    prints a failure and returns without a model, or when the memory budget
    cannot hold even the smallest setting. The message says which library
    and why.
    """


class DivergedError(AdapterError):
    """The fit finished but its solution is numerically broken.

    Non-finite decision values, or a training error no better than the
    trivial predictor (the mean for regression, the majority class for
    classification). Subclass of :class:`AdapterError`, so a caller that
    only catches ``AdapterError`` still records a failure, never a result.
    """


class BudgetError(AdapterError):
    """The budget (memory, or the trial's seconds) cannot hold even the smallest setting of the method.

    Raised by :meth:`baselines.base.Adapter.plan` with the arithmetic in the
    message; the trial ends ``over_budget`` before the fit, never as a
    crash. Subclass of :class:`AdapterError`.
    """
