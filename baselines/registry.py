"""The one registry of solver ids: id -> adapter class, imported on first use.

Every method of the benchmark, Joker's two ids included, is one line of
:data:`ADAPTERS` (``"<solver id>": "<module>:<class>"``). The classes are
imported when an id is looked up, so ``import baselines`` loads neither
torch nor any upstream library (the Joker adapters import the solver's own
loss and kernel names, hence torch). A library that is missing is reported
by the class's ``available()``, never by the import of the registry.

Adding a method is one file (an :class:`baselines.base.Adapter` subclass),
one ``conf/method/<id>.yaml`` and one line here; code outside the
repository (a plug-in, a test) calls :func:`register` instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from .base import Adapter

__all__ = ["ADAPTERS", "METHODS", "Registry", "get_adapter", "register"]

#: Solver id -> ``"module:class"`` of its adapter, Joker first (table order).
ADAPTERS: dict[str, str] = {
    "joker-exact": "baselines.joker_solver:JokerExactAdapter",
    "joker-inexact": "baselines.joker_solver:JokerInexactAdapter",
    "falkon": "baselines.falkon:FalkonAdapter",
    "logfalkon": "baselines.logfalkon:LogFalkonAdapter",
    "eigenpro3": "baselines.eigenpro3:EigenPro3Adapter",
    "thundersvm": "baselines.thundersvm:ThunderSVMAdapter",
    "libsvm": "baselines.libsvm:LibSVMAdapter",
}


class Registry(Mapping):
    """Read-only mapping solver id -> adapter class that imports each class on first access.

    Parameters
    ----------
    refs : dict of str to str
        Solver id -> ``"module:class"``; the mapping keeps this dict (so
        :func:`register` adds to it) and its order.

    Raises
    ------
    KeyError
        On an unknown id (the message lists the known ones).
    TypeError
        When a reference does not name an :class:`Adapter` subclass, or the
        class's ``name`` differs from its id.
    """

    def __init__(self, refs: dict[str, str]) -> None:
        self._refs = refs

    def __getitem__(self, name: str) -> type[Adapter]:
        try:
            ref = self._refs[name]
        except KeyError:
            raise KeyError(f"unknown solver id {name!r}; known: {', '.join(self._refs)}") from None
        module, _, attr = ref.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        if not (isinstance(cls, type) and issubclass(cls, Adapter)) or cls.name != name:
            raise TypeError(f"{ref} must be an Adapter subclass whose name is {name!r}")
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)


#: Every solver id -> its adapter class (imported on access).
METHODS = Registry(ADAPTERS)


def register(name: str, ref: str) -> None:
    """Add a solver id at run time (plug-ins, tests): the same as one line of :data:`ADAPTERS`.

    Parameters
    ----------
    name : str
        The new solver id.
    ref : str
        ``"module:class"`` of its :class:`Adapter` subclass (importable).

    Raises
    ------
    ValueError
        If ``name`` is already registered to another class, or ``ref`` is
        not of the form ``module:class``.
    """
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"ref must be 'module:class', got {ref!r}")
    if ADAPTERS.get(name, ref) != ref:
        raise ValueError(f"solver id {name!r} is already registered to {ADAPTERS[name]}")
    ADAPTERS[name] = ref


def get_adapter(name: str, **kwargs: Any) -> type[Adapter] | Adapter:
    """The adapter class for a solver id, or an instance when keyword arguments are given.

    Parameters
    ----------
    name : str
        A solver id (the keys of :data:`ADAPTERS`).
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
    cls = METHODS[name]
    return cls(**kwargs) if kwargs else cls
