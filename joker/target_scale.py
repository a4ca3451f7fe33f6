"""Target scaling of the Joker regressor: keep the solve's arithmetic inside the float range.

A regression fit is equivariant in the scale of its targets
(``docs/certificates.md``, "Scale invariance"). For a loss homogeneous of
degree p in (y, f) once its thresholds (Huber ``delta``, SVR ``epsilon``)
scale with the targets (:attr:`joker.losses.Loss.target_degree`),

    P(theta; y, lam) = c^p P'(theta / c; y / c, lam'),     lam' = lam c^(2 - p),

so the problem with targets y / c, thresholds / c and lam' has the solution
alpha / c, theta / c, b / c; its primal and -lam' J' are those of the
original divided by c^p, its J' is J divided by c^2, and its relative
duality gap and KKT residual are the original ones (both are ratios).

The solver squares the targets (P holds sum (y - f)^2 / 2, J holds
alpha^T K alpha), so targets of size 1e20 overflow float32 (largest number
3.4e38) and targets of size 1e-20 underflow to 0, and the certificate of
such a fit is meaningless. :func:`target_scale` picks c = 2^k so that the
solve sees targets of size about 1, when, and only when, the largest target
lies outside a window of the dtype in which squares and their sums over the
rows keep a wide margin: [tiny^(1/4), max^(1/4)], i.e. about
[3.3e-10, 4.3e9] for float32 and [1.2e-77, 1.3e77] for float64. A power of
two divides exactly (no rounding), and the fitted coefficients are
multiplied back by c (:func:`unscale`).
"""

from __future__ import annotations

import math

import torch

__all__ = ["target_scale", "unscale"]

_HEADROOM = 2.0 ** 10
"""Targets within this factor of the dtype's largest number are refused (the model has their scale)."""
_MAX_OBJECTIVE_TARGET = math.sqrt(torch.finfo(torch.float64).max) / _HEADROOM
"""Largest target (1.3e151) whose square, in the reported float64 objective, keeps the headroom too."""


def target_scale(Y, dtype):
    """The power of two c by which the solve divides the targets (1.0 when none is needed).

    Parameters
    ----------
    Y : float64 tensor of any shape
        The finite targets, before any cast to ``dtype``.
    dtype : torch.dtype
        The dtype of the solve (torch.float32 or torch.float64).

    Returns
    -------
    float
        1.0 when max |Y| is 0 or lies in [tiny^(1/4), max^(1/4)] of ``dtype``
        (module docstring); otherwise 2^k with max |Y| / 2^k in [0.5, 1).

    Raises
    ------
    ValueError
        When max |Y| is within a factor 2^10 of the largest number of
        ``dtype`` (the coefficients and predictions, which have the targets'
        scale, could not be held in it), or above 1.3e151 (the objective
        ``primal_``, of the order of the squared targets, would overflow
        float64).
    """
    s = float(Y.abs().max()) if Y.numel() else 0.0
    fi = torch.finfo(dtype)
    name = str(dtype).split(".")[-1]
    if s > fi.max / _HEADROOM:
        raise ValueError(f"targets of magnitude up to {s:.3g} cannot be fitted in {name} (largest number "
                         f"{fi.max:.3g}): the coefficients and predictions have the targets' scale; "
                         f"{'use dtype=' + repr('float64') + ' or ' if dtype != torch.float64 else ''}rescale y")
    if s > _MAX_OBJECTIVE_TARGET:
        raise ValueError(f"targets of magnitude up to {s:.3g} are too large: the objective, of the order of "
                         f"their squares, overflows float64 beyond {_MAX_OBJECTIVE_TARGET:.3g}; rescale y")
    if s == 0.0 or fi.tiny ** 0.25 <= s <= fi.max ** 0.25:
        return 1.0
    return math.ldexp(1.0, math.frexp(s)[1])


def unscale(T, c, name="coefficients"):
    """``T * c`` in ``T``'s dtype, computed in float64.

    Parameters
    ----------
    T : tensor
        Coefficients of the scaled solve (alpha, theta, bias).
    c : float
        The scale of :func:`target_scale`.
    name : str
        What ``T`` holds, for the error message.

    Returns
    -------
    tensor of T's shape, dtype and device (``T`` itself when c is 1).

    Raises
    ------
    ValueError
        When a product overflows ``T``'s dtype.
    """
    if c == 1.0:
        return T
    out = (T.to(torch.float64) * c).to(T.dtype)
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"the fitted {name} exceed the {str(T.dtype).split('.')[-1]} range once scaled back "
                         f"by the targets' scale {c:.3g}; use dtype='float64' or rescale y")
    return out
