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
  system); the candidates are the zero step, points of the projected Newton
  arc, P(a - t N) - a for t in :data:`ARC` (projected after scaling, so the
  variables the projection cuts land on their bounds), and points of the
  projected Jacobi-scaled gradient path, P(a - s G g) - a with
  G = diag(Q + delta I)^-1 and s = 1, 1/2, ..., 2^-m, 2^-m <= 1 / b; each is
  cut to the trust region, and the one with the largest model decrease is
  the step (the better of the projected and the cut point is also how
  :func:`joker.trust_region.box_tr_cg` ends a box hit). The last point of
  the gradient path decreases the model whenever the block residual is not
  zero: d = a - P(a - s G g) has d.g >= d.G^-1 d / s (each d_i lies between
  0 and s G_i g_i), and d.Q d <= b d.G^-1 d (the eigenvalues of
  G^1/2 Q G^1/2 sum to at most b), so the decrease g.d - d.Q d / 2 is
  >= (1 / s - b / 2) d.G^-1 d > 0. (The path replaces the earlier Cauchy
  point, the projected gradient scaled to the model's minimiser along it,
  whose step length cost nine operations more; measured on the tests'
  problems and on 1,000 rows, lam 0.5 and 1e-3, blocks of 128: the same
  epochs at lam 0.5, and a lower gap after 300 epochs at lam 1e-3 with
  squared hinge, 3.6e-2 against 0.69, and Huber, 1.9e-8 against 2.4e-7.)

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
blocks of 2,048, lagged certificate rows included, tests/joker/test_direct_step.py):
KRR 28, squared hinge 39, logistic 77, no host sync (the CG step: 278, 607, 747 with 36, 56, 96
host syncs; this step's first version: 33, 57, 111). How: :class:`DirectStep`'s Notes.

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
from .losses import LogisticLoss

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


class _Chosen:
    """The candidate index ``j`` of a visit whose acceptance is ``j > 0`` (compared at :meth:`DirectStep.settle`)."""

    __slots__ = ("j",)

    def __init__(self, j):
        self.j = j

    def value(self):
        return self.j > 0


def _field(v):
    return v.value() if isinstance(v, _Chosen) else v


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
    judges it, so the step is then a point of the gradient path, or none.

    The steps are computed negated, d = -s (alpha_B -= d): the model
    decrease g.d - d.Q d / 2 then needs no sign change.

    Operations per block (issue 25: each one a kernel launch on a GPU):

    - the per-sample constants a visit reads are one stacked tensor
      (``consts``, shape (P, n, C)), gathered once; one ``addcmul`` with
      ``coef`` turns them into h'(alpha_B) (or its alpha-free part) and the
      bounds of the step d, ``[alpha - hi, alpha - lo]`` (scaled by the
      fraction to the boundary for the logistic loss);
    - the gradient g = (K alpha)_B + h' is one product with random features
      (``blk.f_plus``);
    - the candidates start with a zero step (index 0): the largest model
      decrease is then positive exactly when some candidate predicts a
      decrease (ties go to the first, the zero step), so the chosen column
      is already the accepted step of a piecewise-quadratic loss, selected
      with ``index_select`` (no one-hot product);
    - every candidate is a fixed multiple of N or G g, projected: their
      model values come from one product Q D and one column sum, with no
      step-length division (the earlier Cauchy point needed one);
    - the counters of each visit are kept as device tensors and summed once
      per epoch (:meth:`settle`);
    - the logistic loss's h, h' and h'' come from p = lam y alpha once
      (h = -BCE(p, p) / lam, one fused ``binary_cross_entropy``), and rho
      from the model's error in h alone: for s = -d,
      dJ - m(s) = sum_i [h(a - d) - h(a) + h'(a) d - h''(a) d^2 / 2] (the
      K_BB terms of dJ and of the model are the same), so no K d product.
    """

    def __init__(self, run):
        loss, op, Y = run.loss, run.op, run.Y
        self.run, self.loss, self.opts = run, loss, run.opts
        dtype, device = Y.dtype, Y.device
        self.n_out = Y.shape[1]
        lam = float(run.lam)
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
        # the plain logistic loss (not weighted): h, h', h'' from p = lam y a (see Notes)
        self.logistic = type(loss) is LogisticLoss
        # per-sample constants, stacked (P, n, C), and their alpha coefficients: addcmul(S, coef, alpha_B)
        f = float(run.opts.boundary_fraction)
        ones = torch.ones_like(Y)
        if self.lp is not None:
            # [l + q a, a - hi, a - lo] (the box part only when there is a box)
            parts, coef = [self.lp], [self.qp]
            if self.boxed:
                parts, coef = parts + [-run.ihi * ones, -run.ilo * ones], coef + [1.0, 1.0]
        elif loss.quadratic:  # the orthant of a kink, or per-row curvatures: orthant_pieces at each iteration
            parts, coef = [Y, run.ilo * ones, run.ihi * ones], [0.0, 0.0, 0.0]
        else:
            # the fraction to the boundary (as _Run._visit): at most that share of the distance to each bound,
            # so d in [f (a - hi), f (a - lo)]
            parts, coef = [Y], [0.0]
            if self.logistic:
                parts, coef = parts + [lam * Y], coef + [0.0]
            parts, coef = parts + [-f * run.ihi * ones, -f * run.ilo * ones], coef + [f, f]
        self.consts = None if self.newton_only else torch.stack([broadcast_like(p, Y) for p in parts])
        self.coef = torch.tensor(coef, dtype=dtype, device=device).view(-1, 1, 1)
        self.delta = torch.finfo(dtype).eps * run.bs * op.diag_bound
        self.lam = lam
        # radius factors: the "at its boundary" threshold, growth and shrinking (_Run._visit)
        self._rfac = torch.tensor([[0.99], [run.opts.grow], [run.opts.shrink]], dtype=dtype, device=device)
        # rho > 0.75 implies rho > eta (an accepted step) unless eta is larger
        self._grow_needs_accept = run.opts.eta >= 0.75
        self._one = torch.ones((), dtype=dtype, device=device)
        self._never = torch.zeros(self.n_out, dtype=torch.bool, device=device)
        self.iters = 1  # Newton iterations per visit (doubled by adapt, up to max_tr_iter)
        self.blocks = 0
        self._log = []  # per visit: (moved, accepted, tried, visited, starved, res), device tensors
        # candidates: the zero step, the arc points, and the projected Jacobi-scaled gradient path
        # P(a - s G g) - a, G = diag(Q + delta I)^-1, at s = 1, 1/2, ..., 2^-m with 2^-m <= 1 / b: the
        # model decreases at the last one whenever the block residual is not zero (module docstring)
        self.rungs = max(1, math.ceil(math.log2(max(run.bs, 1)))) + 1
        scales = [0.0] + list(ARC) + [2.0 ** -i for i in range(self.rungs)]
        self._scales = torch.tensor(scales, dtype=dtype, device=device).view(1, len(scales))
        self._cache = {}
        # the blocks' constants, formed before the first block (the last block of an epoch may be smaller)
        self._zero_column(run.bs)
        self._eye(run.bs, 1.0)
        self._eye(run.bs, self.delta)
        if self.lp is not None:
            self._eye(run.bs, self.qp + self.delta)

    def _eye(self, b, c):
        """c I of size b (kept: the blocks of an epoch share their size)."""
        key = ("eye", b, c)
        if key not in self._cache:
            like = self._one
            self._cache[key] = torch.eye(b, dtype=like.dtype, device=like.device) * c
        return self._cache[key]

    def _zero_column(self, b):
        """A (b, 1) zero column: the zero-step candidate."""
        key = ("zero", b)
        if key not in self._cache:
            self._cache[key] = torch.zeros((b, 1), dtype=self._one.dtype, device=self._one.device)
        return self._cache[key]

    # ------------------------------------------------------------------ visit
    def visit(self, blk, B):
        """One block visit: the step of every output, alpha_B and the operator state updated.

        Parameters
        ----------
        blk : block view of the operator (``f_plus(u)`` = (K alpha)_B + u, ``gram(D)`` = K_BB + D)
        B : long tensor of shape (b,)

        Returns
        -------
        bool tensor of shape (C,) or None
            Which outputs moved, formed only when ``trace_steps`` reads it.
        """
        run = self.run
        a0 = run.alpha[B]
        if self.newton_only:
            d, record = self._newton(blk, a0, B)
        else:
            d, record = self._candidates(blk, a0, B)
        run.alpha.index_add_(0, B, d, alpha=-1.0)
        run.op.commit_all(blk, d, alpha=-1.0)
        self.blocks += 1
        self._log.append(record)
        return _field(record[0]) if self.opts.trace_steps else None

    def _newton(self, blk, a, B):
        """No bound, kink or radius: d = Q^-1 g for every output at once (one factorisation)."""
        qp, delta = self.qp, self.delta
        g = blk.f_plus(torch.add(self.lp[B], a, alpha=qp))  # (K alpha)_B + h'(alpha_B), h' = l + q a
        res = torch.linalg.vector_norm(g, math.inf, dim=0)
        active = res > self.run.skip_thresh
        A = blk.gram(self._eye(len(B), qp + delta))  # Q + delta I
        d = torch.cholesky_solve(g, torch.linalg.cholesky_ex(A)[0]).nan_to_num_(0.0, 0.0, 0.0)
        # model decrease = actual decrease (quadratic h): g.d - d.Q d / 2, Q d = A d - delta d
        dec = (d * torch.add(g, torch.addmm(d, A, d, beta=-delta), alpha=-0.5)).sum(0)
        accept = active & (dec > 0)
        return d * accept, (accept, accept, accept, active, self._never, res)  # exact: never starved

    def _candidates(self, blk, a, B):
        """Box, kink or trust region: per output, the best of the projected Newton and scaled-gradient points."""
        loss = self.loss.rows(B)  # per-row data (weights) of this block
        S = torch.index_select(self.consts, 1, B)
        if self.n_out == 1:
            d, *record, self.radius = self._column(loss, blk.gram, blk, a, S, self.radius)
            return d, tuple(record)
        K = blk.gram()

        def system(D):
            return K + D

        cols = []
        f = blk.f
        for c in range(self.n_out):
            col = slice(c, c + 1)
            cols.append(self._column(loss, system, f[:, col], a[:, col], S[:, :, col], self.radius[col]))
        d, *record, self.radius = (torch.cat([_field(x) for x in v], dim=v[0].dim() - 1) if
                                   torch.is_tensor(v[0]) else torch.cat([_field(x) for x in v]) for v in zip(*cols))
        return d, tuple(record)

    def _column(self, loss, system, gs, a, S, radius):
        """The negated step of one output over the visit's iterations (tensors of shape (b, 1)).

        ``loss`` is the block's (:meth:`joker.losses.Loss.rows`), ``system(D)``
        returns K_BB + D, ``gs`` is (K alpha)_B (a tensor) or the block view
        (whose ``f_plus`` forms it), ``S`` the block's constants (P, b, 1);
        ``radius`` has shape (1,). Iterations after the first re-linearise at
        the new point and stop (masked) where the block residual fell by
        ``block_rtol`` or, for an exact model, no decrease was predicted (as
        ``_Run._visit``).

        Returns
        -------
        (d, moved, accepted, tried, visited, starved, res, radius)
            The negated step, whether it moved, the accepted and tried
            iterations, whether the visit ran (residual above the skip
            threshold), whether it was still running at its last iteration
            (the budget rule), the residual at its start, the new radius.
        """
        if self.iters == 1:
            d, accept, tried, active, res, radius, _, _ = self._step(loss, system, gs, a, S, radius, None, None,
                                                                     False)
            return d, accept, accept, tried, active, active, res, radius
        if not torch.is_tensor(gs):
            gs = gs.f
        gate = first = None
        for it in range(self.iters):
            more = it < self.iters - 1
            d, accept, tried, active, res, radius, Kd, best = self._step(loss, system, gs, a, S, radius, gate,
                                                                         first, more)
            accept, tried = _field(accept), _field(tried)
            if it == 0:
                first, visited, d_all, moved, n_acc, n_tried = res, active, d, accept, accept.long(), tried.long()
            else:
                d_all, moved = d_all + d, moved | accept
                n_acc, n_tried = n_acc + accept.long(), n_tried + tried.long()
            if more:
                a, gs = a - d, gs - Kd
                gate = active & (best > 0) if loss.quadratic else active
        return d_all, moved, n_acc, n_tried, visited, active, first, radius

    def _step(self, loss, system, gs, a, S, radius, gate, first, more):
        """One Newton iteration of one output; ``gate``/``first``: None at the visit's first iteration.

        Returns (d, accept, tried, active, res, radius, K d or None, best); ``accept`` and ``tried`` may
        be a :class:`_Chosen` (compared when read).
        """
        run, opts = self.run, self.opts
        lam, delta, b = run.lam, self.delta, a.shape[0]

        def plus(u):  # (K alpha)_B + u
            return gs + u if torch.is_tensor(gs) else gs.f_plus(u)

        q = rec = B0 = pr = y = ly = None
        if self.lp is not None:  # [l + q a, a - hi, a - lo]
            u, *bounds = torch.addcmul(S, self.coef, a).unbind(0)
            q, g = self.qp, plus(u)
            dlo, dhi = bounds if bounds else (None, None)
            diag = self._eye(b, q + delta)
        elif loss.quadratic:
            y, lo, hi = S.unbind(0)
            f = gs if torch.is_tensor(gs) else gs.f
            l, q, lo_e, hi_e = orthant_pieces(loss, a, f, y, lam, lo, hi)
            g = torch.addcmul(f + l, q, a)
            dlo, dhi = a - hi_e, a - lo_e
            diag = torch.addcmul(self._eye(b, delta), self._eye(b, 1.0), q)
        elif self.logistic:  # p = lam y a; h = -BCE(p, p) / lam, h' = y logit(p), h'' = lam / (p (1 - p))
            y, ly, dlo, dhi = torch.addcmul(S, self.coef, a).unbind(0)
            pr = ly * a
            p = torch.clamp(pr, 0.0, 1.0)
            # per row, not summed: rho takes B1 - B0 row by row (below)
            B0 = torch.nn.functional.binary_cross_entropy(p, p, reduction="none")
            dh = y * torch.logit(p)
            rec = torch.addcmul(p, p, p, value=-1.0).reciprocal_()  # h'' / lam
            g = plus(dh)
            diag = torch.addcmul(self._eye(b, delta), self._eye(b, 1.0), rec, value=lam)
        else:
            y, dlo, dhi = torch.addcmul(S, self.coef, a).unbind(0)
            h0, dh, q = loss.newton_terms(a, y, lam)
            g = plus(dh)
            diag = torch.addcmul(self._eye(b, delta), self._eye(b, 1.0), q)
        # r: the projected-gradient step (a - r the unit projected-gradient point), its largest entry the
        # block residual
        r = g if dlo is None else torch.clamp(g, dlo, dhi)
        res = torch.linalg.vector_norm(r, math.inf, dim=0)
        active = res > run.skip_thresh if gate is None else gate & (res > opts.block_rtol * first)
        A = system(diag)
        As = A
        if dlo is not None:
            # held (the CG's active set): a variable the unit gradient step does not move, i.e. at the
            # bound it is pushed to; identity rows and columns (its N = g is projected away below)
            As = torch.where(torch.logical_and(r, r.mT), A, self._eye(b, 1.0))  # both free (r != 0)
        N = torch.cholesky_solve(g, torch.linalg.cholesky_ex(As)[0]).nan_to_num_(0.0, 0.0, 0.0)
        Gg = g / torch.diagonal(A).unsqueeze(1)  # the Jacobi-scaled gradient (diag(A) = Q_ii + delta > 0)
        # candidates d (a - d the point): the zero step, points of the projected Newton arc and of the
        # projected scaled-gradient path (projected after scaling, so the variables the projection cuts land
        # on their bounds)
        D = torch.cat([self._zero_column(b)] + [N] * len(ARC) + [Gg] * self.rungs, 1) * self._scales
        if dlo is not None:
            D = torch.clamp(D, dlo, dhi)
        if self.finite_radius:  # each cut to the radius (fmin: a zero column at a zero radius, 0 / 0, stays 0)
            D = D * torch.fmin(radius / torch.linalg.vector_norm(D, dim=0, keepdim=True), self._one)
        QD = torch.addmm(D, A, D, beta=-delta)  # Q D = (Q + delta I) D - delta D
        # model decrease of each candidate, g.d - d.Q d / 2; the largest (the first on a tie: the zero step
        # when no candidate predicts a decrease, else the full Newton point before the shorter ones)
        dec = (D * torch.add(g, QD, alpha=-0.5)).sum(0, keepdim=True) * active
        best, j = dec.max(dim=1)
        d = torch.index_select(D, 1, j)
        Kd = None
        if more:  # K d = Q d - q d
            Qd = torch.index_select(QD, 1, j)
            Kd = torch.add(Qd, d, alpha=-q) if isinstance(q, float) else torch.addcmul(Qd, q if rec is None else
                                                                                        rec * lam, d, value=-1.0)
        if loss.quadratic:
            # actual change = model value (h quadratic on the step's domain): accepted iff some candidate
            # predicts a decrease, i.e. j > 0
            accept = tried = _Chosen(j)
            rho = None
            if self.finite_radius or more:
                accept = tried = j > 0
        else:
            tried = j > 0  # a predicted decrease (the chosen candidate is not the zero step)
            # rho = dJ / m(s) = 1 + (dJ - m(s)) / m(s); dJ - m(s) = -sum_i [h(a - d) - h(a) + h' d - h'' d^2 / 2]
            if self.logistic:
                # (a NaN step, from a NaN state, is rejected: rho is NaN; BCE itself refuses p outside [0, 1])
                p1 = torch.clamp(torch.addcmul(pr, ly, d, value=-1.0), 0.0, 1.0).nan_to_num_(0.5)
                B1 = torch.nn.functional.binary_cross_entropy(p1, p1, reduction="none")
                c = torch.addcmul(dh, rec, d, value=-0.5 * self.lam)  # h' - h'' d / 2
                # lam (fall - best) = sum_i [B1_i - B0_i - lam d_i c_i], the differences taken row by row:
                # B1_i - B0_i of close values is exact in float32 (Sterbenz), a difference of the two block
                # sums (each ~0.7 b) lost ~1e-5 and stalled float32 fits near the optimum (rho garbage)
                err = torch.sub(B1 - B0, d * c, alpha=self.lam).sum()
                rho = torch.addcdiv(self._one, err, best, value=1.0 / self.lam)
            else:
                c = torch.addcmul(dh, q, d, value=-0.5)
                err = torch.addcmul(h0 - loss.h(a - d, y, lam), d, c, value=-1.0).sum()
                rho = torch.addcdiv(self._one, err, best)
            # a step not tried is the zero step: rho = 0 / 0, NaN, which compares false (h(a - 0) = h(a)
            # exactly for the logistic loss's one formula; other losses' h and newton_terms may round apart)
            accept = rho > opts.eta if self.logistic else tried & (rho > opts.eta)
        if self.finite_radius:
            radius = self._radius(radius, d, rho, accept, tried, active)
        if not loss.quadratic:
            d = d * accept
            if more:
                Kd = Kd * accept
        return d, accept, tried, active, res, radius, Kd, best

    def _radius(self, radius, d, rho, accept, tried, active):
        """The radius rules of ``_Run._visit`` as device selections.

        Grown on a very good step at its boundary (rho > 0.75, length >= 0.99 radius), shrunk to
        ``shrink`` min(radius, length) on a poor one (rho < 0.25), and to ``shrink`` radius when no
        decrease was predicted; an output skipped keeps it. ``rho`` (None for an exact model, where it is
        1) is NaN for a step not tried (the zero step), so its comparisons are false.
        """
        opts = self.opts
        s_norm = torch.linalg.vector_norm(d, dim=0)
        big_r, grown, shrunk = (radius * self._rfac).unbind(0)
        big = s_norm >= big_r
        if rho is None:  # exact model: rho = 1, no shrinking; no predicted decrease ends the visit
            new = torch.where(accept & big, grown, radius)
            return torch.where(active > tried, shrunk, new)
        good = (rho > 0.75) & big
        if self._grow_needs_accept:
            good = good & accept
        if self.inf_radius0:  # an infinite radius is not shrunk but set to the step's length
            new = torch.where(good, grown, radius)
            new = torch.where((rho < 0.25) & torch.isfinite(new), opts.shrink * torch.minimum(new, s_norm), new)
            new = torch.where(torch.isinf(new) & tried, s_norm, new)
        else:  # (good and rho < 0.25 exclude each other)
            new = torch.where(good, grown, torch.where(rho < 0.25, opts.shrink * torch.minimum(radius, s_norm),
                                                       radius))
        # no predicted decrease: shrink; a skipped output keeps its radius
        return torch.where(active > tried, shrunk, new)

    # ------------------------------------------------------------------ epoch end
    def settle(self):
        """Read the device counters into the solve's statistics (once per epoch, next to its certificate)."""
        run = self.run
        visits = 0
        if self._log:
            moved, accepted, tried, visited, starved, res = (torch.stack([_field(x) for x in v])
                                                             for v in zip(*self._log))
            counts = torch.stack([moved.any(1).sum(), accepted.sum(), tried.sum(), visited.sum(), starved.sum()])
            moved_blocks, accepted, tried, visits, starved = (int(v) for v in counts.tolist())
            run.stats["accepted"] += accepted
            run.stats["rejected"] += tried - accepted
            run.stats["skipped"] += self.blocks - moved_blocks  # blocks where no output moved
            run.epoch_visits += visits
            run.epoch_starved += starved
            run.epoch_max_res = max(run.epoch_max_res, float(res.max()))
        run.stats["direct_visits"] = run.stats.get("direct_visits", 0) + visits
        self._log = []
        self.blocks = 0
