"""TorchKM's time on this CPU: what one pass of its solver and its set-up cost, measured, for the shared time rule.

TorchKM has no time limit and no callback; its only brake is ``maxit``
(passes over the data, shared by the fit and its cross-validation folds).
A plan that wants the fit to end within the shared budget (``FIT_TIME_SHARE``
of the trial's seconds) must therefore choose ``maxit`` from a price per
pass. Measured with torch's profiler on 50,000 x 22 rows, Nystrom rank
1,000, float64, 2 threads (100 passes): each pass is one ``z @ F`` (31 ms)
and one ``F @ v`` (10.5 ms) over the ``n x k`` feature matrix ``F`` plus
about :data:`PASS_VECTOR_OPS` element-wise operations on n-vectors
(``where``, ``mul``, comparisons, sums: 40-50 ms together), so the two
products are under half of a pass; the set-up is dominated by two
``eigh`` (landmark kernel ``L x L`` and the ``(k + 1) x (k + 1)`` system:
8.8 s of 29 s at ``L = 2,000``), which run far below GEMM pace. The
probes below time those three operations on this machine (float64, the
trial's threads) and the functions price a pass and a set-up with them.
"""

from __future__ import annotations

import functools
import time

from .pace import PROBE_ELEMENTS, _check_probe

__all__ = ["PASS_FACTOR", "PASS_VECTOR_OPS", "SETUP_FACTOR", "StreamPace", "stream_pace", "torchkm_pass_seconds",
           "torchkm_setup_seconds"]

#: Element-wise operations on n-vectors per pass of TorchKM's accelerated loop (``cvknyssvm.fit``,
#: ``cvksvm.fit``): counted from the profile of 100 passes (mul 10.5, add/add_ 5.7, sub 4, where 1.2, gt/lt 3.2,
#: sum 1.3, neg 0.7 per pass), rounded up.
PASS_VECTOR_OPS = 30
#: Side of the symmetric matrix whose ``eigh`` is timed (about 0.02-0.1 s on 2 cores).
EIGH_PROBE = 512
#: Measured seconds of a pass against this model's. Unloaded (2026-12-06, 2 cores, float64, 2 threads, full
#: splits through the harness): ijcnn1 (k = 1,000) ran 227 passes and its set-up in 11.0 s, skin (k = 500) 113
#: passes in 12.8 s, about the model's own price (x 1). Beside a concurrent sweep (load ~3) 100 extra passes of
#: ``cvknyssvm`` took 1.0-4.9x the model (the fit slows more than the probe's best of three). A cap too tight
#: ends the fit early with ``jerr`` (the factor 5 first tried here stopped both fits at 11-13 s of their 75 s),
#: one too loose ends the trial at its limit with nothing. At twice the model (set-up 1.5x), the unloaded
#: scale=full run of 2026-12-07 stopped every Nystrom fit at its ``maxit`` after 20-27 s of a 74.5 s prediction
#: (skin 101-115 passes, ijcnn1 486-493, a9a 695-873): the model alone is already 1.4-1.8x above those fits, so
#: the plan prices a pass and the set-up at the model's own price; the trial's other half absorbs a loaded 2x.
PASS_FACTOR = 1.0
#: The same for the set-up (``eigh`` of the landmark kernel dominates): measured x 0.46-1.62 under load.
SETUP_FACTOR = 1.0


class StreamPace(tuple):
    """``(gemv_s, vector_s, eigh_s)``: seconds per matrix element of a GEMV, per element of a vector op,
    and per ``m^3`` of a symmetric ``eigh`` of side ``m`` (float64, measured by :func:`stream_pace`)."""

    __slots__ = ()

    def __new__(cls, gemv_s: float, vector_s: float, eigh_s: float) -> "StreamPace":
        return super().__new__(cls, (float(gemv_s), float(vector_s), float(eigh_s)))

    gemv_s = property(lambda self: self[0])
    vector_s = property(lambda self: self[1])
    eigh_s = property(lambda self: self[2])


@functools.lru_cache(maxsize=8)
def stream_pace(threads: int, repeats: int = 3) -> StreamPace:
    """Measure the three paces of a TorchKM fit on this CPU (float64, ``threads`` torch threads).

    Times ``A @ v`` and ``z @ A`` for a ``PROBE_ELEMENTS``-element float64
    ``A`` (32 MiB, not cache-resident, like TorchKM's features), a
    ``torch.mul`` of two ``PROBE_ELEMENTS`` vectors, and ``torch.linalg.eigh``
    of an ``EIGH_PROBE``-sided symmetric matrix; keeps the fastest of
    ``repeats`` runs of each. Cached per process and arguments (about 0.2 s).

    Parameters
    ----------
    threads : int
        Torch threads during the measurement (the trial's).
    repeats : int, default 3

    Returns
    -------
    StreamPace
        Seconds per GEMV matrix element (one product), per vector element
        (one op), per ``m^3`` of ``eigh``.

    Raises
    ------
    ValueError
        On a non-integer or ``< 1`` ``threads`` / ``repeats``.
    """
    _check_probe("float64", threads=threads, repeats=repeats)
    import torch

    from .threads import torch_threads

    gen = torch.Generator().manual_seed(0)
    cols = 1024
    A = torch.randn(PROBE_ELEMENTS // cols, cols, generator=gen, dtype=torch.float64)
    v = torch.randn(cols, generator=gen, dtype=torch.float64)
    z = torch.randn(A.shape[0], generator=gen, dtype=torch.float64)
    x = torch.randn(PROBE_ELEMENTS, generator=gen, dtype=torch.float64)
    y = torch.randn(PROBE_ELEMENTS, generator=gen, dtype=torch.float64)
    S = torch.randn(EIGH_PROBE, EIGH_PROBE, generator=gen, dtype=torch.float64)
    S = S @ S.T

    def best(fn) -> float:
        out = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            out = min(out, time.perf_counter() - t)
        return out

    with torch_threads(threads), torch.inference_mode():
        gemv = best(lambda: ((A @ v).sum() + (z @ A).sum()).item()) / (2.0 * A.numel())
        vector = best(lambda: torch.mul(x, y).sum().item()) / (2.0 * PROBE_ELEMENTS)  # the mul and the sum
        eigh = best(lambda: torch.linalg.eigh(S)[0].sum().item()) / float(EIGH_PROBE) ** 3
    return StreamPace(gemv, vector, eigh)


def torchkm_pass_seconds(n: int, cols: int, pace: StreamPace) -> float:
    """Predicted seconds of one TorchKM pass.

    ``PASS_FACTOR`` x (two GEMVs over ``n x cols`` and ``PASS_VECTOR_OPS`` n-vector operations).

    Parameters
    ----------
    n : int
        Training rows.
    cols : int
        Columns of the matrix a pass multiplies: the Nystrom rank ``k`` (``cvknyssvm``), or ``n`` for the
        exact kernel (``cvksvm``).
    pace : StreamPace
    """
    return PASS_FACTOR * (2.0 * n * cols * pace.gemv_s + PASS_VECTOR_OPS * n * pace.vector_s)


def torchkm_setup_seconds(n: int, d: int, landmarks: int, k: int, pace: StreamPace, gemm_s: float) -> float:
    """Predicted seconds of the Nystrom solver's set-up before its first pass, times ``SETUP_FACTOR``.

    ``eigh`` of the ``L x L`` landmark kernel and of the ``(k + 1) x (k + 1)``
    system at the measured ``eigh`` pace; the landmark kernel ``2 n L d``,
    the features ``2 n L k`` and their Gram matrix ``2 n k^2`` at the
    measured GEMM pace ``gemm_s`` (seconds per flop,
    :func:`baselines.pace.gemm_flop_seconds`).
    """
    eig = (float(landmarks) ** 3 + float(k + 1) ** 3) * pace.eigh_s
    return SETUP_FACTOR * (eig + (2.0 * n * landmarks * d + 2.0 * n * landmarks * k + 2.0 * n * k * k) * gemm_s)
