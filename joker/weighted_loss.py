"""Per-row weights in the Joker dual: the loss of row i scaled by w_i >= 0.

The weighted primal (``docs/dual.md`` s.6) is

    P(theta) = (lam/2) ||theta||^2 + sum_i w_i loss(y_i, f_i),

a per-row C (C_i = w_i / lam, as LIBSVM's sample and class weights). The
conjugate of u -> w loss(y, u) is v -> w conj(v / w), so the dual term of
row i is the *perspective* of the unweighted one (Joker, Thm. 1, with
w_i loss in place of loss)::

    h_i^w(a) = (1/lam) w_i conj(-lam a / w_i) = w_i h_i(a / w_i),
    box_i^w  = w_i box_i,
    h^w'(a)  = h'(a / w),   h^w''(a) = h''(a / w) / w.

For a piecewise-quadratic h = l a + q a^2 / 2 (on each side of the kink)
this is l a + (q / w) a^2 / 2: the linear terms stay, the curvature is
divided by w and the box multiplied by it. A row of weight 0 has the
conjugate of the zero function, the indicator of {0}: its box is the point
a = 0 and h(0) = 0, so it adds nothing to P, J or the KKT residual (as a
one-vs-one row of another class, :attr:`joker.losses.Loss.absent_label`).
Its curvature is left at the unweighted value (any finite number: the
variable cannot move).

The certificates stay exact: P, J and the proximal KKT step are those of
the weighted problem, evaluated through the same methods.
"""

from __future__ import annotations

import torch

from .losses import Loss, PiecewiseQuadraticLoss

__all__ = ["WeightedLoss", "weighted"]


class WeightedLoss(Loss):
    """A loss whose row i is scaled by ``w[i]`` (module docstring).

    Parameters
    ----------
    base : joker.losses.Loss
        The unweighted loss.
    w : tensor of shape (n, 1)
        Non-negative finite weights, one per row, in the dtype and on the
        device of the targets (broadcast over the outputs).

    Notes
    -----
    The solver evaluates a block's rows with :meth:`rows`, which keeps the
    weights aligned with the block's targets; every other method expects
    arguments with ``n`` rows (or ``len(B)`` for the loss of :meth:`rows`).
    """

    def __init__(self, base, w):
        if isinstance(base, WeightedLoss):
            raise TypeError("the loss is weighted already")
        self.base = base
        self.w = w
        self.pos = w > 0
        self.w_safe = torch.where(self.pos, w, torch.ones_like(w))  # divides a / w and q / w where w = 0
        # strongly convex stays: q / w > 0 where w > 0, the unweighted q where w = 0 (a row held at 0)
        for attr in ("name", "kinked", "quadratic", "strongly_convex", "greedy_blocks", "target_degree",
                     "absent_label"):
            setattr(self, attr, getattr(base, attr))

    def rows(self, B):
        """The same loss on the rows ``B`` of the problem (weights ``w[B]``)."""
        return WeightedLoss(self.base, self.w[B])

    def scaled(self, c):
        """The weighted loss of targets divided by ``c`` (:meth:`joker.losses.Loss.scaled`)."""
        return WeightedLoss(self.base.scaled(c), self.w)

    def describe(self):
        return {**self.base.describe(), "weighted": True}

    def _mask(self, v, fill=0.0):
        """``v`` where w > 0, ``fill`` on the rows of weight 0."""
        return torch.where(self.pos, v, torch.full_like(v, fill))

    def primal(self, y, u):
        """w_i loss(y_i, u_i)."""
        return self._mask(self.w * self.base.primal(y, u))

    def box(self, y, lam):
        """w_i times the unweighted box; the point 0 where w_i = 0."""
        lo, hi = self.base.box(y, lam)
        return self._mask(self.w_safe * lo), self._mask(self.w_safe * hi)

    def inner_box(self, y, lam):
        """w_i times the box the solver keeps a non-quadratic loss in (logistic)."""
        lo, hi = self.base.inner_box(y, lam)
        return self._mask(self.w_safe * lo), self._mask(self.w_safe * hi)

    def initial_alpha(self, y, lam):
        """w_i times the unweighted start (inside the weighted inner box)."""
        return self._mask(self.w * self.base.initial_alpha(y, lam))

    def pieces(self, y, lam):
        """``(l+, q+ / w, l-, q- / w)`` of the unweighted pieces (q unchanged where w = 0)."""
        lp, qp, lm, qm = self.base.pieces(y, lam)
        return lp, self._curvature(qp, y), lm, self._curvature(qm, y)

    def _curvature(self, q, y):
        if not torch.is_tensor(q):
            if q == 0.0:
                return 0.0
            q = torch.full_like(y, float(q))
        return torch.where(self.pos, q / self.w_safe, q)

    def h(self, a, y, lam):
        if self.quadratic:
            return PiecewiseQuadraticLoss.h(self, a, y, lam)
        return self._mask(self.w_safe * self.base.h(a / self.w_safe, y, lam))

    def dh(self, a, y, lam):
        if self.quadratic:
            return PiecewiseQuadraticLoss.dh(self, a, y, lam)
        return self._mask(self.base.dh(a / self.w_safe, y, lam))

    def d2h(self, a, y, lam):
        if self.quadratic:
            return PiecewiseQuadraticLoss.d2h(self, a, y, lam)
        return self._mask(self.base.d2h(a / self.w_safe, y, lam) / self.w_safe, fill=lam)

    def prox(self, v, y, lam):
        """Proximal map of h^w plus its box (piecewise-quadratic losses), as :meth:`PiecewiseQuadraticLoss.prox`."""
        return PiecewiseQuadraticLoss.prox(self, v, y, lam)


def weighted(loss, sample_weight, like):
    """``loss`` with rows scaled by ``sample_weight``, or ``loss`` itself when it is None.

    Parameters
    ----------
    loss : joker.losses.Loss
    sample_weight : array-like or tensor of shape (n,), or None
        Non-negative finite weights (checked by the estimators,
        :func:`joker.sample_weight.check_sample_weight`).
    like : tensor of shape (n, C)
        The targets: the weights take their dtype and device.

    Returns
    -------
    joker.losses.Loss

    Raises
    ------
    ValueError
        Weights not of shape (n,), negative or not finite.
    """
    if sample_weight is None:
        return loss
    w = torch.as_tensor(sample_weight).detach().to(dtype=torch.float64)
    n = like.shape[0]
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {tuple(w.shape)}")
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError("sample_weight must be finite and >= 0")
    return WeightedLoss(loss, w.to(dtype=like.dtype, device=like.device).reshape(n, 1))
