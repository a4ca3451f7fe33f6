"""Primal-dual interior-point method for the L1-SVC dual with a rank-k kernel factor.

Problem (the SVM dual, C = 1 / lam; Fine and Scheinberg, JMLR 2001, eq. (2))::

    min_a  1/2 ||V^T a||^2 - e^T a   s.t.  0 <= a <= C,  [y^T a = 0  (bias)]

with ``V = diag(y) U`` and ``U`` of shape (n, k) a factor of the kernel
(random Fourier features or a Nystroem factor), so ``Q = V V^T``.

Method: the classical long-step infeasible primal-dual IPM with Mehrotra's
predictor-corrector (Mehrotra, SIAM J. Optim. 1992, s.2; the practical form
of the low-rank IPM of Gu, Song and Zhang, arXiv 2307.07735, and of Ferris
and Munson, SIAM J. Optim. 2003, s.2-3). With multipliers ``z >= 0`` of
``a >= 0``, ``w >= 0`` of ``a <= C`` and ``b`` of ``y^T a = 0`` (the SVM
intercept), slack ``s = C - a``, the KKT conditions are::

    r_d = Q a - e + b y - z + w = 0,   r_p = y^T a = 0,
    a_i z_i = mu,   s_i w_i = mu,       mu -> 0.

Eliminating ``dz = (r_z - z da) / a`` and ``dw = (r_w + w da) / s`` leaves
the Newton system (Ferris and Munson, eq. (8))::

    (D + V V^T) da + y db = -r_d + r_z / a - r_w / s,   y^T da = -r_p,
    D = z / a + w / s,

solved by :class:`joker.ipm.newton.LowRankNewtonSolver` (Woodbury, one k x k
Cholesky per iteration, shared by the bias column, the predictor and the
corrector), ``db`` from the 1 x 1 Schur complement ``y^T H^-1 y``. Steps
keep a fraction ``eta`` of the distance to the boundary (fraction to the
boundary, Wright, Primal-Dual Interior-Point Methods, 1997, ch. 11).

Stopping: the relative duality gap of the recomputed primal and dual (the
same definition as Joker's certificate: lam-scaled objectives, gap =
(P - D) / max(1, |P|)) and the relative residuals, all <= ``tol``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from .newton import LowRankNewtonSolver

__all__ = ["IPMResult", "svm_certificate", "lowrank_svm_ipm"]

#: End-game iterations without halving the best gap after which the IPM stops (rounding floor, e.g.
#: float32 at tol 1e-8).
STALL_WINDOW = 5


@dataclass
class IPMResult:
    """Outcome of :func:`lowrank_svm_ipm`.

    Attributes
    ----------
    a : tensor of shape (n,)
        Dual variables in [0, C] (strictly inside: an interior iterate).
    intercept : float
        The bias b (0.0 without bias).
    primal, dual, gap : float
        Certificate of the returned iterate (:func:`svm_certificate`).
    residual_dual, residual_primal : float
        Relative ||r_d||_inf and |y^T a| (module docstring).
    n_iter : int
    converged : bool
    used_fallback : bool
        True when some Newton solve needed the partitioned fallback.
    history : list of dict
        Per iteration: iteration, seconds, primal, dual, gap, mu, residual_dual,
        residual_primal, step.
    """

    a: torch.Tensor
    intercept: float
    primal: float
    dual: float
    gap: float
    residual_dual: float
    residual_primal: float
    n_iter: int
    converged: bool
    used_fallback: bool
    history: list = field(default_factory=list)


def svm_certificate(V, y, a, intercept, lam):
    """Lam-scaled primal, dual and relative duality gap of an L1-SVC iterate.

    P = lam/2 ||w||^2 + sum_i max(0, 1 - y_i f_i), with w = V^T a and
    y_i f_i = (V w)_i + b y_i; D = lam (e^T a - 1/2 ||w||^2) (the SVM dual of
    Fine and Scheinberg, eq. (2), times lam = 1/C); gap = (P - D) / max(1, |P|).
    D is a lower bound of the optimum when 0 <= a <= C and, with a bias, y^T a = 0.

    Parameters
    ----------
    V : tensor of shape (n, k)
        diag(y) U.
    y : tensor of shape (n,)
        Labels -1 / +1.
    a : tensor of shape (n,)
    intercept : float
    lam : float

    Returns
    -------
    (primal, dual, gap) : tuple of float
    """
    wv = V.T @ a
    margin = V @ wv + intercept * y
    ww = float(wv @ wv)
    primal = 0.5 * lam * ww + float(torch.clamp(1.0 - margin, min=0.0).sum())
    dual = lam * (float(a.sum()) - 0.5 * ww)
    return primal, dual, (primal - dual) / max(1.0, abs(primal))


def _max_step(x, dx):
    neg = dx < 0
    if not bool(neg.any()):
        return 1.0
    return min(1.0, float((-x[neg] / dx[neg]).min()))


def _stalled(history, window=STALL_WINDOW, end_game=1e-3):
    """True in the end game (best gap < ``end_game``) when the last ``window`` iterations did not halve it.

    Far from the optimum the gap of a long-step IPM may shrink slowly for many iterations; only
    near it does a flat gap mean the rounding floor.
    """
    if len(history) <= 2 * window:
        return False
    gaps = [h["gap"] for h in history]
    best_before = min(gaps[:-window])
    return best_before < end_game and min(gaps[-window:]) > 0.5 * best_before


def _start(y, C, bias):
    """Interior start before scaling: a_i = C n_min / (2 n_class(i)) (feasible for y^T a = 0), or C / 2."""
    if not bias:
        return torch.full_like(y, 0.5 * C)
    n_pos = float((y > 0).sum())
    n_neg = float(y.numel()) - n_pos
    n_min = min(n_pos, n_neg)
    return torch.where(y > 0, torch.full_like(y, 0.5 * C * n_min / n_pos), torch.full_like(y, 0.5 * C * n_min / n_neg))


def lowrank_svm_ipm(U, y, lam, bias=True, tol=1e-8, max_iter=200, eta=0.995, max_time=None, verbose=0,
                    callback=None):
    """Solve the L1-SVC dual on a rank-k factor by Mehrotra's predictor-corrector IPM.

    Parameters
    ----------
    U : tensor of shape (n, k)
        Kernel factor (K ~= U U^T), floating, any device.
    y : tensor of shape (n,)
        Labels -1.0 / +1.0, dtype and device of U, both classes present when
        ``bias`` is True.
    lam : float
        Regularisation (> 0) of the summed hinge losses; the box is C = 1 / lam.
    bias : bool, default True
        Fit an intercept (the equality y^T a = 0).
    tol : float, default 1e-8
        Target of the relative duality gap and relative residuals.
    max_iter : int, default 200
        Iteration cap; the IPM also stops (not converged) when, below a gap of 1e-3, the best gap has
        not halved in ``STALL_WINDOW`` iterations (the rounding floor of the dtype) or a Newton step
        is not finite.
    eta : float, default 0.995
        Fraction to the boundary (raised towards 1 as mu -> 0).
    max_time : float or None
        Seconds; the last iterate is returned (not converged) when exceeded.
    verbose : int
        > 0 prints one line per iteration.
    callback : callable or None
        Called as ``callback(row, a, b)`` after each iterate is certified:
        ``row`` the history entry just appended (iteration, seconds, gap, ...),
        ``a`` the dual iterate (tensor (n,), not to be modified), ``b`` the
        intercept. Its time counts in the solve's ``seconds``.

    Returns
    -------
    IPMResult

    Raises
    ------
    ValueError
        Shapes that do not match, lam <= 0, or a bias with one class only.
    """
    if U.ndim != 2 or y.ndim != 1 or y.shape[0] != U.shape[0]:
        raise ValueError(f"U must be (n, k) and y (n,), got {tuple(U.shape)} and {tuple(y.shape)}")
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be > 0 (C = 1/lam), got {lam!r}")
    if bias and (bool((y > 0).all()) or bool((y < 0).all())):
        raise ValueError("an SVM with a bias needs samples of both classes")
    t0 = time.perf_counter()
    n = U.shape[0]
    C = 1.0 / lam
    V = U * y[:, None]
    V_abs = V.abs()
    a = _start(y, C, bias)
    # Scale the start so that the mean |Q a| is at most 1: with a = C/2 the gradient is of order n C
    # and the first steps are tiny (n = 20,000, k = 200: 25 iterations instead of 29-33; n = 2,000: 14
    # instead of 20).  Scaling keeps y^T a = 0.
    Qa = V @ (V.T @ a)
    q = float(Qa.abs().mean())
    if q > 1.0:
        a, Qa = a / q, Qa / q
    grad = Qa - 1.0
    delta = 1.0
    z = delta + torch.clamp(grad, min=0.0)
    w = delta + torch.clamp(-grad, min=0.0)
    b = 0.0
    history = []
    used_fallback = False
    converged = False
    it = 0
    while True:
        s = C - a
        Qa = V @ (V.T @ a)
        rd = Qa - 1.0 + b * y - z + w
        rp = float(y @ a) if bias else 0.0
        mu = float(a @ z + s @ w) / (2 * n)
        primal, dual, gap = svm_certificate(V, y, a, b, lam)
        scale_d = 1.0 + max(float(Qa.abs().max()), float(z.max()), float(w.max()))
        res_d = float(rd.abs().max()) / scale_d
        res_p = abs(rp) / (1.0 + float(a.sum()))
        history.append(dict(iteration=it, seconds=time.perf_counter() - t0, primal=primal, dual=dual,
                            gap=gap, mu=mu, residual_dual=res_d, residual_primal=res_p,
                            step=history[-1]["step"] if history else 0.0))
        if verbose:
            print(f"ipm {it:3d}  gap {gap:.3e}  mu {mu:.3e}  rd {res_d:.2e}  rp {res_p:.2e}")
        if callback is not None:
            callback(history[-1], a, b)
        if gap <= tol and res_d <= tol and res_p <= tol:
            converged = True
            break
        if it >= max_iter or (max_time is not None and time.perf_counter() - t0 > max_time) or _stalled(history):
            break
        it += 1
        d = z / a + w / s
        newton = LowRankNewtonSolver(V, d, V_abs=V_abs)
        hy = None

        def direction(rz, rw):
            nonlocal hy
            g = -rd + rz / a - rw / s
            if not bias:
                da, db = newton.solve(g), 0.0
            else:
                if hy is None:  # H^-1 y with the predictor's right-hand side, then reused by the corrector
                    both = newton.solve(torch.stack([y, g], 1))
                    hy, hg = both[:, 0], both[:, 1]
                else:
                    hg = newton.solve(g)
                db = (float(y @ hg) + rp) / float(y @ hy)
                da = hg - db * hy
            return da, db, (rz - z * da) / a, (rw + w * da) / s

        def step_to_boundary(da, dz, dw):
            return min(_max_step(a, da), _max_step(s, -da), _max_step(z, dz), _max_step(w, dw))

        # predictor (affine scaling, sigma = 0)
        da, db, dz, dw = direction(-a * z, -s * w)
        alpha = step_to_boundary(da, dz, dw)
        mu_aff = float((a + alpha * da) @ (z + alpha * dz) + (s - alpha * da) @ (w + alpha * dw)) / (2 * n)
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        # corrector (Mehrotra's second-order term and centring)
        da, db, dz, dw = direction(sigma * mu - a * z - da * dz, sigma * mu - s * w + da * dw)
        used_fallback = used_fallback or newton.used_fallback
        frac = max(eta, 1.0 - 10.0 * mu / max(1.0, C))
        alpha = frac * step_to_boundary(da, dz, dw)
        new = (a + alpha * da, z + alpha * dz, w + alpha * dw)
        if not all(bool(torch.isfinite(v).all()) for v in new) or not math.isfinite(db):
            break  # rounding broke the Newton step: keep the last certified iterate
        a, z, w = new
        b = b + alpha * db
        # keep the iterate strictly inside the box despite rounding near C
        a = torch.clamp(a, min=torch.finfo(a.dtype).tiny, max=C * (1.0 - torch.finfo(a.dtype).eps))
        history[-1]["step"] = alpha
    return IPMResult(a=a, intercept=float(b), primal=primal, dual=dual, gap=gap, residual_dual=res_d,
                     residual_primal=res_p, n_iter=it, converged=converged, used_fallback=used_fallback,
                     history=history)
