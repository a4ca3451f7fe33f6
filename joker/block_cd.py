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

from . import kernel_cache

__all__ = ["box_qp_cd", "solve_block_pq", "available", "warm_up"]

try:  # pragma: no branch
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; keep the CG path working without it
    numba = None


def available(device) -> bool:
    """Whether the compiled solver can run for tensors on ``device`` (CPU and Numba present)."""
    return numba is not None and torch.device(device).type == "cpu"


def _cd_loop(Q, qd, g, lo, hi, s, Qs, max_sweeps, rtol, first):
    # The model's Hessian is Q + diag(qd): qd (h'' of the logistic loss) is kept aside, so that
    # the caller need not form K_BB + diag(h'') at every trust-region iteration.
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
            qii = Q[i, i] + qd[i]
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
                Qs[i] += d * qd[i]
        if first < 0.0:
            first = worst
        if worst == 0.0 or worst <= rtol * first:
            break
    return sweeps, worst, first


CHUNK = 10
"""Sweeps between two Newton steps on the free face (when the sweeps alone have not converged)."""

MIN_NEWTON_STEP = 0.1
"""A face Newton step cut by a bound to less than this fraction is not taken (:func:`box_qp_cd` then tries no
more in that call; :func:`solve_block_pq` tries again once the free face has changed)."""

NEWTON_SLOW = 0.1
"""``solve_block_pq`` tries a face Newton step only when the last sweep still moved more than this fraction
of the first sweep's largest move (the sweeps crawl). Measured at tol 1e-3 in one process each (one-vs-rest
digits, a9a 2,000 / 5,000 rows, hinge and squared hinge): a try after every 10 unconverged sweeps (0 here)
cost 5-20 % more than 0.1 for the same epochs, mostly in its per-call overhead; never trying (inf) was
within 10 % of 0.1 there, but loses the Newton step where it matters (ill-conditioned faces: KRR at small
lam, :func:`box_qp_cd`). :func:`solve_block_pq` also waits until the free face has held over a chunk: a
step on a face that is still changing is mostly cut by a bound and rejected. Measured (5 fits each,
interleaved, minimum; issue 13): a9a 2,000 rows C = 10 hinge, blocks of 1,024: 0.166 s with a try at every
crawling chunk end, 0.088 s with the settled-face rule (same 5 epochs); blocks of 256: 0.185 / 0.129 s;
squared hinge 0.139 / 0.102 s; digits C = 10 hinge (blocks of 1,024) 0.130 / 0.103 s."""

NEWTON_MAX_FREE = 512
"""``solve_block_pq`` tries no face Newton step on more free variables than this. The Cholesky costs
|F|^3 / 3 flops: at |F| = 1,000 (hinge, blocks of 1,000, lam 1e-5) mostly rejected tries took 4.6 s of a
5.2 s fit while the sweeps took 0.3 s; at 512 a try costs about 45 Mflop (a few ms)."""

_compiled = None


def _kernel():
    global _compiled
    if _compiled is None:
        _compiled = numba.njit(cache=True, nogil=True, fastmath=False)(_cd_loop)
    return _compiled


def _cut_newton(A, grad, room_lo, room_hi):
    """The Newton step -A^{-1} grad on a face, scaled by the largest t <= 1 inside [room_lo, room_hi].

    ``A`` is the face's Hessian (numpy, symmetric positive semi-definite),
    factorised by torch's Cholesky with a relative ridge of 1e-12, raised up
    to 1e-6 when the factorisation fails (A is only semi-definite for losses
    with h'' = 0). Along the direction the quadratic decreases for every t
    in (0, 1] (d.A d <= -grad.d for the ridged system). Returns the step
    (clipped into the room against rounding), or None when the factorisation
    fails or a bound cuts the step below ``MIN_NEWTON_STEP``.
    """
    # torch's Cholesky runs on the caller's torch threads (one, inside a block step: joker.intraop);
    # scipy's LAPACK would use every BLAS thread, 3.5 ms per 256 block on the shared 2 cores.
    At = torch.from_numpy(A)
    scale = max(float(At.diagonal().max()), 1e-300)
    eye = torch.eye(A.shape[0], dtype=At.dtype)
    for ridge in (1e-12, 1e-9, 1e-6):
        L, info = torch.linalg.cholesky_ex(At + (ridge * scale) * eye)
        if int(info) == 0:
            break
    else:
        return None
    d = -torch.cholesky_solve(torch.from_numpy(grad).reshape(-1, 1), L).numpy().ravel()
    room = np.where(d > 0, room_hi / np.where(d > 0, d, 1.0), np.where(d < 0, room_lo / np.where(d < 0, d, 1.0), np.inf))
    t = min(1.0, float(room.min()))
    if not t >= MIN_NEWTON_STEP:
        return None
    return np.clip(t * d, room_lo, room_hi)


def _face_newton(Q, g, lo, hi, s, Qs):
    """One Newton step on the variables strictly inside their bounds, cut at the first bound.

    Solves Q_FF d = -(g + Q s)_F (:func:`_cut_newton`) and moves s_F by t d
    with the largest t <= 1 that keeps the box, so this never undoes the
    sweeps' progress. When the sweeps have found the bounds that hold at the
    solution this is the exact minimiser (t = 1), which CD alone approaches
    only linearly on an ill-conditioned face (KRR at small lam). Returns
    False, and the caller goes on with sweeps only, when there is no free
    variable, the factorisation fails, or a bound cuts the step below
    ``MIN_NEWTON_STEP``: then the face is not yet the right one (measured on
    an SVR block at lam = 0.01 with a near-singular K_FF: the Newton
    direction, projected or cut, gained less than the sweeps; projecting it
    onto the box raised the model by 1e4).
    """
    F = np.flatnonzero((s > lo) & (s < hi))
    if len(F) == 0:
        return False
    sF = s[F]
    step = _cut_newton(Q[np.ix_(F, F)], g[F] + Qs[F], lo[F] - sF, hi[F] - sF)
    if step is None:
        return False
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
    _kernel()(np.ones((1, 1)), np.zeros(1), one.copy(), -one, one.copy(), np.zeros(1), np.zeros(1), 1, 0.5, -1.0)
    kernel_cache.warm_up()
    residual, loop = _pq_kernels()
    for kinked in (False, True):
        args = (np.ones((1, 1)), np.zeros(1), np.zeros(1), -one, one, -one, one, -one, one.copy(), kinked)
        residual(*args)
        loop(*args, 1, 0.5, -1.0)


def box_qp_cd(g, Q, lo, hi, max_sweeps=100, rtol=1e-3, newton=True, q=None):
    """Coordinate-descent minimiser of g.s + s.(Q + diag(q)) s / 2 over lo <= s <= hi (one output column).

    Parameters
    ----------
    g : CPU tensor of shape (b, 1)
        Gradient of the block objective at the current point.
    Q : CPU tensor of shape (b, b)
        Symmetric positive semi-definite block Hessian: K_BB + diag(h''), or
        K_BB alone with h'' given as ``q``.
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
        cuts the steps), so the solver calls this function for the
        logistic loss only, with ``newton=False`` (the piecewise-quadratic
        losses go through :func:`solve_block_pq`, which has its own face
        Newton step).
    q : CPU tensor of shape (b, 1), optional
        Diagonal added to ``Q`` (h'' >= 0), kept aside so that ``Q`` (the
        kernel block) is used in place. Measured on klr-5k (blocks of 256,
        261 trust-region iterations): forming K_BB + diag(h'') in torch at
        each took 0.06 s of a 0.53 s fit.

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
    qd = np.zeros_like(gn) if q is None else q.detach().reshape(-1).numpy().astype(np.float64)
    if newton and q is not None:  # the face Newton step reads the whole Hessian
        Qn, qd = Qn + np.diag(qd), np.zeros_like(gn)
    s = np.zeros_like(gn)
    Qs = np.zeros_like(gn)
    loop = _kernel()
    used, first = 0, -1.0
    while True:
        cap = min(CHUNK, int(max_sweeps) - used) if newton else int(max_sweeps) - used
        n, worst, first = loop(Qn, qd, gn, lon, hin, s, Qs, cap, float(rtol), first)
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


# ---------------------------------------------------------------------------
# The whole block visit of a piecewise-quadratic loss, in the dual variables.
#
# For these losses the solver's block model is exact, so a visit is just the
# minimisation of J over alpha_B with the rest fixed. Done directly on alpha
# (not on a step s with the orthant of each variable fixed beforehand), one
# coordinate minimisation handles the kink at 0 of SVR / ODM exactly: on each
# side of 0 the one-dimensional function is a quadratic, and convexity says
# which side holds the minimiser. No trust region, no orthant re-selection,
# no torch call per output: one compiled sweep loop per output column.


def _pq_residual(K, f, a, lp, qp, lm, qm, lo, hi, kinked):
    """The block's largest unit-step projected-gradient residual, |a - P(a - g)| on each variable's orthant.

    The same quantity as the solver's ``_residual`` after ``_orthants`` (so
    the skip rule and the residual bookkeeping read the same numbers).
    """
    worst = 0.0
    for i in range(a.shape[0]):
        ai = a[i]
        gs = f[i]
        if kinked:
            pos = ai > 0.0 or (ai == 0.0 and gs + lp[i] < 0.0)
            neg = ai < 0.0 or (ai == 0.0 and gs + lm[i] > 0.0)
            if pos:
                g, lo_e, hi_e = gs + lp[i] + qp[i] * ai, max(lo[i], 0.0), hi[i]
            elif neg:
                g, lo_e, hi_e = gs + lm[i] + qm[i] * ai, lo[i], min(hi[i], 0.0)
            else:
                g, lo_e, hi_e = gs, 0.0, 0.0
        else:
            g, lo_e, hi_e = gs + lp[i] + qp[i] * ai, lo[i], hi[i]
        p = min(max(ai - g, lo_e), hi_e)
        r = abs(ai - p)
        if r > worst:
            worst = r
    return worst


def _pq_loop(K, f, a, lp, qp, lm, qm, lo, hi, kinked, max_sweeps, rtol, first):
    """Cyclic exact coordinate minimisation of J on one output column (f = (K alpha)_B kept in step)."""
    b = a.shape[0]
    sweeps = 0
    worst = 0.0
    while sweeps < max_sweeps:
        sweeps += 1
        worst = 0.0
        for i in range(b):
            kii = K[i, i]
            ai = a[i]
            fi = f[i]
            # phi(x) = kii (x - ai)^2 / 2 + fi (x - ai) + h(x); phi'(x) on a side = kii (x - ai) + fi + l + q x
            if kinked:
                dplus = fi - kii * ai + lp[i]  # phi'(0+)
                dminus = fi - kii * ai + lm[i]  # phi'(0-)
                if dplus < 0.0 and hi[i] > 0.0:
                    den = kii + qp[i]
                    x = (kii * ai - fi - lp[i]) / den if den > 0.0 else hi[i]
                    x = min(max(x, 0.0), hi[i])
                elif dminus > 0.0 and lo[i] < 0.0:
                    den = kii + qm[i]
                    x = (kii * ai - fi - lm[i]) / den if den > 0.0 else lo[i]
                    x = max(min(x, 0.0), lo[i])
                else:
                    den = kii + (qp[i] if ai > 0.0 else qm[i])
                    x = min(max(0.0, lo[i]), hi[i])
            else:
                den = kii + qp[i]
                g = fi + lp[i] + qp[i] * ai
                if den > 0.0:
                    x = ai - g / den
                elif g > 0.0:
                    x = lo[i]
                elif g < 0.0:
                    x = hi[i]
                else:
                    x = ai
                x = min(max(x, lo[i]), hi[i])
            d = x - ai
            if d != 0.0:
                pg = abs(d) * den if den > 0.0 else abs(d)
                if pg > worst:
                    worst = pg
                a[i] = x
                row = K[i]
                for j in range(b):  # K symmetric: row i is column i
                    f[j] += d * row[j]
        if first < 0.0:
            first = worst
        if worst == 0.0 or worst <= rtol * first:
            break
    return sweeps, worst, first


_pq_compiled = None


def _pq_kernels():
    global _pq_compiled
    if _pq_compiled is None:
        jit = numba.njit(cache=True, nogil=True, fastmath=False)
        _pq_compiled = (jit(_pq_residual), jit(_pq_loop))
    return _pq_compiled


def _pq_free_face(a, lo, hi, kinked):
    """Indices of the variables strictly inside their orthant's box (not at a bound, nor at a kink at 0)."""
    free = (a > lo) & (a < hi)
    if kinked:
        free &= a != 0
    return np.flatnonzero(free)


def _pq_face_newton(K, f, a, lp, qp, lm, qm, lo, hi, kinked, F):
    """A Newton step on the free face ``F`` (:func:`_cut_newton`); True when taken."""
    side_pos = a[F] > 0 if kinked else np.ones(len(F), dtype=bool)
    q = np.where(side_pos, qp[F], qm[F])
    grad = f[F] + np.where(side_pos, lp[F], lm[F]) + q * a[F]
    lo_e = np.where(side_pos, np.maximum(lo[F], 0.0), lo[F]) if kinked else lo[F]
    hi_e = np.where(side_pos, hi[F], np.minimum(hi[F], 0.0)) if kinked else hi[F]
    A = K[np.ix_(F, F)]
    A[np.diag_indices_from(A)] += q
    step = _cut_newton(A, grad, lo_e - a[F], hi_e - a[F])
    if step is None:
        return False
    a[F] += step
    f += K[:, F] @ step
    return True


def solve_block_pq(K, f, a, pieces, lo, hi, kinked, max_sweeps, rtol, skip=0.0, newton=True):
    """Minimise the Joker dual over one block's variables, every output column, for a piecewise-quadratic loss.

    Minimises, for each output c independently,
    ``J_B(x) = x.K_BB x / 2 + x.(K alpha - K_BB alpha_B)_B + sum_i h_i(x_i)``
    over ``lo <= x <= hi`` (docs/dual.md s.4 with the block's exact model),
    starting at ``alpha_B``, by cyclic exact coordinate minimisation
    (Hsieh et al., ICML 2008, Alg. 1, with the kink of h at 0 minimised
    exactly on both sides) and, at the end of a chunk of ``CHUNK`` sweeps
    that did not converge while the sweeps crawl (``NEWTON_SLOW``), a Newton
    step on the free face (``newton``) when that face is the one the last
    chunk ended on too (the sweeps have settled which variables sit at a
    bound), it has at most ``NEWTON_MAX_FREE`` variables, and it is not a
    face whose step was rejected.
    J decreases at every coordinate and every Newton step.

    Parameters
    ----------
    K : CPU tensor of shape (b, b)
        K_BB (any float dtype; used in float64).
    f : CPU tensor of shape (b, C)
        (K alpha)_B at the block's current alpha.
    a : CPU tensor of shape (b, C)
        alpha_B.
    pieces : tuple of four tensors or floats broadcastable to (b, C)
        ``loss.pieces(y_B, lam)``: l+, q+, l-, q- of h on a >= 0 and a <= 0.
    lo, hi : CPU tensors of shape (b, C)
        The dual's box (may be +-inf); for ``kinked`` losses lo <= 0 <= hi.
    kinked : bool
        h has a kink at 0 (SVR, ODM).
    max_sweeps : int
        Cap on sweeps per output (a Newton step counts as one).
    rtol : float
        An output stops when the largest step x curvature of a sweep is at
        most rtol times that of its first sweep.
    skip : float
        Outputs whose starting residual (as the solver's ``_residual``) is
        0 or <= ``skip`` are not visited.

    Returns
    -------
    a_new : tensor of shape (b, C), dtype of ``a``
    res0 : list of float
        Starting residual of each output.
    sweeps : list of int
        Sweeps used per output (0: skipped).
    starved : list of float
        For each output that ended on ``max_sweeps`` without meeting
        ``rtol``, the ratio of its last sweep's largest step x curvature to
        its first sweep's (how far the sweeps got: near 1 when they crawl);
        0.0 for the others.

    Raises
    ------
    RuntimeError
        Numba is not installed (check :func:`available` first).
    """
    if numba is None:
        raise RuntimeError("joker.block_cd needs numba (pip install numba)")
    residual, loop = _pq_kernels()
    gather = kernel_cache._kernels()[0]
    b, C = a.shape
    Kn = np.ascontiguousarray(K.detach().numpy(), dtype=np.float64)

    def cols(t):  # (C, b) float64, one contiguous row per output
        t = torch.as_tensor(t, dtype=torch.float64)
        return np.array(torch.broadcast_to(t, (b, C)).T.numpy(), order="C", copy=True)  # never the caller's memory

    fn, an, lon, hin = cols(f), cols(a), cols(lo), cols(hi)
    lp, qp, lm, qm = (cols(v) for v in pieces)
    res0, used, starved = [], [], []
    # Variables whose box is a point (lo = hi: rows absent from this output's problem, as in
    # one-vs-one) never move, and their f is not needed: each output's loop runs on the others only.
    movable = [np.flatnonzero(lon[c] < hin[c]) for c in range(C)]
    largest = max((len(P) for P in movable if len(P) < b), default=0)
    scratch = np.empty(largest * largest)  # one buffer for every output's sub-block (no allocation per output)
    for c in range(C):
        P = movable[c]
        sub = len(P) < b
        if sub:  # K[P][:, P] by the cache's compiled gather (np.ix_ took 0.03 s of a 0.15 s digits fit)
            Kc = scratch[:len(P) * len(P)].reshape(len(P), len(P))
            gather(Kn, P, P, Kc)
            fc, ac = fn[c][P], an[c][P]
            args = tuple(v[c][P] for v in (lp, qp, lm, qm, lon, hin)) + (bool(kinked),)
        else:
            Kc, fc, ac = Kn, fn[c], an[c]
            args = (lp[c], qp[c], lm[c], qm[c], lon[c], hin[c], bool(kinked))
        r0 = residual(Kc, fc, ac, *args) if len(P) else 0.0
        res0.append(r0)
        if r0 == 0.0 or r0 <= skip:
            used.append(0)
            starved.append(0.0)
            continue
        # failed: the face of the last rejected Newton step; last: the free face at the end of the last chunk
        n, first, failed, last = 0, -1.0, None, None
        while True:
            cap = min(CHUNK, max_sweeps - n) if newton else max_sweeps - n
            k, worst, first = loop(Kc, fc, ac, *args, cap, float(rtol), first)
            n += k
            done = worst == 0.0 or worst <= rtol * first
            if done or n >= max_sweeps:
                break
            if newton and worst > NEWTON_SLOW * first:  # the sweeps crawl: worth a factorisation
                F = _pq_free_face(ac, *args[4:6], kinked)  # args[4:6]: this output's lo, hi
                settled = last is not None and np.array_equal(F, last)  # the face held over a chunk of sweeps
                last = F
                if settled and 0 < len(F) <= NEWTON_MAX_FREE and (failed is None or not np.array_equal(F, failed)):
                    taken = _pq_face_newton(Kc, fc, ac, *args, F)
                    failed = None if taken else F
                    n += taken
        if sub:
            an[c][P] = ac
        used.append(n)
        starved.append(0.0 if done else worst / first)
    return torch.from_numpy(an.T.copy()).to(a.dtype), res0, used, starved
