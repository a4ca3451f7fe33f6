"""Thread settings of every trial, in one place: the child's environment and the in-process limits.

Every method gets the same number of threads: the trial process starts with
:func:`thread_env` (the harness's runner and the solver bench both spawn
with it), the child applies :func:`limit_threads` to the runtimes it has
loaded, and the adapters fit under :func:`blas_threads` and, for
torch-based solvers, :func:`torch_threads`. Standard library only at module
level; threadpoolctl and torch are imported when used.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

__all__ = ["THREAD_VARS", "blas_threads", "limit_threads", "thread_env", "torch_threads"]

#: Environment variables that set the threads of every BLAS/OpenMP runtime.
THREAD_VARS = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS",
)


def thread_env(threads: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """Return the environment of a trial process.

    Parameters
    ----------
    threads : int
        Threads for every runtime.
    base : dict, optional
        Environment to start from (default ``os.environ``).

    Returns
    -------
    dict
        ``base`` with every variable of :data:`THREAD_VARS` set to
        ``threads``, ``OMP_WAIT_POLICY`` removed (the OpenMP runtime's
        default: PASSIVE made Joker's many small parallel products about 30%
        slower on ijcnn1, and LIBSVM, single-threaded, not at all), ``MKL_DYNAMIC=FALSE``,
        ``PYTHONUNBUFFERED=1`` and ``JOKER_BENCH_THREADS``; ``PYTHONSTARTUP`` removed.
    """
    env = dict(os.environ if base is None else base)
    for var in THREAD_VARS:
        env[var] = str(threads)
    env.pop("OMP_WAIT_POLICY", None)
    env["MKL_DYNAMIC"] = "FALSE"
    env["PYTHONUNBUFFERED"] = "1"
    env["JOKER_BENCH_THREADS"] = str(threads)
    env.pop("PYTHONSTARTUP", None)
    return env


def limit_threads(n: int) -> dict[str, Any]:
    """Apply ``n`` threads to the runtimes loaded so far (threadpoolctl pools, torch if imported).

    Returns
    -------
    dict
        ``{"threads": n}`` and, when torch is loaded, ``torch_threads`` as
        torch reports it after the call.
    """
    info: dict[str, Any] = {"threads": n}
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except Exception:  # threadpoolctl missing or a pool it cannot drive: the env vars still hold
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)
        info["torch_threads"] = torch.get_num_threads()
    return info


@contextlib.contextmanager
def blas_threads(n_threads: int) -> Iterator[None]:
    """Limit the BLAS and OpenMP thread pools (threadpoolctl) to ``n_threads`` for a block.

    Every adapter fits and predicts under this limit, so ``n_threads`` means
    the same for every method; an unlimited pool on a loaded 2-core machine
    made SciPy's ``eigh`` (EigenPro3's preconditioner) 30x slower.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(n_threads)):
        yield


@contextlib.contextmanager
def torch_threads(n_threads: int) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(n_threads)``, restoring the previous value."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)
