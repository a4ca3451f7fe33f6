"""Convergence certificates of the Joker dual: relative duality gap and KKT residual.

Definitions (``docs/certificates.md``; Joker, Thm. 1), per output column c,
for alpha feasible, f = K alpha and ||theta_c||^2 = alpha_c^T K alpha_c::

    P_c   = (lam/2) ||theta_c||^2 + sum_i loss(y_ic, f_ic)        >= 0
    J_c   = 1/2 alpha_c^T K alpha_c + sum_i h_i(alpha_ic)
    gap_c = (P_c + lam J_c) / P_c          (0 when P_c = 0: theta_c is then optimal)
    a+_ic = prox_{h_i + box}(alpha_ic - f_ic)   (one exact coordinate step, k(x, x) = 1)
    r_ic  = |alpha_ic - a+_ic|
    kkt_c = max_i r_ic / (max_i |alpha_ic| + max_i r_ic)     (0 when both are 0)

The gap is relative to the primal objective of the certified point, so it
bounds (P_c - P*_c) / P_c and is invariant to the scale of the targets (P, J
and the gap all scale by c^2 when y, delta and epsilon do; for SVR with lam
scaled by 1/c they scale by c). The KKT residual is the length of one exact
coordinate (proximal) step relative to the size of alpha: a dimensionless
number in [0, 1], 1 at alpha = 0 unless 0 is optimal. For the logistic loss
the proximal step is replaced by its Newton approximation
``-g / (1 + h''(alpha))`` projected on the box, g = f + h'(alpha).

The reported ``gap`` and ``kkt`` are the worst over the outputs, so every
output of a multi-output or one-vs-rest fit must meet the tolerances; the
per-output values are kept in ``gaps`` and ``kkts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["Certificate", "objectives", "relative_gap", "residuals", "gradient_residuals", "kkt_residual",
           "certify"]


@dataclass
class Certificate:
    """One evaluation of the certificates.

    Attributes
    ----------
    primal : float
        P(theta(alpha)), summed over outputs.
    dual_objective : float
        J(alpha), the minimised dual, summed over outputs.
    dual : float
        -lam * J(alpha), comparable to ``primal`` (they meet at the optimum).
    gap : float
        Worst relative duality gap over the outputs (``max(gaps)``).
    kkt : float
        Worst normalised KKT residual over the outputs (``max(kkts)``).
    kkt_abs : float
        Largest unit-step projected-gradient residual (:func:`gradient_residuals`),
        the scale the solver compares block residuals with when it skips blocks.
    gaps : list of float
        Relative duality gap of each output column.
    kkts : list of float
        Normalised KKT residual of each output column.
    """

    primal: float
    dual_objective: float
    dual: float
    gap: float
    kkt: float
    kkt_abs: float
    gaps: list = field(default_factory=list)
    kkts: list = field(default_factory=list)


def objectives(loss, alpha, f, y, lam, sq_norms=None, sq_norms_dual=None):
    """Primal P_c and dual J_c of every output column at alpha.

    Parameters
    ----------
    loss : joker.losses.Loss
    alpha, f, y : tensors of shape (n, C)
        Dual variables, decision values f = K alpha, targets or +-1 labels.
    lam : float
        Regularisation lambda > 0.
    sq_norms : tensor of shape (C,), optional
        ||theta_c||^2 of the primal point; defaults to sum_i alpha_ic f_ic
        (exact kernel). With random features pass ||theta_c||^2 of the
        maintained theta whose decision values are f.
    sq_norms_dual : tensor of shape (C,), optional
        ||Psi^T alpha_c||^2 for J when theta is not exactly Psi^T alpha
        (random features, where theta is maintained by updates); defaults to
        ``sq_norms``. P(theta) - D(alpha) bounds the suboptimality of theta
        for any feasible alpha, so the gap stays a certificate of theta.

    Returns
    -------
    (P, J) : float64 tensors of shape (C,)
    """
    if sq_norms is None:
        sq_norms = (alpha * f).sum(0)
    if sq_norms_dual is None:
        sq_norms_dual = sq_norms
    sq = torch.as_tensor(sq_norms, dtype=torch.float64).reshape(-1).cpu()
    sq_dual = torch.as_tensor(sq_norms_dual, dtype=torch.float64).reshape(-1).cpu()
    P = 0.5 * lam * sq + loss.primal(y, f).sum(0).to(torch.float64).cpu()
    J = 0.5 * sq_dual + loss.h(alpha, y, lam).sum(0).to(torch.float64).cpu()
    return P, J


def relative_gap(P, J, lam):
    """Relative duality gap (P + lam J) / P of each output, 0 where P = 0.

    Parameters
    ----------
    P, J : float64 tensors of shape (C,)
        Primal and dual objectives (:func:`objectives`).
    lam : float

    Returns
    -------
    tensor of shape (C,)

    Notes
    -----
    Every loss is >= 0, so P* >= 0 and P >= P*: where P = 0 the primal point
    is optimal and its relative suboptimality is 0 whatever the dual.
    """
    gap = P + lam * J
    return torch.where(P > 0, gap / torch.where(P > 0, P, torch.ones_like(P)), torch.zeros_like(P))


def residuals(loss, alpha, f, y, lam):
    """Per-entry KKT residuals r_ic: the length of one exact coordinate step.

    Parameters
    ----------
    loss : joker.losses.Loss
    alpha, f, y : tensors of shape (n, C)
    lam : float

    Returns
    -------
    tensor of shape (n, C), r >= 0, zero exactly at a KKT point.
    """
    return _step_residuals(loss, alpha, f, y, lam, newton=True)


def gradient_residuals(loss, alpha, f, y, lam):
    """Unit-step projected-gradient (proximal for kinked h) residuals, for block scheduling.

    ``|alpha - clip(alpha - (f + h'(alpha)), lo, hi)|`` (or the proximal map of
    h at step 1 for the kinked losses); the solver uses them to choose and skip
    blocks, on the same scale as the block residuals of its inner loop.
    Arguments and result (shape (n, C), >= 0) as for :func:`residuals`.
    """
    return _step_residuals(loss, alpha, f, y, lam, newton=False)


def _step_residuals(loss, alpha, f, y, lam, newton):
    """|alpha - a+| for one coordinate step a+ from alpha (shapes (n, C)).

    The step is the proximal map of h plus the box at step 1 for the kinked
    losses, and with ``newton`` for every piecewise-quadratic one (the exact
    coordinate minimiser, k(x, x) = 1); otherwise a projected gradient step,
    of length g / (1 + h'') with ``newton`` (logistic), g without.
    """
    if loss.kinked or (newton and loss.quadratic):
        return torch.abs(alpha - loss.prox(alpha - f, y, lam))
    lo, hi = loss.box(y, lam)
    g = f + loss.dh(alpha, y, lam)
    if newton:
        g = torch.nan_to_num(g / (1.0 + loss.d2h(alpha, y, lam)), nan=0.0)
    return torch.abs(alpha - torch.minimum(torch.maximum(alpha - g, lo), hi))


def kkt_residual(loss, alpha, f, y, lam):
    """Normalised KKT residual of each output (module docstring).

    Returns
    -------
    kkts : float64 tensor of shape (C,)
    """
    r = residuals(loss, alpha, f, y, lam)
    if r.numel() == 0:
        return torch.zeros(alpha.shape[1:], dtype=torch.float64)
    r_max = r.amax(0).to(torch.float64).cpu()
    a_max = alpha.abs().amax(0).to(torch.float64).cpu()
    den = a_max + r_max
    kkts = torch.where(den > 0, r_max / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den))
    return kkts


def certify(loss, alpha, f, y, lam, sq_norms=None, sq_norms_dual=None):
    """All certificates at alpha; see :class:`Certificate` and :func:`objectives`."""
    P, J = objectives(loss, alpha, f, y, lam, sq_norms, sq_norms_dual)
    gaps = relative_gap(P, J, lam)
    kkts = kkt_residual(loss, alpha, f, y, lam)
    g = gradient_residuals(loss, alpha, f, y, lam)
    kkt_abs = float(g.max()) if g.numel() else 0.0
    return Certificate(primal=float(P.sum()), dual_objective=float(J.sum()), dual=-lam * float(J.sum()),
                       gap=float(gaps.max()), kkt=float(kkts.max()), kkt_abs=kkt_abs,
                       gaps=gaps.tolist(), kkts=kkts.tolist())
