"""The block model of a piecewise-quadratic loss on the orthant a block step may use (docs/dual.md s.4).

Shared by the block steps of :mod:`joker.solver` and :mod:`joker.direct_step`.
"""

from __future__ import annotations

import torch

__all__ = ["broadcast_like", "orthant_pieces"]


def broadcast_like(x, like):
    """``x`` (a number or a tensor) as a tensor of the shape of ``like``.

    Parameters
    ----------
    x : float or tensor broadcastable to ``like``
    like : tensor

    Returns
    -------
    tensor of ``like``'s shape (``x`` itself when it already has it)
    """
    return x * torch.ones_like(like) if not torch.is_tensor(x) or x.shape != like.shape else x


def orthant_pieces(loss, a, gs, y, lam, lo, hi):
    """Linear/quadratic coefficients and bounds of h on the step's orthant.

    For each variable the orthant is the sign of ``a``, or at ``a = 0`` the
    side whose one-sided derivative makes descent possible (none: the step
    keeps it at 0); 0 is then a temporary bound, so h is one quadratic on
    the step's domain (docs/dual.md s.4; the kink of SVR and ODM).

    Parameters
    ----------
    loss : joker.losses.PiecewiseQuadraticLoss
    a, gs, y, lo, hi : tensors of one shape
        The block's alpha, (K alpha)_B, targets and box.
    lam : float

    Returns
    -------
    (l, q, lo_e, hi_e) : tensors of ``a``'s shape
        h(a + s) - h(a) = (l + q a) s + q s^2/2 for a + s in [lo_e, hi_e].
    """
    lp, qp, lm, qm = (broadcast_like(v, a) for v in loss.pieces(y, lam))
    if not loss.kinked:
        return lp, qp, lo, hi
    zero = torch.zeros_like(a)
    pos = (a > 0) | ((a == 0) & (gs + lp < 0))
    neg = (a < 0) | ((a == 0) & (gs + lm > 0))
    l = torch.where(pos, lp, torch.where(neg, lm, zero))
    q = torch.where(pos, qp, torch.where(neg, qm, zero))
    lo_e = torch.where(pos, torch.clamp(lo, min=0.0), torch.where(neg, lo, zero))
    hi_e = torch.where(pos, hi, torch.where(neg, torch.clamp(hi, max=0.0), zero))
    return l, q, lo_e, hi_e
