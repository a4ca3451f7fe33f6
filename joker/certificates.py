"""Convergence certificates of the Joker dual: duality gap and KKT residual.

Formulas (joker-math.md s.1, Joker Thm. 1), for alpha feasible, f = K alpha
and ||theta||^2 = alpha^T K alpha::

    P(theta)  = (lam/2) ||theta||^2 + sum_i loss(y_i, f_i)
    J(alpha)  = 1/2 alpha^T K alpha + sum_i h_i(alpha_i)
    gap       = P + lam J >= 0,     relative gap = gap / max(1, |P|)
    r_i       = |alpha_i - clip(alpha_i - (K alpha + h'(alpha))_i, lo_i, hi_i)|
    kkt       = max_i r_i / max(1, max_i |alpha_i|)

For losses with a kink at 0 (SVR, ODM) r_i is the proximal residual
|alpha_i - prox_{h_i + box}(alpha_i - f_i)| (the smooth part of J is
1/2 alpha^T K alpha, whose gradient is f).

With several outputs (alpha of shape (n, C)) the objectives are summed over
outputs and the KKT maximum is taken over all entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Certificate", "objectives", "residuals", "kkt_residual", "certify"]


@dataclass
class Certificate:
    """One evaluation of the certificates.

    Attributes
    ----------
    primal : float
        P(theta(alpha)).
    dual_objective : float
        J(alpha), the minimised dual.
    dual : float
        -lam * J(alpha), comparable to ``primal`` (they meet at the optimum).
    gap : float
        Relative duality gap (P + lam J) / max(1, |P|).
    kkt : float
        Normalised projected-gradient (or proximal) KKT residual.
    kkt_abs : float
        max_i r_i before normalisation.
    """

    primal: float
    dual_objective: float
    dual: float
    gap: float
    kkt: float
    kkt_abs: float


def objectives(loss, alpha, f, y, lam, sq_norm=None, sq_norm_dual=None):
    """Primal P and dual J at alpha.

    Parameters
    ----------
    loss : joker.losses.Loss
    alpha, f, y : tensors of shape (n,) or (n, C)
        Dual variables, f = K alpha, targets/labels.
    lam : float
    sq_norm : float, optional
        ||theta||^2; defaults to alpha . f (exact kernel). In RFF mode pass
        ||theta||^2 of the primal point theta whose decision values are f.
    sq_norm_dual : float, optional
        ||Psi^T alpha||^2 for J when the primal point theta is not exactly
        Psi^T alpha (random features in float32, where theta is maintained
        by updates); defaults to ``sq_norm``. P(theta) - D(alpha) bounds
        the suboptimality of theta for any feasible alpha, so the gap stays
        a certificate of the returned theta.

    Returns
    -------
    (P, J) : floats
    """
    if sq_norm is None:
        sq_norm = float((alpha * f).sum())
    if sq_norm_dual is None:
        sq_norm_dual = sq_norm
    P = 0.5 * lam * sq_norm + float(loss.primal(y, f).sum())
    J = 0.5 * sq_norm_dual + float(loss.h(alpha, y, lam).sum())
    return P, J


def residuals(loss, alpha, f, y, lam):
    """Per-entry KKT residuals r_i (joker-math.md s.1).

    Parameters
    ----------
    loss : joker.losses.Loss
    alpha, f, y : tensors of shape (n, C)
    lam : float

    Returns
    -------
    tensor of shape (n, C), r >= 0, zero exactly at a KKT point.
    """
    if getattr(loss, "kinked", False):
        return torch.abs(alpha - loss.prox(alpha - f, y, lam))
    lo, hi = loss.box(y, lam)
    g = f + loss.dh(alpha, y, lam)
    return torch.abs(alpha - torch.minimum(torch.maximum(alpha - g, lo), hi))


def kkt_residual(loss, alpha, f, y, lam):
    """Normalised KKT residual (joker-math.md s.1).

    Returns
    -------
    (kkt, kkt_abs) : floats, normalised and raw max residual.
    """
    r = residuals(loss, alpha, f, y, lam)
    r_max = float(r.max()) if r.numel() else 0.0
    a_max = float(alpha.abs().max()) if alpha.numel() else 0.0
    return r_max / max(1.0, a_max), r_max


def certify(loss, alpha, f, y, lam, sq_norm=None, sq_norm_dual=None):
    """All certificates at alpha; see :class:`Certificate` and :func:`objectives`."""
    P, J = objectives(loss, alpha, f, y, lam, sq_norm, sq_norm_dual)
    kkt, kkt_abs = kkt_residual(loss, alpha, f, y, lam)
    gap = (P + lam * J) / max(1.0, abs(P))
    return Certificate(primal=P, dual_objective=J, dual=-lam * J, gap=gap, kkt=kkt, kkt_abs=kkt_abs)
