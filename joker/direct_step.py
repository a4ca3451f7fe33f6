"""The block step without host syncs (``inner="direct"``): a factorised Newton solve of the block model.

The trust-region CG of :mod:`joker.trust_region` decides every iteration on
the host (``float(torch.dot(...))``, ``bool(...)``): on a GPU each such read
waits for the device, and each of its hundreds of small operations per block
is a kernel launch (issue 25: 309 aten operations and 27 host reads per
block step for random features, M = 2,048, blocks of 2,048). This step does
the same block visit (docs/dual.md s.4 steps 1-4) with a fixed sequence of
operations and every decision a device tensor (``torch.where``, boolean
masks), so a block issues a few dozen operations and no host read; counters
and the block residuals met are read once per epoch (:meth:`DirectStep.settle`,
next to the certificate).

Step 2, the block model min g.s + s.Q s / 2 (Q = K_BB + diag(h'')), is solved
by one Cholesky factorisation of the b x b Newton system instead of CG:

- no bound, no kink, no trust region (KRR): s = -Q^-1 g, the exact minimiser;
- otherwise (a box, the kink of SVR / ODM on the orthant of
  :func:`joker.block_model.orthant_pieces`, the fraction-to-boundary box
  and the trust region of the logistic loss): the Newton step N of the free
  variables (those not held at a bound by a gradient pointing out of the
  box, as in the CG's active set; held rows are identity rows of the
  system); the candidates are points of the projected Newton arc,
  P(a - t N) - a for t in :data:`ARC` (projected after scaling, so the
  variables the projection cuts land on their bounds), and the Cauchy
  point, the projected-gradient direction scaled to the model's minimiser
  along it (the model decreases there whenever the block residual is not
  zero); each is cut to the trust region, and the one with the largest
  model decrease is the step (the better of the projected and the cut
  point is also how :func:`joker.trust_region.box_tr_cg` ends a box hit).

Steps 3-4 are those of :meth:`joker.solver._Run._visit`: rho = actual / predicted
change, accepted when rho > eta and the actual change is negative, the radius
grown on a very good step at its boundary and shrunk on a poor one. For a
piecewise-quadratic loss the actual change is the model value exactly
(h(a + s) - h(a) = (l + q a) s + q s^2/2 on the step's orthant, so
dJ = s.(g + Q s / 2)), and the test is that value being negative. A visit
makes ``iters`` Newton iterations (one at first; the budget rule of
:meth:`joker.solver._Run.adapt_cg_budget` doubles it after a slow epoch,
up to ``max_tr_iter``), each later one re-linearised at the new point and
masked off where the block residual fell by ``block_rtol``.

Operations per block step at one iteration (random features, M = 2,048,
blocks of 2,048, tests/joker/test_direct_step.py): at most KRR 33,
squared hinge 57, logistic 111, no host sync (the CG step: 278, 607, 747 with 36, 56, 96
host syncs).

Cost: forming K_BB = Psi_B Psi_B^T with random features (2 b^2 M flops) and
the factorisation (b^3 / 3); on a CPU, where a host read costs nothing and a
CG iteration 4 b M flops, the CG path stays the default (a 2,048-row block
of 2,048 features: about 0.3 s for the direct solve against 1 ms per CG
iteration, measured on the project's 2-core machine).
"""

from __future__ import annotations

import math
import numbers

import torch

from .block_model import broadcast_like, orthant_pieces

__all__ = ["DirectStep", "ARC", "direct_applies"]

ARC = (1.0, 0.5, 0.25)
"""Steps along the Newton direction tried at each visit, each projected onto the box.

Measured (1,000 rows, lam 0.5, blocks of 128, tol 1e-8, one Newton iteration per visit; epochs, exact /
RFF M = 128): the projected
full step alone, ODM 45 (stalled) / 300 (gap 6.6e-3), squared hinge 12 / 13; with 1/2 and 1/4, ODM 18
/ 20, squared hinge 11 / 13 (CG: ODM 16 / 19, squared hinge 11 / 13). Scaling the projected point
instead, which leaves the cut variables short of their bounds, approached the kink of ODM
geometrically and stalled, and took squared hinge 96 / 115 epochs.
"""


def direct_applies(inner, loss, device, coordinate=False):
    """Whether a solve's block visits are this step (``SolverOptions.inner``).

    Parameters
    ----------
    inner : {"auto", "cg", "cd", "direct"}
    loss : joker.losses.Loss
    device : str or torch.device
    coordinate : bool
        The coordinate solver already serves the visits ("cd" resolved).

    Returns
    -------
    bool
        "direct"; or "auto" on a CUDA device for a strongly convex h (where a
        host read stalls the stream and each small operation is a launch).

    Raises
    ------
    ValueError
        "direct" for a loss whose h is piecewise linear (hinge, SVR): its
        block model is only semi-definite, and Newton steps of K_BB alone
        crawled (1,000 rows, lam 0.5, blocks of 128, tol 1e-8, exact kernel:
        L1-SVC 276 epochs against 7 with CG, SVR not converged in 300
        against 10).
    """
    if inner == "auto":
        return not coordinate and torch.device(device).type == "cuda" and loss.strongly_convex
    if inner == "direct" and not loss.strongly_convex:
        raise ValueError(f"inner='direct' needs a strongly convex h (a positive definite block model); the "
                         f"{loss.name} loss has a piecewise-linear h: use inner='cg' or 'auto'")
    return inner == "direct"


class DirectStep:
    """Sync-free block visits of one solve, and the device-side counters they keep.

    Parameters
    ----------
    run : joker.solver._Run
        The solve's state (operator, loss, targets, box, options, radius).

    Notes
    -----
    The factorisation is of Q + delta I with delta = eps * b * max k(x, x)
    (eps of the dtype): below that shift a Cholesky factorisation in
    floating point may fail (Demmel's bound), and the shift changes the
    Newton step by a relative O(delta / lam) without changing the model
    that the step's test uses. A factorisation that fails anyway (its info
    is not read) gives a wrong Newton step, made finite: the same model test
    judges it, so the step is then the Cauchy point, or none.

    The steps are computed negated, d = -s (alpha_B -= d): the model
    decrease g.d - d.Q d / 2 then needs no sign change.
    """

    def __init__(self, run):
        loss, op, Y = run.loss, run.op, run.Y
        self.run, self.loss, self.opts = run, loss, run.opts
        dtype, device = Y.dtype, Y.device
        self.n_out = Y.shape[1]
        # set-up, before the first certificate: one host read each
        self.boxed = loss.kinked or bool(torch.isfinite(run.ilo).any()) or bool(torch.isfinite(run.ihi).any())
        r0 = run.radius[0]
        self.finite_radius = not loss.quadratic or math.isfinite(r0)
        self.inf_radius0 = not math.isfinite(r0)
        self.radius = torch.full((self.n_out,), r0, dtype=dtype, device=device)
        # h = l a + q a^2 / 2 with one number q and no kink (KRR, Huber, L1/L2-SVC): h' = l + q a from l alone
        self.lp = self.qp = None
        if loss.quadratic and not loss.kinked:
            lp, qp, _, _ = loss.pieces(Y, run.lam)
            if isinstance(qp, numbers.Real):
                self.lp, self.qp = broadcast_like(lp, Y), float(qp)
        self.newton_only = self.lp is not None and not self.boxed and not self.finite_radius
        # the per-sample tensors a visit reads, stacked: one gather per block
        parts = [self.lp if self.lp is not None else Y] + ([run.ilo, run.ihi] if self.boxed else [])
        self.consts = None if self.newton_only else torch.stack([broadcast_like(p, Y) for p in parts], -1)
        self.delta = torch.finfo(dtype).eps * run.bs * op.diag_bound
        self.tiny = torch.finfo(dtype).tiny
        self.max_res = torch.zeros(self.n_out, dtype=dtype, device=device)
        # per output: visits that moved, accepted and tried (a predicted decrease) iterations, visits that
        # ran the solve, and those still running at their last iteration (the budget rule,
        # _Run.adapt_cg_budget)
        self.tally = torch.zeros((5, self.n_out), dtype=torch.long, device=device)
        self._never = torch.zeros(self.n_out, dtype=torch.bool, device=device)
        self.iters = 1  # Newton iterations per visit (doubled by adapt, up to max_tr_iter)
        self.moved = torch.zeros((), dtype=torch.long, device=device)  # blocks where an output moved
        self.blocks = 0
        k = len(ARC) + 1
        self._arc = torch.tensor(ARC, dtype=dtype, device=device)
        self._index = torch.arange(k, device=device)
        # bounds of the step lengths: the arc points as they are (1), the gradient direction in [0, 1]
        self._t_lo = (self._index < k - 1).to(dtype)
        self._t_hi = torch.ones(k, dtype=dtype, device=device)
        self._eyes = {}

    def _eye(self, b, c):
        """c I of size b (kept: the blocks of an epoch share their size)."""
        key = (b, c)
        if key not in self._eyes:
            like = self.max_res
            self._eyes[key] = torch.eye(b, dtype=like.dtype, device=like.device) * c
        return self._eyes[key]

    # ------------------------------------------------------------------ visit
    def visit(self, blk, B):
        """One block visit: the step of every output, alpha_B and the operator state updated.

        Parameters
        ----------
        blk : block view of the operator (``f``, ``gram(D)`` = K_BB + D)
        B : long tensor of shape (b,)

        Returns
        -------
        bool tensor of shape (C,)
            Which outputs moved (read only by ``trace_steps``).
        """
        run = self.run
        a0 = run.alpha[B]
        if self.newton_only:
            d, accept = self._newton(blk, a0, B)
        else:
            d, accept = self._candidates(blk, a0, B)
        run.alpha.index_add_(0, B, d, alpha=-1.0)
        run.op.commit_all(blk, d, alpha=-1.0)
        self.blocks += 1
        return accept

    def _count(self, moved, accepted, tried, visited, starved, res):
        torch.maximum(self.max_res, res, out=self.max_res)
        self.tally += torch.stack([moved, accepted, tried, visited, starved])
        if self.n_out > 1:
            self.moved += moved.any()

    def _newton(self, blk, a, B):
        """No bound, kink or radius: d = Q^-1 g for every output at once (one factorisation)."""
        qp, delta = self.qp, self.delta
        g = (blk.f + self.lp[B]).add_(a, alpha=qp)  # (K alpha)_B + h'(alpha_B), h' = l + q a
        res = torch.linalg.vector_norm(g, math.inf, dim=0)
        active = res > self.run.skip_thresh
        A = blk.gram(self._eye(len(B), qp + delta))  # Q + delta I
        d = torch.cholesky_solve(g, torch.linalg.cholesky_ex(A)[0]).nan_to_num_(0.0, 0.0, 0.0)
        # model decrease = actual decrease (quadratic h): g.d - d.Q d / 2, Q d = A d - delta d
        dec = (d * torch.add(g, torch.add(A @ d, d, alpha=-delta), alpha=-0.5)).sum(0)
        accept = active & (dec > 0)
        self._count(accept, accept, accept, active, self._never, res)  # exact: never starved
        return d * accept, accept

    def _candidates(self, blk, a, B):
        """Box, kink or trust region: per output, the best of the projected Newton points and the Cauchy point."""
        loss = self.loss.rows(B)  # per-row data (weights) of this block
        parts = self.consts[B].unbind(-1)
        y, lp = (None, parts[0]) if self.lp is not None else (parts[0], None)
        lo, hi = parts[1:] if self.boxed else (None, None)
        if self.n_out == 1:
            d, *counts, self.radius = self._column(loss, blk.gram, blk.f, a, y, lp, lo, hi, self.radius)
            self._count(*counts)
            return d, counts[0]
        K = blk.gram()

        def system(D):
            return K + D

        cols = []
        for c in range(self.n_out):
            col = slice(c, c + 1)
            cols.append(self._column(loss, system, blk.f[:, col], a[:, col], None if y is None else y[:, col],
                                     None if lp is None else lp[:, col], None if lo is None else lo[:, col],
                                     None if hi is None else hi[:, col], self.radius[col]))
        d, *counts, self.radius = (torch.cat(v, dim=v[0].dim() - 1) for v in zip(*cols))
        self._count(*counts)
        return d, counts[0]

    def _column(self, loss, system, gs, a, y, lp, lo, hi, radius):
        """The negated step of one output over the visit's iterations (tensors of shape (b, 1)).

        ``loss`` is the block's (:meth:`joker.losses.Loss.rows`), ``system(D)``
        returns K_BB + D; ``radius`` has shape (1,). Iterations
        after the first re-linearise at the new point and stop (masked) where
        the block residual fell by ``block_rtol`` or, for an exact model, no
        decrease was predicted (as ``_Run._visit``).

        Returns
        -------
        (d, moved, accepted, tried, visited, starved, res, radius)
            The negated step, whether it moved, the accepted and tried
            iterations, whether the visit ran (residual above the skip
            threshold), whether it was still running at its last iteration
            (the budget rule), the residual at its start, the new radius.
        """
        gate = first = None
        for it in range(self.iters):
            more = it < self.iters - 1
            d, accept, tried, active, res, radius, Kd, best = self._step(loss, system, gs, a, y, lp, lo, hi,
                                                                         radius, gate, first, more)
            if it == 0:
                first, visited, d_all, moved, n_acc, n_tried = res, active, d, accept, accept, tried
            else:
                d_all, moved = d_all + d, moved | accept
                n_acc, n_tried = n_acc + accept.long(), n_tried + tried.long()
            if more:
                a, gs = a - d, gs - Kd
                gate = active & (best > 0) if loss.quadratic else active
        return d_all, moved, n_acc, n_tried, visited, active, first, radius

    def _step(self, loss, system, gs, a, y, lp, lo, hi, radius, gate, first, more):
        """One Newton iteration of one output; ``gate``/``first``: None at the visit's first iteration."""
        run, opts = self.run, self.opts
        lam, delta, b = run.lam, self.delta, a.shape[0]
        h0 = None
        if not loss.quadratic:
            # fraction to the boundary (as _Run._visit): at most that share of the distance to each bound
            lo_e = torch.lerp(a, lo, opts.boundary_fraction)
            hi_e = torch.lerp(a, hi, opts.boundary_fraction)
            h0, dh, q = loss.newton_terms(a, y, lam)
            g = gs + dh
        elif lp is None:
            l, q, lo_e, hi_e = orthant_pieces(loss, a, gs, y, lam, lo, hi)
            g = gs + l + q * a
        else:
            q, lo_e, hi_e = self.qp, lo, hi
            g = (gs + lp).add_(a, alpha=q)
        # z: the unit projected-gradient point; r = a - z, whose largest entry is the block residual
        z = a - g if lo_e is None else torch.clamp(a - g, lo_e, hi_e)
        r = a - z
        res = torch.linalg.vector_norm(r, math.inf, dim=0)
        active = res > run.skip_thresh if gate is None else gate & (res > opts.block_rtol * first)
        A = system(self._eye(b, q + delta) if isinstance(q, float) else torch.diag_embed(q.view(-1) + delta))
        As = A
        if lo_e is not None:
            # held (the CG's active set): a variable the unit gradient step does not move, i.e. at the
            # bound it is pushed to; identity rows and columns (its N = g is projected away below)
            free = z != a
            As = torch.where(free & free.mT, A, self._eye(b, 1.0))
        N = torch.cholesky_solve(g, torch.linalg.cholesky_ex(As)[0]).nan_to_num_(0.0, 0.0, 0.0)
        # candidates a - d: points of the projected Newton arc (projected after scaling, so the variables
        # the projection cuts land on their bounds) and the projected-gradient point z
        arc = N * self._arc if lo_e is None else a - torch.clamp(a - N * self._arc, lo_e, hi_e)
        D = torch.cat([arc, r], 1)
        QD = torch.add(A @ D, D, alpha=-delta)
        gD, DQD = (g * D).sum(0, keepdim=True), (D * QD).sum(0, keepdim=True)  # (1, k)
        # arc points as they are; the gradient direction scaled to the model's minimiser along it (the
        # Cauchy point; t <= 1 keeps it in the box); each within the radius
        t = torch.clamp(gD / DQD.clamp_min(self.tiny), self._t_lo, self._t_hi)
        if self.finite_radius:
            t = torch.minimum(t, radius / torch.linalg.vector_norm(D, dim=0, keepdim=True))
        dec = t * torch.addcmul(gD, t, DQD, value=-0.5)  # model decrease of each candidate
        best, j = dec.max(dim=1)  # the largest (the full Newton point on a tie)
        wT = (t * (self._index == j)).mT
        d = D @ wT
        Kd = None
        if more or not loss.quadratic:  # K d = Q d - q d
            Qd = QD @ wT
            Kd = torch.add(Qd, d, alpha=-q) if isinstance(q, float) else torch.addcmul(Qd, q, d, value=-1.0)
        if loss.quadratic:
            accept = active & (best > 0)  # actual change = model value (h quadratic on the step's domain)
            tried, rho = accept, None
        else:
            # actual decrease of J (docs/dual.md s.4 step 3) for s = -d
            fall = (d * torch.add(gs, Kd, alpha=-0.5) + h0 - loss.h(a - d, y, lam)).sum(0)
            rho = fall / best
            tried = active & (best > 0)
            accept = tried & (rho > opts.eta)  # with a predicted decrease, rho > eta > 0 means an actual one
        if self.finite_radius:
            radius = self._radius(radius, d, rho, accept, tried, active)
        return d * accept, accept, tried, active, res, radius, Kd * accept if more else None, best

    def _radius(self, radius, d, rho, accept, tried, active):
        """The radius rules of ``_Run._visit`` as device selections."""
        opts = self.opts
        s_norm = torch.linalg.vector_norm(d, dim=0)
        big = s_norm >= 0.99 * radius
        if rho is None:  # exact model: rho = 1, no shrinking; no predicted decrease ends the visit
            return torch.where(accept & big, radius * opts.grow, radius)
        new = torch.where(accept & (rho > 0.75) & big, radius * opts.grow, radius)
        if self.inf_radius0:  # an infinite radius is not shrunk but set to the step's length
            new = torch.where((rho < 0.25) & torch.isfinite(new), opts.shrink * torch.minimum(new, s_norm), new)
            new = torch.where(torch.isinf(new), s_norm, new)
        else:
            new = torch.where(rho < 0.25, opts.shrink * torch.minimum(new, s_norm), new)
        # no predicted decrease: shrink; a skipped output keeps its radius
        return torch.where(tried, new, torch.where(active, radius * opts.shrink, radius))

    # ------------------------------------------------------------------ epoch end
    def settle(self):
        """Read the device counters into the solve's statistics (once per epoch, next to its certificate)."""
        run = self.run
        moved, accepted, tried, visits, starved = (int(v) for v in self.tally.sum(1).tolist())
        moved = moved if self.n_out == 1 else int(self.moved)  # blocks where some output moved
        run.stats["accepted"] += accepted
        run.stats["rejected"] += tried - accepted
        run.stats["skipped"] += self.blocks - moved
        run.stats["direct_visits"] = run.stats.get("direct_visits", 0) + visits
        run.epoch_visits += visits
        run.epoch_starved += starved
        run.epoch_max_res = max(run.epoch_max_res, float(self.max_res.max()))
        self.tally.zero_()
        self.moved.zero_()
        self.max_res.zero_()
        self.blocks = 0
