"""Truncated projected CG-Steihaug for the box-constrained trust-region block step.

Solves approximately (Joker, Alg. 2; joker-math.md s.4 step 2)::

    min_s  m(s) = g.s + s.Q s / 2   s.t.  lo <= s <= hi,  ||s|| <= radius

with lo <= 0 <= hi. CG runs on the free variables (those not at a bound with
the gradient pointing out of the box). When a CG step leaves the box, the
better (lower model value) of the projected point and the point where the
step first meets a bound is kept, the active set is rebuilt and CG restarts;
when it leaves the trust region or meets non-positive curvature, the step
stops on the boundary (projected onto the box) -- Steihaug's rule. Every
accepted iterate lowers m, so the returned step always has m(s) <= 0.

Vectors are tensors of shape (b, C) (one block of alpha, C outputs); inner
products and norms are over all entries.
"""

from __future__ import annotations

import math

import torch

__all__ = ["box_tr_cg"]


def _boundary_step(S, p, radius):
    """tau >= 0 with ||S + tau p|| = radius (S inside the ball)."""
    pp = float((p * p).sum())
    if pp == 0.0:
        return 0.0
    sp = float((S * p).sum())
    ss = float((S * S).sum())
    disc = max(sp * sp + pp * (radius * radius - ss), 0.0)
    return (-sp + math.sqrt(disc)) / pp


def _box_step(S, p, lo, hi):
    """Largest t >= 0 with lo <= S + t p <= hi (inf when unbounded)."""
    with torch.no_grad():
        up = torch.where(p > 0, (hi - S) / p, torch.full_like(S, math.inf))
        dn = torch.where(p < 0, (lo - S) / p, torch.full_like(S, math.inf))
        t = torch.minimum(up, dn).min()
    return max(float(t), 0.0)


def box_tr_cg(g, Qmv, lo, hi, radius=math.inf, max_iter=50, rtol=1e-3, max_restarts=20):
    """Approximate box- and trust-region-constrained minimiser of a quadratic model.

    Parameters
    ----------
    g : tensor of shape (b, C)
        Gradient of the block objective at the current point.
    Qmv : callable
        ``Qmv(P)`` returns Q @ P for P of shape (b, C); Q symmetric
        positive semi-definite (the block Hessian K_BB + diag(h'')).
    lo, hi : tensors of shape (b, C)
        Bounds on the step (lo <= 0 <= hi; may be +-inf).
    radius : float
        Trust-region radius (Frobenius norm of the step); inf for none.
    max_iter : int
        Cap on the total number of CG iterations (Q products).
    rtol : float
        Stop when the free-variable residual falls below rtol times its
        initial norm.
    max_restarts : int
        Cap on the active-set restarts after box hits.

    Returns
    -------
    S : tensor of shape (b, C)
        The step, feasible for the box and the radius.
    pred : float
        Model value m(S) <= 0 (the predicted change of the objective).
    n_iter : int
        CG iterations used.
    """
    S = torch.zeros_like(g)
    grad = g.clone()
    n_iter = 0
    r0 = None
    for _ in range(max_restarts + 1):
        free = ~(((S <= lo) & (grad > 0)) | ((S >= hi) & (grad < 0)))
        r = torch.where(free, -grad, torch.zeros_like(grad))
        rr = float((r * r).sum())
        if r0 is None:
            r0 = rr
        if rr == 0.0 or rr <= rtol * rtol * r0 or n_iter >= max_iter:
            break
        p = r.clone()
        restart = False
        done = False
        while n_iter < max_iter:
            n_iter += 1
            Qp = Qmv(p)
            Qp = torch.where(free, Qp, torch.zeros_like(Qp))
            pQp = float((p * Qp).sum())
            t_box = _box_step(S, p, lo, hi)
            if pQp <= 0.0:
                # Non-positive curvature: go as far as the box and the radius allow.
                t = min(t_box, _boundary_step(S, p, radius))
                if not math.isfinite(t):
                    done = True
                    break
                S = torch.minimum(torch.maximum(S + t * p, lo), hi)
                done = True
                break
            a = rr / pQp
            t_rad = _boundary_step(S, p, radius) if math.isfinite(radius) else math.inf
            if a >= t_rad and t_rad <= t_box:
                # Leaves the trust region first: stop on its boundary (Steihaug).
                S = torch.minimum(torch.maximum(S + t_rad * p, lo), hi)
                done = True
                break
            if a > t_box:
                # Leaves the box: keep the better of projection and truncation.
                S_trunc = S + t_box * p
                S_proj = torch.minimum(torch.maximum(S + a * p, lo), hi)
                if math.isfinite(radius):
                    nrm = float(torch.linalg.vector_norm(S_proj))
                    if nrm > radius:
                        S_proj = S_proj * (radius / nrm)
                S_trunc = torch.minimum(torch.maximum(S_trunc, lo), hi)
                m_trunc = float((g * S_trunc).sum() + 0.5 * (S_trunc * Qmv(S_trunc)).sum())
                m_proj = float((g * S_proj).sum() + 0.5 * (S_proj * Qmv(S_proj)).sum())
                S = S_proj if m_proj <= m_trunc else S_trunc
                restart = True
                break
            S = S + a * p
            r = r - a * Qp
            rr_new = float((r * r).sum())
            if rr_new <= rtol * rtol * r0:
                done = True
                break
            p = r + (rr_new / rr) * p
            rr = rr_new
        if done or not restart:
            break
        grad = g + Qmv(S)
    QS = Qmv(S)
    pred = float((g * S).sum() + 0.5 * (S * QS).sum())
    if pred > 0.0:  # rounding or a bad projection: never return an ascent step
        return torch.zeros_like(g), 0.0, n_iter
    return S, pred, n_iter
