"""Losses of the Joker template: primal value, dual term h, h', h'' and box.

Every loss is one small object. The dual of Joker (Joker, Thm. 1; see
``docs/dual.md`` s.1-2) is

    J(alpha) = 1/2 alpha^T K alpha + sum_i h_i(alpha_i),  lo_i <= alpha_i <= hi_i,
    h_i(a)   = (1/lam) conj_{y_i}(-lam a).

All losses except the logistic one have a *piecewise quadratic* h with at most
one kink, at ``a = 0``::

    h(a) = l_plus  * a + q_plus  * a**2 / 2     (a >= 0)
    h(a) = l_minus * a + q_minus * a**2 / 2     (a <= 0)

(``l_plus == l_minus`` and ``q_plus == q_minus`` when there is no kink). The
solver uses that form to handle the kink of SVR and ODM *exactly*: it picks
the orthant of each variable and treats 0 as a temporary bound, so the block
model is exact and no sign linearisation is needed. The logistic loss is
smooth and non-quadratic; the solver treats it with a trust-region Newton
model and keeps ``p = lam * y * a`` a hair away from 0 and 1 internally, while
objectives and certificates are always those of the true problem.

All methods work elementwise on torch tensors of the same shape (``y`` and
``a`` of shape (n,) or (n, n_outputs)); ``lam`` is a positive float.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "Loss",
    "PiecewiseQuadraticLoss",
    "SquaredLoss",
    "HuberLoss",
    "EpsilonInsensitiveLoss",
    "HingeLoss",
    "SquaredHingeLoss",
    "ODMLoss",
    "LogisticLoss",
    "make_loss",
    "REGRESSION_LOSSES",
    "CLASSIFICATION_LOSSES",
    "LOSS_NAMES",
]


class Loss:
    """Base class: the pieces of one loss in the Joker dual template.

    Attributes
    ----------
    name : str
        The loss name used in configs (``squared``, ``hinge``, ...).
    kinked : bool
        True when h has a kink at 0 (SVR, ODM); the solver then uses the
        proximal KKT residual and orthant selection.
    quadratic : bool
        True when h is piecewise quadratic (the block model is exact).
    greedy_blocks : bool
        True when the solver's ``selection="auto"`` should turn to greedy
        (largest-residual) blocks in exact mode once the gap is small.
    target_degree : int or None
        Degree p of homogeneity in the targets: loss(c y, c u) = c^p loss(y, u)
        when the loss's own thresholds scale with the targets (:meth:`scaled`);
        None for the classification losses, whose labels are +-1.
    strongly_convex : bool
        True when h'' >= c > 0 on the whole box (every loss but the hinge and
        the epsilon-insensitive one, whose h is piecewise linear): the block
        model's Hessian K_BB + diag(h'') is then positive definite for any
        kernel, and ``inner="auto"`` may solve it by a Cholesky
        factorisation on an accelerator (:mod:`joker.direct_step`).
    absent_label : bool
        True when a label 0 means "this row is not part of this output's
        problem" (one-vs-one coding, :class:`joker.estimators.JokerClassifier`
        with ``multi_class="ovo"``): its loss is 0 and its dual variable is
        held at 0 by the box [0, 0], so h(0) = 0 and it adds nothing to P,
        J or the KKT residual. Hinge and squared hinge.
    """

    name = "loss"
    kinked = False
    quadratic = True
    strongly_convex = False
    greedy_blocks = False
    target_degree = None
    absent_label = False

    def primal(self, y, u):
        """Primal loss values ``loss(y, u)``.

        Parameters
        ----------
        y : tensor of shape (n,) or (n, n_outputs)
            Targets (regression) or labels in {-1, +1} (classification).
        u : tensor of the same shape
            Decision values f(x_i).

        Returns
        -------
        tensor of the same shape, the elementwise loss.
        """
        raise NotImplementedError

    def box(self, y, lam):
        """Box of the dual variables, ``lo <= alpha <= hi`` (docs/dual.md s.2).

        Returns
        -------
        lo, hi : tensors of the shape of ``y`` (entries may be +-inf).
        """
        inf = torch.full_like(y, math.inf)
        return -inf, inf

    def h(self, a, y, lam):
        """Dual term h_i(a) = (1/lam) conj_{y_i}(-lam a) (Joker, Thm. 1)."""
        raise NotImplementedError

    def dh(self, a, y, lam):
        """First derivative h'(a) (one-sided, on the side of sign(a), for kinks)."""
        raise NotImplementedError

    def d2h(self, a, y, lam):
        """Second derivative h''(a) (on the side of sign(a), for kinks)."""
        raise NotImplementedError

    def newton_terms(self, a, y, lam):
        """h(a), h'(a) and h''(a) in one call (losses may share their intermediate values).

        Returns
        -------
        (h, dh, d2h) : tensors of ``a``'s shape
        """
        return self.h(a, y, lam), self.dh(a, y, lam), self.d2h(a, y, lam)

    def initial_alpha(self, y, lam):
        """A feasible starting point (zeros for every loss but the logistic)."""
        return torch.zeros_like(y)

    def describe(self):
        """Parameters of the loss, as a dict (for logs)."""
        return {"loss": self.name}

    def rows(self, B):
        """The loss restricted to the rows ``B`` of the problem: itself, unless it holds per-row data.

        :class:`joker.weighted_loss.WeightedLoss` returns its weights of the
        rows ``B``; the solver calls this once per block visit.
        """
        return self

    def scaled(self, c):
        """The same loss for targets divided by ``c`` (thresholds divided by ``c``).

        Parameters
        ----------
        c : float
            Target scale > 0.

        Returns
        -------
        Loss
            With loss'(y / c, u / c) = loss(y, u) / c^p, p = ``target_degree``.

        Raises
        ------
        NotImplementedError
            For losses of labels (``target_degree`` None).
        """
        raise NotImplementedError(f"loss {self.name!r} has no target scale")


class PiecewiseQuadraticLoss(Loss):
    """A loss whose h is piecewise quadratic with at most a kink at 0.

    Subclasses give :meth:`pieces`; h, h', h'' follow from it.
    """

    def pieces(self, y, lam):
        """Coefficients ``(l_plus, q_plus, l_minus, q_minus)`` of h on a >= 0 and a <= 0.

        Returns
        -------
        tuple of four tensors broadcastable to the shape of ``y``.
        """
        raise NotImplementedError

    def h(self, a, y, lam):
        lp, qp, lm, qm = self.pieces(y, lam)
        pos = lp * a + 0.5 * qp * a * a
        if not self.kinked:
            return pos
        neg = lm * a + 0.5 * qm * a * a
        return torch.where(a >= 0, pos, neg)

    def dh(self, a, y, lam):
        lp, qp, lm, qm = self.pieces(y, lam)
        if not self.kinked:
            return lp + qp * a
        return torch.where(a >= 0, lp + qp * a, lm + qm * a)

    def d2h(self, a, y, lam):
        lp, qp, lm, qm = self.pieces(y, lam)
        if not self.kinked:
            return qp * torch.ones_like(a)
        return torch.where(a >= 0, qp * torch.ones_like(a), qm * torch.ones_like(a))

    def prox(self, v, y, lam):
        """Proximal map of h plus the box indicator, step 1, elementwise.

        ``argmin_a h(a) + (a - v)^2 / 2`` over the box; for a 1-D convex
        function the box is handled by clipping the unconstrained minimiser.
        Used for the KKT residual (docs/certificates.md).
        """
        lp, qp, lm, qm = self.pieces(y, lam)
        pos = torch.clamp((v - lp) / (1.0 + qp), min=0.0)
        neg = torch.clamp((v - lm) / (1.0 + qm), max=0.0)
        a = torch.where(v - lp > 0, pos, torch.where(v - lm < 0, neg, torch.zeros_like(v)))
        lo, hi = self.box(y, lam)
        return torch.minimum(torch.maximum(a, lo), hi)


class SquaredLoss(PiecewiseQuadraticLoss):
    """Squared loss ``(y - u)^2 / 2`` (kernel ridge regression, KRR).

    h(a) = lam a^2 / 2 - y a, no box (docs/dual.md s.2, row KRR).
    """

    name = "squared"
    strongly_convex = True
    target_degree = 2

    def primal(self, y, u):
        return 0.5 * (y - u) ** 2

    def scaled(self, c):
        return SquaredLoss()

    def pieces(self, y, lam):
        return -y, lam, -y, lam


class HuberLoss(PiecewiseQuadraticLoss):
    """Huber loss with threshold ``delta`` > 0.

    loss = r^2/2 for |r| <= delta, delta (|r| - delta/2) otherwise, r = y - u;
    h(a) = lam a^2 / 2 - y a, box |a| <= delta / lam (docs/dual.md s.2).
    """

    name = "huber"
    strongly_convex = True
    target_degree = 2

    def __init__(self, delta=1.0):
        if not delta > 0:
            raise ValueError(f"Huber delta must be > 0, got {delta!r}")
        self.delta = float(delta)

    def scaled(self, c):
        return HuberLoss(self.delta / c)

    def primal(self, y, u):
        r = torch.abs(y - u)
        return torch.where(r <= self.delta, 0.5 * r * r, self.delta * (r - 0.5 * self.delta))

    def pieces(self, y, lam):
        return -y, lam, -y, lam

    def box(self, y, lam):
        b = torch.full_like(y, self.delta / lam)
        return -b, b

    def describe(self):
        return {"loss": self.name, "delta": self.delta}


class EpsilonInsensitiveLoss(PiecewiseQuadraticLoss):
    """Epsilon-insensitive loss ``max(0, |y - u| - epsilon)`` (SVR).

    h(a) = epsilon |a| - y a, box |a| <= 1/lam (docs/dual.md s.2). The kink of
    |a| at 0 is handled exactly (orthant selection in the solver, proximal
    KKT residual), never linearised by sign(a).
    """

    name = "epsilon_insensitive"
    kinked = True
    target_degree = 1

    def __init__(self, epsilon=0.1):
        if not epsilon >= 0:
            raise ValueError(f"SVR epsilon must be >= 0, got {epsilon!r}")
        self.epsilon = float(epsilon)

    def scaled(self, c):
        return EpsilonInsensitiveLoss(self.epsilon / c)

    def primal(self, y, u):
        return torch.clamp(torch.abs(y - u) - self.epsilon, min=0.0)

    def pieces(self, y, lam):
        return self.epsilon - y, 0.0, -self.epsilon - y, 0.0

    def box(self, y, lam):
        b = torch.full_like(y, 1.0 / lam)
        return -b, b

    def describe(self):
        return {"loss": self.name, "epsilon": self.epsilon}


class HingeLoss(PiecewiseQuadraticLoss):
    """Hinge loss ``max(0, 1 - y u)`` (L1-SVC).

    h(a) = -y a, box 0 <= y a <= 1/lam (docs/dual.md s.2). A label 0 is an
    absent row (:attr:`Loss.absent_label`): loss 0, box [0, 0].
    """

    name = "hinge"
    greedy_blocks = True  # greedy working sets polish the last violators (SolverOptions.selection)
    absent_label = True

    def primal(self, y, u):
        return torch.clamp(1.0 - y * u, min=0.0) * (y != 0)

    def pieces(self, y, lam):
        return -y, 0.0, -y, 0.0

    def box(self, y, lam):
        c = 1.0 / lam
        lo = torch.where(y < 0, -c * torch.ones_like(y), torch.zeros_like(y))
        hi = torch.where(y > 0, c * torch.ones_like(y), torch.zeros_like(y))
        return lo, hi


class SquaredHingeLoss(PiecewiseQuadraticLoss):
    """Squared hinge loss ``max(0, 1 - y u)^2 / 2`` (L2-SVC).

    h(a) = lam a^2 / 2 - y a, box y a >= 0 (docs/dual.md s.2). A label 0 is
    an absent row (:attr:`Loss.absent_label`): loss 0, box [0, 0].
    """

    name = "squared_hinge"
    strongly_convex = True
    absent_label = True

    def primal(self, y, u):
        return 0.5 * torch.clamp(1.0 - y * u, min=0.0) ** 2 * (y != 0)

    def pieces(self, y, lam):
        return -y, lam, -y, lam

    def box(self, y, lam):
        inf = torch.full_like(y, math.inf)
        zero = torch.zeros_like(y)
        return torch.where(y < 0, -inf, zero), torch.where(y > 0, inf, zero)


class ODMLoss(PiecewiseQuadraticLoss):
    """Optimal margin distribution machine loss (Zhang and Zhou, 2019).

    loss = [max(0, 1 - theta - y u)^2 + upsilon max(0, y u - 1 - theta)^2] / (1 - theta)^2.
    With t = y a its dual term is (docs/dual.md s.2.1, derived from the
    conjugate given there with w = -lam t)::

        h = -t (1 - theta) + lam t^2 (1 - theta)^2 / 4            (t >= 0)
        h = -t (1 + theta) + lam t^2 (1 - theta)^2 / (4 upsilon)  (t <= 0)

    No box; one kink at a = 0, handled exactly like SVR's.
    """

    name = "odm"
    kinked = True
    strongly_convex = True

    def __init__(self, theta=0.1, upsilon=0.5):
        if not 0 <= theta < 1:
            raise ValueError(f"ODM theta must be in [0, 1), got {theta!r}")
        if not upsilon > 0:
            raise ValueError(f"ODM upsilon must be > 0, got {upsilon!r}")
        self.theta = float(theta)
        self.upsilon = float(upsilon)

    def primal(self, y, u):
        m = y * u
        th = self.theta
        lo = torch.clamp(1.0 - th - m, min=0.0)
        hi = torch.clamp(m - 1.0 - th, min=0.0)
        return (lo * lo + self.upsilon * hi * hi) / (1.0 - th) ** 2

    def pieces(self, y, lam):
        th, ups = self.theta, self.upsilon
        q_marg = lam * (1.0 - th) ** 2 / 2.0  # coefficient of t^2/2 on the t >= 0 side
        q_over = lam * (1.0 - th) ** 2 / (2.0 * ups)  # on the t <= 0 side
        pos_y = y > 0
        # a >= 0 is t >= 0 when y = +1 and t <= 0 when y = -1 (h is written in a = y t).
        lp = torch.where(pos_y, -(1.0 - th) * torch.ones_like(y), (1.0 + th) * torch.ones_like(y))
        qp = torch.where(pos_y, q_marg * torch.ones_like(y), q_over * torch.ones_like(y))
        lm = torch.where(pos_y, -(1.0 + th) * torch.ones_like(y), (1.0 - th) * torch.ones_like(y))
        qm = torch.where(pos_y, q_over * torch.ones_like(y), q_marg * torch.ones_like(y))
        return lp, qp, lm, qm

    def describe(self):
        return {"loss": self.name, "theta": self.theta, "upsilon": self.upsilon}


class LogisticLoss(Loss):
    """Logistic loss ``log(1 + exp(-y u))`` (kernel logistic regression, KLR).

    With p = lam y a in [0, 1] (docs/dual.md s.2, row KLR)::

        h(a)   = (1/lam) [p log p + (1 - p) log(1 - p)]
        h'(a)  = y log(p / (1 - p))
        h''(a) = lam / (p (1 - p))

    h'' blows up at the bounds, where the optimum never lies; the solver keeps
    p in [margin, 1 - margin] internally (:attr:`margin`), and h is evaluated
    with 0 log 0 = 0 so the objective and certificates are the true ones.
    """

    name = "logistic"
    quadratic = False
    strongly_convex = True  # h'' = lam / (p (1 - p)) >= 4 lam

    def __init__(self, margin=None):
        self.margin = margin

    def _margin(self, dtype):
        if self.margin is not None:
            return float(self.margin)
        return 1e-12 if dtype == torch.float64 else 1e-6

    def primal(self, y, u):
        return torch.nn.functional.softplus(-y * u)

    def box(self, y, lam):
        c = 1.0 / lam
        lo = torch.where(y > 0, torch.zeros_like(y), -c * torch.ones_like(y))
        hi = torch.where(y > 0, c * torch.ones_like(y), torch.zeros_like(y))
        return lo, hi

    def inner_box(self, y, lam):
        """The box shrunk by ``margin`` in p, where the solver keeps alpha."""
        m = self._margin(y.dtype)
        lo_p = torch.where(y > 0, torch.full_like(y, m), torch.full_like(y, -(1.0 - m)))
        hi_p = torch.where(y > 0, torch.full_like(y, 1.0 - m), torch.full_like(y, -m))
        return lo_p / lam, hi_p / lam

    def _p(self, a, y, lam):
        return torch.clamp(lam * y * a, 0.0, 1.0)

    def h(self, a, y, lam):
        p = self._p(a, y, lam)
        p1 = 1.0 - p
        return (torch.xlogy(p, p) + torch.xlogy(p1, p1)) / lam

    def dh(self, a, y, lam):
        p = self._p(a, y, lam)
        return y * (torch.log(p) - torch.log1p(-p))

    def d2h(self, a, y, lam):
        p = self._p(a, y, lam)
        return lam / (p * (1.0 - p))

    def newton_terms(self, a, y, lam):
        """h, h' and h'' sharing p and 1 - p; h' = y logit(p) (:meth:`dh`'s value, one operation)."""
        p = self._p(a, y, lam)
        p1 = 1.0 - p
        return (torch.xlogy(p, p) + torch.xlogy(p1, p1)) / lam, y * torch.logit(p), lam / (p * p1)

    def initial_alpha(self, y, lam):
        # p = 1e-3 for every sample: interior, small (as LIBLINEAR's dual LR start).
        return 1e-3 * y / lam


REGRESSION_LOSSES = {
    "squared": SquaredLoss,
    "huber": HuberLoss,
    "epsilon_insensitive": EpsilonInsensitiveLoss,
}
CLASSIFICATION_LOSSES = {
    "squared_hinge": SquaredHingeLoss,
    "hinge": HingeLoss,
    "logistic": LogisticLoss,
    "squared": SquaredLoss,
    "odm": ODMLoss,
}


LOSS_NAMES = tuple(sorted(set(REGRESSION_LOSSES) | set(CLASSIFICATION_LOSSES)))
"""Every loss name of the core, sorted: the one public vocabulary (configs and adapters read it)."""


def make_loss(name, *, epsilon=0.1, delta=1.0, odm_theta=0.1, odm_upsilon=0.5):
    """Build a loss object from its config name.

    Parameters
    ----------
    name : str
        One of ``squared``, ``huber``, ``epsilon_insensitive``, ``hinge``,
        ``squared_hinge``, ``logistic``, ``odm``.
    epsilon, delta, odm_theta, odm_upsilon : float
        Parameters of SVR, Huber and ODM.

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        Unknown name or invalid parameter.
    """
    if name == "squared":
        return SquaredLoss()
    if name == "huber":
        return HuberLoss(delta)
    if name == "epsilon_insensitive":
        return EpsilonInsensitiveLoss(epsilon)
    if name == "hinge":
        return HingeLoss()
    if name == "squared_hinge":
        return SquaredHingeLoss()
    if name == "logistic":
        return LogisticLoss()
    if name == "odm":
        return ODMLoss(odm_theta, odm_upsilon)
    raise ValueError(f"unknown loss {name!r}; expected one of {list(LOSS_NAMES)}")
