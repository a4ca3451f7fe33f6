"""How fast Falkon's own kernel routine runs on this CPU: the pace its time-aware plans size M by.

A Falkon CG iteration is one ``GaussianKernel.dmmv`` over the ``n x M``
kernel (``K_nM^T (K_nM v)`` in one sweep of blocks: the distances as a GEMM,
the ``exp``, two products). The generic probe of :mod:`baselines.pace`
(torch ``cdist``, ``exp`` and a product) is 3-4x slower per entry than
Falkon's blocked routine here (2-core machine, float64, 2 threads, d = 10:
``dmmv`` 1.8 ns per entry against the probe's 6.3 ns), and sized Falkon's M
3-4x too small on full HEPC (M = 151: predicted 74.6 s, fit 12-17 s). So
Falkon's plans time Falkon's routine itself, with the fit's options.

LogisticFalkon does not call ``dmmv``. Each of its CG iterations is a
Hessian product ``K(Z, X) (w * K(X, Z) v)`` and each Newton step a gradient
``K(Z, X) l'(y, K(X, Z) u)`` (``falkon.gsc_losses.Loss.knmp_hess`` and
``knmp_grad``): two ``GaussianKernel.mmv`` calls, each computing the kernel
block again. Priced at the ``dmmv`` pace, full Skin (n = 196,045, d = 3,
M = 5,776) was predicted at 74.8 s and took 135-138 s; so LogFalkon's plans
time that pair (:func:`logistic_falkon_entry_seconds`).
"""

from __future__ import annotations

import functools
import time

from .pace import PROBE_CENTRES, _check_probe, probe_block

__all__ = ["falkon_entry_seconds", "logistic_falkon_entry_seconds"]


@functools.lru_cache(maxsize=16)
def falkon_entry_seconds(d: int, dtype: str, threads: int, max_cpu_mem: int, keops: str = "no",
                         repeats: int = 3) -> float:
    """Seconds per kernel entry of Falkon's ``GaussianKernel.dmmv`` on this CPU, measured.

    Times ``kernel.dmmv(X, Z, v, None)`` (``K^T (K v)``, one CG iteration's
    work per entry) on a ``PROBE_ROWS x PROBE_CENTRES`` block of
    standard-normal data in ``d`` dimensions (fewer rows on wide data, as
    :func:`baselines.pace.kernel_entry_seconds`), CPU only, with the fit's
    ``max_cpu_mem`` and ``keops_active``, and keeps the fastest of
    ``repeats`` runs. Cached per process and arguments (0.05-0.3 s the
    first time).

    Parameters
    ----------
    d : int
        Features (>= 1).
    dtype : {"float32", "float64"}
    threads : int
        Torch threads during the measurement (the trial's).
    max_cpu_mem : int
        Falkon's ``max_cpu_mem`` in bytes (its block size).
    keops : {"no", "auto", "force"}, default "no"
        Falkon's ``keops_active``.
    repeats : int, default 3

    Returns
    -------
    float
        Seconds per row x centre entry (about 1.8e-9 in float64 and 1.0e-9
        in float32 at d = 10 on 2 cores of the development machine).

    Raises
    ------
    ValueError
        On ``d``, ``threads``, ``max_cpu_mem`` or ``repeats`` below 1, or another dtype.
    """
    return _timed("dmmv", d, dtype, threads, max_cpu_mem, keops, repeats)


@functools.lru_cache(maxsize=16)
def logistic_falkon_entry_seconds(d: int, dtype: str, threads: int, max_cpu_mem: int, keops: str = "no",
                                  repeats: int = 3) -> float:
    """Seconds per kernel entry of LogisticFalkon's Hessian product on this CPU, measured.

    Times ``kernel.mmv(Z, X, w * kernel.mmv(X, Z, v))``: what
    ``falkon.gsc_losses.Loss.knmp_hess`` runs once per CG iteration (and
    ``knmp_grad`` once per Newton step), the kernel block computed twice.
    Same block, options and caching as :func:`falkon_entry_seconds`.

    Parameters
    ----------
    d, dtype, threads, max_cpu_mem, keops, repeats
        As :func:`falkon_entry_seconds`.

    Returns
    -------
    float
        Seconds per row x centre entry of one Hessian product.

    Raises
    ------
    ValueError
        As :func:`falkon_entry_seconds`.
    """
    return _timed("mmv_pair", d, dtype, threads, max_cpu_mem, keops, repeats)


def _timed(op: str, d: int, dtype: str, threads: int, max_cpu_mem: int, keops: str, repeats: int) -> float:
    """The fastest of ``repeats`` runs of ``op`` (``dmmv`` or ``mmv_pair``) per kernel entry."""
    _check_probe(dtype, d=d, threads=threads, max_cpu_mem=max_cpu_mem, repeats=repeats)
    import torch
    from falkon import FalkonOptions
    from falkon.kernels import GaussianKernel

    from .threads import torch_threads

    X, Z, v = probe_block(d, dtype)
    rows = X.shape[0]
    opt = FalkonOptions(use_cpu=True, keops_active=keops, max_cpu_mem=float(max_cpu_mem))
    kernel = GaussianKernel(sigma=float(d) ** 0.5, opt=opt)
    w = torch.full((rows, 1), 0.25, dtype=X.dtype)  # the loss's second derivative at the rows (its value is moot)
    best = float("inf")
    with torch_threads(threads), torch.inference_mode():
        for _ in range(repeats):
            t = time.perf_counter()
            if op == "dmmv":
                kernel.dmmv(X, Z, v, None).sum().item()
            else:
                kernel.mmv(Z, X, kernel.mmv(X, Z, v).mul_(w)).sum().item()
            best = min(best, time.perf_counter() - t)
    return best / (rows * PROBE_CENTRES)
