"""DBCD-TR: dual block-coordinate descent with a trust region (Joker, Alg. 1-2).

The solver minimises the Joker dual (docs/dual.md s.1)::

    J(alpha) = 1/2 alpha^T K alpha + sum_i h_i(alpha_i),   lo_i <= alpha_i <= hi_i

over blocks B of a random permutation of the samples (one permutation per
epoch, seeded). For each block (docs/dual.md s.4):

1. g = (K alpha)_B + h'(alpha_B), Q = K_BB + diag(h''(alpha_B));
2. a trust-region step s from the truncated projected CG-Steihaug solve of
   min g.s + s.Q s/2 inside the box and the radius (:mod:`joker.trust_region`);
3. the actual change, exactly and without new kernel rows,
   dJ = s.(K alpha)_B + s.K_BB s / 2 + sum_i [h_i(alpha_i + s_i) - h_i(alpha_i)],
   rho = dJ / m(s); the step is accepted when rho > eta (so J never
   increases), the radius grows when rho is large on the boundary and
   shrinks when rho is small;
4. on acceptance alpha_B and the operator state (K alpha, or theta for
   random features) are updated.

Losses with a kink at 0 (SVR, ODM) are handled exactly: for each variable
the solver picks the orthant the step may use (the sign of alpha_i, or at
alpha_i = 0 the side whose one-sided derivative makes descent possible)
and treats 0 as a temporary bound, so h is quadratic on the step's domain.
For piecewise-quadratic h (KRR, Huber, L1/L2-SVC, SVR, ODM) the block model
is exact (rho = 1 up to rounding); for the logistic loss (KLR) it is a
Newton model and the trust region matters, with p = lam y alpha kept in
[margin, 1 - margin]. Several trust-region iterations may run per block
visit (they reuse K_BB and cost no kernel rows).

Blocks whose projected-gradient residual is already far below the current
global KKT residual are skipped without computing any kernel row
(``skip_ratio``), and in exact mode only the kernel columns of variables
that moved are evaluated for the update.

Certificates (duality gap, KKT residual; :mod:`joker.certificates`) are
computed every ``check_every`` epochs and at the end, into a history.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from dataclasses import dataclass, field, fields

import torch

from . import block_cd
from .block_model import broadcast_like as _bc
from .block_model import orthant_pieces as _orthants
from .certificates import certify, gradient_residuals
from .direct_step import DirectStep, direct_applies
from .inputs import as_float64
from .intraop import one_thread, serial_below
from .trust_region import box_tr_cg
from .weighted_loss import weighted

__all__ = ["SolverOptions", "SolveResult", "dbcd_tr", "DEFAULTS", "auto_block_size", "warn_not_converged"]


@dataclass(frozen=True)
class SolverOptions:
    """Every knob of DBCD-TR, with its default.

    Attributes
    ----------
    block_size : int
        Block size |B| (>= 1; clipped to n).
    tol : float
        Target relative duality gap; the fit stops (converged) when the gap
        is <= tol and the KKT residual is <= ``kkt_tol``.
    kkt_tol : float or None
        Target normalised KKT residual (worst output, ``docs/certificates.md``);
        None: sqrt(tol) (:attr:`kkt_target`), which matches the gap, since
        near the optimum the relative gap is of the order of the squared
        relative step; ``math.inf``: not required.
    max_epochs : int
        Epoch budget (an epoch is one pass over a fresh permutation).
    max_time : float or None
        Wall-clock budget in seconds (checked after every block).
    check_every : int
        Epochs between certificate evaluations when they are not lagged
        (cost O(nC) with the exact kernel, one feature pass with random
        features).
    lagged_certificate : bool or None
        Random features only. Certify the iterate of epoch e during epoch
        e + 1 from the features its blocks compute anyway (Psi_B theta_e and
        Psi_B^T alpha_e: two products per block) instead of a separate pass
        over psi(X), which costs about a third of an epoch. When that
        certificate meets the tolerance the solver returns the certified
        iterate of epoch e. A direct certificate (one feature pass) is
        computed only when the last two certificates, extrapolated at their
        linear rate, predict convergence of the current iterate, and at the
        end. None: on with random features, off with the exact kernel (whose
        certificates cost O(nC)).
    max_cg_iter : int
        Cap on CG iterations (products with the block Hessian, O(|B|^2 C)
        each) per block visit, over all its trust-region iterations.
    max_cd_sweeps : int
        The same cap for the coordinate solver (``inner="cd"``), in sweeps.
        A compiled sweep costs at most one product and no Python or torch
        call, tens of microseconds at |B| = 256 where a CG iteration costs
        about as much in overhead alone, so its cap is higher. Measured: SVR
        at lam = 0.01 on 800 points (eps 0.1, sigma 1, uniform 3-d inputs)
        had a gap of 1.4e-2 after 100 epochs with every visit cut at 100
        sweeps; with this cap it converged in 26 epochs (0.5 s).
    min_cg_iter : int or None
        Floor of the starting per-visit CG budget; None: 50 with the exact
        kernel (small or ill-conditioned problems, e.g. KRR at lam = 1e-3 on
        a few hundred points, need it), 10 with random features (where a
        Hessian product costs as much as a quarter of the block's features).
        After an epoch in which most visits ran out of their budget, the
        budget doubles, up to ``max_cg_iter`` (budget rule of issue 12).
    boundary_fraction : float
        For non-quadratic h (KLR): a step covers at most this fraction of
        the distance of each variable to its bound (interior-point rule).
    inner_work_ratio : float
        The per-visit CG budget is this ratio times the work of computing
        the block's kernel rows divided by the work of one Hessian product,
        clipped to [min_cg_iter, max_cg_iter]: the inner solve never
        dominates the cost of a block.
    cg_rtol : float
        Relative residual at which the inner CG stops. The coordinate
        solver of a piecewise-quadratic loss (``inner="cd"``, one call per
        visit) stops when its largest move falls below
        ``min(cg_rtol, block_rtol)`` times that of its first sweep.
    max_restarts : int
        Cap on active-set restarts of the inner CG after box hits.
    max_tr_iter : int
        Cap on trust-region iterations per block visit (each re-linearises
        h, re-selects orthants and rebuilds the active set; the visit ends
        when the block residual fell by ``block_rtol``). They cost O(|B|^2)
        each, no kernel rows. Not used by the coordinate solver of a
        piecewise-quadratic loss, whose block model is exact (no trust
        region): it minimises the block in one call.
    block_rtol : float
        A block visit ends when its residual fell below block_rtol times
        its value at the start of the visit.
    eta : float
        Acceptance threshold on rho = actual / predicted change.
    radius0 : float or None
        Initial radius; None: inf for piecewise-quadratic h (exact model),
        0.5 sqrt(|B|) / lam for the logistic loss.
    shrink, grow : float
        Radius factors on a poor / a very good step.
    skip_ratio : float
        Skip a block when its max residual is <= skip_ratio times the last
        measured global max residual (0 disables; blocks with a zero
        residual are always skipped).
    selection : {"auto", "random", "greedy"}
        Block choice. "random": the paper's rule, a seeded random
        permutation per epoch cut into blocks. "greedy" (exact kernel only,
        since it reads K alpha for every sample): each block is the
        ``block_size`` samples with the largest KKT residual (Gauss-Southwell
        rule, as in the working sets of SVM decomposition solvers); an
        epoch is still ceil(n / block_size) blocks. "auto": "random", then
        "greedy" once the relative gap is <= ``greedy_gap``, for the exact
        kernel and the losses that flag it (hinge). Measured: greedy from
        the start thrashes at scale (ijcnn1 L1-SVC: 31k kernel columns per
        epoch, over 300 s to a 1e-3 gap, against 7 s random), but polishes
        well late (ijcnn1 to a 1e-5 gap: 12 s instead of 26 s; 800 points
        to 1e-8: 141 epochs instead of 291). For SVR greedy blocks were
        worse at every stage.
    greedy_gap : float or None
        Relative gap below which "auto" turns to greedy blocks; None: never.
    shrinking : bool or None
        Exact kernel, random blocks: each epoch's permutation keeps only the
        samples whose residual (unit projected-gradient step, as the block
        rule uses) is not zero or that is not at a bound (nor at the kink
        of SVR / ODM); the others, variables held at a bound by a gradient
        pointing out of the box, for every output, are left out of that
        epoch's blocks, and come back as soon as the residuals computed at
        the next epoch's start say so. (A threshold above zero, e.g.
        ``skip_ratio`` times the largest residual, was tried: on a9a (2,000
        rows, L1-SVC, C = 1) it left many small violators out and the gap
        crawled for 200 epochs instead of converging in 4.) The LIBSVM
        heuristic of the same name (Chang and Lin 2011, s.5.1), applied per
        epoch from the exactly maintained f = K alpha; certificates still
        cover every sample. None: on with the exact kernel. An epoch is then
        one pass over the samples still active.
    inner : {"auto", "cg", "cd", "direct"}
        Inner solver of a block visit. "cg": the truncated projected
        CG-Steihaug of :mod:`joker.trust_region` (every loss, every device).
        "direct": a block step with no host sync (:mod:`joker.direct_step`;
        every device, every strongly convex loss, a ValueError for the hinge
        and SVR): one Cholesky factorisation of the block's Newton system per
        Newton iteration, the step the best of the zero step, the projected
        Newton arc and the projected Jacobi-scaled gradient path where there
        is a box, a kink or a trust region; one
        iteration per visit, doubled by the budget rule up to
        ``max_tr_iter`` (``max_cg_iter``, ``cg_rtol`` and ``max_restarts``
        are CG's); its counters are read once per epoch.
        "cd": exact coordinate descent on the dense block
        (:mod:`joker.block_cd`; CPU, Numba; with random features the block
        K_BB = Psi_B Psi_B^T is formed first, b^2 M flops); a sweep counts as
        one CG iteration of the budget (up to ``max_cd_sweeps``). For the
        logistic loss the trust region becomes a box, |s_i| <= radius (the
        inf-norm region of box-constrained trust-region methods), so the
        Newton model with its fraction-to-boundary box stays a box QP.
        "auto": "cd" where it applies and the dual has a bound or a kink
        (every loss but the squared one); "direct" on a CUDA device for a
        strongly convex h (every loss but the hinge and the
        epsilon-insensitive ones; :attr:`joker.losses.Loss.strongly_convex`),
        where a host read stalls the stream and each small operation is a
        launch (issue 25: 309 operations and 27 host reads per CG block step
        with random features, M = 2,048, blocks of 2,048); else "cg" (on a
        CPU a CG iteration costs 4 |B| M flops against 2 |B|^2 M for the
        direct solve's K_BB with random features). Measured: a9a (5,000 rows,
        L1-SVC, C = 10), the CG solve restarted at about 11 box hits per
        visit, the coordinate solve needs none; KLR one-vs-rest on the
        digits (1,400 rows, sigma 2.5) at lam = 1e-3, CG: gap 1.08 after 100
        epochs (105 s), CD: converged in 10 epochs (2.6 s).
    trace_steps : bool
        Keep J(alpha) after every accepted block step (``step_duals``;
        costs O(nC) per step).
    refresh_final : bool or None
        Exact kernel: recompute K alpha from scratch before the final
        certificate (one kernel pass over the support). None: no. K alpha
        is accumulated in float64 even for float32 kernels, so its updates
        add no drift beyond the float32 rounding of the kernel entries,
        which a fresh float32 pass has as well. (With random features every
        certificate is computed from fresh features: P at the maintained
        theta, the dual with ||Psi^T alpha||^2 recomputed, so the gap bounds
        the returned theta's suboptimality without a refresh.)
    verbose : int
        Print one line per certificate when > 0.
    """

    block_size: int = 256
    tol: float = 1e-3
    kkt_tol: float | None = None
    max_epochs: int = 100
    max_time: float | None = None
    check_every: int = 1
    lagged_certificate: bool | None = None
    max_cg_iter: int = 100
    max_cd_sweeps: int = 3000
    cg_rtol: float = 1e-4
    max_restarts: int = 20
    min_cg_iter: int | None = None
    boundary_fraction: float = 0.9
    inner_work_ratio: float = 1.0
    max_tr_iter: int = 20
    block_rtol: float = 1e-3
    eta: float = 1e-4
    radius0: float | None = None
    shrink: float = 0.25
    grow: float = 2.0
    skip_ratio: float = 0.05
    selection: str = "auto"
    greedy_gap: float | None = 1e-4
    shrinking: bool | None = None
    inner: str = "auto"
    trace_steps: bool = False
    refresh_final: bool | None = None
    verbose: int = 0

    def __post_init__(self):
        def num(name, lo=None, hi=None, lo_open=False, hi_open=False, none_ok=False, integral=False):
            v = getattr(self, name)
            if v is None and none_ok:
                return
            kind = "an int" if integral else "a number"
            if isinstance(v, bool) or not isinstance(v, numbers.Integral if integral else numbers.Real):
                raise TypeError(f"solver option {name} must be {kind}{' or None' if none_ok else ''}, got {v!r}")
            if not math.isfinite(v) and not (hi is None and v == math.inf):
                raise ValueError(f"solver option {name} must be finite, got {v!r}")
            if lo is not None and (v <= lo if lo_open else v < lo):
                raise ValueError(f"solver option {name} must be {'>' if lo_open else '>='} {lo}, got {v!r}")
            if hi is not None and (v >= hi if hi_open else v > hi):
                raise ValueError(f"solver option {name} must be {'<' if hi_open else '<='} {hi}, got {v!r}")

        for name in ("block_size", "check_every", "max_cg_iter", "max_cd_sweeps", "max_tr_iter"):
            num(name, lo=1, integral=True)
        num("max_epochs", lo=0, integral=True)
        num("max_restarts", lo=0, integral=True)
        num("min_cg_iter", lo=1, integral=True, none_ok=True)
        num("tol", lo=0, hi=1, hi_open=True)  # the relative gap of alpha = 0 is 1: tol >= 1 accepts anything
        num("kkt_tol", lo=0, none_ok=True)
        num("max_time", lo=0, lo_open=True, none_ok=True)
        num("cg_rtol", lo=0, hi=1, hi_open=True)
        num("boundary_fraction", lo=0, hi=1, lo_open=True, hi_open=True)
        num("inner_work_ratio", lo=0, lo_open=True)
        num("block_rtol", lo=0, hi=1, hi_open=True)
        num("eta", lo=0, hi=0.25, hi_open=True)
        num("radius0", lo=0, lo_open=True, none_ok=True)
        num("shrink", lo=0, hi=1, lo_open=True, hi_open=True)
        num("grow", lo=1)
        num("skip_ratio", lo=0, hi=1, hi_open=True)
        num("greedy_gap", lo=0, none_ok=True)
        if self.shrinking is not None and not isinstance(self.shrinking, bool):
            raise TypeError(f"solver option shrinking must be a bool or None, got {self.shrinking!r}")
        if self.inner not in ("auto", "cg", "cd", "direct"):
            raise ValueError(f"inner={self.inner!r}; expected 'auto', 'cg', 'cd' or 'direct'")
        if self.selection not in ("auto", "random", "greedy"):
            raise ValueError(f"selection={self.selection!r}; expected 'auto', 'random' or 'greedy'")

    @property
    def kkt_target(self):
        """The KKT tolerance in force: ``kkt_tol``, or sqrt(tol) when it is None."""
        return math.sqrt(self.tol) if self.kkt_tol is None else float(self.kkt_tol)

    def met(self, cert):
        """True when a certificate meets both tolerances (gap <= tol and KKT <= kkt_target)."""
        return cert.gap <= self.tol and cert.kkt <= self.kkt_target

    @classmethod
    def from_dict(cls, d):
        """Build options from a dict, rejecting unknown keys (TypeError)."""
        names = {f.name for f in fields(cls)}
        bad = sorted(set(d) - names)
        if bad:
            raise TypeError(f"unknown solver option(s) {bad}; known: {sorted(names)}")
        return cls(**d)


DEFAULTS = SolverOptions()

HINGE_BLOCK = 1024
"""Block size of ``block_size="auto"`` for the hinge loss (L1-SVC) on the exact kernel with the compiled
block solver (:func:`auto_block_size`)."""


def auto_block_size(loss, exact, device, pairwise=False):
    """The block size an estimator uses for ``block_size="auto"``.

    ``HINGE_BLOCK`` (1,024) for the hinge loss on the exact kernel when the
    compiled coordinate solver runs (CPU, Numba); ``DEFAULTS.block_size``
    (256) otherwise. With the hinge loss most dual variables end at a bound
    (0 or 1 / lam), where a coordinate step costs O(1), and shrinking leaves
    a few hundred active rows on small sets: a block of 1,024 then solves
    them together instead of coupling four blocks across epochs. Measured
    on this project's 2-core machine, tol 1e-3, fit seconds of 256 against
    1,024 (5 runs interleaved, minimum): a9a 2,000 rows C = 10 0.129 / 0.088
    (10 / 5 epochs); digits (10 outputs) C = 10 0.176 / 0.103; a9a 5,000
    C = 1 0.55 / 0.37; a9a 20,000 C = 10 4.86 / 3.97; ijcnn1 20,000 C = 10
    0.74 / 0.86 and Skin 20,000 C = 1 0.35 / 0.40 (a little slower, both far
    under LIBSVM). The squared hinge keeps every support vector free (each
    sweep costs O(b^2)) and was slower at 1,024 (a9a 2,000 C = 10: 0.10 /
    0.18 s; a9a 5,000: 0.83 / 1.01 s), as were the other losses' CG paths.
    One-vs-one (``pairwise``) gives the squared hinge 1,024 too: each pair
    of classes sees only its own rows of a block (about 2 / n_classes of
    them; :func:`joker.block_cd.solve_block_pq` skips the others), so a
    block of 1,024 is a pair problem of about 200 rows on the digits. There
    (1,400 rows, 10 classes, 45 pairs): 0.31 / 0.13 s at C = 10, 0.19 /
    0.21 s at C = 1.

    Parameters
    ----------
    loss : str or joker.losses.Loss
        The loss (its name).
    exact : bool
        Exact kernel (False: random features).
    device : str or torch.device
    pairwise : bool
        A one-vs-one fit of more than two classes.

    Returns
    -------
    int
    """
    name = loss if isinstance(loss, str) else loss.name
    if (name == "hinge" or (pairwise and name == "squared_hinge")) and exact and block_cd.available(device):
        return HINGE_BLOCK
    return DEFAULTS.block_size

"""The one source of the solver's defaults (estimator parameters and adapters read it)."""


@dataclass
class SolveResult:
    """Outcome of :func:`dbcd_tr`.

    Attributes
    ----------
    alpha : tensor of shape (n, C)
    certificate : joker.certificates.Certificate
        Final certificates.
    n_epochs : int
        Epochs run (the last one may be partial when max_time hit).
    converged : bool
    history : list of dict
        Keys epoch, seconds, dual (= -lam J), primal, gap, kkt; ``seconds``
        is when that epoch's iterate was reached (a lagged certificate is
        known one epoch later).
    seconds : float
        Wall-clock time of the solve.
    step_duals : list of float
        J after every accepted step (only with ``trace_steps``).
    stats : dict
        Counts: blocks, skipped blocks, rejected steps, CG iterations.
    """

    alpha: torch.Tensor
    certificate: object
    n_epochs: int
    converged: bool
    history: list
    seconds: float
    step_duals: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)


CRAWL = 0.3
"""A coordinate solve cut by its sweep budget is crawling (and CG goes on from it) when its last sweep's
largest move is still above this fraction of its first sweep's (``_Run._pq_block_step``)."""


def _block_hessian(blk, q):
    """Q = K_BB + diag(q): the matrix for a dense exact block, else a product callable."""
    if getattr(blk, "dense", False):
        return blk.K + torch.diag(q.flatten()) if bool(q.any()) else blk.K
    return lambda P: blk.mv(P) + q * P


def _residual(a, g, lo, hi):
    return torch.abs(a - torch.minimum(torch.maximum(a - g, lo), hi))


def _warm_start(alpha0, Y, lo, hi):
    """A given starting point, checked and projected onto the (inner) box of the dual."""
    a0 = as_float64(alpha0, device=Y.device).to(Y.dtype)  # any layout or byte order
    a = a0.reshape(-1, 1) if a0.dim() == 1 else a0
    if a.shape != Y.shape:
        raise ValueError(f"alpha0 must have shape {tuple(Y.shape)} (or ({Y.shape[0]},) for one output), "
                         f"got {tuple(a0.shape)}")
    if not bool(torch.isfinite(a).all()):
        raise ValueError("alpha0 must be finite")
    return torch.minimum(torch.maximum(a, lo), hi).clone()


class _Run:
    """Mutable state of one solve (kept out of the public API)."""

    def __init__(self, op, loss, Y, lam, opts, generator, alpha0=None):
        self.op, self.loss, self.Y, self.lam, self.opts = op, loss, Y, float(lam), opts
        self.gen = generator
        self.n = Y.shape[0]
        self.lo, self.hi = loss.box(Y, lam)
        if loss.quadratic:
            self.ilo, self.ihi = self.lo, self.hi
        else:
            self.ilo, self.ihi = loss.inner_box(Y, lam)
        self.alpha = loss.initial_alpha(Y, lam) if alpha0 is None else _warm_start(alpha0, Y, self.ilo, self.ihi)
        if bool((self.alpha != 0).any()):
            op.reset(self.alpha)
        bs = min(max(1, int(opts.block_size)), self.n)
        self.bs = bs
        self.use_cd = self._coordinate_inner(op, loss, Y.device)
        if opts.radius0 is not None:
            r0 = float(opts.radius0)
        else:
            # the same half-box scale in the norm of the inner solver (2-norm for CG, inf-norm for CD)
            r0 = math.inf if loss.quadratic else 0.5 * (1.0 if self.use_cd else math.sqrt(bs)) / self.lam
        self.radius = [r0] * Y.shape[1]  # one trust region per output
        self.skip_thresh = 0.0  # changed only by rescale_skipping
        # Inner-solve budget per block visit: at most inner_work_ratio times the
        # work of the block's kernel rows (n d |B| exact, |B| M d random
        # features) in Hessian products of one column (|B|^2 exact, 2 |B| M
        # features).
        row_work = op.row_work(bs)
        prod_work = op.product_work(bs, 1)
        budget = int(opts.inner_work_ratio * row_work / max(prod_work, 1))
        floor = opts.min_cg_iter if opts.min_cg_iter is not None else op.default_min_cg_iter
        self.cg_budget = max(floor, min(opts.max_cg_iter, budget))
        self.epoch_blocks = 0  # blocks of the current epoch's order
        self.stats = {"blocks": 0, "skipped": 0, "rejected": 0, "cg_iter": 0, "accepted": 0}
        self.step_duals = []
        self.lag = None
        self.epoch_max_res = 0.0  # largest block residual met at a visit this epoch
        self.epoch_visits = 0  # block-column visits that ran the inner solver this epoch
        self.epoch_starved = 0  # ... and those that ended on the CG budget
        self.direct = DirectStep(self) if direct_applies(opts.inner, loss, Y.device, self.use_cd) else None

    def settle(self):
        """End of an epoch: the direct step's device counters into ``stats`` and the epoch's residuals."""
        if self.direct is not None:
            self.direct.settle()

    def _coordinate_inner(self, op, loss, device):
        """Whether block visits use the coordinate solver (``inner``; ValueError when "cd" cannot run)."""
        # Random features too: their block K_BB = Psi_B Psi_B^T is formed once per visit (b^2 M flops) and
        # solved exactly. Measured (ijcnn1 20k, squared hinge, lam 1e-3, M 2048, block 256, 50 epochs):
        # CG visits 229 s, gap 0.51; the compiled exact solver 58 s, gap 0.017.
        fits = block_cd.available(device)
        if self.opts.inner == "cd" and not fits:
            raise ValueError("inner='cd' needs a CPU device and numba; use inner='cg' or 'auto'")
        if self.opts.inner == "auto":
            # No bound and no kink (KRR): the block model is a plain SPD system, where CG's Krylov
            # steps need no active set; measured on 2,000 rows: equal epochs, CG 0.13 s vs CD 0.18 s
            # at lam 1, and krr-5k 0.7 s (CG) vs 1.1 s (CD) in one run.
            lo, hi = torch.as_tensor(self.lo), torch.as_tensor(self.hi)
            boxed = loss.kinked or bool(torch.isfinite(lo).any()) or bool(torch.isfinite(hi).any())
            return fits and boxed
        return self.opts.inner == "cd" and fits

    def adapt_cg_budget(self, slow):
        """Double the per-visit CG budget (up to max_cg_iter, or max_cd_sweeps) when most visits of a slow epoch ran out of it.

        The starting budget follows the cost of a block (``inner_work_ratio``);
        on ill-conditioned blocks (small lam, random features, KLR near its
        bounds, SVR) that budget stops most visits before their residual has
        fallen by ``block_rtol``, and the outer iteration stalls on inexact
        block solves. Starved visits while the gap falls by less than half per
        certificate (``slow``) are the signal: the budget grows geometrically,
        at most log2(max_cg_iter / floor) times in a solve. A fast solve keeps
        the cheap budget even when its visits are cut short.
        """
        # The coordinate solver may grow past max_cg_iter when one or two blocks hold
        # every active row: the epoch is then the inner solve itself, and its
        # precision is all that matters (SVR, 800 rows, lam 0.01: 220 active rows,
        # converged in 26 epochs with 3,000 sweeps, gap 1.4e-2 after 100 at 100).
        # With many blocks the coupling between them dominates: on a9a (5,000 rows,
        # L1-SVC, C = 10) more sweeps did not save an epoch and doubled the time.
        cap = self.opts.max_cd_sweeps if self.use_cd and self.epoch_blocks <= 2 else self.opts.max_cg_iter
        starved = slow and self.epoch_visits and 2 * self.epoch_starved > self.epoch_visits
        if starved and self.direct is not None:  # its budget: Newton iterations per visit, up to max_tr_iter
            grown = min(2 * self.direct.iters, self.opts.max_tr_iter)
            if grown > self.direct.iters:
                self.direct.iters = self.stats["direct_iters"] = grown
        elif starved:
            grown = min(max(cap, self.cg_budget), 2 * self.cg_budget)
            if grown > self.cg_budget:
                self.cg_budget = grown
                self.stats["cg_budget"] = grown
        self.epoch_visits = self.epoch_starved = 0

    def rescale_skipping(self, reference):
        """Skip blocks whose residual is <= skip_ratio * reference (the one place the threshold is set).

        ``reference`` is the largest residual of the last certificate (direct
        certificates), of the blocks met in the last epoch (lagged), or 0 to
        skip nothing.
        """
        self.skip_thresh = self.opts.skip_ratio * reference

    def dual_J(self):
        """J(alpha) from the maintained state (||theta||^2 needs no kernel pass)."""
        return 0.5 * float(self.sq_norms().sum()) + float(self.loss.h(self.alpha, self.Y, self.lam).sum())

    def sq_norms(self):
        """||theta_c||^2 per output, from the maintained state (float64 tensor of shape (C,))."""
        return self.op.sq_norms(self.alpha) if self.op.maintains_decision else self.op.theta_sq_norms()

    def block_step(self, B):
        """One block visit: kernel block once, then each output column in turn.

        The C outputs are independent problems sharing K_BB; solving them
        column by column gives each its own active set, restarts and radius,
        and the state update (the kernel rows of every moved variable) is
        done once for all columns.
        """
        blk = self.op.block(B)
        self.feed_lag(blk)
        if self.direct is not None:
            moved = self.direct.visit(blk, B)
            if self.opts.trace_steps and bool(moved.any()):
                self.step_duals.append(self.dual_J())
            return
        a0 = self.alpha[B]
        if self.use_cd and self.loss.quadratic:
            return self._pq_block_step(blk, B, a0)
        a_new = a0.clone()
        moved = False
        loss = self.loss.rows(B)  # per-row data (weights) of this block
        # The inner solve's operations are O(|B|^2): one thread each (joker.intraop).
        with serial_below(self.op.product_work(len(B), 1), a0.device):
            for c in range(a0.shape[1]):
                col = slice(c, c + 1)
                a_c = self._visit(blk, loss, c, a0[:, col], blk.f[:, col], self.Y[B][:, col],
                                  self.ilo[B][:, col], self.ihi[B][:, col])
                if a_c is not None:
                    a_new[:, col] = a_c
                    moved = True
        if not moved:
            self.stats["skipped"] += 1
            return
        self.alpha[B] = a_new
        self.op.commit(blk, a_new - a0)
        if self.opts.trace_steps:
            self.step_duals.append(self.dual_J())

    def _pq_block_step(self, blk, B, a0):
        """A block visit of a piecewise-quadratic loss: the block's exact minimisation in alpha (:func:`joker.block_cd.solve_block_pq`).

        The block model is exact for these losses (rho = 1, no trust region),
        so the visit minimises J over alpha_B directly, every output in one
        compiled loop, the kink of SVR / ODM handled per coordinate. An
        output whose sweeps ran out of budget while crawling (their last
        sweep still moved more than ``CRAWL`` times as much as their first)
        goes on with CG on its orthant (:meth:`_polish`): coordinate descent
        is slow where columns of K_BB are (nearly) equal (duplicated rows
        with the hinge loss; measured: 600 rows, 6 distinct points, lam
        1e-5, tol 1e-6: coordinate steps alone, 100 epochs and gap 0.88;
        CG, 7 epochs). A visit cut short after good progress is not
        polished (the next epoch revisits the block anyway). Measured on the digits (1,400
        rows, 10 outputs, hinge, C = 10): polishing every cut visit took
        0.35 of a 0.45 s fit.
        """
        opts, loss = self.opts, self.loss.rows(B)
        pieces = loss.pieces(self.Y[B], self.lam)
        with serial_below(self.op.product_work(len(B), 1), a0.device):
            a_new, res0, used, starved = block_cd.solve_block_pq(
                blk.K, blk.f, a0, pieces, self.ilo[B], self.ihi[B], loss.kinked, self.cg_budget,
                min(opts.cg_rtol, opts.block_rtol), skip=self.skip_thresh)
            for c in (c for c, s in enumerate(starved) if s > CRAWL):
                a_new[:, c:c + 1] = self._polish(blk, loss, c, a0[:, c:c + 1], a_new[:, c:c + 1], B)
        self.epoch_max_res = max(self.epoch_max_res, max(res0))
        visits = sum(1 for n in used if n > 0)
        self.epoch_visits += visits
        self.epoch_starved += sum(1 for s in starved if s > 0.0)
        self.stats["cg_iter"] += sum(used)
        S = a_new - a0
        if not bool((S != 0).any()):
            self.stats["skipped"] += 1
            return
        self.stats["accepted"] += visits
        self.alpha[B] = a_new
        self.op.commit(blk, S)
        if opts.trace_steps:
            self.step_duals.append(self.dual_J())

    def _polish(self, blk, loss, c, a0, a, B):
        """CG from the coordinate solver's point on one output, inside that point's orthant (duplicated rows)."""
        opts = self.opts
        self.stats["cd_polish"] = self.stats.get("cd_polish", 0) + 1
        y, lo, hi = self.Y[B][:, c:c + 1], self.ilo[B][:, c:c + 1], self.ihi[B][:, c:c + 1]
        gs = blk.f[:, c:c + 1] + blk.mv(a - a0)
        l, q, lo_e, hi_e = _orthants(loss, a, gs, y, self.lam, lo, hi)
        S, pred, n = box_tr_cg(gs + l + q * a, _block_hessian(blk, q), lo_e - a, hi_e - a,
                               max_iter=opts.max_cg_iter, rtol=opts.cg_rtol, max_restarts=opts.max_restarts)
        self.stats["cg_iter"] += n
        return a + S if pred < 0.0 else a

    def _visit(self, blk, loss, c, a, gs, y, lo, hi):
        """Trust-region iterations on one output column of a block (``loss``: the block's rows, :meth:`Loss.rows`).

        Returns the new column of alpha_B, or None when nothing moved.
        """
        lam, opts = self.lam, self.opts
        first_res = None
        moved = False
        cg_used = 0
        K64 = None  # K_BB in float64 for the coordinate solver: converted once per visit, not per iteration
        for it in range(opts.max_tr_iter):
            if loss.quadratic:
                l, q, lo_e, hi_e = _orthants(loss, a, gs, y, lam, lo, hi)
                g = gs + l + q * a
            else:
                # Fraction to the boundary: a Newton step may cover at most
                # `boundary_fraction` of the distance to each bound, so p
                # approaches 0 or 1 geometrically instead of being projected
                # onto the bound, where h'' is huge and it would stay stuck.
                lo_e = a + opts.boundary_fraction * (lo - a)
                hi_e = a + opts.boundary_fraction * (hi - a)
                g = gs + loss.dh(a, y, lam)
                q = loss.d2h(a, y, lam)
            res = float(_residual(a, g, lo_e, hi_e).max())
            if it == 0:
                first_res = res
                self.epoch_max_res = max(self.epoch_max_res, res)
                if res == 0.0 or res <= self.skip_thresh:
                    return None
                self.epoch_visits += 1
            elif res <= opts.block_rtol * first_res:
                break
            budget = self.cg_budget - cg_used
            if budget <= 0:
                self.epoch_starved += 1  # the visit ended on its CG budget, not on block_rtol
                break
            radius = self.radius[c]
            if self.use_cd:  # the logistic loss (box_qp_cd: no Newton, the trust box cuts it); inf-norm region
                if K64 is None:
                    K64 = blk.K.to(torch.float64).contiguous()
                S, pred, n_cg = block_cd.box_qp_cd(g, K64, torch.clamp(lo_e - a, min=-radius),
                                                   torch.clamp(hi_e - a, max=radius), max_sweeps=budget,
                                                   rtol=opts.cg_rtol, newton=False, q=_bc(q, g))
            else:
                S, pred, n_cg, QS = box_tr_cg(g, _block_hessian(blk, q), lo_e - a, hi_e - a, radius=radius,
                                              max_iter=budget, rtol=opts.cg_rtol, max_restarts=opts.max_restarts,
                                              with_product=True)
            cg_used += n_cg
            self.stats["cg_iter"] += n_cg
            if pred >= 0.0:
                if loss.quadratic:  # exact model: no descent left within the CG budget
                    break
                self.radius[c] = radius * opts.shrink
                continue
            # K_BB S: from CG's own Q S (Q = K_BB + diag(q)), or one product after the coordinate solver
            KS = blk.mv(S) if self.use_cd else QS - q * S
            a_new = a + S
            # Actual change of J, exact, with no new kernel rows (docs/dual.md s.4 step 3).
            actual = float((S * gs).sum() + 0.5 * (S * KS).sum()
                           + (loss.h(a_new, y, lam) - loss.h(a, y, lam)).sum())
            rho = actual / pred
            s_norm = float(S.abs().max() if self.use_cd else torch.linalg.vector_norm(S))
            if rho > opts.eta and actual < 0.0:
                a, gs = a_new, gs + KS
                moved = True
                self.stats["accepted"] += 1
                if rho > 0.75 and s_norm >= 0.99 * radius:
                    radius *= opts.grow
            else:
                self.stats["rejected"] += 1
            if rho < 0.25 and math.isfinite(radius):
                radius = opts.shrink * min(radius, s_norm)
            if not math.isfinite(radius) and not loss.quadratic:
                radius = s_norm
            self.radius[c] = radius
        return a if moved else None

    def certificate(self):
        """Certificate of the current iterate (exact: O(nC); random features: one feature pass)."""
        if self.op.maintains_decision:  # elementwise passes over (n, C): memory-bound, one thread (joker.intraop)
            with one_thread(self.alpha.device):
                return certify(self.loss, self.alpha, self.op.decision(), self.Y, self.lam, self.sq_norms())
        f, sq_dual = self.op.certificate_pass(self.alpha)
        return certify(self.loss, self.alpha, f, self.Y, self.lam, self.sq_norms(), sq_dual)

    # Lagged certificates (random features): the certificate of the iterate at the
    # end of epoch e is assembled during epoch e + 1 from the features each block
    # computes anyway (two extra products per block), instead of a feature pass.

    def start_lag(self, epoch, seconds):
        """Snapshot the current iterate; the next epoch's blocks certify it."""
        self.lag = {"epoch": epoch, "seconds": seconds, "alpha": self.alpha.clone(), "state": self.op.snapshot(),
                    "f": torch.empty_like(self.alpha), "fresh": torch.zeros_like(self.op.theta), "rows": 0}

    def feed_lag(self, blk):
        lag = self.lag
        if lag is None:
            return
        lag["f"][blk.B] = self.op.lag_rows(blk, lag["state"], lag["alpha"][blk.B], lag["fresh"])
        lag["rows"] += len(blk.B)

    def finish_lag(self):
        """Certificate of the snapshot, or None when the epoch did not cover every row."""
        lag, self.lag = self.lag, None
        if lag is None or lag["rows"] != self.n:
            return None
        theta = lag["state"]
        return certify(self.loss, lag["alpha"], lag["f"], self.Y, self.lam, (theta * theta).sum(0),
                       (lag["fresh"] * lag["fresh"]).sum(0)), lag

    def restore(self, lag):
        """Go back to a certified snapshot."""
        self.alpha = lag["alpha"]
        self.op.restore(lag["state"])


DIVERGE_SLACK = 1e-3
"""Relative margin by which the dual may pass P(0) before the solve is declared diverged (:class:`DivergedError`)."""


class DivergedError(FloatingPointError):
    """The dual objective passed the primal at theta = 0: weak duality broken, the kernel is not PSD as computed.

    Weak duality (Joker, Eq. 5: D(alpha) <= P(theta) for every feasible
    alpha and every theta) holds in particular at theta = 0, where
    P(0) = sum_i w_i loss(y_i, 0). A dual value above it (by more than
    ``DIVERGE_SLACK`` P(0), far beyond rounding) can only come from a
    kernel matrix that is not positive semi-definite as computed, e.g.
    squared distances that cancel for rows far from the others; the
    iterates then grow without bound (RMSE 1e152 was seen). Not-a-number
    or infinite objectives are reported the same way.
    """


PREDICT_SLACK = 2.0
"""A lagged fit certifies its iterate directly when the extrapolated gap and KKT residual are within
this factor of their tolerances (:meth:`_Driver.predicted_done`). A wrong prediction costs one feature
pass, a missed one a whole epoch (the lagged certificate of the iterate that met the tolerances arrives
an epoch later). Measured on full HEPC (M 2,048, blocks of 2,048, float32, 2 threads): a pass 4-5 s, an
epoch 17-20 s; with factor 1 a run whose gap went 1.06e-2 -> 3.8e-3 (predicted 1.4e-3) spent a 7th
epoch to learn that its 6th iterate had 4.0e-4 (130 s of fit instead of about 110 s)."""


class _Driver:
    """The epoch loop of one solve: block selection, certificates, stopping (kept out of the public API).

    ``dbcd_tr`` reads as the loop over these named steps; the state they share
    (history, the certified epoch, the block rule in force) lives here.
    """

    def __init__(self, run, t0, callback=None):
        self.run, self.opts, self.op, self.t0 = run, run.opts, run.op, t0
        self.callback = callback
        opts, op = self.opts, self.op
        self.history = []
        self.greedy = opts.selection == "greedy"
        # "auto": random blocks first, then largest-residual blocks to polish (exact kernel, box losses)
        self.polish = (opts.selection == "auto" and op.maintains_decision
                       and getattr(run.loss, "greedy_blocks", False) and opts.greedy_gap is not None)
        if self.greedy and not op.maintains_decision:
            raise ValueError("selection='greedy' needs the exact kernel (K alpha maintained); "
                             "random features keep only theta")
        self.shrinking = (opts.shrinking if opts.shrinking is not None else op.maintains_decision) \
            and op.maintains_decision
        self.lagged = opts.lagged_certificate if opts.lagged_certificate is not None else not op.maintains_decision
        if self.lagged and (op.maintains_decision or self.greedy):
            raise ValueError("lagged_certificate needs random features and random block selection")
        self.epoch = 0
        self.certified = 0  # the epoch whose iterate ``cert`` certifies
        self.out_of_time = False
        self.stalled = False
        self.cert = None
        self.converged = False
        self.p0 = None  # the primal at theta = 0 (check_bounded)

    def now(self):
        return time.perf_counter() - self.t0

    # ------------------------------------------------------------ certify
    def record(self, epoch, cert=None, seconds=None):
        """Append a certificate (computed now unless given) to the history."""
        run, opts = self.run, self.opts
        if cert is None:
            cert = run.certificate()
        self.check_bounded(epoch, cert)
        if not self.lagged or not self.history:  # lagged fits rescale from the blocks they meet instead
            run.rescale_skipping(cert.kkt_abs)
        self.history.append({"epoch": epoch, "seconds": self.now() if seconds is None else seconds,
                             "dual": cert.dual, "primal": cert.primal, "gap": cert.gap, "kkt": cert.kkt,
                             "gaps": cert.gaps, "kkts": cert.kkts})
        if self.callback is not None:  # after the history: the row is that of this certificate
            t_cb = time.perf_counter()
            self.callback(self.history[-1], run.alpha)
            self.t0 += time.perf_counter() - t_cb  # the solver's clock (history, max_time) excludes the callback
        if opts.verbose:
            print(f"[joker] epoch {epoch:4d}  t={self.history[-1]['seconds']:8.2f}s  primal={cert.primal:.6g}  "
                  f"dual={cert.dual:.6g}  gap={cert.gap:.3e}  kkt={cert.kkt:.3e}", flush=True)
        return cert

    def check_bounded(self, epoch, cert):
        """Raise :class:`DivergedError` when ``cert`` breaks weak duality against P(0) or is not finite."""
        if self.p0 is None:  # P(0) = sum_i w_i loss(y_i, 0), once per solve (the loss is the weighted one)
            run = self.run
            self.p0 = float(run.loss.primal(run.Y, torch.zeros_like(run.Y)).sum(dtype=torch.float64))
        if math.isfinite(cert.dual) and math.isfinite(cert.primal) \
                and cert.dual <= self.p0 + DIVERGE_SLACK * abs(self.p0):
            return
        raise DivergedError(
            f"Joker diverged at epoch {epoch}: the dual objective {cert.dual:.6g} exceeds the primal at "
            f"theta = 0, {self.p0:.6g}, which weak duality forbids (primal now {cert.primal:.6g}); the kernel "
            "matrix is not positive semi-definite as computed. Rows far from the others (e.g. one row at 1e10) "
            "or a float32 solve of ill-scaled inputs cause this: check X for outliers, rescale it, or use "
            "dtype='float64'")

    def certify(self, epoch):
        """Certify the current iterate as that of ``epoch``."""
        self.cert = self.record(epoch)
        self.certified = epoch
        self.converged = self.opts.met(self.cert)

    def predicted_done(self):
        """Linear-rate extrapolation of the last two certificates to the current iterate.

        Worth a direct certificate (a feature pass) only if it passes.
        """
        if len(self.history) < 2:
            return False
        h1, h2 = self.history[-1], self.history[-2]

        def rate(key):
            # in [0, 1]: a gap a rounding error below zero is a rate of 0 (a finished solve), not a negative one
            return min(1.0, max(0.0, h1[key] / h2[key])) if h2[key] > 0 else 1.0
        # The KKT residual falls at its own rate or, near the optimum, as the square root of the gap
        # (the gap is of the order of the squared relative step; kkt_tol's default sqrt(tol) says
        # the same): the faster of the two. Measured on full HEPC (RFF, blocks of 2,048): gap
        # 4.5e-2 -> 6.2e-3, KKT 0.115 -> 0.069; the next iterate had gap 9.7e-4 and KKT 0.027, met,
        # where the KKT's own rate predicted 0.042 and cost an epoch (20 s) to learn it from
        # the lagged certificate. A wrong prediction costs one feature pass.
        gap_rate = rate("gap")
        kkt_rate = min(rate("kkt"), math.sqrt(gap_rate))
        slack = PREDICT_SLACK
        return h1["gap"] * gap_rate <= slack * self.opts.tol and h1["kkt"] * kkt_rate <= slack * self.opts.kkt_target

    # ------------------------------------------------------------ select block
    def blocks(self, perm):
        """The blocks of one epoch: slices of a permutation, or the largest residuals (greedy)."""
        run, n = self.run, self.run.n
        for start in range(0, n if self.greedy else len(perm), run.bs):
            if self.greedy:
                r = gradient_residuals(run.loss, run.alpha, self.op.f, run.Y, run.lam).amax(1)
                yield torch.topk(r, min(run.bs, n), sorted=False).indices
            else:
                yield perm[start:start + run.bs]

    def epoch_order(self, perm):
        """This epoch's permutation, without the samples shrinking leaves out."""
        run = self.run
        if not self.shrinking or self.greedy:
            run.epoch_blocks = -(-run.n // run.bs)
            return perm
        a = run.alpha
        held = (a <= run.lo) | (a >= run.hi)  # at a bound (or at the kink of SVR / ODM)
        if run.loss.kinked:
            held |= a == 0
        with one_thread(a.device):  # elementwise over (n, C), as the certificate
            moves = (gradient_residuals(run.loss, a, self.op.f, run.Y, run.lam) > 0) | ~held
        keep = perm[moves.any(1)[perm]]
        run.epoch_blocks = -(-len(keep) // run.bs)
        run.stats["active_rows"] = run.stats.get("active_rows", 0) + len(keep)
        return keep

    # ------------------------------------------------------------ epoch
    def begin_epoch(self):
        """Choose the block rule, start a lagged certificate, reset the epoch counters."""
        run = self.run
        self.epoch += 1
        if self.polish and not self.greedy and self.cert.gap <= self.opts.greedy_gap:
            self.greedy = True
            run.stats["greedy_from_epoch"] = self.epoch
        if self.lagged and self.certified != self.epoch - 1:
            run.start_lag(self.epoch - 1, self.now())
        self._accepted, self._skipped = run.stats["accepted"], run.stats["skipped"]
        run.epoch_max_res = 0.0
        self.op.begin_epoch()

    def run_epoch(self, perm):
        """One pass of block steps; stops early when ``max_time`` is spent."""
        run, opts = self.run, self.opts
        for B in self.blocks(self.epoch_order(perm)):
            run.stats["blocks"] += 1
            run.block_step(B)
            if opts.max_time is not None and self.now() > opts.max_time:
                self.out_of_time = True
                return

    def end_epoch(self):
        """Detect a stall, rescale block skipping (lagged), read a finished lagged certificate.

        Returns True when the lagged certificate of the previous iterate met
        the tolerances (that iterate is restored and returned).
        """
        run = self.run
        run.settle()
        self.stalled = run.stats["accepted"] == self._accepted
        h = self.history
        run.adapt_cg_budget(len(h) >= 2 and h[-1]["gap"] > 0.5 * h[-2]["gap"])
        if not self.lagged:
            return False
        # The last certificate is an epoch old: skip relative to the residuals met
        # in this epoch instead, and never read "everything skipped" as a stall.
        if self.stalled and run.stats["skipped"] > self._skipped and run.skip_thresh > 0:
            self.stalled = False
            run.rescale_skipping(0.0)
        else:
            run.rescale_skipping(run.epoch_max_res)
        lag = run.finish_lag()
        if lag is None:
            return False
        self.cert, snap = lag
        self.record(snap["epoch"], self.cert, snap["seconds"])
        self.certified = snap["epoch"]
        if self.opts.met(self.cert):
            # The previous iterate is certified: return it, not the uncertified current one.
            run.restore(snap)
            self.converged = True
        return self.converged

    def wants_certificate(self):
        """Whether the current iterate is certified directly after this epoch."""
        opts, last = self.opts, self.out_of_time or self.epoch == self.opts.max_epochs or self.stalled
        if self.lagged:
            return last or self.predicted_done()
        return last or self.epoch % opts.check_every == 0

    def finish(self):
        """Certify the final iterate when needed; optional refresh of K alpha."""
        run, op = self.run, self.op
        if self.certified != self.epoch and not self.converged:
            self.certify(self.epoch)
        if self.opts.refresh_final and op.maintains_decision:
            op.reset(run.alpha)
            self.cert = run.certificate()
            c = self.cert
            self.history[-1].update(dual=c.dual, primal=c.primal, gap=c.gap, kkt=c.kkt, gaps=c.gaps, kkts=c.kkts)
            self.converged = self.opts.met(c)


def dbcd_tr(op, loss, Y, lam, options=None, seed=None, alpha0=None, sample_weight=None, callback=None):
    """Solve the Joker dual by DBCD-TR (Joker, Alg. 1).

    Parameters
    ----------
    op : joker.operators.ExactKernelOperator or joker.operators.RFFOperator
        The kernel operator (holds the training inputs and K alpha / theta).
    loss : joker.losses.Loss
    Y : tensor of shape (n, C)
        Targets (regression) or +-1 labels, one column per output.
    lam : float
        Regularisation lambda > 0 (sum of losses).
    options : SolverOptions, optional
    seed : int or None
        Seed of the block permutations.
    alpha0 : tensor or array of shape (n, C) or (n,), optional
        Warm start (e.g. the merged duals of SODM's partitions,
        :mod:`joker.sodm`); projected onto the dual's box, and K alpha0 (or
        theta) is computed once by ``op.reset``. None: the loss's own start
        (zeros but for the logistic loss).
    sample_weight : array-like or tensor of shape (n,), optional
        Row weights w_i >= 0: the loss of row i is scaled by w_i (a per-row
        C, docs/dual.md s.6); the dual, its box and the certificates are
        those of the weighted problem (:mod:`joker.weighted_loss`). A row of
        weight 0 is held at alpha_i = 0. None: every weight 1.
    callback : callable or None
        Called as ``callback(row, alpha)`` at each certificate: ``row`` the
        history entry just appended (epoch, seconds, gap, kkt, ...) and
        ``alpha`` the current dual iterate (tensor (n, C), the solver's own:
        read it, do not modify it; with a lagged certificate the row is that
        of the previous epoch's iterate). ``op`` then holds the current
        K alpha / theta. Its time is not counted: the history's seconds,
        ``max_time`` and the result's ``seconds`` exclude it (anytime curves,
        :meth:`baselines.base.Adapter._checkpoint`, score the model here).

    Returns
    -------
    SolveResult

    Raises
    ------
    ValueError
        ``selection="greedy"`` or ``lagged_certificate=True`` with an
        operator that does not support it; ``alpha0`` of the wrong shape or
        not finite; ``sample_weight`` not of shape (n,), negative or not
        finite.
    DivergedError
        A certificate broke weak duality against P(0) or was not finite:
        the kernel matrix is not positive semi-definite as computed.
    """
    opts = options or SolverOptions()
    loss = weighted(loss, sample_weight, Y)
    gen = torch.Generator()
    if seed is not None:
        gen.manual_seed(int(seed))
    else:
        gen.seed()
    t0 = time.perf_counter()
    run = _Run(op, loss, Y, lam, opts, gen, alpha0)
    loop = _Driver(run, t0, callback)
    if opts.trace_steps:
        run.step_duals.append(run.dual_J())
    loop.certify(0)
    while not loop.converged and loop.epoch < opts.max_epochs and not loop.out_of_time:
        loop.begin_epoch()
        loop.run_epoch(torch.randperm(run.n, generator=gen).to(Y.device))  # select block + block step
        if loop.end_epoch():
            break
        if loop.wants_certificate():
            loop.certify(loop.epoch)
        if loop.stalled and not loop.converged:
            # A whole epoch without an accepted step: the iterate cannot move at this
            # precision (e.g. the float64 floor of a piecewise-linear loss); stop honestly.
            run.stats["stalled"] = True
            break
    loop.finish()
    return SolveResult(alpha=run.alpha, certificate=loop.cert, n_epochs=loop.epoch, converged=loop.converged,
                       history=loop.history, seconds=loop.now(), step_duals=run.step_duals,
                       stats=run.stats)


def warn_not_converged(result, tol, category, kkt_tol=math.inf):
    """Emit ``category`` when the solve stopped before the certificate met tol and kkt_tol.

    Parameters
    ----------
    result : SolveResult
    tol, kkt_tol : float
        The tolerances in force (``SolverOptions.tol``, ``SolverOptions.kkt_target``).
    category : type of Warning
    """
    if not result.converged:
        stalled = "an epoch accepted no step (stalled at this precision); " if result.stats.get("stalled") else ""
        cert = result.certificate
        unmet = []
        if not cert.gap <= tol:
            unmet.append(f"relative duality gap {cert.gap:.2e} > tol={tol:g}")
        if not cert.kkt <= kkt_tol:
            unmet.append(f"KKT residual {cert.kkt:.2e} > kkt_tol={kkt_tol:g}")
        what = " and ".join(unmet) or f"relative duality gap {cert.gap:.2e}"
        warnings.warn(
            f"Joker stopped after {result.n_epochs} epochs ({result.seconds:.1f} s) with {what} "
            f"(gap {cert.gap:.2e}, KKT residual {cert.kkt:.2e}); "
            f"{stalled}increase max_epochs / max_time or loosen tol", category, stacklevel=3)
