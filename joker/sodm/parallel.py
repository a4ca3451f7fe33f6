"""One SODM level's local solves on an existing engine: joblib (loky) by default, Dask distributed on request.

The partitions of a level are independent problems (SODM, IJCAI 2023,
arXiv:2305.04837, s.3.2), so a level is a parallel map. No home-made pool:
``joblib.Parallel(backend="loky")`` (worker processes reused across levels)
or, when a scheduler address is given, ``distributed.Client.map``.
"""

from __future__ import annotations

__all__ = ["map_level", "dask_client"]


def map_level(fn, tasks, n_jobs=1, client=None):
    """``[fn(*t) for t in tasks]``, run in parallel.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled to the workers).
    tasks : list of tuple
        Positional arguments of each call.
    n_jobs : int or None
        joblib workers (loky processes); 1 (or a single task): in this
        process, no pool; -1: one per core joblib sees.
    client : distributed.Client or None
        When given, the calls run on its Dask cluster instead (``n_jobs`` is
        then ignored: the cluster's workers decide).

    Returns
    -------
    list
        The results, in the order of ``tasks``.
    """
    tasks = list(tasks)
    if client is not None:
        futures = client.map(fn, *zip(*tasks), pure=False) if tasks else []
        return client.gather(futures)
    if n_jobs == 1 or len(tasks) <= 1:
        return [fn(*t) for t in tasks]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs, backend="loky")(delayed(fn)(*t) for t in tasks)


def dask_client(scheduler):
    """A ``distributed.Client`` connected to ``scheduler`` (an address such as ``tcp://host:8786``).

    Raises
    ------
    ImportError
        When dask.distributed is not installed (``pip install "dask[distributed]"``).
    """
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError("options.scheduler needs dask.distributed: pip install 'dask[distributed]'") from exc
    return Client(scheduler)
