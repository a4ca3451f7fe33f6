"""Truncated projected CG-Steihaug for the box-constrained trust-region block step.

Solves approximately (Joker, Alg. 2; docs/dual.md s.4 step 2)::

    min_s  m(s) = g.s + s.Q s / 2   s.t.  lo <= s <= hi,  ||s|| <= radius

with lo <= 0 <= hi. CG runs on the free variables (those not at a bound with
the gradient pointing out of the box). When a CG step leaves the box, the
better (lower model value) of the projected point and the point where the
step first meets a bound is kept, the active set is rebuilt and CG restarts
(also after CG converges on a face, when a variable held at a bound now has a
gradient pointing into the box); when it leaves the trust region or meets non-positive curvature, the step
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
        t = torch.where(p > 0, hi - S, lo - S).div_(p)  # >= 0 wherever p != 0
        t = torch.where(p != 0, t, math.inf).min()
    return max(float(t), 0.0)


def _flat_product(Qmv, shape):
    """v -> (Q @ v.view(shape)).view(-1) for a matrix Q or a product callable."""
    if not torch.is_tensor(Qmv):
        return lambda v: Qmv(v.view(shape)).reshape(-1)
    if shape[1] == 1:
        return lambda v: torch.mv(Qmv, v)
    return lambda v: (Qmv @ v.view(shape)).view(-1)


def _model(g, S, QS):
    """Model value g.S + S.QS / 2."""
    return float(torch.dot(g, S) + 0.5 * torch.dot(S, QS))


def _box_hit(g, Qv, S, p, trial, lo, hi, radius, t_box, m_cur, rr, pQp):
    """A CG step that leaves the box: the better of the projected and the truncated point.

    Returns
    -------
    (S, m, grad) : the new point, its model value and model gradient g + Q S.
    """
    S_proj = torch.clamp(trial, lo, hi)
    if math.isfinite(radius):
        nrm = float(torch.linalg.vector_norm(S_proj))
        if nrm > radius:
            S_proj = S_proj * (radius / nrm)
    QS = Qv(S_proj)
    m_proj = _model(g, S_proj, QS)
    m_trunc = m_cur - t_box * rr + 0.5 * t_box * t_box * pQp
    if m_proj <= m_trunc:
        return S_proj, m_proj, g + QS
    S = torch.clamp(S + t_box * p, lo, hi)
    QS = Qv(S)
    return S, _model(g, S, QS), g + QS


def box_tr_cg(g, Qmv, lo, hi, radius=math.inf, max_iter=50, rtol=1e-3, max_restarts=20, with_product=False):
    """Approximate box- and trust-region-constrained minimiser of a quadratic model.

    Parameters
    ----------
    g : tensor of shape (b, C)
        Gradient of the block objective at the current point.
    Qmv : callable or tensor of shape (b, b)
        ``Qmv(P)`` returns Q @ P for P of shape (b, C), or Q itself; Q
        symmetric positive semi-definite (the block Hessian K_BB + diag(h'')).
    lo, hi : tensors of shape (b, C)
        Bounds on the step (lo <= 0 <= hi; may be +-inf).
    radius : float
        Trust-region radius (Frobenius norm of the step); inf for none.
    max_iter : int
        Cap on the total number of CG iterations.
    rtol : float
        Stop when the free-variable residual falls below rtol times its
        initial norm.
    max_restarts : int
        Cap on the active-set restarts after box hits.
    with_product : bool
        Also return Q S, the product the model value at S needs anyway: a
        caller that evaluates the step (the solver's actual change of the
        objective needs K_BB S = Q S - diag(h'') S) then spends no product
        of its own.

    Returns
    -------
    S : tensor of shape (b, C)
        The step, feasible for the box and the radius.
    pred : float
        Model value m(S) <= 0 (the predicted change of the objective).
    n_iter : int
        CG iterations used.
    QS : tensor of shape (b, C)
        Q @ S (only with ``with_product``).

    Notes
    -----
    Cost: one product with Q per CG iteration, one or two per restart and
    one at the end, unless every variable stayed free and the step is a sum
    of CG steps (no box, KRR): Q S is then the sum of their products,
    already formed. (A full-HEPC random-feature fit, 10 CG iterations per
    block, spent 1 of its 11 products per visit there.) The model along a CG direction is known in closed form
    (g.p = -r.r), so the truncated point of a box hit costs no product; the
    projected point costs one, which is also the gradient of the restart.
    """
    shape = g.shape
    Qv = _flat_product(Qmv, shape)
    # Flat vectors: an iteration is one product and a handful of fused vector ops.
    g, lo, hi = g.reshape(-1), lo.reshape(-1), hi.reshape(-1)
    S = torch.zeros_like(g)
    grad = g.clone()
    n_iter = 0
    r0 = None
    m_cur = 0.0  # model value at S
    finite_radius = math.isfinite(radius)
    # Q S kept as the sum of the CG steps' products while every variable is free and S moved by CG
    # steps alone (KRR: always), so the model value at the end costs no product; None otherwise
    QS_run = torch.zeros_like(g)
    for _ in range(max_restarts + 1):
        free_mask = ~(((S <= lo) & (grad > 0)) | ((S >= hi) & (grad < 0)))
        if QS_run is not None and not bool(free_mask.all()):
            QS_run = None
        free = free_mask.to(g.dtype)
        r = grad.mul(free).neg_()
        rr = float(torch.dot(r, r))
        if r0 is None:
            r0 = rr
        if rr == 0.0 or rr <= rtol * rtol * r0 or n_iter >= max_iter:
            break
        p = r.clone()
        restart = False
        done = False
        while n_iter < max_iter:
            n_iter += 1
            Qp = Qv(p).mul_(free)
            pQp = float(torch.dot(p, Qp))
            t_rad = _boundary_step(S, p, radius) if finite_radius else math.inf
            if pQp <= 0.0:
                # Non-positive curvature: go as far as the box and the radius allow.
                t = min(_box_step(S, p, lo, hi), t_rad)
                if math.isfinite(t):
                    S = torch.clamp(S + t * p, lo, hi)
                    QS_run = None
                done = True
                break
            a = rr / pQp
            trial = torch.add(S, p, alpha=a)
            leaves_box = not torch.equal(trial, torch.clamp(trial, lo, hi))
            t_box = _box_step(S, p, lo, hi) if leaves_box else math.inf
            if a >= t_rad and t_rad <= t_box:
                # Leaves the trust region first: stop on its boundary (Steihaug).
                S = torch.clamp(S + t_rad * p, lo, hi)
                QS_run = None
                done = True
                break
            if leaves_box:
                S, m_cur, grad = _box_hit(g, Qv, S, p, trial, lo, hi, radius, t_box, m_cur, rr, pQp)
                QS_run = None
                restart = True
                break
            S = trial
            if QS_run is not None:
                QS_run.add_(Qp, alpha=a)
            m_cur -= 0.5 * a * rr
            r.add_(Qp, alpha=-a)
            rr_new = float(torch.dot(r, r))
            if rr_new <= rtol * rtol * r0:
                # Converged on this face: a bound variable may now want to leave
                # its bound; the restart test below decides (one product).
                QS = Qv(S)
                grad = g + QS
                if QS_run is not None:
                    QS_run = QS
                restart = True
                break
            p = torch.add(r, p, alpha=rr_new / rr)
            rr = rr_new
        if done or not restart:
            break
    QS = Qv(S) if QS_run is None else QS_run
    pred = _model(g, S, QS)
    if pred > 0.0:  # rounding or a bad projection: never return an ascent step
        S, QS, pred = torch.zeros_like(S), torch.zeros_like(S), 0.0
    if with_product:
        return S.view(shape), pred, n_iter, QS.view(shape)
    return S.view(shape), pred, n_iter
