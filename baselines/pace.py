"""How fast this machine evaluates Gaussian kernel blocks: the pace that time-aware plans size their models by.

Falkon's CG iterations and EigenPro's epochs spend their time computing
blocks ``exp(-||x - z||^2 / (2 sigma^2))`` between the training rows and
the model's centres and multiplying them by a vector. On a CPU that cost is
set by the ``exp`` far more than by the ``d`` multiply-adds of the
distances (measured on the 2-core machine, float64, 2 threads: Falkon's
``GaussianKernel.dmmv`` 6.5-7.9 ns per row x centre at d = 10 and 22, its
``mmv`` 5.2-8.3 ns; float32 3.4-4.9 ns), so a flop count says little and a
measured pace says a lot. :func:`kernel_entry_seconds` times the same
operation on a 32,768 x 256 block (torch, the trial's dtype and threads;
within 20-40% of Falkon's own routine in the measurements above) and
:func:`largest_in_time` turns a cost model into the largest model size
that fits a time share.
"""

from __future__ import annotations

import functools
import math
import numbers
import time
from typing import Callable

__all__ = ["PROBE_CENTRES", "PROBE_ROWS", "SOLVER_FACTOR", "gemm_flop_seconds", "kernel_entry_seconds",
           "largest_in_time"]

#: Rows and centres of the timed block (a 64 MiB float64 block: not cache-resident, like the real ones).
PROBE_ROWS, PROBE_CENTRES = 32_768, 256
#: Most input elements of the probe (rows x d): on wide data the rows shrink (at least 1,024), so that the
#: probe stays near 0.1-0.3 s and 32 MiB (float64) for any d (at d = 1,024 it had taken 718 MiB and 4.6 s).
PROBE_ELEMENTS = 1 << 22
#: The solvers' own blocks against the probe's, measured through the harness on full HEPC (2 threads):
#: EigenPro3 float32, 538 centres, 3 epochs: 102.1 s against 72.5 s (x 1.41). :func:`kernel_entry_seconds`
#: includes it. Falkon's blocked routine is faster than this probe (1.6-1.8 ns against 6 ns per entry,
#: float64, d = 10): its plans time it directly (:mod:`baselines.falkon_pace`).
SOLVER_FACTOR = 1.4


def _check_probe(dtype: str, **sizes: int) -> None:
    """ValueError unless ``dtype`` is float32/float64 and every size is an integer >= 1 (bool refused)."""
    for label, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{label} must be an integer >= 1, got {value!r}")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")


def probe_block(d: int, dtype: str) -> tuple:
    """The timed block's inputs: rows ``X``, centres ``Z`` and a vector ``v`` of standard-normal torch tensors.

    ``X`` has shape ``(rows, d)`` with ``rows = max(1024, min(PROBE_ROWS,
    PROBE_ELEMENTS // d))`` (at most ~32 MiB of float64 inputs whatever
    ``d``), ``Z`` ``(PROBE_CENTRES, d)``, ``v`` ``(PROBE_CENTRES, 1)``, all
    of ``dtype`` ("float32" or "float64", checked by the callers), drawn
    with seed 0 so that every probe times the same numbers.
    """
    import torch

    gen = torch.Generator().manual_seed(0)
    tdtype = getattr(torch, dtype)
    rows = max(1024, min(PROBE_ROWS, PROBE_ELEMENTS // d))
    return (torch.randn(rows, d, generator=gen, dtype=tdtype),
            torch.randn(PROBE_CENTRES, d, generator=gen, dtype=tdtype),
            torch.randn(PROBE_CENTRES, 1, generator=gen, dtype=tdtype))


@functools.lru_cache(maxsize=16)
def kernel_entry_seconds(d: int, dtype: str, threads: int, repeats: int = 3) -> float:
    """Seconds per kernel entry of one Gaussian block times a vector, measured on this CPU.

    Times ``exp(-cdist(X, Z)^2 / 2) @ v`` for a ``PROBE_ROWS x PROBE_CENTRES``
    block (fewer rows when ``PROBE_ROWS * d > PROBE_ELEMENTS``) of
    standard-normal data in ``d`` dimensions, keeps the fastest
    of ``repeats`` runs (the others include first-touch and other load) and
    multiplies it by :data:`SOLVER_FACTOR` (what the solvers' own blocks cost
    more). Cached per process and arguments (about 0.1-0.3 s the first time).

    Parameters
    ----------
    d : int
        Features (>= 1).
    dtype : {"float32", "float64"}
    threads : int
        Torch threads during the measurement (the trial's).
    repeats : int, default 3

    Returns
    -------
    float
        Seconds per row x centre entry (e.g. about 1e-8 in float64 on 2
        cores of the development machine).

    Raises
    ------
    ValueError
        On ``d < 1``, ``threads < 1``, ``repeats < 1`` or another dtype.
    """
    _check_probe(dtype, d=d, threads=threads, repeats=repeats)
    import torch

    from .threads import torch_threads

    X, Z, v = probe_block(d, dtype)
    rows = X.shape[0]
    best = float("inf")
    with torch_threads(threads), torch.inference_mode():
        for _ in range(repeats):
            t = time.perf_counter()
            block = torch.cdist(X, Z).square_().mul_(-0.5).exp_()
            (block @ v).sum().item()
            best = min(best, time.perf_counter() - t)
    return SOLVER_FACTOR * best / (rows * PROBE_CENTRES)


@functools.lru_cache(maxsize=16)
def gemm_flop_seconds(dtype: str, threads: int, repeats: int = 3) -> float:
    """Seconds per flop of a tall-skinny Gram product ``U^T U`` on this CPU, measured.

    The low-rank IPM's iterations are dominated by ``U^T D U`` for an
    ``n x k`` factor (``2 n k^2`` flops as a GEMM; the IPM's cost model
    charges ``n k^2``, what the symmetric product needs); this times ``U^T U`` for a
    ``16,384 x 256`` ``U`` (torch, the dtype and threads asked for) and
    keeps the fastest of ``repeats`` runs. Cached per process and arguments.

    Parameters
    ----------
    dtype : {"float32", "float64"}
    threads : int
        Torch threads during the measurement (the trial's).
    repeats : int, default 3

    Returns
    -------
    float
        Seconds per flop (e.g. about 3e-11 in float64 on 2 cores of the
        development machine: 30 GFLOP/s).

    Raises
    ------
    ValueError
        On a non-integer or ``< 1`` ``threads`` / ``repeats``, or another dtype.
    """
    _check_probe(dtype, threads=threads, repeats=repeats)
    import torch

    from .threads import torch_threads

    rows, k = 16_384, 256
    U = torch.randn(rows, k, generator=torch.Generator().manual_seed(0), dtype=getattr(torch, dtype))
    best = float("inf")
    with torch_threads(threads), torch.inference_mode():
        for _ in range(repeats):
            t = time.perf_counter()
            (U.T @ U).sum().item()
            best = min(best, time.perf_counter() - t)
    return best / (2.0 * rows * k * k)


def largest_in_time(seconds_of: Callable[[int], float], limit_s: float, hi: int, lo: int = 1) -> int:
    """Largest size ``m`` in ``[lo, hi]`` with ``seconds_of(m) <= limit_s`` (``lo`` when none fits).

    Parameters
    ----------
    seconds_of : callable
        Predicted seconds of a fit with model size ``m``; non-decreasing in ``m``.
    limit_s : float
        Seconds the fit may take.
    hi, lo : int
        Bounds of the search (``hi >= lo >= 1``); ``lo`` is returned when even
        it is predicted to take longer (the caller says so in its reason).

    Returns
    -------
    int
        In ``[max(1, lo), max(lo, hi)]``.

    Raises
    ------
    ValueError
        On a non-finite ``limit_s``.
    """
    if not (isinstance(limit_s, numbers.Real) and math.isfinite(limit_s)):
        raise ValueError(f"limit_s must be a finite number of seconds, got {limit_s!r}")
    lo = max(1, int(lo))
    hi = max(lo, int(hi))
    if seconds_of(hi) <= limit_s:
        return hi
    if seconds_of(lo) > limit_s:
        return lo
    while hi - lo > 1:  # invariant: seconds_of(lo) <= limit_s < seconds_of(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if seconds_of(mid) <= limit_s else (lo, mid)
    return lo
