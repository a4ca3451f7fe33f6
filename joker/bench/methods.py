"""Every solver id of the benchmark -> its adapter class (``docs/contracts.md``).

``METHODS`` holds the upstream baselines (``baselines.BASELINES``) and the two
Joker ids. Importing this module imports no solver library: the adapter
classes import theirs inside ``fit`` / ``available``, so the harness can list,
configure and skip methods whose library is missing.
"""

from __future__ import annotations

from typing import Any

from baselines import BASELINES
from baselines.base import Adapter

from .adapter import JokerExactAdapter, JokerInexactAdapter

__all__ = ["METHODS", "get_adapter"]

#: Solver id -> adapter class, Joker first.
METHODS: dict[str, type[Adapter]] = {
    JokerExactAdapter.name: JokerExactAdapter,
    JokerInexactAdapter.name: JokerInexactAdapter,
    **BASELINES,
}


def get_adapter(name: str, **kwargs: Any) -> Any:
    """The adapter class for a solver id, or an instance when keyword arguments are given.

    Parameters
    ----------
    name : str
        A solver id (``joker-exact``, ``joker-inexact``, ``falkon``,
        ``logfalkon``, ``eigenpro3``, ``thundersvm``, ``libsvm``).
    **kwargs
        Constructor arguments (task, loss, sigma, lam, ...); when given, the
        adapter is instantiated with them.

    Returns
    -------
    type[Adapter] or Adapter

    Raises
    ------
    KeyError
        For an unknown id; the message lists the known ones.
    """
    try:
        cls = METHODS[name]
    except KeyError:
        raise KeyError(f"unknown solver id {name!r}; known: {', '.join(METHODS)}") from None
    return cls(**kwargs) if kwargs else cls
