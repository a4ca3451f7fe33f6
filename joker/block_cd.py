"""Exact coordinate descent for the box-constrained quadratic model of a dense block.

For a piecewise-quadratic loss the block model of DBCD-TR is exact
(docs/dual.md s.4) and, with the orthant of each variable fixed, it is the
box-constrained quadratic program::

    min_s  m(s) = g.s + s.Q s / 2   s.t.  lo <= s <= hi,      Q = K_BB + diag(q)

with no trust region (its radius is infinite for these losses). For the
logistic loss the same form is the Newton model, with lo/hi the
fraction-to-boundary box intersected with an inf-norm trust region (the
solver does the intersection). When the
block is dense (exact kernel, K_BB formed) this module solves it by cyclic
coordinate descent with exact one-dimensional minimisation, the inner solver
of LIBLINEAR's dual method (Hsieh et al., "A dual coordinate descent method
for large-scale linear SVM", ICML 2008, Alg. 1; the same update as one SMO
variable of LIBSVM without its equality constraint):

    s_i <- clip(s_i - (g_i + (Q s)_i) / Q_ii, lo_i, hi_i),   Q s += Q[:, i] (change of s_i).

A variable at a bound whose gradient points out of the box does not move
and costs O(1); a moving one costs O(b). The loop is compiled with Numba
(one thread, no Python per coordinate): a sweep over a 256 block is tens of
microseconds, where one CG iteration of :mod:`joker.trust_region` costs about
as much in Python and torch overhead alone, plus a restart at every box hit.
Bounds are handled exactly, so a block with many variables at their bounds
(hinge losses at large C) needs no active-set restarts.

The stopping rule matches the CG solver's: the largest projected-gradient
entry of a sweep below ``rtol`` times that of the first sweep. The budget
is given in sweeps; one sweep costs at most one product with Q.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["box_qp_cd", "available", "warm_up"]

try:  # pragma: no branch
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; keep the CG path working without it
    numba = None


def available(device) -> bool:
    """Whether the compiled solver can run for tensors on ``device`` (CPU and Numba present)."""
    return numba is not None and torch.device(device).type == "cpu"


def _cd_loop(Q, g, lo, hi, s, Qs, max_sweeps, rtol, first):
    b = Q.shape[0]
    sweeps = 0
    worst = 0.0
    while sweeps < max_sweeps:
        sweeps += 1
        worst = 0.0
        for i in range(b):
            gi = g[i] + Qs[i]
            si = s[i]
            # projected gradient: zero when the bound blocks the descent direction
            if si <= lo[i] and gi > 0.0:
                continue
            if si >= hi[i] and gi < 0.0:
                continue
            pg = abs(gi)
            if pg > worst:
                worst = pg
            qii = Q[i, i]
            if qii > 0.0:
                new = si - gi / qii
            elif gi > 0.0:
                new = lo[i]
            else:
                new = hi[i]
            if new < lo[i]:
                new = lo[i]
            elif new > hi[i]:
                new = hi[i]
            d = new - si
            if d != 0.0:
                s[i] = new
                row = Q[i]
                for j in range(b):  # Q symmetric: row i is column i
                    Qs[j] += d * row[j]
        if first < 0.0:
            first = worst
        if worst == 0.0 or worst <= rtol * first:
            break
    return sweeps, worst, first


CHUNK = 10
"""Sweeps between two Newton steps on the free face (when the sweeps alone have not converged)."""

MIN_NEWTON_STEP = 0.1
"""A face Newton step cut by a bound to less than this fraction is not taken (and no more are tried)."""

_compiled = None


def _kernel():
    global _compiled
    if _compiled is None:
        _compiled = numba.njit(cache=True, nogil=True, fastmath=False)(_cd_loop)
    return _compiled


def _face_newton(Q, g, lo, hi, s, Qs):
    """One Newton step on the variables strictly inside their bounds, cut at the first bound.

    Solves Q_FF d = -(g + Q s)_F by Cholesky (a relative ridge of 1e-12,
    raised up to 1e-6 when the factorisation fails: Q_FF is only
    semi-definite for losses with h'' = 0) and moves s_F by t d with the
    largest t <= 1 that keeps the box; along d the model decreases for every
    t in (0, 1] (d.Q d <= -grad.d for the ridged system), so this never
    undoes the sweeps' progress. When the sweeps have found the bounds that
    hold at the solution this is the exact minimiser (t = 1), which CD alone
    approaches only linearly on an ill-conditioned face (KRR at small lam).
    Returns False, and the caller goes on with sweeps only, when there is no
    free variable, the factorisation fails, or a bound cuts the step below
    ``MIN_NEWTON_STEP``: then the face is not yet the right one (measured on
    an SVR block at lam = 0.01 with a near-singular K_FF: the Newton
    direction, projected or cut, gained less than the sweeps; projecting it
    onto the box raised the model by 1e4).
    """
    F = np.flatnonzero((s > lo) & (s < hi))
    if len(F) == 0:
        return False
    grad = g[F] + Qs[F]
    # torch's Cholesky runs on the caller's torch threads (one, inside a block step: joker.intraop);
    # scipy's LAPACK would use every BLAS thread, 3.5 ms per 256 block on the shared 2 cores.
    A = torch.from_numpy(Q[np.ix_(F, F)])
    scale = max(float(A.diagonal().max()), 1e-300)
    eye = torch.eye(len(F), dtype=A.dtype)
    for ridge in (1e-12, 1e-9, 1e-6):
        L, info = torch.linalg.cholesky_ex(A + (ridge * scale) * eye)
        if int(info) == 0:
            break
    else:
        return False
    d = -torch.cholesky_solve(torch.from_numpy(grad).reshape(-1, 1), L).numpy().ravel()
    sF = s[F]
    room = np.where(d > 0, (hi[F] - sF) / np.where(d > 0, d, 1.0),
                    np.where(d < 0, (lo[F] - sF) / np.where(d < 0, d, 1.0), np.inf))
    t = min(1.0, float(room.min()))
    if not t >= MIN_NEWTON_STEP:
        return False
    step = np.clip(sF + t * d, lo[F], hi[F]) - sF
    s[F] = sF + step
    Qs += Q[:, F] @ step
    return True


def warm_up() -> None:
    """Load (or compile, the first time on a machine) the compiled loop, outside any timed region.

    The first call in a process costs about 0.3-0.5 s (Numba's type system
    starts and the cached machine code is loaded; about 2 s more when it is
    compiled). Benchmarks call this before the clock starts, as benchopt does
    for its JIT-compiled solvers; a plain ``fit`` pays it once per process.
    Does nothing without Numba.
    """
    if numba is None:
        return
    one = np.ones(1)
    _kernel()(np.ones((1, 1)), one.copy(), -one, one.copy(), np.zeros(1), np.zeros(1), 1, 0.5, -1.0)


def box_qp_cd(g, Q, lo, hi, max_sweeps=100, rtol=1e-3, newton=True):
    """Coordinate-descent minimiser of g.s + s.Q s / 2 over lo <= s <= hi (one output column).

    Parameters
    ----------
    g : CPU tensor of shape (b, 1)
        Gradient of the block objective at the current point.
    Q : CPU tensor of shape (b, b)
        Symmetric positive semi-definite block Hessian K_BB + diag(h'').
    lo, hi : CPU tensors of shape (b, 1)
        Bounds on the step, lo <= 0 <= hi (may be +-inf).
    max_sweeps : int
        Cap on the number of sweeps (each costs at most one product with Q).
    rtol : float
        Stop when the largest projected-gradient entry of a sweep is at most
        rtol times that of the first sweep.
    newton : bool
        Try a Newton step on the free face every ``CHUNK`` sweeps while the
        sweeps have not converged (:func:`_face_newton`). Measured on the
        exact kernel: KRR, 2,000 rows, lam = 1e-3: 2.7-3.0 s with, 12.2 s
        without (64 vs 96 epochs); KLR one-vs-rest on the digits (1,400
        rows), lam = 1e-3: 5.5 s with, 2.6 s without (the trust-region box
        cuts the steps), so the solver passes ``newton`` for
        piecewise-quadratic losses only.

    Returns
    -------
    S : tensor of shape (b, 1), dtype of g
        The step (feasible for the box).
    pred : float
        Model value m(S) <= 0, computed from the maintained Q S.
    n_sweeps : int

    Raises
    ------
    RuntimeError
        Numba is not installed (check :func:`available` first).
    """
    if numba is None:
        raise RuntimeError("joker.block_cd needs numba (pip install numba)")
    dtype = g.dtype
    Qn = np.ascontiguousarray(Q.detach().numpy(), dtype=np.float64)
    gn = g.detach().reshape(-1).numpy().astype(np.float64)
    lon = lo.detach().reshape(-1).numpy().astype(np.float64)
    hin = hi.detach().reshape(-1).numpy().astype(np.float64)
    s = np.zeros_like(gn)
    Qs = np.zeros_like(gn)
    loop = _kernel()
    used, first = 0, -1.0
    while True:
        cap = min(CHUNK, int(max_sweeps) - used) if newton else int(max_sweeps) - used
        n, worst, first = loop(Qn, gn, lon, hin, s, Qs, cap, float(rtol), first)
        used += n
        if worst == 0.0 or worst <= rtol * first or used >= max_sweeps:
            break
        if newton:
            newton = _face_newton(Qn, gn, lon, hin, s, Qs)
            used += newton
    sweeps = used
    pred = float(gn @ s + 0.5 * (s @ Qs))
    if not pred < 0.0:  # no descent found (or rounding): never return an ascent step
        return torch.zeros_like(g), 0.0, int(sweeps)
    return torch.from_numpy(s).to(dtype).reshape(g.shape), pred, int(sweeps)
