"""Compiled ``out = scale * cos(out)`` for the random features on the CPU.

Why: the CPU here has AVX and FMA but no AVX2, and PyTorch's (and
numpy's) ``cos`` then runs one element at a time: 1.1-1.7 ns per float32
element, measured on a 256 x 2,048 tile on one core, against 0.3-0.5 ns
for the loop below, which LLVM vectorises. On full HEPC the cosines were
25 s of a 131 s random-feature fit (cProfile, M = 2,048, 2 threads).

The formula (Cody and Waite, *Software Manual for the Elementary
Functions*, 1980, ch. 8: additive range reduction with split constants):

1. k = round(v / 2 pi), r = ((v - k C1) - k C2) - k C3 with
   C1 + C2 + C3 = 2 pi, C1 = 6.28125 (7 bits, k C1 exact), C2 of 11
   bits (float32) or 26 bits (float64) and C3 the rest: r in [-pi, pi];
2. x = |r| - pi / 2 (pi / 2 split in two), in [-pi/2, pi/2], and
   cos v = cos |r| = -sin x;
3. sin x = x sum_j (-1)^j x^(2j) / (2j+1)! in Horner form, 7 terms in
   float32 (truncation (pi/2)^15 / 15! = 7e-10) and 11 in float64
   ((pi/2)^23 / 23! = 1e-18).

Valid for |v| <= ``MAX_ABS`` (1e5): past it the reduction loses its
exactness and the polynomial is evaluated outside [-pi/2, pi/2] (values
far outside [-1, 1]). :func:`cos_scale_` then takes ``torch.cos`` for the
whole tensor (one ``aminmax`` pass decides), unless its caller has bounded
the phases itself (``in_range``: the random features bound each row's
phases from its inputs and recompute the rows past the bound exactly). Measured against ``np.cos``
in float64 (tests/joker/test_fast_cos.py), |v| <= 1e5: max absolute error
1.4e-7 in float32 (torch.cos 3.6e-8) and 3.3e-16 in float64. The
features' phases are ``X W^T + b`` of centred inputs, |v| of a few tens.
Every feature of a fit, its certificate and its predictions go through
the same function, so the certificate is exact for the feature map the
model uses.

The kernel compiles once per dtype (``cache=True``) and runs on
``torch.get_num_threads()`` threads (numba's ``prange`` over rows).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import torch

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; torch.cos is the fallback
    numba = None

__all__ = ["MAX_ABS", "available", "cos_scale_"]

MAX_ABS = 1e5
"""Largest |v| the compiled loop takes (module docstring); a tensor with a larger or non-finite entry goes to torch."""

_FLAGS = {"contract", "nsz", "nnan", "ninf"}  # no reassociation: the split reduction must stay in order

# Module constants are compile-time constants to numba (globals are frozen), so the Horner forms
# below unroll and the row loop vectorises; numpy scalars keep float32 arithmetic in float32.
_TWO_PI = Fraction("6.283185307179586476925286766559005768394")  # 2 pi to 40 digits
_HALF_PI = _TWO_PI / 4


def _split(x, bits):
    """x rounded to a multiple of 2^-bits (few significant bits: k * it is exact for the k met here)."""
    return float(np.ldexp(np.round(np.ldexp(float(x), bits)), -bits))


_C1 = 6.28125  # 7 significant bits: k * _C1 is exact
_C2 = {32: _split(_TWO_PI - Fraction(_C1), 20), 64: _split(_TWO_PI - Fraction(_C1), 35)}  # 11 / 26 bits
_C3 = {b: float(_TWO_PI - Fraction(_C1) - Fraction(_C2[b])) for b in (32, 64)}
_H1 = {32: float(np.float32(float(_HALF_PI))), 64: float(_HALF_PI)}  # pi / 2 = H1 + H2
_H2 = {b: float(_HALF_PI - Fraction(_H1[b])) for b in (32, 64)}


def _consts(bits):
    cast = np.float32 if bits == 32 else float
    return tuple(cast(v) for v in (1.0 / (2.0 * math.pi), 0.5, _C1, _C2[bits], _C3[bits], _H1[bits], _H2[bits]))


_S32, _S64 = _consts(32), _consts(64)
# Taylor coefficients of sin x / x = sum_j (-1)^j z^j / (2j+1)!, z = x^2, on [-pi/2, pi/2]; truncation
# (pi/2)^15 / 15! = 7e-10 (float32, 7 terms) and (pi/2)^23 / 23! = 1.2e-18 (float64, 11 terms)
_SIN32 = tuple(np.float32((-1) ** j / math.factorial(2 * j + 1)) for j in range(7))
_SIN64 = tuple((-1) ** j / math.factorial(2 * j + 1) for j in range(11))


if numba is not None:
    @numba.njit(inline="always", fastmath=_FLAGS)
    def _shifted(v, s):
        """x = |v - 2 pi k| - pi/2 in [-pi/2, pi/2], k = round(v / 2 pi): cos v = -sin x (split constants)."""
        k = np.floor(v * s[0] + s[1])
        r = abs(((v - k * s[2]) - k * s[3]) - k * s[4])
        return (r - s[5]) - s[6]

    @numba.njit(inline="always", fastmath=_FLAGS)
    def _sin_poly32(x):
        """sin x for x in [-pi/2, pi/2], float32: Horner form of the 7-term Taylor polynomial."""
        t = _SIN32
        z = x * x
        return x * (t[0] + z * (t[1] + z * (t[2] + z * (t[3] + z * (t[4] + z * (t[5] + z * t[6]))))))

    @numba.njit(inline="always", fastmath=_FLAGS)
    def _sin_poly64(x):
        """sin x for x in [-pi/2, pi/2], float64: Horner form of the 11-term Taylor polynomial."""
        t = _SIN64
        z = x * x
        return x * (t[0] + z * (t[1] + z * (t[2] + z * (t[3] + z * (t[4] + z * (
            t[5] + z * (t[6] + z * (t[7] + z * (t[8] + z * (t[9] + z * t[10]))))))))))

    # Two kernels, not one built per dtype by a factory: the coefficients must be module globals
    # (compile-time constants, so the Horner forms unroll and the loop vectorises) for cache=True
    # to apply; a closure over them is not cached, and a coefficient array argument stops the
    # vectorisation (measured: 0.45 -> 1.1 ns per element).
    @numba.njit(parallel=True, cache=True, fastmath=_FLAGS)
    def _cos_rows32(out, scale):
        n, m = out.shape
        for i in numba.prange(n):
            row = out[i]
            for j in range(m):
                row[j] = -scale * _sin_poly32(_shifted(row[j], _S32))

    @numba.njit(parallel=True, cache=True, fastmath=_FLAGS)
    def _cos_rows64(out, scale):
        n, m = out.shape
        for i in numba.prange(n):
            row = out[i]
            for j in range(m):
                row[j] = -scale * _sin_poly64(_shifted(row[j], _S64))


def available(t) -> bool:
    """Whether :func:`cos_scale_` applies to tensor ``t``: numba, CPU, float32/float64, C-contiguous 2-D."""
    return (numba is not None and t.device.type == "cpu" and t.dtype in (torch.float32, torch.float64)
            and t.dim() == 2 and t.is_contiguous() and not t.requires_grad)


def cos_scale_(out, scale, in_range=False):
    """In place: ``out = scale * cos(out)``, returned.

    Parameters
    ----------
    out : tensor of shape (n, m), float32 or float64, CPU, C-contiguous
        The phases; overwritten by the scaled cosines.
    scale : float
    in_range : bool
        The caller has proved every phase finite and within ``MAX_ABS``
        (the random features bound them from their inputs,
        :meth:`joker.features.RandomFourierFeatures.transform_tensor`): no
        range check. False: one ``aminmax`` pass decides, and a tensor with
        a phase beyond ``MAX_ABS`` or a non-finite one takes ``torch.cos``
        whole.

    Returns
    -------
    out

    Raises
    ------
    ValueError
        ``out`` is not a tensor :func:`available` accepts (callers fall
        back to ``torch.cos``).
    """
    if not available(out):
        raise ValueError("cos_scale_ needs a C-contiguous 2-D float32/float64 CPU tensor and numba")
    if out.numel():
        if not in_range:
            lo, hi = torch.aminmax(out)
            if not (-MAX_ABS <= float(lo) and float(hi) <= MAX_ABS):  # also NaN: torch's cos propagates it
                return out.cos_().mul_(scale)
        numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
        if out.dtype == torch.float32:
            _cos_rows32(out.numpy(), np.float32(scale))
        else:
            _cos_rows64(out.numpy(), float(scale))
    return out
